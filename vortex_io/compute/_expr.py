"""Filter expressions: ``col``, ``lit``, comparisons, ``&``/``|``/``~``, ``is_in``,
``is_null``, ``between``. SQL three-valued logic: a comparison with a null is null, and a
filter keeps only the rows where the predicate is true.

>>> from vortex_io.expr import col
>>> e = (col("symbol") == "AAPL") & col("price").between(10, 20) & ~col("side").is_null()
>>> e
(((col('symbol') == 'AAPL') & ((col('price') >= 10) & (col('price') <= 20))) & ~col('side').is_null())
>>> sorted(e.columns())
['price', 'side', 'symbol']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

__all__ = [
    "Expr",
    "Column",
    "Literal",
    "Compare",
    "And",
    "Or",
    "Not",
    "IsIn",
    "IsNull",
    "col",
    "lit",
    "OPS",
    "FLIP",
]

OPS = ("eq", "neq", "lt", "lte", "gt", "gte")
_SYM = {"eq": "==", "neq": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
#: the operator after swapping the operands (``lit < col`` is ``col > lit``)
FLIP = {"eq": "eq", "neq": "neq", "lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}
#: the operator of the negation (``~(a < b)`` is ``a >= b`` for non-null operands)
NEGATE = {"eq": "neq", "neq": "eq", "lt": "gte", "lte": "gt", "gt": "lte", "gte": "lt"}


def _wrap(v: Any) -> Expr:
    return v if isinstance(v, Expr) else Literal(v)


class Expr:
    """Base of expressions. Combine with ``& | ~`` (not ``and``/``or``/``not``)."""

    __slots__ = ()

    def _cmp(self, op: str, other: Any) -> Compare:
        return Compare(op, self, _wrap(other))

    def __eq__(self, other: Any) -> Compare:  # type: ignore[override]
        return self._cmp("eq", other)

    def __ne__(self, other: Any) -> Compare:  # type: ignore[override]
        return self._cmp("neq", other)

    def __lt__(self, other: Any) -> Compare:
        return self._cmp("lt", other)

    def __le__(self, other: Any) -> Compare:
        return self._cmp("lte", other)

    def __gt__(self, other: Any) -> Compare:
        return self._cmp("gt", other)

    def __ge__(self, other: Any) -> Compare:
        return self._cmp("gte", other)

    def __and__(self, other: Any) -> And:
        return And(self, _wrap(other))

    def __rand__(self, other: Any) -> And:
        return And(_wrap(other), self)

    def __or__(self, other: Any) -> Or:
        return Or(self, _wrap(other))

    def __ror__(self, other: Any) -> Or:
        return Or(_wrap(other), self)

    def __invert__(self) -> Not:
        return Not(self)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError("an expression has no truth value: combine with & | ~, not and/or/not")

    def is_in(self, values: Iterable[Any]) -> IsIn:
        return IsIn(self, tuple(values))

    def is_null(self) -> IsNull:
        return IsNull(self, False)

    def is_not_null(self) -> IsNull:
        return IsNull(self, True)

    def between(self, lo: Any, hi: Any) -> And:
        """``lo <= self <= hi`` (both ends inclusive, as SQL BETWEEN)."""
        return And(self >= lo, self <= hi)

    def columns(self) -> set[str]:
        """Names of the columns the expression reads."""
        out: set[str] = set()
        self._collect(out)
        return out

    def _collect(self, out: set[str]) -> None:
        for c in self.children():
            c._collect(out)

    def children(self) -> tuple[Expr, ...]:
        return ()

    def same_as(self, other: Expr) -> bool:
        """Structural equality (``==`` builds an expression instead)."""
        return repr(self) == repr(other)


class Column(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _collect(self, out: set[str]) -> None:
        out.add(self.name)

    def __repr__(self) -> str:
        return f"col({self.name!r})"


class Literal(Expr):
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


class Compare(Expr):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Expr, right: Expr) -> None:
        if op not in OPS:
            raise ValueError(f"unknown comparison {op!r}")
        self.op, self.left, self.right = op, left, right

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def normalized(self) -> tuple[str, Expr, Expr]:
        """(op, column side, other side) with a column on the left when there is one."""
        if isinstance(self.right, Column) and not isinstance(self.left, Column):
            return FLIP[self.op], self.right, self.left
        return self.op, self.left, self.right

    def __repr__(self) -> str:
        return f"({self.left!r} {_SYM[self.op]} {self.right!r})"


class _Connective(Expr):
    """A boolean connective of two predicates (``And``, ``Or``)."""

    __slots__ = ("left", "right")
    _symbol: ClassVar[str] = ""

    def __init__(self, left: Expr, right: Expr) -> None:
        self.left, self.right = left, right

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def __repr__(self) -> str:
        return f"({self.left!r} {self._symbol} {self.right!r})"


class And(_Connective):
    __slots__ = ()
    _symbol = "&"


class Or(_Connective):
    __slots__ = ()
    _symbol = "|"


class Not(Expr):
    __slots__ = ("child",)

    def __init__(self, child: Expr) -> None:
        self.child = child

    def children(self) -> tuple[Expr, ...]:
        return (self.child,)

    def __repr__(self) -> str:
        return f"~{self.child!r}"


class IsIn(Expr):
    __slots__ = ("child", "values")

    def __init__(self, child: Expr, values: tuple[Any, ...]) -> None:
        self.child, self.values = child, values

    def children(self) -> tuple[Expr, ...]:
        return (self.child,)

    def __repr__(self) -> str:
        return f"{self.child!r}.is_in({list(self.values)!r})"


class IsNull(Expr):
    __slots__ = ("child", "negated")

    def __init__(self, child: Expr, negated: bool) -> None:
        self.child, self.negated = child, negated

    def children(self) -> tuple[Expr, ...]:
        return (self.child,)

    def __repr__(self) -> str:
        return f"{self.child!r}.{'is_not_null' if self.negated else 'is_null'}()"


def col(name: str) -> Column:
    """A reference to a column (a field of the stream's struct dtype)."""
    return Column(name)


def lit(value: Any) -> Literal:
    """A literal value; coerced to the type of the column it is compared with."""
    return Literal(value)


def conjuncts(e: Expr) -> list[Expr]:
    """The AND-separated parts of an expression."""
    if isinstance(e, And):
        return conjuncts(e.left) + conjuncts(e.right)
    return [e]
