"""Messages: the decoded frames of a stream, and the array body codec.

An Array message body is ``[buffers][Array flatbuffer][u32 flatbuffer length]``. Decoding
builds the encoding tree with buffers that are views into the body (copied only when
misaligned); nothing is decompressed here.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from operator import add as _add
from typing import Any

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, check_decoded_size, get_encoding
from .._errors import (
    IntegrityError,
    LimitExceededError,
    MalformedStreamError,
    UnsupportedError,
    VortexIPCError,
)
from .._limits import DEFAULT_LIMITS, ReaderLimits
from .._metadata import Metadata
from .._stats import ArrayStats
from ..integrity import crc32c, user_metadata
from .flatbuf import root, vtable_at
from .schema import (
    FlatNode,
    MessageHeader,
    MessageType,
    decode_dtype,
    encode_array_fb,
    vector_at,
)

__all__ = ["Message", "decode_array_body", "serialize_array", "body_layout", "aligned_empty"]

_U32 = struct.Struct("<I")
_BUFFER_SPEC = struct.Struct("<HBBI")
MAX_ALIGNMENT_EXPONENT = 16


@dataclass
class Message:
    """One framed message: where it was, its decoded header and its body bytes."""

    index: int
    offset: int
    header: MessageHeader
    body: np.ndarray  # uint8 view of the body
    header_size: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: the message carried an integrity record and passed its checks (``vortex_io.integrity``)
    verified: bool = False
    #: the message is a stream's end marker (a zero-row Array message; readers yield no batch)
    end_marker: bool = False
    #: the body's CRC-32C still to be checked (a decoder with ``defer_body_checks``), and
    #: what computes the body's (see ``check_body``)
    pending_crc: int | None = None
    crc_job: Any = field(default=None, repr=False)

    def check_body(self) -> None:
        """Check the body against its integrity record if that is still to be done (a
        decoder with ``defer_body_checks`` leaves it to whoever uses the body first):
        ``IntegrityError`` on a mismatch. ``array()`` and the native decode call it."""
        want = self.pending_crc
        if want is None:
            return
        job, self.crc_job = self.crc_job, None
        got = job() if job is not None else crc32c(self.body)
        if got != want:
            raise IntegrityError(
                f"body checksum mismatch: the record says {want:#010x}, the "
                f"{self.body.nbytes}-byte body gives {got:#010x}",
                message_index=self.index, offset=self.offset)
        self.pending_crc = None
        self.verified = True

    @property
    def type(self) -> MessageType:
        return self.header.type

    @property
    def metadata(self) -> Metadata:
        """The message's custom metadata without the reserved ``vortex_io.`` keys (those are
        in ``header.custom_metadata``)."""
        return user_metadata(self.header.custom_metadata)

    @property
    def size(self) -> int:
        """Bytes this message occupies in the stream (length prefix included)."""
        return 4 + self.header_size + self.header.body_size

    def dtype(self, limits: ReaderLimits = DEFAULT_LIMITS) -> dt.DType:
        """The dtype carried by a DType message."""
        if self.type != MessageType.DTYPE:
            raise MalformedStreamError(f"expected a DType message, got {self.type.name}",
                                       message_index=self.index, offset=self.offset)
        try:
            return decode_dtype(self.body.data, limits)
        except VortexIPCError as e:
            raise e.locate(message_index=self.index, offset=self.offset) from None

    def array(self, dtype: dt.DType, limits: ReaderLimits = DEFAULT_LIMITS,
              lazy: bool = False) -> Array:
        """The array carried by an Array message, decoded against the stream's dtype
        (``lazy``: struct fields built on first use, see ``decode_array_body``)."""
        if self.type != MessageType.ARRAY:
            raise MalformedStreamError(f"expected an Array message, got {self.type.name}",
                                       message_index=self.index, offset=self.offset)
        self.check_body()
        return _located(self, dtype, limits, lazy)


def _located(msg: Message, dtype: dt.DType, limits: ReaderLimits, lazy: bool = False) -> Array:
    try:
        return decode_array_body(msg.body, msg.header, dtype, limits, lazy)
    except VortexIPCError as e:
        raise e.locate(message_index=msg.index, offset=msg.offset) from None
    except (IndexError, KeyError, struct.error, OverflowError, TypeError, ValueError,
            MemoryError, ZeroDivisionError) as e:
        raise MalformedStreamError(f"array message is inconsistent: {type(e).__name__}: {e}",
                                   message_index=msg.index, offset=msg.offset) from e


def aligned_empty(nbytes: int, alignment: int = 64) -> np.ndarray:
    """An uninitialized uint8 array whose data address is a multiple of ``alignment``.
    Large ones come from pyarrow's memory pool (``_memory.empty``): blocks of file data and
    joined message bodies from glibc's ``malloc`` page-faulted afresh whenever a new thread
    (Polars runs each query's reader on one) was handed a trimmed arena: Polars' count query
    on a 13 MB file took 30-40 ms instead of 10-13 ms for runs of 15 queries out of 40."""
    if alignment <= 64 and nbytes >= _memory.POOL_MIN_BYTES:
        return _memory.empty(nbytes, np.uint8)  # (pyarrow's buffers are 64-byte aligned)
    raw = _memory.empty(nbytes + alignment, np.uint8)
    shift = (-raw.ctypes.data) % alignment
    return raw[shift : shift + nbytes]


def _aligned(buf: np.ndarray, exp: int, address: int | None = None) -> np.ndarray:
    """``buf``, or an aligned copy of it when its ``address`` (looked up when not given)
    is not a multiple of ``2**exp``."""
    align = 1 << exp
    if align == 1 or (buf.ctypes.data if address is None else address) % align == 0:
        return buf
    out = aligned_empty(buf.nbytes, max(align, 16))
    out[:] = buf
    return out


_U16 = struct.Struct("<H")
#: the vtable entries of the first k fields of a table (k = 0..5; ArrayNode has 5 fields)
_VT_FIELDS = tuple(struct.Struct(f"<{k}H") for k in range(6))
_ABSENT = (0, 0, 0, 0, 0)
#: n little-endian u32 / u16 at once, for the usual small n
_U32N = tuple(struct.Struct(f"<{n}I") for n in range(17))
_U16N = tuple(struct.Struct(f"<{n}H") for n in range(17))


def _bad(what: str) -> MalformedStreamError:
    return MalformedStreamError(f"flatbuffer {what} is outside the header")


_U64 = struct.Struct("<Q")
_U8 = struct.Struct("<B")
#: ArrayStats fields in slot order: "v" a byte vector, "p" a Precision (u8, exact == 1),
#: "b" an optional bool, "q" an optional u64
_STATS_KINDS = ("v", "p", "v", "p", "v", "b", "b", "b", "q", "q", "q")
_STATS_VT = tuple(struct.Struct(f"<{k}H") for k in range(len(_STATS_KINDS) + 1))


def _read_stats(buf: memoryview, size: int, t: int) -> ArrayStats:
    """The ``ArrayStats`` table at ``t`` (what ``schema.read_stats`` reads through
    ``flatbuf.Table``, in one vtable read and with only the present fields visited)."""
    vt, k = vtable_at(buf, size, t, "ArrayStats")
    k = min(k, len(_STATS_KINDS))
    vals: list[Any] = [None, False, None, False, None, None, None, None, None, None, None]
    for i, off in enumerate(_STATS_VT[k].unpack_from(buf, vt + 4)):
        if not off:
            continue
        p = t + off
        kind = _STATS_KINDS[i]
        if kind == "v":
            q, n = vector_at(buf, size, p, 1, "ArrayStats.value")
            vals[i] = bytes(buf[q : q + n])
        elif kind == "q":
            if p + 8 > size:
                raise _bad("field ArrayStats.count")
            vals[i] = _U64.unpack_from(buf, p)[0]
        else:
            if p + 1 > size:
                raise _bad("field ArrayStats.flag")
            v = _U8.unpack_from(buf, p)[0]
            vals[i] = v == 1 if kind == "p" else bool(v)
    return ArrayStats(*vals)


class _Builder:
    """Builds the Array tree of one message, enforcing depth and node limits.

    Nodes are read straight off the flatbuffer (one ``struct`` call for a node's vtable,
    every offset bounds-checked) rather than through ``flatbuf.Table`` objects: with
    zero-copy bodies this per-node work is most of what a reader pays for headers.
    ``_node`` is that walk (positions only), ``_make`` builds an Array from what it found.
    """

    __slots__ = ("buf", "buffers", "encodings", "lazy", "limits", "nodes", "size", "_encs")

    def __init__(self, encodings: tuple[str, ...], buffers: list[np.ndarray], limits: ReaderLimits,
                 buf: memoryview, lazy: bool = False):
        self.lazy = lazy  # the root struct's fields are built on first use
        self.encodings = encodings
        self.buffers = buffers
        self.limits = limits
        self.nodes = 0
        self.buf = buf
        self.size = len(buf)
        self._encs: list[Any] = [None] * len(encodings)

    def __call__(self, pos: int, dtype: dt.DType, length: int, depth: int) -> Array:
        self._enter(depth)
        spec = self._node(pos)
        return self._make(spec, spec[3], dtype, length, depth)

    def _enter(self, depth: int) -> None:
        lim = self.limits
        if depth > lim.max_depth:
            raise LimitExceededError(f"array tree deeper than {lim.max_depth}")
        self.nodes += 1
        if self.nodes > lim.max_nodes:
            raise LimitExceededError(f"array tree has more than {lim.max_nodes} nodes")

    def _node(self, pos: int) -> tuple[Any, ...]:
        """The ArrayNode table at ``pos``: (encoding index, metadata start, metadata
        length, child table positions, buffer indices, stats table position), every
        position checked."""
        buf = self.buf
        size = self.size
        vt, k = vtable_at(buf, size, pos, "ArrayNode")
        if k >= 5:
            offs = _VT_FIELDS[5].unpack_from(buf, vt + 4)
        else:
            offs = _VT_FIELDS[k].unpack_from(buf, vt + 4) + _ABSENT[k:]
        o_enc, o_meta, o_kids, o_bufs, o_stats = offs
        ei = 0
        if o_enc:
            if pos + o_enc + 2 > size:
                raise _bad("field ArrayNode.ArrayNode.encoding")
            ei = _U16.unpack_from(buf, pos + o_enc)[0]
        ms = mn = 0
        if o_meta:
            ms, mn = vector_at(buf, size, pos + o_meta, 1, "ArrayNode.metadata")
        kids: list[int] | tuple[()] = ()
        if o_kids:
            s, n = vector_at(buf, size, pos + o_kids, 4, "ArrayNode.children")
            if n:
                # child tables by absolute position (each is checked when it is built)
                rel = (_U32N[n] if n < len(_U32N) else struct.Struct(f"<{n}I")).unpack_from(buf, s)
                kids = list(map(_add, range(s, s + 4 * n, 4), rel))
        bidx: tuple[int, ...] = ()
        if o_bufs:
            s, n = vector_at(buf, size, pos + o_bufs, 2, "ArrayNode.buffers")
            if n:
                # struct, not numpy: nodes name a handful of buffers and this runs once per node
                bidx = (_U16N[n] if n < len(_U16N) else struct.Struct(f"<{n}H")).unpack_from(buf, s)
        st = 0
        if o_stats:
            p = pos + o_stats
            if p + 4 > size:
                raise _bad("field ArrayNode.ArrayStats")
            st = p + _U32.unpack_from(buf, p)[0]
            if st + 4 > size or st == p:
                raise MalformedStreamError(
                    "flatbuffer field ArrayNode.ArrayStats points outside the header")
        return (ei, ms, mn, kids, bidx, st)

    def _make(self, spec: tuple[Any, ...], kids: Any, dtype: dt.DType, length: int,
              depth: int) -> Array:
        """The Array of a node ``_node`` read; ``kids`` are what ``ArrayParts.child``
        hands back to this builder for each child (their positions)."""
        ei, ms, mn, _, bidx, st = spec
        if ei >= len(self.encodings):
            raise MalformedStreamError(
                f"array node names encoding #{ei}; the message lists {len(self.encodings)}"
            )
        enc = self._encs[ei]
        enc_id = self.encodings[ei]
        if enc is None:
            enc = self._encs[ei] = get_encoding(enc_id)
        buf = self.buf
        meta = bytes(buf[ms : ms + mn]) if mn else b""
        bufs: list[np.ndarray] = []
        if bidx:
            if max(bidx) >= len(self.buffers):
                raise MalformedStreamError(
                    f"{enc_id} node names buffer #{max(bidx)}; the message has {len(self.buffers)}"
                )
            bufs = list(map(self.buffers.__getitem__, bidx))
        stats = _read_stats(buf, self.size, st) if st else None
        if length > sys.maxsize:  # (a child length off the wire: no buffer holds that many)
            raise MalformedStreamError(
                f"{enc_id}({dtype!r}, len={length}): a length past 2**63 - 1")
        lim = self.limits
        parts = ArrayParts(enc_id, meta, bufs, kids, self, stats, depth, lim)
        if depth == 0 and self.lazy and enc_id == "vortex.struct":
            parts.lazy = True
        try:
            arr = enc.build(parts, dtype, length)
            # lazy decoding (to_arrow() later) checks expansions against the same limits
            arr._cache.setdefault("limits", lim)
            return arr
        except VortexIPCError as e:
            if not getattr(e, "_pathed", False):
                e.reason = f"{enc_id}({dtype!r}, len={length}): {e.reason}"
                e._pathed = True  # type: ignore[attr-defined]
            raise


def check_message_rows(rows: int, limits: ReaderLimits) -> None:
    """An Array message's row count (off its header) against ``limits``."""
    if rows > limits.max_rows_per_message:
        raise LimitExceededError(
            f"array message of {rows} rows, over the limit of {limits.max_rows_per_message}")


def decode_array_body(body: np.ndarray, header: MessageHeader, dtype: dt.DType,
                      limits: ReaderLimits = DEFAULT_LIMITS, lazy: bool = False) -> Array:
    """Decode an Array message body into a lazily decoded encoding tree (``lazy``: the root
    struct's fields are built from the header on first use, see ``LazyChildren``)."""
    check_message_rows(header.row_count, limits)
    # the whole batch, before any node: rows x fixed width (a struct of many expanding
    # columns is bounded as a whole, not only column by column)
    from .._limits import decoded_width

    nbytes = header.row_count * decoded_width(dtype)
    if nbytes > limits.max_decoded_bytes:  # (the message is formatted only on failure)
        check_decoded_size(nbytes, f"array message of {header.row_count} rows of {dtype!r}",
                           limits)
    n = body.nbytes
    if n < 4:
        raise MalformedStreamError(f"array message body of {n} bytes has no flatbuffer length")
    mv = body.data
    fb_len = _U32.unpack_from(mv, n - 4)[0]
    if fb_len + 4 > n:
        raise MalformedStreamError(f"array flatbuffer of {fb_len} bytes does not fit a {n}-byte body")
    data_end = n - 4 - fb_len
    arr_t = root(mv[data_end : n - 4], "Array")  # the Array flatbuffer
    buffers: list[np.ndarray] = []
    v = arr_t.vector_raw(1, 8, "Array.buffers")
    if v is not None:
        start, nspecs = v
        if nspecs > limits.max_buffers:
            raise LimitExceededError(
                f"{nspecs} buffers in one message, over the limit of {limits.max_buffers}")
        pos = 0
        base = body.ctypes.data  # once: ndarray.ctypes costs ~1.5 us a call
        # struct Buffer { padding: u16; alignment_exponent: u8; compression: u8; length: u32 }
        for i, (padding, exp, compression, length) in enumerate(
                _BUFFER_SPEC.iter_unpack(arr_t.buf[start : start + 8 * nspecs])):
            if compression != 0:
                raise UnsupportedError(
                    f"buffer {i} uses compression {'LZ4' if compression == 1 else compression}; "
                    "only uncompressed buffers are supported"
                )
            if exp > MAX_ALIGNMENT_EXPONENT:
                raise MalformedStreamError(
                    f"buffer {i} has alignment exponent {exp} (at most 16 allowed)"
                )
            pos += padding
            end = pos + length
            if end > data_end:
                raise MalformedStreamError(
                    f"buffer {i} [{pos}, {end}) runs past the {data_end} bytes of buffer data"
                )
            b = body[pos:end]
            if exp and (base + pos) & ((1 << exp) - 1):
                b = _aligned(b, exp, base + pos)
            buffers.append(b)
            pos = end
    root_pos = arr_t._deref(0, "ArrayNode")
    if not root_pos:
        raise MalformedStreamError("array message has no root node")
    return _Builder(header.encodings, buffers, limits, arr_t.buf, lazy)(
        root_pos, dtype, header.row_count, 0)


# -- writing --------------------------------------------------------------------------------


def serialize_array(array: Array) -> tuple[list[str], list[tuple[np.ndarray, int]], FlatNode]:
    """Flatten a tree: (encoding table, [(buffer, alignment exponent)], root FlatNode).

    Encodings are listed in pre-order first use; buffers in pre-order (each node's own
    buffers, then each child subtree), as the reference writer does.
    """
    encodings: list[str] = []
    buffers: list[tuple[np.ndarray, int]] = []
    # (a module-level function, not a recursive closure: a closure that calls itself is a
    # reference cycle, which would keep every buffer until the cycle collector runs)
    root_node = _flatten(array, encodings, {}, buffers)
    if len(buffers) > 65_535:
        raise UnsupportedError(f"an array message holds at most 65535 buffers, not {len(buffers)}")
    return encodings, buffers, root_node


def _flatten(a: Array, encodings: list[str], enc_index: dict[str, int],
             buffers: list[tuple[np.ndarray, int]]) -> FlatNode:
    """``serialize_array``'s walk: ``a``'s node, its encoding and buffers appended."""
    ei = enc_index.get(a.encoding)
    if ei is None:
        ei = enc_index[a.encoding] = len(encodings)
        encodings.append(a.encoding)
    aligns = a.vtable.buffer_alignments(a)
    idx = []
    for b, al in zip(a.buffers, aligns):
        idx.append(len(buffers))
        buffers.append((np.asarray(b, dtype=np.uint8).reshape(-1), al))
    kids = [_flatten(c, encodings, enc_index, buffers) for c in a.children]
    return FlatNode(ei, a.metadata, idx, kids, a._stats)


def array_body_parts(array: Array) -> tuple[list[str], list[Any], int, int]:
    """(encodings, body parts, body size, max buffer alignment) for an Array message.

    Buffers are padded to their alignment relative to the body start; the framing layer
    places the body at an offset aligned to the largest of them.
    """
    encodings, buffers, root_node = serialize_array(array)
    parts, size, max_align = body_layout(buffers, root_node)
    return encodings, parts, size, max_align


def body_layout(buffers: list[tuple[np.ndarray, int]], root_node: FlatNode, base: int = 0
                ) -> tuple[list[Any], int, int]:
    """(body parts, body size, max buffer alignment) of an Array message body holding
    ``serialize_array``'s buffers: each padded (``Buffer.padding``) to its alignment
    relative to ``base``, the body's offset in the stream (0: the framing aligns the body).
    """
    parts: list[Any] = []
    specs = []
    pos = 0
    max_align = 1
    for b, exp in buffers:
        align = 1 << exp
        max_align = max(max_align, align)
        pad = (-(base + pos)) % align
        if b.nbytes >= 2**32:
            raise UnsupportedError(f"a buffer of {b.nbytes} bytes exceeds the format's 4 GiB limit")
        if pad:
            parts.append(bytes(pad))
        parts.append(b)
        specs.append((pad, exp, b.nbytes))
        pos += pad + b.nbytes
    fb = encode_array_fb(root_node, specs)
    parts.append(fb)
    parts.append(_U32.pack(len(fb)))
    return parts, pos + len(fb) + 4, max_align
