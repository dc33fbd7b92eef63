"""The native scan against the numpy reference scan: the same rows, in the same order, the
same statistics (chunks, pruned chunks, rows scanned and returned), the same errors, for
generated predicates, projections, limits, offsets, mutated streams and thread counts."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vortex_io as vio
from tests.native_util import NATIVE, identical
from tests.test_scan import DATA, TABLE, exprs
from vortex_io import _native_glue as ng
from vortex_io._native_scan import lower
from vortex_io.expr import col, lit

pytestmark = pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")

_STATS = ("chunks", "chunks_pruned", "rows_scanned", "rows_returned")


def run(data, *, native, **kw):
    with ng.use_native(native):
        try:
            s = vio.scan(data, **kw)
            t = s.to_arrow()
        except vio.VortexIPCError as e:
            return ("err", type(e)), None
        return ("ok", t), {k: getattr(s.stats, k) for k in _STATS}


def assert_same_scan(data, **kw):
    (rk, rt), rstats = run(data, native=False, **kw)
    (nk, nt), nstats = run(data, native=True, **kw)
    assert nk == rk, (nk, nt, rk, rt)
    if rk == "err":
        assert nt is rt
        return
    assert identical(nt, rt), f"{kw}\n{nt}\n{rt}"
    assert nstats == rstats, (kw, nstats, rstats)


@given(exprs)
def test_filters_match_the_reference(e):
    assert lower(e, vio.StreamReader(DATA).dtype) is not None, repr(e)
    assert_same_scan(DATA, filter=e)


@given(exprs, st.lists(st.sampled_from(TABLE.column_names), min_size=0, max_size=3, unique=True),
       st.one_of(st.none(), st.integers(0, 3000)), st.integers(0, 2500))
@settings(max_examples=40)
def test_projection_limit_offset_match_the_reference(e, columns, limit, offset):
    assert_same_scan(DATA, filter=e, columns=columns, limit=limit, offset=offset)
    assert_same_scan(DATA, columns=columns, limit=limit, offset=offset)


def test_thread_counts_give_the_same_batches():
    e = (col("i") > 3) | col("s").is_in(["fig", "apple"])
    base = list(vio.scan(DATA, filter=e, threads=1))
    for threads in (2, 3, 8):
        got = list(vio.scan(DATA, filter=e, threads=threads))
        assert [b.num_rows for b in got] == [b.num_rows for b in base]
        assert all(identical(pa.table(a), pa.table(b)) for a, b in zip(got, base))


def test_statistics_prune_natively():
    from vortex_io.datasets import trades

    t = trades(100_000)
    buf = io.BytesIO()
    vio.write_ipc(buf, t, chunk_rows=8192)
    t0 = t.column("ts")[10_000].as_py()
    for e in (col("ts") < t0, col("ts") >= t0, col("price") > 1e9, col("symbol") == "ZZZZ",
              col("size").is_in([-1, -2]), col("side").is_null(), col("side").is_not_null(),
              (col("ts") < t0) | (col("price") > 1e9), ~(col("ts") < t0)):
        assert_same_scan(buf.getvalue(), filter=e)
    s = vio.scan(buf.getvalue(), filter=col("ts") < t0)
    s.to_arrow()
    assert s.stats.chunks_pruned >= s.stats.chunks - 2


@pytest.mark.parametrize("e", [
    col("i") == 2.5, col("i") < 2.5, col("i") != float("nan"), col("i") > float("inf"),
    col("i") < -float("inf"), col("i") == 10**30, col("i") > -(10**30), col("u8") < 300,
    col("u8") >= -1, col("i") == None, lit(True), lit(None), lit(False) | (col("i") == 1),  # noqa: E711
    col("b"), ~col("b"), col("f") == 1.2, col("f").is_in([1.2, float("nan"), 3]),
    col("i").is_in([]), col("i").is_in([None]), col("i").is_in([1.5, 2, 10**30]),
])
def test_literal_edge_cases(e):
    assert_same_scan(DATA, filter=e)


def test_mutated_streams_give_the_same_outcome():
    rng = np.random.default_rng(7)
    base = bytearray(DATA)
    filters = [col("i") > 0, col("s") == "fig", (col("f") < 3) | col("b"), None]
    for _ in range(150):
        data = bytearray(base)
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(0, len(data)))
            data[at] = int(rng.integers(0, 256))
        for e in filters:
            assert_same_scan(bytes(data), filter=e)


def test_a_python_encoding_in_the_filter_runs_in_python():
    """A user's encoding (InvertedIndex, written in Python) inside a filtered column: the
    native core hands those messages back and the Python scan answers them."""
    t = pa.table({"city": ["oslo", "rome", "oslo", None, "lima"] * 400, "n": list(range(2000))})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, encodings={"city": "vortex_io.inverted_index"}, chunk_rows=500)
    for e in (col("city") == "oslo", col("n") > 1500, col("city").is_in(["rome", "lima"])):
        assert_same_scan(buf.getvalue(), filter=e)
        assert_same_scan(buf.getvalue(), filter=e, columns=["city"])
