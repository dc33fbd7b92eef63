"""The Polars plugin: ``pl.scan_vortex_ipc`` against ``pl.scan_ipc`` on the same data, in
both engines; pushdown observed through ``ScanStats``; errors; write/sink round trips."""

from __future__ import annotations

import datetime as dtm
import decimal
import io
import subprocess
import sys
import zoneinfo
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

pl = pytest.importorskip("polars")
from polars.testing import assert_frame_equal  # noqa: E402

import vortex_io as vio  # noqa: E402
from vortex_io.integrations import polars_plugin as pp  # noqa: E402

N = 3000
CHUNK = 256
TZ = "Europe/Berlin"
BERLIN = zoneinfo.ZoneInfo(TZ)
ENGINES = ("in-memory", "streaming")
SYMBOLS = ["AAPL", "MSFT", "NVDA", "xa", "ab", "zz"]


def _table(n: int = N, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)

    def nulls(p: float = 0.1) -> np.ndarray:
        return rng.random(n) < p

    i = rng.integers(-50, 50, n).astype(np.int32)
    f = np.round(rng.normal(0, 10, n), 2)
    f[rng.random(n) < 0.03] = np.nan
    f[rng.random(n) < 0.01] = np.inf
    s = np.array(SYMBOLS, dtype=object)[rng.integers(0, len(SYMBOLS), n)]
    days = rng.integers(18000, 18400, n)
    micros = rng.integers(1_577_836_800_000_000, 1_609_459_200_000_000, n)
    dec = [decimal.Decimal(int(x)).scaleb(-3) for x in rng.integers(-10**6, 10**6, n)]
    b = rng.random(n) < 0.5
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),  # sorted: chunk pruning
        "i": pa.array(i, mask=nulls()),
        "f": pa.array(f, mask=nulls(0.05)),
        "s": pa.array(s, type=pa.string(), mask=nulls()),
        "d": pa.array(days.astype(np.int32), mask=nulls()).cast(pa.date32()),
        "ts": pa.array(micros, mask=nulls()).cast(pa.timestamp("us", TZ)),
        "dec": pa.array(dec, type=pa.decimal128(12, 3), mask=nulls()),
        "b": pa.array(b, mask=nulls()),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("polars")
    t = _table()
    out = {"table": t, "vx": d / "data.vxi", "arrow": d / "data.arrow", "dir": d}
    vio.write_ipc(out["vx"], t, chunk_rows=CHUNK)
    feather.write_feather(t, out["arrow"], compression="uncompressed")
    bounds = [0, 1000, 1700, N]
    for k in range(3):
        part = t.slice(bounds[k], bounds[k + 1] - bounds[k])
        vio.write_ipc(d / f"part-{k}.vxi", part, chunk_rows=CHUNK)
        feather.write_feather(part, d / f"part-{k}.arrow", compression="uncompressed")
    return out


@pytest.fixture(scope="module", autouse=True)
def registered() -> None:
    vio.register_polars()


@pytest.fixture(autouse=True, params=["external", "io-source"])
def scan_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on both scans a single file can get: Polars' external-reader scan
    (files over ``SMALL_SOURCE`` bytes) and the Python IO source (``_small_scan``)."""
    monkeypatch.setattr(pp, "SMALL_SOURCE", 0 if request.param == "external" else 1 << 40)
    return str(request.param)


def _pair(files: dict, q: Callable, engine: str, *, multi: bool = False,
          sort: list[str] | None = None) -> tuple:
    vx = str(files["dir"] / "part-*.vxi") if multi else files["vx"]
    ar = str(files["dir"] / "part-*.arrow") if multi else files["arrow"]
    got = q(pl.scan_vortex_ipc(vx)).collect(engine=engine)
    exp = q(pl.scan_ipc(ar)).collect(engine=engine)
    if sort:
        got, exp = got.sort(sort, nulls_last=True), exp.sort(sort, nulls_last=True)
    return got, exp


def _lit(name: str) -> object:
    return {"i": 7, "f": 3.5, "s": "MSFT", "d": dtm.date(2019, 8, 1),
            "ts": dtm.datetime(2020, 7, 1, 12, 30, tzinfo=BERLIN),
            "dec": decimal.Decimal("12.5"), "id": 1500}[name]


CMP = {"==": lambda c, v: c == v, "!=": lambda c, v: c != v, "<": lambda c, v: c < v,
       "<=": lambda c, v: c <= v, ">": lambda c, v: c > v, ">=": lambda c, v: c >= v}


# -- the query suite ------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["i", "f", "s", "d", "ts", "dec"])
@pytest.mark.parametrize("op", list(CMP))
def test_comparisons(files: dict, column: str, op: str) -> None:
    # each engine gets half of the (column, op) pairs, alternating
    engine = ENGINES[(list(CMP).index(op) + "ifsdtx".index(column[0])) % 2]
    got, exp = _pair(files, lambda lf: lf.filter(CMP[op](pl.col(column), _lit(column))), engine)
    assert exp.height > 0 or op == "=="
    assert_frame_equal(got, exp)


FILTERS = {
    "is_in": pl.col("i").is_in([1, 2, 3, -7]),
    "is_in_null": pl.col("s").is_in(["AAPL", None, "zz"]),
    "is_in_nulls_equal": pl.col("s").is_in(["AAPL", None], nulls_equal=True),
    "not_is_in": ~pl.col("i").is_in([1, 2, 3]),
    "not_is_in_nulls_equal": ~pl.col("i").is_in([1, 2, 3], nulls_equal=True),
    "not_is_in_nulls_equal_null": ~pl.col("s").is_in(["zz", None], nulls_equal=True),
    "is_in_dates": pl.col("d").is_in([dtm.date(2019, 4, 10), dtm.date(2019, 8, 1)]),
    "is_in_dec": pl.col("dec").is_in([decimal.Decimal("1.5"), decimal.Decimal("-0.25")]),
    "between": pl.col("i").is_between(-5, 5),
    "between_left": pl.col("f").is_between(-1.0, 1.0, closed="left"),
    "between_none": pl.col("d").is_between(dtm.date(2019, 5, 1), dtm.date(2019, 6, 1),
                                           closed="none"),
    "between_ts": pl.col("ts").is_between(dtm.datetime(2020, 3, 1, tzinfo=BERLIN),
                                          dtm.datetime(2020, 4, 1, tzinfo=BERLIN)),
    "is_null": pl.col("i").is_null(),
    "is_not_null": pl.col("dec").is_not_null(),
    "and": (pl.col("s") == "AAPL") & (pl.col("i") > 0),
    "or": (pl.col("s") == "AAPL") | (pl.col("f") < -5),
    "not_or": ~((pl.col("s") == "AAPL") | pl.col("i").is_null()),
    "bool": pl.col("b"),
    "not_bool": ~pl.col("b"),
    "lit_left": pl.lit(10) < pl.col("i"),
    "float_gt_nan_rows": pl.col("f") >= 0,
    "float_eq_nan": pl.col("f") == float("nan"),
    "float_gt_inf": pl.col("f") > float("inf"),
    "float_is_in_nan": pl.col("f").is_in([float("nan"), 0.5]),
    "int_vs_float": pl.col("i") > 2.5,
    "int_out_of_range": pl.col("i") < 10**12,
    "col_vs_col": pl.col("i") < pl.col("f"),
    "str_contains": pl.col("s").str.contains("a"),
    "arith": (pl.col("i") + 1) > 3,
    "mixed": (pl.col("s").str.contains("A")) & (pl.col("dec") > 0) & ((pl.col("i") * 2) < 10),
    "or_with_untranslatable": (pl.col("s") == "zz") | pl.col("s").str.ends_with("a"),
    "empty": pl.col("id") > 10**9,
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(FILTERS))
def test_filter_shapes(files: dict, engine: str, name: str) -> None:
    got, exp = _pair(files, lambda lf: lf.filter(FILTERS[name]), engine)
    assert_frame_equal(got, exp)


QUERIES: dict[str, Callable] = {
    "all": lambda lf: lf,
    "project": lambda lf: lf.select("s", "dec"),
    "project_filter_other": lambda lf: lf.filter(pl.col("i") > 0).select("ts"),
    "head": lambda lf: lf.head(10),
    "head_filter": lambda lf: lf.filter(pl.col("s") == "NVDA").head(7),
    "tail": lambda lf: lf.tail(13),
    "slice": lambda lf: lf.slice(700, 300),
    "slice_then_filter": lambda lf: lf.slice(250, 900).filter(pl.col("i") > 10),
    "filter_then_slice": lambda lf: lf.filter(pl.col("i") > 10).slice(5, 40),
    "len": lambda lf: lf.select(pl.len()),
    "len_filtered": lambda lf: lf.filter(pl.col("b")).select(pl.len()),
    "row_index": lambda lf: lf.with_row_index().filter(pl.col("i") == 3),
    "group_by": lambda lf: lf.filter(pl.col("f") > 0).group_by("s").agg(
        pl.len(), pl.col("dec").sum(), pl.col("ts").max()),
    "unique": lambda lf: lf.filter(pl.col("i") < 0).select(pl.col("d").n_unique()),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(QUERIES))
@pytest.mark.parametrize("multi", [False, True], ids=["one", "glob"])
def test_queries(files: dict, engine: str, name: str, multi: bool) -> None:
    sort = ["s"] if name == "group_by" else None
    got, exp = _pair(files, QUERIES[name], engine, multi=multi, sort=sort)
    assert_frame_equal(got, exp)


@pytest.mark.parametrize("engine", ENGINES)
def test_join_of_two_scans(files: dict, engine: str) -> None:
    def q(scan: Callable, src: str) -> pl.LazyFrame:
        left = scan(src).filter(pl.col("s") == "AAPL").select("id", "i", "s")
        right = scan(src).filter(pl.col("i") > 0).select("id", "dec", "ts")
        return left.join(right, on="id", how="inner").sort("id")

    got = q(pl.scan_vortex_ipc, files["vx"]).collect(engine=engine)
    exp = q(pl.scan_ipc, files["arrow"]).collect(engine=engine)
    assert exp.height > 0
    assert_frame_equal(got, exp)


def test_schema_and_dtypes(files: dict) -> None:
    lf = pl.scan_vortex_ipc(files["vx"])
    assert lf.collect_schema() == pl.scan_ipc(files["arrow"]).collect_schema()
    schema = lf.collect_schema()
    assert schema["s"] == pl.String
    assert schema["ts"] == pl.Datetime("us", TZ)
    assert schema["dec"] == pl.Decimal(12, 3)
    assert schema["d"] == pl.Date


@pytest.mark.parametrize("engine", ENGINES)
def test_string_columns_optionally_as_categorical(files: dict, engine: str) -> None:
    """``categorical=``: string columns arrive as ``pl.Categorical`` (all of them, or the
    named ones) with the same values, through filters (pushed down or kept), projections,
    group-bys and several files; naming a column that is not a string is a clear error."""
    lf = pl.scan_vortex_ipc(files["vx"], categorical=True)
    schema = lf.collect_schema()
    assert schema["s"] == pl.Categorical()
    assert {n for n, t in schema.items() if t == pl.Categorical()} == {"s"}
    def q(lf: pl.LazyFrame) -> pl.LazyFrame:
        keep = (pl.col("s") == "MSFT") | pl.col("s").is_null() | (pl.col("i") > 40)
        return lf.filter(keep).select("id", "s", "i")

    got = q(lf).collect(engine=engine)
    assert got.schema["s"] == pl.Categorical()
    exp = q(pl.scan_ipc(files["arrow"])).collect(engine=engine)
    assert_frame_equal(got.with_columns(pl.col("s").cast(pl.String)), exp)
    by = (pl.scan_vortex_ipc(str(files["dir"] / "part-*.vxi"), categorical="s")
          .group_by("s").agg(pl.len()).collect(engine=engine))
    ref = pl.scan_ipc(files["arrow"]).group_by("s").agg(pl.len()).collect(engine=engine)
    assert_frame_equal(by.with_columns(pl.col("s").cast(pl.String)), ref,
                       check_row_order=False)
    assert pl.read_vortex_ipc(files["vx"], columns=["s"], categorical=["s"]).schema == \
        pl.Schema({"s": pl.Categorical()})
    for bad, why in ((["i"], "not a string column"), (["nope"], "no column 'nope'")):
        with pytest.raises(ValueError, match=why):
            pl.scan_vortex_ipc(files["vx"], categorical=bad).collect(engine=engine)


def test_nested_types_arrive_as_polars_types() -> None:
    t = pa.table({
        "l": pa.array([[1, 2], None, []], pa.list_(pa.int64())),
        "st": pa.array([{"x": 1, "y": "a"}, None, {"x": 3, "y": None}]),
        "bin": pa.array([b"a", None, b"\x00"]),
        "u": pa.array([1, 2, 3], pa.uint8()),
        "tns": pa.array([0, None, 10**15], pa.timestamp("ns", "America/New_York")),
    })
    buf = io.BytesIO()
    vio.write_ipc(buf, t)
    df = pl.read_vortex_ipc(buf.getvalue())
    assert df.schema == pl.Schema({"l": pl.List(pl.Int64), "st": pl.Struct({"x": pl.Int64,
                                   "y": pl.String}), "bin": pl.Binary, "u": pl.UInt8,
                                   "tns": pl.Datetime("ns", "America/New_York")})
    assert_frame_equal(df, pl.DataFrame(t))
    got = pl.scan_vortex_ipc(buf.getvalue()).filter(pl.col("bin") == b"\x00").collect()
    assert got["u"].to_list() == [3]


# -- sources --------------------------------------------------------------------------------


def test_sources_bytes_file_object_list(files: dict) -> None:
    data = files["vx"].read_bytes()
    exp = pl.read_ipc(files["arrow"]).filter(pl.col("s") == "zz")
    q = lambda lf: lf.filter(pl.col("s") == "zz").collect()  # noqa: E731
    assert_frame_equal(q(pl.scan_vortex_ipc(data)), exp)
    lf = pl.scan_vortex_ipc(io.BytesIO(data))
    assert_frame_equal(q(lf), exp)
    assert_frame_equal(q(lf), exp)  # a file object can be collected twice
    both = q(pl.scan_vortex_ipc([files["vx"], data]))
    assert_frame_equal(both, pl.concat([exp, exp]))
    assert_frame_equal(pl.read_vortex_ipc(files["vx"], columns=["id"], n_rows=3),
                       pl.DataFrame({"id": [0, 1, 2]}))


def test_n_rows_and_row_index(files: dict) -> None:
    scans: list[vio.Scan] = []
    df = pl.scan_vortex_ipc(files["vx"], n_rows=5, row_index_name="r", row_index_offset=10,
                            on_scan=scans.append).collect()
    assert df["r"].to_list() == list(range(10, 15))
    assert df["id"].to_list() == list(range(5))
    assert sum(s.stats.rows_scanned for s in scans) <= CHUNK


# -- pushdown -------------------------------------------------------------------------------


def _scans(lf_fn: Callable, src: object, engine: str = "in-memory") -> tuple:
    scans: list[vio.Scan] = []
    df = lf_fn(pl.scan_vortex_ipc(src, on_scan=scans.append)).collect(engine=engine)
    return df, scans


@pytest.mark.parametrize("engine", ENGINES)
def test_predicate_reaches_the_scan_and_decodes_less(files: dict, engine: str) -> None:
    df, scans = _scans(lambda lf: lf.filter(pl.col("s") == "AAPL"), files["vx"], engine)
    _, full = _scans(lambda lf: lf, files["vx"], engine)
    (s,), (f,) = scans, full
    assert s.filter is not None and s.filter.same_as(vio.expr.col("s") == "AAPL")
    assert f.filter is None
    assert s.stats.rows_returned == df.height < s.stats.rows_scanned == N
    assert f.stats.rows_returned == N


def test_sorted_column_prunes_chunks(files: dict) -> None:
    df, (s,) = _scans(lambda lf: lf.filter((pl.col("id") >= 1000) & (pl.col("id") < 1300)),
                      files["vx"])
    assert df["id"].to_list() == list(range(1000, 1300))
    nchunks = -(-N // CHUNK)
    assert s.stats.chunks == nchunks
    assert s.stats.chunks_pruned >= nchunks - 3  # 300 rows span at most 3 chunks of 256
    assert s.stats.rows_returned == 300
    _, (full,) = _scans(lambda lf: lf, files["vx"])
    assert 0 < s.stats.bytes_canonicalized < full.stats.bytes_canonicalized / 3


def test_untranslatable_conjuncts_stay_with_polars(files: dict) -> None:
    q = lambda lf: lf.filter(  # noqa: E731
        (pl.col("s").str.contains("A")) & (pl.col("dec") > 0) & ((pl.col("i") + 1) > 3))
    df, (s,) = _scans(q, files["vx"])
    assert_frame_equal(df, q(pl.scan_ipc(files["arrow"])).collect())
    assert s.filter is not None and s.filter.same_as(vio.expr.col("dec") > decimal.Decimal(0))
    # the whole predicate is the reader's (Polars does not filter again): explain shows it
    # under the scan, and how the reader applies it
    plan = q(pl.scan_vortex_ipc(files["vx"])).explain()
    assert "SELECTION:" in plan and "str.contains" in plan
    assert "filters: applied by the reader" in plan


def test_untranslatable_only_pushes_nothing(files: dict) -> None:
    q = lambda lf: lf.filter(pl.col("s").str.contains("x"))  # noqa: E731
    df, (s,) = _scans(q, files["vx"])
    assert s.filter is None
    assert_frame_equal(df, q(pl.scan_ipc(files["arrow"])).collect())


def test_float_comparisons_follow_polars_nan_order(files: dict) -> None:
    df, (s,) = _scans(lambda lf: lf.filter(pl.col("f") > 1.0), files["vx"])
    assert repr(s.filter) == "~(col('f') <= 1.0)"
    assert df["f"].is_nan().any()  # NaN sorts above every number in Polars
    _, (s2,) = _scans(lambda lf: lf.filter(pl.col("f") == float("nan")), files["vx"])
    assert s2.filter is None  # NaN/inf literals serialize as null: not pushed


@pytest.mark.parametrize("engine", ENGINES)
def test_slices_are_pushed(files: dict, engine: str, scan_path: str) -> None:
    df, scans = _scans(lambda lf: lf.tail(5), files["vx"], engine)
    assert df["id"].to_list() == list(range(N - 5, N))
    if scan_path == "io-source":
        # Polars hands a Python IO source no slice but head's n_rows (why only small files
        # get one): the same rows, the whole file read
        assert sum(s.stats.rows_scanned for s in scans) == N
        df, scans = _scans(lambda lf: lf.head(7), files["vx"], engine)
        assert df["id"].to_list() == list(range(7))
        assert sum(s.stats.rows_scanned for s in scans) <= CHUNK
        return
    assert sum(s.stats.rows_scanned for s in scans) == 5
    df, scans = _scans(lambda lf: lf.slice(1000, 20), files["vx"], engine)
    assert df["id"].to_list() == list(range(1000, 1020))
    assert sum(s.stats.rows_scanned for s in scans) <= CHUNK  # one chunk, not N rows
    assert sum(s.stats.bytes_canonicalized for s in scans) < 20 * 200


def test_projection_is_pushed(files: dict) -> None:
    # the filter runs in the scan, on the encoded data; Polars takes its column (of the
    # selected rows only) and drops it, and does not filter again
    df, (s,) = _scans(lambda lf: lf.filter(pl.col("i") > 0).select("d"), files["vx"])
    assert set(s.schema.names) == {"d", "i"}
    assert str(s.filter) == "(col('i') > 0)"
    assert s.stats.rows_returned == df.height
    want = pl.DataFrame(files["table"]).filter(pl.col("i") > 0).select("d")
    assert df.equals(want)
    # a conjunct that does not translate is evaluated on each batch (by Polars, in the reader)
    df, (s,) = _scans(lambda lf: lf.filter((pl.col("i") > 0) & (pl.col("s").str.contains("a")))
                      .select("d"), files["vx"])
    assert set(s.schema.names) == {"s", "d", "i"}
    assert str(s.filter) == "(col('i') > 0)"
    assert df.equals(pl.DataFrame(files["table"])
                     .filter((pl.col("i") > 0) & pl.col("s").str.contains("a")).select("d"))


def test_exact_filter_with_slices(files: dict) -> None:
    """A filter run by the scan, then head / slice / tail of its rows (Polars counts the
    filtered rows for tail through n_rows_in_file)."""
    df = pl.DataFrame(files["table"])
    for q in (lambda lf: lf.filter(pl.col("i") > 0).head(7),
              lambda lf: lf.filter(pl.col("i") > 0).slice(5, 9),
              lambda lf: lf.filter(pl.col("i") > 0).tail(6),
              lambda lf: lf.filter(pl.col("i") > 0).select(pl.len())):
        assert q(pl.scan_vortex_ipc(files["vx"])).collect().equals(q(df.lazy()).collect())


def test_translate_predicate_splits_conjuncts() -> None:
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("f", pa.float64())])
    pushed, kept = pp.translate_predicate(
        [(pl.col("a") > 1) & pl.col("s").str.contains("x") & pl.col("f").is_not_null()], schema)
    assert repr(pushed) == "((col('a') > 1) & col('f').is_not_null())"
    assert len(kept) == 1 and "contains" in str(kept[0])
    pushed, kept = pp.translate_predicate([pl.col("a").is_in([1, 2, 3])], schema)
    assert repr(pushed) == "col('a').is_in([1, 2, 3])" and kept == []
    pushed, kept = pp.translate_predicate([pl.col("s") > 3], schema)  # no such comparison
    assert pushed is None and len(kept) == 1


def _random_predicate(rng: np.random.Generator, t: pa.Table, depth: int = 0) -> pl.Expr:
    """A random filter over the supported shapes (and a few untranslatable ones)."""
    def value(c: str) -> object:
        return t[c][int(rng.integers(0, t.num_rows))].as_py()

    if depth < 2 and rng.random() < 0.45:
        a, b = _random_predicate(rng, t, depth + 1), _random_predicate(rng, t, depth + 1)
        k = rng.integers(0, 3)
        return a & b if k == 0 else a | b if k == 1 else ~a
    c = str(rng.choice(["id", "i", "f", "s", "d", "ts", "dec"]))
    kind = int(rng.integers(0, 9))
    if kind <= 3:
        v = value(c)
        if v is None:
            return pl.col(c).is_null()
        return CMP[str(rng.choice(list(CMP)))](pl.col(c), v)
    if kind == 4:
        vals = [value(c) for _ in range(int(rng.integers(0, 4)))]
        return pl.col(c).is_in([v for v in vals if v is not None] + [None] * int(rng.random() < .3),
                               nulls_equal=bool(rng.random() < 0.3))
    if kind == 5:
        lo, hi = value(c), value(c)
        if lo is None or hi is None:
            return pl.col(c).is_not_null()
        lo, hi = min(lo, hi), max(lo, hi)
        return pl.col(c).is_between(pl.lit(lo), pl.lit(hi), closed=str(rng.choice(["both", "left", "right",
                                                                     "none"])))
    if kind == 6:
        return pl.col(c).is_null() if rng.random() < 0.5 else pl.col(c).is_not_null()
    if kind == 7:
        return pl.col("b") if rng.random() < 0.5 else ~pl.col("b")
    return pl.col("s").str.contains("a") if rng.random() < 0.5 else (pl.col("i") + 1) > 3


def test_pushed_filters_are_exact(files: dict) -> None:
    """Random predicates: the rows the pushed vortex filter keeps are exactly Polars' rows
    when everything was pushed, and a superset when a conjunct stayed with Polars."""
    rng = np.random.default_rng(11)
    t = files["table"]
    df = pl.DataFrame(t)
    data = files["vx"].read_bytes()
    n_exact = 0
    for _ in range(40):
        pred = _random_predicate(rng, t)
        want = set(df.filter(pred)["id"].to_list())
        got, scans = _scans(lambda lf, p=pred: lf.filter(p).select("id"), data)
        assert set(got["id"].to_list()) == want, pred
        if not scans or scans[0].filter is None:
            continue
        pushed = vio.scan(data, columns=["id"], filter=scans[0].filter).to_arrow()
        kept_rows = set(pushed["id"].to_pylist())
        _, kept = pp.translate_predicate([pred], vio.StreamReader(data).schema)
        if kept:  # a conjunct stayed with Polars
            assert want <= kept_rows, pred
        else:
            assert kept_rows == want, pred
            n_exact += 1
    assert n_exact > 10


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_file(tmp_path: Path, files: dict, engine: str) -> None:
    missing = tmp_path / "nope.vxi"
    with pytest.raises(FileNotFoundError, match=r"nope\.vxi"):
        pl.scan_vortex_ipc(missing).collect(engine=engine)
    with pytest.raises(FileNotFoundError, match=r"nope\.vxi"):
        pl.scan_vortex_ipc([files["vx"], missing]).collect(engine=engine)
    with pytest.raises(FileNotFoundError, match="no files match"):
        pl.scan_vortex_ipc(str(tmp_path / "zz*.vxi")).collect(engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_corrupt_streams(tmp_path: Path, files: dict, engine: str) -> None:
    data = files["vx"].read_bytes()
    trunc = tmp_path / "trunc.vxi"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(vio.TruncatedStreamError, match=r"trunc\.vxi") as ei:
        pl.scan_vortex_ipc(trunc).collect(engine=engine)
    assert ei.value.message_index is not None and ei.value.message_index > 0
    with pytest.raises(vio.VortexIPCError, match=r"<bytes #0>"):
        pl.scan_vortex_ipc(b"not a vortex stream at all").collect(engine=engine)
    with pytest.raises(vio.TruncatedStreamError, match=r"<bytes #1>"):
        pl.scan_vortex_ipc([data, data[:-3]]).collect(engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_unsupported_encoding(engine: str) -> None:
    buf = io.BytesIO()
    vio.write_ipc(buf, pa.table({"a": [1, 2, 3]}), compress=False)
    bad = buf.getvalue().replace(b"vortex.primitive", b"vortex.primitivX")
    with pytest.raises(vio.UnsupportedError, match=r"vortex\.primitivX"):
        pl.scan_vortex_ipc(bad).collect(engine=engine)


# -- writing --------------------------------------------------------------------------------


def test_write_ipc_round_trip(files: dict) -> None:
    df = pl.read_ipc(files["arrow"])
    buf = io.BytesIO()
    n = df.vortex.write_ipc(buf, metadata={"origin": "test"})
    assert n == len(buf.getvalue()) > 0
    with vio.StreamReader(buf.getvalue()) as r:
        assert dict(r.metadata) == {b"origin": b"test"}
    assert_frame_equal(pl.read_vortex_ipc(buf.getvalue()), df)
    buf2 = io.BytesIO()
    pp.write_ipc(df, buf2, compress=False)
    assert_frame_equal(pl.read_vortex_ipc(buf2.getvalue()), df)


def test_sink_ipc_streams_batches(files: dict, tmp_path: Path) -> None:
    q = pl.scan_vortex_ipc(files["vx"]).filter(pl.col("i") > -40).select("id", "s", "ts", "dec")
    out = tmp_path / "sink.vxi"
    n = q.vortex.sink_ipc(out, chunk_rows=500)
    assert n == out.stat().st_size
    sizes = [len(b.array) for b in vio.StreamReader(out)]
    assert len(sizes) > 1 and max(sizes) <= 500
    assert_frame_equal(pl.read_vortex_ipc(out), q.collect())
    empty = tmp_path / "empty.vxi"
    pp.sink_ipc(q.filter(pl.col("id") < 0), empty)
    assert_frame_equal(pl.read_vortex_ipc(empty), q.collect().clear())


# -- registration ---------------------------------------------------------------------------


def test_register_is_idempotent_and_import_is_light() -> None:
    vio.register_polars()
    vio.register_polars()
    assert pl.scan_vortex_ipc is pp.scan_vortex_ipc
    assert pl.read_vortex_ipc is pp.read_vortex_ipc
    code = "import sys, vortex_io; assert 'polars' not in sys.modules, 'polars imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
