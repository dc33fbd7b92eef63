"""The native core against the numpy reference: every native encoding, decoded both ways
from streams (strict: nothing handed back to Python), plus whole-table differential tests
on generated data and the threads/pool machinery."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vortex_io as vio
from tests.native_util import NATIVE, assert_same, identical, outcome, stream_of, table_stream
from tests.strategies import tables
from vortex_io import _native_glue as ng
from vortex_io import dtype as dt
from vortex_io.encodings._bitpacked import bitpack
from vortex_io.encodings._bool import bool_array
from vortex_io.encodings._constant import constant_array
from vortex_io.encodings._dict import dict_encode
from vortex_io.encodings._for import for_encode
from vortex_io.encodings._primitive import primitive_array

pytestmark = pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")

INTS = ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8"]


def _ints(rng, np_type, n, bits):
    info = np.iinfo(np_type)
    hi = min(int(info.max), (1 << bits) - 1) if bits < 64 else int(info.max)
    return rng.integers(0, hi, size=n, endpoint=True, dtype=np.uint64).astype(np_type)


def _mask(rng, n, p=0.2):
    return rng.random(n) > p


# -- canonical ----------------------------------------------------------------------------------

@pytest.mark.parametrize("t", [*INTS, "f2", "f4", "f8"])
@pytest.mark.parametrize("nulls", [False, True])
def test_primitive(t, nulls):
    rng = np.random.default_rng(1)
    v = (rng.standard_normal(3000) * 100).astype(t)
    validity = bool_array(_mask(rng, 3000)) if nulls else None
    a = primitive_array(v, validity, nullable=nulls)
    assert_same(stream_of(a, a.slice(7, 2000), a.slice(0, 0)))


def test_bool_offsets_and_validity():
    rng = np.random.default_rng(2)
    vals = rng.random(1000) > 0.5
    a = bool_array(vals, bool_array(_mask(rng, 1000)), nullable=True)
    parts = [a, a.slice(3, 900), a.slice(5, 6), a.slice(0, 0)]
    assert_same(stream_of(*parts))


@pytest.mark.parametrize("typ", [pa.decimal128(5, 2), pa.decimal128(18, 3), pa.decimal128(38, 0),
                                 pa.decimal256(50, 10)])
def test_decimal(typ):
    import decimal

    vals = [decimal.Decimal(x).scaleb(-typ.scale) for x in (1, -5, 12345, 0, -99)] * 40 + [None]
    t = pa.table({"d": pa.array(vals, type=typ)})
    assert_same(table_stream(t, compress=False))


def test_strings_and_binary_canonical():
    t = pa.table({
        "s": pa.array(["", "a", "short", "a string longer than twelve bytes", None] * 300),
        "b": pa.array([b"\x00", b"", None, b"x" * 40, b"yz"] * 300),
        "v": pa.array(["view", None, "x" * 30, ""] * 375, type=pa.string_view()),
        "bv": pa.array([b"q" * 13, b"", None, b"ab"] * 375, type=pa.binary_view()),
        "ls": pa.array(["large", None, "z" * 20] * 500, type=pa.large_string()),
    })
    assert_same(table_stream(t, compress=False, chunk_rows=700))


def test_struct_nullable_and_nested():
    inner = pa.StructArray.from_arrays(
        [pa.array([1, 2, None, 4]), pa.array(["a", None, "c", "d"])], names=["x", "y"],
        mask=pa.array([False, True, False, False]))
    t = pa.table({"s": inner, "k": pa.array([1.5, None, 3.0, 4.0])})
    assert_same(table_stream(t, compress=False))
    assert_same(table_stream(pa.chunked_array([inner]), compress=False))


@pytest.mark.parametrize("typ", [pa.timestamp("ns"), pa.timestamp("us", "UTC"), pa.date32(),
                                 pa.date64(), pa.time32("s"), pa.time64("us")])
def test_temporal(typ):
    base = pa.array([*range(0, 3000, 3), None], type=pa.int64())
    if typ in (pa.date32(), pa.time32("s")):
        base = base.cast(pa.int32())
    t = pa.table({"t": base.view(typ) if base.type.bit_width == typ.bit_width else base.cast(typ)})
    assert_same(table_stream(t, compress=False))
    assert_same(table_stream(t, compress=True), strict=False)


@pytest.mark.parametrize("value,d", [
    (7, dt.int64()), (None, dt.int32(True)), (-3, dt.int8()), (2.5, dt.float64()),
    (1.25, dt.float32()), (0.5, dt.float16()), (True, dt.Bool()), (None, dt.Bool(True)),
    ("hello", dt.Utf8()), ("a longer string than twelve", dt.Utf8(True)), (None, dt.Utf8(True)),
    (b"\x01\x02", dt.Binary()), (1234, dt.Decimal(10, 2)), (-5, dt.Decimal(50, 3)),
    (None, dt.Null()), ((1, "x"), dt.Struct(["a", "b"], [dt.int32(), dt.Utf8()])),
])
def test_constant(value, d):
    a = constant_array(value, 1000, d)
    assert_same(stream_of(a, constant_array(value, 0, d), constant_array(value, 1, d)))


# -- fastlanes.bitpacked ---------------------------------------------------------------------

@pytest.mark.parametrize("t", INTS)
def test_bitpacked_every_width(t):
    rng = np.random.default_rng(3)
    w = np.dtype(t).itemsize * 8
    arrays = []
    for b in range(0, w + 1):
        v = _ints(rng, np.dtype(t), 2048 + 77, b)
        arrays.append(bitpack(primitive_array(v), b, patches=False))
    for a in arrays:
        assert_same(stream_of(a, a.slice(1, 2000), a.slice(1030, 2100), a.slice(5, 6)))


@pytest.mark.parametrize("t", INTS)
def test_bitpacked_patches_and_validity(t):
    rng = np.random.default_rng(4)
    v = _ints(rng, np.dtype(t), 5000, 5)
    v[::97] = np.iinfo(np.dtype(t)).max  # exceptions
    valid = _mask(rng, 5000)
    a = bitpack(primitive_array(v, bool_array(valid), nullable=True), 5)
    assert a.meta.patches is not None and a.meta.patches.len
    assert_same(stream_of(a, a.slice(100, 4000), a.slice(4096, 5000)))


def test_for_over_bitpacked_and_primitive():
    rng = np.random.default_rng(5)
    for t in ("i8", "i4", "u2", "i1"):
        v = _ints(rng, np.dtype(t), 4000, 6) + np.dtype(t).type(3)
        a = for_encode(primitive_array(v))
        assert a.encoding == "fastlanes.for"
        assert_same(stream_of(a, a.slice(10, 3000)))
    # a negative reference, wrapping
    v = np.arange(-2000, 2000, dtype=np.int64)
    a = for_encode(primitive_array(v))
    assert_same(stream_of(a))


def test_dict_strings_numbers_and_nulls():
    rng = np.random.default_rng(6)
    words = np.array(["AAPL", "MSFT", "a much longer symbol name", "", "Z"], dtype=object)
    s = pa.array(words[rng.integers(0, 5, 5000)].tolist())
    s = pa.array([None if i % 11 == 0 else x for i, x in enumerate(s.to_pylist())])
    nums = pa.array((rng.integers(0, 40, 5000) * 1000).tolist(),
                    mask=rng.random(5000) < 0.1)
    for arr in (s, nums, pa.array(rng.integers(0, 3, 5000).astype(np.float64))):
        d = dict_encode(arr)
        assert d.encoding == "vortex.dict"
        assert_same(stream_of(d, d.slice(3, 4000)))


# -- whole tables ------------------------------------------------------------------------------

@given(tables(max_batches=3, max_size=40))
def test_tables_canonical(t):
    assert_same(table_stream(t, compress=False, chunk_rows=17), strict=False)


@given(tables(max_batches=3, max_size=60))
def test_tables_compressed(t):
    assert_same(table_stream(t, compress=True, chunk_rows=50), strict=False)


def test_trades_all_threads_and_string_modes():
    from vortex_io.datasets import trades

    data = table_stream(trades(70_000), chunk_rows=8192)
    for threads in (1, 2, 3):
        assert_same(data, threads=threads, strict=False)
    one = outcome(data, native=True, threads=1, strict=False)[1]
    many = outcome(data, native=True, threads=4, strict=False)[1]
    assert identical(one, many)


# -- the memory pool -------------------------------------------------------------------------------

@pytest.mark.skipif(NATIVE and getattr(ng.native(), "exact_alloc", False),
                    reason="a sanitizer build (make test-asan) allocates every block exactly, unpooled")
def test_pool_reuses_freed_blocks():
    n = ng.native()
    from vortex_io.datasets import trades

    data = table_stream(trades(200_000).select(["size", "symbol"]))
    with vio.StreamReader(data) as r:
        r.read_arrow()
    before = n.pool_stats()
    for _ in range(3):
        with vio.StreamReader(data) as r:
            t = r.read_arrow()
        del t
    after = n.pool_stats()
    assert after[3] > before[3]  # reuses
    assert after[0] <= before[0] + (1 << 20)  # nothing left allocated


def test_errors_are_located():
    d = table_stream(pa.table({"x": list(range(5000))}), chunk_rows=1000)
    bad = bytearray(d)
    bad[-20] ^= 0xFF
    ref = outcome(bytes(bad), native=False)
    nat = outcome(bytes(bad), native=True, strict=False)
    assert ref[0] == nat[0]
    if nat[0] == "err":
        with pytest.raises(vio.VortexIPCError) as e:
            with vio.StreamReader(bytes(bad)) as r:
                r.read_arrow()
        assert e.value.message_index is not None and e.value.offset is not None


@given(st.binary(min_size=0, max_size=64), st.integers(0, 10_000))
def test_mutated_bytes_same_outcome(junk, at):
    base = table_stream(pa.table({"x": list(range(3000)), "s": ["ab", "cde"] * 1500}),
                        chunk_rows=1024)
    at = at % len(base)
    data = base[:at] + junk + base[at + len(junk):]
    assert_same(io.BytesIO(data).getvalue(), strict=False)
