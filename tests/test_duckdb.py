"""DuckDB: ``vortex_ipc('...')`` against the same data registered as an Arrow table.

Every query runs twice on one connection: once over ``vortex_ipc(<file>)`` and once over
``ref``, the pyarrow Table the file was written from (DuckDB's own, well-tested Arrow scan
and filter). The two results must be equal. Pushdown is checked in ``EXPLAIN`` (the filter
sits in the scan's ``Filters:``, no ``FILTER`` operator above it) and in ``ScanStats``.
"""

from __future__ import annotations

import datetime
import decimal
import math
import os
import re
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vortex_io as vio

duckdb = pytest.importorskip("duckdb")
duckdb_ext = pytest.importorskip("vortex_io.integrations.duckdb_ext")

ROOT = Path(__file__).resolve().parent.parent
N = 4000
CHUNK = 1000
TZ = "America/New_York"
T0_US = 1_704_205_800_000_000  # 2024-01-02 14:30:00 UTC


def make_table(n: int = N, seed: int = 7) -> pa.Table:
    """Every column type the adapter translates filters for, with nulls, NaN and -0.0."""
    rng = np.random.default_rng(seed)

    def nulls(p: float) -> np.ndarray:
        return rng.random(n) < p

    f = rng.normal(0, 1, n).round(2)
    f[rng.random(n) < 0.03] = np.nan
    f[rng.random(n) < 0.02] = -0.0
    f[rng.random(n) < 0.02] = 0.0
    words = np.array(["a", "b", "zz", "ü", "é", "", "AAPL", "it's"], dtype=object)
    s = words[rng.integers(0, len(words), n)]
    k = rng.integers(0, 400, n)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "i": pa.array(rng.integers(-50, 50, n), mask=nulls(0.1)),
        "i32": pa.array(rng.integers(0, 20, n).astype(np.int32), mask=nulls(0.05)),
        "u8": pa.array(rng.integers(0, 256, n).astype(np.uint8)),
        "f": pa.array(f, mask=nulls(0.05)),
        "f32": pa.array(rng.normal(0, 1, n).astype(np.float32).round(1), mask=nulls(0.05)),
        "s": pa.array(s, pa.string(), mask=nulls(0.1)),
        "b": pa.array(rng.random(n) < 0.5, mask=nulls(0.1)),
        "bin": pa.array([bytes([65 + x % 3, 66]) for x in k], pa.binary(), mask=nulls(0.1)),
        "d": pa.array((k + 19_000).astype(np.int32), pa.date32(), mask=nulls(0.1)),
        "ts": pa.array(T0_US + np.sort(rng.integers(0, 10**10, n)), pa.timestamp("us", TZ),
                       mask=nulls(0.1)),
        "tsm": pa.array(T0_US // 1000 + rng.integers(0, 10**7, n), pa.timestamp("ms", "UTC"),
                        mask=nulls(0.1)),
        "tms": pa.array(T0_US // 1000 + rng.integers(0, 10**7, n), pa.timestamp("ms"),
                        mask=nulls(0.1)),
        "tus": pa.array(T0_US + rng.integers(0, 10**10, n), pa.timestamp("us"), mask=nulls(0.1)),
        "tod": pa.array(rng.integers(0, 86_400, n) * 1_000_000, pa.time64("us"), mask=nulls(0.1)),
        "tsn": pa.array(T0_US * 1000 + rng.integers(0, 10**12, n), pa.timestamp("ns")),
        "dec": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-999, 999, n)],
                        pa.decimal128(12, 2), mask=nulls(0.1)),
        "li": pa.array([[int(x), int(x) + 1] if x % 3 else None for x in k],
                       pa.list_(pa.int32())),
        "st": pa.array([{"x": int(x), "y": str(x % 5)} if x % 4 else None for x in k],
                       pa.struct([("x", pa.int64()), ("y", pa.string())])),
    })


TABLE = make_table()
#: the row ranges of TABLE in the files parts/part-{0,1,2}.vxipc
PARTS = [(0, 1500), (1500, 3000), (3000, N)]
#: every vortex_io.Scan the module's connection started (register(on_scan=...))
SCANS: list[vio.Scan] = []


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("vx")
    main = d / "main.vxipc"
    vio.write_ipc(main, TABLE, chunk_rows=CHUNK)
    parts = d / "parts"
    parts.mkdir()
    for j, (lo, hi) in enumerate(PARTS):
        vio.write_ipc(parts / f"part-{j}.vxipc", TABLE.slice(lo, hi - lo), chunk_rows=700)
    other = d / "other.vxipc"
    vio.write_ipc(other, make_table(1500, seed=11).select(["id", "s", "i", "dec"]),
                  chunk_rows=500)
    return {"main": str(main), "parts": str(parts), "other": str(other)}


@pytest.fixture(scope="module")
def con(files: dict[str, str]) -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    vio.register_duckdb(c, on_scan=SCANS.append)
    c.register("ref", TABLE)
    c.register("ref_other", make_table(1500, seed=11).select(["id", "s", "i", "dec"]))
    yield c
    c.close()


def norm(rows: list[tuple]) -> list[tuple]:
    """Rows with NaN made comparable (NaN != NaN would fail an equal result)."""
    def one(v):
        if isinstance(v, float) and math.isnan(v):
            return "NaN"
        if isinstance(v, dict):
            return tuple(sorted((k, one(x)) for k, x in v.items()))
        if isinstance(v, list):
            return tuple(one(x) for x in v)
        return v

    return [tuple(one(v) for v in r) for r in rows]


def both(con, sql: str, files: dict[str, str], *, vx: str = "main") -> tuple[list, list]:
    """``sql`` with ``{t}`` over vortex_ipc and over the Arrow table."""
    src = files[vx]
    ours = con.sql(sql.format(t=f"vortex_ipc('{src}')")).fetchall()
    ref = con.sql(sql.format(t="ref")).fetchall()
    return norm(ours), norm(ref)


def plan(con, sql: str) -> str:
    return "\n".join(r[1] for r in con.sql("EXPLAIN " + sql).fetchall())


def has_filter_op(p: str) -> bool:
    """Whether the plan has a Filter operator (DuckDB filtering rows itself)."""
    return re.search(r"─ Filter ─|\bFILTER\b", p) is not None


def scan_box(p: str) -> str:
    """The text of the Python Arrow scan's box in an EXPLAIN plan (its filters etc.)."""
    i = p.index("PYTHON_ARROW_SCAN")
    return p[i:]


# -- filters of every supported shape, with nulls -----------------------------------------

PUSHED = [
    "i = 5", "i <> 5", "i < -40", "i <= -40", "i > 45", "i >= 45", "NOT (i = 5)",
    "i BETWEEN -3 AND 3", "i IN (1, 2, 3, 49)", "NOT (i IN (1, 2))", "i IS NULL",
    "i IS NOT NULL", "i32 = 7", "i32 IN (0, 19, 7)", "u8 >= 200", "u8 < 3",
    "s = 'a'", "s <> 'a'", "s IN ('a', 'ü', 'it''s', 'nothere')", "s < 'b'", "s >= 'é'",
    "s = ''", "s IS NULL", "NOT (s IN ('a', 'b'))",
    "f > 0.5", "f >= 0.5", "f < -0.5", "f <= 0.0", "f = 0.0", "f <> 0.25", "f IN (0.0, 1.5)",
    "NOT (f > 0.5)", "f BETWEEN -0.5 AND 0.5", "f32 > 0.5", "f32 = CAST(0.5 AS REAL)",
    "b = true", "b = false", "b IS NULL",
    "bin = 'AB'::BLOB", "bin > 'AB'::BLOB",
    "d = DATE '2022-01-01'", "d BETWEEN DATE '2022-01-01' AND DATE '2022-02-01'",
    "ts > TIMESTAMPTZ '2024-01-02 16:00:00+00'", "ts <= TIMESTAMPTZ '2024-01-03 09:00:00-05'",
    "ts IS NULL", "tus >= TIMESTAMP '2024-01-02 15:00:00'", "tus < TIMESTAMP '2024-01-03 16:00:00.5'",
    "tod BETWEEN TIME '09:30:00' AND TIME '16:00:00'", "tms IS NOT NULL",
    "tms >= TIMESTAMP_MS '2024-01-02 15:00:00'",
    "tsm >= TIMESTAMPTZ '2024-01-02 16:00:00.001+00'", "tsm = TIMESTAMPTZ '2024-01-02 16:00:00+00'",
    "dec BETWEEN -1.50 AND 2.25", "dec = 3.25", "dec > 0", "dec IN (1.00, -2.50, 3.33)",
    "li IS NULL", "st IS NOT NULL",
    "(i < 0 OR s = 'a') AND dec > 2", "i > 10 AND NOT (s = 'a' OR s IS NULL)",
    "(f > 0 AND b = true) OR i IS NULL",
]

LEFT_TO_DUCKDB = [
    "s LIKE 'a%'", "coalesce(i, 0) = 0", "st.x > 100", "f = 'NaN'::DOUBLE",
    "tsn > TIMESTAMP '2024-01-02 14:35:00'", "i = 5 OR s LIKE 'z%'",
    # an instant between two milliseconds against a millisecond column: refused, not rounded
    "tsm > TIMESTAMPTZ '2024-01-02 16:00:00.0005+00'",
]


@pytest.mark.parametrize("where", PUSHED + LEFT_TO_DUCKDB)
def test_filters_match_arrow(con, files, where: str) -> None:
    # exactly the same rows (their ids), and aggregates of other columns over them
    sql = ("SELECT list(id ORDER BY id), count(*), sum(i), min(s), max(dec) FROM {t} WHERE "
           + where)
    ours, ref = both(con, sql, files)
    assert ours == ref


def _pushed_plan(con, files, where: str) -> str:
    return plan(con, f"SELECT id FROM vortex_ipc('{files['main']}') WHERE {where}")


@pytest.mark.parametrize("where", PUSHED)
def test_supported_filters_are_pushed(con, files, where: str) -> None:
    p = _pushed_plan(con, files, where)
    box = scan_box(p)
    assert "Filters:" in box, p
    assert not has_filter_op(p), p  # DuckDB applies nothing above the scan


@pytest.mark.parametrize("where", LEFT_TO_DUCKDB)
def test_untranslatable_filters_stay_in_duckdb(con, files, where: str) -> None:
    p = _pushed_plan(con, files, where)
    ref = plan(con, f"SELECT id FROM ref WHERE {where}")
    # the source refused (or was not offered) the predicate: DuckDB filters the rows itself
    assert has_filter_op(p), p
    assert has_filter_op(ref), ref


def test_pushdown_shows_in_scan_stats(con, files) -> None:
    SCANS.clear()
    n = con.sql(f"SELECT count(*) FROM vortex_ipc('{files['main']}') WHERE s = 'a'").fetchall()[0][0]
    assert n == con.sql("SELECT count(*) FROM ref WHERE s = 'a'").fetchall()[0][0] > 0
    (s,) = SCANS
    assert s.filter is not None and "col('s')" in repr(s.filter)
    assert s.columns is not None and len(s.columns) <= 1  # count(*) needs no column's values
    assert s.stats.rows_scanned == N
    assert s.stats.rows_returned == n  # the rows DuckDB received are the filtered ones
    # a range on the sorted column: chunks are pruned by their statistics
    SCANS.clear()
    got = con.sql(f"SELECT sum(i) FROM vortex_ipc('{files['main']}') WHERE id < 1500").fetchall()
    assert got == con.sql("SELECT sum(i) FROM ref WHERE id < 1500").fetchall()
    (s,) = SCANS
    assert s.stats.chunks == N // CHUNK
    assert s.stats.chunks_pruned == 2  # ids 2000.. (min/max statistics of each chunk)
    assert s.stats.rows_returned == 1500


def test_projection_is_pushed(con, files) -> None:
    sql = f"SELECT s, dec FROM vortex_ipc('{files['main']}') WHERE i > 0"
    box = scan_box(plan(con, sql))
    assert re.search(r"Projections:\s*s\s*│?\s*│?\s*dec|Projections: s", box), box
    SCANS.clear()
    con.sql(sql).fetchall()
    (s,) = SCANS
    assert s.columns == ["s", "dec"]
    assert "col('i')" in repr(s.filter)  # filtered on a column it does not return


# -- types, projections, aggregates, joins, globs, LIMIT, count(*) ------------------------


def test_all_types_round_trip(con, files) -> None:
    ours = con.sql(f"SELECT * FROM vortex_ipc('{files['main']}') ORDER BY id").to_arrow_table()
    ref = con.sql("SELECT * FROM ref ORDER BY id").to_arrow_table()
    assert ours.schema == ref.schema
    assert ours.num_rows == N
    for name in ours.column_names:  # (Table.equals fails on NaN == NaN)
        assert norm([(v,) for v in ours[name].to_pylist()]) == \
            norm([(v,) for v in ref[name].to_pylist()]), name
    desc = dict((r[0], r[1]) for r in con.sql(
        f"DESCRIBE SELECT * FROM vortex_ipc('{files['main']}')").fetchall())
    assert desc["ts"] == "TIMESTAMP WITH TIME ZONE"
    assert desc["dec"] == "DECIMAL(12,2)"
    assert desc["li"] == "INTEGER[]"
    assert desc["st"] == "STRUCT(x BIGINT, y VARCHAR)"
    assert desc["s"] == "VARCHAR"
    assert desc["tsn"] == "TIMESTAMP_NS"


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM {t}",
    "SELECT count(*), count(i), count(s), count(li), count(st) FROM {t}",
    "SELECT s, count(*), sum(i), avg(f32), min(dec), max(ts) FROM {t} GROUP BY s ORDER BY s",
    "SELECT b, sum(dec), count(DISTINCT s) FROM {t} GROUP BY b ORDER BY b",
    "SELECT st.y, sum(st.x), sum(len(li)) FROM {t} GROUP BY ALL ORDER BY 1",
    "SELECT d, max(tms), min(tsn) FROM {t} WHERE d < DATE '2022-01-15' GROUP BY d ORDER BY d",
    "SELECT id, s FROM {t} ORDER BY i DESC NULLS LAST, id LIMIT 7",
    "SELECT * FROM {t} WHERE s = 'b' ORDER BY id LIMIT 3 OFFSET 2",
    "SELECT dec, li, st FROM {t} WHERE id IN (0, 17, 3999) ORDER BY id",
    "SELECT * FROM {t} WHERE i > 0 AND s <> 'a' ORDER BY id",
])
def test_queries_match_arrow(con, files, sql: str) -> None:
    ours, ref = both(con, sql, files)
    assert ours == ref


def test_limit_without_order_returns_that_many_rows(con, tmp_path) -> None:
    # 300 small batches: the scan reads the first alone, then windows of up to NATIVE_WINDOW
    # (the numpy reference path: batch by batch)
    from vortex_io._scan import NATIVE_WINDOW

    t = make_table(30_000)
    path = tmp_path / "many.vxi"
    vio.write_ipc(path, t, compress=True, chunk_rows=100)
    SCANS.clear()
    rows = con.sql(f"SELECT id, s FROM vortex_ipc('{path}') LIMIT 5").fetchall()
    assert len(rows) == 5
    assert set(rows) <= set(zip(t["id"].to_pylist(), t["s"].to_pylist()))
    (s,) = SCANS
    # DuckDB stopped pulling: the rest was never read
    assert s.stats.chunks <= 1 + 2 * NATIVE_WINDOW < 300


def test_join_of_two_streams(con, files) -> None:
    sql = ("SELECT a.id, a.s, b.i, b.dec FROM {a} a JOIN {b} b ON a.id = b.id AND a.s = b.s "
           "WHERE b.i > 0 ORDER BY a.id")
    ours = con.sql(sql.format(a=f"vortex_ipc('{files['main']}')",
                              b=f"vortex_ipc('{files['other']}')")).fetchall()
    ref = con.sql(sql.format(a="ref", b="ref_other")).fetchall()
    assert ours == ref and len(ours) > 10
    # a self-join through a CTE
    cte = ("WITH v AS (SELECT * FROM {t}) SELECT count(*), sum(x.i * y.i) FROM v x "
           "JOIN v y ON x.s = y.s AND x.i32 = y.i32 WHERE x.d < y.d")
    ours, ref = both(con, cte, files)
    assert ours == ref


def test_glob_and_list_of_paths(con, files) -> None:
    g = os.path.join(files["parts"], "part-*.vxipc")
    parts = sorted(str(p) for p in Path(files["parts"]).glob("part-*.vxipc"))
    sql = "SELECT count(*), sum(i), count(DISTINCT s), max(id) FROM {t} WHERE i IS NOT NULL"
    ref = con.sql(sql.format(t="ref")).fetchall()
    assert con.sql(sql.format(t=f"vortex_ipc('{g}')")).fetchall() == ref
    lst = "[" + ", ".join(f"'{p}'" for p in parts) + "]"
    assert con.sql(sql.format(t=f"vortex_ipc({lst})")).fetchall() == ref
    # a list may hold globs too; order of the files is the listed order
    rows = con.sql(f"SELECT id FROM vortex_ipc(['{parts[2]}', '{parts[0]}'])").fetchall()
    assert [r[0] for r in rows] == list(range(*PARTS[2])) + list(range(*PARTS[0]))
    SCANS.clear()
    con.sql(f"SELECT count(*) FROM vortex_ipc('{g}') WHERE s = 'a'").fetchall()
    assert SCANS[-1].stats.sources == 3


def test_query_parameter_and_prepared_statement(con, files) -> None:
    want = con.sql("SELECT count(*) FROM ref WHERE s = 'b'").fetchall()[0]
    assert con.execute("SELECT count(*) FROM vortex_ipc(?) WHERE s = ?",
                       [files["main"], "b"]).fetchall()[0] == want
    con.execute(f"PREPARE q AS SELECT count(*) FROM vortex_ipc('{files['main']}') WHERE s = ?")
    try:
        for v in ("a", "b", "zz"):
            assert con.execute(f"EXECUTE q('{v}')").fetchall()[0] == con.execute(
                "SELECT count(*) FROM ref WHERE s = ?", [v]).fetchall()[0]
    finally:
        con.execute("DEALLOCATE q")


def test_relation_api(con, files) -> None:
    rel = con.sql(f"FROM vortex_ipc('{files['main']}')").filter("i32 = 3").aggregate("count(*)")
    assert rel.fetchall() == con.sql("SELECT count(*) FROM ref WHERE i32 = 3").fetchall()


# -- engines settings, threads, concurrency, changing files ---------------------------------


@pytest.mark.parametrize("threads", [1, 4])
def test_threads(files, threads: int) -> None:
    c = duckdb.connect(config={"threads": threads})
    vio.register_duckdb(c)
    c.register("ref", TABLE)
    assert c.sql("SELECT current_setting('threads')").fetchall()[0][0] == threads
    for sql in ["SELECT s, count(*), sum(i), max(dec) FROM {t} GROUP BY s ORDER BY s",
                "SELECT * FROM {t} WHERE f > 0.5 AND s IN ('a', 'b') ORDER BY id",
                "SELECT count(*) FROM {t} a JOIN {t} b USING (id) WHERE a.i32 = b.i32"]:
        assert norm(c.sql(sql.format(t=f"vortex_ipc('{files['main']}')")).fetchall()) == \
            norm(c.sql(sql.format(t="ref")).fetchall())
    c.close()


def test_concurrent_queries_on_cursors(con, files) -> None:
    queries = [
        "SELECT count(*), sum(i) FROM {t} WHERE s = 'a'",
        "SELECT s, max(dec) FROM {t} GROUP BY s ORDER BY s",
        "SELECT id FROM {t} WHERE f > 1.0 AND ts IS NOT NULL ORDER BY id",
        "SELECT count(*) FROM {t} WHERE i BETWEEN -5 AND 5 OR b",
    ]
    want = [norm(con.sql(q.format(t="ref")).fetchall()) for q in queries]
    ROUNDS = 2
    errors: list[BaseException] = []
    results: dict[tuple[int, int], list] = {}

    def work(k: int) -> None:
        cur = con.cursor()
        try:
            for r in range(ROUNDS):
                for j, q in enumerate(queries):
                    if (j + k + r) % 2:
                        src = f"vortex_ipc('{files['main']}')"
                    else:
                        src = f"vortex_ipc('{os.path.join(files['parts'], '*.vxipc')}')"
                    results[(k, j + 10 * r)] = norm(cur.sql(q.format(t=src)).fetchall())
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            cur.close()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(results) == 4 * ROUNDS * len(queries)
    for (_, jr), got in results.items():
        assert got == want[jr % 10]


def test_changed_file_is_read_afresh(con, tmp_path) -> None:
    p = tmp_path / "changing.vxipc"
    vio.write_ipc(p, pa.table({"x": [1, 2, 3]}))
    sql = f"SELECT count(*), sum(x) FROM vortex_ipc('{p}')"
    rel = con.sql(sql)
    assert con.sql(sql).fetchall() == [(3, 6)]
    vio.write_ipc(p, pa.table({"x": [10, 20]}))
    assert con.sql(sql).fetchall() == [(2, 30)]
    assert rel.fetchall() == [(2, 30)]  # a relation made before the change runs anew
    # a new schema is picked up too
    vio.write_ipc(p, pa.table({"y": ["a"], "x": [5]}))
    assert con.sql(f"SELECT y, x FROM vortex_ipc('{p}')").fetchall() == [("a", 5)]
    cur = con.cursor()
    vio.write_ipc(p, pa.table({"y": ["b", "c"], "x": [7, 8]}))
    assert cur.sql(f"SELECT y FROM vortex_ipc('{p}') WHERE x > 7").fetchall() == [("c",)]


# -- errors ---------------------------------------------------------------------------------


def _duckdb_error(con: Any, sql: str) -> str:
    """The message of the error DuckDB raises for ``sql``.

    DuckDB's Python package does not let an exception a Python function raised inside a
    query propagate: the caller gets ``duckdb.InvalidInputException`` (no ``__cause__``, not a
    ``vortex_io`` class), whose message holds the error's class name and text."""
    with pytest.raises(duckdb.InvalidInputException) as ei:
        con.sql(sql).fetchall()
    e = ei.value
    assert not isinstance(e, vio.VortexIPCError) and e.__cause__ is None
    return str(e)


def _direct_error(read: Any, path: Path) -> tuple[str, str]:
    """The class name and the ``(file, message N, byte offset M)`` of the error ``read(path)``
    raises (vortex_io's own reading)."""
    with pytest.raises(vio.VortexIPCError) as ei:
        read(path)
    e = ei.value
    assert e.source == str(path) and e.message_index is not None and e.offset is not None
    return type(e).__name__, f"({path}, message {e.message_index}, byte offset {e.offset})"


def test_missing_file_is_named(con, tmp_path) -> None:
    p = tmp_path / "nope.vxipc"
    msg = _duckdb_error(con, f"SELECT * FROM vortex_ipc('{p}')")
    assert msg == ("Invalid Input Error: Python exception occurred while executing the UDF: "
                   f'FileNotFoundError: vortex_ipc: no files found that match the pattern "{p}"')
    g = tmp_path / "*.nomatch"
    msg = _duckdb_error(con, f"SELECT * FROM vortex_ipc('{g}')")
    assert f'FileNotFoundError: vortex_ipc: no files found that match the pattern "{g}"' in msg
    # one missing file of a list is named
    good = tmp_path / "good.vxipc"
    vio.write_ipc(good, TABLE)
    msg = _duckdb_error(con, f"SELECT * FROM vortex_ipc(['{good}', '{p}'])")
    assert f'FileNotFoundError: vortex_ipc: no files found that match the pattern "{p}"' in msg


def test_read_errors_keep_their_class_and_place(con, tmp_path) -> None:
    """The vortex_io error of a truncated or malformed file reaches DuckDB's message whole:
    its class name, its reason, and the file, message and byte offset it names."""
    good = tmp_path / "good.vxipc"
    vio.write_ipc(good, TABLE, chunk_rows=CHUNK)
    raw = good.read_bytes()
    garbage = tmp_path / "garbage.vxipc"
    garbage.write_bytes(b"not a vortex stream at all" * 4)
    cut = tmp_path / "cut.vxipc"  # a later message is cut: found from the headers, at planning
    cut.write_bytes(raw[: len(raw) * 2 // 3])
    last = vio.message_spans(good)[-1]
    garbled = bytearray(raw)  # headers intact, a body garbled: found while DuckDB reads
    for i in range(last.offset + last.size - 40, last.offset + last.size - 1):
        garbled[i] ^= 0xFF
    bad_body = tmp_path / "garbled.vxipc"
    bad_body.write_bytes(bytes(garbled))
    # (file, what vortex_io reads it with, the class, DuckDB's wrapping: at planning the
    # resolver's, while reading the Arrow scan's)
    planning = "Invalid Input Error: Python exception occurred while executing the UDF: "
    reading = "Invalid Input Error: reading the Arrow source failed: "
    cases = [
        (garbage, vio.read_table, "MalformedStreamError", planning),
        (cut, vio.read_table, "TruncatedStreamError", planning),
        (bad_body, lambda p: vio.scan(p).to_arrow(), "MalformedStreamError", reading),
    ]
    many = tmp_path / "many"
    many.mkdir()
    vio.write_ipc(many / "a.vxipc", TABLE)
    for path, read, cls, wrapper in cases:
        name, where = _direct_error(read, path)
        assert name == cls
        msg = _duckdb_error(con, f"SELECT sum(id) FROM vortex_ipc('{path}')")
        assert msg.startswith(f"{wrapper}{cls}: ") and msg.endswith(where), msg
        # the same through a glob of several files, one of them bad
        (many / "b.vxipc").write_bytes(path.read_bytes())
        msg = _duckdb_error(con, f"SELECT sum(id) FROM vortex_ipc('{many}/*.vxipc')")
        where_b = where.replace(str(path), str(many / "b.vxipc"))
        assert msg.startswith(f"{wrapper}{cls}: ") and msg.endswith(where_b), msg
    # a connection stays usable after errors
    assert con.sql(f"SELECT count(*) FROM vortex_ipc('{good}')").fetchall()[0] == (N,)


def test_bad_source_argument(con) -> None:
    with pytest.raises(duckdb.Error, match="a source is a path"):
        con.sql("SELECT * FROM vortex_ipc(42)").fetchall()
    with pytest.raises(duckdb.Error, match="empty"):
        con.sql("SELECT * FROM vortex_ipc([]::VARCHAR[])").fetchall()


# -- writing query results --------------------------------------------------------------------


def test_write_ipc_from_a_query(con, files, tmp_path) -> None:
    out = tmp_path / "out.vxipc"
    sql = "SELECT id, s, dec, ts, li, st FROM {t} WHERE i32 < 5 ORDER BY id"
    vio.write_ipc(out, con.sql(sql.format(t=f"vortex_ipc('{files['main']}')")))
    back = vio.scan(str(out)).to_arrow()
    want = con.sql(sql.format(t="ref")).to_arrow_table()
    assert back.num_rows == want.num_rows > 0
    assert back.column("id").equals(want.column("id"))
    assert back.column("dec").equals(want.column("dec"))
    assert back.column("s").to_pylist() == want.column("s").to_pylist()
    assert back.column("st").to_pylist() == want.column("st").to_pylist()
    # and it reads back through DuckDB
    assert con.sql(f"SELECT count(*) FROM vortex_ipc('{out}')").fetchall()[0][0] == want.num_rows


# -- registration, version pin, import hygiene --------------------------------------------------


def test_register_on_a_fresh_connection_and_cursors(files) -> None:
    c = duckdb.connect()
    assert duckdb_ext.register(c) is c
    assert vio.register_duckdb(c) is c  # again: replaces, still works
    cur = c.cursor()
    assert cur.sql(f"SELECT count(*) FROM vortex_ipc('{files['main']}')").fetchall()[0] == (N,)
    assert cur.cursor().sql(f"SELECT count(*) FROM vortex_ipc('{files['other']}')").fetchall()[0] \
        == (1500,)
    c.close()
    with pytest.raises(TypeError):
        duckdb_ext.register(object())


def _live_sources() -> int:
    import gc

    gc.collect()
    return sum(isinstance(o, duckdb_ext.VortexSource) for o in gc.get_objects())


def test_planned_sources_are_released(con, files, monkeypatch) -> None:
    """What plans registered is dropped once newer plans replace it: the registry of a long
    session stays bounded."""
    monkeypatch.setattr(duckdb_ext, "_MAX_PENDING", 4)
    monkeypatch.setattr(duckdb_ext, "_RECENT_PLANS", 2)
    before = _live_sources()  # other tests' connections hold theirs
    for i in range(12):  # twelve requests, each planned anew
        q = f"SELECT count(*) FROM vortex_ipc('{files['main']}', filename := 'f{i}') WHERE s = 'a'"
        assert con.sql(q).fetchall() == con.sql(q).fetchall()
    assert len(duckdb_ext._PENDING) <= 4
    assert _live_sources() - before <= 4 + 2


def test_a_reused_plan_survives_its_replacement(con, files, monkeypatch) -> None:
    """A repeated request is answered with the sources an earlier planning registered; another
    thread may replace that plan (or ``register`` forget it) before DuckDB binds the names."""
    q = f"SELECT count(*) FROM vortex_ipc('{files['main']}') WHERE s = 'a'"
    want = con.sql(q).fetchall()  # planned: planning it again reuses the sources
    plan = duckdb_ext._Resolver.__call__

    def replaced_meanwhile(self: duckdb_ext._Resolver, request: str) -> str:
        sql = plan(self, request)
        self.forget()  # what a concurrent planning or register() does to the plan
        _live_sources()  # and whatever nothing holds is gone
        return sql

    monkeypatch.setattr(duckdb_ext._Resolver, "__call__", replaced_meanwhile)
    for _ in range(3):
        assert con.sql(q).fetchall() == want


def _pin(spec: list[str]) -> str:
    (dep,) = [d for d in spec if re.match(r"duckdb\b", d)]
    return dep


def test_duckdb_version_pin() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = meta["optional-dependencies"]
    pin = _pin(extras["duckdb"])
    assert pin == _pin(extras["dev"])  # the tests run on what users get
    lo = re.search(r">=\s*([\d.]+)", pin).group(1)
    hi = re.search(r"<\s*([\d.]+)", pin).group(1)
    supported = duckdb_ext.SUPPORTED_DUCKDB
    assert duckdb_ext._version_tuple(lo) == supported[0]
    assert duckdb_ext._version_tuple(hi) == supported[1]
    installed = duckdb_ext._version_tuple(duckdb.__version__)
    assert supported[0] <= installed < supported[1], duckdb.__version__
    assert duckdb_ext.check_duckdb_version() == installed
    for bad in ("2.0.0", "2.1.0", "1.4.3", "3.0"):
        with pytest.raises(ImportError, match="relies on internals"):
            duckdb_ext.check_duckdb_version(bad)
    duckdb_ext.check_duckdb_version("2.0.9")


def test_import_vortex_io_does_not_import_duckdb() -> None:
    code = ("import sys, vortex_io; assert 'duckdb' not in sys.modules; "
            "assert callable(vortex_io.register_duckdb); assert 'duckdb' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# -- the predicate translator -------------------------------------------------------------------


def test_translate_refuses_what_it_cannot_do_exactly() -> None:
    from duckdb._sources.nodes import Binary, Col, In, Lit, Postfix

    schema = TABLE.schema
    tr = duckdb_ext.translate
    ok = [
        Binary("=", Col(("i",)), Lit(5, "BIGINT")),
        In(Col(("s",)), [Lit("a", "VARCHAR")]),
        Postfix("IS NULL", Col(("st",))),
        Binary("<", Col(("ts",)), Lit(T0_US, "TIMESTAMP WITH TIME ZONE")),
        Binary("=", Col(("tms",)), Lit(datetime.datetime(2024, 1, 2, 0, 0, 0, 1000), "TIMESTAMP_MS")),
    ]
    for node in ok:
        tr(node, schema)
    refused = [
        Binary("=", Col(("st", "x")), Lit(1, "BIGINT")),  # a struct field
        Binary("=", Col(("i",)), Lit(5, "INTEGER")),  # a type that is not the column's
        Binary("=", Col(("i",)), Lit(None, "BIGINT")),
        Binary("=", Col(("f",)), Lit(float("nan"), "DOUBLE")),
        Binary(">", Col(("f",)), Lit(float("inf"), "DOUBLE")),
        In(Col(("i",)), [Lit(1, "BIGINT"), Lit(None, "BIGINT")]),
        Binary("=", Col(("nope",)), Lit(1, "BIGINT")),
        Binary("=", Col(("i",)), Lit(1 << 70, "BIGINT")),
        Binary("=", Col(("dec",)), Lit(decimal.Decimal("1.234"), "DECIMAL(12,2)")),
        # a zoned instant between two milliseconds against a ms column would need rounding
        Binary("<", Col(("tms",)), Lit(datetime.datetime(2024, 1, 2, 0, 0, 0, 1), "TIMESTAMP_MS")),
        Binary("=", Col(("tsn",)), Lit(datetime.datetime(2024, 1, 2), "TIMESTAMP_NS")),
        Binary("=", Col(("li",)), Lit([1], "INTEGER[]")),
    ]
    for node in refused:
        with pytest.raises(duckdb_ext.Untranslatable):
            tr(node, schema)


# -- random predicates ------------------------------------------------------------------------

_ATOMS = st.one_of(
    st.builds(lambda op, v: f"i {op} {v}", st.sampled_from(["=", "<>", "<", "<=", ">", ">="]),
              st.integers(-55, 55)),
    st.builds(lambda op, v: f"f {op} {v}", st.sampled_from(["=", "<>", "<", "<=", ">", ">="]),
              st.sampled_from(["0.0", "-0.5", "1.25", "-3"])),
    st.builds(lambda op, v: f"s {op} '{v}'", st.sampled_from(["=", "<>", "<", ">="]),
              st.sampled_from(["a", "b", "ü", "", "AAPL"])),
    st.builds(lambda vs: f"i32 IN ({', '.join(map(str, vs))})",
              st.lists(st.integers(0, 25), min_size=1, max_size=4)),
    st.builds(lambda c, n: f"{c} IS {'NOT ' if n else ''}NULL",
              st.sampled_from(["i", "s", "f", "dec", "b", "li"]), st.booleans()),
    st.builds(lambda lo, w: f"dec BETWEEN {lo / 100:.2f} AND {(lo + w) / 100:.2f}",
              st.integers(-1000, 1000), st.integers(0, 800)),
    st.just("b"),
    st.just("s LIKE '%z%'"),
)
_PRED = st.recursive(_ATOMS, lambda p: st.one_of(
    st.builds(lambda a, b: f"({a} AND {b})", p, p),
    st.builds(lambda a, b: f"({a} OR {b})", p, p),
    st.builds(lambda a: f"(NOT {a})", p),
), max_leaves=5)


@given(_PRED)
def test_random_predicates_match_arrow(con, files, where: str) -> None:
    ours, ref = both(con, "SELECT list(id ORDER BY id) FROM {t} WHERE " + where, files)
    assert ours == ref, where
