"""The native scan against the numpy reference scan: the same rows, in the same order, the
same statistics (chunks, pruned chunks, rows scanned and returned), the same errors, for
generated predicates, projections, limits, offsets, mutated streams and thread counts."""

from __future__ import annotations

import io
import itertools

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


# -- the nested and temporal encodings' compute hooks under a scan --------------------------------

def _hooks_message(rng, n, day0):
    """One struct message whose fields use the encodings tests/test_native_hooks.py probes."""
    import decimal

    from vortex_io import dtype as dt
    from vortex_io._array import Array
    from vortex_io.encodings._bool import bool_array
    from vortex_io.encodings._bytebool import bytebool_array
    from vortex_io.encodings._chunked import chunked_array
    from vortex_io.encodings._constant import constant_array
    from vortex_io.encodings._datetimeparts import datetimeparts_encode
    from vortex_io.encodings._decimal_byte_parts import decimal_byte_parts_encode
    from vortex_io.encodings._masked import MASKED
    from vortex_io.encodings._primitive import primitive_array
    from vortex_io.encodings._struct import struct_array

    day = 86_400 * 10**6
    ts = pa.array(day0 * day + rng.integers(0, 5 * day, n), type=pa.timestamp("us", "UTC"),
                  mask=rng.random(n) < 0.1)
    dec = pa.array([None if i % 6 == 0 else decimal.Decimal(int(x)).scaleb(-2)
                    for i, x in enumerate(rng.integers(-5000, 5000, n))], type=pa.decimal128(9, 2))
    ints = vio.array(pa.array(rng.integers(-20, 20, n), mask=rng.random(n) < 0.1))
    cuts = sorted({0, n, *rng.integers(0, n, 3).tolist()})
    chunks = [ints.slice(a, b) for a, b in itertools.pairwise(cuts)]
    chunks.insert(1, constant_array(None, 0, ints.dtype))  # (an empty chunk)
    strs = vio.array(pa.array([None if i % 5 == 0 else f"s{i % 13}" for i in range(n)]))
    fields = {
        "ts": datetimeparts_encode(vio.array(ts)),
        "d": decimal_byte_parts_encode(vio.array(dec), dt.PType.I32),
        "c": chunked_array(chunks, ints.dtype),
        "cs": chunked_array([strs.slice(0, n // 2), strs.slice(n // 2, n)], strs.dtype),
        "m": Array(MASKED, dt.int32(True), n,
                   children=[primitive_array(rng.integers(0, 50, n).astype(np.int32)),
                             bool_array(rng.random(n) > 0.3)]),
        "bb": bytebool_array(rng.integers(0, 3, n).astype(np.uint8), bool_array(rng.random(n) > 0.2),
                             nullable=True),
        "l": vio.array(pa.array([[f"w{j}" for j in range(i % 4)] if i % 6 else None for i in range(n)])),
        "fl": vio.array(pa.array([[i, i + 1] if i % 5 else None for i in range(n)],
                                 type=pa.list_(pa.int64(), 2))),
        "lv": vio.array(pa.array([[1, 2], None, [], [3]] * (n // 4), type=pa.list_view(pa.int64()))),
    }
    d = dt.Struct(list(fields), [a.dtype for a in fields.values()])
    return struct_array(d, n, list(fields.values()))


def _hooks_stream(chunked_root: bool = False):
    from tests.native_util import stream_of
    from vortex_io.encodings._chunked import chunked_array

    rng = np.random.default_rng(11)
    msgs = [_hooks_message(rng, 400, k * 3) for k in range(4)]
    if chunked_root:  # each message a vortex.chunked of struct chunks
        msgs = [chunked_array([m.slice(0, 150), m.slice(150, 400)], m.dtype) for m in msgs]
    return stream_of(*msgs)


def _hooks_filters(data):
    import datetime
    import decimal

    with ng.use_native(False), vio.StreamReader(data) as r:
        t = r.read_arrow()
    ts = [v for v in t.column("ts").to_pylist() if v is not None]
    ds = [v for v in t.column("d").to_pylist() if v is not None]
    day = datetime.timedelta(days=1)
    t0 = datetime.datetime(1970, 1, 4, tzinfo=datetime.UTC)
    return [
        col("ts") < t0, col("ts") >= t0 + 2 * day, col("ts") == ts[3], col("ts").is_in(ts[500:505]),
        col("ts").is_null(), col("d") > decimal.Decimal("12.5"), col("d") <= 0, col("d") == ds[7],
        col("d").is_in([ds[1], decimal.Decimal("-49.99"), ds[900], 10**30]),
        col("d").is_not_null(), col("c") == 3, col("c") < -15, col("c").is_in([1, 2, 3]),
        col("c").is_null(), col("cs") == "s3", col("cs").is_in(["s1", "s12"]), col("m") >= 40,
        col("m").is_in([0, 7]), col("m") == 2**40, col("m").is_null(), col("bb"), ~col("bb"),
        col("bb") == False, col("bb").is_null(),  # noqa: E712
        (col("ts") < t0 + 5 * day) & (col("m") > 10), (col("c") == 0) | col("bb"),
        ~((col("d") > 0) & col("cs").is_in(["s0", "s5"])),
    ]


def test_nested_and_temporal_encodings_filter_natively(monkeypatch):
    """The scan evaluates these fields' hooks in the core: no message or column goes back
    to Python (``strict()``, and the per-message Python scan is never entered)."""
    data = _hooks_stream()
    d = vio.StreamReader(data).dtype
    from vortex_io._scan import Scan

    handed_back = []
    real = Scan._scan_one

    def spy(self, *a, **kw):
        if ng.enabled():
            handed_back.append(a[1].index)
        return real(self, *a, **kw)

    monkeypatch.setattr(Scan, "_scan_one", spy)
    for e in _hooks_filters(data):
        assert lower(e, d) is not None, repr(e)
        for columns in (None, ["l", "fl", "lv"], ["ts", "d", "l"]):
            assert_same_scan(data, filter=e, columns=columns)
            with ng.strict():
                run(data, native=True, filter=e, columns=columns)
            assert not handed_back, (e, columns, handed_back)
    for limit, offset in ((10, 0), (None, 333), (5, 1000)):
        assert_same_scan(data, filter=col("c") > 0, columns=["l", "lv", "fl", "m"], limit=limit,
                         offset=offset)


def test_chunked_roots_filter_the_same():
    data = _hooks_stream(chunked_root=True)
    for e in _hooks_filters(data)[::3]:
        assert_same_scan(data, filter=e)
        assert_same_scan(data, filter=e, columns=["l", "fl", "ts"])


def test_a_dictionary_column_filtered_and_taken():
    """The codes a predicate on a vortex.dict column unpacks are kept for the take of the
    same column (Node::kept): its selected rows equal the reference's, with null codes,
    null values, every selectivity, two predicates on one column, other columns taken
    beside it and the column read as a dictionary (read_dictionary)."""
    rng = np.random.default_rng(7)
    n = 20_000
    words = np.array([f"w{i:03d}" for i in range(300)], dtype=object)
    s = words[rng.integers(0, 300, n)]
    s[rng.random(n) < 0.05] = None
    t = pa.table({"k": pa.array(rng.integers(0, 40, n) * 1000, mask=rng.random(n) < 0.05),
                  "s": pa.array(s, pa.string()), "x": pa.array(np.arange(n))})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, chunk_rows=4096)
    data = buf.getvalue()
    r = vio.StreamReader(io.BytesIO(data))
    assert any(b.array.field("k").encoding == "vortex.dict" for b in r)
    for e in (col("k") > 15_000, col("k") < 1_000_000, col("k") == 3000, col("k").is_in([0, 39_000]),
              (col("k") >= 5000) & (col("k") < 30_000), col("s") > "w150", col("s") == "w007",
              (col("s") != "w001") & col("k").is_not_null()):
        for columns in (["k"], ["s"], ["k", "s", "x"], None):
            assert_same_scan(data, filter=e, columns=columns)
        got = vio.scan(data, filter=e, columns=["s", "k"], read_dictionary=["s"]).to_arrow()
        want = run(data, native=False, filter=e, columns=["s", "k"])[0][1]
        assert got.column("s").type == pa.dictionary(pa.int32(), pa.string())
        assert got.column("s").cast(pa.string()).equals(want.column("s"))
        assert got.column("k").equals(want.column("k"))
