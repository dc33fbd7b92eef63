"""The Arrow bridge: Vortex dtypes <-> Arrow types, and Arrow data -> Vortex arrays.

Conversions are zero-copy wherever the layouts agree (primitive values, validity bitmaps,
string offsets and data, views). The Vortex -> Arrow direction lives on each canonical
encoding (``Array.to_arrow``); this module holds the type mapping and ``from_arrow``.

Arrow -> Vortex, by Arrow type: ``string``/``large_string`` -> ``vortex.varbin``,
``string_view`` -> ``vortex.varbinview``, ``list``/``large_list`` -> ``vortex.list``,
``list_view`` -> ``vortex.listview``, ``fixed_size_list``, ``struct``, ``decimal*``,
temporal types -> ``vortex.ext`` over integer storage, ``dictionary`` -> decoded values.

Vortex -> Arrow, by dtype (the same for every chunk, so streams have one schema):
Utf8 -> ``string``, Binary -> ``binary``, List -> ``list``, Decimal -> ``decimal128``
(``decimal256`` above precision 38), timestamps/dates/times -> their Arrow types; other
extensions -> their storage type.

>>> import pyarrow as pa
>>> from vortex_io._arrow import from_arrow
>>> a = from_arrow(pa.array(["a", None, "ccc"]))
>>> a.encoding, a.dtype
('vortex.varbin', utf8?)
>>> a.to_arrow().to_pylist()
['a', None, 'ccc']
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from . import dtype as dt
from ._array import Array
from ._errors import UnsupportedError

__all__ = ["dtype_to_arrow", "dtype_from_arrow", "from_arrow", "to_arrow_schema",
           "map_arrow_type", "with_views"]

_PRIM_TO_ARROW = {
    dt.PType.U8: pa.uint8(),
    dt.PType.U16: pa.uint16(),
    dt.PType.U32: pa.uint32(),
    dt.PType.U64: pa.uint64(),
    dt.PType.I8: pa.int8(),
    dt.PType.I16: pa.int16(),
    dt.PType.I32: pa.int32(),
    dt.PType.I64: pa.int64(),
    dt.PType.F16: pa.float16(),
    dt.PType.F32: pa.float32(),
    dt.PType.F64: pa.float64(),
}
_ARROW_TO_PRIM = {v: k for k, v in _PRIM_TO_ARROW.items()}


def dtype_to_arrow(d: dt.DType, string_view: bool = False) -> pa.DataType:
    """The Arrow type that arrays of dtype ``d`` convert to: strings and binary as
    ``string`` / ``binary``, or with ``string_view`` as ``string_view`` / ``binary_view``
    (what Polars and DuckDB use natively; pyarrow.compute has fewer kernels for views).

    >>> dtype_to_arrow(dt.Struct(["s"], [dt.Utf8()]), string_view=True)
    StructType(struct<s: string_view not null>)
    """
    if type(d) is dt.Primitive:  # the common case first
        return _PRIM_TO_ARROW[d.ptype]
    if isinstance(d, dt.Null):
        return pa.null()
    if isinstance(d, dt.Bool):
        return pa.bool_()
    if isinstance(d, dt.Primitive):
        return _PRIM_TO_ARROW[d.ptype]
    if isinstance(d, dt.Decimal):
        return pa.decimal128(d.precision, d.scale) if d.precision <= 38 else pa.decimal256(
            d.precision, d.scale)
    if isinstance(d, dt.Utf8):
        return pa.string_view() if string_view else pa.string()
    if isinstance(d, dt.Binary):
        return pa.binary_view() if string_view else pa.binary()
    if isinstance(d, dt.Struct):
        return pa.struct([pa.field(n, dtype_to_arrow(c, string_view), c.nullable)
                          for n, c in zip(d.names, d.dtypes)])
    if isinstance(d, dt.List):
        return pa.list_(pa.field("item", dtype_to_arrow(d.element, string_view), d.element.nullable))
    if isinstance(d, dt.FixedSizeList):
        if d.size > 2**31 - 1:
            raise UnsupportedError(f"no Arrow type for {d!r}: Arrow list sizes are int32")
        return pa.list_(pa.field("item", dtype_to_arrow(d.element, string_view),
                                 d.element.nullable), d.size)
    if isinstance(d, dt.Extension):
        if d.id == dt.TIMESTAMP_ID:
            return pa.timestamp(d.unit.arrow, d.tz)
        if d.id == dt.DATE_ID:
            return pa.date32() if d.unit == dt.TimeUnit.D else pa.date64()
        if d.id == dt.TIME_ID:
            u = d.unit
            return pa.time32(u.arrow) if u in (dt.TimeUnit.S, dt.TimeUnit.MS) else pa.time64(u.arrow)
        return dtype_to_arrow(d.storage, string_view)
    raise UnsupportedError(f"no Arrow type for {d!r}")


@functools.lru_cache(maxsize=256)
def to_arrow_schema(d: dt.DType, string_view: bool = False) -> pa.Schema:
    """The Arrow schema of a struct dtype (record batches of a stream); ``string_view`` as
    in ``dtype_to_arrow``. Remembered per dtype (both are immutable): every stream and scan
    asks for it."""
    if not isinstance(d, dt.Struct):
        return pa.schema([pa.field("values", dtype_to_arrow(d, string_view), d.nullable)])
    return pa.schema([pa.field(n, dtype_to_arrow(c, string_view), c.nullable)
                      for n, c in zip(d.names, d.dtypes)])


def dtype_from_arrow(t: Any, nullable: bool = True) -> dt.DType:
    """The Vortex dtype of an Arrow type, field or schema. A type with no Vortex
    equivalent raises ``UnsupportedError`` naming it and, in a schema or struct, its
    column (``a.b`` for a nested field)."""
    if isinstance(t, pa.Schema):
        return dt.Struct(t.names, [_type_dtype(f.type, f.nullable, f.name) for f in t], False)
    if isinstance(t, pa.Field):
        return _type_dtype(t.type, t.nullable, t.name or None)
    if not isinstance(t, pa.DataType):
        from ._check import describe

        raise TypeError(f"expected an Arrow type, field or schema, not {describe(t)}")
    return _type_dtype(t, nullable, None)


def _type_dtype(t: pa.DataType, nullable: bool, path: str | None) -> dt.DType:
    """``dtype_from_arrow`` of a type; ``path``: the column it is, for errors."""
    def sub(f: pa.Field) -> dt.DType:
        return _type_dtype(f.type, f.nullable, f.name if path is None else f"{path}.{f.name}")

    if pa.types.is_null(t):
        return dt.Null()
    if pa.types.is_boolean(t):
        return dt.Bool(nullable)
    if t in _ARROW_TO_PRIM:
        return dt.Primitive(_ARROW_TO_PRIM[t], nullable)
    if pa.types.is_decimal(t):
        return dt.Decimal(t.precision, t.scale, nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return dt.Utf8(nullable)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return dt.Binary(nullable)
    if pa.types.is_struct(t):
        return dt.Struct([f.name for f in t], [sub(f) for f in t], nullable)
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t)
            or pa.types.is_large_list_view(t)):
        return dt.List(sub(t.value_field), nullable)
    if pa.types.is_fixed_size_list(t):
        return dt.FixedSizeList(sub(t.value_field), t.list_size, nullable)
    if pa.types.is_timestamp(t):
        return dt.timestamp(t.unit, t.tz, nullable)
    if pa.types.is_date32(t):
        return dt.date("D", nullable)
    if pa.types.is_date64(t):
        return dt.date("ms", nullable)
    if pa.types.is_time(t):
        return dt.time(t.unit, nullable)
    if pa.types.is_dictionary(t):
        return _type_dtype(t.value_type, nullable, path)
    if pa.types.is_map(t):  # its storage: a list of non-nullable (key, item) structs
        entries = dt.Struct([t.key_field.name, t.item_field.name],
                            [sub(t.key_field), sub(t.item_field)], False)
        return dt.List(entries, nullable)
    if pa.types.is_duration(t):
        return dt.Primitive(dt.PType.I64, nullable)
    if t == pa.month_day_nano_interval():
        return dt.Struct(list(INTERVAL_FIELDS),
                         [dt.Primitive(dt.PType.I32, False), dt.Primitive(dt.PType.I32, False),
                          dt.Primitive(dt.PType.I64, False)], nullable)
    if pa.types.is_fixed_size_binary(t):
        return dt.Binary(nullable)
    if isinstance(t, pa.BaseExtensionType):
        return _type_dtype(t.storage_type, nullable, path)
    if pa.types.is_run_end_encoded(t):
        return _type_dtype(t.value_type, nullable, path)
    where = f"column {path!r}: " if path is not None else ""
    raise UnsupportedError(f"{where}Arrow type {t} has no Vortex equivalent")


#: the fields a ``month_day_nano_interval`` is stored as (a struct of i32, i32, i64)
INTERVAL_FIELDS = ("months", "days", "nanoseconds")
_INTERVAL_NP = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanoseconds", "<i8")])


# -- data ----------------------------------------------------------------------------------

# The encodings' constructors, bound once on first use (the encodings import this module, so
# they cannot be imported at its top; an import statement per call cost a small message's
# write a quarter of its time).
if TYPE_CHECKING:
    from .encodings._bool import bool_array_from_bits
    from .encodings._chunked import chunked_array
    from .encodings._constant import constant_array
    from .encodings._decimal import decimal_array
    from .encodings._ext import ext_array
    from .encodings._fixed_size_list import fixed_size_list_array
    from .encodings._list import list_array
    from .encodings._listview import listview_array
    from .encodings._null import null_array
    from .encodings._primitive import primitive_array
    from .encodings._struct import struct_array
    from .encodings._varbin import varbin_array
    from .encodings._varbinview import varbinview_array

_BOUND = False


def _bind_constructors() -> None:
    global _BOUND
    from .encodings import (
        _bool,
        _chunked,
        _constant,
        _decimal,
        _ext,
        _fixed_size_list,
        _list,
        _listview,
        _null,
        _primitive,
        _struct,
        _varbin,
        _varbinview,
    )

    globals().update(
        bool_array_from_bits=_bool.bool_array_from_bits, chunked_array=_chunked.chunked_array,
        constant_array=_constant.constant_array, decimal_array=_decimal.decimal_array,
        ext_array=_ext.ext_array, fixed_size_list_array=_fixed_size_list.fixed_size_list_array,
        list_array=_list.list_array, listview_array=_listview.listview_array,
        null_array=_null.null_array, primitive_array=_primitive.primitive_array,
        struct_array=_struct.struct_array, varbin_array=_varbin.varbin_array,
        varbinview_array=_varbinview.varbinview_array)
    _BOUND = True



def _np(buf: pa.Buffer | None) -> np.ndarray:
    if buf is None:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


def _bits_at_zero(buf: pa.Buffer | None, off: int, n: int) -> np.ndarray:
    """Bits ``[off, off + n)`` of an Arrow bitmap, starting at bit 0 of the result.

    Zero-copy when ``off`` is a multiple of 8; otherwise the ``n / 8`` bytes are repacked,
    so that written streams carry offset-0 bitmaps, which readers hand to Arrow without
    copying (a sliced table's chunks would otherwise mostly start mid-byte).
    """
    bits = _np(buf)[off >> 3 : (off + n + 7) >> 3]
    s = off & 7
    if s == 0:
        return bits
    return np.packbits(np.unpackbits(bits, bitorder="little")[s : s + n], bitorder="little")


#: where a value lies under a null parent (a struct's or list's null slot, at any depth
#: above it): a callable giving that mask over the array's rows, computed only when needed
Under = Any


def _validity(a: pa.Array, d: dt.DType, under: Under = None, path: str = "") -> Array | None:
    if not _BOUND:
        _bind_constructors()
    n = len(a)
    nulls = a.null_count
    if nulls and not d.nullable:
        _check_masked(a, under, path)
        return None  # every null lies under a null parent: masked, whatever it holds
    if nulls == 0:
        return None
    if nulls == n:
        return constant_array(False, n, dt.Bool())
    return bool_array_from_bits(_bits_at_zero(a.buffers()[0], a.offset, n), 0, n)


def _check_masked(a: pa.Array, under: Under, path: str) -> None:
    """A non-nullable field's nulls are valid Arrow only under a null parent (a nullable
    struct or list whose slot is null there); any other null raises ``UnsupportedError``
    naming the column and the first such row."""
    nulls = _nulls_mask(a)
    if under is not None:
        nulls &= ~under()
    if nulls.any():
        where = f"column {path!r}: " if path else ""
        raise UnsupportedError(
            f"{where}{int(nulls.sum())} null(s) in a non-nullable field where its parent is "
            f"valid (row {int(np.argmax(nulls))} first); Arrow's schema says it holds none")


def _nulls_mask(a: pa.Array) -> np.ndarray:
    """True where ``a`` is null (``a``'s own validity)."""
    if a.null_count == 0:
        return np.zeros(len(a), dtype=bool)
    return ~np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _child_under(a: pa.Array, under: Under) -> Under:
    """The mask of a struct's fields: under its own nulls or its parents'."""
    if a.null_count == 0:
        return under
    return lambda: _nulls_mask(a) | (under() if under is not None else False)


def _elements_under(a: pa.Array, under: Under, starts: np.ndarray, sizes: np.ndarray,
                    count: int) -> Under:
    """The mask of a list's elements (``count`` of them; slot ``i`` covers ``sizes[i]``
    elements from ``starts[i]``): an element is masked unless a valid slot covers it."""
    if a.null_count == 0 and under is None:
        return None

    def mask() -> np.ndarray:
        slot_masked = _nulls_mask(a) | (under() if under is not None else False)
        cover = np.zeros(count + 1, dtype=np.int64)
        live = ~slot_masked
        st, sz = starts[live].astype(np.int64), sizes[live].astype(np.int64)
        np.add.at(cover, st, 1)
        np.add.at(cover, st + sz, -1)
        return np.cumsum(cover[:count]) <= 0

    return mask


def from_arrow(obj: Any, dtype: dt.DType | None = None) -> Array:
    """A Vortex array over Arrow data (Array, ChunkedArray, RecordBatch, Table).

    ``dtype`` overrides the inferred dtype (to choose nullability, say); it must describe
    the same values. Tables and record batches become non-nullable struct arrays.
    """
    if not _BOUND:
        _bind_constructors()
    if isinstance(obj, pa.Table):
        d = dtype if dtype is not None else dtype_from_arrow(obj.schema)
        return chunked_array([_from_batch(b, d) for b in obj.to_batches()], d)
    if isinstance(obj, pa.RecordBatch):
        return _from_batch(obj, dtype if dtype is not None else dtype_from_arrow(obj.schema))
    if isinstance(obj, pa.ChunkedArray):
        d = dtype if dtype is not None else dtype_from_arrow(obj.type, True)
        return chunked_array([_from_array(c, d) for c in obj.chunks], d)
    if isinstance(obj, pa.Array):
        return _from_array(obj, dtype if dtype is not None else dtype_from_arrow(obj.type, True))
    raise TypeError(f"cannot convert {type(obj).__name__} from Arrow")


def _from_batch(b: pa.RecordBatch, d: dt.DType) -> Array:
    if not _BOUND:
        _bind_constructors()
    if not isinstance(d, dt.Struct) or len(d.dtypes) != b.num_columns:
        raise ValueError(f"record batch with {b.num_columns} columns does not match {d!r}")
    fields = [_from_array(b.column(i), fd, None, name)
              for i, (fd, name) in enumerate(zip(d.dtypes, d.names))]
    return struct_array(d, b.num_rows, fields)


def _from_array(a: pa.Array, d: dt.DType, under: Under = None, path: str = "") -> Array:
    """``a`` as a Vortex array of dtype ``d``; ``under``: where its rows lie under a null
    parent (their values are masked), ``path``: the column it is, for errors."""
    if not _BOUND:
        _bind_constructors()
    t = a.type
    n = len(a)
    off = a.offset
    if pa.types.is_dictionary(t):
        return _from_array(_dictionary_decoded(a, under, path), d, under, path)
    if isinstance(t, pa.BaseExtensionType):
        return _from_array(a.storage, d, under, path)
    if pa.types.is_run_end_encoded(t):
        import pyarrow.compute as pc

        return _from_array(pc.run_end_decode(a), d, under, path)
    if pa.types.is_duration(t):
        return _from_array(a.view(pa.int64()), d, under, path)
    if t == pa.month_day_nano_interval():
        return _from_array(interval_struct(a), d, under, path)
    if isinstance(d, dt.Extension):
        storage_t = dtype_to_arrow(d.storage)
        return ext_array(d, _from_array(a.view(storage_t) if a.type != storage_t else a,
                                        d.storage, under, path))
    if isinstance(d, dt.Null):
        return null_array(n)
    v = _validity(a, d, under, path)
    bufs = a.buffers()
    if isinstance(d, dt.Bool):
        return bool_array_from_bits(_bits_at_zero(bufs[1], off, n), 0, n, v, d.nullable)
    if isinstance(d, dt.Primitive):
        w = d.ptype.byte_width
        if t != _PRIM_TO_ARROW[d.ptype]:
            raise ValueError(f"Arrow {t} does not match {d!r}")
        raw = _np(bufs[1])[off * w : (off + n) * w]
        return primitive_array(raw.view(d.ptype.np_dtype), v, nullable=d.nullable)
    if isinstance(d, dt.Decimal):
        w = t.byte_width
        return decimal_array(d, _np(bufs[1])[off * w : (off + n) * w], w, v)
    if isinstance(d, (dt.Utf8, dt.Binary)):
        if pa.types.is_fixed_size_binary(t):
            w = t.byte_width
            ot = np.dtype("<i8") if n * w >= 2**31 else np.dtype("<i4")
            offsets = (np.arange(0, (n + 1) * w, w, dtype=ot) if w
                       else np.zeros(n + 1, dtype=ot))
            return varbin_array(d, primitive_array(offsets),
                                _np(bufs[1])[off * w : (off + n) * w], v)
        if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
            views = _np(bufs[1])[off * 16 : (off + n) * 16]
            return varbinview_array(d, views, [_np(b) for b in bufs[2:]], v)
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        ot = np.dtype("<i8") if large else np.dtype("<i4")
        if n == 0 and bufs[1] is None:
            offsets = np.zeros(1, dtype=ot)
        else:
            offsets = _np(bufs[1]).view(ot)[off : off + n + 1]
        data = _np(bufs[2])
        offsets, data = _trim(offsets, data)
        return varbin_array(d, primitive_array(offsets), data, v)
    if isinstance(d, dt.List):
        sub = f"{path}[]" if path else ""
        if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
            ot = np.dtype("<i8") if pa.types.is_large_list_view(t) else np.dtype("<i4")
            offs = _np(bufs[1]).view(ot)[off : off + n]
            sizes = _np(bufs[2]).view(ot)[off : off + n]
            values = a.values
            return listview_array(
                d, _from_array(values, d.element,
                               _elements_under(a, under, offs, sizes, len(values)), sub),
                primitive_array(offs), primitive_array(sizes), v)
        ot = np.dtype("<i8") if pa.types.is_large_list(t) else np.dtype("<i4")
        if n == 0 and bufs[1] is None:
            offs = np.zeros(1, dtype=ot)
        else:
            offs = _np(bufs[1]).view(ot)[off : off + n + 1]
        values = a.values
        lo, hi = int(offs[0]), int(offs[-1])
        if lo != 0 or hi != len(values):
            # a slice: keep only the elements it references
            values = values.slice(lo, hi - lo)
            offs = offs - offs.dtype.type(lo)
        eu = _elements_under(a, under, offs[:-1], np.diff(offs), len(values))
        return list_array(d, _from_array(values, d.element, eu, sub), primitive_array(offs), v)
    if isinstance(d, dt.FixedSizeList):
        s = d.size
        elems = a.values.slice(off * s, n * s)
        eu = _elements_under(a, under, np.arange(n, dtype=np.int64) * s,
                             np.full(n, s, dtype=np.int64), n * s)
        return fixed_size_list_array(d, n, _from_array(elems, d.element, eu,
                                                       f"{path}[]" if path else ""), v)
    if isinstance(d, dt.Struct):
        cu = _child_under(a, under)
        fields = [_from_array(a.field(i), fd, cu, f"{path}.{name}" if path else name)
                  for i, (fd, name) in enumerate(zip(d.dtypes, d.names))]
        return struct_array(d, n, fields, v)
    raise UnsupportedError(f"cannot convert Arrow {t} to {d!r}")


def interval_struct(a: pa.Array) -> pa.StructArray:
    """A ``month_day_nano_interval`` array as the struct it is stored as (months: i32,
    days: i32, nanoseconds: i64; the fields non-nullable)."""
    raw = np.frombuffer(a.buffers()[1], dtype=_INTERVAL_NP)[a.offset : a.offset + len(a)]
    parts = [pa.array(np.ascontiguousarray(raw[f])) for f in INTERVAL_FIELDS]
    fields = [pa.field(f, p.type, False) for f, p in zip(INTERVAL_FIELDS, parts)]
    mask = pa.array(_nulls_mask(a)) if a.null_count else None
    return pa.StructArray.from_arrays(parts, fields=fields, mask=mask)


def _dictionary_decoded(a: pa.DictionaryArray, under: Under, path: str) -> pa.Array:
    """A dictionary array's values; an index out of the dictionary's range is valid only
    under a null parent (what pyarrow's builders leave there): it decodes to null."""
    idx = a.indices
    n = len(a.dictionary)
    raw = idx.to_numpy(zero_copy_only=False) if idx.null_count == 0 else \
        idx.fill_null(0).to_numpy(zero_copy_only=False)
    null = _nulls_mask(idx)
    bad = (raw < 0) | (raw >= n)
    bad &= ~null
    if not bad.any():
        return a.dictionary_decode()
    stray = bad & ~under() if under is not None else bad
    if stray.any():
        where = f"column {path!r}: " if path else ""
        raise UnsupportedError(f"{where}dictionary index {int(raw[np.argmax(stray)])} out of "
                               f"range at row {int(np.argmax(stray))} (the dictionary holds {n})")
    keep = np.where(bad, 0, raw)
    mask = pa.array(bad | null)
    if n == 0:
        return pa.nulls(len(a), a.dictionary.type)
    return a.dictionary.take(pa.array(keep, mask=mask))


def _trim(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets rebased to 0 and the data they reference (a sliced Arrow array shares the
    whole data buffer; writing all of it for every chunk would repeat it)."""
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo == 0 and hi == data.nbytes:
        return offsets, data
    if lo != 0:
        offsets = offsets - offsets.dtype.type(lo)
    return offsets, data[lo:hi]


def python_value_to_arrow(d: dt.DType, v: Any, t: pa.DataType) -> pa.Scalar:
    """An Arrow scalar for a Python value of dtype ``d`` (as held by a Vortex Scalar)."""
    return pa.scalar(_arrowable(d, v), type=t)


def _arrowable(d: dt.DType, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(d, dt.Extension):
        return v if d.is_temporal else _arrowable(d.storage, v)
    if isinstance(d, dt.Decimal):
        from ._scalar import decimal_from_unscaled

        return decimal_from_unscaled(v, d.scale)
    if isinstance(d, dt.Primitive) and d.ptype == dt.PType.F16:
        return np.float16(v)
    if isinstance(d, dt.Struct):
        return {n: _arrowable(fd, x) for n, fd, x in zip(d.names, d.dtypes, v)}
    if isinstance(d, (dt.List, dt.FixedSizeList)):
        return [_arrowable(d.element, x) for x in v]
    return v


def schema_metadata_pairs(schema: pa.Schema) -> list[tuple[bytes, bytes]]:
    """Every (key, value) pair of an Arrow schema's custom metadata, duplicates and order
    kept (``pa.Schema.metadata`` returns a dict, which drops duplicate keys).

    Reads the pairs from the schema's IPC serialization with the bounds-checked
    FlatBuffers reader.
    """
    if not schema.metadata:
        return []
    from ._ipc.flatbuf import root

    raw = memoryview(schema.serialize())
    if raw[:4].tobytes() == b"\xff\xff\xff\xff":
        raw = raw[8:]
    else:
        raw = raw[4:]
    msg = root(raw, "Arrow Message")
    header = msg.table(2, "Arrow Schema")
    if header is None:
        return list(schema.metadata.items())
    pairs = []
    for kv in header.tables(2, "Arrow KeyValue"):
        pairs.append((kv.bytes_(0, "key") or b"", kv.bytes_(1, "value") or b""))
    return pairs


def arrow_take(a: pa.Array, idx: np.ndarray) -> pa.Array:
    """``a.take(idx)``, also for ``string_view``/``binary_view`` (pyarrow has no take
    kernel for views: gather the 16-byte views and share the data buffers)."""
    if not (pa.types.is_string_view(a.type) or pa.types.is_binary_view(a.type)):
        plain = without_views(a.type)
        if plain == a.type:
            return a.take(pa.array(idx))
        return a.cast(plain).take(pa.array(idx)).cast(a.type)  # views nested inside
    bufs = a.buffers()
    views = np.frombuffer(bufs[1], dtype=np.complex128)[a.offset : a.offset + len(a)]
    out = np.take(views, idx)
    vbuf = None
    nulls = 0
    if a.null_count:
        valid = a.is_valid().to_numpy(zero_copy_only=False)[idx]
        if not valid.all():
            vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
            nulls = -1
    return pa.Array.from_buffers(a.type, len(idx), [vbuf, pa.py_buffer(out), *bufs[2:]],
                                 null_count=nulls)


def map_arrow_type(t: pa.DataType, leaf: Any) -> pa.DataType:
    """``t`` with ``leaf(x)`` in place of every non-nested type ``x`` in it, at any depth
    of structs and (large, fixed-size) lists; ``leaf`` returns ``x`` to keep it."""
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(map_arrow_type(f.type, leaf)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        f = t.value_field
        inner = f.with_type(map_arrow_type(f.type, leaf))
        if pa.types.is_fixed_size_list(t):
            return pa.list_(inner, t.list_size)
        return pa.large_list(inner) if pa.types.is_large_list(t) else pa.list_(inner)
    return leaf(t)


def _no_view(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(t):
        return pa.string()
    return pa.binary() if pa.types.is_binary_view(t) else t


def without_views(t: pa.DataType) -> pa.DataType:
    """``t`` with string_view/binary_view replaced by string/binary at any depth."""
    return map_arrow_type(t, _no_view)


def _view(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.string_view()
    return pa.binary_view() if pa.types.is_binary(t) or pa.types.is_large_binary(t) else t


def with_views(a: Any) -> Any:
    """Arrow array ``a`` with its strings and binary as ``string_view`` / ``binary_view``
    at any depth (cast only when it has any)."""
    t = map_arrow_type(a.type, _view)
    return a if t == a.type else a.cast(t)
