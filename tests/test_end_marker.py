"""The end-of-stream marker without integrity data (``StreamWriter(end_marker=True)``):
readers stop at it and leave what follows unread (the next stream on a pipe or socket), it
is a few hundred bytes whatever the dtype, vortex-data reads such streams, and malformed
markers are located errors."""

from __future__ import annotations

import asyncio
import io
import os
import threading

import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io._ipc.framing import MessageDecoder, MessageEncoder
from vortex_io.integrity import END_KEY, end_value

from .vx_util import vx_decode_stream


def _parts(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


def _stream(t: pa.Table, **kw) -> bytes:
    buf = io.BytesIO()
    with vio.StreamWriter(buf, t.schema, **kw) as w:
        for b in t.to_batches(max_chunksize=3):
            w.write(b, metadata={"rows": str(b.num_rows)})
    return buf.getvalue()


# -- the end marker ------------------------------------------------------------------------


def test_end_marker_stops_readers_and_leaves_the_next_stream() -> None:
    t = pa.table({"x": list(range(7)), "s": ["a", "b", None, "d", "e", "f", "g"]})
    one, two = _stream(t, end_marker=True), _stream(t.slice(2), end_marker=True)
    f = io.BytesIO(one + two)
    with vio.StreamReader(f) as r:
        assert r.read_arrow().equals(t)
    assert f.tell() == len(one)  # nothing of the second stream was read
    with vio.StreamReader(f) as r:
        assert r.read_arrow().equals(t.slice(2))
    # by bytes: the first stream only
    assert vio.StreamReader(one + two).read_arrow().equals(t)
    assert vio.read_table(one).equals(t)


def test_end_marker_over_a_pipe_between_processes_threads() -> None:
    t = pa.table({"x": [1, 2, 3]})
    rfd, wfd = os.pipe()
    got: list[pa.Table] = []

    def read() -> None:
        with os.fdopen(rfd, "rb", buffering=0) as f:
            for _ in range(3):
                with vio.StreamReader(f) as r:
                    got.append(r.read_arrow())

    th = threading.Thread(target=read)
    th.start()
    with os.fdopen(wfd, "wb", buffering=0) as f:
        for i in range(3):
            with vio.StreamWriter(f, t.schema, end_marker=True) as w:
                w.write(t.slice(i))
            assert not f.closed  # a file object is only flushed: the next stream follows
    th.join(30)
    assert not th.is_alive()
    assert [g.num_rows for g in got] == [3, 2, 1]


def test_async_end_marker_back_to_back() -> None:
    t = pa.table({"x": [1, 2, 3]})

    async def main() -> list[int]:
        data = _stream(t, end_marker=True) * 2
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        rows = []
        for _ in range(2):
            async with vio.AsyncStreamReader(reader) as r:
                rows.append(sum([b.num_rows async for b in r]))
        return rows

    assert asyncio.run(main()) == [3, 3]


def test_end_marker_is_small_whatever_the_dtype() -> None:
    sizes = []
    for width in (1, 50):
        t = pa.table({f"c{i}": pa.array([1.5], pa.float64()) for i in range(width)})
        plain = _stream(t)
        marked = _stream(t, end_marker=True)
        sizes.append(len(marked) - len(plain))
    # a zero-chunk vortex.chunked array: its framing, two encoding names, the 16-byte count
    # and one 8-byte offsets buffer, the same for one column or fifty
    assert sizes[0] == sizes[1] <= 352, sizes


def test_vortex_data_reads_a_stream_with_an_end_marker() -> None:
    t = pa.table({"x": [1, 2, 3], "s": ["a", None, "c"]})
    data = _stream(t, end_marker=True)
    arrays = vx_decode_stream(data)
    assert [len(a) for a in arrays] == [3, 0]  # the marker: one more, empty, array
    assert arrays[0].to_arrow_array().to_pylist() == t.to_pylist()


def test_decoder_unused_data_and_finished() -> None:
    enc = MessageEncoder()
    data = _parts(enc.dtype_message(vio.dtype.int64())) + _parts(enc.array_message(vio.array([1])))
    data += _parts(enc.end_marker())
    dec = MessageDecoder()
    dec.feed(data[:-3])
    assert [m.end_marker for m in dec] == [False, False] and not dec.finished
    dec.feed(data[-3:] + b"\x01\x02")
    assert [m.end_marker for m in dec] == [True]
    assert dec.finished and dec.unused_data == b"\x01\x02"
    dec.feed(b"\x03")
    assert dec.next_message() is None and dec.unused_data == b"\x01\x02\x03"
    dec.end_of_input()  # nothing raised: what follows is not this stream's


def test_malformed_end_markers_are_located_errors() -> None:
    enc = MessageEncoder()
    head = _parts(enc.dtype_message(vio.dtype.int64())) + _parts(enc.array_message(vio.array([1])))
    # the counts do not match (the marker says one message before it, there are two)
    enc2 = MessageEncoder(enc.position)
    enc2._dtype = vio.dtype.int64()
    enc2.messages = 1
    wrong = _parts(enc2.end_marker())
    with pytest.raises(vio.MalformedStreamError, match="end marker counts 1 message") as e:
        list(vio.StreamReader(head + wrong))
    assert e.value.message_index == 2
    # a marker on a message with rows
    from vortex_io._metadata import Metadata

    enc3 = MessageEncoder(enc.position)
    rows = _parts(enc3._array_message(vio.array([5]), Metadata([(END_KEY, end_value(2, 1))])))
    with pytest.raises(vio.MalformedStreamError, match="malformed end marker"):
        list(vio.StreamReader(head + rows))
    # a plain empty Array message is no marker: it reads as an empty batch
    empty = _parts(MessageEncoder(enc.position).array_message(vio.array([], dtype=vio.dtype.int64())))
    assert [b.num_rows for b in vio.StreamReader(head + empty)] == [1, 0]


def test_integrity_streams_still_refuse_bytes_after_the_marker() -> None:
    t = pa.table({"x": [1, 2, 3]})
    data = _stream(t, integrity=True)
    with pytest.raises(vio.IntegrityError, match="follow the stream's end marker"):
        dec = MessageDecoder()
        dec.feed(data + b"xx")
        list(dec)


def test_end_marker_argument_is_checked() -> None:
    with pytest.raises(TypeError, match="end_marker must be a bool"):
        vio.StreamWriter(io.BytesIO(), vio.dtype.int64(), end_marker="yes")  # type: ignore[arg-type]
