"""Sans-IO framing: ``MessageDecoder`` turns bytes into messages, ``MessageEncoder`` turns
dtypes and arrays into bytes. Neither does any IO (h11 is the model): drive them over
files, pipes, sockets or asyncio as you like.

A frame is ``[u32 LE header length N][N bytes Message flatbuffer][body_size bytes body]``.

>>> import vortex_io as vio
>>> enc = MessageEncoder()
>>> data = b"".join(bytes(p) for p in enc.dtype_message(vio.dtype.int64()))
>>> data += b"".join(bytes(p) for p in enc.array_message(vio.array([1, 2, 3])))
>>> dec = MessageDecoder()
>>> dec.bytes_needed
4
>>> dec.feed(data[:10])
>>> dec.next_message() is None, dec.bytes_needed > 0
(True, True)
>>> dec.feed(data[10:])
>>> [m.type.name for m in dec]
['DTYPE', 'ARRAY']
>>> dec.end_of_input()  # exactly between messages: a complete stream

With ``MessageEncoder(integrity=True)`` every message carries a checksum record and
``end_marker()`` ends the stream (``vortex_io.integrity``); the decoder verifies each
message before handing it out, and a stream with integrity data that stops before its end
marker is cut:

>>> enc = MessageEncoder(integrity=True)
>>> data = b"".join(bytes(p) for p in enc.dtype_message(vio.dtype.int64()))
>>> data += b"".join(bytes(p) for p in enc.array_message(vio.array([1, 2, 3])))
>>> dec = MessageDecoder()
>>> dec.feed(data)
>>> [(m.type.name, m.verified) for m in dec]
[('DTYPE', True), ('ARRAY', True)]
>>> dec.end_of_input()
Traceback (most recent call last):
...
vortex_io.TruncatedStreamError: the stream carries integrity data but ends after message 1 without its end marker (message 2, byte offset 444)
>>> dec = MessageDecoder()
>>> dec.feed(data + b"".join(bytes(p) for p in enc.end_marker()))
>>> [(m.type.name, m.end_marker) for m in dec], dec.finished
([('DTYPE', False), ('ARRAY', False), ('ARRAY', True)], True)

A stream without integrity data may end with the marker too (``StreamWriter(...,
end_marker=True)``): the decoder stops at it and leaves what follows, the next stream on a
pipe or socket, in ``unused_data``:

>>> enc = MessageEncoder()
>>> one = b"".join(bytes(p) for p in enc.dtype_message(vio.dtype.int64()))
>>> one += b"".join(bytes(p) for p in enc.end_marker())
>>> dec = MessageDecoder()
>>> dec.feed(one + b"next")
>>> [(m.type.name, m.end_marker) for m in dec], dec.finished, dec.unused_data
([('DTYPE', False), ('ARRAY', True)], True, b'next')
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import _native_glue as ng
from .. import dtype as dt
from .. import integrity as ig
from .._array import Array
from .._errors import (
    IntegrityError,
    LimitExceededError,
    MalformedStreamError,
    TruncatedStreamError,
    UnsupportedError,
    VortexIPCError,
)
from .._limits import DEFAULT_LIMITS, ReaderLimits
from .._metadata import Metadata, MetadataLike
from .flatbuf import root
from .messages import Message, aligned_empty, body_layout, serialize_array
from .schema import MessageType, decode_message_header, encode_dtype, encode_message_header

__all__ = ["MessageDecoder", "MessageEncoder", "looks_like"]

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_LEN, _HEADER, _BODY = 0, 1, 2
#: the stream alignment the writer plans buffers for (and the decoder preserves on copies)
STREAM_ALIGNMENT = 64


#: a first message (the DType message) announcing a longer header than this (and than the
#: reader's limit) is taken for input that is not a Vortex IPC stream at all
PLAUSIBLE_FIRST_HEADER = 16 << 20

#: (prefix, what input starting with it is); Vortex streams start with a small u32 LE
#: header length, so none of these can begin one
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"PAR1", "a Parquet file (it starts with the magic PAR1)"),
    (b"ARROW1", "an Arrow IPC file (it starts with the magic ARROW1)"),
    (b"\xff\xff\xff\xff", "an Arrow IPC stream (it starts with the continuation marker 0xFFFFFFFF)"),
    (b"FEA1", "a Feather v1 file (it starts with the magic FEA1)"),
    (b"\x1f\x8b\x08", "gzip-compressed data"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (b"\x04\x22\x4d\x18", "lz4-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\xef\xbb\xbf", "text (it starts with a UTF-8 byte order mark)"),
)


def looks_like(prefix: bytes) -> str | None:
    r"""What input starting with ``prefix`` (its first 4 to 8 bytes) looks like when it
    starts with another format's signature (Parquet, Arrow IPC, compressed data, text),
    else None. The decoder reports it when the first message cannot be read.

    >>> looks_like(b"PAR1\x15\x04")
    'a Parquet file (it starts with the magic PAR1)'
    >>> looks_like(b"\x10\x00\x00\x00") is None
    True
    """
    for sig, what in _SIGNATURES:
        if prefix.startswith(sig) or (4 <= len(prefix) < len(sig) and sig.startswith(prefix)):
            return what
    if len(prefix) >= 4 and all(0x20 <= b < 0x7F or b in (9, 10, 13) for b in prefix[:4]):
        return "text (CSV, JSON or similar)"
    return None


class MessageDecoder:
    """Feed bytes in, take complete messages out.

    ``feed`` keeps references to what it is given (no copy) when a message lies within
    one fed chunk, so message bodies are views of the input; a message split across
    chunks is copied once into aligned memory. Do not mutate fed buffers afterwards.

    Integrity data (``vortex_io.integrity``) is verified whenever the stream carries it:
    each header's checksum before the header is parsed, each body's before the message is
    handed out (``defer_body_checks=True``: Array messages come out with the check pending,
    done by ``Message.check_body``, which ``Message.array()`` and the readers' native decode
    call first), the end marker's counts, and that the input does not stop before the end
    marker (``TruncatedStreamError``) or go on after it (``IntegrityError``). ``finished``
    turns true at the end marker, which comes out as a message with ``end_marker`` set.
    ``require_integrity=True`` refuses a stream whose first message has no record.
    """

    def __init__(self, *, limits: ReaderLimits | None = None,
                 require_integrity: bool = False, defer_body_checks: bool = False) -> None:
        self.limits = limits or DEFAULT_LIMITS
        #: refuse a stream whose first message carries no integrity record
        self.require_integrity = require_integrity
        #: Array messages come out with their body's check pending (``Message.check_body``,
        #: which ``Message.array()`` and the native decode call): the readers' mode
        self.defer_body_checks = defer_body_checks
        #: (deferred checks) compute large bodies' checksums on the native core's background
        #: thread while the next messages are framed
        self.background_checks = False
        #: whether the stream carries integrity data (None until its first header is read)
        self.integrity: bool | None = None
        self._chain = 0  # header_crc of the previous message
        self._body_crc = 0
        self._verified = False
        self._end: tuple[int, int] | None = None  # the current message's end-marker counts
        self._rows = 0  # rows of the Array messages so far
        self._finished = False
        self._chunks: deque[np.ndarray] = deque()
        self._buffered = 0
        self._consumed = 0  # stream offset of the first buffered byte
        self._state = _LEN
        self._need = 4
        self._msg_offset = 0
        self._header_len = 0
        self._header: Any = None
        self._index = 0
        self._error: VortexIPCError | None = None
        self._ended = False
        self._first: str | None = None  # what the first bytes look like (looks_like)

    # -- input -------------------------------------------------------------------------
    def feed(self, data: Any) -> None:
        """Add bytes (any bytes-like object; empty is fine)."""
        if self._ended:
            raise RuntimeError("feed() after end_of_input()")
        if isinstance(data, np.ndarray):
            arr = data.reshape(-1)
            if arr.dtype != np.uint8:
                arr = np.ascontiguousarray(arr).view(np.uint8)
        else:
            arr = np.frombuffer(data, dtype=np.uint8)
        if arr.nbytes:
            self._chunks.append(arr.reshape(-1))
            self._buffered += arr.nbytes

    @property
    def bytes_needed(self) -> int:
        """How many more bytes must be fed before the next step can complete (0: ready)."""
        return max(0, self._need - self._buffered)

    @property
    def position(self) -> int:
        """Stream offset of the next byte the decoder will consume."""
        return self._consumed

    @property
    def messages_decoded(self) -> int:
        return self._index

    @property
    def at_boundary(self) -> bool:
        """True when no partial message is buffered."""
        return self._state == _LEN and self._buffered == 0

    @property
    def ended(self) -> bool:
        """True once ``end_of_input`` was called: nothing more may be fed (the messages
        still buffered can be taken)."""
        return self._ended

    @property
    def finished(self) -> bool:
        """True once the stream's end marker was decoded: the stream is complete. Bytes
        after it are an error in a stream with integrity data; in one without, they are
        left alone (``unused_data``: on a pipe or socket, the next stream may follow)."""
        return self._finished

    @property
    def unused_data(self) -> bytes:
        """The bytes fed after the end marker (empty before it): the start of whatever
        follows the stream on the same connection."""
        if not self._finished or not self._buffered:
            return b""
        return b"".join(c.tobytes() for c in self._chunks)

    # -- output ------------------------------------------------------------------------
    def _take(self, n: int) -> np.ndarray:
        """Remove and return the next ``n`` buffered bytes (zero-copy when contiguous)."""
        first = self._chunks[0]
        if first.nbytes >= n:
            out = first[:n]
            if first.nbytes == n:
                self._chunks.popleft()
            else:
                self._chunks[0] = first[n:]
        else:
            # keep the stream's alignment phase so planned buffer alignment survives the copy
            phase = self._consumed % STREAM_ALIGNMENT
            out = aligned_empty(n + phase, STREAM_ALIGNMENT)[phase:]
            pos = 0
            while pos < n:
                c = self._chunks[0]
                k = min(c.nbytes, n - pos)
                out[pos : pos + k] = c[:k]
                pos += k
                if k == c.nbytes:
                    self._chunks.popleft()
                else:
                    self._chunks[0] = c[k:]
        self._buffered -= n
        self._consumed += n
        return out

    def _peek(self, n: int) -> bytes:
        """Up to ``n`` buffered bytes, not consumed."""
        out = b""
        for c in self._chunks:
            out += c[: n - len(out)].tobytes()
            if len(out) >= n:
                break
        return out

    def _check_first_length(self, n: int, first: str | None) -> None:
        """Raise if the first message's header length ``n`` says the input is not a Vortex
        IPC stream: another format's signature (``first``: what it looks like) announcing a
        header the reader would refuse or no DType message needs, or a header longer than
        any plausible DType message."""
        self._first = first
        if n == 0 or n > self.limits.max_header_bytes or n > PLAUSIBLE_FIRST_HEADER:
            if first is not None:
                raise self._fail(MalformedStreamError(
                    f"not a Vortex IPC stream: it looks like {first}"))
        if n > max(self.limits.max_header_bytes, PLAUSIBLE_FIRST_HEADER):
            raise self._fail(MalformedStreamError(
                f"not a Vortex IPC stream: its first 4 bytes would announce a message "
                f"header of {n} bytes"))

    def _fail(self, e: VortexIPCError) -> VortexIPCError:
        e.locate(message_index=self._index, offset=self._msg_offset)
        self._error = e
        return e

    def next_message(self) -> Message | None:
        """The next complete message, or None until more bytes are fed."""
        if self._error is not None:
            raise self._error
        lim = self.limits
        if self._finished:
            if self._buffered and self.integrity:
                self._trailing()
            return None
        while self._buffered >= self._need:
            if self._state == _LEN:
                self._msg_offset = self._consumed
                first = looks_like(self._peek(8)) if self._index == 0 else None
                (n,) = _U32.unpack(self._take(4).tobytes())
                if self._index == 0:
                    self._check_first_length(n, first)
                if n == 0:
                    raise self._fail(MalformedStreamError("message header length is 0"))
                if n > lim.max_header_bytes:
                    raise self._fail(LimitExceededError(
                        f"message header of {n} bytes exceeds the limit of {lim.max_header_bytes}"))
                self._header_len = n
                self._state, self._need = _HEADER, n
            elif self._state == _HEADER:
                raw = self._take(self._need)
                # the integrity record is checked from the framing alone, before any byte of
                # the header is interpreted
                rec = ig.tail_record(raw)
                if rec is not None:
                    want = ig.header_crc(_U32.pack(self._header_len), raw, self._chain)
                    if want != rec[1]:
                        raise self._fail(IntegrityError(
                            f"header checksum mismatch: the record says {rec[1]:#010x}, the "
                            f"header (chained from the previous message) gives {want:#010x}"))
                try:
                    hdr = decode_message_header(memoryview(raw))  # type: ignore[arg-type]
                except VortexIPCError as e:
                    if self._index == 0 and type(e) is MalformedStreamError:
                        e = MalformedStreamError(
                            f"not a Vortex IPC stream: it looks like {self._first}"
                            if self._first else
                            f"not a Vortex IPC stream: its first message header does not "
                            f"parse ({e.reason})")
                    raise self._fail(e) from None
                self._check_record(hdr, raw, rec)
                if hdr.body_size > lim.max_body_bytes:
                    raise self._fail(LimitExceededError(
                        f"message body of {hdr.body_size} bytes exceeds the limit of {lim.max_body_bytes}"))
                self._header = hdr
                self._state, self._need = _BODY, hdr.body_size
            else:
                body = self._take(self._need) if self._need else np.zeros(0, dtype=np.uint8)
                hdr = self._header
                msg = Message(self._index, self._msg_offset, hdr, body, self._header_len,
                              verified=self._verified)
                if self._verified:
                    if (self.defer_body_checks and hdr.type == MessageType.ARRAY
                            and self._end is None):
                        msg.verified = False
                        msg.pending_crc = self._body_crc
                        if self.background_checks:
                            msg.crc_job = ig.crc32c_start(body)
                    else:
                        got = ig.crc32c(body)
                        if got != self._body_crc:
                            raise self._fail(IntegrityError(
                                f"body checksum mismatch: the record says {self._body_crc:#010x}, "
                                f"the {body.nbytes}-byte body gives {got:#010x}"))
                if self._end is not None:
                    self._check_end(*self._end)
                    msg.end_marker = True
                    self._finished = True
                elif hdr.type == MessageType.ARRAY:
                    self._rows += hdr.row_count
                self._index += 1
                self._header = None
                self._state, self._need = _LEN, 4
                return msg
        if self._ended:
            self._check_ended()
        return None

    def _check_record(self, hdr: Any, raw: np.ndarray, rec: tuple[int, int] | None) -> None:
        """After a header parsed: its integrity record agrees with the stream's (every
        message has one or none does), and the end marker's counts are read."""
        values: list[bytes] = []
        end: list[bytes] = []
        for k, v in hdr.custom_metadata._pairs:
            if k.startswith(ig.RESERVED_PREFIX):
                if k == ig.CRC_KEY:
                    values.append(v)
                elif k == ig.END_KEY:
                    end.append(v)
        first = self._index == 0
        if rec is None:
            if values:
                raise self._fail(IntegrityError(
                    "the message's integrity record is not where it belongs (the last "
                    f"{ig.RECORD_SIZE} bytes of its header): damaged"))
            if first:
                self.integrity = False
                if self.require_integrity:
                    raise self._fail(IntegrityError(
                        "the stream carries no integrity data (require_integrity=True)"))
            elif self.integrity:
                raise self._fail(IntegrityError(
                    "the message has no integrity record; the stream's first message has one"))
            self._verified = False
            self._end = self._end_counts(hdr, end)
            return
        if len(values) != 1 or values[0] != raw[-ig.RECORD_SIZE:].tobytes():
            raise self._fail(IntegrityError(
                "the header's last bytes are not its one vortex_io.crc32c value"))
        if first:
            self.integrity = True
        elif not self.integrity:
            raise self._fail(IntegrityError(
                "the message has an integrity record; the stream's first message has none"))
        self._verified = True
        self._body_crc = rec[0]
        self._chain = rec[1]
        self._end = self._end_counts(hdr, end)

    def _end_counts(self, hdr: Any, end: list[bytes]) -> tuple[int, int] | None:
        """The counts of an end marker (None: the message is not one); a malformed marker
        raises."""
        if not end:
            return None
        counts = ig.parse_end_value(end[0]) if len(end) == 1 else None
        if counts is None or hdr.type != MessageType.ARRAY or hdr.row_count != 0:
            cls = IntegrityError if self._verified else MalformedStreamError
            raise self._fail(cls(
                "a malformed end marker (it must be one zero-row Array message with one "
                "16-byte vortex_io.end value)"))
        return counts

    def _check_end(self, messages: int, rows: int) -> None:
        if messages != self._index or rows != self._rows:
            cls = IntegrityError if self._verified else MalformedStreamError
            raise self._fail(cls(
                f"the end marker counts {messages} message(s) and {rows} row(s) before it; "
                f"the stream has {self._index} and {self._rows}"))

    def skip_to(self, offset: int, index: int, *, past_buffer: bool = False) -> None:
        """Continue at the message that starts at stream ``offset``, numbered ``index``: the
        buffered bytes before it are dropped unread (no copy). For readers that know the
        message boundaries from a header-only pass (``vortex_io.scan(messages=...)``). The
        decoder must be between messages and hold every byte up to ``offset``, or, with
        ``past_buffer=True`` (a reader that can seek), ``offset`` may lie past the buffered
        bytes: they are all dropped and the next bytes fed are those from ``offset`` on.

        >>> import vortex_io as vio
        >>> enc = MessageEncoder()
        >>> parts = enc.dtype_message(vio.dtype.int64())
        >>> first = b"".join(bytes(p) for p in parts)
        >>> rest = [b"".join(bytes(p) for p in enc.array_message(vio.array([i]))) for i in range(3)]
        >>> dec = MessageDecoder()
        >>> dec.feed(first + b"".join(rest))
        >>> dec.next_message().type.name
        'DTYPE'
        >>> dec.skip_to(len(first) + len(rest[0]) + len(rest[1]), 3)
        >>> m = dec.next_message()
        >>> m.index, m.offset == dec.position - m.size
        (3, True)
        """
        if self._error is not None:
            raise self._error
        if self.integrity:
            # each header checksum chains from the one before, and the end marker counts
            # the rows: such a stream is entered by framing the messages before (their
            # bodies unchecked, never used), not by a jump
            raise ValueError("a stream with integrity data cannot be entered by skipping")
        n = offset - self._consumed
        if past_buffer and n > self._buffered and self._state == _LEN and index >= self._index:
            self._chunks.clear()
            self._buffered = 0
            self._consumed = offset
            self._index = index
            return
        if self._state != _LEN or n < 0 or n > self._buffered or index < self._index:
            raise ValueError(f"cannot skip to offset {offset} (message {index}) from offset "
                             f"{self._consumed} (message {self._index}, {self._buffered} bytes "
                             "buffered)")
        while n:
            first = self._chunks[0]
            k = min(first.nbytes, n)
            if k == first.nbytes:
                self._chunks.popleft()
            else:
                self._chunks[0] = first[k:]
            self._buffered -= k
            self._consumed += k
            n -= k
        self._index = index

    def __iter__(self) -> Iterator[Message]:
        """Every message that is complete in what was fed so far."""
        while (m := self.next_message()) is not None:
            yield m

    def end_of_input(self) -> None:
        """Declare the input finished. Raises ``TruncatedStreamError`` if it ended inside a
        message; input that ends exactly between messages is a complete stream.

        Complete messages still buffered can be taken with ``next_message`` afterwards;
        if the buffered bytes end inside a message that is not yet known here (its length
        prefix or header is complete but unparsed), ``next_message`` raises the
        ``TruncatedStreamError`` once it reaches that message.
        """
        self._ended = True
        if self._error is not None:
            raise self._error
        if self._buffered < self._need:
            self._check_ended()

    def _check_ended(self) -> None:
        """At the end of input with no complete message left: raise if the stream was cut
        inside a message, or (integrity data) before its end marker."""
        if self._finished:
            if self._buffered and self.integrity:
                self._trailing()
            return
        if not self.at_boundary:
            self._raise_truncated()
        if self.integrity and not self._finished:
            e = TruncatedStreamError(
                "the stream carries integrity data but ends after message "
                f"{self._index - 1} without its end marker",
                message_index=self._index, offset=self._consumed)
            self._error = e
            raise e

    def _trailing(self) -> None:
        self._msg_offset = self._consumed
        raise self._fail(IntegrityError(
            f"{self._buffered} byte(s) follow the stream's end marker"))

    def _raise_truncated(self) -> None:
        if self._index == 0 and self._state == _HEADER and self._first is not None:
            # another format's signature announcing a header longer than the input
            e: VortexIPCError = MalformedStreamError(
                f"not a Vortex IPC stream: it looks like {self._first}", message_index=0,
                offset=0)
            self._error = e
            raise e
        where = {_LEN: "length prefix", _HEADER: "header", _BODY: "body"}[self._state]
        end = self._consumed + self._buffered
        e = TruncatedStreamError(
            f"stream ends inside the {where} of a message "
            f"({self._buffered} of {self._need} bytes of that part present)",
            message_index=self._index, offset=end)
        self._error = e
        raise e


#: serialize_array() of a zero-chunk vortex.chunked array: the end marker's body
_EMPTY_CHUNKED: tuple[Any, Any, Any] | None = None


class MessageEncoder:
    """Builds framed messages; tracks the stream position so bodies can be aligned.

    Each method returns a list of bytes-like parts to write in order (buffers are passed
    through without copying). ``integrity=True``: every message carries an integrity record
    (CRC-32C of its framing and body, chained from message to message); ``end_marker()``
    builds the message that ends the stream (``vortex_io.integrity``; required with
    integrity data, optional without). Metadata keys under
    the reserved ``vortex_io.`` prefix are refused (``ValueError``).
    """

    def __init__(self, position: int = 0, *, integrity: bool = False) -> None:
        self.position = position
        self.messages = 0
        self.integrity = integrity
        #: rows of the Array messages built so far
        self.rows = 0
        self._chain = 0  # header_crc of the previous message
        self._dtype: dt.DType | None = None
        # large buffers are checksummed on every core
        self._threads = ng.decode_threads(None) if integrity else 1

    def _frame(self, header: bytes, body_parts: list[Any], body_size: int, align: int) -> list[Any]:
        pad = (-(self.position + 4 + len(header))) % align if align > 1 else 0
        head = _U32.pack(len(header) + pad) + header + bytes(pad)
        self.position += len(head) + body_size
        self.messages += 1
        return [head, *body_parts]

    def _sealed(self, header: bytes | bytearray, body_parts: list[Any], body_size: int) -> list[Any]:
        """The frame of a header ending with a placeholder record, the record filled in:
        the body's CRC-32C, then the CRC-32C of the length prefix and header up to the
        last four bytes, continued from the previous message's."""
        head = bytearray(_U32.pack(len(header)) + header)
        body_crc = 0
        threads = self._threads
        for p in body_parts:
            body_crc = ig.crc32c(p, body_crc, threads)
        _U32.pack_into(head, len(head) - 8, body_crc)
        self._chain = ig.crc32c(memoryview(head)[:-4], self._chain)
        _U32.pack_into(head, len(head) - 4, self._chain)
        self.position += len(head) + body_size
        self.messages += 1
        return [bytes(head), *body_parts]

    def dtype_message(self, dtype: dt.DType, metadata: MetadataLike = None,
                      reserved: Sequence[tuple[bytes, bytes]] = ()) -> list[Any]:
        """The DType message that starts a stream (``metadata``: the stream's; ``reserved``:
        pairs under the reserved ``vortex_io.`` prefix that the library itself adds)."""
        md = Metadata.coerce(metadata)
        ig.check_user_metadata(md)
        if reserved:
            md = Metadata([*md.items(), *reserved])
        body = encode_dtype(dtype)
        self._dtype = dtype
        if self.integrity:
            hdr = encode_message_header(MessageType.DTYPE, len(body), metadata=md,
                                        record=ig.RECORD_PLACEHOLDER)
            return self._sealed(hdr, [body], len(body))
        hdr = encode_message_header(MessageType.DTYPE, len(body), metadata=md)
        return self._frame(hdr, [body], len(body), 1)

    def array_message(self, array: Array, metadata: MetadataLike = None) -> list[Any]:
        """An Array message holding ``array`` (``metadata``: the batch's)."""
        md = Metadata.coerce(metadata)
        ig.check_user_metadata(md)
        return self._array_message(array, md)

    def _array_message(self, array: Array, md: Metadata) -> list[Any]:
        if len(array) >= 2**32:
            raise UnsupportedError(
                f"an array message holds at most 2**32-1 rows, not {len(array)}; split it into chunks"
            )
        return self._serialized_message(serialize_array(array), len(array), md)

    def _serialized_message(self, serialized: tuple[Any, Any, Any], rows: int,
                            md: Metadata) -> list[Any]:
        encodings, buffers, root_node = serialized
        self.rows += rows
        if self.integrity:
            # no header padding (the record ends the header): the buffers are aligned in
            # the stream by their Buffer.padding, which needs the body's offset, so the
            # header is built first and its body_size (a u64, always written) set after
            hdr = encode_message_header(MessageType.ARRAY, 0, row_count=rows,
                                        encodings=encodings, metadata=md,
                                        record=ig.RECORD_PLACEHOLDER)
            parts, size, _ = body_layout(buffers, root_node, self.position + 4 + len(hdr))
            hdr_buf = bytearray(hdr)
            _U64.pack_into(hdr_buf, root(memoryview(hdr_buf), "Message")._field(3), size)
            hdr = bytes(hdr_buf)
            return self._sealed(hdr, parts, size)
        parts, size, align = body_layout(buffers, root_node)
        hdr = encode_message_header(MessageType.ARRAY, size, row_count=rows,
                                    encodings=encodings, metadata=md)
        return self._frame(hdr, parts, size, min(align, STREAM_ALIGNMENT))

    def end_marker(self) -> list[Any]:
        """The message that ends the stream: a zero-row Array message of the stream's dtype
        (a ``vortex.chunked`` array of no chunks, the same few bytes whatever the dtype)
        whose ``vortex_io.end`` value counts the messages and rows before it. Readers stop
        at it and read nothing after it; to other readers (vortex-data) it is one more,
        empty, array."""
        if self._dtype is None:
            raise ValueError("end_marker() before dtype_message()")
        md = Metadata([(ig.END_KEY, ig.end_value(self.messages, self.rows))])
        global _EMPTY_CHUNKED
        if _EMPTY_CHUNKED is None:  # the same for every dtype: serialized once
            from ..encodings._chunked import chunked_array

            _EMPTY_CHUNKED = serialize_array(chunked_array([], dt.int64()))
        return self._serialized_message(_EMPTY_CHUNKED, 0, md)

    def buffer_message(self, data: Any, alignment_exponent: int = 0,
                       metadata: MetadataLike = None) -> list[Any]:
        """A raw Buffer message (message-level API only; stream readers reject it). With
        integrity its body is not aligned (nothing may pad the header)."""
        if not 0 <= alignment_exponent <= 16:
            raise ValueError("alignment_exponent must be in 0..16")
        md = Metadata.coerce(metadata)
        ig.check_user_metadata(md)
        buf = np.frombuffer(data, dtype=np.uint8)
        if self.integrity:
            hdr = encode_message_header(MessageType.BUFFER, buf.nbytes,
                                        alignment_exponent=alignment_exponent, metadata=md,
                                        record=ig.RECORD_PLACEHOLDER)
            return self._sealed(hdr, [buf], buf.nbytes)
        hdr = encode_message_header(MessageType.BUFFER, buf.nbytes,
                                    alignment_exponent=alignment_exponent, metadata=md)
        return self._frame(hdr, [buf], buf.nbytes, min(1 << alignment_exponent, STREAM_ALIGNMENT))
