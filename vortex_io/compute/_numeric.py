"""Building blocks of the compute kernels that the encodings implement
(``Encoding.compare`` / ``is_in`` / ``take`` / ``validity`` in ``vortex_io.encodings``).

Literals arrive in the storage domain of the array's dtype (see
``vortex_io.compute._kernels.coerce_literal``); a kernel result is a ``Mask``:
``(values, validity)`` numpy bool arrays, validity None when every result is valid, and
False in ``values`` wherever the result is null.
"""

from __future__ import annotations

import decimal as _decimal
import operator
from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array

__all__ = [
    "OPS",
    "FLIP",
    "py_compare",
    "with_validity",
    "broadcast",
    "validity",
    "bound_answer",
    "np_literal",
    "compare_values",
    "isin_values",
    "bool_compare",
    "decimal_unscaled",
    "gather_ranges",
    "bytes_equal_at",
    "is_sorted",
    "storage_of",
    "decoded",
    "decoded_ints",
    "int_bounds",
]

Mask = tuple[np.ndarray, "np.ndarray | None"]

#: numpy ufunc of each comparison operator
OPS = {"eq": np.equal, "neq": np.not_equal, "lt": np.less, "lte": np.less_equal,
       "gt": np.greater, "gte": np.greater_equal}
#: ``a op b`` is ``b FLIP[op] a`` (and ``-a op -b`` is ``a FLIP[op] b``)
FLIP = {"eq": "eq", "neq": "neq", "lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}
_PY = {"eq": operator.eq, "neq": operator.ne, "lt": operator.lt, "lte": operator.le,
       "gt": operator.gt, "gte": operator.ge}


def py_compare(a: Any, b: Any, op: str) -> bool:
    """``a op b`` on Python values."""
    return bool(_PY[op](a, b))


def storage_of(d: dt.DType) -> dt.DType:
    """The storage dtype of an extension dtype (else ``d``)."""
    return d.storage if isinstance(d, dt.Extension) else d


def with_validity(vals: np.ndarray, valid: np.ndarray | None) -> Mask:
    """A Mask from raw comparison results and a validity (nulls forced to False)."""
    if valid is None:
        return vals, None
    return vals & valid, valid


def broadcast(n: int, answer: bool, valid: np.ndarray | None) -> Mask:
    """Every valid row gives ``answer``."""
    if valid is None:
        return np.full(n, answer, dtype=np.bool_), None
    return (valid.copy() if answer else np.zeros(n, dtype=np.bool_)), valid


def validity(arr: Array) -> np.ndarray | None:
    """True where ``arr`` is valid, None when every row is; read through the encoding's
    ``validity`` kernel (no value decoding) when it has one."""
    if not arr.dtype.nullable:
        return None
    r = arr.vtable.validity(arr)
    if r is not NotImplemented:
        return r
    from ._kernels import is_null_mask

    m = is_null_mask(arr, invert=True)
    return None if m.all() else m


def bound_answer(op: str, lit: Any, lo: Any, hi: Any) -> bool | None:
    """The answer of ``x op lit`` shared by every ``x`` in ``[lo, hi]``, or None when it
    depends on ``x``."""
    if lit < lo:
        return op in ("neq", "gt", "gte")
    if lit > hi:
        return op in ("neq", "lt", "lte")
    if lo == hi:  # == lit
        return op in ("eq", "lte", "gte")
    if lit == lo:
        if op == "lt":
            return False
        if op == "gte":
            return True
    if lit == hi:
        if op == "gt":
            return False
        if op == "lte":
            return True
    return None


def np_literal(ptype: dt.PType, v: Any) -> Any:
    """``v`` as a numpy scalar of ``ptype`` (floats round to the type, as Arrow casts the
    literal), or None when it is not representable (out-of-range int, huge float...)."""
    t = ptype.np_dtype.type
    if ptype.is_int:
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            return None
        info = np.iinfo(ptype.np_dtype)
        if not info.min <= int(v) <= info.max:
            return None
        return t(int(v))
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    try:
        with np.errstate(over="ignore"):
            return t(float(v))  # ints as floats, as the fallback casts them
    except (OverflowError, ValueError):
        return None


def compare_values(vals: np.ndarray, ptype: dt.PType, v: Any, op: str) -> np.ndarray | None:
    """``vals op v`` for numpy values of ``ptype``; None when the literal does not fit."""
    lit = np_literal(ptype, v)
    if lit is None:
        return None
    return OPS[op](vals, lit)


def isin_values(vals: np.ndarray, ptype: dt.PType, values: list[Any]) -> np.ndarray:
    """Membership of numpy values of ``ptype`` in ``values`` with Arrow's ``is_in``
    semantics (floats match by bit pattern, NaN matches NaN; -0.0 and 0.0 differ)."""
    if ptype.is_int:
        lits = [x for x in (np_literal(ptype, v) for v in values) if x is not None]
        lits = list(dict.fromkeys(lits))
        if not lits:
            return np.zeros(len(vals), dtype=np.bool_)
        if len(lits) <= 8:
            out = vals == lits[0]
            for x in lits[1:]:
                out |= vals == x
            return out
        return np.isin(vals, np.array(lits, dtype=ptype.np_dtype))
    lits_f = [x for x in (np_literal(ptype, v) for v in values) if x is not None]
    ut = ptype.to_unsigned().np_dtype
    nan = any(x != x for x in lits_f)
    bits = list(dict.fromkeys(np.array([x for x in lits_f if x == x], dtype=ptype.np_dtype)
                              .view(ut).tolist()))
    vb = vals.view(ut)
    if len(bits) <= 8:
        out = np.zeros(len(vals), dtype=np.bool_)
        for b in bits:
            out |= vb == ut.type(b)
    else:
        out = np.isin(vb, np.array(bits, dtype=ut))
    if nan:
        out |= np.isnan(vals)
    return out


def bool_compare(vals: np.ndarray, v: Any, op: str) -> np.ndarray:
    """``vals op v`` on booleans (False < True)."""
    return OPS[op](vals, bool(v))


def decimal_unscaled(d: dt.Decimal, v: Any, op: str) -> tuple[str, int] | bool | None:
    """A decimal comparison rewritten on the unscaled integers: (op, int), or a bool when
    every non-null row gives that answer (a literal with more fraction digits than the
    scale), or None for a literal that is not a finite number."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = _decimal.Decimal(v)
    if not isinstance(v, _decimal.Decimal) or not v.is_finite():
        return None
    with _decimal.localcontext() as ctx:
        ctx.prec = max(100, len(v.as_tuple().digits) + abs(d.scale) + 10)
        scaled = v.scaleb(d.scale)
        fl = int(scaled.to_integral_value(rounding=_decimal.ROUND_FLOOR))
        exact = scaled == fl
    return (op, fl) if exact else fractional_cut(op, fl)


def fractional_cut(op: str, floor: int) -> tuple[str, int] | bool:
    """An integer comparison with a literal strictly between ``floor`` and ``floor + 1``:
    ``x < 2.5`` is ``x <= 2``, ``x > 2.5`` is ``x >= 3``; ``==`` is never true, ``!=``
    always (for non-null rows)."""
    if op == "eq":
        return False
    if op == "neq":
        return True
    if op in ("lt", "lte"):
        return "lte", floor
    return "gte", floor + 1


def gather_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Positions ``starts[i] .. starts[i] + lengths[i]`` of every range, back to back (int64)."""
    lengths = lengths.astype(np.int64, copy=False)
    total = int(lengths.sum()) if len(lengths) else 0
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    shift = starts.astype(np.int64) - (ends - lengths)
    out = np.repeat(shift, lengths)
    out += np.arange(total, dtype=np.int64)
    return out


def is_sorted(idx: np.ndarray) -> bool:
    """True when ``idx`` is non-decreasing."""
    return len(idx) < 2 or bool((idx[1:] >= idx[:-1]).all())


def decoded(a: Array) -> Array:
    """``a`` decoded to a canonical array as kernel scratch: not cached on ``a`` and not
    counted as canonicalized by a scan (an already cached canonical form is reused)."""
    c = a.cached_canonical
    return c if c is not None else a.vtable.canonicalize(a)


def decoded_ints(a: Array, what: str) -> np.ndarray:
    """The values of an integer child (codes, offsets, lengths...) as kernel scratch,
    rejecting nulls (``MalformedStreamError``)."""
    from .._errors import MalformedStreamError
    from ..encodings._primitive import primitive_values

    c = decoded(a)
    if (c.encoding != "vortex.primitive" or not isinstance(c.dtype, dt.Primitive)
            or not c.dtype.ptype.is_int):
        raise MalformedStreamError(f"{what} must be integers, not {c.dtype!r}")
    vals, valid = primitive_values(c)
    if valid is not None and not valid.all():
        raise MalformedStreamError(f"{what} contain nulls")
    return vals


def int_bounds(a: Array) -> tuple[int, int] | None:
    """(lo, hi) bounding every value of an integer array (rows under nulls included),
    from the encoding when it knows them cheaply (bit width, reference, constant...), or
    None (``Encoding.int_bounds``)."""
    if len(a) == 0:
        return None
    return a.vtable.int_bounds(a)


def bytes_equal_at(data: np.ndarray, starts: np.ndarray, needle: bytes) -> np.ndarray:
    """For each start, whether ``data[start : start + len(needle)] == needle`` (the ranges
    must lie inside ``data``). Candidates are narrowed byte by byte while there are many,
    then compared as one 2-D block (bounded to a few million bytes)."""
    k, m = len(starts), len(needle)
    ok = np.ones(k, dtype=np.bool_)
    if m == 0 or k == 0:
        return ok
    nd = np.frombuffer(needle, dtype=np.uint8)
    st = starts.astype(np.int64, copy=False)
    live = np.arange(k)
    j = 0
    while j < m and len(live):
        if len(live) * (m - j) <= 1 << 22:
            pos = st[live][:, None] + np.arange(j, m, dtype=np.int64)
            eq = (data[pos] == nd[j:]).all(axis=1)
            ok[live[~eq]] = False
            return ok
        hit = data[st[live] + j] == nd[j]
        ok[live[~hit]] = False
        live = live[hit]
        j += 1
    return ok


def needle_bytes(v: Any) -> bytes | None:
    """A string/binary literal as bytes (None when it is neither)."""
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    return None
