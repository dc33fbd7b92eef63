"""The sampling compressor: lossless, decodable by vortex-data 0.93, deterministic, and it
chooses the encodings the data calls for."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io.compress import CompressOptions, CompressSession, compress_array

from .strategies import arrays
from .vx_util import our_array_stream, vx_decode_to_arrow

STRICT = CompressOptions(strict=True)


def squash(a):
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def values(a: pa.Array) -> list:
    """Python values, NaN comparable; temporal values as their integer storage (Python's
    datetime cannot hold every timestamp)."""
    def norm(v):
        return ("NaN",) if isinstance(v, float) and v != v else v

    a = squash(a)
    t = a.type
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t):
        a = a.view(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        a = a.view(pa.int32())
    return [norm(v) for v in a.to_pylist()]


def check_round_trip(src: pa.Array, options: CompressOptions = STRICT) -> vio.Array:
    """Compress, then decode with us and with vortex-data: both give the source values."""
    arr = vio.array(src)
    c = compress_array(arr, options)
    assert c.dtype == arr.dtype
    assert values(c.to_arrow()) == values(arr.to_arrow())
    stream = our_array_stream(c)
    back = vio.read_ipc(stream)
    assert values(back.to_arrow()) == values(arr.to_arrow())
    (vx_arr,) = vx_decode_to_arrow(stream)
    assert values(vx_arr.cast(squash(arr.to_arrow()).type)) == values(arr.to_arrow())
    return c


# -- data shapes ---------------------------------------------------------------------------------

N = 5000
rng = np.random.default_rng(7)

SHAPES = {
    "sorted_ts": pa.array(np.cumsum(rng.integers(600, 1400, N)) + 10**15, pa.timestamp("us", "UTC")),
    "sequence": pa.array(np.arange(N, dtype=np.int64) * 5 + 3),
    "constant": pa.array(np.full(N, 42, dtype=np.int32)),
    "constant_str": pa.array(["same"] * N),
    "all_null": pa.array([None] * N, pa.float64()),
    "small_ints": pa.array(rng.integers(0, 100, N)),
    "offset_ints": pa.array(rng.integers(10**6, 10**6 + 500, N)),
    "negative_ints": pa.array(rng.integers(-50, 50, N).astype(np.int32)),
    "outliers": pa.array(np.where(rng.random(N) < 0.01, rng.integers(0, 2**40, N), rng.integers(0, 64, N))),
    "runs": pa.array(np.repeat(rng.integers(0, 1000, N // 100), 100)),
    "mostly_zero": pa.array(np.where(rng.random(N) < 0.02, rng.integers(1, 10**6, N), 0)),
    "prices": pa.array(np.round(rng.uniform(80, 120, N), 2)),
    "prices_f32": pa.array(np.round(rng.uniform(80, 120, N), 2).astype(np.float32)),
    "normal": pa.array(rng.normal(size=N)),
    "special_floats": pa.array(np.where(rng.random(N) < 0.05, np.nan,
                                        np.where(rng.random(N) < 0.05, -0.0, np.round(rng.normal(size=N), 1)))),
    "nullable_floats": pa.array(np.round(rng.normal(size=N), 1), mask=rng.random(N) < 0.1),
    "low_card_str": pa.array(np.array(["apple", "pear", "fig", "kiwi"])[rng.integers(0, 4, N)],
                             mask=rng.random(N) < 0.05),
    "urls": pa.array([f"https://example.com/item/{i}?q={i % 97}" for i in rng.integers(0, 10**6, N)]),
    "binary_low_card": pa.array([bytes([i % 7]) * 3 for i in range(N)], pa.binary()),
    "bools": pa.array(rng.random(N) < 0.3, mask=rng.random(N) < 0.1),
    "decimals": pa.array([None if i % 11 == 0 else i * 3 for i in range(N)], pa.decimal128(10, 2)),
    "dates": pa.array(rng.integers(18000, 19000, N).astype(np.int32), pa.date32()),
    "whole_days": pa.array((rng.integers(18000, 19000, N) * 86400000).astype(np.int64), pa.timestamp("ms")),
    "list_ints": pa.array([list(range(i % 5)) for i in range(N)]),
    "struct": pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 10, N)), pa.array(np.array(["a", "b"])[rng.integers(0, 2, N)])],
        names=["x", "y"]),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes_round_trip_through_vortex_data(name):
    src = SHAPES[name]
    c = check_round_trip(src)
    if name not in ("bools", "normal"):
        assert c.nbytes < vio.array(src).nbytes, c.tree()


@pytest.mark.parametrize("name, expected", [
    ("sequence", "vortex.sequence"),
    ("constant", "vortex.constant"),
    ("constant_str", "vortex.constant"),
    ("all_null", "vortex.constant"),
    ("runs", {"vortex.runend", "vortex.dict"}),
    ("prices", "vortex.alp"),
    ("low_card_str", "vortex.dict"),
    ("mostly_zero", {"vortex.sparse", "fastlanes.bitpacked"}),  # width 0 + patches is sparse
    ("small_ints", "fastlanes.bitpacked"),
    ("offset_ints", "fastlanes.for"),
])
def test_chooses_the_natural_encoding(name, expected):
    c = compress_array(vio.array(SHAPES[name]), STRICT)
    wanted = {expected} if isinstance(expected, str) else expected
    assert c.encoding in wanted, c.tree()


def test_sorted_timestamps_use_delta():
    c = compress_array(vio.array(SHAPES["sorted_ts"]), STRICT)
    assert "fastlanes.delta" in c.tree(), c.tree()


def test_deterministic_output():
    t = pa.table({k: v for k, v in SHAPES.items() if k not in ("struct", "list_ints")})
    a, b = io.BytesIO(), io.BytesIO()
    vio.write_ipc(a, t, chunk_rows=2048)
    vio.write_ipc(b, t, chunk_rows=2048)
    assert a.getvalue() == b.getvalue()


def test_restrict_exclude_and_force_per_column():
    batch = pa.record_batch({"p": SHAPES["prices"], "s": SHAPES["low_card_str"],
                             "i": SHAPES["small_ints"]})
    c = vio.compress(vio.array(batch), encodings={"p": [], "s": "vortex.fsst",
                                                  "i": ["fastlanes.for"]})
    assert c.field("p").encoding == "vortex.primitive"
    assert c.field("s").encoding == "vortex.fsst"
    assert c.field("i").encoding in ("fastlanes.for", "vortex.primitive")
    assert values(c.to_arrow()) == values(vio.array(batch).to_arrow())
    opts = CompressOptions(exclude=frozenset({"vortex.alp", "vortex.alprd"}), strict=True)
    assert compress_array(vio.array(SHAPES["prices"]), opts).encoding != "vortex.alp"
    with pytest.raises(ValueError, match="unknown encodings"):
        vio.compress(vio.array(batch), encodings={"p": ["vortex.bogus"]})


def test_session_replays_plans_across_chunks():
    t = pa.table({"ts": SHAPES["sorted_ts"], "s": SHAPES["low_card_str"], "p": SHAPES["prices"]})
    sess = CompressSession()
    for b in t.to_batches(max_chunksize=1000):
        c = vio.compress(vio.array(b), session=sess)
        assert values(c.to_arrow()) == values(vio.array(b).to_arrow())
    assert sess.searches == 3 and sess.replays == 3 * 4


def test_compressed_stream_is_smaller_than_arrow_ipc_and_decodes_everywhere():
    t = pa.table({k: v for k, v in SHAPES.items()})
    buf = io.BytesIO()
    n = vio.write_ipc(buf, t, chunk_rows=2048)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t, max_chunksize=2048)
    assert n < len(sink.getvalue()) / 3
    ours = vio.StreamReader(buf.getvalue()).read_arrow()
    got = vx_decode_to_arrow(buf.getvalue())
    theirs = pa.Table.from_batches([pa.RecordBatch.from_struct_array(g) for g in got]).cast(t.schema)
    for name in t.column_names:  # column by column: NaN must equal NaN
        assert values(ours[name]) == values(t[name]), name
        assert values(theirs[name]) == values(t[name]), name


@settings(max_examples=15)
@given(arrays(max_size=200, slices=True))
def test_any_type_round_trips(src):
    check_round_trip(src)


@settings(max_examples=15)
@given(st.integers(1, 3000), st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8,
                                              np.uint16, np.uint32, np.uint64]),
       st.integers(0, 63), st.floats(0, 0.3), st.integers(0, 2**31))
def test_integer_distributions(n, np_t, bits, null_frac, seed):
    r = np.random.default_rng(seed)
    info = np.iinfo(np_t)
    hi = min(int(info.max), (1 << bits) - 1) if bits else 0
    lo = max(int(info.min), -hi - 1) if info.min < 0 else 0
    vals = r.integers(lo, hi + 1, n, dtype=np.int64 if info.min < 0 or info.max < 2**63 else np.uint64)
    src = pa.array(vals.astype(np_t), mask=r.random(n) < null_frac)
    check_round_trip(src)
