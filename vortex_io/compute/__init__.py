"""Lazy compute on encoded arrays: expressions, kernels (dispatched by encoding, with a
canonical fallback), evaluation with SQL null semantics, and statistics pruning."""

from ._evaluate import can_skip, check_expr, evaluate
from ._expr import col, lit
from ._kernels import Mask, compare, filter, is_in, is_null, take

__all__ = [
    "Mask",
    "can_skip",
    "check_expr",
    "col",
    "compare",
    "evaluate",
    "filter",
    "is_in",
    "is_null",
    "lit",
    "take",
]
