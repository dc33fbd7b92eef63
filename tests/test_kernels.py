"""Compute kernels on encoded arrays (``vortex_io.compute``) against pyarrow.compute.

For every encoding (built with the encoders of ``vortex_io.encodings``, alone and
cascaded, plus whatever vortex-data's compressor writes) and every operator (== != < <= >
>=, is_in, is_null), with and without nulls, the kernel's three-valued result (values and
validity) equals pyarrow.compute on the decoded data, and ``take`` with sorted, unsorted
and repeated indices equals Arrow's ``take``. Literals come from the data and around it
(out of range, fractional, NaN, unrepresentable in the column type...). A few tests also
check that the fast paths ran: the encoding's kernel answered (not the decoding fallback)
and ``take`` kept the encoding.
"""

from __future__ import annotations

import datetime
import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io import compute
from vortex_io import dtype as dt
from vortex_io.compute._kernels import (
    compare_mask,
    compare_storage,
    is_in_mask,
    is_in_storage,
    is_null_result,
    take_arrow,
    take_values,
)
from vortex_io.encodings._alp import alp_array, alp_encode
from vortex_io.encodings._alprd import alprd_encode
from vortex_io.encodings._bitpacked import bitpack
from vortex_io.encodings._chunked import chunked_array
from vortex_io.encodings._constant import constant_array
from vortex_io.encodings._datetimeparts import datetimeparts_encode
from vortex_io.encodings._decimal_byte_parts import decimal_byte_parts_encode
from vortex_io.encodings._delta import delta_encode
from vortex_io.encodings._dict import dict_array, dict_encode
from vortex_io.encodings._ext import ext_array
from vortex_io.encodings._for import for_encode
from vortex_io.encodings._fsst import fsst_encode
from vortex_io.encodings._primitive import primitive_array
from vortex_io.encodings._runend import runend_encode
from vortex_io.encodings._sequence import sequence_array, sequence_encode
from vortex_io.encodings._sparse import sparse_encode

OPS = ("eq", "neq", "lt", "lte", "gt", "gte")
PC = {"eq": "equal", "neq": "not_equal", "lt": "less", "lte": "less_equal", "gt": "greater",
      "gte": "greater_equal"}
PY = {"eq": lambda a, b: a == b, "neq": lambda a, b: a != b, "lt": lambda a, b: a < b,
      "lte": lambda a, b: a <= b, "gt": lambda a, b: a > b, "gte": lambda a, b: a >= b}

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


# -- oracles ----------------------------------------------------------------------------------


def arrow_mask(res: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as False, validity) of a pyarrow boolean result."""
    if isinstance(res, pa.ChunkedArray):
        res = res.combine_chunks()
    valid = np.asarray(res.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    vals = np.asarray(res.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_)
    return vals, valid


def ours(mask) -> tuple[np.ndarray, np.ndarray]:
    vals, valid = mask
    n = len(vals)
    valid = np.ones(n, dtype=np.bool_) if valid is None else np.asarray(valid)
    assert vals.dtype == np.bool_ and valid.dtype == np.bool_
    assert not (vals & ~valid).any(), "a null result must hold False"
    return np.asarray(vals), valid


def storage_arrow(a: pa.Array) -> pa.Array:
    """Timestamps as their int64 storage (literals for them are storage ints)."""
    if pa.types.is_timestamp(a.type):
        return a.view(pa.int64())
    return a


def literal_scalar(t: pa.DataType, lit):
    """``lit`` as a pyarrow scalar of the column type, or None when it does not fit."""
    try:
        if pa.types.is_floating(t):
            return pa.scalar(float(lit), type=t)
        if pa.types.is_decimal(t) and isinstance(lit, decimal.Decimal):
            return pa.scalar(lit, type=t)
        if pa.types.is_integer(t) and not isinstance(lit, (int, np.integer)):
            return None
        return pa.scalar(lit, type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return None


def python_compare(a: pa.Array, lit, op: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact three-valued oracle in Python (ints of any size, fractional literals...)."""
    vals, valid = [], []
    for x in a.to_pylist():
        if x is None:
            vals.append(False)
            valid.append(False)
        else:
            vals.append(bool(PY[op](x, lit)))
            valid.append(True)
    return np.array(vals, dtype=np.bool_), np.array(valid, dtype=np.bool_)


def check_compare(array: vio.Array, arrow: pa.Array, lit, op: str) -> None:
    sa = storage_arrow(arrow)
    got = ours(compare_mask(array, lit, op))
    sc = literal_scalar(sa.type, lit)
    if sc is not None:
        want = arrow_mask(getattr(pc, PC[op])(sa, sc))
    else:
        assert pa.types.is_integer(sa.type) or pa.types.is_decimal(sa.type), (sa.type, lit)
        want = python_compare(sa, lit, op)
    assert np.array_equal(got[1], want[1]), (array.encoding, op, lit, "validity")
    assert np.array_equal(got[0], want[0]), (array.encoding, op, lit, got[0], want[0])


def check_is_in(array: vio.Array, arrow: pa.Array, values: list) -> None:
    sa = storage_arrow(arrow)
    got = ours(is_in_mask(array, values))
    if pa.types.is_integer(sa.type):  # an integral float literal is that integer
        values = [int(v) if isinstance(v, float) and v.is_integer() else v for v in values]
    if pa.types.is_floating(sa.type):
        values = [float(v) if isinstance(v, int) else v for v in values]
    fit = [v for v in values if v is not None and literal_scalar(sa.type, v) is not None]
    vset = pa.array(fit, type=sa.type)
    vals, _ = arrow_mask(pc.is_in(sa, value_set=vset, skip_nulls=True))
    valid = np.asarray(sa.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    assert np.array_equal(got[1], valid), (array.encoding, values, "validity")
    assert np.array_equal(got[0], vals & valid), (array.encoding, values)


def same_arrow(a: pa.Array, b: pa.Array) -> bool:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if isinstance(b, pa.ChunkedArray):
        b = b.combine_chunks()
    if a.type != b.type:
        return False
    if pa.types.is_floating(a.type):  # bit for bit (NaN, -0.0)
        it = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[a.type.bit_width]
        return a.view(it).equals(b.view(it))
    return a.equals(b)


def check_take(array: vio.Array, arrow: pa.Array, idx: np.ndarray) -> vio.Array:
    got = compute.take(array, idx)
    assert len(got) == len(idx) and got.dtype == array.dtype
    want = arrow.take(pa.array(idx, type=pa.int64()))
    assert same_arrow(got.to_arrow(), want), array.encoding
    # the output path: decoded straight from the encoded buffers (None: not offered)
    direct = take_arrow(array, idx)
    if isinstance(array.dtype, dt.Primitive):
        assert direct is not None, array.encoding
        vals, valid = take_values(array, idx)
        assert len(vals) == len(idx) and (valid is None or len(valid) == len(idx))
    if direct is not None:
        assert same_arrow(direct, want), array.encoding
    return got


def check_all(array: vio.Array, arrow: pa.Array, lits: list, rng: np.random.Generator) -> None:
    """Every operator with every literal, is_in, is_null, take and filter."""
    assert same_arrow(array.to_arrow(), arrow), "the array does not decode to its data"
    for lit in lits:
        for op in OPS:
            check_compare(array, arrow, lit, op)
    n = len(arrow)
    for k in (1, 3, 20):
        vals = [lits[int(i)] for i in rng.integers(0, len(lits), k)] if lits else []
        check_is_in(array, arrow, [*vals, None])
    for neg in (False, True):
        got = ours(is_null_result(array, negated=neg))
        want = arrow_mask(pc.is_valid(arrow) if neg else pc.is_null(arrow))
        assert np.array_equal(got[0], want[0]) and got[1].all()
    if n:
        for idx in (np.sort(rng.integers(0, n, min(n, 7))), rng.integers(0, n, 2 * n),
                    np.unique(rng.integers(0, n, max(1, n // 3))), np.arange(n)[::-1],
                    np.zeros(0, dtype=np.int64)):
            check_take(array, arrow, idx.astype(np.int64))
        mask = rng.random(n) < 0.3
        got = compute.filter(array, mask)
        assert same_arrow(got.to_arrow(), arrow.filter(pa.array(mask))), array.encoding


# -- data -------------------------------------------------------------------------------------

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
             pa.uint32(), pa.uint64()]


def int_data(rng: np.random.Generator, t: pa.DataType, n: int, pattern: str) -> np.ndarray:
    info = np.iinfo(t.to_pandas_dtype())
    lo, hi = int(info.min), int(info.max)
    if pattern == "small":
        base = int(rng.integers(max(lo, -1000), min(hi, 1000) - 100 + 1))
        v = base + rng.integers(0, 100, n)
    elif pattern == "outliers":
        v = rng.integers(0, 16, n).astype(object)
        for i in rng.integers(0, max(n, 1), max(1, n // 50)) if n else ():
            v[i] = int(rng.integers(lo // 2 if lo < 0 else 0, hi // 2, dtype=np.int64
                                    if hi < 2**63 else np.uint64, endpoint=True))
    elif pattern == "sorted":
        v = np.cumsum(rng.integers(0, 5, n)) + max(lo, -50)
        v = np.minimum(v, min(hi, 2**62))
    elif pattern == "runs":
        v = np.repeat(rng.integers(max(lo, -5), min(hi, 5) + 1, n // 20 + 1), 20)[:n]
    elif pattern == "wide":
        v = rng.integers(lo, hi, n, dtype=np.int64 if hi < 2**63 else np.uint64, endpoint=True)
    else:  # few
        v = rng.choice(rng.integers(max(lo, -9), min(hi, 9) + 1, 4), n)
    return np.array([int(x) for x in v], dtype=t.to_pandas_dtype())


def with_nulls(rng: np.random.Generator, n: int, rate: float) -> np.ndarray | None:
    if rate == 0:
        return None
    return rng.random(n) < rate


def int_literals(arrow: pa.Array, rng: np.random.Generator) -> list:
    vals = [v for v in arrow.to_pylist() if v is not None]
    t = arrow.type
    info = np.iinfo(t.to_pandas_dtype())
    out = [int(info.min), int(info.max), int(info.max) + 1, int(info.min) - 1, 0, 2.5, -0.5]
    if vals:
        pick = [vals[int(i)] for i in rng.integers(0, len(vals), 3)]
        out += [*pick, min(vals), max(vals), max(vals) + 1, min(vals) - 1, pick[0] + 0.5, float(pick[1])]
    return out


def int_encodings(a: vio.Array) -> list[vio.Array]:
    c = a.canonical()
    out = [c, bitpack(c), for_encode(c), delta_encode(c), dict_encode(c), runend_encode(c),
           sparse_encode(c)]
    out.append(bitpack(c, 2))  # 2-bit: the wider values become patches
    s = sequence_encode(c)
    if s is not None:
        out.append(s)
    d = dict_encode(c)
    codes = d.children[0]
    if not codes.dtype.nullable and len(codes):
        out.append(dict_array(bitpack(codes), d.children[1], dtype=d.dtype))
    if len(c) > 4:
        out.append(chunked_array([for_encode(c.slice(0, 3)), bitpack(c.slice(3, len(c)))],
                                 c.dtype))
    return out


def check_int_array(values: np.ndarray, nulls: np.ndarray | None, t: pa.DataType,
                    rng: np.random.Generator) -> None:
    arrow = pa.array(values, type=t, mask=nulls)
    a = vio.array(arrow)
    lits = int_literals(arrow, rng)
    for enc in int_encodings(a):
        check_all(enc, arrow, lits, rng)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(INT_TYPES),
       st.sampled_from(["small", "outliers", "sorted", "runs", "wide", "few"]),
       st.sampled_from([0.0, 0.2]), st.integers(0, 2600))
def test_integers(seed, t, pattern, null_rate, n):
    rng = np.random.default_rng(seed)
    check_int_array(int_data(rng, t, n, pattern), with_nulls(rng, n, null_rate), t, rng)


def test_integers_all_null_and_empty():
    rng = np.random.default_rng(3)
    for n in (0, 1, 1500):
        check_int_array(np.zeros(n, np.int32), np.ones(n, np.bool_), pa.int32(), rng)
        check_int_array(np.arange(n, dtype=np.int64), None, pa.int64(), rng)


def float_data(rng: np.random.Generator, t: pa.DataType, n: int, pattern: str) -> np.ndarray:
    npt = t.to_pandas_dtype()
    if pattern == "prices":
        v = np.round(rng.uniform(80, 120, n), 2)
    elif pattern == "specials":
        v = np.round(rng.normal(0, 100, n), 1)
        k = max(1, n // 20) if n else 0
        v[rng.integers(0, max(n, 1), k)] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e300], k)
    elif pattern == "runs":
        v = np.repeat(rng.choice([1.5, -2.25, 0.0, np.nan], n // 10 + 1), 10)[:n]
    else:  # wide
        v = rng.normal(0, 1, n) * 10.0 ** rng.integers(-20, 20, n)
    with np.errstate(over="ignore"):
        return v.astype(npt)


def float_literals(arrow: pa.Array, rng: np.random.Generator) -> list:
    vals = [v for v in arrow.to_pylist() if v is not None]
    out = [0.0, -0.0, math.nan, math.inf, -math.inf, 0.1, 100, 2**60]
    if vals:
        pick = [vals[int(i)] for i in rng.integers(0, len(vals), 3)]
        out += [*pick, float(np.nextafter(pick[0], np.inf)), pick[1] + 0.005]
    return out


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from([pa.float32(), pa.float64()]),
       st.sampled_from(["prices", "specials", "runs", "wide"]),
       st.sampled_from([0.0, 0.2]), st.integers(0, 2200))
def test_floats(seed, t, pattern, null_rate, n):
    rng = np.random.default_rng(seed)
    arrow = pa.array(float_data(rng, t, n, pattern), type=t, mask=with_nulls(rng, n, null_rate))
    c = vio.array(arrow)
    lits = float_literals(arrow, rng)
    encs = [c, alp_encode(c), alprd_encode(c), dict_encode(c), runend_encode(c), sparse_encode(c)]
    a = alp_encode(c)
    enc_child = a.children[0]
    if len(enc_child):  # ALP over FoR + bit-packing, as vortex-data writes it
        encs.append(alp_array(for_encode(enc_child), a.meta.e, a.meta.f,
                              None if a.meta.patches is None else (a.meta.patches,
                                                                  list(a.children[1:])),
                              a.dtype))
    for enc in encs:
        check_all(enc, arrow, lits, rng)


WORDS = ["", "a", "AAPL", "MSFT", "NVDA", "zürich", "日本", "a longer string of text",
         "another rather long string!", "AAPLX", "AAP", "\x00"]


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["utf8", "binary", "view"]),
       st.sampled_from(["few", "many"]), st.sampled_from([0.0, 0.2]), st.integers(0, 1500))
def test_strings(seed, kind, pattern, null_rate, n):
    rng = np.random.default_rng(seed)
    if pattern == "few":
        vals = [WORDS[int(i)] for i in rng.integers(0, len(WORDS), n)]
    else:
        vals = [WORDS[int(i)] + str(int(j)) for i, j in zip(rng.integers(0, len(WORDS), n),
                                                              rng.integers(0, 60, n))]
    t = {"utf8": pa.string(), "binary": pa.binary(), "view": pa.string_view()}[kind]
    data = vals if kind != "binary" else [v.encode() for v in vals]
    arrow = pa.array(data, type=t, mask=with_nulls(rng, n, null_rate))
    c = vio.array(arrow)
    plain = arrow.cast(pa.binary() if kind == "binary" else pa.string())
    lits = list(WORDS[:8]) + ["AAPL0", "zz", "A"] + [v for v in vals[:3]]
    if kind == "binary":
        lits = [x.encode() for x in lits]
    encs = [c, dict_encode(c), fsst_encode(c), sparse_encode(c)]
    for enc in encs:
        check_all(enc, plain, lits, rng)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.2]), st.integers(0, 1500))
def test_bools(seed, null_rate, n):
    rng = np.random.default_rng(seed)
    arrow = pa.array(rng.random(n) < rng.random(), mask=with_nulls(rng, n, null_rate))
    c = vio.array(arrow)
    const = constant_array(True, n, dt.Bool(False))
    for enc in (c, runend_encode(c), sparse_encode(c), const):
        data = arrow if enc is not const else pa.array([True] * n, pa.bool_())
        check_all(enc, data, [True, False], rng)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from([(9, 2), (18, 4), (30, 3), (5, 0)]),
       st.sampled_from([0.0, 0.2]), st.integers(0, 800))
def test_decimals(seed, ps, null_rate, n):
    rng = np.random.default_rng(seed)
    p, s = ps
    big = 10 ** min(p, 17) - 1
    unscaled = rng.integers(-big, big, n)
    vals = [decimal.Decimal(int(u)).scaleb(-s) for u in unscaled]
    t = pa.decimal128(p, s)
    arrow = pa.array(vals, type=t, mask=with_nulls(rng, n, null_rate))
    c = vio.array(arrow)
    present = [v for v in arrow.to_pylist() if v is not None]
    lits = [decimal.Decimal("0"), decimal.Decimal("0.001"), decimal.Decimal("-1.5"),
            decimal.Decimal(10) ** (p - s), -(decimal.Decimal(10) ** (p - s))]
    lits += present[:3] + [x + decimal.Decimal("0.00001") for x in present[:2]]
    encs = [c, decimal_byte_parts_encode(c), dict_encode(c)]
    for enc in encs:
        check_all(enc, arrow, lits, rng)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["s", "ms", "us", "ns"]),
       st.sampled_from([0.0, 0.2]), st.integers(0, 2500))
def test_timestamps(seed, unit, null_rate, n):
    rng = np.random.default_rng(seed)
    per_day = 86_400 * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    start = int(rng.integers(-3, 20_000)) * per_day
    step = max(1, per_day // int(rng.choice([3, 500, 5000])))
    v = start + np.cumsum(rng.integers(0, 2 * step, n))
    t = pa.timestamp(unit)
    arrow = pa.array(v.astype(np.int64), type=t, mask=with_nulls(rng, n, null_rate))
    c = vio.array(arrow)
    stored = [x for x in arrow.view(pa.int64()).to_pylist() if x is not None]
    lits = [start, start - 1, start + per_day, 0, 2**62]
    if stored:
        lits += [stored[len(stored) // 2], stored[-1], stored[0] + 1, stored[-1] + per_day]
    storage = c.children[0]
    encs = [c, datetimeparts_encode(c), ext_array(c.dtype, delta_encode(storage)),
            ext_array(c.dtype, for_encode(storage))]
    for enc in encs:
        check_all(enc, arrow, lits, rng)


def test_datetime_literals_are_coerced():
    arrow = pa.array([0, 86_400_000_000, None], type=pa.timestamp("us"))
    a = datetimeparts_encode(vio.array(arrow))
    got = ours(compare_mask(a, datetime.datetime(1970, 1, 2), "gte"))
    assert got[0].tolist() == [False, True, False] and got[1].tolist() == [True, True, False]


def test_constants():
    rng = np.random.default_rng(5)
    for value, d, arrow in (
        (7, dt.Primitive(dt.PType.I32, True), pa.array([7] * 50, pa.int32())),
        (None, dt.Primitive(dt.PType.I32, True), pa.nulls(50, pa.int32())),
        ("AAPL", dt.Utf8(True), pa.array(["AAPL"] * 50)),
        (2.5, dt.Primitive(dt.PType.F64, False), pa.array([2.5] * 50)),
    ):
        a = constant_array(value, 50, d)
        lits = ["AAPL", "B", ""] if isinstance(d, dt.Utf8) else [7, 2.5, 0, 100]
        check_all(a, arrow, lits, rng)
        assert compute.take(a, [3, 1, 1]).encoding == "vortex.constant"


# -- vortex-data's compressor ----------------------------------------------------------------


def vx_table(n: int, seed: int, nulls: bool) -> pa.Table:
    rng = np.random.default_rng(seed)

    def m():
        return (rng.random(n) < 0.1) if nulls else None

    tickers = np.array(["AAPL", "MSFT", "NVDA", "AMZN", "GOOGL", "META", "TSLA"])
    return pa.table({
        "ts": pa.array(1_700_000_000_000_000 + np.cumsum(rng.integers(0, 2000, n)),
                       pa.timestamp("us"), mask=m()),
        "sym": pa.array(tickers[rng.integers(0, len(tickers), n)], mask=m()),
        "price": pa.array(np.round(rng.uniform(80, 120, n), 2), mask=m()),
        "size": pa.array(np.where(rng.random(n) < 0.02, rng.integers(0, 10**9, n),
                                  rng.integers(1, 500, n)), mask=m()),
        "run": pa.array(np.repeat(rng.integers(0, 5, n // 100 + 1), 100)[:n], mask=m()),
        "seq": pa.array(np.arange(n, dtype=np.int64) * 3 + 7),
        "sparse": pa.array(np.where(rng.random(n) < 0.03, rng.integers(1, 99, n), 0),
                           mask=m()),
        "text": pa.array([f"user-{int(i)}@example.com" for i in rng.integers(0, 10**6, n)],
                         mask=m()),
        "flag": pa.array(rng.random(n) < 0.1, mask=m()),
        "dec": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(0, 10**6, n)],
                        pa.decimal128(12, 2), mask=m()),
        "small": pa.array(rng.integers(-3, 3, n).astype(np.int8), mask=m()),
        "f32": pa.array(np.round(rng.uniform(0, 10, n), 1).astype(np.float32), mask=m()),
    })


@pytest.fixture(scope="module")
def vx_arrays():
    pytest.importorskip("vortex")
    from tests.vx_util import vx_stream

    out = []
    for seed, nulls in ((1, False), (2, True)):
        table = vx_table(5000, seed, nulls)
        arr = vio.read_ipc(vx_stream(table, compress=True))
        out.append((arr, table))
    return out


def _literals_for(col: pa.ChunkedArray, rng: np.random.Generator) -> list:
    a = col.combine_chunks()
    if pa.types.is_timestamp(a.type):
        s = [x for x in a.view(pa.int64()).to_pylist() if x is not None]
        return [s[0], s[len(s) // 2], s[-1] + 1, 0]
    if pa.types.is_integer(a.type):
        return int_literals(a, rng)
    if pa.types.is_floating(a.type):
        return float_literals(a, rng)
    present = [v for v in a.to_pylist() if v is not None]
    extra = {"string": ["AAPL", "nope", ""], "bool": [True, False]}.get(str(a.type), [])
    return present[:3] + extra


def test_vortex_data_compressed_columns(vx_arrays):
    rng = np.random.default_rng(11)
    encodings = set()
    for arr, table in vx_arrays:
        for name in table.column_names:
            field = arr.field(name)
            expect = table.column(name).combine_chunks()
            encodings.add(field.encoding if field.encoding != "vortex.chunked"
                          else field.children[1].encoding)
            check_all(field, expect, _literals_for(table.column(name), rng), rng)
    # the compressor's usual trees are all exercised
    assert {"vortex.datetimeparts", "vortex.dict", "vortex.alp", "fastlanes.bitpacked",
            "fastlanes.for", "vortex.sequence", "vortex.sparse",
            "vortex.decimal_byte_parts"} <= encodings, encodings


def test_vortex_data_scan_equals_pyarrow(vx_arrays):
    from tests.vx_util import vx_stream
    from vortex_io.expr import col

    table = vx_table(3000, 4, True)
    data = vx_stream(table, compress=True)
    for e, pe in ((col("sym") == "AAPL", pc.field("sym") == "AAPL"),
                  (col("size") < 100, pc.field("size") < 100),
                  (col("price") >= 100.5, pc.field("price") >= 100.5),
                  (col("sym").is_in(["MSFT", "TSLA"]), pc.field("sym").isin(["MSFT", "TSLA"]))):
        got = vio.scan(data, filter=e).to_arrow()
        assert got.equals(table.filter(pe)), e


# -- the fast paths run ---------------------------------------------------------------------


def _no_decode(fn):
    """(fn(), bytes of every canonicalization ``Array.canonical`` did while it ran)."""
    decoded: list[int] = []
    orig = vio.Array.canonical

    def canonical(self):
        fresh = not self.is_canonical and self.cached_canonical is None
        c = orig(self)
        if fresh:
            decoded.append(c.nbytes)
        return c

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vio.Array, "canonical", canonical)
        out = fn()
    return out, sum(decoded)


def test_fast_paths_answer_without_falling_back():
    n = 5000
    rng = np.random.default_rng(9)
    ints = vio.array(pa.array(rng.integers(1000, 1100, n)))
    words = vio.array(pa.array(np.array(WORDS[1:6])[rng.integers(0, 5, n)]))
    floats = vio.array(pa.array(np.round(rng.uniform(1, 2, n), 2)))
    cases = [
        (for_encode(ints), 1050, "lt"), (bitpack(ints), 1050, "gte"), (dict_encode(words), "AAPL", "eq"),
        (runend_encode(ints), 1010, "neq"), (sparse_encode(ints), 1001, "lte"),
        (sequence_array(5, 3, n, dt.Primitive(dt.PType.I64)), 40, "gt"),
        (alp_encode(floats), 1.5, "lt"), (alp_encode(floats), 1.25, "eq"),
        (fsst_encode(words), "MSFT", "eq"), (datetimeparts_encode(vio.array(  # 10 a day
            pa.array(np.arange(n) * 8640 * 10**9, pa.timestamp("ns")))), 3 * 10**14, "lt"),
        (constant_array(3, n, dt.Primitive(dt.PType.I8)), 3, "eq"),
    ]
    for arr, lit, op in cases:
        res = arr.vtable.compare(arr, compute._kernels.coerce_literal(arr.dtype, lit), op)
        assert res is not NotImplemented, arr.encoding
        assert isinstance(res[0], np.ndarray) and len(res[0]) == n
        assert arr.vtable.take(arr, np.array([4, 2, 2])) is not NotImplemented, arr.encoding
    # out-of-range literals are answered from the bit width alone: nothing is decoded
    fo = for_encode(ints)
    (vals, valid), decoded = _no_decode(lambda: compare_mask(fo, 5000, "lt"))
    assert vals.all() and valid is None and decoded == 0
    # a dictionary is compared on its values and nothing is canonicalized
    d = dict_encode(words)
    res, decoded = _no_decode(lambda: compare_storage(d, "NVDA", "eq"))
    assert decoded == 0 and res[0].sum() == int((words.to_numpy(zero_copy_only=False) == "NVDA").sum())
    assert is_in_storage(d, ["AAPL", "zz"])[0].sum() > 0


def test_take_keeps_encodings():
    n = 4000
    rng = np.random.default_rng(2)
    words = vio.array(pa.array(np.array(WORDS[1:6])[rng.integers(0, 5, n)]))
    ints = vio.array(pa.array(np.repeat(rng.integers(0, 9, n // 40), 40)))
    idx = np.sort(rng.choice(n, 50, replace=False))
    assert compute.take(dict_encode(words), idx).encoding == "vortex.dict"
    assert compute.filter(dict_encode(words), rng.random(n) < 0.1).encoding == "vortex.dict"
    assert compute.take(runend_encode(ints), idx).encoding == "vortex.runend"
    assert compute.take(for_encode(ints), idx).encoding == "fastlanes.for"
    sp = sparse_encode(vio.array(pa.array(np.where(np.arange(n) % 97 == 0, 5, 0))))
    assert compute.take(sp, idx).encoding in ("vortex.sparse", "vortex.constant")
    dtp = datetimeparts_encode(vio.array(pa.array(np.arange(n) * 10**6, pa.timestamp("us"))))
    assert compute.take(dtp, idx).encoding == "vortex.datetimeparts"
    # a dictionary take decodes only the taken rows
    d = dict_encode(words)
    out, decoded = _no_decode(lambda: compute.take(d, idx).to_arrow())
    assert len(out) == 50 and decoded < 50 * 8 * 4


def test_selective_scan_decodes_few_bytes():
    rng = np.random.default_rng(4)
    n = 200_000
    table = pa.table({
        "sym": pa.array(np.array(["AAPL"] + [f"S{i}" for i in range(49)])[rng.integers(0, 50, n)]),
        "ts": pa.array(10**15 + np.cumsum(rng.integers(1, 100, n)), pa.timestamp("us")),
        "v": pa.array(rng.integers(0, 10_000, n)),
    })
    import io

    buf = io.BytesIO()
    vio.write_ipc(buf, table, compress=True, chunk_rows=65_536)
    from vortex_io.expr import col

    s = vio.scan(buf.getvalue(), filter=col("sym") == "AAPL")
    got = s.to_arrow()
    assert got.equals(table.filter(pc.field("sym") == "AAPL"))
    assert s.stats.bytes_canonicalized < table.nbytes / 10


def test_malformed_nodes_raise_vortex_errors():
    """Kernels validate what they read: bad codes or offsets raise MalformedStreamError,
    never IndexError."""
    from vortex_io.encodings._fsst import FSST

    values = vio.array(pa.array(["a", "b"]))
    bad = dict_array(primitive_array(np.array([0, 1, 7], dtype=np.uint8)), values)
    for fn in (lambda: compute.compare(bad, "a", "eq"), lambda: compute.is_in(bad, ["b"]),
               lambda: compute.take(bad, [2]).to_arrow()):
        with pytest.raises(vio.MalformedStreamError):
            fn()
    f = fsst_encode(vio.array(pa.array(["hello", "world", "hello"])))
    ulen = f.children[0]
    co_bad = primitive_array(np.array([0, 3, 2, 10**6], dtype=np.uint32))
    broken = vio.Array(FSST, f.dtype, 3, metadata=f.metadata, buffers=f.buffers,
                       children=[ulen, co_bad])
    broken._cache["meta"] = f.meta
    for fn in (lambda: compute.take(broken, [0, 2]), lambda: compute.compare(broken, "hello", "eq")):
        with pytest.raises(vio.MalformedStreamError):
            fn()
