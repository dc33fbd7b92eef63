"""Messages: the decoded frames of a stream, and the array body codec.

An Array message body is ``[buffers][Array flatbuffer][u32 flatbuffer length]``. Decoding
builds the encoding tree with buffers that are views into the body (copied only when
misaligned); nothing is decompressed here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import dtype as dt
from ..array import Array, ArrayParts, check_decoded_size, get_encoding
from ..errors import LimitExceededError, MalformedStreamError, UnsupportedError, VortexIPCError
from ..limits import DEFAULT_LIMITS, ReaderLimits
from ..metadata import Metadata
from .flatbuf import Table, root
from .schema import (
    FlatNode,
    MessageHeader,
    MessageType,
    decode_buffer_specs,
    decode_dtype,
    encode_array_fb,
    read_stats,
)

__all__ = ["Message", "decode_array_body", "serialize_array", "aligned_empty"]

_U32 = struct.Struct("<I")
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

    @property
    def type(self) -> MessageType:
        return self.header.type

    @property
    def metadata(self) -> Metadata:
        return self.header.custom_metadata

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
            return decode_dtype(memoryview(self.body), limits)
        except VortexIPCError as e:
            raise e.locate(message_index=self.index, offset=self.offset) from None

    def array(self, dtype: dt.DType, limits: ReaderLimits = DEFAULT_LIMITS) -> Array:
        """The array carried by an Array message, decoded against the stream's dtype."""
        if self.type != MessageType.ARRAY:
            raise MalformedStreamError(f"expected an Array message, got {self.type.name}",
                                       message_index=self.index, offset=self.offset)
        return _located(self, dtype, limits)


def _located(msg: Message, dtype: dt.DType, limits: ReaderLimits) -> Array:
    try:
        return decode_array_body(msg.body, msg.header, dtype, limits)
    except VortexIPCError as e:
        raise e.locate(message_index=msg.index, offset=msg.offset) from None
    except (IndexError, KeyError, struct.error, OverflowError, TypeError, ValueError,
            MemoryError, ZeroDivisionError) as e:
        raise MalformedStreamError(f"array message is inconsistent: {type(e).__name__}: {e}",
                                   message_index=msg.index, offset=msg.offset) from e


def aligned_empty(nbytes: int, alignment: int = 64) -> np.ndarray:
    """An uninitialized uint8 array whose data address is a multiple of ``alignment``."""
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
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


class _Builder:
    """Builds the Array tree of one message, enforcing depth and node limits."""

    def __init__(self, encodings: tuple[str, ...], buffers: list[np.ndarray], limits: ReaderLimits):
        self.encodings = encodings
        self.buffers = buffers
        self.limits = limits
        self.nodes = 0

    def __call__(self, node: Table, dtype: dt.DType, length: int, depth: int) -> Array:
        lim = self.limits
        if depth > lim.max_depth:
            raise LimitExceededError(f"array tree deeper than {lim.max_depth}")
        self.nodes += 1
        if self.nodes > lim.max_nodes:
            raise LimitExceededError(f"array tree has more than {lim.max_nodes} nodes")
        ei = node.u16(0, 0, "ArrayNode.encoding")
        if ei >= len(self.encodings):
            raise MalformedStreamError(
                f"array node names encoding #{ei}; the message lists {len(self.encodings)}"
            )
        enc_id = self.encodings[ei]
        enc = get_encoding(enc_id)
        meta = node.bytes_(1, "ArrayNode.metadata") or b""
        bidx = node.vector_raw(3, 2, "ArrayNode.buffers")
        bufs: list[np.ndarray] = []
        if bidx is not None:
            start, n = bidx
            # struct, not numpy: nodes name a handful of buffers and this runs once per node
            idx = struct.unpack_from(f"<{n}H", node.buf, start) if n else ()
            if n and max(idx) >= len(self.buffers):
                raise MalformedStreamError(
                    f"{enc_id} node names buffer #{max(idx)}; the message has {len(self.buffers)}"
                )
            bufs = [self.buffers[i] for i in idx]
        kids = node.tables(2, "ArrayNode")
        parts = ArrayParts(enc_id, meta, bufs, kids, self, read_stats(node.table(4, "ArrayStats")),
                           depth)
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


def decode_array_body(body: np.ndarray, header: MessageHeader, dtype: dt.DType,
                      limits: ReaderLimits = DEFAULT_LIMITS) -> Array:
    """Decode an Array message body into a lazily decoded encoding tree."""
    if header.row_count > limits.max_rows_per_message:
        raise LimitExceededError(
            f"array message of {header.row_count} rows, over the limit of {limits.max_rows_per_message}"
        )
    # the whole batch, before any node: rows x fixed width (a struct of many expanding
    # columns is bounded as a whole, not only column by column)
    from ..encodings.constant import _estimate_width

    check_decoded_size(header.row_count * _estimate_width(dtype),
                       f"array message of {header.row_count} rows of {dtype!r}", limits)
    n = body.nbytes
    if n < 4:
        raise MalformedStreamError(f"array message body of {n} bytes has no flatbuffer length")
    fb_len = _U32.unpack_from(body, n - 4)[0]
    if fb_len + 4 > n:
        raise MalformedStreamError(f"array flatbuffer of {fb_len} bytes does not fit a {n}-byte body")
    data_end = n - 4 - fb_len
    arr_t = root(memoryview(body[data_end : n - 4]), "Array")
    specs = decode_buffer_specs(arr_t, limits)
    buffers: list[np.ndarray] = []
    pos = 0
    base = body.ctypes.data if specs else 0  # once: ndarray.ctypes costs ~1.5 us a call
    for i, s in enumerate(specs):
        if s.compression != 0:
            raise UnsupportedError(
                f"buffer {i} uses compression {'LZ4' if s.compression == 1 else s.compression}; "
                "only uncompressed buffers are supported"
            )
        if s.alignment_exponent > MAX_ALIGNMENT_EXPONENT:
            raise MalformedStreamError(
                f"buffer {i} has alignment exponent {s.alignment_exponent} (at most 16 allowed)"
            )
        pos += s.padding
        if pos + s.length > data_end:
            raise MalformedStreamError(
                f"buffer {i} [{pos}, {pos + s.length}) runs past the {data_end} bytes of buffer data"
            )
        buffers.append(_aligned(body[pos : pos + s.length], s.alignment_exponent, base + pos))
        pos += s.length
    root_node = arr_t.table(0, "ArrayNode")
    if root_node is None:
        raise MalformedStreamError("array message has no root node")
    builder = _Builder(header.encodings, buffers, limits)
    return builder(root_node, dtype, header.row_count, 0)


# -- writing --------------------------------------------------------------------------------


def serialize_array(array: Array) -> tuple[list[str], list[tuple[np.ndarray, int]], FlatNode]:
    """Flatten a tree: (encoding table, [(buffer, alignment exponent)], root FlatNode).

    Encodings are listed in pre-order first use; buffers in pre-order (each node's own
    buffers, then each child subtree), as the reference writer does.
    """
    encodings: list[str] = []
    enc_index: dict[str, int] = {}
    buffers: list[tuple[np.ndarray, int]] = []

    def visit(a: Array) -> FlatNode:
        ei = enc_index.get(a.encoding)
        if ei is None:
            ei = enc_index[a.encoding] = len(encodings)
            encodings.append(a.encoding)
        aligns = a.vtable.buffer_alignments(a)
        idx = []
        for b, al in zip(a.buffers, aligns):
            idx.append(len(buffers))
            buffers.append((np.asarray(b, dtype=np.uint8).reshape(-1), al))
        kids = [visit(c) for c in a.children]
        return FlatNode(ei, a.metadata, idx, kids, a._stats)

    root_node = visit(array)
    if len(buffers) > 65_535:
        raise UnsupportedError(f"an array message holds at most 65535 buffers, not {len(buffers)}")
    return encodings, buffers, root_node


def array_body_parts(array: Array) -> tuple[list[str], list[Any], int, int]:
    """(encodings, body parts, body size, max buffer alignment) for an Array message.

    Buffers are padded to their alignment relative to the body start; the framing layer
    places the body at an offset aligned to the largest of them.
    """
    encodings, buffers, root_node = serialize_array(array)
    parts: list[Any] = []
    specs = []
    pos = 0
    max_align = 1
    for b, exp in buffers:
        align = 1 << exp
        max_align = max(max_align, align)
        pad = (-pos) % align
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
    return encodings, parts, pos + len(fb) + 4, max_align
