"""The ``integrity`` benchmark group (issue 17): what CRC-32C records and the end marker cost
on the trades table, writing and reading, against the same stream without them.

    .venv/bin/python bench/run.py --only integrity      (or: .venv/bin/python bench/bench_integrity.py)

Every case has two systems on the same input, timed round-robin in the same run:
``vortex_io`` (no integrity data, the peer) and ``vortex_io+integrity``
(``integrity=True``); the ratio is the overhead. The issue's bar: at most 1.05x, writing and
reading. Cases:

* ``write`` / ``write-canonical``: ``write_ipc(BytesIO, table, integrity=...)`` with the
  default compressor / ``compress=False`` (64Ki-row messages).
* ``read`` / ``read-canonical``: ``StreamReader(bytes).read_arrow()`` of each system's own
  stream (every core), ``read-1t``: ``read_arrow(threads=1)``.
* ``scan``: ``scan(bytes, filter=symbol == 'AAPL', columns=[price, size])`` (informational:
  a selective scan decodes little, but every body is still checksummed).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa

import vortex_io as vio
from bench.formats import CHUNK_ROWS
from bench.harness import GROUPS, Case, Context, System, group
from vortex_io.expr import col

PEER = "vortex_io"
WITH = "vortex_io+integrity"


def encode(table: pa.Table, *, compress: bool, integrity: bool) -> bytes:
    """``write_ipc`` into memory, 64Ki-row messages."""
    buf = io.BytesIO()
    vio.write_ipc(buf, table, compress=compress, chunk_rows=CHUNK_ROWS, integrity=integrity)
    return buf.getvalue()


def decode(data: bytes, threads: int | None = None) -> pa.Table:
    return vio.StreamReader(data).read_arrow(threads=threads)


def _scan(data: bytes, flt) -> pa.Table:
    return vio.scan(data, columns=["price", "size"], filter=flt).to_arrow()


def _pair(op: str, ds: str, expected: pa.Table, description: str, gbps: int, run_plain, run_with,
          as_table=None, size=None, notes=()) -> Case:
    return Case(
        group="integrity", dataset=ds, op=op, peer=PEER, description=description,
        expected=expected, gbps_bytes=gbps,
        systems=[System(PEER, run_plain, as_table, size, note="integrity=False"),
                 System(WITH, run_with, as_table, size, note="integrity=True")],
        notes=list(notes),
    )


def integrity_cases(ctx: Context) -> Iterator[Case]:
    """Per dataset: write and read with and without integrity data (and a scan)."""
    for ds in ctx.datasets:
        t = ctx.load(ds)
        for compress, suffix in ((True, ""), (False, "-canonical")):
            yield _pair(
                f"write{suffix}", ds, t,
                f"Table -> stream bytes ({'compressed' if compress else 'canonical'}; GB/s of input)",
                t.nbytes,
                lambda t=t, c=compress: encode(t, compress=c, integrity=False),
                lambda t=t, c=compress: encode(t, compress=c, integrity=True),
                as_table=decode, size=len)
            plain = encode(t, compress=compress, integrity=False)
            sealed = encode(t, compress=compress, integrity=True)
            note = f"stream bytes: {len(plain):,} without, {len(sealed):,} with integrity"
            yield _pair(
                f"read{suffix}", ds, t,
                f"stream bytes -> Table ({'compressed' if compress else 'canonical'}; every core)",
                t.nbytes, lambda d=plain: decode(d), lambda d=sealed: decode(d), notes=[note])
            if compress:
                yield _pair(
                    "read-1t", ds, t, "stream bytes -> Table (compressed; threads=1)", t.nbytes,
                    lambda d=plain: decode(d, 1), lambda d=sealed: decode(d, 1))
                flt = col("symbol") == "AAPL"
                want = _scan(plain, flt)
                yield _pair(
                    "scan", ds, want,
                    "scan(filter=symbol == 'AAPL', columns=[price, size]) (informational)",
                    want.nbytes,
                    lambda d=plain, f=flt: _scan(d, f), lambda d=sealed, f=flt: _scan(d, f))


# registered once, whether imported by bench/run.py or run as a script (which imports both)
if "integrity" not in GROUPS:
    group("integrity", datasets=("trades",),
          description="issue 17: write/read with CRC-32C records + end marker vs without "
          "(bar 1.05x)")(integrity_cases)


if __name__ == "__main__":
    from bench.run import main

    sys.exit(main(["--only", "integrity", *sys.argv[1:]]))
