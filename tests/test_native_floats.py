"""The native ``vortex.alp`` and ``vortex.alprd`` against the numpy reference.

Decoding: streams of arrays built with the Python encoders (f32 and f64, NaN / inf / -0.0,
nulls, patches, slices, empty and single rows, every ALP exponent pair), streams
vortex-data's compressor writes, and corrupted metadata, all read both ways with
``tests.native_util.assert_same`` (strict: nothing handed back to Python; or the same error
class). Kernels: ALP's compare / is_in / take / validity hooks, run natively through
``_native.kernel_probe`` on the node of a message and compared with
``vortex_io.compute`` on the same message read by Python.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vortex_io as vio
from tests.native_util import NATIVE, assert_same, stream_of
from vortex_io import _native_glue as ng
from vortex_io import dtype as dt
from vortex_io._array import Array
from vortex_io._limits import ReaderLimits
from vortex_io.compute import _kernels as K
from vortex_io.compute._numeric import validity as py_validity
from vortex_io.encodings._alp import ALP, ALPMeta, alp_array, alp_encode
from vortex_io.encodings._alprd import ALPRD, ALPRDMeta, alprd_array, alprd_encode
from vortex_io.encodings._bitpacked import bitpack
from vortex_io.encodings._bool import bool_array
from vortex_io.encodings._for import for_encode
from vortex_io.encodings._patches import PatchesMeta, make_patches
from vortex_io.encodings._primitive import primitive_array, primitive_values

GOLDEN = Path(__file__).parent / "golden" / "values"
FLOATS = [np.float32, np.float64]
SPECIALS = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-300, 5e-324, 1e300, -1.0, -np.nan]
OPS = ["eq", "neq", "lt", "lte", "gt", "gte"]


def _prices(rng, t, n, dp=2, specials=0, lo=-1000.0, hi=1000.0):
    v = np.round(rng.uniform(lo, hi, n), dp)
    if specials and n:
        k = min(n, specials)
        v[rng.integers(0, n, k)] = rng.choice(SPECIALS, k)
    with np.errstate(over="ignore"):
        return v.astype(t)


def _nullable(v, rng, p=0.2):
    return primitive_array(v, bool_array(rng.random(len(v)) > p), nullable=True)


def _parts(a):
    """The array, slices of it (patch offsets moved), a single row and an empty slice."""
    n = len(a)
    return [a, a.slice(min(3, n), max(min(3, n), n - 5)), a.slice(n // 2, n // 2 + 1), a.slice(0, 0)]


# -- ALP decoding ----------------------------------------------------------------------------------

@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("nulls", [False, True])
def test_alp_values_specials_nulls_slices(t, nulls):
    rng = np.random.default_rng(1)
    v = _prices(rng, t, 5000, specials=60)
    a = alp_encode(_nullable(v, rng) if nulls else primitive_array(v))
    assert a.encoding == "vortex.alp" and a.meta.patches is not None and a.meta.patches.len
    assert_same(stream_of(*_parts(a)))


@pytest.mark.parametrize("t", FLOATS)
def test_alp_empty_single_and_all_null(t):
    for data in (pa.array([], pa.from_numpy_dtype(t)), pa.array([1.5], pa.from_numpy_dtype(t)),
                 pa.array([None], pa.from_numpy_dtype(t)), pa.array([None, None, 2.0], pa.from_numpy_dtype(t)),
                 pa.array([np.nan], pa.from_numpy_dtype(t))):
        a = alp_encode(data)
        assert a.encoding == "vortex.alp"
        assert_same(stream_of(a))


@pytest.mark.parametrize("t", FLOATS)
def test_alp_every_exponent_pair(t):
    """Random encoded integers under every (e, f): the constant tables and the order of
    the multiplications, bit for bit."""
    ip, mx = (np.int64, 18) if t == np.float64 else (np.int32, 10)
    rng = np.random.default_rng(77)
    big = 2**62 if t == np.float64 else 2**30
    enc = np.concatenate([rng.integers(-1000, 1000, 64), rng.integers(-big, big, 64),
                          rng.integers(-(2**20), 2**20, 64),
                          [0, 1, -1, 12345, 999999, np.iinfo(ip).max, np.iinfo(ip).min]]).astype(ip)
    chunks = [alp_array(primitive_array(enc), e, f) for e in range(mx + 1) for f in range(mx + 1)]
    assert_same(stream_of(*chunks))


@pytest.mark.parametrize("t", FLOATS)
def test_alp_over_for_and_bitpacked(t):
    """The common tree: alp(for(bitpacked)) (and alp(bitpacked)), fused natively."""
    ip = np.int64 if t == np.float64 else np.int32
    rng = np.random.default_rng(2)
    v = _prices(rng, t, 3000, lo=100, hi=200, specials=5)
    a = alp_encode(_nullable(v, rng))
    enc = a.children[0]
    f = for_encode(enc)
    assert f.encoding == "fastlanes.for"
    b = alp_array(f, a.meta.e, a.meta.f, (a.meta.patches, list(a.children[1:])), a.dtype)
    assert_same(stream_of(*_parts(b)))
    vals = primitive_values(enc.canonical())[0]
    pos = primitive_array((vals - vals.min()).astype(ip))
    bp = bitpack(pos, 12)
    c = alp_array(bp, a.meta.e, a.meta.f, dtype=dt.Primitive(a.dtype.ptype, False))
    assert_same(stream_of(*_parts(c)))


@pytest.mark.parametrize("t", FLOATS)
def test_alp_patch_values_with_nulls_and_duplicates(t):
    """Patch values carrying nulls (a row is valid if both say so) and repeated patch
    indices (the last one wins, as numpy scatters)."""
    ip = np.int64 if t == np.float64 else np.int32
    rng = np.random.default_rng(3)
    n = 2000
    enc = primitive_array(rng.integers(-5000, 5000, n).astype(ip), bool_array(rng.random(n) > 0.1),
                          nullable=True)
    for pos in (np.array([0, 5, 17, 1024, 1999]), np.array([3, 3, 8, 8, 8, 1500])):
        with np.errstate(over="ignore"):
            pv = np.array(rng.choice(SPECIALS, len(pos)), dtype=t)
        pvalid = bool_array(np.arange(len(pos)) % 2 == 0)
        raw, kids = make_patches(pos, primitive_array(pv, pvalid, nullable=True))
        a = alp_array(enc, 3, 1, (PatchesMeta.decode(raw, "t"), kids))
        assert_same(stream_of(*_parts(a)))


@given(st.sampled_from(FLOATS), st.integers(0, 1500), st.integers(0, 2**32 - 1),
       st.sampled_from(["decimal", "mixed", "normal"]), st.booleans(), st.integers(0, 1500), st.integers(0, 1500))
@settings(max_examples=40, deadline=None)
def test_alp_hypothesis(t, n, seed, kind, nulls, i, j):
    rng = np.random.default_rng(seed)
    if kind == "normal":
        v = (rng.normal(size=n) * 10.0 ** rng.integers(-5, 5)).astype(t)
    else:
        v = _prices(rng, t, n, dp=int(rng.integers(0, 4)), specials=8 if kind == "mixed" else 0)
    a = alp_encode(_nullable(v, rng) if nulls else primitive_array(v))
    i, j = sorted((min(i, n), min(j, n)))
    assert_same(stream_of(a, a.slice(i, j)))


# -- ALP-RD decoding -------------------------------------------------------------------------------

@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("nulls", [False, True])
def test_alprd_values_patches_nulls_slices(t, nulls):
    rng = np.random.default_rng(4)
    v = rng.normal(size=4000).astype(t)
    with np.errstate(over="ignore"):
        v[::97] = rng.choice(SPECIALS, len(v[::97])).astype(t)
    a = alprd_encode(_nullable(v, rng) if nulls else primitive_array(v))
    assert a.encoding == "vortex.alprd" and a.meta.patches is not None and a.meta.patches.len
    assert_same(stream_of(*_parts(a)))


@pytest.mark.parametrize("t", FLOATS)
def test_alprd_empty_single_and_all_null(t):
    pt = pa.from_numpy_dtype(t)
    for data in (pa.array([], pt), pa.array([1.1], pt), pa.array([None], pt), pa.array([None, 3.3], pt),
                 pa.array([np.nan, -0.0], pt)):
        a = alprd_encode(data)
        assert a.encoding == "vortex.alprd"
        assert_same(stream_of(a))


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("code_t", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_alprd_left_parts_types_and_hostile_right_bits(t, code_t):
    """Left codes of every unsigned type, codes out of range under nulls, an empty
    dictionary with every row null, patch values wider than the float, right parts with
    bits above right_bit_width."""
    rt = np.uint64 if t == np.float64 else np.uint32
    rng = np.random.default_rng(5)
    n = 1500
    nbits = 64 if t == np.float64 else 32
    rbw = nbits - 5
    codes = rng.integers(0, 3, n).astype(code_t)
    valid = rng.random(n) > 0.1
    codes[~valid & (np.arange(n) % 2 == 0)] = 200  # out of range, under nulls
    right = rng.integers(0, 2**(nbits - 1), n, dtype=np.uint64).astype(rt)  # bits above rbw set
    left = primitive_array(codes, bool_array(valid), nullable=True)
    pos = np.array([1, 2, 500, 1499])
    wide = {np.uint8: 200, np.uint16: 60000, np.uint32: 2**20 + 5, np.uint64: 2**40 + 5}[code_t]
    pvals = np.array([3, 7, wide, 31], dtype=code_t)
    raw, kids = make_patches(pos, primitive_array(pvals))
    a = alprd_array(left, primitive_array(right), rbw, [1, 9, 30], (PatchesMeta.decode(raw, "t"), kids))
    assert_same(stream_of(*_parts(a)))
    empty = alprd_array(primitive_array(codes, bool_array(np.zeros(n, bool)), nullable=True),
                        primitive_array(right), rbw, [])
    assert_same(stream_of(empty))


@given(st.sampled_from(FLOATS), st.integers(0, 1500), st.integers(0, 2**32 - 1), st.booleans(),
       st.integers(0, 1500), st.integers(0, 1500))
@settings(max_examples=30, deadline=None)
def test_alprd_hypothesis(t, n, seed, nulls, i, j):
    rng = np.random.default_rng(seed)
    v = (rng.normal(size=n) * 10.0 ** rng.integers(-3, 3)).astype(t)
    if n:
        k = int(rng.integers(0, 10))
        with np.errstate(over="ignore"):
            v[rng.integers(0, n, k)] = rng.choice(SPECIALS, k).astype(t)
    a = alprd_encode(_nullable(v, rng) if nulls else primitive_array(v))
    i, j = sorted((min(i, n), min(j, n)))
    assert_same(stream_of(a, a.slice(i, j)))


# -- streams vortex-data writes ----------------------------------------------------------------------

def _vx_cases():
    rng = np.random.default_rng(11)
    n = 2500
    yield "prices", pa.array(np.round(rng.uniform(1, 1000, n), 2)), "vortex.alp"
    yield "normal", pa.array(rng.normal(size=3 * n)), "vortex.alprd"
    yield "dp1_nulls", pa.array(np.round(rng.uniform(0, 100, n), 1), mask=rng.random(n) < 0.1), "vortex.alp"
    yield "f32_small", pa.array(np.round(rng.uniform(0, 10, n), 2).astype(np.float32)), "vortex.alp"
    yield "f32_prices", pa.array(np.round(rng.uniform(1, 1000, n), 2).astype(np.float32)), None
    yield "f32_normal", pa.array(rng.normal(size=n).astype(np.float32)), None
    v = np.round(rng.uniform(1, 1000, n), 2)
    v[::50] = np.array(SPECIALS)[np.arange(len(v[::50])) % len(SPECIALS)]
    yield "specials", pa.array(v), "vortex.alp"
    yield "specials_nulls", pa.array(v, mask=rng.random(n) < 0.2), "vortex.alp"


@pytest.mark.parametrize("name,data,must", list(_vx_cases()), ids=[c[0] for c in _vx_cases()])
def test_vortex_data_streams(name, data, must):
    from tests.vx_util import vx_stream

    stream = vx_stream([data, data.slice(100, 1700)], compress=True)
    if must is not None:
        with vio.StreamReader(stream) as r:
            encs = {e for b in r for e in _encodings(b.array)}
        assert must in encs, encs
    assert_same(stream)


def _encodings(a):
    yield a.encoding
    for c in a.children:
        yield from _encodings(c)


def _golden_floats():
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    return sorted(n for n in manifest if n.startswith(("f32", "f64")))


@pytest.mark.parametrize("name", _golden_floats())
def test_golden_float_streams(name):
    """(strict where every encoding of the stream is native: others are other ports')"""
    data = (GOLDEN / f"{name}.vortex").read_bytes()
    with vio.StreamReader(data) as r:
        encs = {e for b in r for e in _encodings(b.array)}
    assert_same(data, strict=NATIVE and encs <= set(ng.native().encodings()))


# -- corrupted metadata and limits -----------------------------------------------------------------

def _pm(length=1, offset=0, ptype=dt.PType.U16):
    return PatchesMeta(length, offset, ptype).encode()


def _alp_raw(e, f, patches=None):
    from vortex_io._proto import ProtoWriter

    w = ProtoWriter().varint(1, e).varint(2, f)
    if patches is not None:
        w.message(3, patches)
    return w.finish()


def _bad_alp_nodes():
    enc64 = primitive_array(np.arange(10, dtype=np.int64))
    enc32 = primitive_array(np.arange(10, dtype=np.int32))
    f64 = dt.Primitive(dt.PType.F64, False)
    f32 = dt.Primitive(dt.PType.F32, False)
    idx = primitive_array(np.array([2], np.uint16))
    pv = primitive_array(np.array([np.nan]))

    def node(raw, kids, d=f64, n=10):
        return Array(ALP, d, n, metadata=raw, children=kids)

    yield "e too big f64", node(_alp_raw(19, 0), [enc64])
    yield "f too big f32", node(_alp_raw(0, 11), [enc32], f32)
    yield "e fits u32 only", node(_alp_raw(2**32, 0), [enc64])
    yield "not float", node(_alp_raw(0, 0), [enc64], dt.Primitive(dt.PType.I64, False))
    yield "signed patch indices", node(_alp_raw(1, 0, _pm(ptype=dt.PType.I16)),
                                       [enc64, primitive_array(np.array([2], np.int16)), pv])
    yield "too many patches", node(_alp_raw(1, 0, _pm(length=11)), [enc64, idx, pv])
    yield "missing children", node(_alp_raw(1, 0, _pm()), [enc64])
    yield "extra child", node(_alp_raw(1, 0), [enc64, idx])
    yield "garbage metadata", node(b"\xff\xff\xff", [enc64])
    yield "bad patches message", node(_alp_raw(1, 0, b"\x08"), [enc64, idx, pv])
    yield "patch out of range", node(_alp_raw(1, 0, _pm(offset=0)),
                                     [enc64, primitive_array(np.array([10], np.uint16)), pv])
    yield "patch below the offset", node(_alp_raw(1, 0, _pm(offset=5)), [enc64, idx, pv])
    yield "unsorted patches", node(_alp_raw(1, 0, _pm(length=2)),
                                   [enc64, primitive_array(np.array([5, 2], np.uint16)),
                                    primitive_array(np.array([1.0, 2.0]))])
    yield "offset over 2^63", node(_alp_raw(1, 0, _pm(offset=2**63 + 2)), [enc64, idx, pv])
    yield "u64 index over 2^63", node(_alp_raw(1, 0, _pm(ptype=dt.PType.U64)),
                                      [enc64, primitive_array(np.array([2**63 + 1], np.uint64)), pv])


def _alprd_raw(rbw, dict_len, entries, lp=1, patches=None):
    from vortex_io._proto import ProtoWriter

    w = ProtoWriter().varint(1, rbw).varint(2, dict_len).packed_varints(3, entries).varint(4, lp, always=True)
    if patches is not None:
        w.message(5, patches)
    return w.finish()


def _bad_alprd_nodes():
    f64 = dt.Primitive(dt.PType.F64, False)
    codes = primitive_array(np.array([0, 1, 0, 1, 2], np.uint16))
    right = primitive_array(np.arange(5, dtype=np.uint64))
    idx = primitive_array(np.array([2], np.uint16))
    pv = primitive_array(np.array([9], np.uint16))

    def node(raw, kids, d=f64, n=5):
        return Array(ALPRD, d, n, metadata=raw, children=kids)

    yield "rbw = bits", node(_alprd_raw(64, 2, [1, 2]), [codes, right])
    yield "rbw f32", node(_alprd_raw(32, 2, [1, 2]), [codes, primitive_array(np.arange(5, dtype=np.uint32))],
                          dt.Primitive(dt.PType.F32, False))
    yield "dict_len > entries", node(_alprd_raw(50, 4, [1, 2]), [codes, right])
    yield "entry over u16", node(_alprd_raw(50, 2, [1, 70000]), [codes, right])
    yield "signed left parts", node(_alprd_raw(50, 2, [1, 2], lp=5), [primitive_array(np.zeros(5, np.int16)), right])
    yield "float left parts", node(_alprd_raw(50, 2, [1, 2], lp=9), [codes, right])
    yield "bad ptype", node(_alprd_raw(50, 2, [1, 2], lp=42), [codes, right])
    yield "code out of range", node(_alprd_raw(50, 2, [1, 2]), [codes, right])
    yield "empty dictionary", node(_alprd_raw(50, 0, []), [codes, right])
    yield "too many patches", node(_alprd_raw(50, 3, [1, 2, 3], patches=_pm(length=6)), [codes, right, idx, pv])
    yield "signed patch indices", node(_alprd_raw(50, 3, [1, 2, 3], patches=_pm(ptype=dt.PType.I8)),
                                       [codes, right, primitive_array(np.array([2], np.int8)), pv])
    yield "patch out of range", node(_alprd_raw(50, 3, [1, 2, 3], patches=_pm()),
                                     [codes, right, primitive_array(np.array([7], np.uint16)), pv])
    yield "missing right", node(_alprd_raw(50, 3, [1, 2, 3]), [codes])
    yield "not float", node(_alprd_raw(50, 3, [1, 2, 3]), [codes, right], dt.Primitive(dt.PType.U64, False))


@pytest.mark.parametrize("name,arr", list(_bad_alp_nodes()) + list(_bad_alprd_nodes()),
                         ids=[c[0] for c in list(_bad_alp_nodes()) + list(_bad_alprd_nodes())])
def test_corrupted_metadata_same_error(name, arr):
    ref = assert_same(stream_of(arr))
    assert ref[0] == "err", ref


def test_decoded_size_limit():
    rng = np.random.default_rng(6)
    v = _prices(rng, np.float64, 5000)
    limits = ReaderLimits(max_decoded_bytes=20_000)
    for a in (alp_encode(primitive_array(v)), alprd_encode(primitive_array(rng.normal(size=5000)))):
        ref = assert_same(stream_of(a), limits=limits)
        assert ref == ("err", vio.LimitExceededError)


@given(st.binary(min_size=1, max_size=8), st.integers(0, 100_000), st.sampled_from(["alp", "alprd"]))
@settings(max_examples=60, deadline=None)
def test_mutated_streams_same_outcome(junk, at, which):
    rng = np.random.default_rng(7)
    v = _prices(rng, np.float64, 1200, specials=10)
    a = (alp_encode if which == "alp" else alprd_encode)(_nullable(v, rng))
    base = stream_of(a, a.slice(10, 900))
    at = at % len(base)
    data = base[:at] + junk + base[at + len(junk):]
    assert_same(io.BytesIO(data).getvalue(), strict=False)


# -- kernels on the encoded node (kernel_probe) ------------------------------------------------------

def _lit(v):
    if isinstance(v, float):
        return ("f", v)
    return ("i", v >> 64, v & ((1 << 64) - 1))


def _bits(b, n):
    if not b:
        return None
    return np.unpackbits(np.frombuffer(b, np.uint8), bitorder="little")[:n].astype(bool)


def _message(a):
    data = stream_of(a)
    with ng.use_native(False), vio.StreamReader(data) as r:
        arr = r.read_next_batch().array
    with vio.StreamReader(data) as r:
        m = r._next_message()
        args = (ng.dtype_program(r.dtype), list(ng.limits_values(r.limits)), m.body, m.header.row_count,
                list(m.header.encodings), list(ng.known_flags(m.header.encodings)), [])
    return arr, args


def _probe(args, kind, op=0, lits=(), idx=()):
    return ng.native().kernel_probe(*args, kind, op, [_lit(x) for x in lits], list(idx))


def _same_mask(nat, ref, n):
    assert nat[0] == "mask", nat
    vals, valid = _bits(nat[1], n), _bits(nat[2], n)
    rv, rvalid = ref
    ones = np.ones(n, bool)
    rok = ones if rvalid is None else rvalid
    ok = ones if valid is None else valid
    assert np.array_equal(ok, rok)
    got = np.zeros(n, bool) if vals is None else vals
    assert np.array_equal(got & ok, rv & rok)


def _kernel_arrays(t):
    rng = np.random.default_rng(8)
    ip = np.int64 if t == np.float64 else np.int32
    v = _prices(rng, t, 3000, specials=40)
    a = alp_encode(_nullable(v, rng))
    yield "nullable", a
    yield "slice", a.slice(7, 2500)
    yield "plain", alp_encode(primitive_array(_prices(rng, t, 2000, dp=1)))
    yield "no patches", alp_encode(primitive_array(_prices(rng, t, 2000, dp=3, lo=0, hi=50)))
    # patch values with nulls, the encoded child bit-packed under a FoR
    enc = for_encode(primitive_array(rng.integers(-3000, 3000, 2000).astype(ip), bool_array(rng.random(2000) > 0.1),
                                     nullable=True))
    pos = np.array([0, 9, 9, 100, 1999])
    pv = primitive_array(np.array([np.nan, 1.5, 2.5, np.inf, -0.0], dtype=t),
                         bool_array(np.array([1, 0, 1, 0, 1], bool)), nullable=True)
    raw, kids = make_patches(pos, pv)
    yield "null patches", alp_array(enc, 2, 0, (PatchesMeta.decode(raw, "t"), kids))
    # large values: several encoded integers decode to one float
    big = primitive_array(rng.integers(2**60, 2**61, 500).astype(np.int64) if t == np.float64
                          else rng.integers(2**28, 2**30, 500).astype(np.int32))
    yield "big", alp_array(big, 0, 0)


def _literals(arr):
    c = arr.to_arrow()
    vals = [x for x in c.to_pylist() if x is not None]
    some = vals[:: max(1, len(vals) // 6)][:6]
    out = [*some, *(x + 0.001 for x in some[:3] if np.isfinite(x)), 0.0, -0.0, float("nan"), float("inf"),
           float("-inf"), 1e300, -1e300, 1e-45, 3, -7, 10**30, 123.456, 2.5, 1.5]
    return [K.coerce_literal(arr.dtype, x) for x in out]


@pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")
@pytest.mark.parametrize("t", FLOATS)
def test_alp_compare_and_is_in(t):
    for name, a in _kernel_arrays(t):
        arr, args = _message(a)
        n = len(arr)
        lits = _literals(arr)
        for lit in lits:
            for op in OPS:
                nat = _probe(args, "compare", OPS.index(op), [lit])
                assert nat[3], (name, lit, op)  # answered on the encoded node
                _same_mask(nat, K.compare_storage(arr, lit, op), n)
        for k in (1, 2, 5):
            for s in range(0, len(lits), k):
                vs = lits[s:s + k]
                nat = _probe(args, "is_in", 0, vs)
                _same_mask(nat, K.is_in_storage(arr, vs), n)
                if name != "big":
                    assert nat[3], (name, vs)


@pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")
@pytest.mark.parametrize("t", FLOATS)
def test_alp_take_validity_is_null(t):
    from tests.native_util import identical
    from vortex_io._arrow import dtype_to_arrow

    rng = np.random.default_rng(9)
    for name, a in _kernel_arrays(t):
        arr, args = _message(a)
        n = len(arr)
        for idx in (np.arange(n), np.sort(rng.choice(n, n // 3, replace=False)), np.array([0, n - 1]),
                    np.array([], np.int64), np.array([9, 9, 10, 100]) % n):
            nat = _probe(args, "take", idx=idx.tolist())
            assert nat[0] == "col" and nat[2], (name, nat)
            got = pa.Array._import_from_c_capsule(dtype_to_arrow(arr.dtype).__arrow_c_schema__(), nat[1])
            ref = K.take(arr, idx).to_arrow()
            if isinstance(ref, pa.ChunkedArray):
                ref = ref.combine_chunks()
            assert identical(got, ref), name
        nat = _probe(args, "validity")
        assert nat[0] == "bits" and nat[2]
        got = _bits(nat[1], n)
        ref = py_validity(arr)
        assert np.array_equal(np.ones(n, bool) if got is None else got,
                              np.ones(n, bool) if ref is None else ref), name
        for neg in (0, 1):
            _same_mask(_probe(args, "is_null", neg), K.is_null_result(arr, negated=bool(neg)), n)


@pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")
@given(st.sampled_from(FLOATS), st.integers(1, 400), st.integers(0, 2**32 - 1), st.sampled_from(OPS),
       st.floats(allow_nan=True, allow_infinity=True, width=64), st.booleans())
@settings(max_examples=60, deadline=None)
def test_alp_compare_hypothesis(t, n, seed, op, x, near):
    rng = np.random.default_rng(seed)
    v = _prices(rng, t, n, dp=int(rng.integers(0, 4)), specials=3)
    arr, args = _message(alp_encode(_nullable(v, rng)))
    if near:  # a literal next to a value of the column
        x = float(np.nextafter(v[int(rng.integers(0, n))], np.inf if seed % 2 else -np.inf))
    lit = K.coerce_literal(arr.dtype, x)
    _same_mask(_probe(args, "compare", OPS.index(op), [lit]), K.compare_storage(arr, lit, op), n)
    _same_mask(_probe(args, "is_in", 0, [lit]), K.is_in_storage(arr, [lit]), n)


def test_alp_meta_helpers_untouched():
    """(the Python encoders this file builds with still write what it expects)"""
    a = alp_encode(primitive_array(np.array([1.25, 3.5, -0.0, 10.75])))
    assert isinstance(a.meta, ALPMeta) and a.meta.patches.len == 1
    r = alprd_encode(primitive_array(np.array([1.1, 2.2, 1e300])))
    assert isinstance(r.meta, ALPRDMeta)


_BASELINE_SCRIPT = """
import numpy as np
from tests.native_util import assert_same, stream_of
from tests.test_native_floats import _nullable, _parts, _prices
from vortex_io.encodings._alp import alp_array, alp_encode
from vortex_io.encodings._alprd import alprd_encode
from vortex_io.encodings._primitive import primitive_array
rng = np.random.default_rng(10)
for t in (np.float32, np.float64):
    v = _prices(rng, t, 3001, specials=30)
    for a in (alp_encode(_nullable(v, rng)), alprd_encode(_nullable(rng.normal(size=3001).astype(t), rng))):
        assert_same(stream_of(*_parts(a)))
    ip, mx = (np.int64, 18) if t == np.float64 else (np.int32, 10)
    enc = rng.integers(np.iinfo(ip).min, np.iinfo(ip).max, 999, dtype=ip, endpoint=True)
    assert_same(stream_of(*[alp_array(primitive_array(enc), e, f) for e in range(0, mx + 1, 3)
                            for f in range(0, mx + 1, 4)]))
print("ok")
"""


@pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")
def test_baseline_loops_without_avx2():
    """The SSE2 loops the AVX2 ones replace at run time (VORTEX_IO_NATIVE_BASELINE=1)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, VORTEX_IO_NATIVE_BASELINE="1")
    root = Path(__file__).parent.parent
    r = subprocess.run([sys.executable, "-c", _BASELINE_SCRIPT], env=env, cwd=root, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
