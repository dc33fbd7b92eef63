"""The native vortex.fsst and vortex.onpair against the numpy reference: decoding (strict:
nothing handed back to Python, both string output modes), the FSST kernels (take, ==, !=,
IN, validity) through ``_native.Stream.kernel``, and corrupted buffers and metadata (the
same error class both ways)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vortex_io as vio
from tests.native_util import NATIVE, assert_same, identical, stream_of
from vortex_io import _native_glue as ng
from vortex_io import dtype as dt
from vortex_io._array import Array
from vortex_io._arrow import from_arrow
from vortex_io._errors import VortexIPCError
from vortex_io._ipc.framing import MessageDecoder
from vortex_io._limits import ReaderLimits
from vortex_io._proto import ProtoWriter
from vortex_io.compute import _kernels as K
from vortex_io.compute._numeric import validity as py_validity
from vortex_io.encodings._bool import bool_array
from vortex_io.encodings._dict import dict_array, dict_encode
from vortex_io.encodings._fsst import FSST, SymbolTable, fsst_encode
from vortex_io.encodings._onpair import ONPAIR, onpair_encode
from vortex_io.encodings._primitive import primitive_array
from vortex_io.encodings._varbin import varbin_array

WORDS = ["hello world", "", "a", "hello there", "the quick brown fox", "wörld ünïcode ✓",
         "x" * 300, "http://example.com/path?q=1", "AAPL", "MSFT", "\x00\xff"]


def _strings(n, seed=0, nulls=0.0, words=WORDS):
    rng = np.random.default_rng(seed)
    vals = [words[i] for i in rng.integers(0, len(words), n)]
    if nulls:
        vals = [None if rng.random() < nulls else v for v in vals]
    return vals


def _binary(n, seed=0, nulls=0.0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(0, 40))
        out.append(None if nulls and rng.random() < nulls else
                   bytes(rng.integers(0, 256, k, dtype=np.uint8)) if rng.random() < 0.3 else
                   b"abcabc"[: k % 7] * (k % 5))
    return out


def _arr(vals, binary=False):
    typ = pa.binary() if binary else pa.string()
    return from_arrow(pa.array(vals, type=typ))


def _slices(a):
    n = len(a)
    return [a, a.slice(0, 0), a.slice(min(1, n), min(2, n)), a.slice(n // 3, n - n // 5)]


_BASE = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def _names(n, seed, nulls=0.1):
    """Low-cardinality pairs of words with nulls: vortex-data writes vortex.dict(codes,
    vortex.fsst(...)) for them."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 8, n), rng.integers(0, 8, n)
    return [None if rng.random() < nulls else f"{_BASE[i]} {_BASE[j]}" for i, j in zip(a, b)]


ENCODERS = {
    "fsst": fsst_encode,
    "onpair": onpair_encode,
}


# -- decoding ------------------------------------------------------------------------------------

@pytest.mark.parametrize("enc", ENCODERS)
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("nulls", [0.0, 0.2])
def test_decode(enc, binary, nulls):
    vals = _binary(2000, 1, nulls) if binary else _strings(2000, 1, nulls)
    a = ENCODERS[enc](_arr(vals, binary))
    assert a.encoding == f"vortex.{enc}"
    assert_same(stream_of(*_slices(a)))


@pytest.mark.parametrize("enc", ENCODERS)
def test_empty_single_and_all_null(enc):
    for vals in ([], ["only"], [""], [None], [None, None, "x"], ["", "", ""], ["z" * 5000]):
        a = ENCODERS[enc](from_arrow(pa.array(vals, type=pa.string())))
        assert_same(stream_of(a, a.slice(0, 0)))


def test_fsst_escapes():
    # a tiny table: most bytes escape (binary data, every byte value, escape pairs 255 255)
    table = SymbolTable.from_bytes([b"ab", b"c", b"abcdefgh", b"\xff"])
    rng = np.random.default_rng(2)
    vals = [bytes(rng.integers(0, 256, int(rng.integers(0, 30)), dtype=np.uint8)) for _ in range(500)]
    vals += [b"\xff" * 9, b"abcdefghabc", bytes(range(256)), b""]
    a = fsst_encode(_arr(vals, True), table)
    assert_same(stream_of(*_slices(a)))
    # no symbols at all: every byte is an escape
    a = fsst_encode(_arr(vals, True), SymbolTable(np.zeros(0, np.uint64), np.zeros(0, np.uint8)))
    assert_same(stream_of(*_slices(a)))
    # 255 symbols (no code names nothing)
    syms = [bytes([i]) for i in range(200)] + [bytes([i, i + 1]) for i in range(55)]
    a = fsst_encode(_arr(vals, True), SymbolTable.from_bytes(syms))
    assert_same(stream_of(*_slices(a)))


def test_long_strings():
    rng = np.random.default_rng(3)
    vals = ["".join(rng.choice(list("abcdefgh ijk"), int(rng.integers(0, 20000)))) for _ in range(40)]
    for enc in ENCODERS.values():
        a = enc(_arr(vals))
        assert_same(stream_of(*_slices(a)))


def _dict_of(values_enc, vals):
    d = dict_encode(pa.array(vals, type=pa.string()))
    codes, values = d.children
    return dict_array(codes, values_enc(values), dtype=d.dtype)


@pytest.mark.parametrize("enc", ENCODERS)
def test_dict_of_encoded_values(enc):
    d = _dict_of(ENCODERS[enc], _strings(3000, 4, 0.1))
    assert d.children[1].encoding == f"vortex.{enc}"
    assert_same(stream_of(d, d.slice(10, 2000)))


def test_legacy_fsst_form():
    a = fsst_encode(_arr(_strings(500, 5, 0.1)))
    ulen, co = a.children[0], a.children[1]
    v = a.children[2] if len(a.children) > 2 else None
    codes = varbin_array(dt.Binary(True), co, a.buffers[2], v)
    legacy = Array(FSST, a.dtype, len(a), metadata=a.metadata, buffers=list(a.buffers[:2]),
                   children=[codes, ulen])
    assert_same(stream_of(legacy))
    # the codes as another canonical encoding: refused both ways
    co_vals = np.asarray(co.buffers[0].view(co.dtype.ptype.np_dtype)).astype(np.int64)
    rows = [bytes(a.buffers[2][co_vals[i]:co_vals[i + 1]]) for i in range(len(a))]
    view = from_arrow(pa.array(rows, type=pa.binary_view()), dtype=dt.Binary(True))
    assert view.encoding == "vortex.varbinview"
    bad = Array(FSST, a.dtype, len(a), metadata=a.metadata, buffers=list(a.buffers[:2]),
                children=[view, ulen])
    assert assert_same(stream_of(bad))[0] == "err"
    # the wrong number of children
    bad = Array(FSST, a.dtype, len(a), metadata=a.metadata, buffers=list(a.buffers[:2]),
                children=[codes, ulen, ulen])
    assert assert_same(stream_of(bad))[0] == "err"


@pytest.mark.parametrize("make", [
    lambda: pa.array(_strings(5000, 6)),
    lambda: pa.array(_strings(5000, 7, 0.1)),
    lambda: pa.array([f"https://example.com/{i % 977}/item?id={i * 7919 % 100003}" for i in range(20000)]),
    lambda: pa.array([f"user{i * 31 % 5003}@mail{i % 7}.example.org" if i % 9 else None for i in range(20000)]),
    lambda: pa.array([bytes([i % 256, (i * 7) % 256]) * (i % 5) for i in range(3000)], type=pa.binary()),
    lambda: pa.array(_names(20000, 1)),
    lambda: pa.array(_names(20000, 2, 0.5)),
])
def test_vortex_data_streams(make):
    from tests.vx_util import vx_stream

    arr = make()
    data = vx_stream([arr, arr.slice(5, 1000)], compress=True)
    assert_same(data)


def test_vortex_data_writes_these_encodings():
    from tests.vx_util import vx_stream

    urls = pa.array([f"https://example.com/{i % 977}/item?id={i * 7919 % 100003}" for i in range(20000)])
    words = pa.array(_names(20000, 3))
    for arr, enc in ((urls, "vortex.onpair"), (words, "vortex.fsst")):
        msgs = _messages(vx_stream(arr, compress=True))[1]
        assert all(enc in m.header.encodings for m in msgs)


# -- the kernels -----------------------------------------------------------------------------------

_OPS = {"eq": 0, "neq": 1, "lt": 2, "lte": 3, "gt": 4, "gte": 5}


def _messages(data):
    dec = MessageDecoder()
    dec.feed(data)
    dec.end_of_input()
    msgs = list(dec)
    return msgs[0], msgs[1:]


def _bits(b, n):
    if b is None:
        return np.ones(n, dtype=np.bool_)
    return np.unpackbits(np.frombuffer(b, np.uint8), bitorder="little")[:n].astype(np.bool_)


def _mask_eq(ref, nat, n):
    vals, valid = ref
    rv = np.ones(n, np.bool_) if valid is None else np.asarray(valid, np.bool_)
    nv = _bits(nat[2], n)
    assert np.array_equal(rv, nv), "validity differs"
    assert np.array_equal(np.asarray(vals, np.bool_) & rv, _bits(nat[1], n) & nv), "values differ"


def kernel_same(data, kind, *, op="eq", lits=(), idx=(), strict=True, limits=None):
    """Run one kernel on every message's root with the reference and natively: the same
    mask / column / validity, or the same error class."""
    limits = limits or ReaderLimits()
    with vio.StreamReader(data, limits=limits) as r:
        d = r.dtype
    head, msgs = _messages(data)
    del head
    s = ng.stream(d, limits)
    for m in msgs:
        n = m.header.row_count
        try:
            arr = m.array(d, limits)
            if kind == "compare":
                ref = ("mask", K.compare_storage(arr, lits[0], op))
            elif kind == "is_in":
                ref = ("mask", K.is_in_storage(arr, list(lits)))
            elif kind == "take":
                ref = ("col", K.take(arr, np.asarray(idx, np.int64)).to_arrow())
            else:
                ref = ("validity", py_validity(arr))
        except VortexIPCError as e:
            ref = ("err", type(e))
        nat = s.kernel((m.body, n, m.header.encodings, ng.known_flags(m.header.encodings)), kind,
                       _OPS[op], list(lits), list(idx), False)
        if nat[0] == "python" and not strict:
            continue
        if ref[0] == "err":
            assert nat[0] == "err", f"native {nat[0]}, reference raised {ref[1].__name__}"
            assert ng.error_of(nat[1], nat[2]).__class__ is ref[1], (nat, ref)
            continue
        assert nat[0] == ref[0], (nat, ref)
        if kind in ("compare", "is_in"):
            _mask_eq(ref[1], nat, n)
        elif kind == "take":
            got = pa.Array._import_from_c_capsule(pa.string().__arrow_c_schema__() if
                                                  isinstance(d, dt.Utf8) else
                                                  pa.binary().__arrow_c_schema__(), nat[1])
            want = ref[1]
            if isinstance(want, pa.ChunkedArray):
                want = want.combine_chunks()
            want = want.cast(got.type)
            assert identical(got, want), (got, want)
        else:
            want = ref[1]
            got = _bits(nat[1], n)
            assert np.array_equal(np.ones(n, np.bool_) if want is None else want, got)


needs_native = pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")


def _fsst_stream(vals, binary=False, table=None):
    a = fsst_encode(_arr(vals, binary), table)
    return stream_of(a, a.slice(3, len(a) - 2), a.slice(0, 0), a.slice(1, 2))


@needs_native
@pytest.mark.parametrize("nulls", [0.0, 0.2])
def test_fsst_compare_and_is_in(nulls):
    vals = _strings(3000, 9, nulls)
    data = _fsst_stream(vals)
    for needle in ["hello world", "", "a", "x" * 300, "absent", "hello", "wörld ünïcode ✓", "\x00\xff"]:
        for op in ("eq", "neq"):
            kernel_same(data, "compare", op=op, lits=[needle])
    kernel_same(data, "compare", op="lt", lits=["hello"])  # the generic kernel
    kernel_same(data, "is_in", lits=["a", "AAPL", "", "a", "nothing"])
    kernel_same(data, "is_in", lits=[f"w{i}" for i in range(20)] + ["a"])  # > 16: generic
    kernel_same(data, "validity")


@needs_native
def test_fsst_compare_needles_parsed_differently():
    # a writer may parse a row differently from the greedy parse of the needle: those rows
    # are decoded and compared (vortex-data's tables and parses)
    from tests.vx_util import vx_stream

    data = vx_stream(pa.array(_names(20000, 4)), compress=True)
    assert "vortex.fsst" in _messages(data)[1][0].header.encodings
    for needle in ("alpha bravo", "hotel hotel", "", "golf", "absent"):
        kernel_same(data, "compare", op="eq", lits=[needle])
        kernel_same(data, "compare", op="neq", lits=[needle])
    kernel_same(data, "is_in", lits=["alpha bravo", "echo delta", "nope"])
    vals = _strings(4000, 10)
    # a table with overlapping symbols: the needle's parse may differ from the rows'
    table = SymbolTable.from_bytes([b"he", b"hel", b"hello", b"llo", b"lo w", b"o", b" ", b"world"])
    data = _fsst_stream(vals, table=table)
    for needle in ("hello world", "hello", "hello there", "o"):
        kernel_same(data, "compare", op="eq", lits=[needle])
        kernel_same(data, "is_in", lits=[needle, "a"])


@needs_native
@pytest.mark.parametrize("binary", [False, True])
def test_fsst_take(binary):
    vals = _binary(2000, 11, 0.1) if binary else _strings(2000, 11, 0.1)
    rng = np.random.default_rng(12)
    a = fsst_encode(_arr(vals, binary))
    for part in (a, a.slice(100, 1500), a.slice(7, 8)):
        one = stream_of(part)
        n = len(part)
        for k in (0, 1, 9, 700):
            idx = np.sort(rng.integers(0, n, k)).tolist()
            kernel_same(one, "take", idx=idx)
    esc = fsst_encode(_arr(vals, True), SymbolTable.from_bytes([b"a", b"\xff\xff"]))
    kernel_same(stream_of(esc), "take", idx=list(range(0, 2000, 3)))


@needs_native
def test_dict_of_fsst_kernels():
    d = _dict_of(fsst_encode, _strings(3000, 13, 0.1))
    data = stream_of(d)
    for needle in ("hello world", "", "absent"):
        kernel_same(data, "compare", op="eq", lits=[needle])
        kernel_same(data, "compare", op="neq", lits=[needle])
    kernel_same(data, "is_in", lits=["a", "AAPL"])
    kernel_same(data, "validity")


# -- corruption --------------------------------------------------------------------------------

def _fsst_parts(vals, binary=False, table=None):
    a = fsst_encode(_arr(vals, binary), table)
    return a, [np.array(b, copy=True) for b in a.buffers], list(a.children)


def _fsst_with(a, buffers=None, children=None, metadata=None, dtype=None, n=None):
    return Array(FSST, dtype or a.dtype, len(a) if n is None else n,
                 metadata=a.metadata if metadata is None else metadata,
                 buffers=a.buffers if buffers is None else buffers,
                 children=a.children if children is None else children)


def _same_everywhere(data, limits=None):
    assert_same(data, limits=limits)
    if NATIVE:
        kernel_same(data, "compare", op="eq", lits=["hello world"], limits=limits)
        kernel_same(data, "is_in", lits=["a", ""], limits=limits)
        kernel_same(data, "take", idx=[0, 1, 1], limits=limits)
        kernel_same(data, "validity", limits=limits)


def test_fsst_malformed_buffers():
    a, bufs, kids = _fsst_parts(_strings(50, 14, 0.1))
    sym, lens, codes = bufs
    cases = []
    # a code stream ending with an escape (the last code of the window)
    bad = codes.copy()
    last = int(np.asarray(kids[1].buffers[0].view(kids[1].dtype.ptype.np_dtype))[-1])
    bad[last - 1] = np.uint8(255)
    cases.append([sym, lens, bad])
    cases.append([sym, lens, np.append(codes, np.uint8(255))])  # (outside the window: fine)
    # a code past the symbol table
    bad = codes.copy()
    bad[len(bad) // 2] = np.uint8(len(lens))
    cases.append([sym, lens, bad])
    # symbol lengths 0 and 9, a length count mismatch, ragged symbols, 256 symbols
    for v in (0, 9):
        ll = lens.copy()
        ll[0] = v
        cases.append([sym, ll, codes])
    cases.append([sym, lens[:-1], codes])
    cases.append([sym[:-3], lens, codes])
    cases.append([np.zeros(8 * 256, np.uint8), np.ones(256, np.uint8), codes])
    # shorter / longer symbols than the codes were made with: lengths disagree
    ll = lens.copy()
    ll[ll > 1] -= 1
    cases.append([sym, ll, codes])
    # the codes truncated / padded (the window then falls outside / decodes to more)
    cases.append([sym, lens, codes[:-1]])
    for b in cases:
        _same_everywhere(stream_of(_fsst_with(a, buffers=b)))


def test_fsst_malformed_children():
    a, _, kids = _fsst_parts(_strings(60, 15, 0.1))
    ulen, co = [np.asarray(k.buffers[0].view(k.dtype.ptype.np_dtype)) for k in kids[:2]]
    v = kids[2:]
    cases = []
    u = ulen.astype(np.int32)
    u[3] = -1
    cases.append([primitive_array(u), kids[1], *v])  # negative length
    u = ulen.astype(np.int64)
    u[0] += 1
    cases.append([primitive_array(u), kids[1], *v])  # lengths disagree with the codes
    u = ulen.astype(np.uint64)
    u[1] = np.uint64(1 << 63)
    cases.append([primitive_array(u), kids[1], *v])  # a sum past 2**62
    c = co.astype(np.int64)
    c[5], c[6] = c[6], c[5] - 1
    cases.append([kids[0], primitive_array(c), *v])  # codes_offsets not monotonic
    c = co.astype(np.int64)
    c[0] = -1
    cases.append([kids[0], primitive_array(c), *v])
    c = co.astype(np.int64)
    c[-1] += 10
    cases.append([kids[0], primitive_array(c), *v])  # past the codes
    c = co.astype(np.int64)
    c[0] = 1
    cases.append([kids[0], primitive_array(c), *v])  # a window missing a code
    cases.append([kids[0], primitive_array(co.astype(np.float64)), *v])  # not integers
    for ch in cases:
        meta = (ProtoWriter().varint(1, int(ch[0].dtype.ptype)).varint(2, int(ch[1].dtype.ptype))
                .finish() if ch[0].dtype.ptype.is_int and ch[1].dtype.ptype.is_int else
                ProtoWriter().varint(1, int(ch[0].dtype.ptype)).varint(2, 9).finish())
        _same_everywhere(stream_of(_fsst_with(a, children=ch, metadata=meta)))
    # metadata: a float ptype, an unknown ptype, junk
    for meta in (ProtoWriter().varint(1, 9).finish(), ProtoWriter().varint(2, 77).finish(), b"\xff"):
        _same_everywhere(stream_of(_fsst_with(a, metadata=meta)))
    # validity on a non-nullable dtype, too many children
    _same_everywhere(stream_of(_fsst_with(a, children=[*kids[:2], bool_array(np.ones(60, bool)), kids[0]])))


def test_fsst_escape_across_rows():
    # the reference decodes the rows' codes as one stream: an escape ending one row makes
    # the next row's first code its literal (valid as a whole, invalid row by row)
    sym = np.frombuffer(b"ab\0\0\0\0\0\0", np.uint8).copy()
    lens = np.array([2], np.uint8)
    codes = np.array([0, 255, ord("x"), 0, 0], np.uint8)
    ulen = primitive_array(np.array([2, 1, 0, 4], np.uint8))
    co = primitive_array(np.array([0, 1, 2, 3, 5], np.uint8))
    meta = ProtoWriter().varint(1, 0).varint(2, 0).finish()
    a = Array(FSST, dt.Binary(), 4, metadata=meta, buffers=[sym, lens, codes], children=[ulen, co])
    data = stream_of(a)
    assert_same(data)
    if NATIVE:
        for idx in ([0, 1, 2, 3], [1], [1, 2], [0, 3], [2], []):
            kernel_same(data, "take", idx=idx)
        for needle in (b"x", b"ab", b"abab", b""):
            kernel_same(data, "compare", op="eq", lits=[needle])
            kernel_same(data, "is_in", lits=[needle, b"q"])


def test_decoded_size_limits():
    vals = _strings(3000, 16)
    for enc in ENCODERS.values():
        a = enc(_arr(vals))
        data = stream_of(a)
        for cap in (1000, 60_000, 200_000, 10**9):
            _same_everywhere(data, limits=ReaderLimits(max_decoded_bytes=cap))


def _onpair_with(a, children=None, buffers=None, metadata=None):
    return Array(ONPAIR, a.dtype, len(a), metadata=a.metadata if metadata is None else metadata,
                 buffers=a.buffers if buffers is None else buffers,
                 children=a.children if children is None else children)


def _onpair_meta(m, **kw):
    f = m._asdict()
    f.update(kw)
    return (ProtoWriter().varint(1, int(f["uncompressed_lengths_ptype"])).varint(2, f["bits"])
            .varint(3, f["dict_size"]).varint(4, f["total_tokens"])
            .varint(5, int(f["dict_offsets_ptype"])).varint(6, int(f["codes_ptype"]))
            .varint(7, int(f["codes_offsets_ptype"])).finish())


def test_onpair_malformed():
    a = onpair_encode(_arr(_strings(200, 17, 0.1)))
    m = a.meta
    do, codes, co, ulen = [np.asarray(k.buffers[0].view(k.dtype.ptype.np_dtype)).astype(np.int64)
                           for k in a.children[:4]]
    v = list(a.children[4:])
    P = primitive_array
    I64 = dt.PType.I64

    def with_kids(d=do, c=codes, o=co, u=ulen, **kw):
        meta = _onpair_meta(m, dict_offsets_ptype=I64, codes_ptype=I64, codes_offsets_ptype=I64,
                            uncompressed_lengths_ptype=I64, dict_size=len(d) - 1,
                            total_tokens=len(c), **kw)
        return _onpair_with(a, children=[P(d), P(c), P(o), P(u), *v], metadata=meta)

    cases = [with_kids()]
    d = do.copy()
    d[2], d[3] = d[3], d[2]
    cases.append(with_kids(d=d))  # dict_offsets not monotonic
    d = do.copy()
    d[-1] = len(a.buffers[0]) + 1
    cases.append(with_kids(d=d))  # past the blob
    d = do.copy()
    d[1] = d[0]
    cases.append(with_kids(d=d))  # an empty token
    d = np.array([0, 17], np.int64)
    cases.append(with_kids(d=d, c=np.zeros(len(codes), np.int64)))  # a token over 16 bytes
    c = codes.copy()
    c[4] = len(do) - 1
    cases.append(with_kids(c=c))  # a code past the dictionary
    c = codes.copy()
    c[4] = -1
    cases.append(with_kids(c=c))
    u = ulen.copy()
    u[2] += 1
    cases.append(with_kids(u=u))  # lengths disagree
    u = ulen.copy()
    u[2] = -3
    cases.append(with_kids(u=u))
    o = co.copy()
    o[-1] += 1
    cases.append(with_kids(o=o))
    o = co.copy()
    o[0] = 1
    cases.append(with_kids(o=o))  # a window without the first code
    cases.append(with_kids(d=np.zeros(1, np.int64)))  # an empty dictionary
    cases.append(with_kids(bits=17))
    cases.append(_onpair_with(a, metadata=_onpair_meta(m, dict_size=1 << 17)))
    cases.append(_onpair_with(a, metadata=_onpair_meta(m, total_tokens=m.total_tokens + 5)))
    cases.append(_onpair_with(a, metadata=b"\x08\x09"))
    cases.append(_onpair_with(a, buffers=[a.buffers[0][:3]]))
    for arr in cases:
        assert_same(stream_of(arr))


def _mutants(data, flips):
    out = bytearray(data)
    for pos, x in flips:
        out[pos % len(out)] ^= x or 1
    return bytes(out)


_FLIPS = st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=3)


@pytest.fixture(scope="module")
def seed_streams():
    vals = _strings(300, 18, 0.1)
    f = fsst_encode(_arr(vals))
    esc = fsst_encode(_arr(_binary(300, 19, 0.1), True), SymbolTable.from_bytes([b"ab", b"c"]))
    o = onpair_encode(_arr(vals))
    d = _dict_of(fsst_encode, vals)
    return [stream_of(f, f.slice(5, 250)), stream_of(esc), stream_of(o, o.slice(3, 100)), stream_of(d)]


@given(which=st.integers(0, 3), flips=_FLIPS)
def test_random_flips_decode(seed_streams, which, flips):
    assert_same(_mutants(seed_streams[which], flips))


@given(which=st.integers(0, 1), flips=_FLIPS, needle=st.sampled_from(["hello world", "", "a", "zz"]))
def test_random_flips_kernels(seed_streams, which, flips, needle):
    if not NATIVE:
        return
    data = _mutants(seed_streams[which], flips)
    try:
        with vio.StreamReader(data) as r:
            assert isinstance(r.dtype, (dt.Utf8, dt.Binary))
            if isinstance(r.dtype, dt.Binary):
                needle = needle.encode()
    except (VortexIPCError, AssertionError):
        return  # the stream header itself is broken: nothing to run kernels on
    try:
        _messages(data)
    except VortexIPCError:
        return
    kernel_same(data, "compare", op="eq", lits=[needle], strict=False)
    kernel_same(data, "take", idx=[0, 2, 2, 9], strict=False) if _min_rows(data) > 9 else None
    kernel_same(data, "validity", strict=False)


def _min_rows(data):
    try:
        return min((m.header.row_count for m in _messages(data)[1]), default=0)
    except VortexIPCError:
        return 0


@given(st.lists(st.one_of(st.none(), st.text(max_size=30), st.sampled_from(WORDS)), max_size=80),
       st.sampled_from(list(ENCODERS)))
def test_random_strings(vals, enc):
    a = ENCODERS[enc](from_arrow(pa.array(vals, type=pa.string())))
    data = stream_of(a, a.slice(0, len(a) // 2))
    assert_same(data)
    if NATIVE and enc == "fsst":
        for needle in {v for v in vals[:3] if v is not None} | {"", "nope"}:
            kernel_same(data, "compare", op="eq", lits=[needle])
        if len(a):
            kernel_same(stream_of(a), "take", idx=sorted({0, len(a) - 1, len(a) // 2}))


def test_read_through_public_api():
    # the whole reader (both modes) on a table with FSST and OnPair columns
    t = pa.table({"f": pa.array(_strings(1000, 20, 0.1))})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=True)
    assert_same(buf.getvalue(), strict=False)


# -- structured corruption: valid messages, hostile values ---------------------------------------

_BASE_VALS = [*_strings(120, 21, 0.15), "\xff\xfe", "hello world" * 3]


@given(code_edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.sampled_from([0, 1, 5, 200, 254, 255])),
                           max_size=4),
       len_edit=st.one_of(st.none(), st.tuples(st.integers(0, 200), st.integers(-2, 2))),
       co_edit=st.one_of(st.none(), st.tuples(st.integers(0, 200), st.integers(-3, 3))),
       small_table=st.booleans(),
       needle=st.sampled_from(["hello world", "", "a", "AAPL", "hello worldhello worldhello world"]))
def test_fsst_hostile_values(code_edits, len_edit, co_edit, small_table, needle):
    table = SymbolTable.from_bytes([b"hel", b"lo", b" w", b"o", b"a"]) if small_table else None
    a = fsst_encode(_arr(_BASE_VALS), table)
    sym, lens, codes = (np.array(b, copy=True) for b in a.buffers)
    for pos, v in code_edits:
        if len(codes):
            codes[pos % len(codes)] = v
    ulen = np.asarray(a.children[0].buffers[0].view(a.children[0].dtype.ptype.np_dtype)).astype(np.int64)
    co = np.asarray(a.children[1].buffers[0].view(a.children[1].dtype.ptype.np_dtype)).astype(np.int64)
    if len_edit:
        ulen[len_edit[0] % len(ulen)] += len_edit[1]
    if co_edit:
        co[co_edit[0] % len(co)] += co_edit[1]
    meta = ProtoWriter().varint(1, int(dt.PType.I64)).varint(2, int(dt.PType.I64)).finish()
    b = Array(FSST, a.dtype, len(a), metadata=meta, buffers=[sym, lens, codes],
              children=[primitive_array(ulen), primitive_array(co), *a.children[2:]])
    data = stream_of(b, b.slice(2, 90))
    assert_same(data)
    if NATIVE:
        kernel_same(data, "compare", op="eq", lits=[needle])
        kernel_same(data, "compare", op="neq", lits=[needle])
        kernel_same(data, "is_in", lits=[needle, "a", "o"])
        kernel_same(data, "take", idx=[0, 1, 1, 5, 40, 87])
        kernel_same(data, "validity")


@given(code_edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(-2, 600)), max_size=3),
       len_edit=st.one_of(st.none(), st.tuples(st.integers(0, 200), st.integers(-2, 2))),
       do_edit=st.one_of(st.none(), st.tuples(st.integers(0, 600), st.integers(-3, 20))),
       co_edit=st.one_of(st.none(), st.tuples(st.integers(0, 200), st.integers(-3, 3))))
def test_onpair_hostile_values(code_edits, len_edit, do_edit, co_edit):
    a = onpair_encode(_arr(_BASE_VALS), dict_bits=9)
    do, codes, co, ulen = [np.asarray(k.buffers[0].view(k.dtype.ptype.np_dtype)).astype(np.int64)
                           for k in a.children[:4]]
    for pos, v in code_edits:
        codes[pos % len(codes)] = v
    for edit, arr in ((len_edit, ulen), (do_edit, do), (co_edit, co)):
        if edit:
            arr[edit[0] % len(arr)] += edit[1]
    i64 = dt.PType.I64
    meta = _onpair_meta(a.meta, dict_offsets_ptype=i64, codes_ptype=i64, codes_offsets_ptype=i64,
                        uncompressed_lengths_ptype=i64)
    b = _onpair_with(a, metadata=meta, children=[primitive_array(do), primitive_array(codes),
                                                 primitive_array(co), primitive_array(ulen),
                                                 *a.children[4:]])
    assert_same(stream_of(b, b.slice(3, 70)))
