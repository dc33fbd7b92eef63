"""Lowering a filter expression into the native core's predicate (``native/src/scan.h``).

Literals are coerced to each column's storage domain here, with the reference's rules
(``vortex_io.compute._kernels.coerce_literal`` and its integer/decimal rewrites), so the
native kernels see only what they can compare exactly: in-range integers, floats, bytes,
bools. Every comparison also carries its literal as the pruning rules
(``vortex_io.compute._evaluate.can_skip``) compare it with statistics. An expression with a
part the native core does not evaluate (a column compared with a column, a list column,
a non-boolean literal) lowers to None and the scan runs in Python.

>>> from vortex_io import dtype as dt
>>> from vortex_io.expr import col
>>> d = dt.Struct(["x"], [dt.int64()])
>>> lower(col("x") > 2.5, d)[0:3]
('cmp', 0, 5)
"""

from __future__ import annotations

import decimal as _decimal
import math
from typing import Any

import numpy as np

from . import dtype as dt
from .compute._expr import And, Column, Compare, Expr, IsIn, IsNull, Literal, Not, Or
from .compute._kernels import coerce_literal, int_range_shortcut
from .compute._numeric import decimal_unscaled

__all__ = ["lower"]

_OP = {"eq": 0, "neq": 1, "lt": 2, "lte": 3, "gt": 4, "gte": 5}
_I128 = (-(1 << 127), (1 << 127) - 1)


class _NotNative(Exception):
    pass


def _int_bytes(v: int) -> bytes:
    return int(v).to_bytes(16, "little", signed=True)


def _storage(d: dt.DType) -> dt.DType:
    return d.storage if isinstance(d, dt.Extension) else d


def _plit(s: dt.DType, v: Any) -> tuple[Any, ...] | None:
    """The literal as the pruning rules compare it (None: they never prune on it)."""
    if isinstance(s, dt.Primitive):
        if isinstance(v, float):
            if math.isnan(v):
                return ("f", v)
            if math.isinf(v):
                return ("i", _int_bytes(0), False, 1 if v > 0 else -1)
            if s.ptype.is_int:
                return ("i", _int_bytes(math.floor(v)), not float(v).is_integer(), 0)
            return ("f", v)
        if isinstance(v, int):
            if v > _I128[1]:
                return ("i", _int_bytes(0), False, 1)
            if v < _I128[0]:
                return ("i", _int_bytes(0), False, -1)
            return ("i", _int_bytes(v), False, 0)
        return None
    if isinstance(s, dt.Decimal):
        if isinstance(v, int) and not isinstance(v, bool):
            v = _decimal.Decimal(v)
        if not isinstance(v, _decimal.Decimal) or v.is_nan():
            return None
        if v.is_infinite():
            return ("i", _int_bytes(0), False, 1 if v > 0 else -1)
        with _decimal.localcontext() as ctx:
            ctx.prec = max(100, len(v.as_tuple().digits) + abs(s.scale) + 10)
            scaled = v.scaleb(s.scale)
            fl = int(scaled.to_integral_value(rounding=_decimal.ROUND_FLOOR))
            frac = scaled != fl
        if not _I128[0] <= fl <= _I128[1]:
            return ("i", _int_bytes(0), False, 1 if fl > 0 else -1)
        return ("i", _int_bytes(fl), frac, 0)
    if isinstance(s, dt.Utf8) and isinstance(v, str):
        return ("b", v.encode("utf-8"))
    if isinstance(s, dt.Binary) and isinstance(v, bytes):
        return ("b", v)
    if isinstance(s, dt.Bool) and isinstance(v, bool):
        return ("o", v)
    return None


def _eval_int(ptype: dt.PType | None, v: int, op: str) -> tuple[str, Any]:
    """(op, literal) or ("const", answer) for an integer comparison."""
    lo, hi = _I128
    if ptype is not None:
        info = np.iinfo(ptype.np_dtype)
        lo, hi = int(info.min), int(info.max)
    if v < lo:
        return "const", op in ("neq", "gt", "gte")
    if v > hi:
        return "const", op in ("neq", "lt", "lte")
    return op, ("i", _int_bytes(v))


def _lower_cmp(f: int, fd: dt.DType, op: str, v: Any) -> tuple[Any, ...]:
    s = _storage(fd)
    prune = _plit(s, v)
    pr = None if prune is None else (_OP[op], prune)
    if isinstance(s, dt.Primitive) and s.ptype.is_int:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _NotNative
        if isinstance(v, float):
            r = int_range_shortcut(s.ptype, v, op)  # NaN, infinities, fractions
            if isinstance(r, bool):
                return ("cmpconst", f, r, pr)
            op, v = r
        op2, lit = _eval_int(s.ptype, int(v), op)
        if op2 == "const":
            return ("cmpconst", f, lit, pr)
        return ("cmp", f, _OP[op2], lit, pr)
    if isinstance(s, dt.Primitive):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _NotNative
        try:
            x = float(v)
        except OverflowError:
            raise _NotNative from None
        return ("cmp", f, _OP[op], ("f", x), pr)
    if isinstance(s, dt.Decimal):
        u = decimal_unscaled(s, v, op)
        if u is None:
            raise _NotNative
        r = u
        if isinstance(r, bool):
            return ("cmpconst", f, r, pr)
        op2, lit = _eval_int(None, r[1], r[0])
        if op2 == "const":
            return ("cmpconst", f, lit, pr)
        return ("cmp", f, _OP[op2], lit, pr)
    if isinstance(s, dt.Utf8) and isinstance(v, str):
        return ("cmp", f, _OP[op], ("b", v.encode("utf-8")), pr)
    if isinstance(s, dt.Binary) and isinstance(v, bytes):
        return ("cmp", f, _OP[op], ("b", v), pr)
    if isinstance(s, dt.Bool) and isinstance(v, bool):
        return ("cmp", f, _OP[op], ("o", v), pr)
    raise _NotNative


def _lower_in(f: int, fd: dt.DType, vals: list[Any]) -> tuple[Any, ...]:
    s = _storage(fd)
    lits: list[tuple[Any, ...]] = []
    for v in vals:
        if isinstance(s, dt.Primitive) and s.ptype.is_int:
            if isinstance(v, int) and not isinstance(v, bool):
                info = np.iinfo(s.ptype.np_dtype)
                if int(info.min) <= v <= int(info.max):
                    lits.append(("i", _int_bytes(v)))
        elif isinstance(s, dt.Primitive):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                try:
                    lits.append(("f", float(v)))
                except OverflowError:
                    pass
        elif isinstance(s, dt.Decimal):
            r = decimal_unscaled(s, v, "eq")
            if isinstance(r, tuple) and _I128[0] <= r[1] <= _I128[1]:
                lits.append(("i", _int_bytes(r[1])))
            elif r is None:
                raise _NotNative
        elif isinstance(s, dt.Utf8) and isinstance(v, str):
            lits.append(("b", v.encode("utf-8")))
        elif isinstance(s, dt.Binary) and isinstance(v, bytes):
            lits.append(("b", v))
        elif isinstance(s, dt.Bool) and isinstance(v, bool):
            lits.append(("o", v))
        else:
            raise _NotNative
    plits = [_plit(s, v) for v in vals]
    return ("in", f, lits, None if any(p is None for p in plits) else plits)


def _lower(e: Expr, d: dt.Struct) -> tuple[Any, ...]:
    def field(name: str) -> tuple[int, dt.DType]:
        try:
            i = d.names.index(name)
        except ValueError:
            raise _NotNative from None
        return i, d.dtypes[i]

    if isinstance(e, Compare):
        op, left, right = e.normalized()
        if not (isinstance(left, Column) and isinstance(right, Literal)):
            raise _NotNative
        f, fd = field(left.name)
        if right.value is None:
            return ("cmpnull", f)
        try:
            v = coerce_literal(fd, right.value)
        except (TypeError, ValueError, OverflowError):
            raise _NotNative from None
        return _lower_cmp(f, fd, op, v)
    if isinstance(e, And):
        return ("and", _lower(e.left, d), _lower(e.right, d))
    if isinstance(e, Or):
        return ("or", _lower(e.left, d), _lower(e.right, d))
    if isinstance(e, Not):
        return ("not", _lower(e.child, d))
    if isinstance(e, IsIn):
        if not isinstance(e.child, Column):
            raise _NotNative
        f, fd = field(e.child.name)
        try:
            vals = [coerce_literal(fd, x) for x in e.values if x is not None]
        except (TypeError, ValueError, OverflowError):
            raise _NotNative from None
        return _lower_in(f, fd, vals)
    if isinstance(e, IsNull):
        if not isinstance(e.child, Column):
            raise _NotNative
        f, _ = field(e.child.name)
        return ("isnull", f, bool(e.negated))
    if isinstance(e, Literal):
        if e.value is None:
            return ("const", -1)
        if isinstance(e.value, (bool, np.bool_)):
            return ("const", 1 if e.value else 0)
        raise _NotNative
    if isinstance(e, Column):
        f, fd = field(e.name)
        if not isinstance(fd, dt.Bool):
            raise _NotNative
        return ("col", f)
    raise _NotNative


def lower(e: Expr | None, d: dt.DType) -> tuple[Any, ...] | None:
    """The native predicate of ``e`` over a stream of struct dtype ``d`` (None when some
    part of it is evaluated by Python only)."""
    if e is None or not isinstance(d, dt.Struct):
        return None
    try:
        return _lower(e, d)
    except _NotNative:
        return None
