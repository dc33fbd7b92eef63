"""Sans-IO transcoders between Arrow IPC streams and Vortex IPC streams.

``ArrowToVortex`` takes the bytes of Arrow IPC streams (any chunking, several streams one
after another) and gives back the bytes of Vortex IPC streams: each Arrow stream becomes
one Vortex stream (its schema the DType message, metadata and exact Arrow schema
included; each record batch one Array message with the batch's custom metadata; its
end-of-stream marker the Vortex end marker). ``VortexToArrow`` does the reverse, giving
back Arrow IPC streams equal to the ones written: the same schema (metadata included), the
same batches with their custom metadata, zero-row and zero-column batches included.

Neither does any IO (h11 is the model): ``send(data)`` returns the output that ``data``
completes, so they serve pipes, sockets, HTTP bodies and asyncio alike.
``VortexToArrow.bytes_needed`` says how many more bytes the next step needs, so a reader
that reads exactly that much never reads past the end of a stream (the next stream on the
same connection stays unread until it is asked for). ``vortex_io.integrations.vgi_rpc``
is built on them.

>>> import pyarrow as pa, vortex_io as vio
>>> from vortex_io.transcode import ArrowToVortex, VortexToArrow
>>> t = pa.table({"x": [1, 2, 3], "s": ["a", None, "c"]})
>>> sink = pa.BufferOutputStream()
>>> with pa.ipc.new_stream(sink, t.schema) as w:
...     w.write_batch(t.to_batches()[0], custom_metadata={"request_id": "7"})
>>> arrow_ipc = sink.getvalue().to_pybytes()
>>> vortex_ipc = ArrowToVortex().send(arrow_ipc)
>>> [dict(b.metadata) for b in vio.StreamReader(vortex_ipc)]
[{b'request_id': b'7'}]
>>> back = VortexToArrow().send(vortex_ipc)
>>> r = pa.ipc.open_stream(back)
>>> batch, md = r.read_next_batch_with_custom_metadata()
>>> batch.equals(t.to_batches()[0]), dict(md)
(True, {b'request_id': b'7'})
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from ._errors import (
    LimitExceededError,
    MalformedStreamError,
    TruncatedStreamError,
    UnsupportedError,
    VortexIPCError,
)
from ._limits import DEFAULT_LIMITS, ReaderLimits
from ._metadata import Metadata

__all__ = ["ArrowToVortex", "VortexToArrow"]

_I32 = struct.Struct("<i")
_CONTINUATION = b"\xff\xff\xff\xff"
#: Arrow's Message.header_type values
_SCHEMA, _DICTIONARY, _RECORD_BATCH = 1, 2, 3
_HEADER_NAMES = {1: "Schema", 2: "DictionaryBatch", 3: "RecordBatch", 4: "Tensor",
                 5: "SparseTensor"}


class _Collect:
    """A sink that keeps what a writer writes (parts joined on ``take``)."""

    __slots__ = ("parts", "closed")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.closed = False

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def write(self, b: Any) -> int:
        self.parts.append(bytes(b))
        return len(b)

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        return out


class _Feed:
    """What a ``pyarrow.ipc`` stream reader reads from: the complete messages buffered so
    far (the transcoder calls the reader only when what it will read is all here)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.pos = 0
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        end = len(self.buf) if n is None or n < 0 else min(len(self.buf), self.pos + n)
        out = bytes(self.buf[self.pos:end])
        self.pos = end
        if self.pos == len(self.buf):
            self.buf.clear()
            self.pos = 0
        return out

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


class _Uncarried(Exception):
    """Carries an ``UnsupportedError`` of valid input out of a step (the transcoder goes on)."""

    def __init__(self, error: UnsupportedError) -> None:
        self.error = error


def _pairs(md: Any) -> list[tuple[bytes, bytes]]:
    """An Arrow KeyValueMetadata's pairs, order and duplicate keys kept."""
    if not md:
        return []
    return [(bytes(k), bytes(v)) for k, v in md.items()]


class ArrowToVortex:
    """Arrow IPC stream bytes in, Vortex IPC stream bytes out (sans-IO).

    ``send(data)`` takes the next bytes of the input (any split) and returns the Vortex
    IPC bytes of every message they complete: the DType message when an Arrow stream's
    schema is complete, one Array message per record batch (dictionary batches are
    resolved into the batches that use them), and the end marker
    (``StreamWriter(end_marker=True)``) at the Arrow stream's end-of-stream marker, after
    which the next Arrow stream may begin. ``compress=True`` (or a ``CompressOptions``)
    compresses each batch as ``StreamWriter`` does; ``integrity=True`` adds checksums.

    Malformed input raises ``MalformedStreamError`` naming the Arrow message's index and
    byte offset in the input; lengths are bounded by ``limits`` (``ReaderLimits``:
    ``max_header_bytes`` and ``max_body_bytes``) before anything is buffered for them, and
    the transcoder is unusable after it.

    Valid Arrow IPC that Vortex cannot carry (a union column) raises ``UnsupportedError``
    (once the input given is consumed; the output it produced comes with the next
    ``send()``) and loses the rest of that Arrow stream only: its remaining messages are
    read and dropped, its end still ends the Vortex stream (when one was started), and the
    next Arrow stream is transcoded as usual. ``on_unsupported(error, schema)``, if given, is
    called instead of raising: ``schema`` is the Arrow schema of the Vortex stream already
    started, or None when the stream's own schema failed; it returns the ``(batch,
    metadata)`` pairs to send in place of what failed (of ``schema`` when it is not None,
    else of any one schema that starts the stream), so the peer learns of the failure in
    its own protocol (``vortex_io.integrations.vgi_rpc`` sends vgi-rpc's error batch).
    """

    def __init__(self, *, compress: Any = False, integrity: bool = False,
                 limits: ReaderLimits | None = None,
                 on_unsupported: Callable[[UnsupportedError, Any], Any] | None = None) -> None:
        self.compress = compress
        self.integrity = bool(integrity)
        self.limits = limits or DEFAULT_LIMITS
        self.on_unsupported = on_unsupported
        self._skipping = False  # the rest of the current Arrow stream is dropped
        #: complete Arrow streams transcoded so far
        self.streams = 0
        self._buf = bytearray()
        self._offset = 0  # input offset of the first buffered byte
        self._index = 0  # Arrow message index within the current stream
        self._feed = _Feed()
        self._reader: Any = None
        self._writer: Any = None
        self._out = _Collect()
        self._pending = 0  # dictionary batches fed to the reader and not yet used
        self._error: VortexIPCError | None = None

    @property
    def at_boundary(self) -> bool:
        """True between streams with nothing buffered (the input may end here)."""
        return not self._buf and self._writer is None and self._reader is None

    def send(self, data: Any) -> bytes:
        """Feed input bytes; returns the Vortex IPC bytes they complete (may be empty)."""
        if self._error is not None:
            raise self._error
        self._buf += data
        unsupported: UnsupportedError | None = None
        while True:
            try:
                if not self._step():
                    break
            except _Uncarried as u:
                unsupported = unsupported or u.error
            except VortexIPCError as e:
                self._error = e
                raise
        if unsupported is not None:
            raise unsupported  # (what was produced stays for the next send())
        return self._out.take()

    def close(self) -> None:
        """Declare the input finished: ``TruncatedStreamError`` when it ends inside a stream
        (inside a message, or before the stream's end-of-stream marker)."""
        if self._error is not None:
            raise self._error
        if not self.at_boundary:
            raise self._fail(f"the input ends inside a message ({len(self._buf)} byte(s) of "
                             "it buffered)" if self._buf else
                             "the input ends inside a stream (no end-of-stream marker)",
                             TruncatedStreamError)

    def _fail(self, reason: str, cls: type[VortexIPCError] = MalformedStreamError
              ) -> VortexIPCError:
        e = cls(f"Arrow IPC input: {reason}", message_index=self._index, offset=self._offset)
        self._error = e
        return e

    def _step(self) -> bool:
        """Transcode the next complete Arrow message, if it is buffered."""
        buf = self._buf
        if len(buf) < 4:
            return False
        pos = 4 if buf[:4] == _CONTINUATION else 0
        if len(buf) < pos + 4:
            return False
        (n,) = _I32.unpack_from(buf, pos)
        pos += 4
        if n == 0:  # end of stream
            self._end_stream(pos)
            return True
        if n < 0 or n > self.limits.max_header_bytes:
            raise self._fail(f"a message metadata length of {n} bytes (the limit is "
                             f"{self.limits.max_header_bytes})")
        if len(buf) < pos + n:
            return False
        from ._ipc.flatbuf import root

        try:
            msg = root(memoryview(bytes(buf[pos:pos + n])), "Message")
            kind = msg.u8(1, what="Message.header_type")
            body = msg.u64(3, what="Message.bodyLength")
        except MalformedStreamError as e:
            raise self._fail(f"its message metadata does not parse ({e.reason})") from None
        if body > self.limits.max_body_bytes:
            raise self._fail(f"a message body of {body} bytes exceeds the limit of "
                             f"{self.limits.max_body_bytes}", LimitExceededError)
        size = pos + n + body
        if len(buf) < size:
            return False
        if kind not in (_SCHEMA, _DICTIONARY, _RECORD_BATCH):
            raise self._fail(f"a {_HEADER_NAMES.get(kind, f'type {kind}')} message is not "
                             "part of a record batch stream", UnsupportedError)
        if (kind == _SCHEMA) != (self._reader is None):
            raise self._fail("a stream must start with one Schema message" if kind != _SCHEMA
                             else "a second Schema message in the stream")
        self._feed.buf += buf[:size]
        del buf[:size]
        try:
            self._message(kind)
        finally:
            self._offset += size
            self._index += 1
        return True

    def _message(self, kind: int) -> None:
        import pyarrow as pa

        try:
            if kind == _SCHEMA:
                self._reader = pa.ipc.open_stream(self._feed)
                schema = self._reader.schema
                self._carry(lambda: self._start(schema), None)
            elif kind == _DICTIONARY:
                self._pending += 1  # read by the reader with the next record batch
            else:
                self._pending = 0
                batch, md = self._reader.read_next_batch_with_custom_metadata()
                if not self._skipping:
                    self._carry(lambda: self._writer.write(batch, metadata=_pairs(md)),
                                self._reader.schema)
        except pa.ArrowException as e:
            raise self._fail(f"{type(e).__name__}: {e}") from None

    def _carry(self, step: Callable[[], Any], schema: Any) -> None:
        """Run ``step``; valid input that Vortex cannot carry drops the rest of the stream
        (the replacement from ``on_unsupported`` sent in its place, else the error raised)."""
        try:
            step()
        except UnsupportedError as e:
            self._skipping = True
            e.message_index, e.offset = self._index, self._offset
            if self.on_unsupported is None:
                raise _Uncarried(e) from None
            for batch, md in self.on_unsupported(e, schema):
                if self._writer is None:
                    self._start(batch.schema)
                self._writer.write(batch, metadata=md)

    def _start(self, schema: Any) -> None:
        from ._arrow import schema_metadata_pairs
        from ._ipc.writer import StreamWriter

        self._writer = StreamWriter(self._out, schema.remove_metadata(),
                                    metadata=schema_metadata_pairs(schema),
                                    compress=self.compress, integrity=self.integrity,
                                    end_marker=True, _caller="ArrowToVortex")

    def _end_stream(self, size: int) -> None:
        if self._reader is None:
            raise self._fail("an end-of-stream marker before the stream's Schema message")
        if self._pending:
            raise self._fail(f"{self._pending} dictionary batch(es) at the end of the stream, "
                             "used by no record batch")
        del self._buf[:size]
        self._offset += size
        self._index = 0
        if self._writer is not None:
            self._writer.close()
        self._writer = None
        self._skipping = False
        self._reader = None
        self._feed = _Feed()
        self.streams += 1


#: a DType message (body, metadata, the limits it was read with) -> what _start derives
#: from it: RPC streams repeat a few schemas
_HEADER_CACHE: dict[Any, Any] = {}


class VortexToArrow:
    """Vortex IPC stream bytes in, Arrow IPC stream bytes out (sans-IO).

    ``send(data)`` takes the next bytes of the input (any split) and returns the Arrow
    IPC bytes of every message they complete: a stream's schema (its exact Arrow schema
    and metadata) with its DType message, one record batch (with the message's metadata
    as custom metadata, and the dictionary batches it needs) per Array message, and the
    end-of-stream marker at the Vortex end marker; the next stream may follow. A stream
    without an end marker ends at ``close()``, which then writes the end-of-stream marker.

    ``bytes_needed`` is how many more bytes the next step needs (at least 1): a reader
    that reads exactly that much reads nothing past a stream's end marker. Streams must be
    of a table (a non-nullable struct dtype); errors are ``vortex_io`` errors naming the
    message index and byte offset within the stream.
    """

    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or DEFAULT_LIMITS
        #: complete streams transcoded so far
        self.streams = 0
        self._dec: Any = None
        self._dtype: Any = None
        self._layout: Any = None
        self._metadata: Metadata | None = None
        self._writer: Any = None
        self._out = _Collect()
        self._error: VortexIPCError | None = None
        self._new_stream(b"")

    def _new_stream(self, rest: bytes) -> None:
        from ._ipc.framing import MessageDecoder

        self._dec = MessageDecoder(limits=self.limits)
        self._dtype = None
        self._writer = None
        if rest:
            self._dec.feed(rest)

    @property
    def bytes_needed(self) -> int:
        """Bytes the next step needs before it can complete (at least 1)."""
        return max(self._dec.bytes_needed, 1)

    @property
    def at_boundary(self) -> bool:
        """True between streams with nothing buffered (the input may end here)."""
        return self._dtype is None and self._dec.at_boundary

    def send(self, data: Any) -> bytes:
        """Feed input bytes; returns the Arrow IPC bytes they complete (may be empty)."""
        if self._error is not None:
            raise self._error
        try:
            self._dec.feed(data)
            self._drain()
        except VortexIPCError as e:
            self._error = e
            raise
        return self._out.take()

    def close(self) -> bytes:
        """Declare the input finished; returns the Arrow end-of-stream marker of a stream
        that ended without a Vortex end marker (else nothing). A stream cut inside a
        message raises ``TruncatedStreamError``."""
        if self._error is not None:
            raise self._error
        try:
            self._dec.end_of_input()
            self._drain()
            if self._writer is not None:
                self._writer.close()
                self._writer = None
                self.streams += 1
        except VortexIPCError as e:
            self._error = e
            raise
        return self._out.take()

    def _drain(self) -> None:
        while True:
            m = self._dec.next_message()
            if m is None:
                return
            if self._dtype is None:
                self._start(m)
            elif m.end_marker:
                self._writer.close()
                self.streams += 1
                self._new_stream(self._dec.unused_data)
            else:
                self._batch(m)

    def _start(self, first: Any) -> None:
        import pyarrow as pa

        from ._ipc.reader import _stream_header, _table_fields

        key = (first.body.tobytes(), tuple(first.header.custom_metadata.items()), self.limits)
        hit = _HEADER_CACHE.get(key)
        if hit is None:
            d, md, layout = _stream_header(first, self.limits)
            if _table_fields(d) is None:
                raise UnsupportedError(
                    f"an Arrow IPC stream holds record batches: the stream's dtype {d} is not a "
                    "table (a non-nullable struct)", message_index=first.index,
                    offset=first.offset)
            from ._arrow import to_arrow_schema

            schema = (to_arrow_schema(d) if layout is None else layout.schema())
            schema = schema.with_metadata(md.to_arrow() if md else None)
            hit = d, md, layout, schema
            if len(_HEADER_CACHE) >= 256:
                _HEADER_CACHE.clear()
            _HEADER_CACHE[key] = hit
        self._dtype, self._metadata, self._layout, schema = hit
        self._writer = pa.ipc.new_stream(self._out, schema)

    def _batch(self, m: Any) -> None:
        from ._ipc.reader import _batch, _check_stream_message

        _check_stream_message(m)
        b = _batch(m, self._dtype, self.limits, False, self._layout, self._metadata)
        rb = b.to_arrow()
        self._writer.write_batch(rb, custom_metadata=b.metadata.to_arrow() if b.metadata else None)
