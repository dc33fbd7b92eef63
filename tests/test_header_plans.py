"""Repeated array headers are built from a plan (``vortex_io.ipc.messages.HeaderPlans``):
the same arrays as a fresh decode, every node validated again against its own buffers, and
nothing planned that a header alone cannot describe."""

from __future__ import annotations

import io
import struct

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from fuzz.wire import parse_stream
from vortex_io.datasets import trades
from vortex_io.encodings.chunked import chunked_array
from vortex_io.errors import MalformedStreamError, VortexIPCError
from vortex_io.ipc.framing import MessageDecoder

# header plans are machinery of the numpy reference path
pytestmark = pytest.mark.usefixtures("reference_path")


def _stream(table, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, table, **kw)
    return buf.getvalue()


def _fresh_decode(data: bytes):
    """Every batch decoded without plans (Message.array with no cache)."""
    dec = MessageDecoder()
    dec.feed(data)
    msgs = list(dec)
    dtype = msgs[0].dtype()
    return [m.array(dtype) for m in msgs[1:]]


def test_repeated_headers_hit_and_decode_the_same():
    t = trades(20_000)
    data = _stream(t, chunk_rows=2048, compress=False)  # headers differ in buffer sizes only
    r = vio.StreamReader(data)
    got = [b.array for b in r]
    assert r._plans.hits >= 6  # 10 messages: 2 to plan, the last has fewer rows
    fresh = _fresh_decode(data)
    assert len(got) == len(fresh)
    for a, f in zip(got, fresh):
        assert a.tree() == f.tree()
        assert a.to_arrow().equals(f.to_arrow())
        # the buffers are the message's own, not the planned message's
        for x, y in zip(_leaves(a), _leaves(f)):
            assert x.ctypes.data == y.ctypes.data
    assert vio.StreamReader(data).read_arrow().equals(t)


def _leaves(a):
    out = list(a.buffers)
    for c in a.children:
        out.extend(_leaves(c))
    return out


def test_planned_stats_are_copies():
    """A constant column repeats its header, statistics included: planned batches get
    their own copy of the statistics (ArrayStats is mutable)."""
    t = pa.table({"x": pa.array(np.zeros(8192, np.int64))})
    data = _stream(t, chunk_rows=1024, compress=True)
    r = vio.StreamReader(data)
    cols = [b.array.children[0] for b in r]
    assert r._plans.hits == 6
    assert all(c.encoding == "vortex.constant" and c._stats is not None for c in cols)
    assert cols[-1]._stats == cols[-2]._stats and cols[-1]._stats is not cols[-2]._stats
    assert all(c.to_arrow().equals(pa.array(np.zeros(1024, np.int64))) for c in cols)


def _tamper_buffer_length(data: bytes, message: int, buffer: int, new_len: int) -> bytes:
    msgs = parse_stream(data)
    fields = [f for f in msgs[message].fields if f.what == "buffer length"]
    f = fields[buffer]
    out = bytearray(data)
    struct.pack_into("<I", out, f.pos, new_len)
    return bytes(out)


@pytest.mark.parametrize("reader", ["sync", "async"])
def test_a_planned_header_still_checks_its_buffers(reader):
    """Message 4 repeats the header of messages 1-3 but one buffer is 8 bytes short:
    decoded from the plan, its node's validate still refuses it, with where."""
    t = pa.table({"x": pa.array(np.arange(4096, dtype=np.int64))})
    data = _stream(t, chunk_rows=1024, compress=False)
    bad = _tamper_buffer_length(data, 4, 0, 1024 * 8 - 8)
    if reader == "sync":
        r = vio.StreamReader(bad)
        with pytest.raises(MalformedStreamError) as ei:
            list(r)
        assert r._plans.hits >= 1
    else:
        import asyncio

        async def run():
            async with vio.AsyncStreamReader(_reader_of(bad)) as rd:
                return [b async for b in rd]

        with pytest.raises(MalformedStreamError) as ei:
            asyncio.run(run())
    e = ei.value
    assert "vortex.primitive buffer is 8184 bytes" in str(e)
    assert e.message_index == 4


def _reader_of(data: bytes):
    import asyncio

    r = asyncio.StreamReader()
    r.feed_data(data)
    r.feed_eof()
    return r


def test_custom_builds_are_not_planned():
    """vortex.chunked derives its children from its offsets' contents: never planned
    (writers split chunked arrays into messages, so the tree is checked directly)."""
    from vortex_io.ipc.messages import _plan_of

    parts = [vio.array(pa.array(np.arange(i * 100, i * 100 + 100))) for i in range(3)]
    arr = chunked_array(parts, parts[0].dtype)
    bufs = [b for p in parts for b in p.buffers]
    assert _plan_of(arr, bufs) is None
    assert _plan_of(parts[0], bufs) is not None
    # a node holding a buffer that is not one of the message's own: not planned either
    assert _plan_of(parts[0], bufs[1:]) is None


def test_plans_are_bounded_and_per_reader():
    from vortex_io.ipc.messages import HeaderPlans

    p = HeaderPlans(size=2)
    for k in range(5):
        p.put((k,), object())
    assert len(p._plans) == 2 and (4,) in p._plans and (0,) not in p._plans
    t = trades(5000)
    data = _stream(t, chunk_rows=1000)
    r1, r2 = vio.StreamReader(data), vio.StreamReader(data)
    assert r1._plans is not r2._plans
    with pytest.raises(VortexIPCError):
        list(vio.StreamReader(data[:-10]))


# -- templates: compressed batches of the same structure -------------------------------------


def _outcome(data: bytes, plans: bool, lazy: bool = False):
    """Every batch decoded to Arrow (lazily built fields when ``lazy``), or the error a
    reader raised: (class, text with its location)."""
    r = vio.StreamReader(data)
    if not plans:
        r._plans = None
    r._lazy_fields = lazy
    out = []
    try:
        for b in r:
            out.append(b.array.to_arrow())
    except VortexIPCError as e:
        return type(e), str(e)
    return out


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return len(a) == len(b) and all(x.equals(y) for x, y in zip(a, b))


COMPRESSED = _stream(trades(40_000), chunk_rows=2048, compress=True)


@pytest.mark.parametrize("lazy", [False, True])
def test_compressed_batches_of_one_structure_use_a_template(lazy):
    """Compressed batches differ in metadata and statistics, not in structure: after two
    sightings, later headers are built from the recorded walk, with the same arrays."""
    r = vio.StreamReader(COMPRESSED)
    r._lazy_fields = lazy
    got = [b.array for b in r]
    assert r._plans.hits == 0  # no header repeats byte for byte
    assert r._plans.template_hits >= 5
    fresh = _fresh_decode(COMPRESSED)
    for a, f in zip(got, fresh, strict=True):
        assert a.tree() == f.tree()
        assert a.to_arrow().equals(f.to_arrow())
        assert a.children[0].stats == f.children[0].stats  # read afresh, not the template's
    assert vio.StreamReader(COMPRESSED).read_arrow().equals(trades(40_000))


def _header_span(data: bytes, message: int) -> tuple[int, int]:
    """[start, end) of message ``message``'s Array flatbuffer in the stream."""
    dec = MessageDecoder()
    dec.feed(data)
    m = list(dec)[message]
    body = bytes(m.body)
    n = len(body)
    fb_len = struct.unpack_from("<I", body, n - 4)[0]
    start = m.offset + 4 + m.header_size + n - 4 - fb_len
    return start, start + fb_len


@pytest.mark.parametrize("lazy", [False, True])
def test_a_tampered_header_decodes_as_without_templates(lazy):
    """Differential: one byte changed anywhere in the header of a batch that would use a
    template gives exactly what a reader without plans gives (the same arrays, or the same
    error at the same place): structural bytes send it back to a full walk, metadata and
    statistics are read from its own header either way."""
    rng = np.random.default_rng(7)
    nmsg = len(parse_stream(COMPRESSED)) - 1
    seen_errors = 0
    for _ in range(60):
        k = int(rng.integers(4, nmsg + 1))  # after two sightings of the structure
        lo, hi = _header_span(COMPRESSED, k)
        pos = int(rng.integers(lo, hi))
        bad = bytearray(COMPRESSED)
        bad[pos] ^= int(rng.integers(1, 256))
        bad = bytes(bad)
        a, b = _outcome(bad, True, lazy), _outcome(bad, False, lazy)
        assert _same(a, b), (k, pos - lo, a if isinstance(a, tuple) else "arrays",
                             b if isinstance(b, tuple) else "arrays")
        seen_errors += isinstance(a, tuple)
    assert seen_errors > 5  # the mutations reached checks, not only values
