"""The fast read path (issue 3 decode speed): the node builder that reads ArrayNode tables
straight off the flatbuffer, the metadata cache, and the vectorized decoders that replaced
slower ones. Each is checked against an independent implementation or a plain reference.
"""

from __future__ import annotations

import importlib
import io
import random

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from fuzz.wire import parse_stream
from vortex_io._errors import VortexIPCError
from vortex_io.datasets import trades

from .vx_util import vx_stream

array_mod = importlib.import_module("vortex_io._array")


def _vio_stream(table: pa.Table, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, table, chunk_rows=4096, **kw)
    return buf.getvalue()


def _structs(t: pa.Table) -> list[pa.StructArray]:
    return [b.to_struct_array() for b in t.to_batches(max_chunksize=4096)]


@pytest.fixture(scope="module")
def small_trades() -> pa.Table:
    return trades(12_000)


@pytest.fixture(scope="module")
def streams(small_trades) -> dict[str, bytes]:
    t = small_trades
    nulls = pa.table({
        "i": pa.array([None if i % 7 == 0 else i * 3 for i in range(9000)], pa.int64()),
        "s": pa.array([None if i % 5 == 0 else f"v{i % 40}" for i in range(9000)]),
        "f": pa.array([None if i % 11 == 0 else i / 8 for i in range(9000)]),
    })
    return {
        "vio": _vio_stream(t),
        "vio-nulls": _vio_stream(nulls),
        "vx": vx_stream(_structs(t), compress=True),
        "vx-nulls": vx_stream(_structs(nulls), compress=True),
    }


def _same_tree(node, arr: vio.Array, bufs: list[tuple[bytes, int]]) -> None:
    """A tree read by the reader equals the one fuzz/wire.py reads through flatbuf.Table."""
    assert arr.encoding == node.encoding
    assert arr.metadata == node.metadata
    assert arr._stats == node.stats
    assert [bytes(b) for b in arr.buffers] == [bufs[i][0] for i in node.buffers]
    assert len(arr.children) == len(node.children)
    for n, c in zip(node.children, arr.children):
        _same_tree(n, c, bufs)


@pytest.mark.parametrize("name", ["vio", "vio-nulls", "vx", "vx-nulls"])
def test_builder_matches_table_reader(streams, name):
    data = streams[name]
    msgs = [m for m in parse_stream(data) if m.array is not None]
    batches = list(vio.StreamReader(data))
    assert len(msgs) == len(batches) > 1
    for m, b in zip(msgs, batches):
        _same_tree(m.array.root, b.array, m.array.buffers)
    if name.startswith("vx"):  # vortex-data writes statistics on every node
        assert all(b.array._stats is not None for b in batches)


def test_header_byte_flips_raise_vortex_errors(streams):
    """Any byte of an Array message's flatbuffer overwritten: the read and the decode end
    in a result or a VortexIPCError, never another exception."""
    data = streams["vx-nulls"]
    msgs = [m for m in parse_stream(data) if m.array is not None]
    m = msgs[0]
    n = len(m.data)
    fb_len = int.from_bytes(m.data[n - 4 :], "little")
    rng = random.Random(7)
    for _ in range(300):
        raw = bytearray(m.data)
        p = rng.randrange(n - 4 - fb_len, n - 4)
        raw[p] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        mutant = data[: m.offset] + bytes(raw) + data[m.offset + n :]
        try:
            with vio.StreamReader(mutant) as r:
                for b in r:
                    b.array.to_arrow()
        except VortexIPCError:
            pass


def test_metadata_cache_hits_and_is_bounded(streams, monkeypatch, reference_path):
    # the metadata cache belongs to the Python decoder; the native core parses natively
    monkeypatch.setattr(array_mod, "_META_CACHE", {})
    calls = []
    from vortex_io.encodings._bitpacked import BitPackedEncoding

    orig = BitPackedEncoding.parse_metadata

    def counting(self, raw, dtype, length):
        calls.append(raw)
        return orig(self, raw, dtype, length)

    monkeypatch.setattr(BitPackedEncoding, "parse_metadata", counting)
    data = streams["vx"]
    first = vio.StreamReader(data).read_arrow()
    n_first = len(calls)
    assert n_first > 0
    second = vio.StreamReader(data).read_arrow()
    assert len(calls) == n_first  # every bit-packed node of the second read was a hit
    assert first.equals(second)
    monkeypatch.setattr(array_mod, "_META_CACHE_MAX", 3)
    array_mod._META_CACHE.clear()
    vio.StreamReader(data).read_arrow()
    assert len(array_mod._META_CACHE) <= 3


def test_mutable_metadata_is_not_cached():
    class ListMeta(vio.Encoding):
        id = "test.listmeta"

        def parse_metadata(self, raw, dtype, length):
            return [raw]  # mutable: must not be shared between nodes

        def nbuffers(self, dtype, meta):
            return (1, 1)

        def canonicalize(self, arr):
            from vortex_io.encodings._primitive import primitive_array

            return primitive_array(arr.buffers[0].view(np.int64).copy())

    enc = vio.register_encoding(ListMeta(), replace=True)
    from vortex_io._array import _parsed_metadata

    a = _parsed_metadata(enc, b"xy", vio.dtype.int64(), 2)
    b = _parsed_metadata(enc, b"xy", vio.dtype.int64(), 2)
    assert a == b and a is not b


# -- FSST: gather + compress decoder against a plain loop ---------------------------------


def _fsst_reference(symbols: list[bytes], codes: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 255:
            out.append(codes[i + 1])
            i += 2
        else:
            out += symbols[c]
            i += 1
    return bytes(out)


def _fsst_case(rng: np.random.Generator, nsym: int, ncodes: int, esc_rate: float):
    symbols = [bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
               for _ in range(nsym)]
    codes = bytearray()
    while len(codes) < ncodes:
        if nsym == 0 or rng.random() < esc_rate:
            codes += bytes([255, 255 if rng.random() < 0.3 else int(rng.integers(0, 256))])
        else:
            codes.append(int(rng.integers(0, nsym)))
    sym_words = np.array([int.from_bytes(s.ljust(8, b"\0"), "little") for s in symbols],
                         dtype=np.uint64)
    lens = np.array([len(s) for s in symbols], dtype=np.uint8)
    return symbols, bytes(codes), sym_words, lens


@pytest.mark.parametrize("block", [7, 64, 1 << 16])
@pytest.mark.parametrize("nsym,esc_rate", [(0, 1.0), (1, 0.0), (37, 0.05), (255, 0.3)])
def test_fsst_decompress_matches_a_loop(monkeypatch, block, nsym, esc_rate):
    from vortex_io.encodings import _fsst as fsst

    monkeypatch.setattr(fsst, "DECODE_BLOCK", block)
    rng = np.random.default_rng(nsym * 1000 + block)
    symbols, codes, words, lens = _fsst_case(rng, nsym, 3000, esc_rate)
    want = _fsst_reference(symbols, codes)
    c = np.frombuffer(codes, dtype=np.uint8)
    got = fsst.fsst_decompress(words, lens, c, len(want))
    assert got.tobytes() == want
    assert fsst.fsst_decompress(words, lens, c).tobytes() == want  # size not given
    with pytest.raises(vio.MalformedStreamError):
        fsst.fsst_decompress(words, lens, c, len(want) + 1)
    with pytest.raises(vio.MalformedStreamError):
        fsst.fsst_decompress(words, lens, c, len(want) - 1)


def test_fsst_decompress_rejects_bad_codes():
    from vortex_io.encodings import _fsst as fsst

    words = np.array([0x6261], dtype=np.uint64)  # "ab"
    lens = np.array([2], dtype=np.uint8)
    with pytest.raises(vio.MalformedStreamError, match="not in the symbol table"):
        fsst.fsst_decompress(words, lens, np.array([0, 3, 0], dtype=np.uint8), 6)
    with pytest.raises(vio.MalformedStreamError, match="ends with an escape"):
        fsst.fsst_decompress(words, lens, np.array([0, 255], dtype=np.uint8), 3)
    with pytest.raises(vio.MalformedStreamError):
        fsst.fsst_decompress(words, lens, np.array([0], dtype=np.uint8), 17)  # > 8 per code
    assert fsst.fsst_decompress(words, lens, np.array([255, 255, 0], dtype=np.uint8),
                                3).tobytes() == b"\xffab"


# -- fastlanes.delta over bit-packed deltas: unpacked straight into the row grid --------------


@pytest.mark.parametrize("ptype", ["u8", "i16", "u32", "i64"])
@pytest.mark.parametrize("n", [1, 1000, 3 * 1024, 70 * 1024 + 5])
def test_delta_row_grid_path_matches_generic(ptype, n):
    from vortex_io.encodings._bitpacked import bitpack
    from vortex_io.encodings._delta import delta_array
    from vortex_io.encodings._primitive import primitive_array

    rng = np.random.default_rng(n)
    npd = {"u8": np.uint8, "i16": np.int16, "u32": np.uint32, "i64": np.int64}[ptype]
    steps = rng.integers(0, 4, n).astype(npd)
    steps[rng.random(n) < 0.01] = np.iinfo(npd).max // 3  # big jumps: patches
    steps[n // 2] = np.iinfo(npd).max // 3
    vals = np.cumsum(steps, dtype=npd)
    d = vio.encodings._delta.delta_encode(primitive_array(vals), bitpack=False)
    bases, deltas = d.children[0], d.children[1]
    packed = bitpack(deltas, 2)  # narrow on purpose: every big jump is a patch
    if n > 1:  # (one row: its value is the lane's base, its delta 0)
        assert packed.meta.patches is not None and packed.meta.patches.len
    assert packed.vtable.unpacked_rows(packed) is not None  # the grid path applies
    fast = delta_array(bases, packed, 0, n, d.dtype)
    assert (fast.to_numpy() == vals).all()
    generic = delta_array(bases, packed, 0, n, d.dtype)
    packed.canonical()  # a cached canonical form sends delta down the generic path
    assert (generic.to_numpy() == vals).all()
    for start, stop in [(0, min(n, 5)), (n // 3, n - n // 4), (max(n - 1030, 0), n)]:
        assert (fast.slice(start, stop).to_numpy() == vals[start:stop]).all()


# -- output buffers from pyarrow's pool -------------------------------------------------------


def test_memory_helpers():
    from vortex_io import _memory

    big = _memory.empty(100_000, np.int64)
    assert big.flags.writeable and big.ctypes.data % 64 == 0
    assert isinstance(big.base, pa.Buffer) or isinstance(getattr(big.base, "obj", None), pa.Buffer)
    small = _memory.empty(10, np.float32)
    assert small.dtype == np.float32 and len(small) == 10
    rng = np.random.default_rng(3)
    vals = rng.integers(-50, 50, 300)
    for dtype in (np.uint8, np.int16, np.uint32, np.intp):
        idx = rng.integers(0, 300, 70_000).astype(dtype)
        assert (_memory.take(vals, idx) == vals[idx.astype(np.intp)]).all()


def test_decoded_columns_live_in_arrow_memory():
    """Decoded columns are not backed by memory that goes away with the reader."""
    t = trades(70_000)
    data = _vio_stream(t)
    got = vio.StreamReader(data).read_arrow()
    del data
    import gc

    gc.collect()
    assert got.column_names == t.column_names
    for name in t.column_names:
        assert got[name].combine_chunks().equals(t[name].combine_chunks()), name


# -- read_arrow(threads=) ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["vio", "vio-nulls", "vx", "vx-nulls"])
def test_threaded_read_equals_single_threaded(streams, name):
    data = streams[name]
    one = vio.StreamReader(data).read_arrow(threads=1)
    for n in (2, 3, 8):
        many = vio.StreamReader(data).read_arrow(threads=n)
        assert many.equals(one)
        assert [c.num_chunks for c in many.columns] == [c.num_chunks for c in one.columns]
    sv1 = vio.StreamReader(data).read_arrow(threads=1, string_view=True)
    sv4 = vio.StreamReader(data).read_arrow(threads=4, string_view=True)
    assert sv4.equals(sv1)  # the string_view setting reaches the worker threads
    assert sv1.schema == sv4.schema


def test_threaded_read_of_non_struct_and_chunked_batches():
    buf = io.BytesIO()
    vio.write_ipc(buf, pa.chunked_array([pa.array(range(i * 1000, i * 1000 + 1000))
                                         for i in range(5)]), chunk_rows=1000)
    one = vio.StreamReader(buf.getvalue()).read_arrow(threads=1)
    assert vio.StreamReader(buf.getvalue()).read_arrow(threads=3).equals(one)
    assert one.to_pylist() == list(range(5000))


def test_threads_default_is_every_core_and_is_checked():
    from vortex_io import _native_glue as ng

    if ng.enabled():
        assert ng.decode_threads(None) == ng.native().hardware_threads() >= 1
    assert ng.decode_threads(3) == 3
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            ng.decode_threads(bad)
        with pytest.raises(ValueError):
            vio.StreamReader(io.BytesIO(b"").getvalue() or _tiny()).read_arrow(threads=bad)


def _tiny() -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, pa.table({"x": [1]}))
    return buf.getvalue()


def test_threaded_read_raises_vortex_errors(streams):
    """A batch that fails to decode on a worker raises the same error as on one thread."""
    data = bytearray(streams["vio"])
    msgs = [m for m in parse_stream(bytes(data)) if m.array is not None]
    m = msgs[1]
    # overwrite the second batch's buffer bytes: values decode to garbage or fail checks
    n = len(m.data)
    fb_len = int.from_bytes(m.data[n - 4 :], "little")
    body_end = m.offset + n - 4 - fb_len
    rng = np.random.default_rng(5)
    data[body_end - 2000 : body_end] = rng.integers(0, 256, 2000, dtype=np.uint8).tobytes()
    outcomes = []
    for threads in (1, 3):
        try:
            outcomes.append(vio.StreamReader(bytes(data)).read_arrow(threads=threads))
        except VortexIPCError as e:
            outcomes.append(type(e))
    if isinstance(outcomes[0], type):
        assert outcomes[0] is outcomes[1]
    else:
        assert outcomes[1].equals(outcomes[0])


# -- dictionaries of fixed-width strings: byte-row gather -------------------------------------


@pytest.mark.parametrize("w", [1, 2, 3, 5, 8, 16, 17])
@pytest.mark.parametrize("nulls", ["none", "codes", "values", "both"])
@pytest.mark.parametrize("binary", [False, True])
def test_fixed_width_dict_strings_match_arrow_take(w, nulls, binary):
    from vortex_io._arrow import from_arrow
    from vortex_io.encodings._bool import bool_array
    from vortex_io.encodings._dict import _fixed_width_take, dict_array
    from vortex_io.encodings._primitive import primitive_array

    rng = np.random.default_rng(w * 10 + len(nulls))
    words = ["".join(chr(97 + int(c)) for c in rng.integers(0, 26, w)) for _ in range(7)]
    vals: list = [x.encode() if binary else x for x in words]
    if nulls in ("values", "both"):
        vals[3] = None
    typ = pa.binary() if binary else pa.string()
    dictionary = pa.array(vals, typ)
    n = 5000
    codes = rng.integers(0, len(vals), n).astype(np.uint8)
    cvalid = None
    if nulls in ("codes", "both"):
        cvalid = rng.random(n) > 0.2
    want = dictionary.take(pa.array(codes, mask=None if cvalid is None else ~cvalid))
    fast = _fixed_width_take(dictionary, codes, cvalid)
    assert (fast is None) == (w > 16)
    values = from_arrow(dictionary)
    codes_arr = primitive_array(codes, None if cvalid is None else bool_array(cvalid),
                                nullable=cvalid is not None)
    d = dict_array(codes_arr, values, dtype=values.dtype.with_nullable(True))
    got = d.to_arrow()
    assert got.type == want.type and got.equals(want)
    assert d.canonical().to_arrow().equals(want)


# -- datetimeparts with constant parts; numeric constants canonicalize without Arrow ----------


@pytest.mark.parametrize("secs,subs", [(0, 0), (3600, 0), (59, 999), (None, 7)])
def test_datetimeparts_constant_parts_match_arrays(secs, subs):
    from vortex_io.encodings._constant import constant_array
    from vortex_io.encodings._datetimeparts import datetimeparts_encode

    rng = np.random.default_rng(11)
    n = 3000
    days = rng.integers(-20_000, 20_000, n).astype(np.int64) * 86_400_000
    s = rng.integers(0, 86_400, n) if secs is None else np.full(n, secs)
    ms = days + s * 1000 + subs
    valid = rng.random(n) > 0.1
    ts = pa.array(ms, pa.timestamp("ms"), mask=~valid)
    enc = datetimeparts_encode(vio.array(ts))
    kids = list(enc.children)
    if secs is not None:  # the writer's parts replaced by constants (as vortex-data writes)
        kids[1] = constant_array(secs, n, vio.dtype.Primitive(kids[1].dtype.ptype))
    kids[2] = constant_array(subs, n, vio.dtype.Primitive(kids[2].dtype.ptype))
    arr = vio.Array(enc.vtable, enc.dtype, n, metadata=enc.metadata, children=kids)
    assert arr.to_arrow().equals(ts)


def test_numeric_constant_canonicalizes_like_arrow():
    from vortex_io.encodings._constant import constant_array

    for d, v in [(vio.dtype.int64(), -5), (vio.dtype.uint64(True), 2**64 - 1),
                 (vio.dtype.float16(), 1.5), (vio.dtype.float32(), -0.0),
                 (vio.dtype.int8(True), None)]:
        a = constant_array(v, 70_000, d)
        c = a.canonical()
        t = d.to_arrow()
        want = pa.repeat(pa.scalar(np.float16(v) if t == pa.float16() else v, t), 70_000)
        for got in (c.to_arrow(), a.to_arrow()):
            assert got.type == want.type and got.equals(want), (d, v)
        if v is not None:
            assert c.encoding == "vortex.primitive"
            assert np.signbit(c.to_numpy()[0]) == np.signbit(want.to_numpy()[0])  # -0.0 kept


@pytest.mark.parametrize("inner", ["zigzag", "for"])
@pytest.mark.parametrize("ptype", [np.int16, np.int32, np.int64])
def test_delta_over_zigzag_or_for_bitpacked_matches_generic(inner, ptype):
    """Deltas as zigzag(bit-packed) or FoR(bit-packed) unpack into the row grid with the
    transform applied in place; the result equals the generic decode."""
    from vortex_io.encodings._bitpacked import bitpack
    from vortex_io.encodings._delta import delta_array, delta_encode
    from vortex_io.encodings._for import for_array
    from vortex_io.encodings._primitive import primitive_array
    from vortex_io.encodings._zigzag import zigzag_encode

    rng = np.random.default_rng(7)
    n = 9 * 1024 + 17
    vals = np.cumsum(rng.integers(-3, 4, n)).astype(ptype)  # falling and rising: negative deltas
    plain = delta_encode(primitive_array(vals), bitpack=False)
    bases, deltas = plain.children
    if inner == "zigzag":
        dchild = zigzag_encode(deltas, bitpack=True)
    else:
        ref = int(deltas.to_numpy().min())
        shifted = (deltas.to_numpy().astype(np.int64) - ref).astype(ptype)
        dchild = for_array(bitpack(primitive_array(shifted), 4), ref, deltas.dtype)
    assert dchild.children[0].encoding == "fastlanes.bitpacked"
    from vortex_io.encodings._delta import _row_grid

    assert _row_grid(dchild, np.dtype(ptype).itemsize * 8) is not None  # the grid path applies
    fast = delta_array(bases, dchild, 0, n, plain.dtype)
    assert (fast.to_numpy() == vals).all()
    dchild.canonical()  # cached: the generic path
    generic = delta_array(bases, dchild, 0, n, plain.dtype)
    assert (generic.to_numpy() == vals).all()
    assert (fast.slice(1000, 5000).to_numpy() == vals[1000:5000]).all()
