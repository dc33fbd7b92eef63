"""The logical model: DType flatbuffer codec, the Arrow type mapping, and the ScalarValue
protobuf codec; checked by round trips (hypothesis) and against bytes vortex-data wrote."""

from __future__ import annotations

import datetime
import decimal
import io
import math
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from tests.vx_util import vx, vx_decode_stream, vx_messages, vx_stream
from vortex_io import dtype as dt
from vortex_io._ipc.framing import MessageDecoder
from vortex_io._ipc.schema import decode_dtype, encode_dtype
from vortex_io._scalar import Scalar, value_from_proto, value_to_proto

# -- strategies ------------------------------------------------------------------------

nullable = st.booleans()


@st.composite
def decimals(draw) -> dt.Decimal:
    p = draw(st.integers(1, 76))
    return dt.Decimal(p, draw(st.integers(-20, p)), draw(nullable))


temporal = st.one_of(
    st.builds(dt.timestamp, st.sampled_from(["s", "ms", "us", "ns"]),
              st.sampled_from([None, "UTC", "Europe/Paris", "+05:30"]), nullable),
    st.builds(dt.date, st.sampled_from(["D", "ms"]), nullable),
    st.builds(dt.time, st.sampled_from(["s", "ms", "us", "ns"]), nullable),
)

plain_leaves = st.one_of(
    st.just(dt.Null()),
    st.builds(dt.Bool, nullable),
    st.builds(dt.Primitive, st.sampled_from(list(dt.PType)), nullable),
    decimals(),
    st.builds(dt.Utf8, nullable),
    st.builds(dt.Binary, nullable),
)

custom_ext = st.builds(
    dt.Extension,
    st.text(min_size=1, max_size=12).map(lambda s: "acme." + s),
    plain_leaves,
    st.binary(max_size=12),
)


def _nested(children):
    return st.one_of(
        st.builds(lambda fs, n: dt.Struct([f[0] for f in fs], [f[1] for f in fs], n),
                  st.lists(st.tuples(st.text(max_size=6), children), max_size=4,
                           unique_by=lambda f: f[0]), nullable),
        st.builds(dt.List, children, nullable),
        st.builds(dt.FixedSizeList, children, st.integers(0, 4), nullable),
    )


def dtypes(*, custom: bool = True) -> st.SearchStrategy[dt.DType]:
    leaves = st.one_of(plain_leaves, temporal, custom_ext) if custom else st.one_of(
        plain_leaves, temporal)
    return st.recursive(leaves, _nested, max_leaves=6)


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# -- DType flatbuffer ------------------------------------------------------------------------


@SETTINGS
@given(dtypes())
def test_dtype_flatbuffer_round_trip(d):
    raw = encode_dtype(d)
    assert decode_dtype(raw) == d
    assert decode_dtype(memoryview(raw)) == d


@settings(max_examples=25, deadline=None)
@given(dtypes())
def test_dtype_message_round_trip_through_a_stream(d):
    buf = io.BytesIO()
    with vio.StreamWriter(buf, d, metadata={"k": "v"}):
        pass
    with vio.StreamReader(buf.getvalue()) as r:
        assert r.dtype == d
        assert list(r) == []


EVERY_KIND = [
    dt.Null(),
    dt.Bool(), dt.Bool(True),
    *[dt.Primitive(p, n) for p in dt.PType for n in (False, True)],
    dt.Decimal(1, 0), dt.Decimal(38, 10, True), dt.Decimal(76, -5), dt.Decimal(76, 76, True),
    dt.Utf8(), dt.Binary(True),
    dt.Struct([], []), dt.Struct(["é", ""], [dt.Utf8(), dt.Null()], True),
    dt.List(dt.List(dt.int8(True)), True),
    dt.FixedSizeList(dt.Struct(["a"], [dt.float16()]), 0),
    dt.FixedSizeList(dt.Bool(), 2**32 - 1, True),
    dt.timestamp("ns", "America/New_York", True), dt.timestamp("s"),
    dt.date("D"), dt.date("ms", True), dt.time("s"), dt.time("ns", True),
    dt.Extension("acme.uuid", dt.FixedSizeList(dt.uint8(), 16), b"\x01\x02"),
    dt.Extension("acme.wrapped", dt.List(dt.Extension("acme.inner", dt.Utf8(True)))),
]


@pytest.mark.parametrize("d", EVERY_KIND, ids=repr)
def test_dtype_round_trip_every_kind(d):
    assert decode_dtype(encode_dtype(d)) == d
    assert decode_dtype(encode_dtype(d)).nullable == d.nullable


# -- Arrow mapping ------------------------------------------------------------------------

ARROW_MAPPING = [
    # arrow type, vortex dtype (nullable field), arrow type it reads back as
    (pa.null(), dt.Null(), pa.null()),
    (pa.bool_(), dt.Bool(True), pa.bool_()),
    (pa.int8(), dt.int8(True), pa.int8()),
    (pa.uint64(), dt.uint64(True), pa.uint64()),
    (pa.float16(), dt.float16(True), pa.float16()),
    (pa.float64(), dt.float64(True), pa.float64()),
    (pa.decimal128(12, 3), dt.Decimal(12, 3, True), pa.decimal128(12, 3)),
    (pa.decimal256(50, 2), dt.Decimal(50, 2, True), pa.decimal256(50, 2)),
    (pa.decimal256(20, 2), dt.Decimal(20, 2, True), pa.decimal128(20, 2)),
    (pa.string(), dt.Utf8(True), pa.string()),
    (pa.large_string(), dt.Utf8(True), pa.string()),
    (pa.string_view(), dt.Utf8(True), pa.string()),
    (pa.binary(), dt.Binary(True), pa.binary()),
    (pa.large_binary(), dt.Binary(True), pa.binary()),
    (pa.binary_view(), dt.Binary(True), pa.binary()),
    (pa.list_(pa.int32()), dt.List(dt.int32(True), True), pa.list_(pa.int32())),
    (pa.large_list(pa.field("x", pa.int32(), False)), dt.List(dt.int32(), True),
     pa.list_(pa.field("item", pa.int32(), False))),
    (pa.list_view(pa.utf8()), dt.List(dt.Utf8(True), True), pa.list_(pa.utf8())),
    (pa.list_(pa.int16(), 3), dt.FixedSizeList(dt.int16(True), 3, True), pa.list_(pa.int16(), 3)),
    (pa.struct([("a", pa.int64()), pa.field("b", pa.utf8(), False)]),
     dt.Struct(["a", "b"], [dt.int64(True), dt.Utf8()], True),
     pa.struct([("a", pa.int64()), pa.field("b", pa.utf8(), False)])),
    (pa.timestamp("us"), dt.timestamp("us", None, True), pa.timestamp("us")),
    (pa.timestamp("ns", "UTC"), dt.timestamp("ns", "UTC", True), pa.timestamp("ns", "UTC")),
    (pa.date32(), dt.date("D", True), pa.date32()),
    (pa.date64(), dt.date("ms", True), pa.date64()),
    (pa.time32("s"), dt.time("s", True), pa.time32("s")),
    (pa.time64("ns"), dt.time("ns", True), pa.time64("ns")),
    (pa.dictionary(pa.int8(), pa.utf8()), dt.Utf8(True), pa.utf8()),
]


@pytest.mark.parametrize("arrow_type, vortex_dtype, back", ARROW_MAPPING, ids=str)
def test_arrow_type_mapping(arrow_type, vortex_dtype, back):
    assert dt.from_arrow(arrow_type) == vortex_dtype
    assert dt.from_arrow(pa.field("f", arrow_type, nullable=True)) == vortex_dtype
    if not isinstance(vortex_dtype, dt.Null):
        assert dt.from_arrow(arrow_type, nullable=False) == vortex_dtype.with_nullable(False)
        assert dt.from_arrow(pa.field("f", arrow_type, False)) == vortex_dtype.with_nullable(False)
    assert vortex_dtype.to_arrow() == back


def test_arrow_schema_maps_to_a_non_nullable_struct():
    schema = pa.schema([("a", pa.int32()), pa.field("b", pa.utf8(), nullable=False)])
    assert dt.from_arrow(schema) == dt.Struct(["a", "b"], [dt.int32(True), dt.Utf8()])
    assert vio.StreamWriter(io.BytesIO(), schema).dtype == dt.from_arrow(schema)


@pytest.mark.parametrize("arrow_type", [
    pa.dense_union([pa.field("a", pa.int8())]), pa.sparse_union([pa.field("a", pa.utf8())]),
], ids=str)
def test_arrow_types_without_a_vortex_equivalent(arrow_type):
    with pytest.raises(vio.UnsupportedError, match="no Vortex equivalent"):
        dt.from_arrow(arrow_type)


@pytest.mark.parametrize(("arrow_type", "storage"), [
    (pa.duration("s"), dt.int64(True)),
    (pa.month_day_nano_interval(), dt.Struct(["months", "days", "nanoseconds"],
                                             [dt.int32(), dt.int32(), dt.int64()], True)),
    (pa.map_(pa.utf8(), pa.int32()),
     dt.List(dt.Struct(["key", "value"], [dt.Utf8(), dt.int32(True)]), True)),
    (pa.binary(16), dt.Binary(True)),
    (pa.uuid(), dt.Binary(True)),
    (pa.dictionary(pa.int8(), pa.large_string()), dt.Utf8(True)),
], ids=str)
def test_arrow_types_stored_as_their_values(arrow_type, storage):
    assert dt.from_arrow(arrow_type) == storage


@SETTINGS
@given(dtypes(custom=False))
def test_arrow_mapping_round_trip(d):
    # every dtype without a custom extension survives dtype -> Arrow -> dtype
    assert dt.from_arrow(d.to_arrow(), d.nullable) == d


def test_custom_extension_maps_to_its_storage():
    e = dt.Extension("acme.money", dt.Decimal(18, 2, True), b"EUR")
    assert e.to_arrow() == pa.decimal128(18, 2)
    assert e.nullable


# -- DType bytes written by vortex-data --------------------------------------------------

VX_COLUMNS = {
    "i8": pa.array([1], pa.int8()), "u64": pa.array([1], pa.uint64()),
    "f16": pa.array([1.0], pa.float16()), "f32": pa.array([1.0], pa.float32()),
    "b": pa.array([True]), "s": pa.array(["x"]), "ls": pa.array(["x"], pa.large_string()),
    "sv": pa.array(["x"], pa.string_view()), "bin": pa.array([b"x"]),
    "d128": pa.array([decimal.Decimal("1.5")], pa.decimal128(10, 2)),
    "d256": pa.array([decimal.Decimal("1.5")], pa.decimal256(50, 5)),
    "l": pa.array([[1]], pa.list_(pa.int32())), "lv": pa.array([[1]], pa.list_view(pa.int32())),
    "fsl": pa.array([[1, 2]], pa.list_(pa.int16(), 2)), "st": pa.array([{"a": 1, "b": "x"}]),
    "ts_s": pa.array([1], pa.timestamp("s")),
    "ts_ns": pa.array([1], pa.timestamp("ns", "America/New_York")),
    "d32": pa.array([1], pa.date32()), "d64": pa.array([86_400_000], pa.date64()),
    "t32": pa.array([1], pa.time32("ms")), "t64": pa.array([1], pa.time64("us")),
    "null": pa.array([None], pa.null()),
}


def test_decode_dtypes_written_by_vortex_data():
    t = pa.table(VX_COLUMNS)
    dtype_msg, _ = vx_messages(t)
    dec = MessageDecoder()
    dec.feed(dtype_msg)
    (m,) = list(dec)
    dec.end_of_input()
    assert m.dtype() == dt.from_arrow(t.schema)


def test_vortex_data_decodes_our_dtypes():
    t = pa.table(VX_COLUMNS)
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=False)
    (theirs,) = vx_decode_stream(buf.getvalue())
    assert theirs.dtype == vx.array(t).dtype
    assert theirs.to_arrow_table().to_pylist() == t.to_pylist()


# -- ScalarValue codec -------------------------------------------------------------------------


def _storage(d: dt.DType) -> dt.DType:
    while isinstance(d, dt.Extension):
        d = d.storage
    return d


def values_of(d: dt.DType) -> st.SearchStrategy:
    """Python values of dtype ``d`` as ``Scalar`` holds them (see vortex_io._scalar)."""
    s = _storage(d)
    if isinstance(s, dt.Null):
        base: st.SearchStrategy = st.none()
    elif isinstance(s, dt.Bool):
        base = st.booleans()
    elif isinstance(s, dt.Primitive):
        p = s.ptype
        if p.is_int:
            info = np.iinfo(p.np_dtype)
            base = st.integers(int(info.min), int(info.max))
        else:
            base = st.floats(width={dt.PType.F16: 16, dt.PType.F32: 32}.get(p, 64),
                             allow_nan=False)
    elif isinstance(s, dt.Decimal):
        base = st.integers(-(10**s.precision) + 1, 10**s.precision - 1)
    elif isinstance(s, dt.Utf8):
        base = st.text(max_size=10)
    elif isinstance(s, dt.Binary):
        base = st.binary(max_size=10)
    elif isinstance(s, dt.List):
        base = st.lists(values_of(s.element), max_size=3)
    elif isinstance(s, dt.FixedSizeList):
        base = st.lists(values_of(s.element), min_size=s.size, max_size=s.size)
    elif isinstance(s, dt.Struct):
        base = st.tuples(*[values_of(f) for f in s.dtypes])
    else:  # pragma: no cover
        raise AssertionError(d)
    return st.one_of(st.none(), base) if d.nullable and not isinstance(s, dt.Null) else base


typed_values = dtypes().flatmap(lambda d: st.tuples(st.just(d), values_of(d)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_values)
def test_scalar_value_round_trip(dv):
    d, v = dv
    raw = value_to_proto(d, v)
    assert raw  # never the empty message (that means "no value")
    assert value_from_proto(d, raw) == v
    s = Scalar(d, v)
    back = Scalar.from_proto(d, s.to_proto())
    assert back == s and back.value == v


@pytest.mark.parametrize("d", [dt.float16(), dt.float32(), dt.float64(True)], ids=repr)
@pytest.mark.parametrize("v", [math.nan, math.inf, -math.inf, -0.0])
def test_scalar_float_specials(d, v):
    got = Scalar.from_proto(d, Scalar(d, v).to_proto()).value
    if math.isnan(v):
        assert math.isnan(got)
    else:
        assert got == v and math.copysign(1, got) == math.copysign(1, v)


def test_scalar_known_bytes():
    # examples observed in vortex-data 0.93 output (shared reference notes)
    assert value_to_proto(dt.Decimal(10, 2), 1234) == bytes.fromhex("4208d204000000000000")
    assert Scalar.from_proto(dt.Decimal(10, 2), bytes.fromhex("4208d204000000000000")).as_py() \
        == decimal.Decimal("12.34")
    assert value_to_proto(dt.int64(True), None) == b"\x08\x00"
    assert value_to_proto(dt.int64(), -3) == b"\x18\x05"  # sint64: zigzag(-3) = 5
    assert value_to_proto(dt.uint8(), 5) == b"\x20\x05"
    assert value_to_proto(dt.float64(), 1.5) == b"\x31" + struct.pack("<d", 1.5)
    assert value_to_proto(dt.Utf8(), "ab") == b"\x3a\x02ab"
    # readers accept field 3 or 4 for any integer dtype
    assert value_from_proto(dt.uint64(), b"\x18\x0a") == 5
    assert value_from_proto(dt.int32(), b"\x20\x07") == 7
    # the empty message is "no value": a null of a nullable dtype
    assert Scalar.from_proto(dt.Utf8(True), b"").is_null
    with pytest.raises(vio.MalformedStreamError):
        Scalar.from_proto(dt.Utf8(), b"")


@pytest.mark.parametrize("d, raw", [
    (dt.int64(), b"\x08\x00"),               # null for a non-nullable dtype
    (dt.Bool(), b"\x18\x01"),                # no bool value
    (dt.float32(), b"\x18\x01"),             # no float value
    (dt.Utf8(), b"\x3a\x02\xff\xfe"),        # not UTF-8
    (dt.Decimal(10, 2), b"\x42\x03abc"),     # 3-byte decimal
    (dt.Struct(["a", "b"], [dt.int8(), dt.int8()]), b"\x4a\x02\x0a\x00"),  # 1 value, 2 fields
    (dt.FixedSizeList(dt.int8(), 2), b"\x4a\x00"),  # 0 values for size 2
    (dt.Utf8(), b"\x3a\x05ab"),              # length past the end
    (dt.int64(), b"\x18"),                   # truncated varint
    (dt.int64(), b"\x18" + b"\xff" * 11),    # overlong varint
])
def test_scalar_malformed_bytes(d, raw):
    with pytest.raises(vio.MalformedStreamError):
        value_from_proto(d, raw)


def test_scalar_null_needs_a_nullable_dtype():
    with pytest.raises(ValueError):
        Scalar(dt.int8(), None)
    assert Scalar(dt.int8(True), None).as_py() is None


# -- scalars written by vortex-data (constant arrays from its compressor) ----------------

VX_CONSTANTS = [
    pa.array([-5] * 64, pa.int8()),
    pa.array([2**64 - 1] * 64, pa.uint64()),
    pa.array([-(2**63)] * 64, pa.int64()),
    pa.array([1.5] * 64, pa.float16()),
    pa.array([0.1] * 64, pa.float32()),
    pa.array([-2.75] * 64),
    pa.array([True] * 64),
    pa.array([False] * 64),
    pa.array(["héllo"] * 64),
    pa.array([b"\x00\xff"] * 64),
    pa.array([decimal.Decimal("-123.45")] * 64, pa.decimal128(7, 2)),
    pa.array([decimal.Decimal("1" * 30)] * 64, pa.decimal128(38, 0)),
    pa.array([decimal.Decimal("-" + "9" * 70)] * 64, pa.decimal256(76, 0)),
    pa.array([datetime.datetime(2020, 1, 2, 3, 4, 5)] * 64, pa.timestamp("us", "UTC")),
    pa.array([datetime.date(2021, 5, 6)] * 64, pa.date32()),
    pa.array([None] * 64, pa.int32()),
    pa.array([None] * 64, pa.string()),
]


@pytest.mark.parametrize("arr", VX_CONSTANTS, ids=lambda a: f"{a.type}:{a[0]}")
def test_decode_scalars_written_by_vortex_data(arr):
    data = vx_stream(arr, compress=True)
    a = vio.read_ipc(data)
    assert a.encoding == "vortex.constant"
    (raw,) = a.buffers
    raw = raw.tobytes()
    value = value_from_proto(a.dtype, raw)
    # our encoder writes exactly the bytes vortex-data wrote
    assert value_to_proto(a.dtype, value) == raw
    # and the value is the one that went in
    assert a.to_arrow().to_pylist() == arr.to_pylist()
    if value is not None and isinstance(a.dtype, dt.Decimal):
        assert Scalar(a.dtype, value).as_py() == arr[0].as_py()
