"""The sampling compressor: lossless, decodable by vortex-data 0.93, deterministic, and it
chooses the encodings the data calls for."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io._arrow import map_arrow_type
from vortex_io._compress import CompressOptions, CompressSession, compress_array, scheme_names

from .strategies import arrays
from .vx_util import our_array_stream, vx_decode_to_arrow

STRICT = CompressOptions(strict=True)


def squash(a):
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _storage_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t) \
            or pa.types.is_duration(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    return t


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with every temporal type (nested ones too) replaced by its integer storage."""
    return map_arrow_type(t, _storage_type)


def values(a: pa.Array) -> list:
    """Python values, NaN comparable; temporal values (nested ones too) as their integer
    storage (Python's datetime cannot hold every timestamp)."""
    def norm(v):
        return ("NaN",) if isinstance(v, float) and v != v else v

    a = squash(a)
    if any(k in str(a.type) for k in ("timestamp", "date", "time", "duration")):
        a = a.cast(_plain(a.type))
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
    "wide_decimals": pa.array([None if i % 7 == 0 else (i * 7919) << 70 for i in range(N)],
                              pa.decimal128(38, 0)),  # unscaled values past 64 bits
    # valid only at rows 2100 and 4500, which no sample slice covers
    "sample_all_null": pa.array(np.where(np.isin(np.arange(N), [2100, 4500]), 2.5, np.nan),
                                mask=~np.isin(np.arange(N), [2100, 4500])),
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
    if name not in ("bools", "normal", "wide_decimals"):
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


# -- what the estimates choose on larger columns (the sample is a small part of them) -------

BIG = 20_000
_r = np.random.default_rng(11)


def _ids(n: int, distinct: int) -> np.ndarray:
    """Aircraft-tail-number-like strings: ``distinct`` 6-character ids, used uniformly (a
    1024-row sample of 20k rows then holds ~850 distinct values of 3000)."""
    letters = np.array(list("ABCDEFGHJKLMNPRSTUVWXYZ"))
    pool = np.array([f"N{i:03d}{a}{b}" for i, (a, b) in
                     enumerate(zip(_r.choice(letters, distinct), _r.choice(letters, distinct)))])
    return pool[_r.integers(0, distinct, n)]


def _days(n: int) -> np.ndarray:
    """Times of day (HHMM-ish ints) sorted within each 'day' of ~900 rows, nulls 3%."""
    parts = [np.sort(_r.integers(500, 2400, 900)) for _ in range(n // 900 + 1)]
    return np.concatenate(parts)[:n]


_CENTERED = np.round(_r.laplace(0, 3, BIG)).astype(np.int64)
_OUTLIERS = _r.random(BIG) < 0.005
_CENTERED[_OUTLIERS] = _r.integers(-3000, 3000, int(_OUTLIERS.sum()))

BIG_SHAPES = {
    # a dictionary pays even though most sample rows are distinct (3000 values, 20k rows)
    "repeated_ids": (pa.array(_ids(BIG, 3000)), "vortex.dict"),
    # 200 values spread over 13 bits: 8-bit codes beat FoR + bit-packing
    "wide_low_card": (pa.array(_r.choice(_r.integers(17, 5000, 200), BIG)), "vortex.dict"),
    # sorted runs with resets and nulls: delta (zigzag deltas, resets as patches)
    "sorted_days": (pa.array(_days(BIG), mask=_r.random(BIG) < 0.03), "fastlanes.delta"),
    # small values of both signs with rare outliers: zigzag, not FoR
    "centered": (pa.array(_CENTERED), "vortex.zigzag"),
    # hourly timestamps over many days: days / seconds / subseconds parts
    "hourly_ts": (pa.array(np.sort(_r.integers(15_000, 16_000, BIG)) * 86_400
                           + _r.integers(5, 23, BIG) * 3600, pa.timestamp("s", "UTC")),
                  "vortex.datetimeparts"),
}


def _forced_sizes(arr: vio.Array) -> dict[str, int]:
    """Bytes of ``arr`` forced into each scheme that can encode it (children still cascade)."""
    from vortex_io._compress import encoder_for

    out = {}
    for sid in scheme_names():
        if sid in ("vortex.constant", "vortex.sequence"):
            continue
        try:
            out[sid] = encoder_for(sid)(arr).nbytes
        except Exception:  # the scheme does not apply to this column
            continue
    return out


@pytest.mark.parametrize("name", sorted(BIG_SHAPES))
def test_larger_columns_choose_the_cheapest_encoding(name):
    src, expected = BIG_SHAPES[name]
    c = check_round_trip(src)
    assert c.encoding == expected, c.tree()
    forced = _forced_sizes(vio.array(src))
    # the estimate picked (within 10%) the smallest of all single-scheme choices
    assert c.nbytes <= 1.1 * min(forced.values()) + 256, (c.tree(), forced)


def test_repeated_strings_get_a_dictionary_with_compressed_values():
    c = check_round_trip(pa.array(_ids(BIG, 3000)))
    codes, vals = c.children
    assert codes.encoding == "fastlanes.bitpacked" and codes.meta.bit_width == 12
    assert vals.encoding == "vortex.fsst", c.tree()  # 3000 ids: FSST pays on the values
    assert c.nbytes < vio.array(pa.array(_ids(BIG, 3000))).nbytes / 4


def test_rare_nulls_get_a_compressed_validity():
    src = pa.array(_r.integers(0, 1000, BIG), mask=_r.random(BIG) < 0.01)
    c = check_round_trip(src)
    validity = c.children[-1]
    assert validity.dtype == vio.dtype.Bool(), c.tree()
    assert validity.encoding in ("vortex.sparse", "vortex.runend"), c.tree()
    assert validity.nbytes < BIG / 8 / 2  # a bitmap would be BIG / 8


def test_nearly_sorted_columns_delta_with_signed_deltas():
    src, _ = BIG_SHAPES["sorted_days"]
    c = check_round_trip(src)
    deltas = c.children[1]
    # the resets make negative deltas: zigzag or a dictionary of them, never full width
    assert c.encoding == "fastlanes.delta", c.tree()
    assert deltas.encoding in ("vortex.zigzag", "vortex.dict"), c.tree()
    # about 6 bits a row instead of the 11 of FoR + bit-packing
    assert c.nbytes < BIG * 6 / 8


def test_session_replays_fsst_tables_and_alp_exponents():
    urls = [f"https://example.com/{w}/item/{i}?ref={i % 13}"
            for w, i in zip(_r.choice(["shop", "blog", "news"], 6000), _r.integers(0, 10**6, 6000))]
    t = pa.table({"u": urls, "p": np.round(_r.uniform(10, 20, 6000), 2)})
    sess = CompressSession()
    outs = [vio.compress(vio.array(b), session=sess) for b in t.to_batches(max_chunksize=2000)]
    assert sess.searches == 2 and sess.replays == 4
    us = [o.field("u") for o in outs]
    ps = [o.field("p") for o in outs]
    assert all(u.encoding == "vortex.fsst" for u in us) and all(p.encoding == "vortex.alp" for p in ps)
    assert all(bytes(u.buffers[0]) == bytes(us[0].buffers[0]) for u in us)  # one symbol table
    assert len({(p.meta.e, p.meta.f) for p in ps}) == 1
    buf = io.BytesIO()
    with vio.StreamWriter(buf, t.schema) as w:
        for o in outs:
            w.write_batch(o)
    got = vx_decode_to_arrow(buf.getvalue())
    theirs = pa.Table.from_batches([pa.RecordBatch.from_struct_array(g) for g in got])
    assert theirs.column("u").to_pylist() == urls
    assert theirs.column("p").to_pylist() == t.column("p").to_pylist()
    assert vio.StreamReader(buf.getvalue()).read_arrow().equals(t)


COMPACT = CompressOptions(strict=True, compact=True)


def test_compact_mode_zstd_codes_are_smaller_and_decode_everywhere():
    hours = _r.choice(np.arange(5, 24), BIG, p=np.linspace(1, 3, 19) / np.linspace(1, 3, 19).sum())
    src = pa.array(np.repeat(hours, 3)[:BIG] * 100)  # runs of 3, skewed: zstd beats 5-bit codes
    c = check_round_trip(src, COMPACT)
    assert c.encoding == "vortex.dict" and c.children[0].encoding == "vortex.zstd", c.tree()
    default = compress_array(vio.array(src), STRICT)
    assert "vortex.zstd" not in default.tree()  # only compact mode uses zstd
    assert c.nbytes < 0.7 * default.nbytes


def test_compact_stream_decodes_everywhere():
    t = pa.table({k: v for k, (v, _) in BIG_SHAPES.items()} | {"s": pa.array(_ids(BIG, 50))})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, chunk_rows=8192, compress=COMPACT)  # options through the writer
    data = buf.getvalue()
    assert b"vortex.zstd" in data
    assert len(data) < vio.write_ipc(io.BytesIO(), t, chunk_rows=8192)
    ours = vio.StreamReader(data).read_arrow()
    got = vx_decode_to_arrow(data)
    theirs = pa.Table.from_batches([pa.RecordBatch.from_struct_array(g) for g in got]).cast(t.schema)
    for name in t.column_names:
        assert values(ours[name]) == values(t[name]), name
        assert values(theirs[name]) == values(t[name]), name


def test_compact_mode_onpair_for_long_text():
    words = np.array("the quick brown fox jumps over lazy dogs furiously final deposits "
                     "sleep among pending requests".split())
    text = pa.array([" ".join(_r.choice(words, _r.integers(3, 9))) for _ in range(BIG)])
    c = check_round_trip(text, COMPACT)
    assert c.encoding == "vortex.onpair", c.tree()
    default = compress_array(vio.array(text), STRICT)
    assert default.encoding == "vortex.fsst", default.tree()  # OnPair only in compact mode
    assert c.nbytes < default.nbytes


def test_kept_strings_get_their_offsets_and_validity_compressed():
    # random 8-byte keys: neither a dictionary nor FSST pays, the varbin stays
    ids = pa.array([bytes(x) for x in _r.integers(0, 256, (BIG, 8), dtype=np.uint8)], pa.binary(),
                   mask=_r.random(BIG) < 0.01)
    c = check_round_trip(ids)
    assert c.encoding == "vortex.varbin", c.tree()
    offsets, validity = c.children
    assert offsets.encoding != "vortex.primitive" and validity.encoding != "vortex.bool", c.tree()
    # a dictionary's values of equal length: their offsets are a sequence (when children
    # that short are compressed at all: by default they stay canonical, cheaper to decode)
    sides = pa.array(_r.choice(["B", "S"], BIG))
    side = compress_array(vio.array(sides), dataclasses.replace(STRICT, min_child_rows=0))
    assert side.to_arrow().equals(sides)
    values_ = side.children[1]
    assert side.encoding == "vortex.dict" and values_.children[0].encoding == "vortex.sequence", side.tree()
    side = check_round_trip(sides)
    assert side.children[1].children[0].encoding == "vortex.primitive", side.tree()


def test_short_children_stay_canonical():
    """Short side structures of a long column (here the patches of a bit-packed column)
    are not encoded (decode overhead); a short column and its main child still are."""
    rng = np.random.default_rng(3)
    v = rng.integers(0, 1000, 65_536)
    v[rng.choice(len(v), 300, replace=False)] = rng.integers(100_000, 100_500, 300)
    ints = pa.array(v)
    c = compress_array(vio.array(ints), STRICT)
    assert c.to_arrow().equals(ints)
    patched = [n for n in _nodes(c) if n.encoding == "fastlanes.bitpacked" and n.meta.patches]
    assert patched and all(k.is_canonical for n in patched for k in n.children), c.tree()
    full = compress_array(vio.array(ints), dataclasses.replace(STRICT, min_child_rows=0))
    assert full.to_arrow().equals(ints)
    assert any(not k.is_canonical for n in _nodes(full) for k in n.children
               if n.encoding == "fastlanes.bitpacked"), full.tree()
    # a 300-row column: compressed, its main child cascaded as before
    prices = pa.array(np.round(rng.normal(100, 5, 300), 2))
    small = compress_array(vio.array(prices), STRICT)
    assert small.encoding == "vortex.alp" and not small.children[0].is_canonical, small.tree()
    assert small.to_arrow().equals(prices)


def _nodes(a: vio.Array) -> list[vio.Array]:
    return [a, *(n for c in a.children for n in _nodes(c))]


def test_a_compressing_writer_sends_tiny_batches_canonical() -> None:
    t = pa.table({"x": list(range(10)), "s": ["a", "b"] * 5})
    small, big = t, pa.table({"x": list(range(5000)), "s": ["a", "b"] * 2500})

    def encodings(data, **kw):
        with vio.StreamReader(_stream_of(data, **kw)) as r:
            return {c.encoding for b in r for c in b.array.children}

    assert encodings(small, compress=True) <= {"vortex.primitive", "vortex.varbin", "vortex.varbinview"}
    assert encodings(small, compress=vio.CompressOptions(min_batch_bytes=0)) - {"vortex.primitive"}
    assert "vortex.primitive" not in encodings(big, compress=True)


def _stream_of(data: pa.Table, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, data, **kw)
    return buf.getvalue()
