"""The exact Arrow schema of a stream, kept beside its Vortex dtype.

A Vortex dtype holds the values of every Arrow type pyarrow builds, but not its layout:
``large_string``, ``string_view``, ``large_list``, ``list_view``, ``dictionary``,
``decimal32``, ``run_end_encoded`` are Utf8, List, Decimal... like their plain forms;
``map`` is a list of (key, item) structs, ``duration`` an i64, ``month_day_nano_interval``
a struct of (months, days, nanoseconds), ``fixed_size_binary`` binary, an extension type its
storage; field metadata has no place at all. As Parquet keeps ``ARROW:schema``, a writer
given an Arrow schema that reading its dtype would not give back stores the schema (its
IPC serialization, without the schema's metadata: that is the stream's metadata) under the
reserved stream metadata key ``vortex_io.arrow_schema``; readers restore it. Other readers
(vortex-data) see the values in their Vortex types.

>>> import pyarrow as pa
>>> s = pa.schema([pa.field("d", pa.duration("ms")), pa.field("x", pa.int64())])
>>> layout = ArrowLayout.for_schema(s)
>>> layout.schema().field("d").type
DurationType(duration[ms])
>>> ArrowLayout.for_schema(pa.schema([pa.field("x", pa.int64())])) is None
True
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from . import dtype as dt
from ._arrow import (
    _INTERVAL_NP,
    INTERVAL_FIELDS,
    dtype_from_arrow,
    interval_struct,
    map_arrow_type,
    to_arrow_schema,
)
from ._errors import MalformedStreamError
from ._metadata import ARROW_SCHEMA_KEY as SCHEMA_KEY

__all__ = ["SCHEMA_KEY", "ArrowLayout", "restore_array", "restore_batch", "same_schema", "same_type",
           "engine_schema", "polars_schema"]


class ArrowLayout:
    """The exact Arrow schema of a stream of dtype ``dtype`` (``schema``: without metadata;
    a stream of another dtype than a table's has one field, ``values``)."""

    __slots__ = ("_views", "dtype", "exact")

    def __init__(self, exact: pa.Schema, dtype: dt.DType) -> None:
        self.exact = exact
        self.dtype = dtype
        self._views: pa.Schema | None = None

    @classmethod
    def for_schema(cls, schema: Any) -> ArrowLayout | None:
        """The layout to write for an Arrow schema, field or type, or None when the dtype
        it maps to reads back as exactly it (nothing to store)."""
        if isinstance(schema, pa.Schema):
            exact, d = schema.remove_metadata(), dtype_from_arrow(schema)
        else:
            f = schema if isinstance(schema, pa.Field) else pa.field("values", schema)
            d = dtype_from_arrow(f)
            exact = pa.schema([pa.field("values", f.type, d.nullable, f.metadata)])
        if same_schema(exact, to_arrow_schema(d)):
            return None
        return cls(exact, d)

    def value(self) -> bytes:
        """The value of ``vortex_io.arrow_schema``: the schema's IPC serialization."""
        return self.exact.serialize().to_pybytes()

    @classmethod
    def read(cls, value: bytes, dtype: dt.DType) -> ArrowLayout:
        """The layout a stream of ``dtype`` stored (``MalformedStreamError`` when the value
        is no Arrow schema, or one of other values than the dtype's)."""
        try:
            exact = pa.ipc.read_schema(pa.py_buffer(value))
        except (pa.ArrowException, ValueError, TypeError, OSError) as e:
            raise MalformedStreamError(
                f"the stream's {SCHEMA_KEY.decode()} value is not an Arrow schema: {e}",
                message_index=0) from None
        try:
            stored = (dtype_from_arrow(exact) if isinstance(dtype, dt.Struct) and not dtype.nullable
                      else dtype_from_arrow(exact.field(0)) if len(exact) == 1 else None)
        except ValueError:
            stored = None
        if stored != dtype:
            raise MalformedStreamError(
                f"the stream's {SCHEMA_KEY.decode()} ({exact}) does not describe its dtype "
                f"{dtype!r}", message_index=0)
        return cls(exact, dtype)

    def schema(self, string_view: bool = False) -> pa.Schema:
        """The exact schema; ``string_view``: as ``engine_schema`` makes it (what Polars and
        DuckDB take natively)."""
        if not string_view:
            return self.exact
        if self._views is None:
            self._views = engine_schema(self.exact)
        return self._views

    def field_types(self, fields: Sequence[int] | None, string_view: bool = False) -> list[Any]:
        """The exact types of the root fields ``fields`` (None: the one column)."""
        s = self.schema(string_view)
        return [s.field(0).type] if fields is None else [s.field(i).type for i in fields]


@functools.lru_cache(maxsize=256)
def engine_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` as the engines (Polars, DuckDB) take it best: plain and large strings and
    binary as views, 32- and 64-bit decimals as ``decimal128``, list views as lists and
    run-end encoded arrays as their values, at any depth of structs and lists (not inside
    dictionaries, maps or extension types)."""
    return pa.schema([f.with_type(_views(f.type)) for f in schema], metadata=schema.metadata)


@functools.lru_cache(maxsize=256)
def polars_schema(schema: pa.Schema) -> pa.Schema:
    """``engine_schema`` for Polars, which has no interval type: a
    ``month_day_nano_interval`` (at any depth of structs and lists) as its stored struct."""
    return pa.schema([f.with_type(_no_interval(f.type)) for f in engine_schema(schema)],
                     metadata=schema.metadata)


_INTERVAL_STRUCT = pa.struct([pa.field("months", pa.int32(), False),
                              pa.field("days", pa.int32(), False),
                              pa.field("nanoseconds", pa.int64(), False)])


def _no_interval(t: pa.DataType) -> pa.DataType:
    return map_arrow_type(t, lambda x: _INTERVAL_STRUCT if x == pa.month_day_nano_interval() else x)


def _views(t: pa.DataType) -> pa.DataType:
    return map_arrow_type(t, _view_leaf)


def _view_leaf(t: pa.DataType) -> pa.DataType:
    """``_views`` of a type that is no struct or (large, fixed-size) list."""
    if isinstance(t, (pa.Decimal32Type, pa.Decimal64Type)):
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_run_end_encoded(t):
        return _views(t.value_type)
    if pa.types.is_list_view(t):
        return pa.list_(t.value_field.with_type(_views(t.value_type)))
    if pa.types.is_large_list_view(t):
        return pa.large_list(t.value_field.with_type(_views(t.value_type)))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.string_view()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.binary_view()
    return t


def same_type(a: pa.DataType, b: pa.DataType) -> bool:
    """``a == b`` with nested field names, nullability and metadata compared too (Arrow's
    ``==`` ignores a list's field name)."""
    return a.equals(b, check_metadata=True)


def same_schema(a: pa.Schema, b: pa.Schema) -> bool:
    """Two schemas with the same fields, compared as ``same_type`` compares types, and the
    same metadata."""
    return len(a) == len(b) and (a.metadata or None) == (b.metadata or None) and all(
        fa.name == fb.name and fa.nullable == fb.nullable
        and (fa.metadata or None) == (fb.metadata or None)
        and same_type(fa.type, fb.type) for fa, fb in zip(a, b))


def _validity_mask(a: pa.Array) -> pa.Array | None:
    """``a``'s nulls as a mask (True: null) for the ``from_arrays`` constructors."""
    if a.null_count == 0:
        return None
    import pyarrow.compute as pc

    return pc.is_null(a)


def restore_array(a: Any, t: pa.DataType) -> Any:
    """Array ``a`` (as a stream's dtype decodes: plain or view strings and lists, a map's
    list of structs, a duration's i64...) as type ``t`` with the same values. Chunked
    arrays chunk by chunk."""
    if same_type(a.type, t):
        return a
    if isinstance(a, pa.ChunkedArray):
        return pa.chunked_array([restore_array(c, t) for c in a.chunks], type=t)
    try:
        return _restore(a, t)
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise MalformedStreamError(f"values of type {a.type} do not restore to the stream's "
                                   f"Arrow type {t}: {e}") from None


def _restore(a: pa.Array, t: pa.DataType) -> pa.Array:
    if same_type(a.type, t):
        return a
    if a.type == pa.month_day_nano_interval() and pa.types.is_struct(t):
        return interval_struct(a)  # (for an engine without intervals: polars_schema)
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, _restore(a, t.storage_type))
    if pa.types.is_dictionary(t):
        if pa.types.is_dictionary(a.type):
            values = _restore(a.dictionary, t.value_type)
            return pa.DictionaryArray.from_arrays(a.indices.cast(t.index_type), values,
                                                  ordered=t.ordered)
        import pyarrow.compute as pc

        enc = pc.dictionary_encode(_restore(a, t.value_type))
        return pa.DictionaryArray.from_arrays(enc.indices.cast(t.index_type), enc.dictionary,
                                              ordered=t.ordered)
    if pa.types.is_run_end_encoded(t):
        import pyarrow.compute as pc

        return pc.run_end_encode(_restore(a, t.value_type), run_end_type=t.run_end_type)
    if pa.types.is_duration(t):
        return a.view(t)
    if t == pa.month_day_nano_interval():
        out = np.empty(len(a), dtype=_INTERVAL_NP)
        for i, f in enumerate(INTERVAL_FIELDS):
            out[f] = a.field(i).to_numpy(zero_copy_only=False)
        vbuf = None
        if a.null_count:
            vbuf = pa.py_buffer(np.packbits(a.is_valid().to_numpy(zero_copy_only=False),
                                            bitorder="little"))
        return pa.Array.from_buffers(t, len(a), [vbuf, pa.py_buffer(out)],
                                     null_count=a.null_count)
    if pa.types.is_map(t):
        entries = _restore(a.values if a.offset == 0 else a.flatten(),
                           pa.struct([t.key_field, t.item_field]))
        if a.offset:
            a = pa.concat_arrays([a])  # offsets from 0 (concat rebases a slice's)
        lst = pa.Array.from_buffers(pa.list_(pa.field("entries", entries.type, False)), len(a),
                                    a.buffers()[:2], null_count=a.null_count,
                                    children=[entries])
        return lst.view(t)
    if pa.types.is_struct(t):
        children = [_restore(a.field(i), f.type) for i, f in enumerate(t)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=_validity_mask(a))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) \
            or pa.types.is_large_list_view(t) or pa.types.is_fixed_size_list(t):
        if pa.types.is_fixed_size_list(t):  # (from_arrays divides by the size: 0 crashes)
            return pa.Array.from_buffers(t, len(a), a.buffers()[:1], null_count=a.null_count,
                                         offset=a.offset,
                                         children=[_restore(a.values, t.value_type)])
        if a.offset:
            a = pa.concat_arrays([a])
        values = _restore(a.values, t.value_type)
        offsets = a.offsets
        large = pa.types.is_large_list(t) or pa.types.is_large_list_view(t)
        if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
            ot = pa.int64() if large else pa.int32()
            o = offsets.to_numpy()
            return pa.ListViewArray.from_arrays(
                pa.array(o[:-1]).cast(ot), pa.array(np.diff(o)).cast(ot), values, type=t,
                mask=_validity_mask(a)) if not large else pa.LargeListViewArray.from_arrays(
                pa.array(o[:-1]).cast(ot), pa.array(np.diff(o)).cast(ot), values, type=t,
                mask=_validity_mask(a))
        cls = pa.LargeListArray if large else pa.ListArray
        return cls.from_arrays(offsets.cast(pa.int64() if large else pa.int32()), values, type=t,
                               mask=_validity_mask(a))
    return a.cast(t)


def restore_batch(rb: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Record batch ``rb`` (a stream's dtype decoded) with ``schema``'s exact types."""
    if rb.num_columns == 0:
        return rb.replace_schema_metadata(schema.metadata)
    cols = [restore_array(c, f.type) for c, f in zip(rb.columns, schema)]
    return pa.RecordBatch.from_arrays(cols, schema=schema)
