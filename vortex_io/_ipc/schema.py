"""FlatBuffers codecs for the three Vortex IPC schemas (``vortex_io/fbs/*.fbs``):
``DType`` (dtype.fbs), ``Message`` (message.fbs, with the custom-metadata extension) and
``Array`` (array.fbs).

Reading goes through the bounds-checked ``flatbuf.Table``; writing through
``flatbuffers.Builder``.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import flatbuffers

from .. import _native_glue as _ng
from .. import dtype as dt
from .._errors import LimitExceededError, MalformedStreamError, UnsupportedError
from .._limits import DEFAULT_LIMITS, ReaderLimits
from .._metadata import Metadata
from .._stats import ArrayStats
from ..integrity import CRC_KEY
from .flatbuf import Table, root, vtable_at

__all__ = [
    "MessageType",
    "MessageHeader",
    "encode_dtype",
    "decode_dtype",
    "encode_message_header",
    "decode_message_header",
    "encode_array_fb",
    "BufferSpec",
    "decode_buffer_specs",
]


class MessageType(IntEnum):
    ARRAY = 1
    BUFFER = 2
    DTYPE = 3


# -- DType ------------------------------------------------------------------------------

_TAG = {
    dt.Null: 1, dt.Bool: 2, dt.Primitive: 3, dt.Decimal: 4, dt.Utf8: 5, dt.Binary: 6,
    dt.Struct: 7, dt.List: 8, dt.Extension: 9, dt.FixedSizeList: 10,
}


def _build_dtype(b: flatbuffers.Builder, d: dt.DType) -> int:
    tag = _TAG.get(type(d))
    if tag is None:
        raise UnsupportedError(f"cannot serialize dtype {d!r}")
    if isinstance(d, dt.Null):
        b.StartObject(0)
    elif isinstance(d, (dt.Bool, dt.Utf8, dt.Binary)):
        b.StartObject(1)
        b.PrependBoolSlot(0, d.nullable, False)
    elif isinstance(d, dt.Primitive):
        b.StartObject(2)
        b.PrependUint8Slot(0, int(d.ptype), 0)
        b.PrependBoolSlot(1, d.nullable, False)
    elif isinstance(d, dt.Decimal):
        b.StartObject(3)
        b.PrependUint8Slot(0, d.precision, 0)
        b.PrependInt8Slot(1, d.scale, 0)
        b.PrependBoolSlot(2, d.nullable, False)
    elif isinstance(d, dt.Struct):
        names = [b.CreateString(n) for n in d.names]
        kids = [_build_dtype(b, c) for c in d.dtypes]
        nv = _offset_vector(b, names)
        dv = _offset_vector(b, kids)
        b.StartObject(3)
        b.PrependUOffsetTRelativeSlot(0, nv, 0)
        b.PrependUOffsetTRelativeSlot(1, dv, 0)
        b.PrependBoolSlot(2, d.nullable, False)
    elif isinstance(d, dt.List):
        e = _build_dtype(b, d.element)
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(0, e, 0)
        b.PrependBoolSlot(1, d.nullable, False)
    elif isinstance(d, dt.FixedSizeList):
        e = _build_dtype(b, d.element)
        b.StartObject(3)
        b.PrependUOffsetTRelativeSlot(0, e, 0)
        b.PrependUint32Slot(1, d.size, 0)
        b.PrependBoolSlot(2, d.nullable, False)
    elif isinstance(d, dt.Extension):
        i = b.CreateString(d.id)
        s = _build_dtype(b, d.storage)
        m = b.CreateByteVector(d.metadata) if d.metadata else None
        b.StartObject(3)
        b.PrependUOffsetTRelativeSlot(0, i, 0)
        b.PrependUOffsetTRelativeSlot(1, s, 0)
        if m is not None:
            b.PrependUOffsetTRelativeSlot(2, m, 0)
    inner = b.EndObject()
    b.StartObject(2)
    b.PrependUint8Slot(0, tag, 0)
    b.PrependUOffsetTRelativeSlot(1, inner, 0)
    return b.EndObject()


def _offset_vector(b: flatbuffers.Builder, offsets: Sequence[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


@functools.lru_cache(maxsize=256)
def encode_dtype(d: dt.DType) -> bytes:
    """A DType flatbuffer (the body of a DType message). Remembered per dtype (both are
    immutable): a stream per request with one schema builds it once."""
    b = flatbuffers.Builder(128)
    b.Finish(_build_dtype(b, d))
    return bytes(b.Output())


#: DType flatbuffers up to this size (a few hundred columns) are parsed once per process
#: (dtypes are immutable): a service reading a stream per request with the same schema parses
#: it once, not per stream. At most 4 MiB are kept.
_DTYPE_CACHE_BYTES = 1 << 15


def decode_dtype(buf, limits: ReaderLimits | None = None) -> dt.DType:
    """Parse a DType flatbuffer; raises ``MalformedStreamError``/``UnsupportedError``."""
    max_depth = (limits or DEFAULT_LIMITS).max_depth
    if len(buf) <= _DTYPE_CACHE_BYTES:
        return _decode_dtype_cached(bytes(buf), max_depth)
    return _read_dtype(root(buf, "DType"), 0, max_depth)


@functools.lru_cache(maxsize=128)
def _decode_dtype_cached(data: bytes, max_depth: int) -> dt.DType:
    """``decode_dtype`` of small flatbuffers, remembered (errors are raised every time)."""
    return _read_dtype(root(data, "DType"), 0, max_depth)


def _read_dtype(t: Table, depth: int, max_depth: int) -> dt.DType:
    if depth > max_depth:
        raise LimitExceededError(f"DType nesting deeper than {max_depth}")
    tag = t.u8(0, 0, "type_type")
    inner = t.table(1, "DType.type")
    if tag == 1:
        return dt.Null()
    if inner is None:
        raise MalformedStreamError(f"DType with tag {tag} has no type table")
    if tag == 2:
        return dt.Bool(inner.boolean(0, what="nullable"))
    if tag == 3:
        p = inner.u8(0, 0, "ptype")
        if p > 10:
            raise MalformedStreamError(f"DType primitive has unknown ptype {p}")
        return dt.Primitive(dt.PType(p), inner.boolean(1, what="nullable"))
    if tag == 4:
        prec, scale = inner.u8(0, 0, "precision"), inner.i8(1, 0, "scale")
        try:
            return dt.Decimal(prec, scale, inner.boolean(2, what="nullable"))
        except ValueError as e:
            raise MalformedStreamError(f"DType decimal: {e}") from None
    if tag == 5:
        return dt.Utf8(inner.boolean(0, what="nullable"))
    if tag == 6:
        return dt.Binary(inner.boolean(0, what="nullable"))
    if tag == 7:
        names = inner.strings(0, "Struct_.names")
        kids = inner.tables(1, "DType")
        if len(names) != len(kids):
            raise MalformedStreamError(f"DType struct has {len(names)} names for {len(kids)} dtypes")
        return dt.Struct(names, [_read_dtype(k, depth + 1, max_depth) for k in kids],
                         inner.boolean(2, what="nullable"))
    if tag in (8, 10):
        et = inner.table(0, "DType")
        if et is None:
            raise MalformedStreamError("DType list has no element type")
        el = _read_dtype(et, depth + 1, max_depth)
        if tag == 8:
            return dt.List(el, inner.boolean(1, what="nullable"))
        return dt.FixedSizeList(el, inner.u32(1, 0, "size"), inner.boolean(2, what="nullable"))
    if tag == 9:
        ext_id = inner.string(0, "Extension.id")
        s = inner.table(1, "DType")
        if not ext_id or s is None:
            raise MalformedStreamError("DType extension needs an id and a storage dtype")
        storage = _read_dtype(s, depth + 1, max_depth)
        ext = dt.Extension(ext_id, storage, inner.bytes_(2, "Extension.metadata") or b"")
        if ext.is_temporal:
            _check_temporal(ext)
        return ext
    if tag in (11, 12):
        raise UnsupportedError(f"DType {'Variant' if tag == 11 else 'Union'} is not supported")
    raise MalformedStreamError(f"DType has unknown type tag {tag}")


def _check_temporal(ext: dt.Extension) -> None:
    if not ext.metadata:
        raise MalformedStreamError(f"{ext.id} extension without metadata")
    unit = ext.unit  # validates the unit byte
    _ = ext.tz  # validates the time-zone framing
    s = ext.storage
    p = s.ptype if isinstance(s, dt.Primitive) else None  # None: not a primitive, never ok
    ok = p in (dt.PType.I32, dt.PType.I64)
    if ext.id == dt.TIMESTAMP_ID:
        ok = ok and p == dt.PType.I64 and unit != dt.TimeUnit.D
    elif ext.id == dt.DATE_ID:
        ok = ok and ((unit == dt.TimeUnit.D and p == dt.PType.I32)
                     or (unit == dt.TimeUnit.MS and p == dt.PType.I64))
    else:
        ok = ok and ((unit in (dt.TimeUnit.S, dt.TimeUnit.MS) and p == dt.PType.I32)
                     or (unit in (dt.TimeUnit.US, dt.TimeUnit.NS) and p == dt.PType.I64))
        if ext.metadata and len(ext.metadata) != 1:
            ok = False
    if not ok:
        raise MalformedStreamError(f"{ext.id} with unit {unit.name} cannot be stored as {s!r}")


# -- Message ---------------------------------------------------------------------------


_EMPTY_METADATA = Metadata()


@dataclass(frozen=True)
class MessageHeader:
    """The decoded ``Message`` flatbuffer."""

    version: int
    type: MessageType
    body_size: int
    row_count: int = 0
    encodings: tuple[str, ...] = ()
    alignment_exponent: int = 0
    custom_metadata: Metadata = _EMPTY_METADATA


def encode_message_header(
    mtype: MessageType,
    body_size: int,
    *,
    row_count: int = 0,
    encodings: Sequence[str] = (),
    alignment_exponent: int = 0,
    metadata: Metadata | None = None,
    record: bytes | None = None,
) -> bytes:
    """A ``Message`` flatbuffer. ``record``: the value of an integrity record
    (``vortex_io.integrity``), added as the last metadata pair and placed as the
    flatbuffer's last bytes (it is built first: builders fill the buffer back to front).
    The native core's twin (``_native.message_fb``: the same bytes) builds it when the core
    is on; ``encode_message_header_py`` is the reference."""
    if _ng.enabled():
        out: bytes = _ng.native().message_fb(int(mtype), body_size, row_count, encodings,
                                             alignment_exponent,
                                             list(metadata.items()) if metadata else None,
                                             record, CRC_KEY)
        if record is not None and not out.endswith(record):  # pragma: no cover - a builder change
            raise RuntimeError("the native builder did not place the integrity record last")
        return out
    return encode_message_header_py(mtype, body_size, row_count=row_count, encodings=encodings,
                                    alignment_exponent=alignment_exponent, metadata=metadata,
                                    record=record)


def encode_message_header_py(mtype: MessageType, body_size: int, *, row_count: int = 0,
                             encodings: Sequence[str] = (), alignment_exponent: int = 0,
                             metadata: Metadata | None = None, record: bytes | None = None
                             ) -> bytes:
    """``encode_message_header`` in Python (the reference of the native builder)."""
    b = flatbuffers.Builder(256)
    rec = b.CreateByteVector(record) if record is not None else None
    kv_vec = None
    if metadata or rec is not None:
        kvs = []
        for k, v in (metadata.items() if metadata else ()):
            ko = b.CreateString(k)
            vo = b.CreateByteVector(v)
            b.StartObject(2)
            b.PrependUOffsetTRelativeSlot(0, ko, 0)
            b.PrependUOffsetTRelativeSlot(1, vo, 0)
            kvs.append(b.EndObject())
        if rec is not None:
            ko = b.CreateString(CRC_KEY)
            b.StartObject(2)
            b.PrependUOffsetTRelativeSlot(0, ko, 0)
            b.PrependUOffsetTRelativeSlot(1, rec, 0)
            kvs.append(b.EndObject())
        kv_vec = _offset_vector(b, kvs)
    if mtype == MessageType.ARRAY:
        encs = [b.CreateString(e) for e in encodings]
        ev = _offset_vector(b, encs)
        b.StartObject(2)
        b.PrependUint32Slot(0, row_count, 0)
        b.PrependUOffsetTRelativeSlot(1, ev, 0)
    elif mtype == MessageType.BUFFER:
        b.StartObject(1)
        b.PrependUint8Slot(0, alignment_exponent, 0)
    else:
        b.StartObject(0)
    hdr = b.EndObject()
    b.StartObject(5 if kv_vec is not None else 4)
    b.PrependUint64(body_size)
    b.Slot(3)
    if kv_vec is not None:
        b.PrependUOffsetTRelativeSlot(4, kv_vec, 0)
    b.PrependUOffsetTRelativeSlot(2, hdr, 0)
    b.PrependUint8Slot(1, int(mtype), 0)
    b.PrependUint8Slot(0, 0, 0)
    b.Finish(b.EndObject())
    out = bytes(b.Output())
    if record is not None and not out.endswith(record):  # pragma: no cover - a builder change
        raise RuntimeError("the flatbuffers builder did not place the integrity record last")
    return out


def vector_at(buf: memoryview, size: int, p: int, elem: int, what: str) -> tuple[int, int]:
    """(start, count) of the vector of ``elem``-byte elements whose offset field is at
    absolute position ``p`` (``size``: ``len(buf)``; ``what``: ``Table.field``), every
    position checked: what ``Table`` reads through objects, for readers that want none."""
    if p + 4 > size:
        raise MalformedStreamError(f"flatbuffer field {what} is outside the header")
    t = p + _U32.unpack_from(buf, p)[0]
    if t + 4 > size or t == p:
        raise MalformedStreamError(f"flatbuffer field {what} points outside the header")
    n = _U32.unpack_from(buf, t)[0]
    if t + 4 + n * elem > size:
        raise MalformedStreamError(f"flatbuffer vector {what} of {n} elements runs past the header")
    return t + 4, n


_KV_SLOTS = struct.Struct("<HH")


def _kv_field(buf: memoryview, size: int, e: int, off: int, what: str) -> bytes:
    """The byte vector of a KeyValue field at table position ``e`` + vtable offset ``off``."""
    if not off:
        return b""
    q, k = vector_at(buf, size, e + off, 1, what)
    return bytes(buf[q : q + k])


def _key_values(t: Table) -> Metadata:
    """``Message.custom_metadata`` (slot 4): the KeyValue tables read straight off the
    buffer (every position checked; what ``Table.tables`` and ``bytes_`` do, without an
    object per table: each message of an integrity stream has at least one pair)."""
    v = t.vector_raw(4, 4, "custom_metadata")
    if v is None or not v[1]:
        return _EMPTY_METADATA
    start, n = v
    buf = t.buf
    size = len(buf)
    pairs = []
    for p in range(start, start + 4 * n, 4):
        e = p + _U32.unpack_from(buf, p)[0]
        vt, slots = vtable_at(buf, size, e, "KeyValue")
        if slots >= 2:
            ko, vo = _KV_SLOTS.unpack_from(buf, vt + 4)
        else:
            ko, vo = (_U16.unpack_from(buf, vt + 4)[0] if slots else 0), 0
        pairs.append((_kv_field(buf, size, e, ko, "KeyValue.key"),
                      _kv_field(buf, size, e, vo, "KeyValue.value")))
    return Metadata._of_pairs(tuple(pairs))


def decode_message_header(buf) -> MessageHeader:
    """The ``Message`` flatbuffer of one header (every read bounds-checked; a bad header is
    a ``MalformedStreamError``, an unknown version an ``UnsupportedError``). The native
    core's twin (``_native.message_header``: the same checks, order and messages) reads it
    when the core is on; this function is the reference."""
    if _ng.enabled():
        r = _ng.native().message_header(buf)
        if r[0] == "err":
            raise _ng.error_of(r[1], r[2])
        version, tag, body_size, rows, encodings, align, kv = r
        return MessageHeader(version, MessageType(tag), body_size, row_count=rows,
                             encodings=_interned(encodings), alignment_exponent=align,
                             custom_metadata=Metadata._of_pairs(tuple(kv)) if kv else _EMPTY_METADATA)
    return decode_message_header_py(buf)


#: the encodings tuples seen (most streams repeat one per column shape): equal tuples become
#: the same object, so caches keyed by them hash and compare them cheaply
_ENCODINGS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _interned(encodings: tuple[str, ...]) -> tuple[str, ...]:
    hit = _ENCODINGS.get(encodings)
    if hit is None:
        if len(_ENCODINGS) >= 4096:
            _ENCODINGS.clear()
        hit = _ENCODINGS[encodings] = encodings
    return hit


def decode_message_header_py(buf) -> MessageHeader:
    """``decode_message_header`` in Python (the reference of the native reader)."""
    t = root(buf, "Message")
    version = t.u8(0, 0, "version")
    if version != 0:
        raise UnsupportedError(f"unsupported message version V{version} (only V0 is supported)")
    tag = t.u8(1, 0, "header_type")
    try:
        mtype = MessageType(tag)
    except ValueError:
        raise MalformedStreamError(f"unknown message header type {tag}") from None
    body_size = t.u64(3, 0, "body_size")
    md = _key_values(t)
    h = t.table(2, "MessageHeader")
    if h is None and mtype != MessageType.DTYPE:
        raise MalformedStreamError(f"{mtype.name} message has no header table")
    if mtype == MessageType.ARRAY:
        assert h is not None
        return MessageHeader(version, mtype, body_size, row_count=h.u32(0, 0, "row_count"),
                             encodings=tuple(h.strings(1, "ArrayMessage.encodings")),
                             custom_metadata=md)
    if mtype == MessageType.BUFFER:
        assert h is not None
        return MessageHeader(version, mtype, body_size,
                             alignment_exponent=h.u8(0, 0, "alignment_exponent"), custom_metadata=md)
    return MessageHeader(version, mtype, body_size, custom_metadata=md)


# -- Array -------------------------------------------------------------------------------


_BUFFER_SPEC = struct.Struct("<HBBI")


@dataclass(frozen=True)
class BufferSpec:
    padding: int
    alignment_exponent: int
    compression: int
    length: int


def decode_buffer_specs(arr_t: Table, limits: ReaderLimits) -> list[BufferSpec]:
    v = arr_t.vector_raw(1, 8, "Array.buffers")
    if v is None:
        return []
    start, n = v
    if n > limits.max_buffers:
        raise LimitExceededError(f"{n} buffers in one message, over the limit of {limits.max_buffers}")
    # struct Buffer { padding: u16; alignment_exponent: u8; compression: u8; length: u32 }
    # (struct.iter_unpack: ~10x faster than numpy record access for a handful of buffers)
    return [BufferSpec(*r) for r in _BUFFER_SPEC.iter_unpack(arr_t.buf[start : start + 8 * n])]


def read_stats(t: Table | None) -> ArrayStats | None:
    if t is None:
        return None
    return ArrayStats(
        min=t.bytes_(0, "ArrayStats.min"),
        min_exact=t.u8(1, 0, "min_precision") == 1,
        max=t.bytes_(2, "ArrayStats.max"),
        max_exact=t.u8(3, 0, "max_precision") == 1,
        sum=t.bytes_(4, "ArrayStats.sum"),
        is_sorted=t.opt_bool(5, "is_sorted"),
        is_strict_sorted=t.opt_bool(6, "is_strict_sorted"),
        is_constant=t.opt_bool(7, "is_constant"),
        null_count=t.opt_u64(8, "null_count"),
        uncompressed_size_in_bytes=t.opt_u64(9, "uncompressed_size_in_bytes"),
        nan_count=t.opt_u64(10, "nan_count"),
    )


def _write_stats(b: flatbuffers.Builder, s: ArrayStats) -> int | None:
    if not s:
        return None
    mn = b.CreateByteVector(s.min) if s.min else None
    mx = b.CreateByteVector(s.max) if s.max else None
    sm = b.CreateByteVector(s.sum) if s.sum else None
    b.StartObject(11)
    for slot, v in ((8, s.null_count), (9, s.uncompressed_size_in_bytes), (10, s.nan_count)):
        if v is not None:
            b.PrependUint64(v)
            b.Slot(slot)
    if mn is not None:
        b.PrependUOffsetTRelativeSlot(0, mn, 0)
    if mx is not None:
        b.PrependUOffsetTRelativeSlot(2, mx, 0)
    if sm is not None:
        b.PrependUOffsetTRelativeSlot(4, sm, 0)
    for slot, v in ((5, s.is_sorted), (6, s.is_strict_sorted), (7, s.is_constant)):
        if v is not None:
            b.PrependBool(v)
            b.Slot(slot)
    if mn is not None:
        b.PrependUint8Slot(1, int(s.min_exact), 0)
    if mx is not None:
        b.PrependUint8Slot(3, int(s.max_exact), 0)
    return b.EndObject()


@dataclass
class FlatNode:
    """A node prepared for writing: indices into the message's encoding and buffer tables."""

    encoding: int
    metadata: bytes
    buffers: list[int]
    children: list[FlatNode]
    stats: ArrayStats | None


def encode_array_fb(root_node: FlatNode, buffers: Sequence[tuple[int, int, int]]) -> bytes:
    """An Array flatbuffer. ``buffers`` are (padding, alignment_exponent, length). The native
    core's twin (``_native.array_fb``: the same bytes) builds it when the core is on;
    ``encode_array_fb_py`` is the reference."""
    if _ng.enabled():
        return _ng.native().array_fb(root_node, buffers)
    return encode_array_fb_py(root_node, buffers)


def _fb_node(b: flatbuffers.Builder, n: FlatNode) -> int:
    """``encode_array_fb_py``'s walk: the ArrayNode table of ``n`` and its children."""
    kids = [_fb_node(b, c) for c in n.children]
    kv = _offset_vector(b, kids)
    meta = b.CreateByteVector(n.metadata)
    b.StartVector(2, len(n.buffers), 2)
    for i in reversed(n.buffers):
        b.PrependUint16(i)
    bv = b.EndVector()
    st = _write_stats(b, n.stats) if n.stats is not None else None
    b.StartObject(5)
    if st is not None:
        b.PrependUOffsetTRelativeSlot(4, st, 0)
    b.PrependUOffsetTRelativeSlot(3, bv, 0)
    b.PrependUOffsetTRelativeSlot(2, kv, 0)
    b.PrependUOffsetTRelativeSlot(1, meta, 0)
    b.PrependUint16Slot(0, n.encoding, 0)
    return b.EndObject()


def encode_array_fb_py(root_node: FlatNode, buffers: Sequence[tuple[int, int, int]]) -> bytes:
    """``encode_array_fb`` in Python (the reference of the native builder)."""
    b = flatbuffers.Builder(1024)

    # (a module-level function, not a recursive closure: that would be a reference cycle)
    r = _fb_node(b, root_node)
    b.StartVector(8, len(buffers), 4)
    for padding, align, length in reversed(buffers):
        b.Prep(4, 8)
        b.PrependUint32(length)
        b.PrependUint8(0)
        b.PrependUint8(align)
        b.PrependUint16(padding)
    bufv = b.EndVector()
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(1, bufv, 0)
    b.PrependUOffsetTRelativeSlot(0, r, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")
