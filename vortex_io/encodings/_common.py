"""Helpers shared by encodings: validity children, bit buffers, typed buffer access."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from .. import dtype as dt
from .._array import Array, typed_view
from .._errors import MalformedStreamError

BOOL = dt.Bool(False)
_D = TypeVar("_D", bound=dt.DType)


def validity_spec(enc_id: str, dtype: dt.DType, length: int, nchildren: int, base: int
                  ) -> list[tuple[dt.DType, int]]:
    """The optional validity child after ``base`` required children."""
    if nchildren == base:
        return []
    if nchildren == base + 1:
        if not dtype.nullable:
            raise MalformedStreamError(f"{enc_id}: validity child on a non-nullable {dtype!r}")
        return [(BOOL, length)]
    raise MalformedStreamError(
        f"{enc_id}: {nchildren} children, expected {base} or {base + 1} (with validity)"
    )


def unpack_bits(buf: np.ndarray, offset: int, n: int) -> np.ndarray:
    """``n`` LSB-first bits starting at bit ``offset`` of ``buf``, as a bool array."""
    first = offset >> 3
    last = (offset + n + 7) >> 3
    if buf.nbytes < last:
        raise MalformedStreamError(f"bit buffer of {buf.nbytes} bytes is too short for {offset}+{n} bits")
    bits = np.unpackbits(buf[first:last], bitorder="little")
    s = offset & 7
    return bits[s : s + n].view(np.bool_)


def pack_bits(mask: np.ndarray) -> np.ndarray:
    """A bool array as an LSB-first bit buffer (uint8)."""
    return np.packbits(np.asarray(mask, dtype=np.bool_), bitorder="little")


def validity_mask(v: Array | None, n: int) -> np.ndarray | None:
    """True where valid; None when all are valid."""
    if v is None:
        return None
    from ._bool import bool_values_or_const

    m = bool_values_or_const(v)
    if isinstance(m, bool):
        return None if m else np.zeros(n, dtype=np.bool_)
    return m


def arrow_validity(v: Array | None, n: int) -> tuple[Any, int]:
    """(Arrow validity bitmap at offset 0 or None, null count or -1 if unknown)."""
    import pyarrow as pa

    if v is None:
        return None, 0
    from ._bool import bool_bitmap_or_const

    res = bool_bitmap_or_const(v)
    if isinstance(res, bool):
        if res:
            return None, 0
        return pa.py_buffer(np.zeros((n + 7) >> 3, dtype=np.uint8)), n
    return pa.py_buffer(res), -1


def typed_buffer(arr: Array, i: int, np_dtype: np.dtype, count: int) -> np.ndarray:
    if i >= len(arr.buffers):
        raise MalformedStreamError(f"{arr.encoding}: buffer {i} is missing")
    return typed_view(arr.buffers[i], np_dtype, count, arr.encoding)


def canonical_ints(a: Array, what: str) -> np.ndarray:
    """Decode an integer child (offsets, codes, indices...) to numpy, rejecting nulls."""
    c = a.canonical()
    d = c.dtype
    if not isinstance(d, dt.Primitive) or not d.ptype.is_int:
        raise MalformedStreamError(f"{what} must be integers, not {d!r}")
    # (a canonical array of a primitive dtype is vortex.primitive: values, then validity)
    vals = typed_buffer(c, 0, d.ptype.np_dtype, len(c))
    if c.children:
        valid = validity_mask(c.children[0], len(c))
        if valid is not None and not valid.all():
            raise MalformedStreamError(f"{what} contain nulls")
    return vals


def primitive(d: dt.DType, what: str) -> dt.Primitive:
    """``d`` as a ``dt.Primitive``; ``MalformedStreamError`` naming ``what`` otherwise.

    Encodings whose ``check_dtype`` admits only primitives read their dtype through this,
    so the type checker knows it is one and a mis-built array fails clearly."""
    if not isinstance(d, dt.Primitive):
        raise MalformedStreamError(f"{what} must be primitive, not {d!r}")
    return d


def array_ptype(a: Array) -> dt.PType:
    """The primitive type of ``a``, whose dtype must be a ``dt.Primitive``."""
    return primitive(a.dtype, a.encoding).ptype


def is_primitive_of(a: Array, p: dt.PType) -> bool:
    """Whether the decoded child ``a`` is a ``vortex.primitive`` of ``p`` (what encodings
    check of the children they decode before reading their values)."""
    return a.encoding == "vortex.primitive" and isinstance(a.dtype, dt.Primitive) and a.dtype.ptype == p


def held(dtype: dt.DType, kind: type[_D], enc_id: str) -> _D:
    """``dtype`` as the ``kind`` of dtype encoding ``enc_id`` holds (a struct, a list...);
    ``MalformedStreamError`` "``enc_id`` cannot hold ``dtype``" otherwise."""
    if not isinstance(dtype, kind):
        raise MalformedStreamError(f"{enc_id} cannot hold {dtype!r}")
    return dtype


def log2_width(ptype: dt.PType) -> int:
    return {1: 0, 2: 1, 4: 2, 8: 3}[ptype.byte_width]


def ptype_of(value: int, name: str) -> dt.PType:
    try:
        return dt.PType(value)
    except ValueError:
        raise MalformedStreamError(f"{name}: unknown primitive type {value}") from None


def int_ptype_of(value: int, name: str) -> dt.PType:
    p = ptype_of(value, name)
    if not p.is_int:
        raise MalformedStreamError(f"{name}: {p.short} is not an integer type")
    return p


def validity_child(valid: np.ndarray | None) -> Array | None:
    """The validity child for a numpy mask (True = valid; None: no child, all valid)."""
    if valid is None:
        return None
    from ._bool import bool_array

    return bool_array(valid)


def as_array(obj: Any) -> Array:
    """``obj`` as a ``vortex_io.Array`` (an Array as is; Arrow data converted)."""
    if isinstance(obj, Array):
        return obj
    from .._arrow import from_arrow

    return from_arrow(obj)


def narrowest_uint(maximum: int) -> dt.PType:
    """The narrowest unsigned ptype holding ``0..maximum``."""
    for p in (dt.PType.U8, dt.PType.U16, dt.PType.U32, dt.PType.U64):
        if maximum < 1 << (8 * p.byte_width):
            return p
    raise ValueError(f"{maximum} does not fit in 64 bits")


def narrowest_int(lo: int, hi: int) -> dt.PType:
    """The narrowest integer type holding ``lo..hi`` (unsigned when ``lo >= 0``)."""
    if lo >= 0:
        for p in (dt.PType.U8, dt.PType.U16, dt.PType.U32, dt.PType.U64):
            if hi < (1 << (8 * p.byte_width)):
                return p
    for p in (dt.PType.I8, dt.PType.I16, dt.PType.I32, dt.PType.I64):
        b = 8 * p.byte_width - 1
        if -(1 << b) <= lo and hi < (1 << b):
            return p
    return dt.PType.I64  # pragma: no cover - i64 inputs always fit


def text_sample(data: np.ndarray, offsets: np.ndarray, target: int, max_row: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """A deterministic sample of about ``target`` bytes: evenly spaced rows, each cut to
    at most ``max_row`` bytes."""
    n = len(offsets) - 1
    total = int(offsets[-1]) if n else 0
    if n == 0:
        return data[:0], offsets[:1]
    lens = np.minimum(np.diff(offsets), max_row)
    if total > target:
        stride = max(1, int(np.ceil(int(lens.sum()) / target)))
        rows = np.arange(0, n, stride)
    else:
        rows = np.arange(n)
    starts = offsets[:-1][rows]
    lens = lens[rows]
    new = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=new[1:])
    idx = np.repeat(starts - new[:-1], lens) + np.arange(int(new[-1]), dtype=np.int64)
    return data[idx], new


def scalar_buffer_value(arr: Array, empty: str) -> Any:
    """The Python value of the ``ScalarValue`` in ``arr``'s first buffer, for ``arr``'s
    dtype: None for an empty buffer of a nullable dtype; ``MalformedStreamError`` starting
    with ``empty`` for an empty buffer of a non-nullable one."""
    from .._scalar import value_from_proto

    raw = arr.buffers[0]
    if raw.nbytes == 0:
        if not arr.dtype.nullable:
            raise MalformedStreamError(f"{empty} for a non-nullable dtype")
        return None
    return value_from_proto(arr.dtype, raw)
