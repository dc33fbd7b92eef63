"""Filter expressions (``vortex_io.expr.col("x") == 1``); see ``vortex_io.compute._expr``."""

from .compute._expr import (
    And,
    Column,
    Compare,
    Expr,
    IsIn,
    IsNull,
    Literal,
    Not,
    Or,
    col,
    conjuncts,
    lit,
)

__all__ = ["And", "Column", "Compare", "Expr", "IsIn", "IsNull", "Literal", "Not", "Or", "col",
           "conjuncts", "lit"]
