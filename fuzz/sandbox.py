"""Run inputs through ``fuzz.harness.consume`` in a worker process with a time and memory
bound, so that a hang or runaway allocation is caught and reported (not suffered).

The worker limits its address space (``RLIMIT_AS``) to what it uses after start-up plus
``memory_limit``; it reports, per input, the outcome, the time taken and whether memory
ran out. The parent kills a worker that does not answer within ``hard_timeout`` and starts
another.

Outcomes: ``"ok"``, the ``VortexIPCError`` subclass name, or a failure: ``"bug"`` (any
other exception; ``detail`` has the traceback), ``"memory"`` (an allocation hit the bound,
even if the reader turned the ``MemoryError`` into a ``VortexIPCError``), ``"slow"``
(over ``time_limit`` seconds of the worker's CPU time), ``"hang"`` (no answer within ``hard_timeout``),
``"crash"`` (the worker died), ``"mismatch"`` (with ``differential=True``: the native core and
the reference read the input differently, ``fuzz.harness.differential``).

>>> with Sandbox() as sb:
...     sb.run(b"not a stream").outcome
'MalformedStreamError'
"""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Sandbox", "Result", "FAILURES", "GiB"]

GiB = 1 << 30
FAILURES = frozenset({"bug", "memory", "slow", "hang", "crash", "mismatch"})
_U32 = struct.Struct("<I")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Result:
    outcome: str
    secs: float
    detail: str = ""
    #: (``routes=True``) each route's outcome (``fuzz.harness.route_outcomes``), and with
    #: ``differential=True`` and the native core, the reference's
    routes: dict[str, str] = field(default_factory=dict)
    reference: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.outcome in FAILURES


class Sandbox:
    """A worker process that consumes inputs one at a time under bounds."""

    def __init__(self, *, time_limit: float = 2.0, memory_limit: int = 2 * GiB,
                 hard_timeout: float | None = None, scans: bool = True,
                 limits: str = "fuzz", differential: bool = False,
                 routes: bool = False) -> None:
        """``limits``: ``"fuzz"`` (``fuzz.harness.FUZZ_LIMITS``) or ``"default"`` (the
        reader's ``ReaderLimits()``); ``differential``: also compare the native core's
        ``read_arrow`` with the reference's (``fuzz.harness.differential``); ``routes``:
        read each input by every one of ``fuzz.harness.ROUTES`` instead (batch by batch,
        ``read_arrow``, ``read_ipc``, scans, the async reader): an outcome of another class
        than a public error on any route is a ``"bug"``, and with ``differential`` a route
        whose outcome class differs between the cores a ``"mismatch"``; the outcome is then
        the ``"batches"`` route's."""
        if limits not in ("fuzz", "default"):
            raise ValueError("limits must be 'fuzz' or 'default'")
        self.limits = limits
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.hard_timeout = hard_timeout if hard_timeout is not None else max(10.0, 5 * time_limit)
        self.scans = scans
        self.differential = differential
        self.routes = routes
        self.restarts = 0
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env.update(ARROW_DEFAULT_MEMORY_POOL="system", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", PYTHONPATH=_ROOT + os.pathsep + env.get("PYTHONPATH", ""))
        p = subprocess.Popen(
            [sys.executable, "-m", "fuzz.sandbox", str(self.memory_limit), str(int(self.scans)),
             self.limits, str(int(self.differential)), str(int(self.routes))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=_ROOT, env=env)
        assert p.stdout is not None
        line = p.stdout.readline()  # "ready" once imports are done and the limit is set
        if not line.startswith(b"ready"):
            p.kill()
            raise RuntimeError(f"fuzz worker failed to start: {line!r}")
        return p

    def run(self, data: bytes) -> Result:
        """Consume one input in the worker."""
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
        p = self._proc
        assert p.stdin is not None and p.stdout is not None
        t0 = time.perf_counter()
        try:
            p.stdin.write(_U32.pack(len(data)) + data)
            p.stdin.flush()
        except BrokenPipeError:
            self._kill()
            return Result("crash", 0.0, "the worker closed its input")
        ready, _, _ = select.select([p.stdout], [], [], self.hard_timeout)
        if not ready:
            self._kill()
            return Result("hang", time.perf_counter() - t0,
                          f"no answer within {self.hard_timeout} s (worker killed)")
        line = p.stdout.readline()
        if not line:
            code = p.wait()
            self._kill()
            return Result("crash", time.perf_counter() - t0, f"worker exited with {code}")
        rep = json.loads(line)
        res = Result(rep["outcome"], rep["secs"], rep.get("detail", ""),
                     rep.get("routes", {}), rep.get("reference", {}))
        if res.outcome not in FAILURES and res.secs > self.time_limit:
            res = Result("slow", res.secs, f"{res.secs:.2f} s (limit {self.time_limit} s), "
                                           f"outcome {res.outcome}", res.routes, res.reference)
        return res

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
            self.restarts += 1

    def close(self) -> None:
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- the worker ---------------------------------------------------------------------------


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _memory_error_in(e: BaseException) -> bool:
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, MemoryError):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return False


def _routes_report(data: bytes, limits: Any, diff: bool) -> dict[str, Any]:
    """The worker's answer for ``routes=True``: every route on the active core (and the
    reference's, ``diff``), the overall outcome as ``Sandbox.__init__`` says."""
    import traceback

    from fuzz.harness import route_outcomes, routes_differ
    from vortex_io import _native_glue as ng

    def run() -> tuple[dict[str, str], str]:
        got = route_outcomes(data, limits=limits)
        bugs = [(k, e) for k, (o, e) in got.items() if o.startswith("!")
                or (e is not None and _memory_error_in(e))]
        detail = ""
        if bugs:
            k, e = bugs[0]
            assert e is not None
            detail = f"route {k}: " + "".join(
                traceback.format_exception(type(e), e, e.__traceback__, limit=-8))
        return {k: o for k, (o, _) in got.items()}, detail

    t0 = time.process_time()
    routes, detail = run()
    secs = time.process_time() - t0
    reference: dict[str, str] = {}
    if diff and ng.enabled():
        with ng.use_native(False):
            reference, ref_detail = run()
        detail = detail or ref_detail
        secs = max(secs, time.process_time() - t0 - secs)
    if detail:
        outcome = "memory" if "MemoryError" in detail else "bug"
    elif how := routes_differ(routes, reference):
        outcome, detail = "mismatch", how
    else:
        outcome = routes["batches"]
    return {"outcome": outcome, "secs": secs, "detail": detail, "routes": routes,
            "reference": reference}


def _worker(memory_limit: int, scans: bool, which: str, diff: bool = False,
            routes: bool = False) -> None:
    import io
    import resource
    import traceback

    import pyarrow as pa

    import vortex_io as vio
    from fuzz.harness import FUZZ_LIMITS, consume, differential, exercise

    limits = FUZZ_LIMITS if which == "fuzz" else None

    warm = io.BytesIO()  # a small compressed table: warms the imports a read touches
    vio.write_ipc(warm, pa.table({"i": list(range(300)), "s": ["ab", "cd", None] * 100,
                                  "f": [0.5, 1.25, 2.0] * 100}))
    consume(warm.getvalue(), scans=scans)
    if routes:
        _routes_report(warm.getvalue(), limits, diff)
    if diff:
        differential(warm.getvalue())
    limit = _vm_size() + memory_limit
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    inp, out = sys.stdin.buffer, sys.stdout
    out.write("ready\n")
    out.flush()
    while True:
        head = inp.read(4)
        if len(head) < 4:
            return
        (n,) = _U32.unpack(head)
        data = inp.read(n)
        if routes:
            out.write(json.dumps(_routes_report(data, limits, diff)) + "\n")
            out.flush()
            continue
        # CPU time (every thread of the worker): a runaway loop burns it, a machine busy with
        # other jobs does not inflate it (wall time did: 9 ms inputs were "slow" at load 12);
        # blocking is the parent's hard_timeout's business
        t0 = time.process_time()
        detail = ""
        try:
            exercise(data, limits=limits, scans=scans)
            outcome = "ok"
        except vio.VortexIPCError as e:
            # a MemoryError the reader reported as malformed input is still a runaway size
            outcome = "memory" if _memory_error_in(e) else type(e).__name__
            detail = repr(e) if outcome == "memory" else ""
        except Exception as e:
            outcome = "memory" if _memory_error_in(e) else "bug"
            detail = traceback.format_exc(limit=-8)
        secs = time.process_time() - t0  # the property's time (the differential reads after)
        if diff and outcome not in ("bug", "memory"):
            try:
                how = differential(data, limits=limits)
                if how:
                    outcome, detail = "mismatch", how
            except Exception as e:
                outcome = "memory" if _memory_error_in(e) else "bug"
                detail = "differential read: " + traceback.format_exc(limit=-8)
        # the time limit holds for the property and for the differential (its two reads)
        secs = max(secs, time.process_time() - t0 - secs)
        out.write(json.dumps({"outcome": outcome, "secs": secs, "detail": detail}) + "\n")
        out.flush()


if __name__ == "__main__":
    _worker(int(sys.argv[1]), bool(int(sys.argv[2])), sys.argv[3], bool(int(sys.argv[4])),
            bool(int(sys.argv[5])))
