"""The sans-IO framing layer: ``MessageDecoder`` / ``MessageEncoder``.

The decoder must give the same messages however the input is chunked (all at once, one
byte at a time, random chunks, exactly ``bytes_needed`` at a time), must say precisely
how many bytes it still needs, and must report truncation with the offset where the
input ended and the part of the message it ended in.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io import dtype as dt
from vortex_io._ipc import MessageType

STRUCT = dt.Struct(["x", "s"], [dt.int64(True), dt.Utf8(True)])


def _join(parts) -> bytes:
    return b"".join(bytes(memoryview(p)) for p in parts)


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.integers(-(2**40), 2**40, n)
    mask = rng.random(n) < 0.2
    words = [None if m else "w" * int(k) for m, k in zip(mask, rng.integers(0, 20, n))]
    return pa.table({"x": pa.array(x, pa.int64(), mask=mask), "s": pa.array(words, pa.string())})


def build_stream() -> tuple[bytes, list[dict]]:
    """A stream of every message type, with and without metadata, plus what went in."""
    enc = vio.MessageEncoder()
    out: list[bytes] = []
    expect: list[dict] = []

    def add(kind, parts, md, **extra):
        out.append(_join(parts))
        expect.append({"type": kind, "metadata": vio.Metadata(md), **extra})

    md0 = [("stream", "s"), ("dup", "1"), ("dup", "2")]
    add(MessageType.DTYPE, enc.dtype_message(STRUCT, md0), md0, dtype=STRUCT)
    for i, n in enumerate([5, 0, 33]):
        arr = vio.array(_table(n, i), dtype=STRUCT)
        md = {"batch": str(i)} if i != 2 else None
        add(MessageType.ARRAY, enc.array_message(arr, md), md, arrow=arr.to_arrow(), rows=n)
    raw = bytes(range(200))
    add(MessageType.BUFFER, enc.buffer_message(raw, 3, {"buf": b"\x00\xff"}), {"buf": b"\x00\xff"},
        raw=raw)
    add(MessageType.BUFFER, enc.buffer_message(b""), None, raw=b"")
    arr = vio.array(_table(7, 9), dtype=STRUCT)
    add(MessageType.ARRAY, enc.array_message(arr), None, arrow=arr.to_arrow(), rows=7)
    data = b"".join(out)
    assert enc.position == len(data)
    assert enc.messages == len(expect)
    return data, expect


STREAM, EXPECT = build_stream()


def _key(m) -> tuple:
    """Everything a message is: where it is, its header, and its body bytes."""
    return (m.index, m.offset, m.size, m.header_size, m.header, m.body.tobytes())


def _decode_chunks(data: bytes, sizes) -> list:
    """Feed ``data`` in chunks of the given sizes (cycled), draining messages as they come."""
    dec = vio.MessageDecoder()
    msgs = []
    pos = 0
    i = 0
    while pos < len(data):
        k = max(1, sizes[i % len(sizes)])
        i += 1
        dec.feed(data[pos : pos + k])
        pos += k
        msgs.extend(dec)
    dec.end_of_input()
    assert dec.at_boundary and dec.position == len(data)
    return msgs


def test_all_at_once_matches_what_was_encoded():
    dec = vio.MessageDecoder()
    assert dec.bytes_needed == 4 and dec.at_boundary
    dec.feed(STREAM)
    msgs = list(dec)
    dec.end_of_input()
    assert [m.type for m in msgs] == [e["type"] for e in EXPECT]
    assert [m.index for m in msgs] == list(range(len(EXPECT)))
    assert dec.messages_decoded == len(EXPECT)
    # messages lie end to end and cover the whole stream
    assert msgs[0].offset == 0
    for a, b in itertools.pairwise(msgs):
        assert b.offset == a.offset + a.size
    assert msgs[-1].offset + msgs[-1].size == len(STREAM)
    for m, e in zip(msgs, EXPECT):
        assert m.metadata == e["metadata"]
        assert list(m.metadata.items()) == list(e["metadata"].items())
        if m.type == MessageType.DTYPE:
            assert m.dtype() == e["dtype"]
        elif m.type == MessageType.ARRAY:
            assert m.header.row_count == e["rows"]
            assert m.array(STRUCT).to_arrow().equals(e["arrow"])
        else:
            assert m.body.tobytes() == e["raw"]
    assert msgs[4].header.alignment_exponent == 3


def test_one_byte_at_a_time_matches_all_at_once():
    whole = [_key(m) for m in _decode_chunks(STREAM, [len(STREAM)])]
    dec = vio.MessageDecoder()
    got = []
    for i in range(len(STREAM)):
        dec.feed(STREAM[i : i + 1])
        while (m := dec.next_message()) is not None:
            got.append(m)
        if not dec.at_boundary:
            assert dec.bytes_needed > 0
    dec.end_of_input()
    assert [_key(m) for m in got] == whole
    # bodies copied out of 1-byte chunks still decode to the same arrays
    for m, e in zip(got, EXPECT):
        if m.type == MessageType.ARRAY:
            assert m.array(STRUCT).to_arrow().equals(e["arrow"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(1, 300), min_size=1, max_size=30))
def test_random_chunk_sizes_match_all_at_once(sizes):
    whole = [_key(m) for m in _decode_chunks(STREAM, [len(STREAM)])]
    assert [_key(m) for m in _decode_chunks(STREAM, sizes)] == whole


def test_feeding_exactly_bytes_needed_completes_the_stream():
    dec = vio.MessageDecoder()
    pos = 0
    msgs = []
    steps = 0
    while pos < len(STREAM):
        need = dec.bytes_needed
        assert need > 0, "the decoder must ask for bytes while a message is incomplete"
        assert pos + need <= len(STREAM), "the decoder asked for bytes past the end of the stream"
        dec.feed(STREAM[pos : pos + need])
        pos += need
        steps += 1
        msgs.extend(dec)
    dec.end_of_input()
    assert len(msgs) == len(EXPECT)
    # one read per part at most: prefix, header, body (the empty body needs no read)
    assert steps <= 3 * len(EXPECT)
    assert [_key(m) for m in msgs] == [_key(m) for m in _decode_chunks(STREAM, [len(STREAM)])]


def test_bytes_needed_counts_down_within_a_part():
    dec = vio.MessageDecoder()
    dec.feed(STREAM[:1])
    assert dec.next_message() is None
    assert dec.bytes_needed == 3
    dec.feed(STREAM[1:4])
    assert dec.next_message() is None
    header_len = int.from_bytes(STREAM[:4], "little")
    assert dec.bytes_needed == header_len
    dec.feed(STREAM[4:10])
    assert dec.next_message() is None
    assert dec.bytes_needed == header_len - 6


def test_feed_accepts_any_bytes_like():
    a = np.frombuffer(STREAM, dtype=np.uint8)
    n8 = len(STREAM) // 8 * 8
    for pieces in (
        [bytearray(STREAM)],
        [memoryview(STREAM)],
        [a[:100], a[100:]],
        [a[:n8].view(np.int64), a[n8:]],  # non-uint8 ndarray: bytes, not elements
        [b"", STREAM, b""],
    ):
        dec = vio.MessageDecoder()
        for p in pieces:
            dec.feed(p)
        msgs = list(dec)
        dec.end_of_input()
        assert [_key(m) for m in msgs] == [_key(m) for m in _decode_chunks(STREAM, [len(STREAM)])]


def test_end_of_input_between_messages_is_fine():
    msgs = _decode_chunks(STREAM, [len(STREAM)])
    for m in msgs:
        end = m.offset + m.size
        dec = vio.MessageDecoder()
        dec.feed(STREAM[:end])
        got = list(dec)
        dec.end_of_input()
        assert len(got) == m.index + 1
    dec = vio.MessageDecoder()
    dec.end_of_input()  # no input at all: no message, no truncation
    assert dec.next_message() is None


def test_end_of_input_before_draining_complete_messages():
    """Complete messages still buffered at end of input are not a truncation."""
    dec = vio.MessageDecoder()
    dec.feed(STREAM)
    dec.end_of_input()
    assert len(list(dec)) == len(EXPECT)
    # ... but a cut inside the last message still surfaces once it is reached
    dec = vio.MessageDecoder()
    dec.feed(STREAM[:-1])
    dec.end_of_input()
    got = []
    with pytest.raises(vio.TruncatedStreamError) as ei:
        while (m := dec.next_message()) is not None:
            got.append(m)
    assert len(got) == len(EXPECT) - 1
    assert ei.value.offset == len(STREAM) - 1
    assert "body" in str(ei.value)


def _part_of(cut: int, msgs) -> tuple[str, int]:
    """Which part of which message stream offset ``cut`` falls strictly inside."""
    for m in msgs:
        start, end = m.offset, m.offset + m.size
        if start < cut < end:
            if cut < start + 4:
                return "length prefix", m.index
            if cut < start + 4 + m.header_size:
                return "header", m.index
            return "body", m.index
    raise AssertionError("cut at a boundary")


def test_end_of_input_inside_a_message_raises_truncated_at_every_cut():
    msgs = _decode_chunks(STREAM, [len(STREAM)])
    bounds = {0} | {m.offset + m.size for m in msgs}
    for cut in range(1, len(STREAM)):
        dec = vio.MessageDecoder()
        dec.feed(STREAM[:cut])
        complete = list(dec)
        if cut in bounds:
            dec.end_of_input()
            continue
        part, index = _part_of(cut, msgs)
        assert len(complete) == index
        with pytest.raises(vio.TruncatedStreamError) as ei:
            dec.end_of_input()
        e = ei.value
        assert isinstance(e, vio.VortexIPCError) and isinstance(e, vio.MalformedStreamError)
        assert e.offset == cut
        assert e.message_index == index
        assert f"inside the {part} of a message" in str(e)
        assert f"byte offset {cut}" in str(e)
        # the error is sticky
        with pytest.raises(vio.TruncatedStreamError):
            dec.next_message()


def test_feed_after_end_of_input_is_an_error():
    dec = vio.MessageDecoder()
    dec.end_of_input()
    with pytest.raises(RuntimeError):
        dec.feed(b"x")


def test_message_bodies_are_views_of_the_fed_buffer():
    """A message that lies inside one fed chunk is not copied."""
    src = np.frombuffer(STREAM, dtype=np.uint8)
    lo, hi = src.ctypes.data, src.ctypes.data + src.nbytes
    dec = vio.MessageDecoder()
    dec.feed(src)
    for m in dec:
        if m.body.nbytes:
            assert lo <= m.body.ctypes.data and m.body.ctypes.data + m.body.nbytes <= hi


def test_split_message_copy_keeps_stream_alignment_phase():
    """A message assembled from several chunks is copied so that body offsets keep their
    alignment relative to the stream start (the writer planned buffers for it)."""
    dec = vio.MessageDecoder()
    for i in range(0, len(STREAM), 7):
        dec.feed(STREAM[i : i + 7])
    for m in dec:
        body_pos = m.offset + 4 + m.header_size
        if m.body.nbytes > 7:
            assert (m.body.ctypes.data - body_pos) % 64 == 0


# -- encoder -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "d",
    [
        dt.Null(),
        dt.Bool(True),
        dt.float32(),
        dt.Decimal(20, 4, True),
        dt.Struct(["a", "b"], [dt.List(dt.Utf8(True)), dt.FixedSizeList(dt.uint8(), 3)]),
        dt.timestamp("ns", "Europe/Paris", True),
    ],
)
def test_encoder_decoder_round_trip_dtype_messages(d):
    enc = vio.MessageEncoder()
    data = _join(enc.dtype_message(d, {"k": "v"}))
    dec = vio.MessageDecoder()
    dec.feed(data)
    (m,) = list(dec)
    dec.end_of_input()
    assert m.type == MessageType.DTYPE
    assert m.dtype() == d
    assert m.metadata == {b"k": b"v"}
    assert m.size == len(data) == enc.position


@pytest.mark.parametrize(
    "data",
    [
        pa.array([1, None, 3], pa.int32()),
        pa.array([], pa.float64()),
        pa.array(["a", "", None, "long string " * 5]),
        pa.array([[1, 2], None, []], pa.list_(pa.int16())),
        pa.array([True, None, False]),
        pa.array([{"a": 1, "b": "x"}, {"a": None, "b": None}]),
    ],
)
def test_encoder_decoder_round_trip_array_messages(data):
    arr = vio.array(data)
    enc = vio.MessageEncoder()
    parts = enc.dtype_message(arr.dtype) + enc.array_message(arr, [("a", "1"), ("a", "2")])
    raw = _join(parts)
    assert enc.position == len(raw)
    dec = vio.MessageDecoder()
    dec.feed(raw)
    d, a = list(dec)
    dec.end_of_input()
    assert a.type == MessageType.ARRAY and a.header.row_count == len(data)
    assert a.metadata.get_all("a") == [b"1", b"2"]
    got = a.array(d.dtype())
    assert got.dtype == arr.dtype
    assert got.to_arrow().equals(data)


@pytest.mark.parametrize("exp", [0, 3, 6, 16])
def test_encoder_decoder_round_trip_buffer_messages(exp):
    enc = vio.MessageEncoder(position=5)  # an odd stream position: padding is planned from it
    payload = bytes(np.arange(100, dtype=np.uint8))
    raw = _join(enc.buffer_message(payload, exp))
    assert enc.position == 5 + len(raw)
    if exp:
        assert (5 + len(raw) - len(payload)) % min(1 << exp, 64) == 0  # body aligned in the stream
    dec = vio.MessageDecoder()
    dec.feed(raw)
    (m,) = list(dec)
    assert m.type == MessageType.BUFFER
    assert m.header.alignment_exponent == exp
    assert m.body.tobytes() == payload
    with pytest.raises(ValueError):
        enc.buffer_message(payload, 17)


def test_encoder_rejects_more_rows_than_a_message_holds():
    big = vio.array([1])
    big._len = 2**32  # the length check runs before anything touches the buffers
    with pytest.raises(vio.UnsupportedError, match="2\\*\\*32-1 rows"):
        vio.MessageEncoder().array_message(big)


def test_ended_after_end_of_input():
    """``ended`` says the input was declared finished (what a reader checks before it reads
    its source again); feeding afterwards is a caller's mistake."""
    dec = vio.MessageDecoder()
    assert not dec.ended
    dec.feed(b"")
    dec.end_of_input()
    assert dec.ended and dec.next_message() is None
    with pytest.raises(RuntimeError, match=r"feed\(\) after end_of_input\(\)"):
        dec.feed(b"x")
