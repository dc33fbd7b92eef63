"""The ``inverted_index`` benchmark group (issue 4): ``==`` on a 2M-row, 200-value string
column stored as ``vortex_io.inverted_index`` (read from a stream) against
``pyarrow.compute.equal`` on the canonical column, same run. The bar: at most 0.5x.

    .venv/bin/python bench/run.py --only inverted_index

Both produce the boolean mask of matching rows; the check compares them.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import vortex_io as vio
from bench.harness import Case, Context, System, group
from vortex_io import compute
from vortex_io.encodings.inverted_index import InvertedIndex

ROWS = 2_000_000
CARDINALITY = 200


def _column(rows: int) -> pa.Array:
    rng = np.random.default_rng(4)
    values = np.array([f"city-{i:03d}" for i in range(CARDINALITY)])
    return pa.array(values[rng.integers(0, CARDINALITY, rows)])


@group("inverted_index", datasets=("trades",),
       description="== on a 200-value string column: InvertedIndex postings vs pyarrow.compute.equal")
def build(ctx: Context) -> Iterator[Case]:
    rows = ROWS if not ctx.rows or ctx.rows >= 1_000_000 else ctx.rows  # the issue: 2M rows
    col = _column(rows)
    buf = io.BytesIO()
    with vio.StreamWriter(buf, vio.dtype.Utf8(True)) as w:
        w.write_batch(InvertedIndex.encode(vio.array(col)))
    ii = vio.read_ipc(buf.getvalue())
    assert ii.encoding == InvertedIndex.id
    needle = "city-007"

    def ours() -> pa.Table:
        values, _ = compute._kernels.compare_mask(ii, needle, "eq")  # the mask, unpacked
        return pa.table({"hit": values})

    def arrow() -> pa.Table:
        return pa.table({"hit": pc.equal(col, needle).fill_null(False)})

    yield Case(
        group="inverted_index", dataset=f"{rows:,} x {CARDINALITY} values", op="eq",
        systems=[System("InvertedIndex ==", ours), System("pyarrow.compute.equal", arrow)],
        expected=arrow(), peer="pyarrow.compute.equal",
        description=f"col == {needle!r} on {rows:,} rows: posting lists vs a scan of the strings",
        notes=[f"stream {len(buf.getvalue()) / 1e6:.1f} MB; {CARDINALITY} distinct values"],
    )


if __name__ == "__main__":
    from bench.run import main

    sys.exit(main(["--only", "inverted_index", *sys.argv[1:]]))
