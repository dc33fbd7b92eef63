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
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import dtype as dt
from ..array import Array
from ..errors import (
    LimitExceededError,
    MalformedStreamError,
    TruncatedStreamError,
    UnsupportedError,
    VortexIPCError,
)
from ..limits import DEFAULT_LIMITS, ReaderLimits
from ..metadata import Metadata, MetadataLike
from .messages import Message, aligned_empty, array_body_parts
from .schema import MessageType, decode_message_header, encode_dtype, encode_message_header

__all__ = ["MessageDecoder", "MessageEncoder"]

_U32 = struct.Struct("<I")
_LEN, _HEADER, _BODY = 0, 1, 2
#: the stream alignment the writer plans buffers for (and the decoder preserves on copies)
STREAM_ALIGNMENT = 64


class MessageDecoder:
    """Feed bytes in, take complete messages out.

    ``feed`` keeps references to what it is given (no copy) when a message lies within
    one fed chunk, so message bodies are views of the input; a message split across
    chunks is copied once into aligned memory. Do not mutate fed buffers afterwards.
    """

    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or DEFAULT_LIMITS
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

    def _fail(self, e: VortexIPCError) -> VortexIPCError:
        e.locate(message_index=self._index, offset=self._msg_offset)
        self._error = e
        return e

    def next_message(self) -> Message | None:
        """The next complete message, or None until more bytes are fed."""
        if self._error is not None:
            raise self._error
        lim = self.limits
        while self._buffered >= self._need:
            if self._state == _LEN:
                self._msg_offset = self._consumed
                (n,) = _U32.unpack(self._take(4).tobytes())
                if n == 0:
                    raise self._fail(MalformedStreamError("message header length is 0"))
                if n > lim.max_header_bytes:
                    raise self._fail(LimitExceededError(
                        f"message header of {n} bytes exceeds the limit of {lim.max_header_bytes}"))
                self._header_len = n
                self._state, self._need = _HEADER, n
            elif self._state == _HEADER:
                raw = self._take(self._need)
                try:
                    hdr = decode_message_header(memoryview(raw))
                except VortexIPCError as e:
                    raise self._fail(e) from None
                if hdr.body_size > lim.max_body_bytes:
                    raise self._fail(LimitExceededError(
                        f"message body of {hdr.body_size} bytes exceeds the limit of {lim.max_body_bytes}"))
                self._header = hdr
                self._state, self._need = _BODY, hdr.body_size
            else:
                body = self._take(self._need) if self._need else np.zeros(0, dtype=np.uint8)
                msg = Message(self._index, self._msg_offset, self._header, body, self._header_len)
                self._index += 1
                self._header = None
                self._state, self._need = _LEN, 4
                return msg
        if self._ended and not self.at_boundary:
            self._raise_truncated()
        return None

    def skip_to(self, offset: int, index: int) -> None:
        """Continue at the message that starts at stream ``offset``, numbered ``index``: the
        buffered bytes before it are dropped unread (no copy). For readers that know the
        message boundaries from a header-only pass (``vortex_io.scan(messages=...)``). The
        decoder must be between messages and hold every byte up to ``offset``.

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
        n = offset - self._consumed
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
        if not self.at_boundary and self._buffered < self._need:
            self._raise_truncated()

    def _raise_truncated(self) -> None:
        where = {_LEN: "length prefix", _HEADER: "header", _BODY: "body"}[self._state]
        end = self._consumed + self._buffered
        e = TruncatedStreamError(
            f"stream ends inside the {where} of a message "
            f"({self._buffered} of {self._need} bytes of that part present)",
            message_index=self._index, offset=end)
        self._error = e
        raise e


class MessageEncoder:
    """Builds framed messages; tracks the stream position so bodies can be aligned.

    Each method returns a list of bytes-like parts to write in order (buffers are passed
    through without copying).
    """

    def __init__(self, position: int = 0) -> None:
        self.position = position
        self.messages = 0

    def _frame(self, header: bytes, body_parts: list[Any], body_size: int, align: int) -> list[Any]:
        pad = (-(self.position + 4 + len(header))) % align if align > 1 else 0
        head = _U32.pack(len(header) + pad) + header + bytes(pad)
        self.position += len(head) + body_size
        self.messages += 1
        return [head, *body_parts]

    def dtype_message(self, dtype: dt.DType, metadata: MetadataLike = None) -> list[Any]:
        body = encode_dtype(dtype)
        hdr = encode_message_header(MessageType.DTYPE, len(body), metadata=Metadata.coerce(metadata))
        return self._frame(hdr, [body], len(body), 1)

    def array_message(self, array: Array, metadata: MetadataLike = None) -> list[Any]:
        if len(array) >= 2**32:
            raise UnsupportedError(
                f"an array message holds at most 2**32-1 rows, not {len(array)}; split it into chunks"
            )
        encodings, parts, size, align = array_body_parts(array)
        hdr = encode_message_header(MessageType.ARRAY, size, row_count=len(array),
                                    encodings=encodings, metadata=Metadata.coerce(metadata))
        return self._frame(hdr, parts, size, min(align, STREAM_ALIGNMENT))

    def buffer_message(self, data: Any, alignment_exponent: int = 0,
                       metadata: MetadataLike = None) -> list[Any]:
        """A raw Buffer message (message-level API only; stream readers reject it)."""
        if not 0 <= alignment_exponent <= 16:
            raise ValueError("alignment_exponent must be in 0..16")
        buf = np.frombuffer(data, dtype=np.uint8)
        hdr = encode_message_header(MessageType.BUFFER, buf.nbytes,
                                    alignment_exponent=alignment_exponent,
                                    metadata=Metadata.coerce(metadata))
        return self._frame(hdr, [buf], buf.nbytes, min(1 << alignment_exponent, STREAM_ALIGNMENT))
