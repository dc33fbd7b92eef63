"""The native core's integer-layout encodings against the numpy reference: ``vortex.zigzag``,
``vortex.sequence``, ``vortex.runend``, ``vortex.sparse``, ``fastlanes.rle`` and
``fastlanes.delta``, decoded both ways from streams (``tests.native_util.assert_same``,
strict: nothing handed back to Python): every ptype, nulls, slices (metadata offsets),
empty and single-row nodes, nested uses, and corrupted metadata / children raising the same
error class both ways. With ``VORTEX_IO_NATIVE=0`` the same cases run through the reference
alone (each case's expected outcome is checked there too)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vortex_io as vio
from tests.native_util import NATIVE, assert_same, stream_of, table_stream
from vortex_io import _native_glue as ng
from vortex_io import dtype as dt
from vortex_io._array import Array
from vortex_io._errors import LimitExceededError, MalformedStreamError
from vortex_io._limits import ReaderLimits
from vortex_io._proto import ProtoWriter
from vortex_io.encodings._bitpacked import bitpack
from vortex_io.encodings._bool import bool_array
from vortex_io.encodings._constant import constant_array
from vortex_io.encodings._delta import DeltaMeta, delta_array, delta_encode
from vortex_io.encodings._dict import dict_encode
from vortex_io.encodings._for import for_encode
from vortex_io.encodings._primitive import primitive_array, primitive_values
from vortex_io.encodings._rle import RLEMeta, rle_encode
from vortex_io.encodings._runend import RunEndMeta, runend_array, runend_encode
from vortex_io.encodings._sequence import sequence_array, sequence_encode
from vortex_io.encodings._sparse import sparse_array, sparse_encode
from vortex_io.encodings._zigzag import zigzag_array, zigzag_encode

INTS = ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8"]
SIGNED = ["i1", "i2", "i4", "i8"]
PRIMS = [*INTS, "f2", "f4", "f8"]


def _same_ok(*arrays: Array, dtype: dt.DType | None = None, **kw) -> None:
    """The arrays (one message each) read the same both ways, without error."""
    ref = assert_same(stream_of(*arrays, dtype=dtype), **kw)
    assert ref[0] == "ok", ref


def _same_err(a: Array, cls: type = MalformedStreamError, **kw) -> None:
    """A stream of ``a`` fails with ``cls`` both ways."""
    ref = assert_same(stream_of(a), **kw)
    assert ref == ("err", cls), ref


def _rewrap(a: Array, *, metadata: bytes | None = None, children=None, buffers=None,
            dtype: dt.DType | None = None, length: int | None = None) -> Array:
    """``a`` with some of its wire parts replaced (no checks: for corrupted nodes)."""
    return Array(a.vtable, dtype if dtype is not None else a.dtype,
                 len(a) if length is None else length,
                 metadata=a.metadata if metadata is None else metadata,
                 buffers=a.buffers if buffers is None else buffers,
                 children=a.children if children is None else children)


def _vals(rng: np.random.Generator, t: str, n: int, *, span: int | None = None) -> np.ndarray:
    """n random values of type t (over the whole type, or [0, span) for ints)."""
    d = np.dtype(t)
    if d.kind == "f":
        return (rng.standard_normal(n) * 1000).astype(d)
    info = np.iinfo(d)
    if span is not None:
        return rng.integers(0, span, n).astype(d)
    return rng.integers(int(info.min), int(info.max), n, endpoint=True, dtype=np.int64 if d.kind == "i" or
                        d.itemsize < 8 else np.uint64).astype(d)


def _valid(rng: np.random.Generator, n: int, p: float = 0.2) -> np.ndarray:
    return rng.random(n) > p


def _slices(a: Array) -> list[Array]:
    """``a`` with slices that move its metadata offsets (mid-chunk starts, chunk ends)."""
    n = len(a)
    out = [a]
    for start, stop in ((1, n), (3, max(3, n - 5)), (1023, n), (1025, min(n, 2100)), (n // 2, n // 2 + 1)):
        if 0 <= start < stop <= n:
            out.append(a.slice(start, stop))
    return out


# -- vortex.zigzag ---------------------------------------------------------------------------

@pytest.mark.parametrize("t", SIGNED)
@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_zigzag(t, nulls, packed):
    rng = np.random.default_rng(10)
    n = 3000
    v = _vals(rng, t, n)
    v[:50] = np.iinfo(np.dtype(t)).min
    v[50:100] = np.iinfo(np.dtype(t)).max
    a = primitive_array(v, bool_array(_valid(rng, n)) if nulls else None, nullable=nulls)
    z = zigzag_encode(a, bitpack=packed)
    assert z.encoding == "vortex.zigzag"
    _same_ok(*_slices(z))
    small = zigzag_encode(primitive_array(_vals(rng, t, n, span=50) - np.dtype(t).type(25)), bitpack=True)
    _same_ok(small, small.slice(7, 2500))


@pytest.mark.parametrize("t", SIGNED)
def test_zigzag_over_patched_bitpacking(t):
    """Bit-packed codes with patches (the child decodes them) and at offsets, with nulls."""
    rng = np.random.default_rng(9)
    n = 5000
    v = _vals(rng, t, n, span=8) - np.dtype(t).type(4)
    v[::301] = np.iinfo(np.dtype(t)).min
    valid = _valid(rng, n)
    codes = zigzag_encode(primitive_array(v, bool_array(valid), nullable=True)).children[0]
    packed = bitpack(codes, 3)
    assert packed.meta.patches is not None and packed.meta.patches.len
    z = zigzag_array(packed, dt.Primitive(dt.PType.from_numpy(np.dtype(t)), True))
    _same_ok(*_slices(z))


def test_zigzag_tiny():
    for n in (0, 1, 2):
        for nullable in (False, True):
            v = np.arange(n, dtype=np.int32) - 1
            a = primitive_array(v, bool_array(np.ones(n, bool)) if nullable else None, nullable=nullable)
            _same_ok(zigzag_encode(a))
            _same_ok(zigzag_encode(a, bitpack=True) if n else zigzag_encode(a))


def test_zigzag_malformed():
    z = zigzag_encode(primitive_array(np.array([1, -1, 5], dtype=np.int64)))
    _same_err(_rewrap(z, metadata=b"\x08\x01"))
    _same_err(zigzag_array(primitive_array(np.zeros(3, np.uint32)), dt.Primitive(dt.PType.U32)))
    _same_err(_rewrap(z, children=[z.children[0], z.children[0]]))
    _same_err(_rewrap(z, children=[]))
    _same_err(_rewrap(z, dtype=dt.Primitive(dt.PType.F64)))


# -- vortex.sequence --------------------------------------------------------------------------

@pytest.mark.parametrize("t", INTS)
def test_sequence(t):
    d = dt.Primitive(dt.PType.from_numpy(np.dtype(t)))
    info = np.iinfo(np.dtype(t))
    lo, hi = int(info.min), int(info.max)
    n = min(200, hi)
    cases = [sequence_array(lo, 1, n, d), sequence_array(hi, -1 if lo < 0 else 0, n if lo < 0 else 1, d),
             sequence_array(hi - (n - 1) * 1, 1, n, d), sequence_array(0, 0, n, d),
             sequence_array(lo, (hi - lo) // (n - 1), n, d), sequence_array(7, 0, 1, d),
             sequence_array(3, 2, 0, d)]
    if lo < 0:
        cases.append(sequence_array(hi, -((hi - lo) // (n - 1)), n, d))
        cases.append(sequence_array(-1, -1, 100, d))
    for a in cases:
        _same_ok(a)
    _same_ok(*_slices(cases[0]), dtype=d)


def test_sequence_nullable_and_encoder():
    d = dt.Primitive(dt.PType.I64, True)
    _same_ok(sequence_array(10**12, -3, 5000, d), sequence_array(5, 0, 1, d))
    a = sequence_encode(primitive_array(np.arange(5000, dtype=np.uint32) * 7 + 3))
    assert a is not None and a.encoding == "vortex.sequence"
    _same_ok(*_slices(a))


def _seq_meta(base: bytes | None, mult: bytes | None) -> bytes:
    w = ProtoWriter()
    if base is not None:
        w.message(1, base)
    if mult is not None:
        w.message(2, mult)
    return w.finish()


def _sint(v: int) -> bytes:
    return ProtoWriter().sint(3, v, always=True).finish()


def _uint(v: int) -> bytes:
    return ProtoWriter().varint(4, v, always=True).finish()


def test_sequence_scalar_forms():
    """Base and multiplier as sint64 (field 3) or uint64 (field 4), for any integer type."""
    d8 = dt.Primitive(dt.PType.U8)
    a = sequence_array(0, 1, 10, d8)
    _same_ok(_rewrap(a, metadata=_seq_meta(_sint(5), _uint(2))))
    _same_ok(_rewrap(a, metadata=_seq_meta(_uint(250), _uint(0)), length=12))
    i8 = sequence_array(0, 1, 10, dt.Primitive(dt.PType.I8))
    _same_ok(_rewrap(i8, metadata=_seq_meta(_uint(100), _sint(-20))))
    du = dt.Primitive(dt.PType.U64)
    b = sequence_array(0, 1, 10, du)
    _same_ok(_rewrap(b, metadata=_seq_meta(_uint(2**64 - 10), _uint(1))))


def test_sequence_malformed():
    d8 = dt.Primitive(dt.PType.U8)
    a = sequence_array(0, 1, 10, d8)
    f64 = ProtoWriter().fixed64(6, b"\0" * 8).finish()
    cases = [
        _rewrap(a, metadata=_seq_meta(None, _uint(1))),            # base missing
        _rewrap(a, metadata=_seq_meta(_uint(1), None)),            # multiplier missing
        _rewrap(a, metadata=_seq_meta(f64, _uint(1))),             # not an integer scalar
        _rewrap(a, metadata=_seq_meta(_uint(256), _uint(1))),      # base out of range
        _rewrap(a, metadata=_seq_meta(_uint(0), _sint(-1))),       # multiplier out of range (u8)
        _rewrap(a, metadata=_seq_meta(_uint(250), _uint(1))),      # last row overflows
        _rewrap(a, metadata=_seq_meta(_uint(0), _uint(0)), length=300),  # n - 1 > 255
        _rewrap(a, metadata=b"\x0a\x05\xff"),                      # garbage
        _rewrap(a, dtype=dt.Primitive(dt.PType.F32)),
        _rewrap(a, children=[primitive_array(np.zeros(10, np.uint8))]),
    ]
    big = sequence_array(0, 1, 10, dt.Primitive(dt.PType.I64))
    cases.append(_rewrap(big, metadata=_seq_meta(_sint(2**62), _sint(2**62)), length=3))
    cases.append(_rewrap(big, metadata=_seq_meta(_sint(-(2**63)), _sint(-(2**63))), length=2**20))
    for c in cases:
        _same_err(c)
    huge = _rewrap(sequence_array(0, 1, 10, dt.Primitive(dt.PType.U32)), length=3_000_000)
    _same_err(huge, LimitExceededError, limits=ReaderLimits(max_decoded_bytes=1 << 20))


# -- vortex.runend ------------------------------------------------------------------------------

def _runs(rng: np.random.Generator, values: np.ndarray, n: int, avg: int) -> np.ndarray:
    """n rows of runs of the values (random lengths around avg)."""
    lens = rng.integers(1, 2 * avg, len(values))
    return np.resize(np.repeat(values, lens), n)


@pytest.mark.parametrize("t", PRIMS)
@pytest.mark.parametrize("nulls", [False, True])
def test_runend(t, nulls):
    rng = np.random.default_rng(11)
    v = _runs(rng, _vals(rng, t, 400), 5000, 20)
    n = len(v)
    valid = _runs(rng, rng.random(400) > 0.3, n, 20) if nulls else None
    a = primitive_array(v, bool_array(valid) if nulls else None, nullable=nulls)
    r = runend_encode(a)
    assert r.encoding == "vortex.runend"
    _same_ok(*_slices(r))


def test_runend_values_of_other_dtypes():
    rng = np.random.default_rng(12)
    b = runend_encode(bool_array(_runs(rng, rng.random(300) > 0.5, 3000, 10)))
    _same_ok(*_slices(b))
    bn = runend_encode(bool_array(_runs(rng, rng.random(300) > 0.5, 3000, 10),
                                  bool_array(_runs(rng, rng.random(300) > 0.2, 3000, 10)), nullable=True))
    _same_ok(*_slices(bn))
    words = pa.array(["", "a", "a string longer than twelve bytes", None, "zz"] * 60)
    ends = primitive_array(np.cumsum(rng.integers(1, 30, len(words))).astype(np.uint32))
    s = runend_array(ends, vio.array(words))
    _same_ok(s, s.slice(5, 700), s.slice(40, 41))
    dec = pa.array([1, None, -3] * 20, pa.decimal128(12, 2))
    ends = primitive_array(np.cumsum(rng.integers(1, 30, len(dec))).astype(np.uint16))
    _same_ok(runend_array(ends, vio.array(dec)))


def test_runend_tiny_and_offsets():
    ends = primitive_array(np.array([3, 5, 9], np.uint8))
    vals = primitive_array(np.array([7, -2, 4], np.int16))
    r = runend_array(ends, vals)
    for start in range(0, 9):
        for stop in range(start, 10):
            if stop <= 9:
                _same_ok(runend_array(ends, vals, stop - start, start), dtype=r.dtype)
    _same_ok(runend_array(primitive_array(np.zeros(0, np.uint8)), primitive_array(np.zeros(0, np.int16)), 0))
    # runs past the node's end and before its start
    _same_ok(runend_array(primitive_array(np.array([2, 4, 100, 200], np.uint64)),
                          primitive_array(np.array([1, 2, 3, 4], np.int64)), 50, 3))


def _re_meta(p: dt.PType, runs: int, offset: int = 0) -> bytes:
    return RunEndMeta(p, runs, offset).encode()


def test_runend_malformed():
    ends = primitive_array(np.array([3, 5, 9], np.uint8))
    vals = primitive_array(np.array([7, -2, 4], np.int16))
    r = runend_array(ends, vals)
    u8 = dt.PType.U8
    cases = [
        _rewrap(r, children=[primitive_array(np.array([3, 3, 9], np.uint8)), vals]),   # not increasing
        _rewrap(r, children=[primitive_array(np.array([5, 3, 9], np.uint8)), vals]),
        _rewrap(r, length=10),                                                          # runs end early
        _rewrap(r, metadata=_re_meta(u8, 3, 1)),                                        # offset + n past the runs
        _rewrap(r, metadata=_re_meta(dt.PType.I8, 3)),                                  # signed ends
        _rewrap(r, metadata=_re_meta(dt.PType.F32, 3)),
        _rewrap(r, metadata=_re_meta(u8, 0), children=[primitive_array(np.zeros(0, np.uint8)),
                                                        primitive_array(np.zeros(0, np.int16))]),
        _rewrap(r, metadata=_re_meta(u8, 2**32 + 1)),
        _rewrap(r, children=[ends]),
        _rewrap(r, children=[ends, vals, vals]),
        _rewrap(r, metadata=b"\x08\x00\x10\x03\x18" + b"\xff" * 10 + b"\x01"),           # offset varint too long
        _rewrap(r, metadata=ProtoWriter().varint(1, 0).varint(2, 3).varint(3, 2**64 - 2).finish()),
        _rewrap(r, children=[primitive_array(np.array([3, 5, 2**63 + 9], np.uint64)), vals],
                metadata=_re_meta(dt.PType.U64, 3)),
        _rewrap(r, children=[primitive_array(np.array([3, 5, 9], np.uint8), bool_array(np.array([1, 0, 1], bool)),
                                             nullable=True), vals]),
    ]
    for c in cases:
        _same_err(c)
    # a few long strings repeated by long runs: the gather is bounded by the limits
    s = runend_array(primitive_array(np.array([40_000], np.uint32)), vio.array(pa.array(["x" * 100])))
    _same_err(s, LimitExceededError, limits=ReaderLimits(max_decoded_bytes=1 << 20))


# -- vortex.sparse -----------------------------------------------------------------------------

@pytest.mark.parametrize("t", PRIMS)
@pytest.mark.parametrize("nulls", [False, True])
def test_sparse(t, nulls):
    rng = np.random.default_rng(13)
    n = 5000
    v = np.zeros(n, dtype=t)
    hit = rng.random(n) < 0.05
    v[hit] = _vals(rng, t, int(hit.sum()))
    valid = _valid(rng, n, 0.02) if nulls else None
    a = primitive_array(v, bool_array(valid) if nulls else None, nullable=nulls)
    s = sparse_encode(a)
    assert s.encoding == "vortex.sparse"
    _same_ok(*_slices(s))
    if nulls:  # a null fill (most rows null)
        m = rng.random(n) < 0.1
        s2 = sparse_encode(primitive_array(v, bool_array(m), nullable=True))
        assert s2.encoding == "vortex.sparse" and s2.buffers[0].tobytes() in (b"", b"\x08\x00")
        _same_ok(*_slices(s2))


def test_sparse_bool_strings_and_fills():
    rng = np.random.default_rng(14)
    b = sparse_encode(bool_array(rng.random(4000) < 0.03))
    _same_ok(*_slices(b))
    bn = sparse_encode(bool_array(rng.random(4000) < 0.03, bool_array(rng.random(4000) > 0.02), nullable=True))
    _same_ok(*_slices(bn))
    words = ["", "fill", "a string longer than twelve bytes"]
    s = pa.array([words[i] if rng.random() < 0.05 else "fill" for i in rng.integers(0, 3, 3000)]
                 + [None] * 10)
    sp = sparse_encode(vio.array(s))
    assert sp.encoding == "vortex.sparse"
    _same_ok(*_slices(sp))
    lf = sparse_encode(vio.array(pa.array(["x" * 40] * 2000 + ["y"] * 5)))
    _same_ok(*_slices(lf))
    sb = sparse_encode(vio.array(pa.array([b"\x00\x01"] * 100 + [b"zz", None, b""])))
    _same_ok(sb)
    # explicit fills: a non-null fill for nullable patches, and patches equal to the fill
    pv = primitive_array(np.array([1, 2, 3], np.int32), bool_array(np.array([True, False, True])), nullable=True)
    sa = sparse_array(primitive_array(np.array([0, 5, 9], np.uint8)), pv, 10, 7, dt.Primitive(dt.PType.I32, True))
    _same_ok(sa, sa.slice(1, 10), sa.slice(5, 6), sa.slice(6, 9))
    null_fill = sparse_array(primitive_array(np.array([2], np.uint64)), pv.slice(0, 1), 4, None,
                             dt.Primitive(dt.PType.I32, True))
    _same_ok(null_fill)


def test_sparse_tiny_and_offsets():
    d = dt.Primitive(dt.PType.I64)
    one = sparse_array(primitive_array(np.array([0], np.uint8)), primitive_array(np.array([5])), 1, 0, d)
    _same_ok(one)
    empty = sparse_array(primitive_array(np.zeros(0, np.uint8)), primitive_array(np.zeros(0, np.int64)), 0, 3, d)
    _same_ok(empty)
    none = sparse_array(primitive_array(np.zeros(0, np.uint8)), primitive_array(np.zeros(0, np.int64)), 6, 3, d)
    _same_ok(none)
    # patch indices with an offset (as a slice writes them)
    shifted = sparse_array(primitive_array(np.array([100, 103], np.uint16)), primitive_array(np.array([1, 2])),
                           5, -1, d, offset=99)
    _same_ok(shifted)


def _sparse_meta(n: int, offset: int = 0, p: dt.PType = dt.PType.U8) -> bytes:
    from vortex_io.encodings._patches import PatchesMeta

    return ProtoWriter().message(1, PatchesMeta(n, offset, p).encode()).finish()


def test_sparse_malformed():
    d = dt.Primitive(dt.PType.I64)
    idx = primitive_array(np.array([1, 4], np.uint8))
    vals = primitive_array(np.array([5, 6]))
    s = sparse_array(idx, vals, 6, 0, d)
    cases = [
        _rewrap(s, metadata=b""),                                            # no patches
        _rewrap(s, metadata=_sparse_meta(2, 0, dt.PType.I8)),                # signed indices
        _rewrap(s, metadata=_sparse_meta(2, 0, dt.PType.F64)),
        _rewrap(s, length=1, metadata=_sparse_meta(2)),                      # more patches than rows
        _rewrap(s, children=[idx]),
        _rewrap(s, buffers=[]),
        _rewrap(s, buffers=[np.zeros(0, np.uint8)]),                         # empty fill, non-nullable
        _rewrap(s, buffers=[np.frombuffer(b"\x30", np.uint8)]),              # truncated fill
        _rewrap(s, children=[primitive_array(np.array([4, 1], np.uint8)), vals]),   # unsorted
        _rewrap(s, children=[primitive_array(np.array([1, 6], np.uint8)), vals]),   # past the rows
        _rewrap(s, metadata=_sparse_meta(2, 2)),                              # before the rows
        _rewrap(s, metadata=_sparse_meta(2, 2**63 + 1)),
        _rewrap(s, children=[primitive_array(np.array([1, 2**63], np.uint64)), vals],
                metadata=_sparse_meta(2, 0, dt.PType.U64)),
        _rewrap(s, children=[primitive_array(np.array([1, 4], np.uint8), bool_array(np.array([1, 0], bool)),
                                             nullable=True), vals]),
    ]
    for c in cases:
        _same_err(c)
    big = sparse_array(idx, vio.array(pa.array(["a", "b"])), 6, "x" * 1000, dt.Utf8(True))
    _same_err(_rewrap(big, length=5000), LimitExceededError, limits=ReaderLimits(max_decoded_bytes=1 << 20))


# -- fastlanes.rle -------------------------------------------------------------------------------

@pytest.mark.parametrize("t", PRIMS)
@pytest.mark.parametrize("nulls", [False, True])
def test_rle(t, nulls):
    rng = np.random.default_rng(15)
    v = _runs(rng, _vals(rng, t, 300), 5000, 30)
    n = len(v)
    v[2048:3072] = v[2048]  # a chunk of one run
    a = primitive_array(v, bool_array(_valid(rng, n)) if nulls else None, nullable=nulls)
    r = rle_encode(a)
    assert r.encoding == "fastlanes.rle"
    _same_ok(*_slices(r))


def test_rle_tiny():
    for n in (1, 2, 1024, 1025):
        for nullable in (False, True):
            v = np.arange(n, dtype=np.int32) % 3
            a = primitive_array(v, bool_array(np.arange(n) % 5 > 0) if nullable else None, nullable=nullable)
            r = rle_encode(a)
            _same_ok(*_slices(r))
    r = rle_encode(primitive_array(np.zeros(0, np.uint16)))
    _same_ok(r)


def _rle_with_indices(r: Array, idx: Array, **meta) -> Array:
    m = r.meta
    kw = dict(values_len=m.values_len, indices_len=len(idx), indices_ptype=idx.dtype.ptype,
              offsets_len=m.offsets_len, offsets_ptype=m.offsets_ptype, offset=m.offset)
    kw.update(meta)
    return Array(r.vtable, r.dtype, len(r), metadata=RLEMeta(**kw).encode(),
                 children=[r.children[0], idx, r.children[2]])


def test_rle_nulls_hold_anything():
    """Indices under nulls may hold anything (clamped, as the reference does), including
    u64 indices that read negative as int64."""
    r = rle_encode(primitive_array(np.repeat(np.array([1, 2, 3], np.int64), 500), bool_array(np.ones(1500, bool)),
                                   nullable=True))
    valid = np.ones(2048, bool)
    valid[[3, 700, 1030]] = False
    raw = primitive_values(r.children[1])[0].astype(np.uint64)
    raw[[3, 700, 1030]] = [2**64 - 1, 2**63, 999]
    idx = primitive_array(raw, bool_array(valid), nullable=True)
    _same_ok(_rle_with_indices(r, idx))


def test_rle_malformed():
    r = rle_encode(primitive_array(np.repeat(np.array([1, 2, 3], np.int64), 500)))
    u8, u64 = dt.PType.U8, dt.PType.U64
    m = r.meta
    cases = [
        _rle_with_indices(r, primitive_array(np.full(2048, 7, np.uint8))),                # past the runs
        _rle_with_indices(r, primitive_array(np.full(2048, 2**63 + 1, np.uint64))),       # negative as int64
        _rewrap(r, metadata=RLEMeta(m.values_len, 2048, u8, 2, u64, 1024).encode()),      # offset 1024
        _rewrap(r, metadata=RLEMeta(m.values_len, 2048, dt.PType.I16, 2, u64).encode()),  # signed indices
        _rewrap(r, metadata=RLEMeta(m.values_len, 2048, u8, 2, dt.PType.I64).encode()),
        _rewrap(r, metadata=RLEMeta(m.values_len, 2000, u8, 2, u64).encode()),            # not whole chunks
        _rewrap(r, metadata=RLEMeta(m.values_len, 1024, u8, 2, u64).encode()),            # rows past indices
        _rewrap(r, metadata=RLEMeta(m.values_len, 2048, u8, 1, u64).encode()),            # too few offsets
        _rewrap(r, children=[r.children[0], r.children[1]]),
        _rewrap(r, dtype=dt.Utf8()),
        Array(r.vtable, r.dtype, len(r), metadata=r.metadata,
              children=[r.children[0], r.children[1], primitive_array(np.array([0, 9], np.uint64))]),
        Array(r.vtable, r.dtype, len(r), metadata=r.metadata,
              children=[r.children[0], r.children[1], primitive_array(np.array([2, 1], np.uint64))]),
        Array(r.vtable, r.dtype, len(r), metadata=r.metadata,
              children=[r.children[0], r.children[1], primitive_array(np.array([5, 1], np.uint64))]),
    ]
    for c in cases:
        _same_err(c)


# -- fastlanes.delta ------------------------------------------------------------------------------

@pytest.mark.parametrize("t", INTS)
@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_delta(t, nulls, packed):
    rng = np.random.default_rng(16)
    n = 5000
    d = np.dtype(t)
    for v in (np.cumsum(rng.integers(0, 5, n)).astype(d), _vals(rng, t, n)):
        a = primitive_array(v, bool_array(_valid(rng, n)) if nulls else None, nullable=nulls)
        e = delta_encode(a, bitpack=packed)
        assert e.encoding == "fastlanes.delta"
        _same_ok(*_slices(e))


def test_delta_every_width():
    """The fused unpack of every bit width (deltas spanning exactly b bits)."""
    rng = np.random.default_rng(17)
    for t in INTS:
        w = np.dtype(t).itemsize * 8
        ut = np.dtype(f"u{w // 8}")
        arrays = []
        for b in range(w + 1):
            deltas = rng.integers(0, 2**b if b < 64 else 2**63, 2048, dtype=np.uint64).astype(ut)
            if b:
                deltas[5] = ut.type((1 << b) - 1) if b < 64 else ut.type(2**64 - 1)
            vals = np.cumsum(deltas, dtype=ut).view(t)
            arrays.append(delta_encode(primitive_array(vals)))
        for a in arrays:
            _same_ok(a, a.slice(1000, 1100))


def test_delta_children_encodings():
    """Deltas under FoR, zigzag, patched bit-packing, a constant, and bases bit-packed."""
    rng = np.random.default_rng(18)
    v = np.cumsum(rng.integers(-3, 50, 4096)).astype(np.int64)
    e = delta_encode(primitive_array(v), bitpack=False)
    bases, deltas = e.children[0], e.children[1]
    dv = deltas.to_numpy()
    kids = {
        "for": for_encode(primitive_array(dv)),
        "zigzag": zigzag_encode(primitive_array(dv), bitpack=True),
        "patched": bitpack(primitive_array(dv), 4),
    }
    assert kids["for"].encoding == "fastlanes.for" and kids["for"].children[0].encoding == "fastlanes.bitpacked"
    assert kids["patched"].meta.patches is not None
    for k in kids.values():
        a = delta_array(bases, k, 0, len(v), e.dtype)
        _same_ok(a, a.slice(5, 3000), a.slice(2047, 2049))
    a = delta_array(bitpack(bases), kids["for"], 0, len(v), e.dtype)
    _same_ok(a)
    zeros = delta_array(primitive_array(np.full(64, 9, np.int32)), constant_array(0, 2048, dt.Primitive(dt.PType.I32)),
                        7, 2000, dt.Primitive(dt.PType.I32))
    _same_ok(zeros)


def test_delta_tiny():
    for n in (0, 1, 2, 1023, 1024, 1025):
        for nullable in (False, True):
            a = primitive_array(np.arange(n, dtype=np.int32) - 1, bool_array(np.arange(n) % 3 > 0) if nullable else None,
                                nullable=nullable)
            for packed in (False, True):
                _same_ok(delta_encode(a, bitpack=packed))
    e = delta_encode(primitive_array(np.arange(2048, dtype=np.uint16)))
    _same_ok(delta_array(e.children[0], e.children[1], 1023, 0, e.dtype))
    _same_ok(delta_array(e.children[0], e.children[1], 1023, 1, e.dtype))


def test_delta_malformed():
    e = delta_encode(primitive_array(np.arange(3000, dtype=np.int64)))
    bad_bases = primitive_array(np.zeros(40, np.int64))
    cases = [
        _rewrap(e, metadata=DeltaMeta(3000, 0).encode()),                     # not whole chunks
        _rewrap(e, metadata=DeltaMeta(3072, 100).encode()),                   # offset + n past the deltas
        _rewrap(e, metadata=DeltaMeta(3072, 1024).encode()),                  # offset 1024
        _rewrap(e, metadata=DeltaMeta(3072, 2**33).encode()),                 # offset not u32
        _rewrap(e, metadata=b"\x08"),                                          # truncated
        _rewrap(e, children=[e.children[0]]),
        _rewrap(e, children=[e.children[0], e.children[1], bool_array(np.ones(3000, bool)),
                             bool_array(np.ones(3000, bool))]),
        _rewrap(e, children=[e.children[0], e.children[1], bool_array(np.ones(3000, bool))]),  # validity, non-null
        _rewrap(e, children=[bad_bases, e.children[1]]),                      # bases of the wrong length
        _rewrap(e, dtype=dt.Primitive(dt.PType.F64)),
    ]
    for c in cases:
        _same_err(c)
    _same_err(e, LimitExceededError, limits=ReaderLimits(max_decoded_bytes=20_000))


# -- nested and compressed ------------------------------------------------------------------------

def test_nested_uses():
    """The encodings as children: run-end codes of a dictionary, sparse / run-end validity,
    a sequence of dictionary codes, sparse values of a FoR, delta inside a struct."""
    rng = np.random.default_rng(19)
    n = 6000
    codes = runend_encode(primitive_array(np.repeat(rng.integers(0, 4, 60), 100).astype(np.uint8)))
    values = vio.array(pa.array(["AAPL", "MSFT", "a longer symbol name here", ""]))
    dct = Array("vortex.dict", dt.Utf8(True), n, metadata=ProtoWriter().varint(1, 4).varint(2, 0).finish(),
                children=[codes, values])
    _same_ok(dct, dct.slice(150, 5000))
    valid_sparse = sparse_encode(bool_array(rng.random(n) > 0.01))
    assert valid_sparse.encoding == "vortex.sparse"
    p = primitive_array(rng.integers(0, 100, n).astype(np.int32), valid_sparse, nullable=True)
    _same_ok(p, p.slice(10, 4000))
    valid_runs = runend_encode(bool_array(np.repeat(rng.random(60) > 0.3, 100)))
    q = primitive_array(rng.integers(0, 100, n).astype(np.int64), valid_runs, nullable=True)
    _same_ok(bitpack(q), q)
    seq_codes = sequence_array(0, 1, 4, dt.Primitive(dt.PType.U8))
    d2 = Array("vortex.dict", dt.Utf8(True), 4, metadata=ProtoWriter().varint(1, 4).varint(2, 0).finish(),
               children=[seq_codes, values])
    _same_ok(d2)
    sp = sparse_encode(primitive_array(np.where(rng.random(n) < 0.05, 10**9 + rng.integers(0, 99, n), 10**9)))
    _same_ok(sp, sp.slice(3, 5000))
    t = pa.table({"ts": pa.array(np.cumsum(rng.integers(0, 9, n)).astype(np.int64)),
                  "k": pa.array(np.repeat(np.arange(60), 100)),
                  "s": pa.array(np.where(rng.random(n) < 0.03, rng.integers(0, 9, n), 0))})
    assert_same(table_stream(t, compress=True, chunk_rows=2500))


def test_compressed_tables_use_these_encodings():
    """The compressor's choices on integer columns (sequence, run-end, sparse, delta,
    zigzag...) decode the same natively."""
    rng = np.random.default_rng(20)
    n = 20_000
    t = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64) * 3 + 7),
        "runs": pa.array(np.repeat(rng.integers(-5, 5, n // 200), 200).astype(np.int32)),
        "sparse": pa.array(np.where(rng.random(n) < 0.02, rng.integers(1, 10**6, n), 0)),
        "sorted": pa.array(np.cumsum(rng.integers(0, 1000, n)).astype(np.uint64)),
        "neg": pa.array(rng.integers(-40, 40, n).astype(np.int16)),
        "nulls": pa.array(np.arange(n), mask=rng.random(n) < 0.01),
        "runbool": pa.array(np.repeat(rng.random(n // 500) > 0.5, 500)),
    })
    data = table_stream(t, compress=True, chunk_rows=10_000)
    ref = assert_same(data)
    assert ref[0] == "ok" and ref[1].equals(t)


# -- hypothesis -----------------------------------------------------------------------------------

_ENCODERS = {
    "zigzag": lambda a: zigzag_encode(a, bitpack=True),
    "delta": lambda a: delta_encode(a, bitpack=True),
    "delta_plain": lambda a: delta_encode(a, bitpack=False),
    "rle": rle_encode,
    "runend": runend_encode,
    "sparse": sparse_encode,
    "sequence": sequence_encode,
    "dict": dict_encode,
}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(INTS), st.integers(0, 2500), st.sampled_from(sorted(_ENCODERS)), st.integers(0, 3),
       st.booleans(), st.data())
def test_random_arrays(t, n, enc, shape, nulls, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    d = np.dtype(t)
    if enc == "zigzag" and d.kind == "u":
        d = np.dtype(f"i{d.itemsize}")
    if shape == 0:
        v = _vals(rng, d.str, n)
    elif shape == 1:
        v = np.repeat(_vals(rng, d.str, n // 50 + 1), 50)[:n]
    elif shape == 2:
        v = np.where(rng.random(n) < 0.05, _vals(rng, d.str, n), 0).astype(d)
    else:
        v = np.cumsum(rng.integers(0, 3, n)).astype(d)
    valid = rng.random(n) > 0.2 if nulls else None
    a = primitive_array(v, bool_array(valid) if nulls else None, nullable=nulls)
    e = _ENCODERS[enc](a if enc != "sequence" else primitive_array(v))
    if e is None or e.encoding.startswith("vortex.constant"):
        return
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    _same_ok(e, e.slice(start, stop), dtype=e.dtype)


# -- fastlanes.bitpacked take: dense chunks unpacked whole, sparse ones read value by value ----

def _take_rows(rng, n, offset):
    """Sorted selections mixing chunks with every row, most rows, exactly as many rows as
    the dense threshold of each width (and one fewer), a few rows and none; and repeats."""
    first = (1024 - offset) % 1024 or 1024  # rows in the first (partial) chunk
    chunks = [(0, min(first, n))]
    s = chunks[0][1]
    while s < n:
        chunks.append((s, min(s + 1024, n)))
        s += 1024
    picks = []
    for i, (a, b) in enumerate(chunks):
        size = b - a
        k = [size, size * 3 // 5, 16, 15, 28, 27, 52, 51, 100, 99, 3, 0][i % 12]
        picks.append(np.sort(rng.choice(np.arange(a, b), size=min(k, size), replace=False)))
    sel = np.concatenate(picks) if picks else np.zeros(0, np.int64)
    dup = np.sort(np.concatenate([sel, sel[::7]]))
    return [sel, dup, np.arange(n), np.zeros(0, np.int64)]


@pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")
@pytest.mark.parametrize("t", [np.int8, np.uint16, np.int32, np.uint64])
@pytest.mark.parametrize("nulls", [False, True])
def test_bitpacked_take_dense_and_sparse_chunks(t, nulls):
    from tests.test_native_hooks import Native

    rng = np.random.default_rng(int(np.dtype(t).itemsize) * 2 + nulls)
    n = 12 * 1024 + 300
    info = np.iinfo(t)
    v = rng.integers(0, 40, n).astype(t)
    v[rng.random(n) < 0.02] = info.max  # outliers: patches
    a = pa.array(v, mask=(rng.random(n) < 0.1) if nulls else None)
    enc = bitpack(vio.array(a), 6)
    assert enc.meta.patches is not None
    for start, stop in ((0, n), (1000, n - 5), (37, 5000)):
        arr = enc.slice(start, stop)
        want_all = a.slice(start, stop - start)
        nat = Native(ng.native(), arr)
        for idx in _take_rows(rng, stop - start, arr.meta.offset):
            got = nat.take(idx)
            want = want_all.take(pa.array(idx, pa.int64()))
            assert got.equals(want), (t, nulls, start, stop, len(idx))
        assert nat.handled.get("take"), "the bitpacked node's own take did not answer"


# -- a row patched twice (malformed) takes its last patch: the decode's scatter -----------------

def _twice_patched(k: int):
    """An array whose patch indices name row 5 twice (sorted, so accepted): a sparse array,
    a patched bitpacked array or a patched ALP array; and what row 5 decodes to."""
    from vortex_io.encodings._alp import alp_array
    from vortex_io.encodings._bitpacked import bitpacked_array
    from vortex_io.encodings._patches import PatchesMeta, make_patches

    if k == 0:
        vals = primitive_array(np.array([7, 8, 9], dtype=np.int64),
                               bool_array(np.array([True, False, True])), nullable=True)
        return sparse_array(primitive_array(np.array([2, 5, 5], dtype=np.uint8)), vals, 12, 0), 9
    if k == 1:
        words = np.zeros(1024 * 4 // 64, dtype=np.uint64)  # 1024 values of 4 bits: all 0
        pv = primitive_array(np.array([100, 200, 300], dtype=np.int64))
        return bitpacked_array(words, dt.int64(), 12, 4,
                               patches=make_patches(np.array([2, 5, 5]), pv)), 300
    raw, kids = make_patches(np.array([3, 5, 5]), primitive_array(np.array([1.5, 2.5, 3.5])))
    enc = primitive_array(np.arange(12, dtype=np.int64))
    return alp_array(enc, 1, 0, (PatchesMeta.decode(raw, "t"), kids)), 3.5


@pytest.mark.parametrize("k", range(3))
def test_a_row_patched_twice_takes_its_last_patch(k):
    """A take gives the rows the decode gives, also for a row patched twice (the last patch
    wins, as the decode's scatter leaves it): the native node's take (kernel_probe) and the
    numpy reference's."""
    from tests.test_native_hooks import Native
    from vortex_io.compute._kernels import take

    arr, row5 = _twice_patched(k)
    data = stream_of(arr)
    idx = np.array([0, 2, 5, 11], dtype=np.int64)
    with ng.use_native(False):
        full = vio.StreamReader(data).read_arrow()
        full = full.combine_chunks() if isinstance(full, pa.ChunkedArray) else full
        ref = take(next(iter(vio.StreamReader(data))).array, idx).to_arrow()
    want = full.take(pa.array(idx))
    assert full[5].as_py() == row5
    assert ref.equals(want), (arr.encoding, ref, want)
    if NATIVE:
        nat = Native(ng.native(), arr)
        assert nat.take(idx).equals(want), arr.encoding
        assert nat.handled.get("take"), "the node's own take did not answer"
