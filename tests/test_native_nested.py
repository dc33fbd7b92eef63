"""The native core against the numpy reference for the nested and compound encodings:
vortex.datetimeparts, decimal_byte_parts, bytebool, masked, chunked, list, listview,
fixed_size_list (and constants of lists). Every stream is read both ways in strict mode
(nothing handed back to Python) unless it holds encodings outside this set; corrupted
metadata and children must fail with the same error class both ways."""

from __future__ import annotations

import datetime
import decimal
import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from tests.native_util import NATIVE, assert_same, outcome, stream_of, table_stream
from tests.strategies import arrays_of, leaf_types, nested_types, tables
from vortex_io import dtype as dt
from vortex_io._array import Array
from vortex_io._arrow import dtype_from_arrow
from vortex_io._proto import ProtoWriter
from vortex_io.encodings._bool import bool_array
from vortex_io.encodings._bytebool import bytebool_array, bytebool_encode
from vortex_io.encodings._chunked import CHUNKED, chunked_array
from vortex_io.encodings._constant import constant_array
from vortex_io.encodings._datetimeparts import DATETIMEPARTS, datetimeparts_encode
from vortex_io.encodings._decimal_byte_parts import DECIMAL_BYTE_PARTS, decimal_byte_parts_encode
from vortex_io.encodings._fixed_size_list import fixed_size_list_array
from vortex_io.encodings._list import list_array
from vortex_io.encodings._listview import listview_array
from vortex_io.encodings._masked import MASKED
from vortex_io.encodings._primitive import primitive_array

# the vortex-data streams are read both ways with or without the native core; only the
# strict native comparison needs it
UNITS = ["s", "ms", "us", "ns"]
TZS = [None, "UTC", "America/New_York"]
PER_SEC = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _mask(rng, n, p=0.2):
    return rng.random(n) > p


def _validity(rng, n, p=0.2):
    return bool_array(_mask(rng, n, p))


def _parts(a: Array) -> list[Array]:
    """An array, slices of it (offsets inside), and its empty and one-row slices."""
    n = len(a)
    out = [a]
    if n > 3:
        out += [a.slice(1, n - 1), a.slice(n // 3, n // 3 + 1)]
    out += [a.slice(0, 0)]
    return out


def _same(*arrays: Array, strict: bool = True) -> None:
    assert_same(stream_of(*arrays), strict=strict)


# -- vortex.datetimeparts ----------------------------------------------------------------------

@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("tz", TZS)
@pytest.mark.parametrize("nulls", [False, True])
def test_datetimeparts_units(unit, tz, nulls):
    rng = np.random.default_rng(hash((unit, tz, nulls)) & 0xFFFF)
    day = 86_400 * PER_SEC[unit]
    n = 2000
    vals = rng.integers(-3 * 10**4, 3 * 10**4, n) * day + rng.integers(0, day, n)
    vals[::7] = rng.integers(-(2**62), 2**62, len(vals[::7]))
    vals[:4] = [0, -1, 2**63 - 1, -(2**63)]
    mask = _mask(rng, n) if nulls else None
    ts = pa.array(vals, type=pa.timestamp(unit, tz), mask=None if mask is None else ~mask)
    a = datetimeparts_encode(vio.array(ts))
    assert a.encoding == "vortex.datetimeparts"
    _same(*_parts(a))


def _dtp(ts_dtype: dt.DType, days: Array, secs: Array, subs: Array, n: int) -> Array:
    meta = (ProtoWriter().varint(1, int(days.dtype.ptype)).varint(2, int(secs.dtype.ptype))
            .varint(3, int(subs.dtype.ptype)).finish())
    return Array(DATETIMEPARTS, ts_dtype, n, metadata=meta, children=[days, secs, subs])


def _ts(unit: str, tz: str | None = None, nullable: bool = True) -> dt.DType:
    return dtype_from_arrow(pa.timestamp(unit, tz), nullable)


@pytest.mark.parametrize("unit", UNITS)
def test_datetimeparts_constant_and_wrapping_parts(unit):
    rng = np.random.default_rng(7)
    n = 1500
    d = _ts(unit, "UTC")
    days = primitive_array(rng.integers(-500, 500, n).astype(np.int16), _validity(rng, n),
                           nullable=True)
    # constant seconds / subseconds (whole days, as vx.compress writes them)
    a = _dtp(d, days, constant_array(0, n, dt.int32()), constant_array(7, n, dt.uint8()), n)
    _same(*_parts(a))
    # u64 parts past i64 (reinterpreted, wrapping) and negative seconds
    big = primitive_array(np.full(n, 2**64 - 5, dtype=np.uint64))
    neg = primitive_array(rng.integers(-(2**31), 2**31, n).astype(np.int64))
    _same(*_parts(_dtp(d, days, neg, big, n)))
    # a constant past i64 (wrapped) and a large days type
    days64 = primitive_array(rng.integers(-(2**62), 2**62, n).astype(np.int64))
    nn = _ts(unit, None, nullable=False)
    _same(_dtp(nn, days64, constant_array(2**64 - 1, n, dt.uint64()), neg, n))
    # empty and single rows
    for k in (0, 1):
        _same(_dtp(d, days.slice(0, k), constant_array(1, k, dt.int8()),
                   constant_array(2, k, dt.int8()), k))


@pytest.mark.parametrize("unit", UNITS)
def test_datetimeparts_from_vortex_data(unit):
    from tests.vx_util import vx_stream

    rng = np.random.default_rng(11)
    per_day = 86_400 * PER_SEC[unit]
    whole = rng.integers(0, 20_000, 3000) * per_day
    mixed = whole + rng.integers(0, per_day, 3000) // 1000 * 1000
    seen = 0
    for vals, tz in ((whole, None), (mixed, "UTC"), (whole, "America/New_York")):
        mask = rng.random(3000) < 0.1
        t = pa.table({"t": pa.array(vals, type=pa.timestamp(unit, tz), mask=mask),
                      "u": pa.array(vals, type=pa.timestamp(unit, tz))})
        data = vx_stream(t, compress=True)
        with vio.StreamReader(data) as r:
            seen += sum("vortex.datetimeparts" in b.array.tree() for b in r)
        assert_same(data)
    assert seen


def test_datetimeparts_corrupt():
    rng = np.random.default_rng(3)
    n = 100
    d = _ts("us")
    days = primitive_array(rng.integers(-9, 9, n).astype(np.int32), _validity(rng, n), nullable=True)
    secs = primitive_array(rng.integers(0, 86400, n).astype(np.int32))
    good = _dtp(d, days, secs, secs, n)
    cases = [
        Array(DATETIMEPARTS, d, n, metadata=b"\x08\x0b", children=good.children),  # bad ptype
        Array(DATETIMEPARTS, d, n, metadata=b"\x08\x09", children=good.children),  # float days
        Array(DATETIMEPARTS, d, n, metadata=good.metadata, children=good.children[:2]),
        # the metadata says i64 days, the child holds i32: a buffer of the wrong size
        Array(DATETIMEPARTS, d, n, metadata=b"\x08\x07\x10\x06\x18\x06", children=good.children),
        # null seconds
        _dtp(d, days, primitive_array(secs.to_numpy(), _validity(rng, n), nullable=True), secs, n),
        # a non-timestamp dtype
        Array(DATETIMEPARTS, dtype_from_arrow(pa.date64()), n, metadata=good.metadata,
              children=good.children),
    ]
    for bad in cases:
        r = assert_same(stream_of(bad, dtype=bad.dtype))
        assert r[0] == "err"
    # null constant seconds: "contain nulls"
    bad = _dtp(d, days, constant_array(None, n, dt.int32(True)), secs, n)
    assert assert_same(stream_of(bad))[0] == "err"


# -- vortex.decimal_byte_parts ---------------------------------------------------------------

@pytest.mark.parametrize("precision,scale", [(2, 0), (4, 2), (9, 3), (18, 6), (38, 10), (50, 5),
                                             (76, -2)])
@pytest.mark.parametrize("ptype", [None, dt.PType.I8, dt.PType.I16, dt.PType.I32, dt.PType.I64])
def test_decimal_byte_parts(precision, scale, ptype):
    rng = np.random.default_rng(precision)
    bits = {dt.PType.I8: 7, dt.PType.I16: 15, dt.PType.I32: 31, dt.PType.I64: 63, None: 40}[ptype]
    bound = min(10**precision - 1, 2**bits - 1)
    n = 700
    ints = [int(x) for x in rng.integers(-bound, bound, n, endpoint=True)] + [bound, -bound]
    typ = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    vals = [None if i % 5 == 0 else decimal.Decimal(x).scaleb(-scale) for i, x in enumerate(ints)]
    a = decimal_byte_parts_encode(vio.array(pa.array(vals, type=typ)), ptype)
    _same(*_parts(a))
    nn = decimal_byte_parts_encode(vio.array(pa.array([v for v in vals if v is not None], type=typ)),
                                   ptype)
    _same(*_parts(nn))


@pytest.mark.parametrize("typ", [pa.decimal128(10, 2), pa.decimal128(38, 4), pa.decimal128(5, 0),
                                 pa.decimal128(18, 3)])
def test_decimal_byte_parts_from_vortex_data(typ):
    from tests.vx_util import vx_stream

    rng = np.random.default_rng(typ.precision)
    bound = min(10**typ.precision - 1, 10**6)
    ints = rng.integers(-bound, bound, 4000)
    vals = [None if i % 7 == 0 else decimal.Decimal(int(x)).scaleb(-typ.scale) for i, x in enumerate(ints)]
    data = vx_stream(pa.table({"d": pa.array(vals, type=typ)}), compress=True)
    with vio.StreamReader(data) as r:
        assert any("vortex.decimal_byte_parts" in b.array.tree() for b in r)
    assert_same(data)


def test_decimal_byte_parts_corrupt():
    d = dt.Decimal(10, 2, True)
    msp = primitive_array(np.arange(50, dtype=np.int32), nullable=True)
    cases = [
        Array(DECIMAL_BYTE_PARTS, d, 50, metadata=b"\x08\x02", children=[msp]),  # unsigned msp
        Array(DECIMAL_BYTE_PARTS, d, 50, metadata=b"\x08\x09", children=[msp]),  # float msp
        Array(DECIMAL_BYTE_PARTS, d, 50, metadata=b"\x08\x06\x10\x01", children=[msp]),  # lower parts
        Array(DECIMAL_BYTE_PARTS, d, 50, metadata=b"\x08\x06", children=[msp, msp]),
        Array(DECIMAL_BYTE_PARTS, d, 50, metadata=b"\x08\x07", children=[msp]),  # i64 vs i32 buffer
        Array(DECIMAL_BYTE_PARTS, d, 50, metadata=b"\x08", children=[msp]),  # truncated proto
    ]
    for bad in cases:
        assert assert_same(stream_of(bad))[0] == "err"


# -- vortex.bytebool ---------------------------------------------------------------------------

@pytest.mark.parametrize("nulls", [False, True])
def test_bytebool(nulls):
    rng = np.random.default_rng(5)
    n = 3001
    raw = rng.integers(0, 256, n).astype(np.uint8)
    raw[rng.random(n) < 0.5] = 0
    validity = _validity(rng, n) if nulls else None
    a = bytebool_array(raw, validity, nullable=nulls)
    _same(*_parts(a))
    b = bytebool_encode(pa.array([True, None, False, True] * 100))
    _same(*_parts(b))
    allnull = bytebool_array(raw[:64], constant_array(False, 64, dt.Bool()), nullable=True)
    _same(allnull)


def test_bytebool_corrupt():
    from vortex_io.encodings._bytebool import BYTEBOOL

    buf = np.ones(10, dtype=np.uint8)
    for bad in (Array(BYTEBOOL, dt.Bool(), 11, buffers=[buf]),
                Array(BYTEBOOL, dt.Bool(), 10, metadata=b"\x08\x01", buffers=[buf]),
                Array(BYTEBOOL, dt.Bool(), 10, buffers=[buf], children=[bool_array(buf > 0)])):
        assert assert_same(stream_of(bad))[0] == "err"
    bad = Array(BYTEBOOL, dt.int8(), 10, buffers=[buf])
    assert assert_same(stream_of(bad, dtype=dt.int8()))[0] == "err"


# -- vortex.masked -----------------------------------------------------------------------------

def _masked(child: Array, validity: Array | None, d: dt.DType) -> Array:
    return Array(MASKED, d, len(child), children=[child, *([validity] if validity is not None else [])])


def test_masked():
    rng = np.random.default_rng(9)
    n = 1200
    kids = [
        vio.array(pa.array(rng.integers(0, 100, n))),
        vio.array(pa.array([f"s{i % 17}" * (i % 5) for i in range(n)])),
        vio.array(pa.array([[i, i + 1][: i % 3] for i in range(n)], type=pa.list_(pa.int32()))),
        vio.array(pa.array([{"a": i, "b": str(i)} for i in range(n)],
                           type=pa.struct([pa.field("a", pa.int64(), False),
                                           pa.field("b", pa.string(), False)]))),
        vio.array(pa.array(rng.random(n) > 0.5)),
    ]
    for child in kids:
        child = vio.array(child.to_arrow(), dtype=child.dtype.with_nullable(False))
        d = child.dtype.with_nullable(True)
        for v in (_validity(rng, n), constant_array(False, n, dt.Bool()),
                  constant_array(True, n, dt.Bool()), None):
            a = _masked(child, v, d)
            _same(*_parts(a))


def test_masked_corrupt():
    child = primitive_array(np.arange(10, dtype=np.int64))
    v = bool_array(np.ones(10, dtype=bool))
    for bad, d in ((_masked(child, v, dt.int64(False)), dt.int64(False)),  # validity, non-nullable
                   (Array(MASKED, dt.int64(True), 10, children=[child, v, v]), dt.int64(True)),
                   (Array(MASKED, dt.int64(True), 10, children=[]), dt.int64(True)),
                   (Array(MASKED, dt.int64(True), 10, children=[child], buffers=[np.zeros(1, np.uint8)]),
                    dt.int64(True)),
                   (Array(MASKED, dt.Null(), 10, children=[child]), dt.Null())):
        assert assert_same(stream_of(bad, dtype=d))[0] == "err"


# -- vortex.chunked ----------------------------------------------------------------------------

def test_chunked_every_layout():
    rng = np.random.default_rng(13)
    arrays = [
        pa.array(rng.integers(-50, 50, 300), mask=rng.random(300) < 0.2),
        pa.array(rng.random(300) > 0.5, mask=rng.random(300) < 0.2),
        pa.array([None if i % 7 == 0 else f"v{i}" * (i % 4) for i in range(300)]),
        pa.array([b"x" * (i % 20) for i in range(300)], type=pa.binary_view()),
        pa.array([decimal.Decimal(i).scaleb(-2) for i in range(300)], type=pa.decimal128(9, 2)),
        pa.array([decimal.Decimal(i).scaleb(-2) for i in range(300)], type=pa.decimal256(60, 2)),
        pa.array([None if i % 5 == 0 else [str(j) for j in range(i % 4)] for i in range(300)],
                 type=pa.list_(pa.string())),
        pa.array([[i, i * 2] if i % 3 else None for i in range(300)], type=pa.list_(pa.int16(), 2)),
        pa.array([{"a": i, "s": [f"{i}"] * (i % 3)} if i % 4 else None for i in range(300)]),
        pa.nulls(300),
    ]
    for arr in arrays:
        whole = vio.array(arr)
        cuts = [0, 1, 1, 50, 120, 299, 300]
        chunks = [whole.slice(a, b) for a, b in itertools.pairwise(cuts)]
        ch = chunked_array(chunks, whole.dtype)
        _same(ch, ch.slice(3, 250), ch.slice(0, 0), chunked_array([], whole.dtype),
              chunked_array(chunks[3:4], whole.dtype))


def test_chunked_mixed_string_encodings_and_struct_root():
    s1 = vio.array(pa.array(["a", None, "a longer string than twelve"]))
    s2 = vio.array(pa.array(["xyz", "another long string value"], type=pa.string_view()))
    ch = chunked_array([s1, s2, s1.slice(1, 3)], s1.dtype)
    _same(ch)
    # a table's root struct chunked (split into the fields natively)
    t = pa.table({"x": [1, 2, 3, 4], "s": ["a", "b", None, "d"], "l": [[1], [], None, [2, 3]]})
    st_ = vio.array(t)
    assert st_.encoding == "vortex.chunked"
    root = chunked_array([st_.children[1].slice(0, 2), st_.children[1].slice(2, 4)], st_.dtype)
    _same(root)
    _same(chunked_array([], st_.dtype))


def test_chunked_nested_chunks():
    inner = chunked_array([vio.array(pa.array([1, 2])), vio.array(pa.array([3]))], dt.int64(True))
    outer = chunked_array([inner, vio.array(pa.array([4, None])), inner.slice(1, 2)], dt.int64(True))
    _same(outer)
    # chunks of a list's elements
    elems = chunked_array([vio.array(pa.array(["a", "b"])), vio.array(pa.array(["c"]))], dt.Utf8(True))
    lst = list_array(dt.List(dt.Utf8(True), True), elems,
                     primitive_array(np.array([0, 1, 1, 3], dtype=np.uint8)))
    _same(*_parts(lst))


def test_chunked_corrupt():
    a = vio.array(pa.array([1, 2, 3]))
    d = a.dtype

    def chunked(offs, *chunks, buffers=()):
        return Array(CHUNKED, d, 3, buffers=buffers,
                     children=[primitive_array(np.array(offs, dtype=np.uint64)), *chunks])

    cases = [
        chunked([0, 2], a),  # offsets end short of the length
        chunked([1, 3], a),  # do not start at 0
        chunked([0, 3, 2, 3], a, a, a),  # fall back
        chunked([0, 3]),  # a chunk missing
        chunked([0, 3], a, buffers=[np.zeros(2, np.uint8)]),
        Array(CHUNKED, d, 3, children=[]),
        chunked([0, 3], vio.array(pa.array([1, 2]))),  # a chunk shorter than its offsets say
        Array(CHUNKED, d, 3, children=[primitive_array(np.array([0, 3], dtype=np.uint32)), a]),
        Array(CHUNKED, d, 3, children=[primitive_array(np.array([0, 3], dtype=np.uint64),
                                                       bool_array(np.array([True, False])),
                                                       nullable=True), a]),
    ]
    for bad in cases:
        assert assert_same(stream_of(bad))[0] == "err"


# -- vortex.list -------------------------------------------------------------------------------

def test_list_nested_types():
    rng = np.random.default_rng(17)
    n = 800
    lens = rng.integers(0, 5, n)
    struct_t = pa.struct([pa.field("a", pa.int32()), pa.field("s", pa.string())])
    data = [
        pa.array([[f"w{j}" * (j % 3) for j in range(k)] if i % 6 else None
                  for i, k in enumerate(lens)], type=pa.list_(pa.string())),
        pa.array([[{"a": j, "s": None if j % 2 else f"{j}"} for j in range(k)] for k in lens],
                 type=pa.list_(struct_t)),
        pa.array([[[j] * (j % 3) for j in range(k)] if i % 4 else None for i, k in enumerate(lens)],
                 type=pa.list_(pa.list_(pa.int64()))),
        pa.array([[[j, j] for j in range(k)] for k in lens], type=pa.list_(pa.list_(pa.int8(), 2))),
        pa.array([[] for _ in range(n)], type=pa.list_(pa.float64())),
        pa.array([None] * n, type=pa.list_(pa.int32())),
        pa.array([[None] * int(k) for k in lens], type=pa.list_(pa.null())),
        pa.array([[j % 2 == 0 for j in range(k)] for k in lens], type=pa.large_list(pa.bool_())),
        pa.array([[b"\x00" * j for j in range(k)] for k in lens], type=pa.list_(pa.binary_view())),
    ]
    for arr in data:
        a = vio.array(arr)
        assert a.encoding == "vortex.list", a.encoding
        _same(*_parts(a))
        # a slice of the Arrow array: offsets that do not start at 0
        _same(*_parts(vio.array(arr.slice(5, 300))))


@pytest.mark.parametrize("ptype", ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8"])
def test_list_offsets_types(ptype):
    rng = np.random.default_rng(19)
    elems = vio.array(pa.array(rng.integers(0, 9, 120)))
    offs = np.sort(rng.integers(0, 121, 41)).astype(ptype)
    offs[0] = 3
    validity = _validity(rng, 40)
    a = list_array(dt.List(elems.dtype, True), elems, primitive_array(offs), validity)
    _same(*_parts(a))


def test_list_from_vortex_data():
    from tests.vx_util import vx_stream

    rng = np.random.default_rng(23)
    ints = pa.array([[int(x) for x in rng.integers(0, 100, rng.integers(0, 5))] if i % 9 else None
                     for i in range(3000)], type=pa.list_(pa.int64()))
    fsl = pa.array([[int(x) for x in rng.integers(0, 1000, 3)] for _ in range(3000)],
                   type=pa.list_(pa.int32(), 3))
    data = vx_stream(pa.table({"l": ints, "f": fsl}), compress=True)
    with vio.StreamReader(data) as r:
        tree = next(iter(r)).array.tree()
        assert "vortex.list" in tree and "vortex.fixed_size_list" in tree
    assert_same(data)
    # with strings (dict / FSST elements: not all native, so not strict)
    words = ["alpha", "beta", "gamma", None]
    strs = pa.array([[words[j % 4] for j in range(i % 4)] if i % 11 else None for i in range(3000)],
                    type=pa.list_(pa.string()))
    assert_same(vx_stream(pa.table({"s": strs}), compress=True), strict=False)
    assert_same(vx_stream(pa.table({"s": strs}), compress=False))


def test_list_corrupt():
    elems = vio.array(pa.array(np.arange(10)))
    d = dt.List(elems.dtype, True)
    off = primitive_array(np.array([0, 2, 5, 10], dtype=np.int32))
    meta = ProtoWriter().varint(1, 10).varint(2, int(dt.PType.I32)).finish()

    def lst(offsets, meta=meta, kids=None, dtype=d):
        from vortex_io.encodings._list import LIST
        return Array(LIST, dtype, 3, metadata=meta,
                     children=kids if kids is not None else [elems, offsets])

    cases = [
        lst(primitive_array(np.array([0, 2, 5, 11], dtype=np.int32))),  # past the elements
        lst(primitive_array(np.array([-1, 2, 5, 10], dtype=np.int32))),  # negative
        lst(primitive_array(np.array([0, 6, 5, 10], dtype=np.int32))),  # not monotonic
        lst(off, meta=ProtoWriter().varint(1, 10).varint(2, 9).finish()),  # float offsets
        lst(off, meta=ProtoWriter().varint(1, 11).varint(2, int(dt.PType.I32)).finish()),
        lst(off, meta=ProtoWriter().varint(1, 10).varint(2, int(dt.PType.I64)).finish()),
        lst(off, meta=b"\x08"),
        lst(off, kids=[elems, off, bool_array(np.ones(3, bool)), elems]),
        lst(off, kids=[elems]),
        lst(primitive_array(np.array([0, 2, 5, 10], dtype=np.int32), bool_array(np.array([1, 0, 1, 1], bool)),
                            nullable=True)),
    ]
    for bad in cases:
        assert assert_same(stream_of(bad))[0] == "err"
    # a list node for a non-list dtype
    bad = lst(off, dtype=dt.int64(True))
    assert assert_same(stream_of(bad, dtype=dt.int64(True)))[0] == "err"


# -- vortex.listview -------------------------------------------------------------------------------

def test_listview():
    rng = np.random.default_rng(29)
    n = 500
    elem_arrays = [pa.array(rng.integers(0, 1000, 60)),
                   pa.array([f"e{i}" * (i % 4) if i % 9 else None for i in range(60)]),
                   pa.array([[i] * (i % 3) for i in range(60)], type=pa.list_(pa.int8()))]
    for ea in elem_arrays:
        elems = vio.array(ea)
        d = dt.List(elems.dtype, True)
        sizes = rng.integers(0, 6, n)
        offs = rng.integers(0, 60 - sizes + 1)  # overlapping, out of order
        for o_t, s_t in (("i4", "i4"), ("u2", "u1"), ("i8", "u8")):
            a = listview_array(d, elems, primitive_array(offs.astype(o_t)),
                               primitive_array(sizes.astype(s_t)), _validity(rng, n))
            _same(*_parts(a))
        # laid end to end (the elements are not gathered), starting past 0
        sizes = rng.integers(0, 3, 20)
        offs = 4 + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        a = listview_array(d, elems, primitive_array(offs.astype("u4")),
                           primitive_array(sizes.astype("u4")))
        _same(*_parts(a))
    # from Arrow list views
    lv = pa.array([[1, 2], None, [], [3]] * 50, type=pa.list_view(pa.int64()))
    _same(*_parts(vio.array(lv)))
    _same(*_parts(vio.array(pa.array([["a"], ["b", "c"]] * 20, type=pa.large_list_view(pa.string())))))


def test_listview_corrupt():
    elems = vio.array(pa.array(np.arange(10)))
    d = dt.List(elems.dtype, True)

    def lv(offs, sizes, dtype="i8"):
        return listview_array(d, elems, primitive_array(np.array(offs, dtype=dtype)),
                              primitive_array(np.array(sizes, dtype=dtype)))

    cases = [
        lv([0, 5, 8], [2, 2, 3]),  # past the elements
        lv([0, -1, 8], [2, 1, 1]),  # negative offset
        lv([0, 1, 8], [2, -1, 1]),  # negative size
        lv([0, 2**63 - 1, 8], [2, 2**63 - 1, 1]),  # wraps int64
        lv([0, 2**64 - 1, 8], [2, 1, 1], "u8"),  # past i64
    ]
    for bad in cases:
        assert assert_same(stream_of(bad))[0] == "err"


# -- vortex.fixed_size_list ---------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 3])
def test_fixed_size_list(size):
    rng = np.random.default_rng(31 + size)
    n = 400
    for elem_t, gen in ((pa.float32(), lambda k: rng.random(k).astype(np.float32).tolist()),
                        (pa.string(), lambda k: [f"x{i}" if i % 3 else None for i in range(k)]),
                        (pa.list_(pa.int64()), lambda k: [[i] * (i % 3) for i in range(k)])):
        rows = [None if i % 7 == 0 else gen(size) for i in range(n)]
        arr = pa.array(rows, type=pa.list_(elem_t, size))
        _same(*_parts(vio.array(arr)))
        _same(*_parts(vio.array(arr.slice(3, 200))))
    # nested fixed-size lists, non-nullable
    inner = pa.array([[[i, i + 1]] * size for i in range(50)],
                     type=pa.list_(pa.list_(pa.int8(), 2), size))
    a = vio.array(inner, dtype=dtype_from_arrow(inner.type, False))
    _same(*_parts(a))


def test_fixed_size_list_corrupt():
    elems = vio.array(pa.array(np.arange(10, dtype=np.int32)))
    d = dt.FixedSizeList(elems.dtype, 3, True)
    for bad in (fixed_size_list_array(d, 4, elems),  # 12 elements needed
                fixed_size_list_array(d, 3, elems.slice(0, 9), elems.slice(0, 3)),  # int validity
                fixed_size_list_array(dt.FixedSizeList(elems.dtype, 3, False), 3, elems.slice(0, 9),
                                      bool_array(np.ones(3, bool)))):
        assert assert_same(stream_of(bad, dtype=bad.dtype))[0] == "err"


# -- constants of lists ---------------------------------------------------------------------------

@pytest.mark.parametrize("value,d", [
    ([1, 2, None], dt.List(dt.int32(True), True)),
    ([], dt.List(dt.int64(), False)),
    (None, dt.List(dt.int32(True), True)),
    (["a", "a string longer than twelve", None], dt.List(dt.Utf8(True), True)),
    ([[1], [], None], dt.List(dt.List(dt.int8(), True), False)),
    ([(1, "x"), (2, None)], dt.List(dt.Struct(["a", "b"], [dt.int16(), dt.Utf8(True)]), False)),
    ([1.5, 2.5], dt.FixedSizeList(dt.float64(), 2, False)),
    (None, dt.FixedSizeList(dt.float32(True), 3, True)),
    ([True, None, False], dt.FixedSizeList(dt.Bool(True), 3, True)),
    ([[1, 2], [3, 4]], dt.FixedSizeList(dt.FixedSizeList(dt.uint8(), 2, False), 2, False)),
    ([decimal.Decimal("1.25")], dt.List(dt.Decimal(10, 2), False)),
    ([b"\x00\x01"], dt.List(dt.Binary(), False)),
])
def test_list_constants(value, d):
    arrays = [constant_array(value, k, d) for k in (700, 0, 1)]
    _same(*arrays)
    # as a struct field
    sd = dt.Struct(["c"], [d], False)
    from vortex_io.encodings._struct import struct_array

    _same(struct_array(sd, 10, [constant_array(value, 10, d)]))


# -- generated data ------------------------------------------------------------------------------

def _nested() -> st.SearchStrategy[pa.DataType]:
    return st.recursive(leaf_types(), nested_types, max_leaves=4).filter(
        lambda t: pa.types.is_nested(t))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_nested().flatmap(lambda t: st.lists(arrays_of(t, max_size=12), min_size=1, max_size=3)))
def test_generated_nested_arrays(chunks):
    d = dtype_from_arrow(chunks[0].type)
    arrays = [vio.array(c, dtype=d) for c in chunks]
    assert_same(stream_of(*arrays, dtype=d))
    # and chunked, with a slice
    ch = chunked_array(arrays, d)
    assert_same(stream_of(ch, ch.slice(1, max(1, len(ch) - 1)), dtype=d))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(max_batches=3, max_size=30))
def test_generated_tables(t):
    assert_same(table_stream(t, compress=False, chunk_rows=13))
    assert_same(table_stream(t, compress=True, chunk_rows=25), strict=False)


# -- the numpy reference on its own --------------------------------------------------------------

@pytest.mark.skipif(NATIVE, reason="covered by the differential tests")
def test_reference_reads_these_streams():
    a = datetimeparts_encode(vio.array(pa.array([0, 86_400_000_001], type=pa.timestamp("us"))))
    assert outcome(stream_of(a), native=False)[0] == "ok"
    stamp = datetime.datetime(1970, 1, 2, 0, 0, 0, 1)
    assert outcome(stream_of(a), native=False)[1].to_pylist()[1] == stamp


def test_chunked_python_only_children():
    """Chunks or chunk offsets in an encoding only Python knows: the column goes back to
    Python (not strict), with the same result."""
    from vortex_io.encodings._sequence import sequence_array

    a = vio.array(pa.array([1, 2, None, 4, 5]))
    seq_offs = sequence_array(0, 5, 2, dt.uint64())
    ch = Array(CHUNKED, a.dtype, 5, children=[seq_offs, a])
    assert_same(stream_of(ch), strict=False)
    bad = Array(CHUNKED, a.dtype, 5, children=[sequence_array(0, 4, 2, dt.uint64()), a])
    assert assert_same(stream_of(bad), strict=False)[0] == "err"
    seq = sequence_array(10, 3, 4, dt.int64(True))
    ch = chunked_array([a, seq, a.slice(1, 2)], a.dtype)
    assert_same(stream_of(ch), strict=False)
    t = pa.table({"x": pa.array([1, 2, 3, 4]), "s": ["a", "b", "c", "d"]})
    root = vio.array(t)
    assert_same(stream_of(Array(CHUNKED, root.dtype, 4,
                                children=[sequence_array(0, 4, 2, dt.uint64()), *root.children[1:]])),
                strict=False)


def _mutation_base() -> bytes:
    rng = np.random.default_rng(41)
    n = 64
    ts = datetimeparts_encode(vio.array(pa.array(rng.integers(0, 10**12, n), type=pa.timestamp("ms"),
                                                 mask=rng.random(n) < 0.2)))
    dec = decimal_byte_parts_encode(vio.array(pa.array(
        [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-999, 999, n)], type=pa.decimal128(5, 2))))
    lst = vio.array(pa.array([[f"{i}"] * (i % 3) if i % 5 else None for i in range(n)]))
    lv = vio.array(pa.array([[i, i] for i in range(n)], type=pa.list_view(pa.int16())))
    fsl = vio.array(pa.array([[i, i, i] for i in range(n)], type=pa.list_(pa.int8(), 3)))
    bb = bytebool_encode(pa.array(rng.random(n) > 0.5))
    names = ["t", "d", "l", "v", "f", "b"]
    kids = [ts, dec, lst, lv, fsl, bb]
    from vortex_io.encodings._struct import struct_array

    d = dt.Struct(names, [k.dtype for k in kids], False)
    whole = struct_array(d, n, kids)
    return stream_of(chunked_array([whole.slice(0, 20), whole.slice(20, n)], d), whole.slice(3, 9))


_BASE = None


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=1, max_size=8), st.integers(0, 1 << 20))
def test_mutated_nested_streams_same_outcome(junk, at):
    global _BASE
    if _BASE is None:
        _BASE = _mutation_base()
    at = at % len(_BASE)
    data = _BASE[:at] + junk + _BASE[at + len(junk):]
    assert_same(data, strict=False)
