"""The scan's message-range seam the distributed readers use: ``message_spans`` (a
header-only pass), ``message_ranges`` (cutting at message boundaries) and
``scan(messages=...)`` (one range, jumped to, nothing after it read)."""

from __future__ import annotations

import io
import itertools

import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io._ipc.framing import MessageDecoder
from vortex_io._scan import MessageRange, message_ranges, message_spans
from vortex_io.expr import col

from .test_scan import TABLE, same

CHUNK = 300  # TABLE's 3000 rows in 10 messages


@pytest.fixture(scope="module")
def data() -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, TABLE, chunk_rows=CHUNK, metadata={"k": "v"})
    return buf.getvalue()


@pytest.fixture
def path(tmp_path, data) -> str:
    p = tmp_path / "t.vxipc"
    p.write_bytes(data)
    return str(p)


def test_spans_are_the_readers_messages(data, path):
    with vio.StreamReader(data) as r:
        batches = [(b.index, b.offset, b.num_rows) for b in r]
    spans = message_spans(data)
    assert [(s.index, s.offset, s.rows) for s in spans] == batches
    assert message_spans(path) == spans
    # contiguous, and the last one ends the stream
    for a, b in itertools.pairwise(spans):
        assert a.offset + a.size == b.offset
    assert spans[-1].offset + spans[-1].size == len(data)
    assert sum(s.rows for s in spans) == TABLE.num_rows


def test_ranges_cover_the_stream_in_order(data):
    spans = message_spans(data)
    for kw in ({"target_bytes": 1}, {"target_rows": 700}, {"target_bytes": len(data) // 3}, {}):
        ranges = message_ranges(spans, **kw)
        assert ranges[0].start == 1 and ranges[-1].stop == spans[-1].index + 1
        assert all(a.stop == b.start for a, b in itertools.pairwise(ranges))
        assert sum(r.rows for r in ranges) == TABLE.num_rows
    assert len(message_ranges(spans, target_bytes=1)) == len(spans)
    assert [r.rows for r in message_ranges(spans, target_rows=700)] == [900, 900, 900, 300]
    assert message_ranges([]) == []
    with pytest.raises(ValueError):
        message_ranges(spans, target_bytes=0)


@pytest.mark.parametrize("parts", [1, 2, 3, 4, 7, 10, 25])
def test_parts_are_balanced(data, parts):
    spans = message_spans(data)
    ranges = message_ranges(spans, parts=parts)
    assert len(ranges) == min(parts, len(spans))
    assert ranges[0].start == 1 and ranges[-1].stop == len(spans) + 1
    assert all(a.stop == b.start for a, b in itertools.pairwise(ranges))
    sizes = [r.stop - r.start for r in ranges]
    assert max(sizes) - min(sizes) <= 1  # equal-size messages: counts differ by one at most
    with pytest.raises(ValueError):
        message_ranges(spans, parts=2, target_rows=10)


@pytest.mark.parametrize("source", ["bytes", "path"])
def test_range_scans_add_up_to_the_full_scan(data, path, source):
    src = data if source == "bytes" else path
    spans = message_spans(src)
    ranges = message_ranges(spans, target_rows=700)
    f = (col("i") > 0) | col("s").is_null()
    full = vio.scan(src, columns=["s", "f"], filter=f).to_arrow()
    parts, read = [], 0
    dtype_bytes = spans[0].offset  # the DType message
    for r in ranges:
        s = vio.scan(src, columns=["s", "f"], filter=f, messages=r)
        parts.append(s.to_arrow())
        # the scan read the DType message and its range, nothing else
        assert s.stats.bytes_read == dtype_bytes + r.size
        assert s.stats.chunks == r.stop - r.start
        read += s.stats.bytes_read
    assert same(pa.concat_tables(parts), full)
    assert read == len(data) + dtype_bytes * (len(ranges) - 1)


def test_range_forms(data):
    want = TABLE.slice(CHUNK, 2 * CHUNK)
    spans = message_spans(data)
    for messages in (range(2, 4), (2, 4), MessageRange(2, 4),
                     MessageRange(2, 4, offset=spans[1].offset)):
        got = vio.scan(data, messages=messages).to_arrow()
        assert same(got, want), messages
    # without an offset the headers before the range are walked (read, not decoded)
    s = vio.scan(data, messages=range(2, 4))
    s.to_arrow()
    assert s.stats.bytes_read == spans[2].offset + spans[2].size
    # a file object: walked too
    s = vio.scan(io.BytesIO(data), messages=MessageRange(2, 4, offset=spans[1].offset))
    assert same(s.to_arrow(), want)
    # past the end: nothing; an empty range: nothing
    assert vio.scan(data, messages=range(50, 60)).to_arrow().num_rows == 0
    assert vio.scan(data, messages=range(3, 3)).to_arrow().num_rows == 0


def test_limit_and_offset_apply_within_the_range(data):
    s = vio.scan(data, messages=range(3, 6), offset=100, limit=250)
    assert same(s.to_arrow(), TABLE.slice(2 * CHUNK + 100, 250))
    s = vio.scan(data, columns=[], messages=range(3, 6))
    assert s.to_arrow().num_rows == 3 * CHUNK


def test_bad_ranges(data, path):
    with pytest.raises(ValueError, match="one source"):
        vio.scan([path, path], messages=range(1, 2))
    with pytest.raises(ValueError):
        MessageRange(0, 2)  # message 0 is the DType message
    with pytest.raises(ValueError):
        MessageRange(3, 2)
    with pytest.raises(TypeError):
        vio.scan(data, messages="1:2")
    with pytest.raises(ValueError, match="step"):
        vio.scan(data, messages=range(1, 5, 2))
    with pytest.raises(ValueError, match="not after the DType message"):
        vio.scan(data, messages=MessageRange(1, 2, offset=3)).to_arrow()
    with pytest.raises(TypeError):
        message_spans(io.BytesIO(data))


def test_a_wrong_offset_is_a_located_stream_error(path, data):
    spans = message_spans(data)
    with pytest.raises(vio.VortexIPCError) as e:
        vio.scan(path, messages=MessageRange(2, 4, offset=spans[1].offset + 8)).to_arrow()
    assert path in str(e.value)


def test_spans_of_bad_streams(tmp_path, data):
    spans = message_spans(data)
    cut = tmp_path / "cut.vxipc"
    cut.write_bytes(data[: spans[4].offset + 20])  # inside message 5's header or body
    with pytest.raises(vio.TruncatedStreamError) as e:
        message_spans(str(cut))
    assert e.value.message_index == 5 and str(cut) in str(e.value)
    cut.write_bytes(data[: spans[4].offset + 2])  # inside a length prefix
    with pytest.raises(vio.TruncatedStreamError):
        message_spans(str(cut))
    with pytest.raises(vio.MalformedStreamError, match="empty"):
        message_spans(b"")
    with pytest.raises(vio.MalformedStreamError, match="must start with a DType"):
        message_spans(data[spans[0].offset:])  # an Array message first
    with pytest.raises(vio.MalformedStreamError, match="second DType"):
        message_spans(data + data[: spans[0].offset])
    with pytest.raises(vio.MalformedStreamError, match="header length is 0"):
        message_spans(data + bytes(4))
    with pytest.raises(vio.LimitExceededError):
        message_spans(data, limits=vio.ReaderLimits(max_body_bytes=16))
    # a stream of no Array messages has no spans
    buf = io.BytesIO()
    with vio.StreamWriter(buf, TABLE.schema):
        pass
    assert message_spans(buf.getvalue()) == []


def test_decoder_skip_to(data):
    spans = message_spans(data)
    dec = MessageDecoder()
    dec.feed(data)
    assert dec.next_message().type.name == "DTYPE"
    dec.skip_to(spans[5].offset, spans[5].index)
    m = dec.next_message()
    assert (m.index, m.offset, m.header.row_count) == (spans[5].index, spans[5].offset, CHUNK)
    with pytest.raises(ValueError):
        dec.skip_to(spans[0].offset, 1)  # backwards
    with pytest.raises(ValueError):
        dec.skip_to(len(data) + 10, 20)  # past what was fed



@pytest.mark.parametrize("source", ["bytes", "path"])
def test_ranges_of_an_integrity_stream(tmp_path, source):
    """A stream with integrity data (issue 17) cut into ranges: each range is entered by
    framing the messages before it (their header checksums chain; their bodies are not
    checked), so every range reads, the last one verifies the end marker, and the parts add
    up to the full scan; a flipped bit inside a range fails that range's scan."""
    buf = io.BytesIO()
    vio.write_ipc(buf, TABLE, chunk_rows=CHUNK, integrity=True)
    data = buf.getvalue()
    p = tmp_path / "i.vxipc"
    p.write_bytes(data)
    src = data if source == "bytes" else str(p)
    spans = message_spans(src)
    ranges = message_ranges(spans, target_rows=700)
    assert len(ranges) > 2
    full = vio.scan(src).to_arrow()
    parts = [vio.scan(src, messages=r).to_arrow() for r in ranges]
    assert same(pa.concat_tables(parts), full)
    with pytest.raises(ValueError, match="integrity"):
        dec = MessageDecoder()
        dec.feed(data)
        dec.next_message()
        dec.skip_to(spans[2].offset, spans[2].index)
    # a body bit flipped in the second range: that range fails, the first still reads
    r = ranges[1]
    bad = bytearray(data)
    bad[r.offset + r.size - 3] ^= 0x10
    assert same(vio.scan(bytes(bad), messages=ranges[0]).to_arrow(), parts[0])
    with pytest.raises(vio.IntegrityError):
        vio.scan(bytes(bad), messages=r).to_arrow()
