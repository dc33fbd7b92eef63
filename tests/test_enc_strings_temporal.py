"""String and temporal encodings: ``vortex.fsst``, ``vortex.onpair``, ``vortex.datetimeparts``,
``vortex.decimal_byte_parts``, ``vortex.zstd``.

Checked in both directions against vortex-data 0.93:

* us -> vortex-data: arrays our encoders build (and slices of them) are written with
  ``StreamWriter`` exactly as built and decoded by vortex-data to the source values.
* vortex-data -> us: streams its compressor writes (generated here with hypothesis, and the
  committed golden streams of ``tests/golden/strings_temporal``, see
  ``make_strings_temporal.py``) decode here to the source values. A test skips only while
  an encoding ID its stream uses is not registered (vortex-data nests fastlanes.* and
  vortex.dict inside these encodings).
* malformed nodes raise ``VortexIPCError`` subclasses naming the problem.

Expected values are always the source Arrow data (or pyarrow's view of it).
"""

from __future__ import annotations

import decimal
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io import dtype as dt
from vortex_io._array import Array
from vortex_io._errors import LimitExceededError, MalformedStreamError, UnsupportedError
from vortex_io._ipc.framing import MessageDecoder
from vortex_io._ipc.schema import MessageType
from vortex_io._proto import ProtoWriter
from vortex_io.encodings._datetimeparts import datetimeparts_encode
from vortex_io.encodings._decimal_byte_parts import decimal_byte_parts_encode
from vortex_io.encodings._fsst import (
    SymbolTable,
    fsst_compress,
    fsst_decompress,
    fsst_encode,
    fsst_train,
    string_parts,
)
from vortex_io.encodings._onpair import onpair_decompress, onpair_encode
from vortex_io.encodings._primitive import primitive_array
from vortex_io.encodings._zstd import zstd_encode

from .vx_util import our_array_stream, vx_decode_to_arrow, vx_stream

GOLDEN = Path(__file__).parent / "golden" / "strings_temporal"

# -- helpers ------------------------------------------------------------------------------


def _combined(a):
    return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a


def assert_same(got, expected) -> None:
    """Same length, nulls and values (after casting to the expected Arrow type)."""
    got, expected = _combined(got), _combined(expected)
    assert len(got) == len(expected)
    if got.type != expected.type:
        got = got.cast(expected.type)
    assert got.is_valid().to_pylist() == expected.is_valid().to_pylist(), "null positions differ"
    if pa.types.is_timestamp(expected.type):  # compare the ticks (no datetime range limits)
        got, expected = got.cast(pa.int64()), expected.cast(pa.int64())
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


def read_ours(stream: bytes):
    return vio.read_ipc(stream).to_arrow()


def check_both_ways(a: Array, expected: pa.Array) -> None:
    """Our decode, vortex-data's decode of our bytes, and our decode of our bytes."""
    assert_same(a.to_arrow(), expected)
    stream = our_array_stream(a)
    assert_same(vx_decode_to_arrow(stream)[0], expected)
    assert_same(read_ours(stream), expected)


def check_vx_compressed(data: pa.Array) -> set[str]:
    """vortex-data's compressor output decodes here to the source values."""
    stream = vx_stream(data, compress=True)
    encs = stream_encodings(stream)
    require_registered(encs)
    assert_same(read_ours(stream), data)
    return encs


def _cuts(n: int, data) -> list[tuple[int, int]]:
    i = data.draw(st.integers(0, n), label="start")
    j = data.draw(st.integers(i, n), label="stop")
    return [(i, j), (0, min(n, 1)), (n, n)]


# -- golden streams written by vortex-data ----------------------------------------------


def _golden_names() -> list[str]:
    return sorted(json.loads((GOLDEN / "manifest.json").read_text()))


def test_golden_streams_cover_every_encoding():
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    used = set().union(*(set(v["encodings"]) for v in manifest.values()))
    for enc in ("vortex.fsst", "vortex.onpair", "vortex.datetimeparts",
                "vortex.decimal_byte_parts", "vortex.zstd"):
        assert enc in used
    # at least one stream per encoding needs nothing beyond canonical children
    canonical = {"vortex.primitive", "vortex.bool", "vortex.constant", "vortex.dict"}
    assert any(set(v["encodings"]) <= canonical | {"vortex.fsst"} for v in manifest.values())


@pytest.mark.parametrize("name", _golden_names())
def test_golden_stream(name):
    stream = (GOLDEN / f"{name}.vxipc").read_bytes()
    require_registered(stream_encodings(stream))
    with pa.ipc.open_file(str(GOLDEN / f"{name}.arrow")) as f:
        expected = f.read_all().column("values").combine_chunks()
    with vio.StreamReader(stream) as r:
        batches = list(r)
    assert len(batches) == 1
    a = batches[0].array
    assert_same(a.to_arrow(), expected)
    n = len(a)
    for i, j in ((0, 1), (n // 3, 2 * n // 3), (n - 5, n), (7, 7)):
        assert_same(a.slice(i, j).to_arrow(), expected.slice(i, j - i))


# -- FSST -----------------------------------------------------------------------------------

texts = st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=300)
blobs = st.lists(
    st.one_of(st.none(), st.binary(max_size=40),
              st.lists(st.sampled_from([0, 1, 255, 97]), max_size=20).map(bytes)),
    max_size=300)


@given(texts, st.data())
def test_fsst_encode_decodes_in_vortex_data(values, data):
    arr = pa.array(values, pa.string())
    a = fsst_encode(vio.array(arr))
    assert a.encoding == "vortex.fsst"
    check_both_ways(a, arr)
    for i, j in _cuts(len(arr), data):
        check_both_ways(a.slice(i, j), arr.slice(i, j - i))


@given(blobs, st.integers(0, 5))
def test_fsst_binary_with_escapes_and_sliced_input(values, off):
    arr = pa.array(values, pa.binary()).slice(min(off, len(values)))
    a = fsst_encode(vio.array(arr))
    check_both_ways(a, arr)


def test_fsst_empty_single_long_and_all_null():
    for values in ([], [""], ["x"], [None], [None] * 5, ["a" * 10_000, "", "b" * 3],
                   ["\xff\xff€" * 50] * 30):
        arr = pa.array(values, pa.string())
        check_both_ways(fsst_encode(vio.array(arr)), arr)


def test_fsst_compresses_repetitive_text():
    rng = np.random.default_rng(3)
    words = ["alpha", "beta", "gamma", "delta", "http://www.", ".com/"]
    values = ["".join(rng.choice(words, 8)) for _ in range(5000)]
    arr = pa.array(values)
    a = fsst_encode(vio.array(arr))
    raw = sum(len(v) for v in values)
    assert a.buffers[2].nbytes < raw / 2.5, (a.buffers[2].nbytes, raw)
    check_both_ways(a, arr)


def test_fsst_symbol_table_order_and_explicit_table():
    t = SymbolTable.from_bytes([b"x", b"hello", b"he", b"ll", b"o"])
    assert t.to_bytes() == [b"he", b"ll", b"hello", b"o", b"x"]
    rng = np.random.default_rng(0)
    data = np.frombuffer(b"hellohello", dtype=np.uint8)
    table = fsst_train(data, np.array([0, 5, 10]))
    lens = table.lengths
    multi = lens[lens > 1]
    assert list(multi) == sorted(multi) and (lens[len(multi):] == 1).all()
    arr = pa.array(["hello", "hex", "".join(rng.choice(list("helo"), 30))])
    check_both_ways(fsst_encode(vio.array(arr), t), arr)


def test_fsst_training_is_deterministic():
    rng = np.random.default_rng(9)
    arr = pa.array([f"user{rng.integers(0, 999)}@example.com" for _ in range(2000)])
    a, b = fsst_encode(vio.array(arr)), fsst_encode(vio.array(arr))
    assert all(np.array_equal(x, y) for x, y in zip(a.buffers, b.buffers))


@given(st.lists(st.binary(max_size=30), max_size=50),
       st.lists(st.binary(min_size=1, max_size=8), max_size=40))
def test_fsst_decompress_inverts_compress_for_any_table(rows, symbols):
    table = SymbolTable.from_bytes(symbols[:255])
    data = np.frombuffer(b"".join(rows), dtype=np.uint8)
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
    codes, co = fsst_compress(table, data, offsets)
    assert co[0] == 0 and co[-1] == len(codes) and (np.diff(co) >= 0).all()
    out = fsst_decompress(table.symbols, table.lengths, codes, len(data))
    assert out.tobytes() == data.tobytes()
    # every row decodes on its own, too
    for i in range(len(rows)):
        part = fsst_decompress(table.symbols, table.lengths, codes[co[i]:co[i + 1]])
        assert part.tobytes() == rows[i]


@given(st.lists(st.one_of(st.none(), st.text(alphabet="abcdefgh ./:", max_size=60)),
                min_size=1, max_size=400))
def test_vortex_data_string_compressor_output_decodes(values):
    check_vx_compressed(pa.array(values, pa.string()))


def test_vortex_data_fsst_and_onpair_roots_decode():
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(300)]
    long_ = pa.array([" ".join(rng.choice(vocab, 60)) for _ in range(300)])
    assert "vortex.fsst" in check_vx_compressed(long_)
    urls = pa.array([None if i % 9 == 0 else
                     f"https://www.example{rng.integers(0, 50)}.com/path/{rng.integers(0, 10**6)}/x.html"
                     for i in range(4000)])
    assert "vortex.onpair" in check_vx_compressed(urls)


def test_vortex_data_slices_decode():
    """Arrays vortex-data compressed and then sliced (its slice kernels keep the encoding,
    e.g. FSST with sliced offsets) decode here to the sliced source values."""
    import vortex as vx
    import vortex.serde as serde

    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(300)]
    datas = {
        "vortex.fsst": pa.array([None if i % 11 == 0 else " ".join(rng.choice(vocab, 60))
                                 for i in range(300)]),
        "vortex.datetimeparts": pa.array(
            (rng.integers(0, 20000, 3000) * 86_400_000).astype(np.int64), pa.timestamp("ms")),
        "vortex.decimal_byte_parts": pa.array(
            [decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**9, 10**9, 3000)],
            pa.decimal128(10, 2)),
    }
    for enc, arr in datas.items():
        c = vx.compress(vx.array(arr))
        for i, j in [(0, 1), (5, 200), (101, 299)]:
            ap, dp = serde.encode_ipc_array_buffers(c.slice(i, j))
            stream = b"".join(bytes(x) for x in dp) + b"".join(bytes(x) for x in ap)
            encs = stream_encodings(stream)
            assert enc in encs
            require_registered(encs)
            assert_same(read_ours(stream), arr.slice(i, j - i))


# -- decoding is vectorized and validates ------------------------------------------------


def _fsst_node(symbols: list[bytes], codes: bytes, ulen: list[int], co: list[int],
               sym_lens: list[int] | None = None, dtype: dt.DType | None = None) -> Array:
    keys = np.array([int.from_bytes(s.ljust(8, b"\0"), "little") for s in symbols], "<u8")
    lens = np.array(sym_lens if sym_lens is not None else [len(s) for s in symbols], np.uint8)
    meta = ProtoWriter().varint(1, int(dt.PType.I32)).varint(2, int(dt.PType.I32)).finish()
    return Array("vortex.fsst", dtype or dt.Utf8(False), len(ulen), metadata=meta,
                 buffers=[keys.view(np.uint8), lens, np.frombuffer(codes, np.uint8)],
                 children=[primitive_array(np.array(ulen, np.int32)),
                           primitive_array(np.array(co, np.int32))])


def _with_metadata(a: Array, raw: bytes) -> Array:
    return Array(a.encoding, a.dtype, len(a), metadata=raw, buffers=a.buffers,
                 children=a.children)


def _roundtrip_node(a: Array) -> Array:
    """The node written to a stream and read back (so read-time validation runs)."""
    with vio.StreamReader(our_array_stream(a)) as r:
        return next(iter(r)).array


def test_fsst_escape_runs_decode_like_vortex_data():
    # 255 255 is a literal 0xFF, 255 x a literal x: runs of 255 alternate escape/literal
    codes = bytes([0, 255, 255, 255, 0, 1, 255, 255, 255, 255, 255, 1])
    a = _fsst_node([b"ab", b"c"], codes, [5, 3], [0, 6, 12], dtype=dt.Binary(False))
    want = [b"ab\xff\x00c", b"\xff\xff\x01"]
    assert a.to_pylist() == want
    assert vx_decode_to_arrow(our_array_stream(a))[0].to_pylist() == want


@pytest.mark.parametrize("case", [
    "code_beyond_symbols", "escape_at_end", "non_monotonic", "offsets_past_codes",
    "length_mismatch", "negative_length", "symbol_length_0", "symbol_length_9",
    "symbols_not_u64", "too_many_symbols"])
def test_fsst_malformed(case):
    nodes = {
        "code_beyond_symbols": lambda: _fsst_node([b"ab"], bytes([0, 1]), [4], [0, 2]),
        "escape_at_end": lambda: _fsst_node([b"ab"], bytes([0, 255]), [3], [0, 2]),
        "non_monotonic": lambda: _fsst_node([b"ab"], bytes([0, 0]), [2, 2], [0, 2, 1]),
        "offsets_past_codes": lambda: _fsst_node([b"ab"], bytes([0, 0]), [4], [0, 3]),
        "length_mismatch": lambda: _fsst_node([b"ab"], bytes([0, 0]), [5], [0, 2]),
        "negative_length": lambda: _fsst_node([b"ab"], bytes([0, 0]), [6, -2], [0, 2, 2]),
        "symbol_length_0": lambda: _fsst_node([b"ab"], bytes([0]), [2], [0, 1], [0]),
        "symbol_length_9": lambda: _fsst_node([b"ab"], bytes([0]), [2], [0, 1], [9]),
        "symbols_not_u64": lambda: Array(
            "vortex.fsst", dt.Utf8(False), 0, metadata=b"",
            buffers=[np.zeros(7, np.uint8), np.zeros(0, np.uint8), np.zeros(0, np.uint8)],
            children=[primitive_array(np.zeros(0, np.uint8)), primitive_array(np.zeros(1, np.uint8))]),
        "too_many_symbols": lambda: _fsst_node([b"a"] * 256, b"", [], [0]),
    }
    with pytest.raises(MalformedStreamError):
        _roundtrip_node(nodes[case]()).to_arrow()


def test_fsst_decoded_size_is_bounded_before_allocating():
    a = _fsst_node([b"ab"], bytes([0]), [2_000_000_000, 2_000_000_000, 2], [0, 1, 1, 1])
    limits = vio.ReaderLimits(max_decoded_bytes=1 << 20)
    with vio.StreamReader(our_array_stream(a), limits=limits) as r:
        arr = next(iter(r)).array
        with pytest.raises(LimitExceededError):
            arr.to_arrow()


def test_fsst_lengths_that_would_overflow_are_refused():
    meta = ProtoWriter().varint(1, int(dt.PType.U64)).varint(2, int(dt.PType.I32)).finish()
    keys = np.array([int.from_bytes(b"ab", "little")], "<u8")
    a = Array("vortex.fsst", dt.Utf8(False), 3, metadata=meta,
              buffers=[keys.view(np.uint8), np.array([2], np.uint8), np.zeros(1, np.uint8)],
              children=[primitive_array(np.array([2**63, 2**63, 2], np.uint64)),
                        primitive_array(np.array([0, 0, 0, 1], np.int32))])
    with vio.StreamReader(our_array_stream(a), limits=vio.ReaderLimits.unlimited()) as r:
        arr = next(iter(r)).array
        with pytest.raises(LimitExceededError):  # the sum wraps to 2 in 64 bits
            arr.to_arrow()


def test_fsst_legacy_two_buffer_form():
    from vortex_io.encodings._varbin import varbin_array

    codes = varbin_array(dt.Binary(False), primitive_array(np.array([0, 2, 3], np.int32)),
                         np.array([0, 1, 1], np.uint8))
    keys = np.array([int.from_bytes(b"he", "little"), int.from_bytes(b"llo", "little")], "<u8")
    meta = ProtoWriter().varint(1, int(dt.PType.U8)).finish()
    a = Array("vortex.fsst", dt.Utf8(False), 2, metadata=meta,
              buffers=[keys.view(np.uint8), np.array([2, 3], np.uint8)],
              children=[codes, primitive_array(np.array([5, 3], np.uint8))])
    got = _roundtrip_node(a)
    assert got.to_pylist() == ["hello", "llo"]
    assert vx_decode_to_arrow(our_array_stream(a))[0].to_pylist() == ["hello", "llo"]


# -- OnPair -----------------------------------------------------------------------------------


def _onpair_node(tokens: list[bytes], codes: list[int], ulen: list[int], co: list[int],
                 pad: int = 16) -> Array:
    blob = (b"".join(tokens) + b"\0" * 16)[: sum(len(t) for t in tokens) + pad]
    do = np.concatenate(([0], np.cumsum([len(t) for t in tokens]))).astype(np.uint32)
    meta = (ProtoWriter().varint(1, int(dt.PType.U32)).varint(2, 12).varint(3, len(tokens))
            .varint(4, len(codes)).varint(5, int(dt.PType.U32)).varint(6, int(dt.PType.U16))
            .varint(7, int(dt.PType.U32)).finish())
    return Array("vortex.onpair", dt.Utf8(False), len(ulen), metadata=meta,
                 buffers=[np.frombuffer(blob, np.uint8)],
                 children=[primitive_array(do), primitive_array(np.array(codes, np.uint16)),
                           primitive_array(np.array(co, np.uint32)),
                           primitive_array(np.array(ulen, np.uint32))])


def test_onpair_tokens_up_to_16_bytes_decode_like_vortex_data():
    toks = [b"a", b"0123456789abcdef", b"xyz", b"long token here!"[:16], b"12345678", b"9"]
    codes = [1, 0, 2, 3, 4, 5, 1, 1, 0]
    values = ["".join(toks[c].decode() for c in codes[:4]), "", "".join(toks[c].decode() for c in codes[4:])]
    ulen = [len(v) for v in values]
    a = _onpair_node(toks, codes, ulen, [0, 4, 4, 9])
    assert a.to_pylist() == values
    assert vx_decode_to_arrow(our_array_stream(a))[0].to_pylist() == values
    assert _roundtrip_node(a).slice(1, 3).to_pylist() == values[1:]


@given(st.lists(st.binary(min_size=1, max_size=16), min_size=1, max_size=60), st.data())
def test_onpair_decompress_matches_concatenation(tokens, data):
    codes = data.draw(st.lists(st.integers(0, len(tokens) - 1), max_size=300))
    blob = np.frombuffer(b"".join(tokens) + b"\0" * 16, np.uint8)
    do = np.concatenate(([0], np.cumsum([len(t) for t in tokens])))
    want = b"".join(tokens[c] for c in codes)
    got = onpair_decompress(blob, do, np.array(codes, np.int64), len(want))
    assert got.tobytes() == want


@given(st.one_of(texts.map(lambda v: pa.array(v, pa.string())),
                 blobs.map(lambda v: pa.array(v, pa.binary()))),
       st.sampled_from([9, 12]), st.data())
def test_onpair_encode_decodes_in_vortex_data(arr, bits, data):
    a = onpair_encode(vio.array(arr), dict_bits=bits)
    assert a.encoding == "vortex.onpair" and a.meta.dict_size <= 1 << bits
    check_both_ways(a, arr)
    for i, j in _cuts(len(arr), data):
        check_both_ways(a.slice(i, j), arr.slice(i, j - i))


def test_onpair_encode_compresses_urls_and_handles_edge_cases():
    rng = np.random.default_rng(8)
    urls = pa.array([None if i % 10 == 0 else
                     f"https://www.site{rng.integers(0, 30)}.com/a/{rng.integers(0, 10**6)}/index.html"
                     for i in range(5000)])
    a = onpair_encode(vio.array(urls))
    raw = sum(len(v) for v in urls.to_pylist() if v)
    # 12-bit codes: well under a third of the raw bytes
    assert a.meta.total_tokens * 1.5 + a.buffers[0].nbytes < raw / 3
    check_both_ways(a, urls)
    for values in ([], [None], [""], ["a" * 100], ["ab" * 40] * 50):
        arr = pa.array(values, pa.string())
        check_both_ways(onpair_encode(vio.array(arr)), arr)


def test_onpair_encode_large_dictionary():
    rng = np.random.default_rng(1)
    vocab = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), rng.integers(2, 9)))
             for _ in range(3000)]
    arr = pa.array([" ".join(rng.choice(vocab, 8)) for _ in range(6000)])
    a = onpair_encode(vio.array(arr), dict_bits=16)
    assert a.meta.dict_size > 4096  # past the direct pair table: binary-search merges
    check_both_ways(a, arr)


@pytest.mark.parametrize("case", ["code_out_of_range", "token_too_long", "offsets_past_blob",
                                  "length_mismatch", "codes_offsets_past_codes",
                                  "dictionary_over_16_bits"])
def test_onpair_malformed(case):
    nodes = {
        "code_out_of_range": lambda: _onpair_node([b"ab"], [0, 1], [4], [0, 2]),
        "token_too_long": lambda: _onpair_node([b"x" * 17], [0], [17], [0, 1]),
        "offsets_past_blob": lambda: _onpair_node([b"ab"], [0], [2], [0, 1], pad=-1),
        "length_mismatch": lambda: _onpair_node([b"ab"], [0, 0], [3], [0, 2]),
        "codes_offsets_past_codes": lambda: _onpair_node([b"ab"], [0], [2], [0, 2]),
        "dictionary_over_16_bits": lambda: _with_metadata(
            _onpair_node([b"ab"], [0], [2], [0, 1]),
            ProtoWriter().varint(3, 70_000).varint(4, 1).varint(5, int(dt.PType.U32))
            .varint(6, int(dt.PType.U16)).varint(7, int(dt.PType.U32)).finish()),
    }
    with pytest.raises(MalformedStreamError):
        _roundtrip_node(nodes[case]()).to_arrow()


# -- datetime parts ---------------------------------------------------------------------------

UNITS = ["s", "ms", "us", "ns"]
ZONES = [None, "UTC", "America/New_York", "+05:30"]


@given(st.sampled_from(UNITS), st.sampled_from(ZONES),
       st.lists(st.one_of(st.none(), st.integers(-(2**62), 2**62)), max_size=200), st.data())
def test_datetimeparts_encode_decodes_in_vortex_data(unit, tz, values, data):
    arr = pa.array(values, pa.timestamp(unit, tz))
    a = datetimeparts_encode(vio.array(arr))
    assert a.encoding == "vortex.datetimeparts"
    check_both_ways(a, arr)
    for i, j in _cuts(len(arr), data):
        check_both_ways(a.slice(i, j), arr.slice(i, j - i))


def test_datetimeparts_narrow_parts():
    day = 86_400_000
    arr = pa.array(np.arange(1000, dtype=np.int64) * day + 1000 * 59 + 7, pa.timestamp("ms"))
    a = datetimeparts_encode(vio.array(arr))
    m = a.meta
    assert (m.days_ptype, m.seconds_ptype, m.subseconds_ptype) == (
        dt.PType.U16, dt.PType.U8, dt.PType.U8)
    check_both_ways(a, arr)
    for values in ([], [0], [None], [-1]):
        arr = pa.array(values, pa.timestamp("us", "UTC"))
        check_both_ways(datetimeparts_encode(vio.array(arr)), arr)


@given(st.sampled_from(["ms", "us", "ns"]), st.sampled_from(ZONES),
       st.lists(st.one_of(st.none(), st.integers(0, 30_000)), min_size=1, max_size=300),
       st.integers(0, 86_399))
def test_vortex_data_datetimeparts_decode(unit, tz, days, second):
    per_s = {"ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    values = [None if d is None else (d * 86_400 + second) * per_s for d in days]
    check_vx_compressed(pa.array(values, pa.timestamp(unit, tz)))


def test_datetimeparts_rejects_bad_dtypes():
    meta = ProtoWriter().varint(1, int(dt.PType.I32)).finish()
    kids = [primitive_array(np.zeros(2, np.int32))] + [primitive_array(np.zeros(2, np.uint8))] * 2
    for d in (dt.date("D"), dt.Primitive(dt.PType.I64), dt.time("us")):
        a = Array("vortex.datetimeparts", d, 2, metadata=meta, children=kids)
        with pytest.raises(MalformedStreamError):
            _roundtrip_node(a)


# -- decimal byte parts -----------------------------------------------------------------------


@given(st.sampled_from([(2, 0), (4, 2), (9, 3), (10, 2), (18, 6), (38, 4), (50, 10)]),
       st.lists(st.one_of(st.none(), st.integers(-(10**18) + 1, 10**18 - 1)), max_size=200),
       st.data())
def test_decimal_byte_parts_encode_decodes_in_vortex_data(ps, ints, data):
    p, s = ps
    lim = 10 ** min(p, 18) - 1
    values = [None if v is None else decimal.Decimal(max(-lim, min(lim, v))).scaleb(-s)
              for v in ints]
    t = pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)
    arr = pa.array(values, t)
    a = decimal_byte_parts_encode(vio.array(arr))
    assert a.encoding == "vortex.decimal_byte_parts"
    check_both_ways(a, arr)
    for i, j in _cuts(len(arr), data):
        check_both_ways(a.slice(i, j), arr.slice(i, j - i))


def test_decimal_byte_parts_msp_width():
    arr = pa.array([decimal.Decimal("1.25"), decimal.Decimal("-1.27")], pa.decimal128(38, 2))
    assert decimal_byte_parts_encode(vio.array(arr)).meta.msp_ptype == dt.PType.I8
    a = decimal_byte_parts_encode(vio.array(arr), dt.PType.I64)
    check_both_ways(a, arr)
    big = pa.array([decimal.Decimal(10**30)], pa.decimal128(38, 0))
    with pytest.raises(ValueError):
        decimal_byte_parts_encode(vio.array(big))


@given(st.sampled_from([(10, 2), (38, 4), (18, 0)]),
       st.lists(st.one_of(st.none(), st.integers(-(10**9), 10**9)), min_size=1, max_size=300))
def test_vortex_data_decimal_byte_parts_decode(ps, ints):
    p, s = ps
    arr = pa.array([None if v is None else decimal.Decimal(v).scaleb(-s) for v in ints],
                   pa.decimal128(p, s))
    check_vx_compressed(arr)


def test_decimal_byte_parts_malformed():
    child = primitive_array(np.zeros(3, np.int32))
    for meta, exc in ((ProtoWriter().varint(1, int(dt.PType.U32)).finish(), MalformedStreamError),
                      (ProtoWriter().varint(1, int(dt.PType.I32)).varint(2, 1).finish(),
                       UnsupportedError)):
        a = Array("vortex.decimal_byte_parts", dt.Decimal(10, 2), 3, metadata=meta,
                  children=[child])
        with pytest.raises(exc):
            _roundtrip_node(a)


# -- zstd ---------------------------------------------------------------------------------------

PRIMS = [pa.int8(), pa.uint16(), pa.int32(), pa.uint64(), pa.float32(), pa.float64()]


@given(st.sampled_from(PRIMS), st.lists(st.one_of(st.none(), st.integers(0, 127)), max_size=300),
       st.sampled_from([0, 7, 40]), st.booleans())
def test_zstd_primitives_decode_in_vortex_data(t, values, per_frame, use_dict):
    arr = pa.array(values, pa.uint8()).cast(t)
    a = zstd_encode(vio.array(arr), values_per_frame=per_frame, use_dictionary=use_dict)
    assert a.encoding == "vortex.zstd"
    check_both_ways(a, arr)


@given(st.one_of(texts.map(lambda v: pa.array(v, pa.string())),
                 blobs.map(lambda v: pa.array(v, pa.binary()))),
       st.sampled_from([0, 5, 33]), st.data())
def test_zstd_strings_decode_in_vortex_data(arr, per_frame, data):
    a = zstd_encode(vio.array(arr), values_per_frame=per_frame)
    check_both_ways(a, arr)
    for i, j in _cuts(len(arr), data):
        assert_same(a.slice(i, j).to_arrow(), arr.slice(i, j - i))


def test_zstd_dictionary_frames():
    rng = np.random.default_rng(2)
    arr = pa.array([f"item-{rng.integers(0, 500)}-{'x' * int(rng.integers(0, 9))}" for _ in range(4000)])
    a = zstd_encode(vio.array(arr), values_per_frame=200)
    assert a.meta.dictionary_size > 0 and len(a.meta.frames) == 20
    check_both_ways(a, arr)


def test_zstd_malformed():
    arr = pa.array(["abc", "de", None, "fgh"])
    a = zstd_encode(vio.array(arr))
    frame = a.buffers[0]
    corrupt = frame.copy()
    corrupt[len(corrupt) // 2:] ^= 0x5A
    bad_meta = ProtoWriter().message(2, ProtoWriter().varint(1, 999).varint(2, 3).finish()).finish()
    # a frame whose length prefixes do not delimit the values
    import zstandard

    lying = np.frombuffer(zstandard.ZstdCompressor().compress(b"\x05\0\0\0ab"), np.uint8)
    lying_meta = ProtoWriter().message(2, ProtoWriter().varint(1, 6).varint(2, 1).finish()).finish()
    cases = [
        Array("vortex.zstd", a.dtype, 4, metadata=a.metadata, buffers=[corrupt], children=a.children),
        Array("vortex.zstd", a.dtype, 4, metadata=bad_meta, buffers=[frame], children=a.children),
        Array("vortex.zstd", dt.Utf8(False), 1, metadata=lying_meta, buffers=[lying]),
    ]
    for c in cases:
        with pytest.raises(MalformedStreamError):
            _roundtrip_node(c).to_arrow()
    with pytest.raises(MalformedStreamError):  # buffer count disagrees with the metadata
        _roundtrip_node(Array("vortex.zstd", a.dtype, 4, metadata=a.metadata,
                              buffers=[frame, frame], children=a.children))


def test_zstd_without_the_package(monkeypatch):
    arr = pa.array([1, 2, 3], pa.int32())
    stream = our_array_stream(zstd_encode(vio.array(arr)))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(UnsupportedError, match="zstandard"):
        read_ours(stream)


def test_vortex_data_zstd_decodes(tmp_path):
    import vortex as vx

    rng = np.random.default_rng(4)
    arr = pa.array([None if i % 5 == 0 else f"k{rng.integers(0, 10**9)}" for i in range(2000)])
    vx.io.VortexWriteOptions.compact().write(pa.table({"v": arr}), str(tmp_path / "z.vortex"))
    col = next(iter(vx.open(str(tmp_path / "z.vortex")).scan())).field("v")
    import vortex.serde as serde

    ap, dp = serde.encode_ipc_array_buffers(col)
    stream = b"".join(bytes(x) for x in dp) + b"".join(bytes(x) for x in ap)
    assert "vortex.zstd" in stream_encodings(stream)
    assert_same(read_ours(stream), arr)


# -- helpers ------------------------------------------------------------------------------------


def test_string_parts_drops_bytes_under_nulls():
    arr = pa.Array.from_buffers(pa.string(), 3, [
        pa.py_buffer(np.packbits([1, 0, 1], bitorder="little")),
        pa.py_buffer(np.array([0, 2, 5, 6], np.int32)), pa.py_buffer(b"abXYZc")])
    data, offsets, valid = string_parts(vio.array(arr))
    assert data.tobytes() == b"abc" and offsets.tolist() == [0, 2, 2, 3]
    assert valid.tolist() == [True, False, True]
    check_both_ways(fsst_encode(vio.array(arr)), arr)
    check_both_ways(zstd_encode(vio.array(arr)), arr)
