"""Structure-aware access to Vortex IPC streams, for building mutants.

``parse_stream`` splits a stream into messages and, for Array messages, decodes the
encoding tree into plain, mutable Python objects (``Node``) plus the byte positions of the
numeric fields a mutator may inflate in place (``Field``). ``ArrayMsg.encode`` writes a
(possibly mutated) tree back as a well-framed Array message, so mutants can be
structurally valid on the outside and wrong on the inside (metadata, buffers, children).

This module is test tooling: it trusts nothing it reads, but it only has to handle the
seed streams (valid input); mutants are never parsed with it.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from vortex_io._ipc.flatbuf import Table, root
from vortex_io._ipc.framing import MessageDecoder
from vortex_io._ipc.schema import (
    FlatNode,
    MessageType,
    encode_array_fb,
    encode_message_header,
    read_stats,
)
from vortex_io._metadata import Metadata
from vortex_io._stats import ArrayStats

__all__ = ["Field", "Node", "ArrayMsg", "RawMsg", "parse_stream", "proto_fields", "proto_encode",
           "rewrite_arrays"]

_U32 = struct.Struct("<I")


@dataclass(frozen=True)
class Field:
    """A little-endian unsigned integer at ``pos`` (absolute stream offset) of ``size`` bytes."""

    pos: int
    size: int
    what: str


@dataclass
class Node:
    """One node of an encoding tree, as on the wire."""

    encoding: str
    metadata: bytes
    buffers: list[int]  # indices into ArrayMsg.buffers
    children: list[Node]
    stats: ArrayStats | None = None

    def walk(self) -> list[Node]:
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


@dataclass
class ArrayMsg:
    """An Array message decoded into mutable parts."""

    row_count: int
    root: Node
    buffers: list[tuple[bytes, int]]  # (data, alignment exponent)
    metadata: Metadata = field(default_factory=Metadata)

    def encode(self) -> bytes:
        """Frame the tree as an Array message (encoding table rebuilt from the nodes)."""
        encodings: list[str] = []

        def flat(n: Node) -> FlatNode:
            if n.encoding not in encodings:
                encodings.append(n.encoding)
            return FlatNode(encodings.index(n.encoding), n.metadata, list(n.buffers),
                            [flat(c) for c in n.children], n.stats)

        root_node = flat(self.root)
        parts, specs, pos = [], [], 0
        for data, exp in self.buffers:
            pad = (-pos) % (1 << exp)
            parts.append(bytes(pad) + data)
            specs.append((pad, exp, len(data)))
            pos += pad + len(data)
        fb = encode_array_fb(root_node, specs)
        body = b"".join(parts) + fb + _U32.pack(len(fb))
        hdr = encode_message_header(MessageType.ARRAY, len(body), row_count=self.row_count,
                                    encodings=encodings, metadata=self.metadata)
        return _U32.pack(len(hdr)) + hdr + body


@dataclass
class RawMsg:
    """One framed message: its bytes, where they were, and what fields it has."""

    type: MessageType
    data: bytes
    offset: int
    fields: list[Field]
    array: ArrayMsg | None = None


def _node(t: Table, encodings: tuple[str, ...], base: int, fields: list[Field]) -> Node:
    p = t._field(0)
    if p:
        fields.append(Field(base + p, 2, "node.encoding"))
    enc = encodings[t.u16(0, 0)]
    meta_v = t.vector_raw(1, 1)
    meta = b""
    if meta_v is not None:
        s, n = meta_v
        meta = bytes(t.buf[s : s + n])
        for off, size in _varint_spans(meta):
            fields.append(Field(base + s + off, size, f"{enc}.metadata varint"))
    bufs: list[int] = []
    bv = t.vector_raw(3, 2)
    if bv is not None:
        s, n = bv
        bufs = list(struct.unpack_from(f"<{n}H", t.buf, s))
        fields.extend(Field(base + s + 2 * i, 2, "node.buffer index") for i in range(n))
    kids = [_node(k, encodings, base, fields) for k in t.tables(2, "ArrayNode")]
    return Node(enc, meta, bufs, kids, read_stats(t.table(4, "ArrayStats")))


def _varint_spans(meta: bytes) -> list[tuple[int, int]]:
    """(offset, size) of every varint *value* at the top level of a protobuf message that
    fits in a fixed-width in-place overwrite (1, 2, 4 or 8 bytes)."""
    out = []
    try:
        for _num, wt, _val, start, end in proto_fields(meta):
            if wt == 0 and end - start in (1, 2, 4, 8):
                out.append((start, end - start))
    except ValueError:
        pass
    return out


def proto_fields(data: bytes) -> list[tuple[int, int, int | bytes, int, int]]:
    """Top-level protobuf fields: (number, wire type, value, value start, value end)."""
    out = []
    pos, n = 0, len(data)

    def varint(p: int) -> tuple[int, int]:
        v, shift = 0, 0
        while True:
            if p >= n or shift > 63:
                raise ValueError("bad varint")
            b = data[p]
            v |= (b & 0x7F) << shift
            p += 1
            shift += 7
            if not b & 0x80:
                return v, p

    while pos < n:
        key, pos = varint(pos)
        num, wt = key >> 3, key & 7
        start = pos
        if wt == 0:
            val, pos = varint(pos)
        elif wt == 1:
            val, pos = data[pos : pos + 8], pos + 8
        elif wt == 5:
            val, pos = data[pos : pos + 4], pos + 4
        elif wt == 2:
            ln, pos = varint(pos)
            start = pos
            val, pos = data[pos : pos + ln], pos + ln
        else:
            raise ValueError("bad wire type")
        if pos > n:
            raise ValueError("field runs past the end")
        out.append((num, wt, val, start, pos))
    return out


def _vbytes(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def proto_encode(fields: list[tuple[int, int, int | bytes]]) -> bytes:
    """Encode (number, wire type, value) fields (values of any size: lengths are rewritten)."""
    out = bytearray()
    for num, wt, val in fields:
        out += _vbytes((num << 3) | wt)
        if wt == 0:
            out += _vbytes(int(val))  # type: ignore[arg-type]
        elif wt == 2:
            out += _vbytes(len(val)) + bytes(val)  # type: ignore[arg-type]
        else:
            out += bytes(val)  # type: ignore[arg-type]
    return bytes(out)


def parse_stream(stream: bytes) -> list[RawMsg]:
    """Split a valid stream into messages, with their mutable fields and decoded trees."""
    dec = MessageDecoder()
    dec.feed(stream)
    msgs = list(dec)
    dec.end_of_input()
    out = []
    for m in msgs:
        data = bytes(stream[m.offset : m.offset + m.size])
        fields = [Field(m.offset, 4, "header length")]
        hbase = m.offset + 4
        ht = root(memoryview(data[4 : 4 + m.header_size]), "Message")
        p = ht._field(3)
        if p:
            fields.append(Field(hbase + p, 8, "body_size"))
        arr = None
        if m.type == MessageType.ARRAY:
            h = ht.table(2, "MessageHeader")
            assert h is not None
            p = h._field(0)
            if p:
                fields.append(Field(hbase + p, 4, "row_count"))
            body = bytes(m.body)
            bbase = m.offset + 4 + m.header_size
            n = len(body)
            fb_len = _U32.unpack_from(body, n - 4)[0]
            data_end = n - 4 - fb_len
            fields.append(Field(bbase + n - 4, 4, "array flatbuffer length"))
            at = root(memoryview(body[data_end : n - 4]), "Array")
            fbase = bbase + data_end
            bufs: list[tuple[bytes, int]] = []
            v = at.vector_raw(1, 8)
            if v is not None:
                s, k = v
                pos = 0
                for i in range(k):
                    pad, exp, _c, ln = struct.unpack_from("<HBBI", at.buf, s + 8 * i)
                    fields.append(Field(fbase + s + 8 * i, 2, "buffer padding"))
                    fields.append(Field(fbase + s + 8 * i + 2, 1, "buffer alignment"))
                    fields.append(Field(fbase + s + 8 * i + 3, 1, "buffer compression"))
                    fields.append(Field(fbase + s + 8 * i + 4, 4, "buffer length"))
                    pos += pad
                    bufs.append((body[pos : pos + ln], exp))
                    pos += ln
            rt = at.table(0, "ArrayNode")
            assert rt is not None
            tree = _node(rt, m.header.encodings, fbase, fields)
            arr = ArrayMsg(m.header.row_count, tree, bufs, m.header.custom_metadata)
        out.append(RawMsg(m.type, data, m.offset, fields, arr))
    return out


def rewrite_arrays(stream: bytes, change: Callable[[ArrayMsg], None]) -> bytes:
    """``stream`` with ``change`` applied to (a copy of) each Array message, re-framed; the
    other messages as they were."""
    out = []
    for m in parse_stream(stream):
        if m.array is None:
            out.append(m.data)
            continue
        am = copy.deepcopy(m.array)
        change(am)
        out.append(am.encode())
    return b"".join(out)
