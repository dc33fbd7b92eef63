"""Hypothesis strategies for pyarrow data of every type with a canonical Vortex encoding.

Types (``arrow_types``): null, bool, every int width, f16/f32/f64, decimal32/64/128/256,
string / large_string / string_view, binary / large_binary / binary_view, list,
large_list, list_view, large_list_view, fixed_size_list, struct (nested, nullable and
non-nullable fields), timestamp (every unit, with and without a time zone), date32/64,
time32/64.

Data (``arrays``, ``chunk_lists``, ``record_batches``, ``tables``): with and without nulls
(including all-null), empty, and sliced (``offset != 0``) at any nesting level; floats
include NaN, -0.0 and infinities; null list entries may cover elements (Arrow allows it)
and list views may overlap and be out of order.

>>> from hypothesis import given
>>> @given(arrays())
... def test_something(arr): ...

Values are generated as Python values per row (arrays are small), buffers are built by
pyarrow; nothing here depends on ``vortex_io``.
"""

from __future__ import annotations

import decimal
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

__all__ = [
    "INT_TYPES",
    "FLOAT_TYPES",
    "TEMPORAL_TYPES",
    "STRING_TYPES",
    "BINARY_TYPES",
    "leaf_types",
    "nested_types",
    "arrow_types",
    "arrays",
    "arrays_of",
    "chunk_lists",
    "struct_types",
    "record_batches",
    "tables",
    "metadata_pairs",
]

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(),
             pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
FLOAT_TYPES = [pa.float16(), pa.float32(), pa.float64()]
STRING_TYPES = [pa.string(), pa.large_string(), pa.string_view()]
BINARY_TYPES = [pa.binary(), pa.large_binary(), pa.binary_view()]
TEMPORAL_TYPES = (
    [pa.timestamp(u) for u in ("s", "ms", "us", "ns")]
    + [pa.timestamp(u, tz) for u in ("s", "ns") for tz in ("UTC", "America/New_York")]
    + [pa.timestamp("us", "+05:30"), pa.timestamp("ms", "UTC")]
    + [pa.date32(), pa.date64(), pa.time32("s"), pa.time32("ms"), pa.time64("us"),
       pa.time64("ns")]
)

_FIELD_NAMES = ["a", "b", "c", "x", "y", "id", "price", "ü", "long field name", ""]
_DAY_MS = 86_400_000
_TIME_RANGE = {"s": 86_400, "ms": _DAY_MS, "us": _DAY_MS * 1000, "ns": _DAY_MS * 1_000_000}
_MAX_PRECISION = {32: 9, 64: 18, 128: 38, 256: 76}
_DECIMAL_CTORS = {32: pa.decimal32, 64: pa.decimal64, 128: pa.decimal128, 256: pa.decimal256}


# -- types --------------------------------------------------------------------------------


@st.composite
def decimal_types(draw: Any) -> pa.DataType:
    """decimal32/64/128/256 with any precision the width allows; scale in [-2, precision]."""
    bits = draw(st.sampled_from([128, 128, 256, 32, 64]))
    # decimal256 mostly above precision 38 (beyond decimal128), sometimes below
    lo = 39 if bits == 256 and draw(st.booleans()) else 1
    precision = draw(st.integers(lo, _MAX_PRECISION[bits]))
    scale = draw(st.integers(-2, precision))
    return _DECIMAL_CTORS[bits](precision, scale)


def leaf_types() -> st.SearchStrategy[pa.DataType]:
    """Every non-nested type with a canonical Vortex encoding."""
    return st.one_of(
        st.just(pa.null()),
        st.just(pa.bool_()),
        st.sampled_from(INT_TYPES),
        st.sampled_from(FLOAT_TYPES),
        decimal_types(),
        st.sampled_from(STRING_TYPES),
        st.sampled_from(BINARY_TYPES),
        st.sampled_from(TEMPORAL_TYPES),
    )


def _fields(children: st.SearchStrategy[pa.DataType], min_size: int = 1,
            max_size: int = 3) -> st.SearchStrategy[list[pa.Field]]:
    @st.composite
    def make(draw: Any) -> list[pa.Field]:
        names = draw(st.lists(st.sampled_from(_FIELD_NAMES), min_size=min_size,
                              max_size=max_size, unique=True))
        out = []
        for n in names:
            t = draw(children)
            out.append(pa.field(n, t, nullable=_nullable(draw, t)))
        return out

    return make()


def _nullable(draw: Any, t: pa.DataType) -> bool:
    # Arrow's null type is always nullable
    return True if pa.types.is_null(t) else draw(st.sampled_from([True, True, False]))


@st.composite
def _item_field(draw: Any, children: st.SearchStrategy[pa.DataType]) -> pa.Field:
    t = draw(children)
    # Arrow writers name list items "item" or "element" (Parquet); the name is not data
    name = draw(st.sampled_from(["item", "item", "element"]))
    return pa.field(name, t, nullable=_nullable(draw, t))


def nested_types(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
    """List, large list, list view, large list view, fixed-size list and struct types over
    ``children`` (struct fields and list items nullable or not)."""

    @st.composite
    def struct_t(draw: Any) -> pa.DataType:
        return pa.struct(draw(_fields(children, min_size=0)))

    item = _item_field(children)
    return st.one_of(
        item.map(pa.list_),
        item.map(pa.large_list),
        item.map(pa.list_view),
        item.map(pa.large_list_view),
        st.tuples(item, st.integers(0, 3)).map(lambda p: pa.list_(p[0], p[1])),
        struct_t(),
    )


def arrow_types(*, max_leaves: int = 4) -> st.SearchStrategy[pa.DataType]:
    """Any type: a leaf type half of the time, else nested types of up to ``max_leaves``
    leaves."""
    return st.one_of(leaf_types(), st.recursive(leaf_types(), nested_types, max_leaves=max_leaves))


@st.composite
def struct_types(draw: Any, *, max_leaves: int = 3, min_fields: int = 1,
                 max_fields: int = 4) -> pa.DataType:
    """A struct type (its fields any type); the schema of ``record_batches``."""
    return pa.struct(draw(_fields(arrow_types(max_leaves=max_leaves), min_size=min_fields,
                                  max_size=max_fields)))


# -- values -------------------------------------------------------------------------------


def _int_range(t: pa.DataType) -> tuple[int, int]:
    info = np.iinfo(t.to_pandas_dtype())
    return int(info.min), int(info.max)


def _leaf_values(draw: Any, t: pa.DataType, n: int) -> list[Any]:
    """``n`` non-null Python values of leaf type ``t``."""
    if pa.types.is_boolean(t):
        return draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if pa.types.is_integer(t):
        lo, hi = _int_range(t)
        return draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    if pa.types.is_floating(t):
        width = t.bit_width
        return draw(st.lists(st.floats(width=width, allow_nan=True, allow_infinity=True),
                             min_size=n, max_size=n))
    if pa.types.is_decimal(t):
        bound = 10**t.precision - 1
        ints = draw(st.lists(st.integers(-bound, bound), min_size=n, max_size=n))
        return [decimal.Decimal(f"{u}E{-t.scale}") for u in ints]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return draw(st.lists(st.text(max_size=20), min_size=n, max_size=n))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return draw(st.lists(st.binary(max_size=20), min_size=n, max_size=n))
    if pa.types.is_timestamp(t):
        return draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n, max_size=n))
    if pa.types.is_date32(t):
        return draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=n, max_size=n))
    if pa.types.is_date64(t):
        lim = (2**63 - 1) // _DAY_MS
        return [d * _DAY_MS for d in draw(st.lists(st.integers(-lim, lim), min_size=n, max_size=n))]
    if pa.types.is_time(t):
        return draw(st.lists(st.integers(0, _TIME_RANGE[t.unit] - 1), min_size=n, max_size=n))
    raise NotImplementedError(f"no values for {t}")


def _mask(draw: Any, n: int, nullable: bool, nulls: bool) -> np.ndarray | None:
    """A null mask (True = null), or None for no nulls."""
    if not (nullable and nulls) or n == 0:
        return None
    kind = draw(st.sampled_from(["none", "some", "some", "all"]))
    if kind == "none":
        return None
    if kind == "all":
        return np.ones(n, dtype=bool)
    return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)


def _pa_mask(mask: np.ndarray | None) -> pa.Array | None:
    return None if mask is None else pa.array(mask, type=pa.bool_())


def _build(draw: Any, t: pa.DataType, n: int, nullable: bool, nulls: bool, slices: bool) -> pa.Array:
    """An array of type ``t`` and length ``n``, maybe a slice of a longer one."""
    if slices and draw(st.integers(0, 2)) == 0:
        pre, post = draw(st.integers(1, 9)), draw(st.integers(0, 3))
        whole = _build_exact(draw, t, pre + n + post, nullable, nulls, slices)
        return whole.slice(pre, n)
    return _build_exact(draw, t, n, nullable, nulls, slices)


def _build_exact(draw: Any, t: pa.DataType, n: int, nullable: bool, nulls: bool,
                 slices: bool) -> pa.Array:
    if pa.types.is_null(t):
        return pa.nulls(n)
    mask = _mask(draw, n, nullable, nulls)
    if pa.types.is_struct(t):
        kids = [_build(draw, f.type, n, f.nullable, nulls, slices) for f in t]
        if not kids and mask is None:  # the mask gives a field-less struct its length
            mask = np.zeros(n, dtype=bool)
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=_pa_mask(mask))
    if pa.types.is_fixed_size_list(t):
        if t.list_size == 0:  # FixedSizeListArray.from_arrays divides by the size
            rows = [None if m else [] for m in (mask if mask is not None else np.zeros(n, bool))]
            return pa.array(rows, type=t)
        vf = t.value_field
        vals = _build(draw, vf.type, n * t.list_size, vf.nullable, nulls, slices)
        return pa.FixedSizeListArray.from_arrays(vals, type=t, mask=_pa_mask(mask))
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        vf = t.value_field
        m = draw(st.integers(0, 8))
        sizes = draw(st.lists(st.integers(0, min(3, m)), min_size=n, max_size=n))
        offs = [draw(st.integers(0, m - s)) for s in sizes]
        vals = _build(draw, vf.type, m, vf.nullable, nulls, slices)
        it = pa.int64() if pa.types.is_large_list_view(t) else pa.int32()
        cls = pa.LargeListViewArray if pa.types.is_large_list_view(t) else pa.ListViewArray
        return cls.from_arrays(pa.array(offs, it), pa.array(sizes, it), vals, type=t,
                               mask=_pa_mask(mask))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        lens = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64)
        offs = np.concatenate([[0], np.cumsum(lens)])
        vals = _build(draw, vf.type, int(offs[-1]), vf.nullable, nulls, slices)
        it = pa.int64() if pa.types.is_large_list(t) else pa.int32()
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(pa.array(offs, it), vals, type=t, mask=_pa_mask(mask))
    values = _leaf_values(draw, t, n)
    if pa.types.is_floating(t):
        return pa.array(np.array(values, dtype=t.to_pandas_dtype()), type=t, mask=mask)
    if pa.types.is_decimal(t):
        return _decimal_array(t, values, mask)
    if mask is not None:
        values = [None if m else v for v, m in zip(values, mask.tolist())]
    return pa.array(values, type=t)


def _unscaled(v: decimal.Decimal) -> int:
    """The unscaled integer of a value ``_leaf_values`` made (``Decimal(f"{u}E{-scale}")``)."""
    sign, digits, _ = v.as_tuple()
    u = int("".join(map(str, digits)) or "0")
    return -u if sign else u


def _decimal_array(t: pa.DataType, values: list[Any], mask: np.ndarray | None) -> pa.Array:
    """Decimals built from their unscaled integers: pyarrow's conversion of a ``Decimal`` to
    a negative scale goes through the storage width and fails near full precision
    (``decimal32(8, -2)``: ``99999999E2`` raises "Rescaling Decimal value would cause data
    loss"), a value the type holds."""
    w = t.bit_width // 8
    nulls = mask.tolist() if mask is not None else [False] * len(values)
    data = b"".join((0 if null else _unscaled(v)).to_bytes(w, "little", signed=True)
                    for v, null in zip(values, nulls))
    valid = None if mask is None else pa.array(~mask, type=pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(t, len(values), [valid, pa.py_buffer(data)])


@st.composite
def arrays_of(draw: Any, t: pa.DataType, *, min_size: int = 0, max_size: int = 10,
              nulls: bool = True, slices: bool = True, nullable: bool = True) -> pa.Array:
    """An array of the given type ``t``."""
    n = draw(st.integers(min_size, max_size))
    return _build(draw, t, n, nullable, nulls, slices)


@st.composite
def arrays(draw: Any, types: st.SearchStrategy[pa.DataType] | None = None, *,
           min_size: int = 0, max_size: int = 10, nulls: bool = True,
           slices: bool = True) -> pa.Array:
    """An array of any type (``arrow_types()`` unless ``types`` is given)."""
    t = draw(types if types is not None else arrow_types())
    return draw(arrays_of(t, min_size=min_size, max_size=max_size, nulls=nulls, slices=slices))


@st.composite
def chunk_lists(draw: Any, types: st.SearchStrategy[pa.DataType] | None = None, *,
                min_chunks: int = 1, max_chunks: int = 4, max_size: int = 8,
                nulls: bool = True, slices: bool = True) -> list[pa.Array]:
    """Several arrays of one type (the chunks of a multi-chunk stream; some may be empty)."""
    t = draw(types if types is not None else arrow_types())
    k = draw(st.integers(min_chunks, max_chunks))
    return [draw(arrays_of(t, max_size=max_size, nulls=nulls, slices=slices)) for _ in range(k)]


@st.composite
def record_batches(draw: Any, schema: pa.DataType | None = None, *, min_size: int = 0,
                   max_size: int = 10, nulls: bool = True, slices: bool = True) -> pa.RecordBatch:
    """A record batch (``schema``: a struct type, drawn from ``struct_types()`` if None)."""
    t = schema if schema is not None else draw(struct_types())
    sa = draw(arrays_of(t, min_size=min_size, max_size=max_size, nulls=nulls, slices=slices,
                        nullable=False))
    return pa.RecordBatch.from_struct_array(sa)


@st.composite
def tables(draw: Any, *, max_batches: int = 3, max_size: int = 8, nulls: bool = True,
           slices: bool = True) -> pa.Table:
    """A table of 1..``max_batches`` record batches of one schema."""
    t = draw(struct_types())
    k = draw(st.integers(1, max_batches))
    batches = [draw(record_batches(t, max_size=max_size, nulls=nulls, slices=slices))
               for _ in range(k)]
    return pa.Table.from_batches(batches)


def metadata_pairs(*, max_size: int = 5) -> st.SearchStrategy[list[tuple[str, bytes]]]:
    """Key/value metadata as a list of pairs: UTF-8 keys (duplicates likely), arbitrary
    byte values (not necessarily UTF-8, possibly empty)."""
    keys = st.one_of(st.sampled_from(["method", "request_id", "k", "", "ключ"]), st.text(max_size=8))
    return st.lists(st.tuples(keys, st.binary(max_size=16)), max_size=max_size)
