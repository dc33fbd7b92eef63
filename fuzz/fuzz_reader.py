#!/usr/bin/env python3
"""Coverage-guided fuzzing of the stream reader with atheris (libFuzzer).

Each input is read with ``StreamReader`` and fully canonicalized (``to_arrow()`` of every
batch, a slice of it, and ``vortex_io.scan`` with and without filters: see
``fuzz/harness.py``). Any exception other than ``vortex_io.VortexIPCError`` is a crash;
libFuzzer's ``-timeout`` and ``-rss_limit_mb`` turn a slow input or runaway memory into
one too. Half of the mutations are structure-aware (``fuzz/mutate.py``: metadata
varints, buffers, children, lengths and counts re-framed into valid messages), the other
half libFuzzer's own byte-level ones.

Usage (``make fuzz`` does all of this)::

    python fuzz/seed_corpus.py fuzz/corpus         # seeds from tests/golden + generated
    python fuzz/fuzz_reader.py fuzz/corpus -max_total_time=600 -timeout=2 -rss_limit_mb=2048

A crash leaves ``crash-<sha1>`` in the working directory; replay it with
``python fuzz/fuzz_reader.py crash-<sha1>`` and add it to ``tests/test_fuzz.py``
(``REGRESSIONS``) once fixed.
"""

from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import atheris

with atheris.instrument_imports(include=["vortex_io"]):
    import vortex_io  # noqa: F401

from fuzz.corpus import seed_streams
from fuzz.harness import consume
from fuzz.mutate import mutate

_SEEDS = list(seed_streams().values())


def test_one_input(data: bytes) -> None:
    """The fuzz target: success or a VortexIPCError; anything else propagates (a crash)."""
    consume(data)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """Structure-aware mutation when the input still parses as a stream, else libFuzzer's."""
    rng = random.Random(seed)
    if rng.random() < 0.5:
        try:
            _kind, out = mutate(data, rng, _SEEDS)
            if len(out) <= max_size:
                return out
        except Exception:  # not a well-formed stream (any more): mutate bytes instead
            pass
    return atheris.Mutate(data, max_size)


def main() -> None:
    if not any(a.startswith("-max_len") for a in sys.argv):
        sys.argv.append("-max_len=65536")
    atheris.Setup(sys.argv, test_one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
