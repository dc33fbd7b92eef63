"""Value encodings: ``vortex.dict``, ``vortex.runend``, ``vortex.sequence``,
``vortex.sparse``, ``vortex.alp``, ``vortex.alprd``, ``vortex.bytebool``.

Checked in both directions against vortex-data 0.93:

* us -> vortex-data: arrays our encoders build (and slices of them) are written with
  ``StreamWriter`` as they are and decoded by vortex-data to the source values.
* vortex-data -> us: streams its compressor writes (generated here, and the committed
  golden streams of ``tests/golden/values``) decode to the source values. These need
  the encodings vortex-data nests inside ours (``fastlanes.bitpacked``, ``vortex.fsst``);
  a test skips only while one of the IDs its stream uses is not registered.
* ALP decoding is compared with vortex-data bit for bit for every exponent pair.
* malformed nodes raise ``VortexIPCError`` subclasses, never IndexError & co.

Expected values are the source Arrow data. Floats compare bit for bit (NaN payloads,
-0.0); slots under nulls are not compared.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io import dtype as dt
from vortex_io._array import Array
from vortex_io._errors import LimitExceededError, MalformedStreamError, VortexIPCError
from vortex_io._ipc.framing import MessageDecoder
from vortex_io._ipc.schema import MessageType
from vortex_io.encodings._alp import ALPMeta, alp_array, alp_encode
from vortex_io.encodings._alprd import ALPRDMeta, alprd_encode
from vortex_io.encodings._bool import bool_array
from vortex_io.encodings._bytebool import bytebool_array, bytebool_encode
from vortex_io.encodings._dict import DictMeta, dict_array, dict_codes_and_values, dict_encode
from vortex_io.encodings._patches import PatchesMeta
from vortex_io.encodings._primitive import primitive_array
from vortex_io.encodings._runend import RunEndMeta, runend_array, runend_encode, runend_ends_values
from vortex_io.encodings._sequence import SequenceMeta, sequence_encode
from vortex_io.encodings._sparse import sparse_array, sparse_encode

from .vx_util import our_array_stream, vx_decode_to_arrow, vx_stream

GOLDEN = Path(__file__).parent / "golden" / "values"

INT_NP = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT_NP = [np.float32, np.float64]

# -- comparison ---------------------------------------------------------------------------


def _combined(a):
    if isinstance(a, pa.ChunkedArray):
        return a.combine_chunks()
    return a


def _values_np(a: pa.Array) -> np.ndarray:
    """The value buffer of a primitive Arrow array as numpy (slots under nulls included)."""
    w = a.type.byte_width
    buf = np.frombuffer(a.buffers()[1], dtype=np.uint8)[a.offset * w : (a.offset + len(a)) * w]
    return buf.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[w])


def assert_same(got, expected) -> None:
    """Same nulls and, at valid rows, the same values (floats: the same bits)."""
    got, expected = _combined(got), _combined(expected)
    assert len(got) == len(expected)
    if got.type != expected.type:
        got = got.cast(expected.type)
    gv = np.asarray(got.is_valid())
    ev = np.asarray(expected.is_valid())
    assert np.array_equal(gv, ev), "null positions differ"
    if pa.types.is_floating(expected.type) or pa.types.is_integer(expected.type) or \
            pa.types.is_timestamp(expected.type):
        assert np.array_equal(_values_np(got)[ev], _values_np(expected)[ev]), "values differ"
    else:
        assert got.to_pylist() == expected.to_pylist()


def stream_encodings(stream: bytes) -> set[str]:
    dec = MessageDecoder()
    dec.feed(stream)
    return {e for m in dec if m.type == MessageType.ARRAY for e in m.header.encodings}


def require_registered(ids) -> None:
    """Skip while an encoding the stream needs is not implemented yet."""
    missing = sorted(set(ids) - set(vio.registered_encodings()))
    if missing:
        pytest.skip(f"needs encodings not registered yet: {missing}")


def read_ours(stream: bytes, **kw):
    return vio.read_ipc(stream, **kw).to_arrow()


def check_both_ways(a: Array, expected: pa.Array) -> None:
    """Our decode, vortex-data's decode of our bytes, and our decode of our bytes."""
    assert_same(a.to_arrow(), expected)
    stream = our_array_stream(a)
    assert_same(vx_decode_to_arrow(stream)[0], expected)
    assert_same(read_ours(stream), expected)


def check_slices(a: Array, expected: pa.Array, cuts) -> None:
    n = len(a)
    for i, j in cuts:
        i, j = sorted((min(i, n), min(j, n)))
        s = a.slice(i, j)
        check_both_ways(s, expected.slice(i, j - i))


def check_vx_compressed(data: pa.Array, must_use: str | None = None) -> None:
    """vortex-data's compressor output decodes here to the source values."""
    stream = vx_stream(data, compress=True)
    encs = stream_encodings(stream)
    if must_use is not None:
        assert must_use in encs, f"vortex-data chose {sorted(encs)}"
    require_registered(encs)
    assert_same(read_ours(stream), data)


# -- strategies ---------------------------------------------------------------------------

cuts = st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 3000)), min_size=1, max_size=3)


@st.composite
def int_arrays(draw, np_type=None, low_card=False, max_size=300):
    t = np_type or draw(st.sampled_from(INT_NP))
    info = np.iinfo(t)
    n = draw(st.integers(0, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if low_card:
        pool = rng.integers(info.min, info.max, size=draw(st.integers(1, 6)), dtype=t, endpoint=True)
        pool[0] = info.max
        vals = pool[rng.integers(0, len(pool), n)]
    else:
        vals = rng.integers(info.min, info.max, size=n, dtype=t, endpoint=True)
    mask = rng.random(n) < draw(st.sampled_from([0.0, 0.2, 1.0])) if n else None
    return pa.array(vals, mask=mask if mask is not None and mask.any() else None)


SPECIALS = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-300, 5e-324, 1e300, -1.0]


@st.composite
def float_arrays(draw, np_type=None, max_size=300, decimals=None):
    t = np_type or draw(st.sampled_from(FLOAT_NP))
    n = draw(st.integers(0, max_size))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["decimal", "normal", "mixed"]))
    dp = draw(st.integers(0, 4)) if decimals is None else decimals
    if kind == "decimal":
        vals = np.round(rng.uniform(-1000, 1000, n), dp)
    elif kind == "normal":
        vals = rng.normal(size=n) * 10.0 ** draw(st.integers(-5, 5))
    else:
        vals = np.round(rng.uniform(0, 100, n), dp)
        k = min(n, draw(st.integers(0, 8)))
        vals[rng.integers(0, max(n, 1), k)] = rng.choice(SPECIALS, k)
    with np.errstate(over="ignore"):
        vals = vals.astype(t)
    if n and draw(st.booleans()):  # a NaN with a payload
        vals[0] = np.array([0x7FF8000000000123 if t == np.float64 else 0x7FC00123],
                           dtype=np.uint64 if t == np.float64 else np.uint32).view(t)[0]
    mask = rng.random(n) < draw(st.sampled_from([0.0, 0.15])) if n else None
    return pa.array(vals, mask=mask if mask is not None and mask.any() else None)


@st.composite
def string_arrays(draw, max_size=300, binary=False):
    words = draw(st.lists(st.text(max_size=20) if not binary else st.binary(max_size=20),
                          min_size=1, max_size=8))
    n = draw(st.integers(0, max_size))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    nulls = draw(st.sampled_from([0.0, 0.2]))
    vals = [None if rng.random() < nulls else words[int(i)] for i in rng.integers(0, len(words), n)]
    return pa.array(vals, pa.binary() if binary else pa.string())


@st.composite
def run_arrays(draw):
    """Arrays made of runs (ints, floats or bools, with null runs)."""
    kind = draw(st.sampled_from(["int", "float", "bool"]))
    nruns = draw(st.integers(0, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lens = rng.integers(1, 40, nruns)
    if kind == "int":
        t = draw(st.sampled_from(INT_NP))
        info = np.iinfo(t)
        runvals = rng.integers(info.min, info.max, nruns, dtype=t, endpoint=True)
    elif kind == "float":
        t = draw(st.sampled_from(FLOAT_NP))
        runvals = rng.choice([*SPECIALS[:6], 1.5, 2.5], nruns).astype(t)
    else:
        runvals = rng.random(nruns) < 0.5
    vals = np.repeat(runvals, lens)
    runnull = rng.random(nruns) < draw(st.sampled_from([0.0, 0.3]))
    mask = np.repeat(runnull, lens)
    return pa.array(vals, mask=mask if mask.any() else None)


# -- dict ---------------------------------------------------------------------------------


@given(st.one_of(int_arrays(low_card=True), float_arrays(max_size=200), string_arrays(),
                 string_arrays(binary=True),
                 st.builds(lambda m: pa.array(m, pa.bool_()), st.lists(st.one_of(st.none(), st.booleans())))),
       cuts)
def test_dict_roundtrip_both_ways(data, slices):
    a = dict_encode(data)
    assert a.encoding == "vortex.dict"
    check_both_ways(a, data)
    check_slices(a, data, slices)


@pytest.mark.parametrize("t", INT_NP)
def test_dict_every_int_width(t):
    info = np.iinfo(t)
    vals = np.array([info.min, info.max, 0, info.max, info.min, 1], dtype=t)
    data = pa.array(np.tile(vals, 50), mask=np.tile([False, False, True, False, False, False], 50))
    a = dict_encode(data)
    codes, values = dict_codes_and_values(a)
    assert len(values) == 3 and codes.dtype.nullable  # nulls live in the codes for numbers
    assert codes.dtype.ptype == dt.PType.U8
    check_both_ways(a, data)


def test_dict_strings_null_is_a_value_like_vortex_data():
    data = pa.array(["x", None, "y", "x", None])
    codes, values = dict_codes_and_values(dict_encode(data))
    assert not codes.dtype.nullable and values.to_pylist() == ["x", None, "y"]


def test_dict_floats_keep_bit_patterns():
    v = np.array([0.0, -0.0, np.nan, 0.0, -0.0, 1.0])
    a = dict_encode(pa.array(v))
    assert len(a.children[1]) == 4
    check_both_ways(a, pa.array(v))


def test_dict_code_width_grows_with_cardinality():
    data = pa.array(np.arange(300, dtype=np.int32) % 257)
    codes, _ = dict_codes_and_values(dict_encode(data))
    assert codes.dtype.ptype == dt.PType.U16


def test_dict_struct_values_through_arrow():
    values = vio.array(pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": None}]))
    d = values.dtype
    codes = primitive_array(np.array([1, 0, 1, 1], dtype=np.uint8))
    a = dict_array(codes, values, dtype=d)
    expected = pa.array([{"a": 2, "b": None}, {"a": 1, "b": "x"}, {"a": 2, "b": None}, {"a": 2, "b": None}],
                        type=d.to_arrow())
    check_both_ways(a, expected)


def test_dict_slice_is_cheap_and_keeps_values():
    a = dict_encode(pa.array(["a", "b", "c"] * 10))
    s = a.slice(3, 7)
    assert s.encoding == "vortex.dict" and s.children[1] is a.children[1]
    assert s.meta.all_values_referenced is False
    assert s.to_pylist() == ["a", "b", "c", "a"]


def test_dict_empty_and_single():
    for data in (pa.array([], pa.int64()), pa.array([7], pa.int16()), pa.array([None], pa.string()),
                 pa.array([], pa.string())):
        check_both_ways(dict_encode(data), data)


# -- runend -------------------------------------------------------------------------------


@given(run_arrays(), cuts)
def test_runend_roundtrip_both_ways(data, slices):
    a = runend_encode(data)
    assert a.encoding == "vortex.runend"
    check_both_ways(a, data)
    check_slices(a, data, slices)


@pytest.mark.parametrize("t", INT_NP)
def test_runend_every_int_width(t):
    info = np.iinfo(t)
    data = pa.array(np.repeat(np.array([info.min, info.max, 0], dtype=t), [3, 300, 2]))
    a = runend_encode(data)
    ends, values, offset = runend_ends_values(a)
    assert len(values) == 3 and offset == 0 and ends.dtype.ptype == dt.PType.U16
    check_both_ways(a, data)


def test_runend_slice_moves_offset_and_trims_runs():
    data = pa.array(np.repeat(np.arange(10, dtype=np.int64), 10))
    a = runend_encode(data)
    s = a.slice(15, 47).slice(5, 20)
    ends, values, offset = runend_ends_values(s)
    assert offset == 20 and values.to_pylist() == [2, 3] and ends.to_pylist() == [30, 40]
    check_both_ways(s, data.slice(20, 15))


def test_runend_nested_values_decode():
    # runs of strings: values of any dtype decode through the shared gather
    ends = primitive_array(np.array([2, 5, 6], dtype=np.uint32))
    a = runend_array(ends, vio.array(pa.array(["aa", None, "c"])))
    check_both_ways(a, pa.array(["aa", "aa", None, None, None, "c"]))


def test_runend_empty_and_single():
    for data in (pa.array([], pa.int32()), pa.array([None], pa.float64()), pa.array([True])):
        check_both_ways(runend_encode(data), data)


# -- sequence -----------------------------------------------------------------------------


@given(st.sampled_from(INT_NP), st.integers(1, 400), st.data())
def test_sequence_roundtrip_both_ways(t, n, data):
    info = np.iinfo(t)
    step = data.draw(st.integers(max(info.min, -(2**20)), min(info.max, 2**20)).filter(lambda s: s != 0))
    # choose a base so that every value fits
    span = step * (n - 1)
    lo, hi = int(info.min) - min(span, 0), int(info.max) - max(span, 0)
    if lo > hi:
        return
    base = data.draw(st.integers(lo, hi))
    vals = (np.arange(n, dtype=object) * step + base).astype(t)
    arr = pa.array(vals)
    a = sequence_encode(arr)
    if n == 1:
        assert a.meta == SequenceMeta(base, 0)
    else:
        assert a is not None and a.meta == SequenceMeta(base, step)
    check_both_ways(a, arr)
    check_slices(a, arr, data.draw(cuts))


def test_sequence_rejects_non_sequences():
    assert sequence_encode(pa.array([1, 2, 4])) is None
    assert sequence_encode(pa.array([1, None, 3])) is None
    assert sequence_encode(pa.array([5, 5, 5])) is None  # constant: vortex.constant's job
    assert sequence_encode(pa.array([1.0, 2.0])) is None
    assert sequence_encode(pa.array([], pa.int8())) is None
    assert sequence_encode(pa.array(np.array([200, 100, 0], dtype=np.uint8))) is None  # step < 0


def test_sequence_nullable_dtype_and_ext():
    ts = pa.array(np.arange(50, dtype=np.int64) * 1000, pa.timestamp("us"))
    a = vio.array(ts)
    enc = sequence_encode(a.children[0])
    assert enc is not None and enc.dtype.nullable
    from vortex_io.encodings._ext import ext_array

    check_both_ways(ext_array(a.dtype, enc), ts)


def test_sequence_slice_stays_a_sequence():
    a = sequence_encode(pa.array(np.arange(100, dtype=np.int64) * -3))
    s = a.slice(10, 20)
    assert s.encoding == "vortex.sequence" and s.meta == SequenceMeta(-30, -3)
    assert a.slice(5, 5).encoding == "vortex.primitive"  # vortex-data refuses empty sequences


# -- sparse -------------------------------------------------------------------------------


@given(st.one_of(int_arrays(low_card=True), float_arrays(max_size=200), string_arrays(),
                 st.builds(lambda m: pa.array(m, pa.bool_()),
                           st.lists(st.one_of(st.none(), st.booleans()), max_size=50))),
       cuts)
def test_sparse_roundtrip_both_ways(data, slices):
    a = sparse_encode(data)
    assert a.encoding in ("vortex.sparse", "vortex.constant")
    check_both_ways(a, data)
    check_slices(a, data, slices)


@pytest.mark.parametrize("t", INT_NP)
def test_sparse_every_int_width(t):
    info = np.iinfo(t)
    vals = np.zeros(2000, dtype=t)
    vals[[3, 999, 1998]] = [info.min or 7, info.max, 1]
    data = pa.array(vals, mask=np.isin(np.arange(2000), [500]))
    a = sparse_encode(data)
    assert a.encoding == "vortex.sparse" and a.meta.len == 4
    check_both_ways(a, data)
    check_slices(a, data, [(0, 4), (4, 999), (600, 2000), (1000, 1998)])


def test_sparse_null_fill_and_explicit_fill():
    data = pa.array([None] * 50 + [3] + [None] * 10, pa.int64())
    a = sparse_encode(data)
    assert a.meta.len == 1
    check_both_ways(a, data)
    b = sparse_encode(pa.array([1, 2, 2, 1], pa.int32()), fill=1)
    assert b.meta.len == 2
    check_both_ways(b, pa.array([1, 2, 2, 1], pa.int32()))


def test_sparse_slice_without_patches_is_constant():
    a = sparse_encode(pa.array([0] * 100 + [5] + [0] * 100, pa.int64()))
    assert a.slice(0, 100).encoding == "vortex.constant"
    s = a.slice(90, 150)
    assert s.encoding == "vortex.sparse" and s.meta.offset == 90
    check_both_ways(s, pa.array([0] * 10 + [5] + [0] * 49, pa.int64()))


# -- alp ----------------------------------------------------------------------------------


@given(float_arrays(max_size=2500), cuts)
def test_alp_roundtrip_both_ways(data, slices):
    a = alp_encode(data)
    assert a.encoding == "vortex.alp"
    check_both_ways(a, data)
    check_slices(a, data, slices)


@pytest.mark.parametrize("t", FLOAT_NP)
def test_alp_specials_are_patches(t):
    vals = np.array([1.5, np.nan, -0.0, np.inf, -np.inf, 2.25, 0.0, 3.0], dtype=t)
    data = pa.array(vals, mask=np.array([0, 0, 0, 0, 0, 0, 1, 0], dtype=bool))
    a = alp_encode(data)
    assert a.meta.patches is not None and a.meta.patches.len == 4
    check_both_ways(a, data)


def test_alp_prices_choose_two_decimals():
    rng = np.random.default_rng(5)
    data = pa.array(np.round(rng.uniform(1, 1000, 5000), 2))
    a = alp_encode(data)
    assert a.meta.e - a.meta.f == 2 and a.meta.patches is None
    check_both_ways(a, data)


def test_alp_all_exceptions_and_empty():
    rng = np.random.default_rng(9)
    for data in (pa.array(rng.normal(size=100)), pa.array([], pa.float32()),
                 pa.array([None, None], pa.float64()), pa.array([np.nan], pa.float32())):
        check_both_ways(alp_encode(data), data)


@pytest.mark.parametrize("t", FLOAT_NP)
def test_alp_decode_bit_exact_with_vortex_data_for_every_exponent(t):
    """Random encoded ints under every valid (e, f), decoded by vortex-data and by us."""
    ip, mx = (np.int64, 18) if t == np.float64 else (np.int32, 10)
    rng = np.random.default_rng(77)
    big = 2**62 if t == np.float64 else 2**30
    enc = np.concatenate([rng.integers(-1000, 1000, 64), rng.integers(-big, big, 64),
                          [0, 1, -1, 12345, 999999]]).astype(ip)
    chunks, expected = [], []
    for e in range(mx + 1):
        for f in range(mx + 1):
            a = alp_array(primitive_array(enc), e, f)
            chunks.append(a)
            expected.append(a.to_numpy().view(np.uint64 if t == np.float64 else np.uint32))
    buf = io.BytesIO()
    with vio.StreamWriter(buf, chunks[0].dtype) as w:
        for c in chunks:
            w.write_batch(c)
    theirs = vx_decode_to_arrow(buf.getvalue())
    for c, exp, got in zip(chunks, expected, theirs):
        gb = _values_np(got)
        assert np.array_equal(gb, exp), f"e={c.meta.e} f={c.meta.f}"


# -- alprd --------------------------------------------------------------------------------


@given(float_arrays(max_size=2500), cuts)
def test_alprd_roundtrip_both_ways(data, slices):
    a = alprd_encode(data)
    assert a.encoding == "vortex.alprd"
    check_both_ways(a, data)
    check_slices(a, data, slices)


@pytest.mark.parametrize("t", FLOAT_NP)
def test_alprd_patches(t):
    rng = np.random.default_rng(3)
    vals = rng.normal(size=3000).astype(t)
    with np.errstate(over="ignore"):
        vals[::97] = rng.choice(SPECIALS, len(vals[::97])).astype(t)
    data = pa.array(vals)
    a = alprd_encode(data)
    assert a.meta.patches is not None and a.meta.patches.len > 0
    check_both_ways(a, data)
    check_slices(a, data, [(0, 1), (500, 2500), (2999, 3000)])


# -- bytebool -----------------------------------------------------------------------------


@given(st.lists(st.one_of(st.none(), st.booleans()), max_size=200), cuts)
def test_bytebool_roundtrip_both_ways(values, slices):
    data = pa.array(values, pa.bool_())
    a = bytebool_encode(data)
    assert a.encoding == "vortex.bytebool"
    check_both_ways(a, data)
    check_slices(a, data, slices)


def test_bytebool_nonzero_bytes_are_true():
    a = bytebool_array(np.array([0, 1, 2, 255], dtype=np.uint8))
    assert a.to_pylist() == [False, True, True, True]
    assert vx_decode_to_arrow(our_array_stream(a))[0].to_pylist() == [False, True, True, True]


@pytest.mark.parametrize("n", [0, 1, 1500])
@pytest.mark.parametrize("encode", [dict_encode, runend_encode, sparse_encode, alp_encode, alprd_encode,
                                    sequence_encode])
def test_non_nullable_inputs(encode, n):
    """Encoders keep a non-nullable dtype (and write nodes vortex-data accepts for it)."""
    floats = encode in (alp_encode, alprd_encode)
    vals = (np.round(np.arange(n) * 0.37, 2) if floats else np.arange(n, dtype=np.int32) // 7 * 7)
    if encode is sequence_encode:
        vals = np.arange(n, dtype=np.int32) * 5
    a = encode(primitive_array(vals))
    if a is None:  # sequence_encode of an empty array
        assert n == 0
        return
    assert a.dtype == dt.Primitive(dt.PType.F64 if floats else dt.PType.I32)
    check_both_ways(a, pa.array(vals))
    if encode is not sequence_encode:
        b = encode(bool_array(np.arange(n) % 3 == 0)) if encode in (dict_encode, runend_encode, sparse_encode) \
            else None
        if b is not None:
            assert b.dtype == dt.Bool()
            check_both_ways(b, pa.array(np.arange(n) % 3 == 0))


@pytest.mark.parametrize("vals", [[], ["a"], ["a", "b", "a", "a"]])
@pytest.mark.parametrize("encode", [dict_encode, sparse_encode])
def test_non_nullable_strings(encode, vals):
    a = encode(vio.array(pa.array(vals, pa.string()), dtype=dt.Utf8(False)))
    assert a.dtype == dt.Utf8(False)
    check_both_ways(a, pa.array(vals, pa.string()))


# -- vortex-data's compressor -> us --------------------------------------------------------


def _vx_cases():
    rng = np.random.default_rng(11)
    n = 2500  # two full FastLanes chunks and a partial one
    yield "prices", pa.array(np.round(rng.uniform(1, 1000, n), 2)), "vortex.alp"
    yield "normal", pa.array(rng.normal(size=3 * n)), "vortex.alprd"
    yield "dp1_nulls", pa.array(np.round(rng.uniform(0, 100, n), 1), mask=rng.random(n) < 0.1), "vortex.alp"
    yield "f32_small", pa.array(np.round(rng.uniform(0, 10, n), 2).astype(np.float32)), "vortex.alp"
    yield "f32_prices", pa.array(np.round(rng.uniform(1, 1000, n), 2).astype(np.float32)), None
    yield "runs100", pa.array(np.repeat(rng.integers(0, 1000, n // 100), 100)), "vortex.runend"
    yield "runs200_f64", pa.array(np.repeat(rng.normal(size=n // 100), 100)), "vortex.runend"
    yield "zeros98", pa.array(np.where(rng.random(n) < 0.98, 0, rng.integers(1, 1000, n))), "vortex.sparse"
    yield "utf8_low", pa.array([f"word{int(i)}" for i in rng.integers(0, 8, n)]), "vortex.dict"
    yield "utf8_low_nulls", pa.array([None if i == 0 else f"w{int(i)}" for i in rng.integers(0, 9, n)]), \
        "vortex.dict"
    yield "int_low_nulls", pa.array([None if i == 0 else int(i) * 99991 for i in rng.integers(0, 6, n)]), \
        "vortex.dict"
    yield "utf8_mostly_null", pa.array([None if rng.random() < 0.99 else f"s{int(i)}"
                                         for i in rng.integers(0, 10**6, 4 * n)]), "vortex.sparse"
    yield "i32_mostly_null", pa.array(rng.integers(0, 10**9, 4 * n).astype(np.int32),
                                      mask=rng.random(4 * n) < 0.99), "vortex.sparse"
    yield "arange", pa.array(np.arange(n, dtype=np.int64) * 3 + 1000), "vortex.sequence"
    yield "arange_u8", pa.array(np.arange(200, dtype=np.uint8)), "vortex.sequence"


@pytest.mark.parametrize("name,data,must_use", list(_vx_cases()), ids=[c[0] for c in _vx_cases()])
def test_vx_compressed_decodes(name, data, must_use):
    check_vx_compressed(data, must_use)


NUMERIC_NESTED = ["fastlanes.bitpacked", "fastlanes.for"]
STRING_NESTED = [*NUMERIC_NESTED, "vortex.fsst", "vortex.onpair"]


def test_vx_compressed_numbers_hypothesis():
    """Random numeric data through vortex-data's compressor decodes here."""
    require_registered(NUMERIC_NESTED)

    @given(st.one_of(run_arrays(), int_arrays(low_card=True, max_size=3000),
                     int_arrays(max_size=3000), float_arrays(max_size=3000)))
    def inner(data):
        check_vx_compressed(data)

    inner()


def test_vx_compressed_strings_hypothesis():
    require_registered(STRING_NESTED)

    @given(st.one_of(string_arrays(max_size=2000), string_arrays(max_size=2000, binary=True)))
    def inner(data):
        check_vx_compressed(data)

    inner()


# -- golden streams -----------------------------------------------------------------------


def _golden():
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    return sorted(manifest.items())


@pytest.mark.parametrize("name,info", _golden(), ids=[n for n, _ in _golden()])
def test_golden_stream(name, info):
    stream = (GOLDEN / f"{name}.vortex").read_bytes()
    encs = stream_encodings(stream)
    assert encs == set(info["encodings"])
    with pa.OSFile(str(GOLDEN / f"{name}.arrow"), "rb") as f:
        expected = pa.ipc.open_file(f).read_all().column("values")
    require_registered(encs)
    assert_same(read_ours(stream), expected)


# -- malformed input ----------------------------------------------------------------------


def _read_back(a: Array, **kw):
    """Write a hand-built (possibly invalid) node and read + decode it."""
    return vio.read_ipc(our_array_stream(a), **kw).to_arrow()


def _node(enc: str, d: dt.DType, n: int, meta: bytes, children=(), buffers=()) -> Array:
    return Array(enc, d, n, metadata=meta, children=children, buffers=buffers)


I64 = dt.Primitive(dt.PType.I64)
F64 = dt.Primitive(dt.PType.F64)


def _u(vals, t=np.uint8):
    return primitive_array(np.array(vals, dtype=t))


@pytest.mark.parametrize("build", [
    # dict: code out of range, codes not integers, nullable codes on a non-nullable dtype
    lambda: _node("vortex.dict", I64, 3, DictMeta(2, dt.PType.U8).encode(), [_u([0, 1, 2]), _u([1, 2], np.int64)]),
    lambda: _node("vortex.dict", I64, 2, DictMeta(2, dt.PType.I8).encode(),
                  [_u([0, -1], np.int8), _u([1, 2], np.int64)]),
    lambda: _node("vortex.dict", I64, 2, DictMeta(2, dt.PType.F32).encode(), [_u([0, 1], np.float32),
                                                                             _u([1, 2], np.int64)]),
    lambda: _node("vortex.dict", I64, 2, DictMeta(2, dt.PType.U8, True).encode(),
                  [primitive_array(np.array([0, 1], np.uint8), bool_array(np.array([True, False]))),
                   _u([1, 2], np.int64)]),
    lambda: _node("vortex.dict", I64, 2, DictMeta(2, dt.PType.U8).encode(), [_u([0, 1])]),
    # runend: ends not increasing, runs end too early, signed ends, offset past the end
    lambda: _node("vortex.runend", I64, 4, RunEndMeta(dt.PType.U8, 2, 0).encode(),
                  [_u([3, 2]), _u([1, 2], np.int64)]),
    lambda: _node("vortex.runend", I64, 4, RunEndMeta(dt.PType.U8, 2, 0).encode(),
                  [_u([1, 3]), _u([1, 2], np.int64)]),
    lambda: _node("vortex.runend", I64, 2, RunEndMeta(dt.PType.I8, 1, 0).encode(),
                  [_u([2], np.int8), _u([1], np.int64)]),
    lambda: _node("vortex.runend", I64, 2, RunEndMeta(dt.PType.U8, 1, 1).encode(),
                  [_u([2]), _u([1], np.int64)]),
    lambda: _node("vortex.runend", I64, 2, RunEndMeta(dt.PType.U8, 0, 0).encode(),
                  [_u([]), _u([], np.int64)]),
    # sequence: overflow, float dtype, missing multiplier
    lambda: _node("vortex.sequence", dt.Primitive(dt.PType.U8), 3, SequenceMeta(200, 30).encode(dt.PType.U8)),
    lambda: _node("vortex.sequence", F64, 3, SequenceMeta(1, 1).encode(dt.PType.I64)),
    lambda: _node("vortex.sequence", I64, 3, b"\x0a\x02\x18\x02"),
    lambda: _node("vortex.sequence", dt.Primitive(dt.PType.I8), 3, SequenceMeta(1000, 1).encode(dt.PType.I64)),
    # sparse: index out of range, unsorted, signed indices, no buffer
    lambda: sparse_array(_u([5]), _u([1], np.int64), 4, 0),
    lambda: sparse_array(_u([2, 1]), _u([1, 2], np.int64), 4, 0),
    lambda: _node("vortex.sparse", I64, 4,
                  b"\x0a" + bytes([len(PatchesMeta(1, 0, dt.PType.I8).encode())]) + PatchesMeta(1, 0, dt.PType.I8).encode(),
                  [_u([1], np.int8), _u([1], np.int64)], [np.frombuffer(b"\x18\x00", np.uint8)]),
    lambda: _node("vortex.sparse", I64, 4, b"", [_u([1]), _u([1], np.int64)], [np.frombuffer(b"\x18\x00", np.uint8)]),
    # alp: exponent out of range, wrong encoded type, missing patch children
    lambda: _node("vortex.alp", F64, 2, ALPMeta(19, 0).encode(), [_u([1, 2], np.int64)]),
    lambda: _node("vortex.alp", dt.Primitive(dt.PType.F32), 2, ALPMeta(11, 0).encode(), [_u([1, 2], np.int32)]),
    lambda: _node("vortex.alp", F64, 2, ALPMeta(2, 0, PatchesMeta(1, 0, dt.PType.U8)).encode(),
                  [_u([1, 2], np.int64)]),
    lambda: _node("vortex.alp", F64, 2, ALPMeta(2, 0, PatchesMeta(1, 0, dt.PType.U8)).encode(),
                  [_u([1, 2], np.int64), _u([7]), primitive_array(np.array([1.5]))]),
    # alprd: code past the dictionary, right width too large, dict_len past the entries
    lambda: _node("vortex.alprd", F64, 2, ALPRDMeta(52, (1023,)).encode(),
                  [_u([0, 1], np.uint16), _u([0, 0], np.uint64)]),
    lambda: _node("vortex.alprd", F64, 2, ALPRDMeta(64, (1,)).encode(),
                  [_u([0, 0], np.uint16), _u([0, 0], np.uint64)]),
    lambda: _node("vortex.alprd", F64, 2, b"\x08\x34\x10\x03\x1a\x01\x01\x20\x01",
                  [_u([0, 0], np.uint16), _u([0, 0], np.uint64)]),
    # bytebool: buffer length, metadata
    lambda: _node("vortex.bytebool", dt.Bool(), 3, b"", buffers=[np.zeros(2, np.uint8)]),
    lambda: _node("vortex.bytebool", dt.Bool(), 2, b"\x08\x01", buffers=[np.zeros(2, np.uint8)]),
])
def test_malformed_nodes_raise_vortex_errors(build):
    with pytest.raises(VortexIPCError) as ei:
        _read_back(build())
    assert isinstance(ei.value, (MalformedStreamError, LimitExceededError)), type(ei.value)


def test_dict_expansion_is_bounded():
    a = dict_encode(pa.array(["a"] * 10_000))
    with pytest.raises(LimitExceededError):
        _read_back(a, limits=vio.ReaderLimits(max_decoded_bytes=1000))


def test_dict_null_codes_may_hold_garbage():
    codes = primitive_array(np.array([0, 200, 1], np.uint8), bool_array(np.array([True, False, True])),
                            nullable=True)
    a = dict_array(codes, primitive_array(np.array([5, 6], np.int64), nullable=True))
    check_both_ways(a, pa.array([5, None, 6], pa.int64()))
