"""Compute kernels dispatched by encoding, with a canonical (pyarrow.compute) fallback.

The public predicates (``compare``, ``is_in``, ``is_null``) return a ``vortex_io.Array``
of booleans (nullable: SQL null semantics, a comparison with a null row is null), which
``filter`` takes. Internally a predicate result is a ``Mask``: ``(values, validity)``
numpy bool arrays, where ``validity`` None means every result is non-null and invalid
positions hold False in ``values`` (``compare_mask``, ``is_in_mask``, ``is_null_result``:
what the encodings' kernels and the scan use). Encodings provide fast paths by
implementing ``Encoding.compare``, ``Encoding.is_in`` and ``Encoding.take`` (see the
encoding modules); anything they do not handle falls back to decoding.

>>> import vortex_io as vio
>>> from vortex_io import compute
>>> a = vio.array([1, 5, None, 7])
>>> m = compute.compare(a, 5, "gte")
>>> m.to_pylist()
[False, True, None, True]
>>> compute.filter(a, m).to_pylist()
[5, 7]
"""

from __future__ import annotations

import decimal as _decimal
import math
from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, arrow_hook
from .._errors import TypeMismatchError

__all__ = [
    "Mask",
    "OPS",
    "compare",
    "compare_mask",
    "compare_storage",
    "is_in",
    "is_in_mask",
    "is_in_storage",
    "is_null",
    "is_null_result",
    "mask_to_array",
    "filter",
    "take",
    "coerce_literal",
    "mask_and",
    "mask_or",
    "mask_not",
    "mask_true",
    "mask_const",
    "arrow_bool_to_mask",
]

Mask = tuple[np.ndarray, "np.ndarray | None"]

_PC_OPS = {"eq": "equal", "neq": "not_equal", "lt": "less", "lte": "less_equal",
           "gt": "greater", "gte": "greater_equal"}


# -- masks ----------------------------------------------------------------------------------


def mask_const(n: int, value: bool | None) -> Mask:
    """All true, all false, or (None) all null."""
    if value is None:
        return np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    return (np.ones(n, dtype=np.bool_) if value else np.zeros(n, dtype=np.bool_)), None


def mask_true(m: Mask) -> np.ndarray:
    """Rows a filter keeps: true and not null."""
    v, valid = m
    return v if valid is None else v & valid


def mask_and(a: Mask, b: Mask) -> Mask:
    av, avalid = a
    bv, bvalid = b
    vals = av & bv
    if avalid is None and bvalid is None:
        return vals, None
    a_ok = np.ones_like(av) if avalid is None else avalid
    b_ok = np.ones_like(bv) if bvalid is None else bvalid
    valid = (a_ok & b_ok) | (a_ok & ~av) | (b_ok & ~bv)
    return vals & valid, valid


def mask_or(a: Mask, b: Mask) -> Mask:
    av, avalid = a
    bv, bvalid = b
    vals = av | bv
    if avalid is None and bvalid is None:
        return vals, None
    a_ok = np.ones_like(av) if avalid is None else avalid
    b_ok = np.ones_like(bv) if bvalid is None else bvalid
    valid = (a_ok & b_ok) | (a_ok & av) | (b_ok & bv)
    return vals & valid, valid


def mask_not(a: Mask) -> Mask:
    v, valid = a
    out = ~v
    if valid is not None:
        out &= valid
    return out, valid


def arrow_bool_to_mask(res: Any) -> Mask:
    """A pyarrow boolean (Chunked)Array as a Mask."""
    import pyarrow as pa

    if isinstance(res, pa.ChunkedArray):
        res = res.combine_chunks() if res.num_chunks != 1 else res.chunk(0)
    if res.null_count:
        valid = res.is_valid().to_numpy(zero_copy_only=False)
        vals = res.fill_null(False).to_numpy(zero_copy_only=False)
        return vals & valid, valid
    return res.to_numpy(zero_copy_only=False), None


# -- literals -------------------------------------------------------------------------------


def _storage(d: dt.DType) -> dt.DType:
    return d.storage if isinstance(d, dt.Extension) else d


def coerce_literal(d: dt.DType, value: Any) -> Any:
    """``value`` in the storage domain of dtype ``d``: ints for integers, decimals
    (unscaled) and datetimes (epoch units); float; str; bytes; bool.

    Raises ``vortex_io.TypeMismatchError`` (a ``TypeError``; its ``column`` None: the
    caller that knows the column's name gives it) when the literal cannot be compared with
    ``d``.
    Numeric literals outside an integer type's range, and non-integral floats against
    integers, are kept as they are (the comparison kernels handle them exactly).
    """
    if value is None:
        raise TypeMismatchError(None, d, value, detail="comparing with null is always null: "
                                "use is_null() / is_not_null()")
    if isinstance(d, dt.Extension) and d.is_temporal:
        import pyarrow as pa

        t = d.to_arrow()
        try:
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                return int(value)
            s = pa.scalar(value, type=t) if not isinstance(value, pa.Scalar) else value.cast(t)
            return s.cast(d.storage.to_arrow()).as_py()
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise TypeMismatchError(None, d, value, detail=str(e)) from None
    s = _storage(d)
    if isinstance(s, dt.Bool):
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise TypeMismatchError(None, d, value)
    if isinstance(s, dt.Primitive):
        if isinstance(value, (bool, np.bool_)):
            raise TypeMismatchError(None, d, value)
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating, _decimal.Decimal)):
            f = float(value)
            if s.ptype.is_int and f.is_integer():
                return int(f)
            return f
        raise TypeMismatchError(None, d, value)
    if isinstance(s, dt.Decimal):
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating, _decimal.Decimal, str)):
            raise TypeMismatchError(None, d, value)
        try:
            dv = _decimal.Decimal(str(value)) if not isinstance(value, _decimal.Decimal) else value
        except _decimal.InvalidOperation:
            raise TypeMismatchError(None, d, value) from None
        return dv  # exact Decimal; kernels scale it
    if isinstance(s, dt.Utf8):
        if isinstance(value, str):
            return value
        raise TypeMismatchError(None, d, value)
    if isinstance(s, dt.Binary):
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        if isinstance(value, str):
            return value.encode("utf-8")
        raise TypeMismatchError(None, d, value)
    raise TypeMismatchError(None, d, value, detail="comparisons on columns of this dtype are not "
                            "supported")


def int_range_shortcut(ptype: dt.PType, value: Any, op: str) -> tuple[str, Any] | bool:
    """Rewrite an int-column comparison with an out-of-range or fractional literal.

    Returns (op, int value), or a bool when every non-null row gives that answer.
    """
    if isinstance(value, float):
        if math.isnan(value):
            return op == "neq"
        if math.isinf(value):
            above = value > 0
            return {"eq": False, "neq": True, "lt": above, "lte": above, "gt": not above,
                    "gte": not above}[op]
        from ._numeric import fractional_cut

        return fractional_cut(op, math.floor(value))  # coerce_literal kept only fractional floats
    info = np.iinfo(ptype.np_dtype)
    if value < info.min:
        return {"eq": False, "neq": True, "lt": False, "lte": False, "gt": True, "gte": True}[op]
    if value > info.max:
        return {"eq": False, "neq": True, "lt": True, "lte": True, "gt": False, "gte": False}[op]
    return op, value


def _validity_of(array: Array) -> np.ndarray | None:
    from ._numeric import validity

    return validity(array)


# -- kernels -----------------------------------------------------------------------------


#: the comparison operators ``compare`` takes
OPS = tuple(_PC_OPS)


def _array_arg(func: str, array: Any) -> Array:
    """``array`` as a ``vortex_io.Array`` (Arrow arrays are wrapped); ``TypeError`` else."""
    if isinstance(array, Array):
        return array
    import pyarrow as pa

    if isinstance(array, (pa.Array, pa.ChunkedArray)):
        from .._arrow import from_arrow

        return from_arrow(array)
    from .._check import describe

    raise TypeError(f"{func}(): array must be a vortex_io.Array or a pyarrow array, "
                    f"not {describe(array)}")


def mask_to_array(m: Mask) -> Array:
    """A ``Mask`` as a ``vortex_io.Array`` of booleans (nullable when it has nulls)."""
    from ..encodings._bool import bool_array

    vals, valid = m
    if valid is None:
        return bool_array(vals)
    return bool_array(vals, bool_array(valid), nullable=True)


def compare(array: Array, value: Any, op: str) -> Array:
    """``array <op> value`` as a boolean ``vortex_io.Array`` with SQL null semantics (a
    null row gives null); ``value`` is a Python literal, ``op`` one of ``OPS`` (``"eq"``,
    ``"neq"``, ``"lt"``, ``"lte"``, ``"gt"``, ``"gte"``). Evaluated on the encoded data
    where the encoding allows.

    >>> import vortex_io as vio
    >>> compare(vio.array(["a", "b", None]), "a", "eq").to_pylist()
    [True, False, None]
    """
    return mask_to_array(compare_mask(_array_arg("compare", array), value, op))


def compare_mask(array: Array, value: Any, op: str) -> Mask:
    """``compare`` as a ``Mask`` (internal)."""
    if not isinstance(op, str) or op not in _PC_OPS:
        raise ValueError(f"compare(): op must be one of {', '.join(OPS)}, not {op!r}")
    return compare_storage(array, coerce_literal(array.dtype, value), op)


def compare_storage(array: Array, v: Any, op: str) -> Mask:
    """``compare`` with a literal already in the storage domain of the array's dtype (what
    ``coerce_literal`` returns): the entry point for kernels recursing into children."""
    n = len(array)
    s = _storage(array.dtype)
    if isinstance(s, dt.Primitive) and s.ptype.is_int:
        r = int_range_shortcut(s.ptype, v, op)
        if not isinstance(r, bool) and isinstance(v, float):
            r = int_range_shortcut(s.ptype, r[1], r[0])  # the rounded literal may be out of range
        if isinstance(r, bool):
            vals, _ = mask_const(n, r)
            valid = _validity_of(array)
            return (vals if valid is None else vals & valid), valid
        op, v = r
    res = array.vtable.compare(array, v, op)
    if res is not NotImplemented:
        return res
    return _compare_fallback(array, v, op)


def _arrow_storage(array: Array) -> Any:
    import pyarrow as pa

    a = array.to_arrow()
    if isinstance(array.dtype, dt.Extension):
        st = array.dtype.storage.to_arrow()
        a = (pa.chunked_array([c.view(st) for c in a.chunks], type=st)
             if isinstance(a, pa.ChunkedArray) else a.view(st))
    return a


def _arrow_literal(d: dt.DType, v: Any, t: Any) -> Any:
    import pyarrow as pa

    if isinstance(d, dt.Decimal):
        return pa.scalar(v) if not isinstance(v, _decimal.Decimal) else _decimal_scalar(v, t)
    if isinstance(v, float) and pa.types.is_integer(t):
        return pa.scalar(v, pa.float64())
    if isinstance(v, int) and pa.types.is_floating(t):
        return pa.scalar(float(v), type=t)  # (Arrow refuses ints past the float's mantissa)
    return pa.scalar(v, type=t)


def _decimal_scalar(v: _decimal.Decimal, t: Any) -> Any:
    import pyarrow as pa

    try:
        return pa.scalar(v, type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.scalar(v)  # more digits than the column: let Arrow compare at higher precision


def _compare_fallback(array: Array, v: Any, op: str) -> Mask:
    import pyarrow.compute as pc

    a = _arrow_storage(array)
    lit = _arrow_literal(_storage(array.dtype), v, a.type)
    if lit.type != a.type and not isinstance(_storage(array.dtype), dt.Decimal):
        a = a.cast(lit.type)
    return arrow_bool_to_mask(getattr(pc, _PC_OPS[op])(a, lit))


def is_in(array: Array, values: Any) -> Array:
    """``array IN values`` as a boolean ``vortex_io.Array`` (nulls in ``values`` never
    match; a null row gives null).

    >>> import vortex_io as vio
    >>> is_in(vio.array([1, 2, None, 4]), [2, 4]).to_pylist()
    [False, True, None, True]
    """
    array = _array_arg("is_in", array)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        from .._check import describe

        raise TypeError(f"is_in(): values must be a collection of literals, not {describe(values)}")
    return mask_to_array(is_in_mask(array, values))


def is_in_mask(array: Array, values: Any) -> Mask:
    """``is_in`` as a ``Mask`` (internal)."""
    return is_in_storage(array, [coerce_literal(array.dtype, x) for x in values if x is not None])


def is_in_storage(array: Array, vals: list[Any]) -> Mask:
    """``is_in`` with literals already in the storage domain (no nulls among them)."""
    if not vals:
        n = len(array)
        valid = _validity_of(array)
        return np.zeros(n, dtype=np.bool_), valid
    res = array.vtable.is_in(array, vals)
    if res is not NotImplemented:
        return res
    nan_lit = any(isinstance(x, float) and x != x for x in vals)
    import pyarrow as pa
    import pyarrow.compute as pc

    a = _arrow_storage(array)
    s = _storage(array.dtype)
    if isinstance(s, dt.Primitive) and s.ptype.is_int:
        info = np.iinfo(s.ptype.np_dtype)
        ints = [x for x in vals if isinstance(x, int) and info.min <= x <= info.max]
        vset = pa.array(ints, type=a.type)
    elif isinstance(s, dt.Decimal):  # a literal the column cannot hold matches nothing
        keep = []
        for x in vals:
            try:
                keep.append(pa.scalar(x, type=a.type).as_py())
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
                pass
        vset = pa.array(keep, type=a.type)
    else:
        if isinstance(s, dt.Primitive):  # floats: int literals as floats (Arrow refuses wide ints)
            vals = [float(x) if isinstance(x, int) else x for x in vals]
        try:
            vset = pa.array(vals, type=a.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            vset = pa.array(vals)
            a = a.cast(vset.type)
    res = pc.is_in(a, value_set=vset, skip_nulls=True)
    m = arrow_bool_to_mask(res)
    hit = m[0]
    if nan_lit and isinstance(s, dt.Primitive) and s.ptype.is_float:
        # NaN matches every NaN, as the encodings' kernels (isin_values) and the native core
        # match it (Arrow's is_in matches only the literal's NaN bit pattern)
        hit = hit | arrow_bool_to_mask(pc.is_nan(a).fill_null(False))[0]
    valid = _validity_of(array)
    return (hit if valid is None else hit & valid), valid


def is_null_mask(array: Array, *, invert: bool = False) -> np.ndarray:
    """True where null (or where valid with ``invert``)."""
    n = len(array)
    if not array.dtype.nullable:
        return np.full(n, invert, dtype=np.bool_)
    m = array.vtable.validity(array)
    if m is NotImplemented:  # the encoding cannot tell without decoding: ask the canonical
        c = array.canonical()
        m = c.vtable.validity(c)
        if m is NotImplemented:  # (a canonical encoding of a user's that lacks the hook)
            m = np.asarray(c.to_arrow().is_valid().to_numpy(zero_copy_only=False))
    if m is None:
        return np.full(n, invert, dtype=np.bool_)
    return m.copy() if invert else ~m



def is_null(array: Array, *, negated: bool = False) -> Array:
    """``IS NULL`` (``negated``: ``IS NOT NULL``) as a non-nullable boolean
    ``vortex_io.Array``.

    >>> import vortex_io as vio
    >>> is_null(vio.array([1, None])).to_pylist()
    [False, True]
    """
    return mask_to_array(is_null_result(_array_arg("is_null", array), negated=negated))


def is_null_result(array: Array, *, negated: bool = False) -> Mask:
    """``is_null`` as a ``Mask`` (internal): never null itself."""
    return is_null_mask(array, invert=negated), None


def take(array: Array, indices: Any) -> Array:
    """Rows at ``indices`` (int64), keeping encodings where the encoding allows."""
    idx = np.asarray(indices, dtype=np.int64)
    n = len(array)
    if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise IndexError(f"take index out of range for an array of {n} rows")
    res = array.vtable.take(array, idx)
    if res is not NotImplemented:
        return res
    import pyarrow as pa

    from .._arrow import from_arrow

    a = array.to_arrow()
    return from_arrow(a.take(pa.array(idx)), dtype=array.dtype)


def take_values(array: Array, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows at in-range int64 ``indices`` of a primitive-dtype array as numpy ``(values,
    validity mask or None)``: read straight from the encoded buffers where the encodings
    implement ``Encoding.take_values``, else taken and decoded."""
    res = array.vtable.take_values(array, indices)
    if res is not NotImplemented:
        return res
    from ..encodings._primitive import primitive_values
    from ._numeric import decoded

    c = decoded(take(array, indices))
    if c.encoding != "vortex.primitive":
        from .._errors import MalformedStreamError

        raise MalformedStreamError(f"{array.encoding} decoded to {c.dtype!r}")
    return primitive_values(c)


def take_arrow(array: Array, indices: np.ndarray, *, string_view: bool = False) -> Any:
    """Rows at in-range int64 ``indices`` as a ``pyarrow.Array``, decoded straight from
    the encoded buffers for primitive dtypes (``take_values``), their extensions
    (timestamps...) and dictionaries of strings; None for anything else (then ``take``
    and ``to_arrow``). ``string_view`` as in ``Array.to_arrow``."""
    import pyarrow as pa

    d = array.dtype
    if isinstance(d, dt.Primitive):
        vals, valid = take_values(array, indices)
        bitmap, nulls = None, 0
        if valid is not None and not valid.all():
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
            nulls = len(valid) - int(np.count_nonzero(valid))
        return pa.Array.from_buffers(d.to_arrow(), len(vals),
                                     [bitmap, pa.py_buffer(np.ascontiguousarray(vals))],
                                     null_count=nulls)
    if string_view:
        return arrow_hook(array.vtable.take_arrow, array, indices)
    return array.vtable.take_arrow(array, indices)


def filter(array: Array, mask: Any) -> Array:
    """Rows of ``array`` where ``mask`` is true (a null in it drops the row): ``mask`` is
    a boolean ``vortex_io.Array`` (what ``compare`` and ``is_in`` return), a
    ``pyarrow.BooleanArray``, a numpy bool array or a list of bools."""
    import pyarrow as pa

    array = _array_arg("filter", array)
    if isinstance(mask, tuple):  # an internal Mask
        mask = mask_true(mask)
    elif isinstance(mask, Array) or isinstance(mask, (pa.Array, pa.ChunkedArray)):
        a = mask.to_arrow() if isinstance(mask, Array) else mask
        if isinstance(a, pa.ChunkedArray):
            a = a.combine_chunks()
        if not pa.types.is_boolean(a.type):
            raise TypeError(f"filter(): mask must be booleans, not {a.type}")
        mask = arrow_bool_to_mask(a)
        mask = mask_true(mask)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"filter(): mask must be booleans, not an array of {mask.dtype}")
    if len(mask) != len(array):
        raise ValueError(f"filter mask of {len(mask)} rows for an array of {len(array)}")
    if mask.all():
        return array
    idx = np.flatnonzero(mask)
    if len(idx) and idx[-1] - idx[0] + 1 == len(idx):
        return array.slice(int(idx[0]), int(idx[-1]) + 1)
    return take(array, idx)

