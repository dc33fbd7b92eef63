"""The public compute functions return arrays (a boolean ``vortex_io.Array``), not the
internal ``(values, validity)`` mask tuple; ``filter`` takes what they return, Arrow
booleans and numpy masks; wrong arguments are TypeErrors naming the parameter."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io import compute
from vortex_io import dtype as dt
from vortex_io.encodings._dict import dict_encode
from vortex_io.expr import col

VALUES = [1, 5, None, 7, 5]


def bools(a: vio.Array) -> list:
    assert isinstance(a, vio.Array) and isinstance(a.dtype, dt.Bool)
    return a.to_pylist()


@pytest.mark.parametrize("make", [lambda: vio.array(VALUES), lambda: vio.compress(vio.array(VALUES)),
                                  lambda: dict_encode(vio.array(VALUES))])
def test_predicates_return_boolean_arrays(make):
    a = make()
    assert bools(compute.compare(a, 5, "gte")) == [False, True, None, True, True]
    assert bools(compute.compare(a, 5, "eq")) == [False, True, None, False, True]
    assert bools(compute.is_in(a, [1, 7, None])) == [True, False, None, True, False]
    assert bools(compute.is_null(a)) == [False, False, True, False, False]
    assert bools(compute.is_null(a, negated=True)) == [True, True, False, True, True]
    assert not compute.is_null(a).dtype.nullable  # never null itself
    assert compute.compare(a, 5, "gte").dtype.nullable  # null rows give null
    assert not compute.compare(vio.array([1, 2]), 1, "eq").dtype.nullable


def test_filter_takes_what_the_predicates_return():
    a = vio.array(VALUES)
    m = compute.compare(a, 5, "gte")
    assert compute.filter(a, m).to_pylist() == [5, 7, 5]  # a null drops the row
    assert compute.filter(a, m.to_arrow()).to_pylist() == [5, 7, 5]
    assert compute.filter(a, pa.array([True, False, None, False, True])).to_pylist() == [1, 5]
    assert compute.filter(a, np.array([0, 1, 0, 0, 0], dtype=bool)).to_pylist() == [5]
    assert compute.filter(a, [True] * 5).to_pylist() == VALUES
    with pytest.raises(TypeError, match="mask must be booleans"):
        compute.filter(a, pa.array([1, 0, 1, 0, 1]))
    with pytest.raises(TypeError, match="mask must be booleans"):
        compute.filter(a, np.arange(5))


def test_evaluate_returns_a_boolean_array():
    t = vio.array(pa.table({"x": VALUES, "s": ["a", "b", "a", None, "b"]}))
    m = compute.evaluate((col("x") > 1) & (col("s") == "b"), t)
    assert bools(m) == [False, True, False, None, True]  # null AND false is false
    assert compute.filter(t, m).to_arrow().to_pylist() == [{"x": 5, "s": "b"}, {"x": 5, "s": "b"}]


def test_arrow_arrays_are_accepted_and_other_arguments_refused():
    assert bools(compute.compare(pa.array([1, 2]), 2, "eq")) == [False, True]
    with pytest.raises(TypeError, match=r"compare\(\): array must be a vortex_io.Array or a "
                                        r"pyarrow array, not list"):
        compute.compare([1, 2], 1, "eq")
    with pytest.raises(ValueError, match="op must be one of eq, neq, lt, lte, gt, gte, not '=='"):
        compute.compare(vio.array([1]), 1, "==")
    with pytest.raises(TypeError, match=r"is_in\(\): values must be a collection"):
        compute.is_in(vio.array(["a"]), "a")
    with pytest.raises(TypeError, match=r"evaluate\(\): e must be a vortex_io.expr expression"):
        compute.evaluate("x > 1", vio.array(pa.table({"x": [1]})))


def test_the_mask_tuple_stays_internal():
    """The kernels and the scan keep their cheap mask; it is not the public result."""
    from vortex_io.compute._kernels import compare_mask

    vals, valid = compare_mask(vio.array(VALUES), 5, "gte")
    assert vals.tolist() == [False, True, False, True, True]
    assert valid.tolist() == [True, True, False, True, True]
    assert not isinstance(compute.compare(vio.array(VALUES), 5, "gte"), tuple)
