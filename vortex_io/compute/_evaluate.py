"""Evaluate filter expressions on (struct) arrays, and prune chunks by their statistics."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .. import dtype as dt
from .._array import Array
from .._errors import ColumnNotFoundError, TypeMismatchError
from ._expr import And, Column, Compare, Expr, IsIn, IsNull, Literal, Not, Or
from ._kernels import (
    Mask,
    arrow_bool_to_mask,
    coerce_literal,
    compare_mask,
    is_in_mask,
    is_null_result,
    mask_and,
    mask_const,
    mask_not,
    mask_or,
)

__all__ = ["evaluate", "evaluate_mask", "can_skip", "check_expr"]


def _field(batch: Array, name: str) -> Array:
    if not isinstance(batch.dtype, dt.Struct):
        raise TypeError(f"column references need a struct array, not {batch.dtype!r}")
    if name not in batch.dtype.names:
        raise ColumnNotFoundError(name, batch.dtype.names)
    return batch.field(name)


def _literal(d: dt.DType, value: Any, column: str) -> Any:
    """``coerce_literal(d, value)``, its error naming ``column``."""
    try:
        return coerce_literal(d, value)
    except TypeMismatchError as e:
        raise e.name_column(column) from None


def check_expr(e: Expr, d: dt.DType) -> None:
    """Raise early if ``e`` cannot be evaluated against dtype ``d``: a column ``d`` does not
    have (``vortex_io.ColumnNotFoundError``, a ``KeyError``), a literal a column cannot be
    compared with (``vortex_io.TypeMismatchError``, a ``TypeError``).

    >>> import vortex_io as vio
    >>> from vortex_io.expr import col
    >>> d = vio.dtype.Struct(["x"], [vio.dtype.int64()])
    >>> check_expr(col("y") > 1, d)
    Traceback (most recent call last):
    ...
    vortex_io.ColumnNotFoundError: no column 'y'; columns are ['x']
    >>> check_expr(col("x") == "a", d)
    Traceback (most recent call last):
    ...
    vortex_io.TypeMismatchError: cannot compare column 'x' (i64) with 'a' (str)
    """
    if isinstance(e, Column):
        if not isinstance(d, dt.Struct) or e.name not in d.names:
            raise ColumnNotFoundError(e.name, d.names if isinstance(d, dt.Struct) else ())
        return
    if isinstance(e, Compare):
        _, left, right = e.normalized()
        check_expr(left, d)
        check_expr(right, d)
        if isinstance(left, Column) and isinstance(right, Literal) and right.value is not None:
            _literal(cast(dt.Struct, d).field(left.name), right.value, left.name)
        return
    if isinstance(e, IsIn) and isinstance(e.child, Column):
        check_expr(e.child, d)
        fd = cast(dt.Struct, d).field(e.child.name)
        for v in e.values:
            if v is not None:
                _literal(fd, v, e.child.name)
        return
    for c in e.children():
        check_expr(c, d)


def evaluate(e: Expr, batch: Array) -> Array:
    """The predicate ``e`` over the rows of the struct array ``batch``, as a boolean
    ``vortex_io.Array`` (null where SQL says the predicate is null).

    >>> import pyarrow as pa, vortex_io as vio
    >>> from vortex_io.expr import col
    >>> t = vio.array(pa.table({"x": [1, 2, None]}))
    >>> evaluate(col("x") > 1, t).to_pylist()
    [False, True, None]
    """
    from ._kernels import mask_to_array

    if not isinstance(e, Expr):
        from .._check import describe

        raise TypeError(f"evaluate(): e must be a vortex_io.expr expression, not {describe(e)}")
    if not isinstance(batch, Array):
        from .._check import describe

        raise TypeError(f"evaluate(): batch must be a vortex_io.Array, not {describe(batch)}")
    return mask_to_array(evaluate_mask(e, batch))


def evaluate_mask(e: Expr, batch: Array) -> Mask:
    """The predicate's Mask over the rows of ``batch`` (internal: what the scan uses)."""
    n = len(batch)
    if isinstance(e, Compare):
        op, left, right = e.normalized()
        if isinstance(left, Column) and isinstance(right, Literal):
            if right.value is None:
                return mask_const(n, None)
            try:
                return compare_mask(_field(batch, left.name), right.value, op)
            except TypeMismatchError as exc:
                raise exc.name_column(left.name) from None
        return _arrow_eval(e, batch)
    if isinstance(e, And):
        a = evaluate_mask(e.left, batch)
        if not a[0].any() and a[1] is None:
            return a  # all false: the right side cannot change that
        return mask_and(a, evaluate_mask(e.right, batch))
    if isinstance(e, Or):
        return mask_or(evaluate_mask(e.left, batch), evaluate_mask(e.right, batch))
    if isinstance(e, Not):
        return mask_not(evaluate_mask(e.child, batch))
    if isinstance(e, IsIn):
        if isinstance(e.child, Column):
            try:
                return is_in_mask(_field(batch, e.child.name), e.values)
            except TypeMismatchError as exc:
                raise exc.name_column(e.child.name) from None
        return _arrow_eval(e, batch)
    if isinstance(e, IsNull):
        if isinstance(e.child, Column):
            return is_null_result(_field(batch, e.child.name), negated=e.negated)
        return _arrow_eval(e, batch)
    if isinstance(e, Literal):
        if e.value is None:
            return mask_const(n, None)
        if isinstance(e.value, (bool, np.bool_)):
            return mask_const(n, bool(e.value))
        raise TypeError(f"a filter must be boolean, not the literal {e.value!r}")
    if isinstance(e, Column):
        f = _field(batch, e.name)
        if not isinstance(f.dtype, dt.Bool):
            raise TypeError(f"column {e.name!r} is {f.dtype!r}, not bool: it cannot be a filter")
        return arrow_bool_to_mask(f.to_arrow())
    raise TypeError(f"cannot evaluate {e!r}")


def _arrow_eval(e: Expr, batch: Array) -> Mask:
    """Fallback for shapes without a kernel (column vs column...): pyarrow.compute."""
    import pyarrow.compute as pc

    def ev(x: Expr) -> Any:
        if isinstance(x, Column):
            return _field(batch, x.name).to_arrow()
        if isinstance(x, Literal):
            import pyarrow as pa

            return pa.scalar(x.value)
        if isinstance(x, Compare):
            names = {"eq": "equal", "neq": "not_equal", "lt": "less", "lte": "less_equal",
                     "gt": "greater", "gte": "greater_equal"}
            return getattr(pc, names[x.op])(ev(x.left), ev(x.right))
        if isinstance(x, IsNull):
            v = ev(x.child)
            return pc.is_valid(v) if x.negated else pc.is_null(v)
        if isinstance(x, IsIn):
            import pyarrow as pa

            return pc.is_in(ev(x.child), value_set=pa.array(list(x.values)))
        if isinstance(x, And):
            return pc.and_kleene(ev(x.left), ev(x.right))
        if isinstance(x, Or):
            return pc.or_kleene(ev(x.left), ev(x.right))
        if isinstance(x, Not):
            return pc.invert(ev(x.child))
        raise TypeError(f"cannot evaluate {x!r}")

    return arrow_bool_to_mask(ev(e))


# -- pruning -------------------------------------------------------------------------------------


def _bounds(a: Array) -> tuple[Any, Any, int | None, bool]:
    """(min, max, null_count, exact) in the storage domain from stats or a constant."""
    if a.encoding == "vortex.constant":
        from ..encodings._constant import constant_value

        v = constant_value(a)
        if v is None:
            return None, None, len(a), True
        return v, v, 0, True
    st = a._stats
    if st is None:
        return None, None, None, False
    return st.min_value(a.dtype), st.max_value(a.dtype), st.null_count, True


def can_skip(e: Expr, batch: Array) -> bool:
    """True when statistics prove that no row of ``batch`` satisfies ``e``."""
    try:
        return _skip(e, batch)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return False


def _cmp_key(d: dt.DType, v: Any) -> Any:
    s = d.storage if isinstance(d, dt.Extension) else d
    if isinstance(s, dt.Decimal):
        import decimal

        return decimal.Decimal(v).scaleb(-s.scale) if isinstance(v, int) else v
    return v if not isinstance(v, str) or isinstance(s, dt.Utf8) else coerce_literal(d, v)


def _skip(e: Expr, batch: Array) -> bool:
    n = len(batch)
    if n == 0:
        return True
    if isinstance(e, And):
        return _skip(e.left, batch) or _skip(e.right, batch)
    if isinstance(e, Or):
        return _skip(e.left, batch) and _skip(e.right, batch)
    if isinstance(e, IsNull) and isinstance(e.child, Column):
        f = _field(batch, e.child.name)
        _, _, nulls, _ = _bounds(f)
        if not f.dtype.nullable:
            return not e.negated
        if nulls is None:
            return False
        return nulls == len(f) if e.negated else nulls == 0
    if isinstance(e, Compare):
        op, left, right = e.normalized()
        if not (isinstance(left, Column) and isinstance(right, Literal)):
            return False
        if right.value is None:
            return True  # comparison with null is never true
        f = _field(batch, left.name)
        lo, hi, nulls, _ = _bounds(f)
        if nulls is not None and nulls == len(f):
            return True
        if lo is None or hi is None:
            return False
        v = coerce_literal(f.dtype, right.value)
        lo, hi = _cmp_key(f.dtype, lo), _cmp_key(f.dtype, hi)
        if isinstance(lo, float) and (lo != lo or hi != hi):
            return False  # NaN bounds prove nothing
        if op == "eq":
            return bool(v < lo or v > hi)
        if op == "neq":
            return bool(lo == hi == v)
        if op == "lt":
            return bool(lo >= v)
        if op == "lte":
            return bool(lo > v)
        if op == "gt":
            return bool(hi <= v)
        return bool(hi < v)  # gte
    if isinstance(e, IsIn) and isinstance(e.child, Column):
        f = _field(batch, e.child.name)
        lo, hi, nulls, _ = _bounds(f)
        if nulls is not None and nulls == len(f):
            return True
        if lo is None or hi is None:
            return False
        lo, hi = _cmp_key(f.dtype, lo), _cmp_key(f.dtype, hi)
        vals = [coerce_literal(f.dtype, x) for x in e.values if x is not None]
        return all(v < lo or v > hi for v in vals)
    return False
