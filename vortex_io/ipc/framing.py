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

__all__ = ["MessageDecoder", "MessageEncoder", "looks_like"]

_U32 = struct.Struct("<I")
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
                try:
                    hdr = decode_message_header(memoryview(raw))
                except VortexIPCError as e:
                    if self._index == 0 and type(e) is MalformedStreamError:
                        e = MalformedStreamError(
                            f"not a Vortex IPC stream: it looks like {self._first}"
                            if self._first else
                            f"not a Vortex IPC stream: its first message header does not "
                            f"parse ({e.reason})")
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
