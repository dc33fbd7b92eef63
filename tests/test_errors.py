"""Every rule the reader enforces (issue 2, "Rules the reader enforces", "Errors"): the
error class, its message text, and where it says the fault is (message index, offset).

Malformed streams are built from valid ones by patching bytes, or assembled from
messages with the flatbuffer encoders of ``vortex_io._ipc.schema`` (and, for fields our
writer never sets, a small FlatBuffers builder written here).
"""

from __future__ import annotations

import asyncio
import io
import struct

import flatbuffers
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from tests.vx_util import our_array_stream
from vortex_io import dtype as dt
from vortex_io._ipc.flatbuf import root
from vortex_io._ipc.schema import (
    FlatNode,
    MessageType,
    decode_dtype,
    encode_array_fb,
    encode_dtype,
    encode_message_header,
)
from vortex_io._scalar import value_from_proto
from vortex_io.encodings._chunked import chunked_array

U32 = struct.Struct("<I")


# -- stream assembly -----------------------------------------------------------------------


def frame(header: bytes, body: bytes = b"") -> bytes:
    return U32.pack(len(header)) + header + body


def dtype_msg(d: dt.DType, metadata=None) -> bytes:
    body = encode_dtype(d)
    return frame(encode_message_header(MessageType.DTYPE, len(body),
                                       metadata=vio.Metadata(metadata)), body)


def node(enc: int, buffers=(), children=(), metadata: bytes = b"") -> FlatNode:
    return FlatNode(enc, metadata, list(buffers), list(children), None)


def array_msg(root_node: FlatNode, buffers: list[bytes], encodings: list[str], rows: int,
              specs: list[tuple[int, int, int]] | None = None) -> bytes:
    """An Array message: buffers back to back, then the Array flatbuffer and its length."""
    if specs is None:
        specs = [(0, 0, len(b)) for b in buffers]
    fb = encode_array_fb(root_node, specs)
    body = b"".join(buffers) + fb + U32.pack(len(fb))
    hdr = encode_message_header(MessageType.ARRAY, len(body), row_count=rows, encodings=encodings)
    return frame(hdr, body)


def raw_message_header(*, version: int = 0, header_type: int = 1, body_size: int = 0,
                       row_count: int = 0, encodings=("vortex.primitive",)) -> bytes:
    """A Message flatbuffer with every field written explicitly (incl. version)."""
    b = flatbuffers.Builder(128)
    b.ForceDefaults(True)
    if header_type == 1:
        encs = [b.CreateString(e) for e in encodings]
        b.StartVector(4, len(encs), 4)
        for o in reversed(encs):
            b.PrependUOffsetTRelative(o)
        ev = b.EndVector()
        b.StartObject(2)
        b.PrependUint32Slot(0, row_count, 0)
        b.PrependUOffsetTRelativeSlot(1, ev, 0)
    else:
        b.StartObject(1)
        b.PrependUint8Slot(0, 0, 0)
    hdr = b.EndObject()
    b.StartObject(4)
    b.PrependUint64Slot(3, body_size, 0)
    b.PrependUOffsetTRelativeSlot(2, hdr, 0)
    b.PrependUint8Slot(1, header_type, 0)
    b.PrependUint8Slot(0, version, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def i64_values(*vals: int) -> bytes:
    return np.array(vals, dtype="<i8").tobytes()


def our_stream(data, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, data, compress=False, **kw)
    return buf.getvalue()


def messages(stream: bytes) -> list:
    dec = vio.MessageDecoder()
    dec.feed(stream)
    out = list(dec)
    dec.end_of_input()
    return out


def read_all(source, **kw) -> list:
    """Every batch of a stream, fully decoded to Arrow."""
    with vio.StreamReader(source, **kw) as r:
        return [b.array.to_arrow() for b in r]


def read_batches(source, **kw) -> list:
    """Every batch of a stream by ``Batch.to_arrow()`` alone (with the native core: decoded
    natively, the Python tree never built)."""
    with vio.StreamReader(source, **kw) as r:
        return [b.to_arrow() for b in r]


def expect_error(source, cls, *texts, index=None, offset=None, **kw) -> vio.VortexIPCError:
    """Reading ``source`` raises exactly ``cls`` whose message contains every text; read
    batch by batch with ``Batch.to_arrow()`` it raises the same class at the same place."""
    # (a file object is read twice only if it can go back)
    again = not hasattr(source, "read") or getattr(source, "seekable", lambda: False)()
    if again:
        start = source.tell() if hasattr(source, "read") else 0
        with pytest.raises(vio.VortexIPCError) as ei:
            read_batches(source, **kw)
        by_batch = ei.value
        if hasattr(source, "read"):
            source.seek(start)
    with pytest.raises(vio.VortexIPCError) as ei:
        read_all(source, **kw)
    e = ei.value
    if again:
        assert (type(by_batch), by_batch.message_index, by_batch.offset) == (
            type(e), e.message_index, e.offset), (by_batch, e)
    assert type(e) is cls, f"expected {cls.__name__}, got {type(e).__name__}: {e}"
    for t in texts:
        assert t in str(e), f"{t!r} not in {str(e)!r}"
    if index is not None:
        assert e.message_index == index and f"message {index}" in str(e)
    if offset is not None:
        assert e.offset == offset and f"byte offset {offset}" in str(e)
    return e


I64 = dt.int64()
DT_I64 = dtype_msg(I64)
GOOD_I64 = array_msg(node(0, [0]), [i64_values(1, 2, 3)], ["vortex.primitive"], 3)


def test_assembled_stream_is_valid():
    """The building blocks used below make a stream the reader accepts."""
    (a,) = read_all(DT_I64 + GOOD_I64)
    assert a.to_pylist() == [1, 2, 3]


# -- message order -------------------------------------------------------------------------


def test_empty_input():
    for src in (b"", io.BytesIO(b"")):
        expect_error(src, vio.MalformedStreamError, "the stream is empty", offset=0)


def test_first_message_must_be_a_dtype_message():
    expect_error(GOOD_I64 + DT_I64, vio.MalformedStreamError,
                 "must start with a DType message, not ARRAY", index=0, offset=0)
    buf = frame(encode_message_header(MessageType.BUFFER, 3), b"abc")
    expect_error(buf + GOOD_I64, vio.MalformedStreamError,
                 "must start with a DType message, not BUFFER", index=0, offset=0)


def test_buffer_message_in_a_stream():
    buf = frame(encode_message_header(MessageType.BUFFER, 3), b"abc")
    stream = DT_I64 + GOOD_I64 + buf + GOOD_I64
    with vio.StreamReader(stream) as r:
        assert next(iter(r)).array.to_pylist() == [1, 2, 3]  # batches before it are fine
    expect_error(stream, vio.MalformedStreamError, "a Buffer message is not allowed",
                 index=2, offset=len(DT_I64) + len(GOOD_I64))


def test_second_dtype_message():
    stream = DT_I64 + GOOD_I64 + DT_I64 + GOOD_I64
    expect_error(stream, vio.MalformedStreamError, "a second DType message",
                 index=2, offset=len(DT_I64) + len(GOOD_I64))


# -- truncation ----------------------------------------------------------------------------

SMALL = pa.table({"x": pa.array([1, None, 3, 4, 5], pa.int64()), "s": ["a", "bb", None, "", "e"]})
SMALL_STREAM = our_stream(SMALL, chunk_rows=2, metadata={"m": "1"})
SMALL_MSGS = messages(SMALL_STREAM)


def test_small_stream_shape():
    assert [m.type for m in SMALL_MSGS] == [MessageType.DTYPE] + [MessageType.ARRAY] * 3


@pytest.mark.parametrize("wrap", [bytes, io.BytesIO], ids=["bytes", "file"])
def test_truncation_at_every_offset(wrap):
    ends = [m.offset + m.size for m in SMALL_MSGS]
    full = read_all(SMALL_STREAM)
    for cut in range(len(SMALL_STREAM)):
        src = wrap(SMALL_STREAM[:cut])
        if cut == 0:
            expect_error(src, vio.MalformedStreamError, "empty")
            continue
        if cut in ends:
            # a complete prefix: the DType message plus the whole batches before the cut
            got = read_all(src)
            assert len(got) == ends.index(cut)
            assert [g.to_pylist() for g in got] == [f.to_pylist() for f in full[: len(got)]]
            continue
        index = next(m.index for m in SMALL_MSGS if m.offset < cut < m.offset + m.size)
        e = expect_error(src, vio.TruncatedStreamError, "stream ends inside the", index=index,
                         offset=cut)
        assert isinstance(e, vio.MalformedStreamError)


def test_lone_dtype_message_is_an_empty_stream():
    lone = SMALL_STREAM[: SMALL_MSGS[0].size]
    with vio.StreamReader(lone) as r:
        assert r.dtype == vio.dtype.from_arrow(SMALL.schema)
        assert r.metadata == {b"m": b"1"}
        assert list(r) == []
    with vio.StreamReader(lone) as r:
        t = r.read_arrow()
    assert t.num_rows == 0 and t.schema.names == ["x", "s"]
    assert len(vio.read_ipc(lone)) == 0


# -- versions, encodings, compression, alignment ---------------------------------------


def test_message_version_other_than_v0():
    body = encode_dtype(I64)
    for v in (1, 7, 255):
        bad = frame(raw_message_header(version=v, header_type=3, body_size=len(body)), body)
        expect_error(bad, vio.UnsupportedError, f"unsupported message version V{v}", index=0,
                     offset=0)
        fb = array_msg(node(0, [0]), [i64_values(1)], ["vortex.primitive"], 1)
        body2 = fb[4 + U32.unpack_from(fb)[0]:]
        hdr = raw_message_header(version=v, body_size=len(body2), row_count=1)
        expect_error(DT_I64 + frame(hdr, body2), vio.UnsupportedError,
                     f"unsupported message version V{v}", index=1, offset=len(DT_I64))
    # the explicit-version builder itself writes headers the reader accepts
    hdr = raw_message_header(version=0, body_size=len(body2), row_count=1)
    assert read_all(DT_I64 + frame(hdr, body2))[0].to_pylist() == [1]


def test_unknown_message_header_type():
    bad = frame(raw_message_header(header_type=9, body_size=0))
    expect_error(bad, vio.MalformedStreamError, "unknown message header type 9", index=0)


def test_zero_header_length():
    expect_error(DT_I64 + U32.pack(0) + b"xxxx", vio.MalformedStreamError,
                 "message header length is 0", index=1, offset=len(DT_I64))


def test_unknown_encoding_id_is_named():
    stream = DT_I64 + array_msg(node(0, [0]), [i64_values(1)], ["acme.mystery"], 1)
    expect_error(stream, vio.UnsupportedError, "unsupported encoding 'acme.mystery'", index=1,
                 offset=len(DT_I64))
    # deeper in a tree, by patching a valid stream's encoding table
    s = our_stream(pa.table({"x": [1, 2]}))
    patched = s.replace(b"vortex.primitive", b"vortex.primitivX")
    assert patched != s
    expect_error(patched, vio.UnsupportedError, "'vortex.primitivX'", index=1)


def test_encoding_index_out_of_the_table():
    stream = DT_I64 + array_msg(node(3, [0]), [i64_values(1)], ["vortex.primitive"], 1)
    expect_error(stream, vio.MalformedStreamError, "names encoding #3", "lists 1", index=1)


def _buffer_struct_positions(msg: bytes) -> tuple[int, int]:
    """(absolute position in ``msg`` of the first Buffer struct, count)."""
    hlen = U32.unpack_from(msg)[0]
    body = msg[4 + hlen:]
    fb_len = U32.unpack_from(body, len(body) - 4)[0]
    fb_start = len(body) - 4 - fb_len
    start, n = root(memoryview(body[fb_start:-4]), "Array").vector_raw(1, 8)
    return 4 + hlen + fb_start + start, n


def _patch(msg: bytes, pos: int, value: bytes) -> bytes:
    return msg[:pos] + value + msg[pos + len(value):]


def test_lz4_compressed_buffer_is_unsupported():
    pos, n = _buffer_struct_positions(GOOD_I64)
    assert n == 1 and GOOD_I64[pos + 3] == 0
    bad = _patch(GOOD_I64, pos + 3, b"\x01")
    expect_error(DT_I64 + bad, vio.UnsupportedError, "buffer 0 uses compression LZ4",
                 "only uncompressed", index=1, offset=len(DT_I64))
    bad = _patch(GOOD_I64, pos + 3, b"\x05")
    expect_error(DT_I64 + bad, vio.UnsupportedError, "compression 5", index=1)


def test_alignment_exponent_above_16():
    pos, _ = _buffer_struct_positions(GOOD_I64)
    assert GOOD_I64[pos + 2] == 0
    for exp in (17, 255):
        bad = _patch(GOOD_I64, pos + 2, bytes([exp]))
        expect_error(DT_I64 + bad, vio.MalformedStreamError,
                     f"buffer 0 has alignment exponent {exp}", index=1, offset=len(DT_I64))
    ok = _patch(GOOD_I64, pos + 2, bytes([16]))  # 16 is allowed (the buffer gets copied)
    assert read_all(DT_I64 + ok)[0].to_pylist() == [1, 2, 3]


def test_padding_is_honoured_and_checked():
    # two bytes of padding before the buffer
    msg = array_msg(node(0, [0]), [b"\xee\xee" + i64_values(4, 5)], ["vortex.primitive"], 2,
                    specs=[(2, 3, 16)])
    assert read_all(DT_I64 + msg)[0].to_pylist() == [4, 5]
    # padding that pushes the buffer past the data
    msg = array_msg(node(0, [0]), [i64_values(4, 5)], ["vortex.primitive"], 2, specs=[(8, 3, 16)])
    expect_error(DT_I64 + msg, vio.MalformedStreamError, "buffer 0 [8, 24) runs past", index=1)


# -- limits (checked before anything is allocated) ----------------------------------------


def test_row_count_above_the_limit():
    limits = vio.ReaderLimits(max_rows_per_message=10)
    s = our_stream(pa.array(range(11)), chunk_rows=11)
    expect_error(s, vio.LimitExceededError, "array message of 11 rows",
                 "over the limit of 10", index=1, limits=limits)
    assert read_all(our_stream(pa.array(range(10))), limits=limits)[0].to_pylist() == list(range(10))


class Dribble(io.RawIOBase):
    """A file that only holds ``data``; records how much of it was asked for."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = len(self.data) - self.pos if n < 0 else n
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out


def test_header_above_max_header_bytes_before_it_arrives():
    limits = vio.ReaderLimits(max_header_bytes=1000)
    prefix = U32.pack(5000)
    dec = vio.MessageDecoder(limits=limits)
    dec.feed(prefix)  # only the length prefix: the header itself never arrives
    with pytest.raises(vio.LimitExceededError) as ei:
        dec.next_message()
    assert "message header of 5000 bytes exceeds the limit of 1000" in str(ei.value)
    assert ei.value.message_index == 0 and ei.value.offset == 0
    # a reader over a file holding only the prefix hits the limit, not the truncation
    src = Dribble(DT_I64 + U32.pack(2**32 - 1))
    expect_error(src, vio.LimitExceededError, f"message header of {2**32 - 1} bytes",
                 "limit of 1000", index=1, offset=len(DT_I64), limits=limits)
    assert src.pos == len(src.data)


def test_body_above_max_body_bytes_before_it_arrives():
    limits = vio.ReaderLimits(max_body_bytes=1 << 20)
    hdr = encode_message_header(MessageType.ARRAY, 2**40, row_count=1,
                                encodings=["vortex.primitive"])
    dec = vio.MessageDecoder(limits=limits)
    dec.feed(DT_I64 + U32.pack(len(hdr)) + hdr)  # prefix + header, no body
    assert dec.next_message() is not None  # the DType message
    with pytest.raises(vio.LimitExceededError) as ei:
        dec.next_message()
    assert f"message body of {2**40} bytes exceeds the limit of {1 << 20}" in str(ei.value)
    assert ei.value.message_index == 1 and ei.value.offset == len(DT_I64)
    # default limits still refuse a body of 2**63 bytes without trying to buffer it
    hdr = encode_message_header(MessageType.ARRAY, 2**63, row_count=1, encodings=["x"])
    expect_error(Dribble(DT_I64 + U32.pack(len(hdr)) + hdr), vio.LimitExceededError,
                 f"message body of {2**63} bytes", index=1)


def _nested_struct(depth: int) -> pa.Array:
    a = pa.array([1, 2])
    for i in range(depth):
        a = pa.StructArray.from_arrays([a], names=[f"f{i}"])
    return a


def test_tree_deeper_than_max_depth():
    # chunks of chunks of ...: a deep encoding tree under a flat i64 dtype
    arr = vio.array([1, 2, 3])
    for _ in range(6):
        arr = chunked_array([arr, vio.array([4])], arr.dtype)
    s = our_array_stream(arr)
    (got,) = read_all(s, limits=vio.ReaderLimits(max_depth=6))  # depth 6 just fits
    assert got.to_pylist() == [1, 2, 3] + [4] * 6
    e = expect_error(s, vio.LimitExceededError, "array tree deeper than 5", index=1,
                     limits=vio.ReaderLimits(max_depth=5))
    assert e.offset == messages(s)[1].offset


def test_dtype_deeper_than_max_depth():
    s = our_stream(vio.array(_nested_struct(6)))
    expect_error(s, vio.LimitExceededError, "DType nesting deeper than 2", index=0,
                 limits=vio.ReaderLimits(max_depth=2))


def test_too_many_nodes():
    t = pa.table({f"c{i}": [i] for i in range(5)})
    s = our_stream(t)
    assert read_all(s, limits=vio.ReaderLimits(max_nodes=6))
    expect_error(s, vio.LimitExceededError, "more than 5 nodes", index=1,
                 limits=vio.ReaderLimits(max_nodes=5))


def test_too_many_buffers():
    t = pa.table({f"c{i}": [i] for i in range(5)})
    s = our_stream(t)
    assert read_all(s, limits=vio.ReaderLimits(max_buffers=5))
    expect_error(s, vio.LimitExceededError, "5 buffers in one message", "limit of 4", index=1,
                 limits=vio.ReaderLimits(max_buffers=4))


# -- array trees inconsistent with themselves or the stream ------------------------------


def test_buffer_index_out_of_range():
    stream = DT_I64 + array_msg(node(0, [5]), [i64_values(1)], ["vortex.primitive"], 1)
    expect_error(stream, vio.MalformedStreamError, "names buffer #5", "the message has 1",
                 index=1, offset=len(DT_I64))


def test_buffer_running_past_the_body():
    pos, _ = _buffer_struct_positions(GOOD_I64)
    bad = _patch(GOOD_I64, pos + 4, U32.pack(10_000))
    expect_error(DT_I64 + bad, vio.MalformedStreamError, "buffer 0 [0, 10000) runs past",
                 index=1, offset=len(DT_I64))
    bad = _patch(GOOD_I64, pos + 4, U32.pack(2**32 - 1))
    expect_error(DT_I64 + bad, vio.MalformedStreamError, "runs past", index=1)


def test_array_flatbuffer_length_out_of_range():
    bad = GOOD_I64[:-4] + U32.pack(2**32 - 1)
    expect_error(DT_I64 + bad, vio.MalformedStreamError, "does not fit", index=1)
    body = b"\x00\x00"
    short = frame(encode_message_header(MessageType.ARRAY, len(body), row_count=0,
                                        encodings=["vortex.primitive"]), body)
    expect_error(DT_I64 + short, vio.MalformedStreamError, "has no flatbuffer length", index=1)


def test_wrong_children_count():
    nullable = dt.int64(True)
    validity = node(1, [1])
    bits = b"\x07"
    two = node(0, [0], [validity, validity])
    s = dtype_msg(nullable) + array_msg(two, [i64_values(1, 2, 3), bits],
                                        ["vortex.primitive", "vortex.bool"], 3)
    expect_error(s, vio.MalformedStreamError, "vortex.primitive", "2 children, expected 0 or 1",
                 index=1)
    # a validity child on a non-nullable dtype
    one = node(0, [0], [validity])
    s = DT_I64 + array_msg(one, [i64_values(1, 2, 3), bits], ["vortex.primitive", "vortex.bool"], 3)
    expect_error(s, vio.MalformedStreamError, "validity child on a non-nullable", index=1)
    # a struct with the wrong number of fields
    st2 = dt.Struct(["a", "b"], [I64, I64])
    s = dtype_msg(st2) + array_msg(node(0, [], [node(1, [0])]), [i64_values(1)],
                                   ["vortex.struct", "vortex.primitive"], 1)
    expect_error(s, vio.MalformedStreamError, "vortex.struct has 1 children for 2 fields", index=1)


def test_primitive_buffer_length_must_be_n_times_width():
    for nbytes in (0, 16, 23, 32):
        s = DT_I64 + array_msg(node(0, [0]), [bytes(nbytes)], ["vortex.primitive"], 3)
        expect_error(s, vio.MalformedStreamError, f"vortex.primitive buffer is {nbytes} bytes",
                     "3 x i64 needs 24", index=1)


def test_wrong_buffer_count():
    s = DT_I64 + array_msg(node(0, [0, 1]), [i64_values(1), i64_values(2)],
                           ["vortex.primitive"], 1)
    expect_error(s, vio.MalformedStreamError, "vortex.primitive takes 1 buffers, got 2", index=1)


def test_dtype_mismatch():
    # a vortex.primitive node under a Utf8 stream
    ints = our_stream(pa.array([1, 2, 3]))
    s = dtype_msg(dt.Utf8(True)) + ints[messages(ints)[1].offset:]
    expect_error(s, vio.MalformedStreamError, "vortex.primitive cannot hold utf8", index=1)
    # an i32 array under an i64 stream: the buffer does not match the stream's type
    i32 = our_stream(pa.array([1, 2, 3], pa.int32()))
    m = messages(i32)
    s = dtype_msg(dt.int64(True)) + i32[m[1].offset:]
    expect_error(s, vio.MalformedStreamError, "vortex.primitive buffer is 12 bytes", index=1)
    # a struct array under a struct stream with other fields
    a = our_stream(pa.table({"a": [1]}))
    s = dtype_msg(dt.Struct(["a"], [dt.Utf8(True)])) + a[messages(a)[1].offset:]
    expect_error(s, vio.MalformedStreamError, "cannot hold utf8", index=1)


def test_dtype_message_garbage():
    body = b"\x04\x00\x00\x00garbage!"
    bad = frame(encode_message_header(MessageType.DTYPE, len(body)), body)
    with pytest.raises(vio.MalformedStreamError) as ei:
        vio.StreamReader(bad)
    assert ei.value.message_index == 0
    # unknown DType tag, and a tag this library does not support
    good = encode_dtype(dt.Bool())
    for tag, cls, text in ((42, vio.MalformedStreamError, "unknown type tag 42"),
                           (11, vio.UnsupportedError, "Variant is not supported")):
        t = root(memoryview(good), "DType")
        pos = t._field(0)
        patched = good[:pos] + bytes([tag]) + good[pos + 1:]
        expect_error(frame(encode_message_header(MessageType.DTYPE, len(patched)), patched),
                     cls, text, index=0)


def test_errors_carry_the_source_path(tmp_path):
    p = tmp_path / "bad.vortex"
    p.write_bytes(SMALL_STREAM[:-3])
    e = expect_error(p, vio.TruncatedStreamError, "stream ends inside")
    assert str(p) in str(e) and e.source == str(p)


# -- nothing but VortexIPCError, whatever the corruption ---------------------------------

FUZZ_BASE = our_stream(
    pa.table({
        "i": pa.array([1, None, -3, 4], pa.int32()),
        "f": [1.5, 2.5, None, 0.0],
        "s": ["x", None, "zz", "a longer string value"],
        "v": pa.array(["inline", None, "a string longer than twelve", ""], pa.string_view()),
        "b": [True, False, None, True],
        "l": pa.array([[1], None, [2, 3], []], pa.list_(pa.int64())),
        "lv": pa.array([[1], None, [2, 3], []], pa.list_view(pa.int16())),
        "fl": pa.array([[1, 2], None, [3, 4], [5, 6]], pa.list_(pa.uint8(), 2)),
        "d": pa.array([1, 2, 3, None], pa.decimal128(10, 2)),
        "t": pa.array([0, 10**12, None, -5], pa.timestamp("us", "UTC")),
        "st": pa.array([{"a": 1}, None, {"a": None}, {"a": 4}], pa.struct([("a", pa.int8())])),
    }),
    chunk_rows=3, metadata={"k": "v"},
)

# Corrupt *values* may still form a structurally valid array: reading does not validate
# UTF-8 or decimal precision (neither does Arrow IPC). Everything structural must hold.
VALUE_LEVEL = ("Invalid UTF8 sequence", "does not fit in precision")


def _read_everything(data: bytes) -> None:
    with vio.StreamReader(data) as r:
        for b in r:
            a = b.array.to_arrow()
            a.validate()
            try:
                a.validate(full=True)
            except pa.ArrowInvalid as e:
                if not any(v in str(e) for v in VALUE_LEVEL):
                    raise


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(FUZZ_BASE) - 1), st.integers(0, 255)),
                min_size=1, max_size=4))
def test_corruption_raises_only_vortex_errors(edits):
    data = bytearray(FUZZ_BASE)
    for pos, val in edits:
        data[pos] = val
    try:
        _read_everything(bytes(data))
    except vio.VortexIPCError:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(FUZZ_BASE) - 4), st.sampled_from([0, 1, 0x7F, 0xFF, 0x80]))
def test_corrupt_u32_fields_raise_only_vortex_errors(pos, fill):
    data = bytearray(FUZZ_BASE)
    data[pos : pos + 4] = bytes([fill]) * 4
    try:
        _read_everything(bytes(data))
    except vio.VortexIPCError:
        pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_vortex_errors(data):
    for src in (data, DT_I64 + data, U32.pack(len(data)) + data):
        try:
            _read_everything(src)
        except vio.VortexIPCError:
            pass
    try:
        decode_dtype(data)
    except vio.VortexIPCError:
        pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([dt.int64(True), dt.uint8(), dt.float16(), dt.float32(), dt.Bool(True),
                        dt.Decimal(40, 2), dt.Utf8(), dt.Binary(True),
                        dt.List(dt.Struct(["a"], [dt.Utf8(True)]), True),
                        dt.FixedSizeList(dt.int8(), 2), dt.timestamp("us")]),
       st.binary(max_size=40))
def test_random_scalar_bytes_raise_only_vortex_errors(d, data):
    try:
        value_from_proto(d, data)
    except vio.VortexIPCError:
        pass


# -- the async reader enforces the same rules -------------------------------------------


async def _async_read(data: bytes) -> list:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    async with vio.AsyncStreamReader(reader) as r:
        return [b.array.to_pylist() async for b in r]


@pytest.mark.parametrize("stream, cls, text, index", [
    (b"", vio.MalformedStreamError, "the stream is empty", None),
    (GOOD_I64 + DT_I64, vio.MalformedStreamError, "must start with a DType message", 0),
    (DT_I64 + GOOD_I64 + frame(encode_message_header(MessageType.BUFFER, 1), b"x"),
     vio.MalformedStreamError, "a Buffer message is not allowed", 2),
    (DT_I64 + DT_I64, vio.MalformedStreamError, "a second DType message", 1),
    ((DT_I64 + GOOD_I64)[:-5], vio.TruncatedStreamError, "stream ends inside the body", 1),
    (DT_I64 + U32.pack(2**30), vio.LimitExceededError, f"message header of {2**30} bytes", 1),
], ids=["empty", "first-not-dtype", "buffer-message", "second-dtype", "truncated", "limit"])
def test_async_reader_rules(stream, cls, text, index):
    with pytest.raises(vio.VortexIPCError) as ei:
        asyncio.run(_async_read(stream))
    assert type(ei.value) is cls and text in str(ei.value)
    if index is not None:
        assert ei.value.message_index == index
    assert asyncio.run(_async_read(DT_I64 + GOOD_I64)) == [[1, 2, 3]]


# -- every route a user reads by, on both cores ------------------------------------------


def _offsets_past_the_data() -> bytes:
    """A utf8 column whose last offset (60) lies past its 6 bytes of data: the header walk
    accepts it, decoding the values finds it."""
    from fuzz.wire import rewrite_arrays

    def change(am) -> None:
        (vb,) = [n for n in am.root.walk() if n.encoding == "vortex.varbin"]
        (offsets,) = vb.children
        i = offsets.buffers[0]
        assert np.frombuffer(am.buffers[i][0], np.int32).tolist() == [0, 1, 3, 6]
        am.buffers[i] = (np.array([0, 1, 3, 60], np.int32).tobytes(), am.buffers[i][1])

    return rewrite_arrays(our_stream(pa.table({"s": ["a", "bb", "ccc"]})), change)


@pytest.mark.parametrize("native", [True, False], ids=["native", "reference"])
def test_a_batch_that_fails_to_decode_raises_a_located_error_on_every_route(native):
    """A message that only fails when decoded, read by every route: batch by batch
    (``Batch.to_arrow()`` with the native core decodes the message in a window of one, whose
    internal partial result escaped as a private exception class), ``read_arrow``, the
    scans and the async reader: a ``MalformedStreamError`` naming message 1 and its offset
    (the reference's ``Batch.to_arrow()`` did not say where)."""
    from fuzz.harness import ROUTES, route_outcomes
    from tests.native_util import NATIVE
    from vortex_io import _native_glue as ng

    if native and not NATIVE:
        pytest.skip("the native core is off")
    data = _offsets_past_the_data()
    at = messages(data)[1].offset
    with ng.use_native(native):
        got = route_outcomes(data)
    assert set(got) == set(ROUTES)
    for route, (outcome, e) in got.items():
        assert outcome == "MalformedStreamError", (route, outcome, e)
        assert "offsets [0, 60] fall outside 6 bytes of data" in str(e), route
        if route != "read_ipc":  # (its array is decoded after the read: nowhere to say)
            assert (e.message_index, e.offset) == (1, at), (route, e)


def test_read_ipc_decode_errors_name_the_message_they_are_in():
    """``read_ipc(...)`` decodes its chunks lazily: an error found when ``to_arrow()``
    decodes one names that chunk's message and byte offset, as a batch's error does."""
    import random

    from vortex_io._scan import message_spans

    t = pa.table({"s": [f"v{i % 40}" for i in range(6000)], "x": np.arange(6000) * 3})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, chunk_rows=1000)
    data = buf.getvalue()
    offsets = {sp.index: sp.offset for sp in message_spans(data)}
    rng = random.Random(7)
    decode_errors = 0
    for _ in range(400):
        m = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            m[rng.randrange(offsets[1], len(m))] = rng.randrange(256)
        try:
            arr = vio.read_ipc(bytes(m))
        except vio.VortexIPCError as e:
            assert e.message_index is not None and e.offset is not None, e
            continue
        try:
            arr.to_arrow()
        except vio.VortexIPCError as e:
            decode_errors += 1
            assert e.message_index in offsets and e.offset == offsets[e.message_index], e
    assert decode_errors > 10  # (the mutants do reach the lazy decode)
