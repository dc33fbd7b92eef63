"""Mutants read by every user route (``fuzz.harness.ROUTES``), counted by outcome class.

``python -m fuzz.route_sweep N [FIRST]`` reads mutants ``FIRST .. FIRST+N`` (the numbering
of ``tests/test_fuzz.py``'s sweep: mutant ``i`` is seed ``i % seeds`` mutated with
``random.Random(i)``) in a ``fuzz.sandbox.Sandbox`` worker, on the core ``VORTEX_IO_NATIVE``
selects (with the native core, the reference's outcome of every route too), and prints a
JSON report: per route, the count of each outcome class (``!module.Class``: a bug), and
the mutants whose routes failed. ``FUZZ_REPORT=path.json`` writes it to a file as well.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import random
import sys
import time
from typing import Any

from fuzz.corpus import seed_streams
from fuzz.mutate import mutate
from fuzz.sandbox import GiB, Sandbox

__all__ = ["mutant", "sweep"]

_SEEDS = seed_streams()
_NAMES = sorted(_SEEDS)
_DONORS = [_SEEDS[k] for k in _NAMES]


def mutant(i: int) -> tuple[str, str, bytes]:
    """(seed name, mutation kind, mutant) number ``i`` of the sweeps (this one's and
    ``tests/test_fuzz.py``'s ``test_mutation_sweep``)."""
    name = _NAMES[i % len(_NAMES)]
    kind, data = mutate(_SEEDS[name], random.Random(i), _DONORS)
    return name, kind, data


def sweep(n: int, first: int = 0, *, time_limit: float = 4.0) -> dict[str, Any]:
    """The report of mutants ``first .. first + n`` (see the module's docstring)."""
    by_route: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    outcomes: collections.Counter[str] = collections.Counter()
    failures = []
    t0 = time.perf_counter()
    with Sandbox(time_limit=time_limit, memory_limit=1 * GiB, differential=True,
                 routes=True) as sb:
        for i in range(first, first + n):
            name, kind, data = mutant(i)
            res = sb.run(data)
            outcomes[res.outcome] += 1
            for side, got in (("", res.routes), ("reference ", res.reference)):
                for route, o in got.items():
                    by_route[side + route][o] += 1
            if res.failed:
                failures.append({"i": i, "seed": name, "kind": kind, "outcome": res.outcome,
                                 "detail": res.detail[-1500:]})
        restarts = sb.restarts
    return {"inputs": n, "first": first, "native": os.environ.get("VORTEX_IO_NATIVE", "1") != "0",
            "outcomes": dict(outcomes),
            "routes": {k: dict(v.most_common()) for k, v in sorted(by_route.items())},
            "failures": failures, "worker_restarts": restarts,
            "wall_s": round(time.perf_counter() - t0, 1)}


if __name__ == "__main__":
    rep = sweep(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    text = json.dumps(rep, indent=1)
    if os.environ.get("FUZZ_REPORT"):
        pathlib.Path(os.environ["FUZZ_REPORT"]).write_text(text)
    print(text)
