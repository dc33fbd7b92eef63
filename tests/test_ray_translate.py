"""Ray predicate translation (no cluster): every predicate ``translate`` accepts keeps exactly
the rows pyarrow keeps evaluating Ray's predicate (Ray's own semantics), on random
predicates over awkward columns and literals; everything else is refused."""

from __future__ import annotations

import datetime
import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("ray")
from ray.data.expressions import col, lit

import vortex_io as vio
from vortex_io.integrations.ray_data import Untranslatable, translate

from .test_scan import same

N = 1200
rng = np.random.default_rng(3)
_f = rng.choice([0.0, -0.0, 1.5, -2.25, np.nan, 0.1, 3.0, 1e300], N)
with np.errstate(over="ignore"):
    _f32 = _f.astype(np.float32)  # 1e300 is inf in float32
_base = datetime.datetime(2024, 3, 1)
TABLE = pa.table({
    "i8": pa.array(rng.integers(-128, 128, N).astype(np.int8), mask=rng.random(N) < 0.1),
    # below 2**63: pyarrow compares uint64 with an int literal in int64
    "u64": pa.array(rng.integers(0, 2**62, N, dtype=np.uint64) * 2, mask=rng.random(N) < 0.1),
    "i64": pa.array(rng.integers(-5, 5, N), mask=rng.random(N) < 0.1),
    "f64": pa.array(_f, mask=rng.random(N) < 0.1),
    "f32": pa.array(_f32, mask=rng.random(N) < 0.1),
    "s": pa.array(rng.choice(["", "a", "ab", "b", "é"], N), mask=rng.random(N) < 0.1),
    "bin": pa.array([x.encode() for x in rng.choice(["", "x", "yz"], N)], pa.binary()),
    "b": pa.array(rng.random(N) < 0.5, mask=rng.random(N) < 0.1),
    "day": pa.array([datetime.date(2024, 3, 1) + datetime.timedelta(days=int(d))
                     for d in rng.integers(0, 10, N)], pa.date32()),
    "ts_s": pa.array([_base + datetime.timedelta(seconds=int(s))
                      for s in rng.integers(0, 50, N)], pa.timestamp("s")),
    "ts_ns": pa.array(rng.integers(0, 10**10, N), pa.timestamp("ns")),
    "tz": pa.array(rng.integers(0, 10**12, N), pa.timestamp("us", "UTC")),
})
buf = io.BytesIO()
vio.write_ipc(buf, TABLE, chunk_rows=300)
DATA = buf.getvalue()

LITERALS = {
    "i8": [0, 5, -128, 127, 1000, -1000, 2.5, True, "1", None],
    "u64": [0, 2**63, 2**64 - 2, -1, 2**70, 1.0],
    "i64": [0, 3, -5, 2**53 + 1, 0.5, None],
    "f64": [0.0, -0.0, 1.5, 0.1, 3, 2**60, float("nan"), float("inf"), 1e300, None, "x"],
    "f32": [0.0, 1.5, 0.1, float(np.float32(0.1)), -2.25, 3, 1e300],
    "s": ["", "a", "ab", "é", "zz", b"a", 1, None],
    "bin": [b"", b"x", b"yz", "x"],
    "b": [True, False, 1, None],
    "day": [datetime.date(2024, 3, 4), datetime.datetime(2024, 3, 4), "2024-03-04"],
    "ts_s": [_base + datetime.timedelta(seconds=10), _base + datetime.timedelta(microseconds=5),
             datetime.date(2024, 3, 1), _base.replace(tzinfo=datetime.UTC)],
    "ts_ns": [datetime.datetime(1970, 1, 1, 0, 0, 5), datetime.datetime(1970, 1, 1, 0, 0, 5, 7)],
    "tz": [datetime.datetime(1970, 1, 2, tzinfo=datetime.UTC),
           datetime.datetime(1970, 1, 2, 3, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
           datetime.datetime(1970, 1, 2)],
}
OPS = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]


@st.composite
def leaf(draw):
    name = draw(st.sampled_from(sorted(LITERALS)))
    c = col(name)
    kind = draw(st.sampled_from(["cmp", "cmp_flipped", "in", "not_in", "null", "not_null",
                                 "bare"]))
    if kind == "bare":  # a column as the predicate (booleans only translate)
        return c
    if kind in ("null", "not_null"):
        return c.is_null() if kind == "null" else c.is_not_null()
    if kind in ("in", "not_in"):
        vals = draw(st.lists(st.sampled_from(LITERALS[name]), min_size=1, max_size=4))
        return c.is_in(vals) if kind == "in" else c.not_in(vals)
    v = draw(st.sampled_from(LITERALS[name]))
    op = draw(st.sampled_from(OPS))
    if kind == "cmp_flipped":
        return getattr(lit(v), op)(c)
    return getattr(c, op)(v)


predicates = st.recursive(
    leaf(),
    lambda p: st.one_of(st.tuples(p, p).map(lambda ab: ab[0] & ab[1]),
                        st.tuples(p, p).map(lambda ab: ab[0] | ab[1]),
                        p.map(lambda a: ~a)),
    max_leaves=4)


def check(pred) -> bool:
    """True when translated (and then exact), False when refused."""
    try:
        kept = TABLE.filter(pred.to_pyarrow())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError,
            ValueError, OverflowError):
        kept = None  # pyarrow cannot evaluate it (Ray cannot either)
    try:
        e = translate(pred, TABLE.schema)
    except Untranslatable:
        return False
    assert kept is not None, f"translated {pred!r}, which pyarrow rejects"
    cols = sorted(e.columns())  # the rows kept, seen through the predicate's own columns
    got = vio.scan(DATA, columns=cols, filter=e).to_arrow()
    assert same(got, kept.select(cols)), (pred, e)
    return True


@given(predicates)
def test_accepted_predicates_are_exact(pred):
    check(pred)


@pytest.mark.parametrize("name", sorted(LITERALS))
def test_every_literal_and_operator(name):
    translated = 0
    for v in LITERALS[name]:
        for op in OPS:
            translated += check(getattr(col(name), op)(v))
            translated += check(getattr(lit(v), op)(col(name)))
        translated += check(col(name).is_in([v])) + check(col(name).not_in([v, LITERALS[name][0]]))
    translated += check(col(name).is_null()) + check(~col(name).is_not_null())
    translated += check(col(name)) + check(~col(name) | col(name).is_null())
    assert translated >= 2


def test_refusals():
    s = TABLE.schema
    for pred in [col("f64") == float("nan"), col("f32") == 0.1, col("i64") < 0.5,
                 col("s") == None, col("nope") == 1, col("i64") == col("i8"),  # noqa: E711
                 col("i64") + 1 > 2, col("f64").is_in([1.0]), col("s").is_in([]),
                 col("ts_s") == _base + datetime.timedelta(microseconds=5),
                 col("ts_s") == _base.replace(tzinfo=datetime.UTC),
                 col("tz") == datetime.datetime(1970, 1, 2), col("day") == "2024-03-04"]:
        with pytest.raises(Untranslatable):
            translate(pred, s)
