"""FastLanes encodings: ``fastlanes.bitpacked``, ``fastlanes.for``, ``fastlanes.delta``,
``fastlanes.rle`` and ``vortex.zigzag``.

* The bit-packing layout is checked against a bit-by-bit pure-Python packer written from
  the reference notes (independent of the vectorized kernels), and the kernels' two
  unpack paths (per-row planes, gathers) and random access against each other.
* vortex-data -> us: streams its compressor writes (live, hypothesis-generated, and the
  committed golden streams of ``tests/golden/fastlanes``), slices it makes, and
  ``ZigZagArray.encode`` output decode to the source values.
* us -> vortex-data: every encoder's output, and slices of it, written with
  ``StreamWriter`` as built, decode in vortex-data to the source values.
* The bit width our encoder picks equals vortex-data's on the same data.
* Malformed nodes raise ``MalformedStreamError``, never IndexError & co.

Expected values are always the source Arrow data (Arrow equality ignores slots under nulls).
"""

from __future__ import annotations

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
from vortex_io._errors import MalformedStreamError
from vortex_io.encodings import _fastlanes_layout as fl
from vortex_io.encodings._bitpacked import (
    BitPackedMeta,
    best_bit_width,
    bit_length_histogram,
    bitpack,
    bitpacked_array,
    bitpacked_take,
)
from vortex_io.encodings._delta import DeltaMeta, delta_encode
from vortex_io.encodings._for import for_array, for_encode
from vortex_io.encodings._primitive import primitive_array
from vortex_io.encodings._rle import RLEMeta, rle_encode
from vortex_io.encodings._zigzag import zigzag_array, zigzag_encode

from .vx_util import our_array_stream, serde, vx, vx_decode_to_arrow, vx_stream

GOLDEN_DIR = Path(__file__).parent / "golden" / "fastlanes"
INT_TYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64]
FAST = ("fastlanes.bitpacked", "fastlanes.for", "fastlanes.delta", "fastlanes.rle",
        "vortex.zigzag")


def _encodings(a: Array) -> set[str]:
    out = {a.encoding}
    for c in a.children:
        out |= _encodings(c)
    return out


def _read(stream: bytes) -> pa.Array:
    a = vio.read_ipc(stream).to_arrow()
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def _vx_read(array: Array) -> pa.Array:
    (got,) = vx_decode_to_arrow(our_array_stream(array))
    return got


def _check_both_ways(enc: Array, expected: pa.Array) -> None:
    """Our decode and vortex-data's decode of ``enc`` both give ``expected``."""
    ours = enc.to_arrow()
    assert ours.equals(expected), (ours, expected)
    assert _read(our_array_stream(enc)).equals(expected)
    theirs = _vx_read(enc)
    assert theirs.equals(expected), (theirs, expected)


def _ints(rng: np.random.Generator, t, n: int, bits: int) -> np.ndarray:
    """n values of integer type t below 2**bits (non-negative)."""
    w = np.dtype(t).itemsize * 8
    bits = min(bits, w - (1 if np.dtype(t).kind == "i" else 0))
    if bits == 0:
        return np.zeros(n, dtype=t)
    hi = (1 << bits) - 1
    return rng.integers(0, hi, n, dtype=np.uint64, endpoint=True).astype(t)


# -- 1. the layout ------------------------------------------------------------------------


@pytest.mark.parametrize("w", [8, 16, 32, 64])
def test_layout_tables_are_permutations(w):
    t = fl.unpack_index(w)
    assert t.shape == (w, 1024 // w)
    assert sorted(t.ravel().tolist()) == list(range(1024))
    row, lane = fl.inverse_index(w)
    assert (t[row, lane] == np.arange(1024)).all()
    tr = fl.transpose_index()
    assert sorted(tr.tolist()) == list(range(1024))
    # the documented formula, spot-checked by hand: row 8 of lane 0 is FL_ORDER[1] * 16 = 64
    if w >= 16:
        assert t[8, 0] == 64 and t[1, 0] == 128 and t[0, 3] == 3


def _reference_pack(values: list[int], w: int, b: int) -> list[int]:
    """One chunk packed bit by bit, as the reference notes describe the layout."""
    lanes = 1024 // w
    words = [0] * (1024 * b // w)
    for lane in range(lanes):
        for r in range(w):
            v = values[fl.FL_ORDER[r // 8] * 16 + (r % 8) * 128 + lane] & ((1 << b) - 1)
            for bit in range(b):
                pos = r * b + bit  # bit position in the lane's stream
                if v >> bit & 1:
                    words[lane + lanes * (pos // w)] |= 1 << (pos % w)
    return words


@pytest.mark.parametrize(("w", "b"), [(8, 3), (16, 5), (16, 16), (32, 7), (32, 17), (64, 1),
                                      (64, 29), (64, 63)])
def test_pack_matches_bit_by_bit_reference(w, b):
    rng = np.random.default_rng(w * 100 + b)
    ut = fl.UNSIGNED[w]
    v = rng.integers(0, np.iinfo(ut).max, 1024, dtype=ut, endpoint=True)
    ref = _reference_pack([int(x) for x in v], w, b)
    packed = fl.pack(v, b)
    assert packed.dtype == ut
    assert packed.tolist() == ref
    assert (fl.unpack(packed, w, b, 1) == (v & ut.type((1 << b) - 1))).all()


@given(w=st.sampled_from([8, 16, 32, 64]), data=st.data(),
       nchunks=st.sampled_from([1, 2, 7, 8, 9, 17, 65]))
def test_unpack_paths_and_random_access_agree(w, data, nchunks):
    b = data.draw(st.integers(0, w))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32)))
    ut = fl.UNSIGNED[w]
    v = rng.integers(0, (1 << b) - 1 if b else 0, nchunks * 1024, dtype=ut, endpoint=True)
    words = fl.pack(v, b)
    assert len(words) == nchunks * 1024 * b // w
    assert (fl.unpack(words, w, b, nchunks) == v).all()
    assert (fl.unpack_rows(words, w, b, nchunks) == fl.chunk_rows(v, w, nchunks)).all()
    pos = rng.integers(0, nchunks * 1024, 100)
    assert (fl.unpack_at(words, w, b, pos) == v[pos]).all()


# -- 2. vortex-data -> us: golden streams --------------------------------------------------


def _golden_names() -> list[str]:
    return sorted(json.loads((GOLDEN_DIR / "manifest.json").read_text()))


def test_golden_covers_the_fastlanes_encodings():
    manifest = json.loads((GOLDEN_DIR / "manifest.json").read_text())
    seen = set().union(*(set(e["encodings"]) for e in manifest.values()))
    assert {"fastlanes.bitpacked", "fastlanes.for", "vortex.zigzag"} <= seen
    for name in manifest:
        for ext in (".vortex", ".arrow"):
            f = GOLDEN_DIR / f"{name}{ext}"
            assert f.is_file() and 0 < f.stat().st_size <= 64_000, f


@pytest.mark.parametrize("name", _golden_names())
def test_golden_stream(name):
    entry = json.loads((GOLDEN_DIR / "manifest.json").read_text())[name]
    with pa.ipc.open_file(GOLDEN_DIR / f"{name}.arrow") as f:
        expected = [f.get_batch(i).column(0) for i in range(f.num_record_batches)]
    with vio.StreamReader(GOLDEN_DIR / f"{name}.vortex") as r:
        batches = list(r)
    assert len(batches) == entry["messages"] == len(expected)
    seen: set[str] = set()
    for b, e in zip(batches, expected):
        got = b.array.to_arrow()
        assert got.type == e.type
        assert got.equals(e), name
        seen |= _encodings(b.array)
    assert seen == set(entry["encodings"])


# -- 3. vortex-data -> us: live ------------------------------------------------------------


@st.composite
def int_arrays(draw, min_len=0, max_len=2500):
    """(pa.Array of some integer type with a chosen bit width, nulls and outliers, rng)."""
    t = draw(st.sampled_from(INT_TYPES))
    w = np.dtype(t).itemsize * 8
    n = draw(st.integers(min_len, max_len))
    bits = draw(st.integers(0, w))
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    v = _ints(rng, t, n, bits)
    if draw(st.booleans()) and n:
        info = np.iinfo(t)
        out = rng.random(n) < 0.01
        v[out] = rng.integers(info.min, info.max, int(out.sum()), dtype=t, endpoint=True)
    mask = rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.9])) if draw(st.booleans()) else None
    return pa.array(v, mask=mask), rng


@given(int_arrays())
def test_vortex_compressor_output_decodes(arg):
    a, _ = arg
    assert _read(vx_stream(a, compress=True)).equals(a)


@given(int_arrays(min_len=1100), st.data())
def test_vortex_slices_decode(arg, data):
    a, _ = arg
    n = len(a)
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start, n))
    c = vx.compress(vx.array(a))
    try:
        s = c.slice(start, stop)
        array_parts, dtype_parts = serde.encode_ipc_array_buffers(s)
    except RuntimeError:  # vortex-data cannot serialize some lazy slices (e.g. patched)
        return
    stream = b"".join(bytes(x) for x in dtype_parts) + b"".join(bytes(x) for x in array_parts)
    assert _read(stream).equals(a.slice(start, stop - start))


@pytest.mark.parametrize("t", [np.int8, np.int16, np.int32, np.int64])
def test_vortex_zigzag_decodes(t):
    rng = np.random.default_rng(7)
    info = np.iinfo(t)
    for n in (0, 1, 1023, 2050):
        a = pa.array(rng.integers(info.min, info.max, n, dtype=t, endpoint=True),
                     mask=rng.random(n) < 0.2)
        z = vx.ZigZagArray.encode(vx.array(a))
        array_parts, dtype_parts = serde.encode_ipc_array_buffers(z)
        stream = b"".join(bytes(x) for x in dtype_parts) + b"".join(bytes(x) for x in array_parts)
        got = vio.read_ipc(stream)
        assert got.encoding == "vortex.zigzag"
        assert got.to_arrow().equals(a)


def test_bit_width_choice_matches_vortex():
    rng = np.random.default_rng(11)
    checked = 0
    for t, lo, hi, outliers in [(np.int64, 0, 100, 0.0), (np.uint32, 0, 5000, 0.0),
                                (np.int64, 0, 64, 0.01), (np.uint16, 0, 1000, 0.02),
                                (np.int32, 0, 1 << 17, 0.0), (np.uint64, 0, 1 << 35, 0.005)]:
        v = rng.integers(lo, hi, 20_000).astype(t)
        out = rng.random(len(v)) < outliers
        v[out] = np.iinfo(t).max // 3
        c = vx.compress(vx.array(pa.array(v)))
        if "bitpacked" not in c.display_tree().splitlines()[0]:
            continue
        ours = bitpack(vio.array(pa.array(v)))
        assert ours.meta.bit_width == c.bit_width
        n_patches = ours.meta.patches.len if ours.meta.patches else 0
        assert n_patches == int((v > (1 << c.bit_width) - 1).sum())
        checked += 1
    assert checked >= 5


def test_best_bit_width_cost_model():
    # 1000 values of 3 bits and 10 of 40 bits, u64 (12 bytes per exception)
    h = np.zeros(65, dtype=np.int64)
    h[3], h[40] = 1000, 10
    assert best_bit_width(h, 8) == 3  # 1010*3/8 + 10*12 bytes beats 1010*40/8
    h[40] = 700  # 1700*3/8 + 700*12 = 9038 > 1700*40/8 = 8500
    assert best_bit_width(h, 8) == 40
    assert best_bit_width(np.zeros(33, np.int64), 4) == 0
    u = np.array([0, 1, 2, 3, 4, 255, 2**40, 2**64 - 1], dtype=np.uint64)
    assert bit_length_histogram(u)[[0, 1, 2, 3, 8, 41, 64]].tolist() == [1, 1, 2, 1, 1, 1, 1]


# -- 4. us -> vortex-data ------------------------------------------------------------------


@pytest.mark.parametrize("t", INT_TYPES)
def test_bitpack_every_bit_width(t):
    """Every width 0..W, with a chunk tail, nulls, a slice with an offset, and patches."""
    w = np.dtype(t).itemsize * 8
    rng = np.random.default_rng(w)
    info = np.iinfo(t)
    for b in range(w + 1):
        v = _ints(rng, t, 1100, b)
        v[rng.random(1100) < 0.01] = info.max if b < w else 0  # patches unless b == W
        if info.min < 0 and b < w:
            v[5] = info.min
        a = pa.array(v, mask=rng.random(1100) < 0.1)
        enc = bitpack(vio.array(a), b)
        assert enc.meta.bit_width == b
        assert enc.buffers[0].nbytes == 2 * 128 * b
        _check_both_ways(enc, a)
        _check_both_ways(enc.slice(1030, 1099), a.slice(1030, 69))


@given(int_arrays(), st.data())
def test_bitpack_roundtrip_slices_and_take(arg, data):
    a, rng = arg
    enc = bitpack(vio.array(a))
    assert enc.encoding == "fastlanes.bitpacked"
    _check_both_ways(enc, a)
    n = len(a)
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    s = enc.slice(start, stop)
    _check_both_ways(s, a.slice(start, stop - start))
    s2 = s.slice(0, (stop - start) // 2)  # a slice of a slice keeps the offset right
    _check_both_ways(s2, a.slice(start, (stop - start) // 2))
    if len(s):
        idx = rng.integers(0, len(s), 200)
        tk = bitpacked_take(s, idx)
        assert tk.to_arrow().equals(a.slice(start, stop - start).take(pa.array(idx)))
    assert len(bitpacked_take(enc, np.zeros(0, np.int64))) == 0


def test_bitpacked_take_accepts_a_mask_and_checks_bounds():
    a = pa.array(np.arange(3000, dtype=np.int32) % 50, mask=np.arange(3000) % 7 == 0)
    enc = bitpack(vio.array(a), 4)  # 50..49 -> patches
    m = np.arange(3000) % 3 == 0
    assert bitpacked_take(enc, m).to_arrow().equals(a.filter(pa.array(m)))
    with pytest.raises(IndexError):
        bitpacked_take(enc, [3000])
    with pytest.raises(IndexError):
        bitpacked_take(enc, [-1])


def test_bitpack_without_patches_refuses_outliers():
    a = vio.array(pa.array([1, 2, 300], pa.int32()))
    with pytest.raises(ValueError, match="do not fit"):
        bitpack(a, 4, patches=False)
    with pytest.raises(ValueError, match="outside"):
        bitpack(a, 33)
    with pytest.raises(TypeError):
        bitpack(vio.array(pa.array([1.5])))


@pytest.mark.parametrize("n", [0, 1, 2])
@pytest.mark.parametrize("encoder", ["bitpack", "for", "delta", "zigzag", "rle"])
def test_tiny_arrays(encoder, n):
    for nullable in (False, True):
        a = pa.array(np.arange(n, dtype=np.int32) - 1, mask=np.ones(n, bool) if nullable else None)
        enc = {"bitpack": bitpack, "for": for_encode, "delta": delta_encode,
               "zigzag": zigzag_encode, "rle": rle_encode}[encoder](vio.array(a))
        _check_both_ways(enc, a)


@given(int_arrays(), st.data(), st.sampled_from(["for", "delta", "zigzag", "rle"]))
def test_encoders_roundtrip_and_slices(arg, data, encoder):
    a, _ = arg
    if encoder == "zigzag" and not pa.types.is_signed_integer(a.type):
        a = a.cast(pa.int64(), safe=False)  # u64 wraps: fine, it is just data
    if encoder == "delta" and data.draw(st.booleans()):  # sorted: the case delta is for
        a = pa.array(np.sort(a.fill_null(0).to_numpy()), a.type,
                     mask=a.is_null().to_numpy(zero_copy_only=False))
    fn = {"for": for_encode, "delta": delta_encode, "zigzag": zigzag_encode, "rle": rle_encode}
    enc = fn[encoder](vio.array(a))
    assert enc.encoding in FAST
    _check_both_ways(enc, a)
    n = len(a)
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    _check_both_ways(enc.slice(start, stop), a.slice(start, stop - start))


def test_for_wraps_in_the_type_width():
    for t in INT_TYPES:
        info = np.iinfo(t)
        a = pa.array(np.array([info.min, info.max, info.min + 1, 0], dtype=t))
        enc = for_encode(vio.array(a))
        assert enc.meta == int(info.min)
        _check_both_ways(enc, a)
        _check_both_ways(for_encode(vio.array(a), bitpack=False), a)


def test_delta_of_sorted_data_is_small():
    v = np.cumsum(np.random.default_rng(3).integers(0, 50, 5000)).astype(np.int64)
    enc = delta_encode(vio.array(pa.array(v)))
    assert enc.children[1].meta.bit_width <= 6
    assert len(enc.children[0]) == 5 * 16
    _check_both_ways(enc, pa.array(v))


def test_rle_floats_compare_by_bits():
    v = np.repeat(np.array([np.nan, -0.0, 0.0, np.inf, 1.5]), 300)
    a = pa.array(v)
    enc = rle_encode(vio.array(a))
    assert len(enc.children[0]) == 5 + 1  # one run continues into chunk 2
    got = enc.to_numpy()
    assert got.view(np.uint64).tolist() == v.view(np.uint64).tolist()
    assert _vx_read(enc).to_numpy().view(np.uint64).tolist() == v.view(np.uint64).tolist()


def test_decoding_stays_lazy_and_for_does_not_cache_its_child():
    a = pa.array(np.arange(5000, dtype=np.int64) + 10**9)
    enc = for_encode(vio.array(a))
    got = vio.read_ipc(our_array_stream(enc))
    assert got.encoding == "fastlanes.for" and "canonical" not in got._cache
    assert got.to_arrow().equals(a)
    assert "canonical" not in got.children[0]._cache
    assert got.children[0].to_arrow().equals(pa.array(np.arange(5000, dtype=np.int64)))


# -- 5. malformed input ---------------------------------------------------------------------


def _with_metadata(a: Array, raw: bytes) -> Array:
    b = Array(a.vtable, a.dtype, len(a), metadata=raw, buffers=a.buffers, children=a.children)
    b._cache["meta"] = a.meta
    return b


def _bp(n=2000, b=5, t=np.uint32) -> Array:
    return bitpack(vio.array(pa.array(np.arange(n, dtype=t) % 20)), b)


def _malformed_cases() -> dict[str, Array]:
    bp = _bp()
    u8 = dt.Primitive(dt.PType.U32)
    cases = {
        "bitpacked: width over type": _with_metadata(bp, BitPackedMeta(33).encode()),
        "bitpacked: offset 1024": _with_metadata(bp, BitPackedMeta(5, 1024).encode()),
        "bitpacked: short buffer": bitpacked_array(bp.buffers[0][:-4], u8, 2000, 5),
        "bitpacked: long buffer": bitpacked_array(np.zeros(129 * 5, np.uint8), u8, 1024, 5),
        "bitpacked: garbage metadata": _with_metadata(bp, b"\xff\xff"),
        "bitpacked: float dtype": Array(bp.vtable, dt.Primitive(dt.PType.F32), 2000,
                                        metadata=bp.metadata, buffers=bp.buffers),
        "for: empty reference": _with_metadata(for_encode(vio.array(pa.array([1, 2]))), b""),
        "for: null reference": _with_metadata(
            for_encode(vio.array(pa.array([1, None]))), b"\x08\x00"),
        "delta: unpadded": _with_metadata(delta_encode(vio.array(pa.array([1, 2]))),
                                          DeltaMeta(1000, 0).encode()),
        "delta: offset past deltas": _with_metadata(delta_encode(vio.array(pa.array([1, 2]))),
                                                    DeltaMeta(1024, 1023).encode()),
        "zigzag: unsigned dtype": zigzag_array(primitive_array(np.zeros(3, np.uint32)),
                                               dt.Primitive(dt.PType.U32)),
        "zigzag: metadata": Array(zigzag_encode(vio.array(pa.array([1, -1]))).vtable,
                                  dt.Primitive(dt.PType.I64), 2, metadata=b"\x08\x01",
                                  children=[primitive_array(np.zeros(2, np.uint64))]),
    }
    r = rle_encode(vio.array(pa.array(np.repeat([1, 2, 3], 500))))
    bad_idx = primitive_array(np.full(2048, 7, np.uint8))  # chunk 0 has 2 runs
    cases["rle: index past runs"] = Array(r.vtable, r.dtype, len(r), metadata=RLEMeta(
        len(r.children[0]), 2048, dt.PType.U8, 2, dt.PType.U64).encode(),
        children=[r.children[0], bad_idx, r.children[2]])
    cases["rle: offset 1024"] = _with_metadata(r, RLEMeta(4, 2048, dt.PType.U8, 2, dt.PType.U64,
                                                          1024).encode())
    cases["rle: signed indices"] = _with_metadata(r, RLEMeta(4, 2048, dt.PType.I16, 2,
                                                             dt.PType.U64).encode())
    cases["for: child type"] = for_array(primitive_array(np.zeros(3, np.int32)), 1,
                                         dt.Primitive(dt.PType.I64))
    return cases


@pytest.mark.parametrize("case", sorted(_malformed_cases()))
def test_malformed_nodes_raise_malformed_stream_error(case):
    node = _malformed_cases()[case]
    stream = our_array_stream(node)
    with pytest.raises(MalformedStreamError):
        vio.read_ipc(stream).to_arrow()


@pytest.mark.parametrize("bitpacked", [True, False])
@pytest.mark.parametrize("nulls", [False, True])
def test_delta_take_few_and_most_chunks_at_offsets(bitpacked, nulls):
    """Both take paths of fastlanes.delta (most chunks: the whole row grid; few: only the
    needed chunks' deltas), on slices that start mid-chunk, equal Arrow's take."""
    rng = np.random.default_rng(7)
    v = np.cumsum(rng.integers(0, 1 << 20, 10_000)).astype(np.int64)
    mask = rng.random(len(v)) < 0.1 if nulls else None
    a = pa.array(v, mask=mask)
    enc = delta_encode(vio.array(a), bitpack=bitpacked)
    for start, stop in ((0, len(v)), (1500, 9000), (2047, 2049), (3000, 3000 + 1024)):
        s = enc.slice(start, stop)
        ref = a.slice(start, stop - start)
        n = stop - start
        for idx in (np.arange(n)[::7], np.array([n - 1, 0, n // 2, 0]),
                    rng.integers(0, n, 50), np.array([0]), np.arange(min(n, 40))):
            got = s.vtable.take(s, idx.astype(np.int64))
            assert got.to_arrow().equals(ref.take(pa.array(idx))), (start, stop, idx[:5])


def test_delta_take_nothing():
    enc = delta_encode(vio.array(pa.array([5], pa.int8())))
    assert len(enc.vtable.take(enc, np.zeros(0, np.int64))) == 0
    assert len(enc.slice(0, 1).vtable.take(enc, np.zeros(0, np.int64))) == 0
