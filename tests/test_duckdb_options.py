"""DuckDB: ``vortex_ipc(...)``'s options against ``read_parquet``'s on the same files.

Every dataset is written twice, side by side: ``x.vxipc`` and ``x.parquet`` with the same
rows. A query runs once over ``vortex_ipc('...vxipc', ...)`` and once over
``read_parquet('...parquet', ...)``; the two must give the same columns, the same DuckDB types
and the same rows (file names compared with their extension swapped), or both fail with the
same kind of error. Then what Parquet cannot show: the row estimate in ``EXPLAIN`` and the join
build side, files pruned unopened, ``LIMIT`` stopping the read, registration on cursors,
several connections and a reopened database file, and one-line error messages.
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vortex_io as vio

duckdb = pytest.importorskip("duckdb")
duckdb_ext = pytest.importorskip("vortex_io.integrations.duckdb_ext")

ROOT = Path(__file__).resolve().parent.parent
#: every Scan a query on the module's connection started
SCANS: list[vio.Scan] = []


def write_both(root: Path, rel: str, table: pa.Table, **kw: Any) -> None:
    """``root/rel.vxipc`` and ``root/rel.parquet`` holding ``table``."""
    base = root / rel
    base.parent.mkdir(parents=True, exist_ok=True)
    vio.write_ipc(f"{base}.vxipc", table, **kw)
    pq.write_table(table, f"{base}.parquet")


@pytest.fixture(scope="module")
def con() -> Any:
    c = duckdb.connect()
    vio.register_duckdb(c, on_scan=SCANS.append)
    yield c
    c.close()


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        return v.replace(".parquet", ".vxipc")
    if isinstance(v, dict):
        return tuple(sorted((k, _norm(x)) for k, x in v.items()))
    if isinstance(v, list):
        return tuple(_norm(x) for x in v)
    return v


def run(con: Any, sql: str) -> tuple[Any, ...]:
    """(columns, types, sorted rows) of ``sql``, or ("error", DuckDB error class)."""
    try:
        rel = con.sql(sql)
        rows = rel.fetchall()
    except duckdb.Error as e:
        return ("error", type(e).__name__, str(e))
    rows = sorted((tuple(_norm(v) for v in r) for r in rows), key=repr)
    return (rel.columns, [str(t) for t in rel.types], rows)


def both(con: Any, sql: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``sql`` with ``READ(`` and ``EXT``: over vortex_ipc/.vxipc and read_parquet/.parquet."""
    ours = run(con, sql.replace("READ(", "vortex_ipc(").replace("EXT", "vxipc"))
    ref = run(con, sql.replace("READ(", "read_parquet(").replace("EXT", "parquet"))
    if ours[0] == "error" and ref[0] == "error":  # the same kind of error
        if ours[1] == "InvalidInputException":  # ours (DuckDB's own, a cast's, add LINE 1 ...)
            assert "\n" not in ours[2], ours[2]
        return ours[:2], ref[:2]
    return ours, ref


def plan(con: Any, sql: str) -> str:
    return "\n".join(r[1] for r in con.sql("EXPLAIN " + sql).fetchall())


# -- sources: paths, globs, directories, lists ----------------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tree")
    t = pa.table({"x": pa.array(range(30), pa.int64()), "s": [f"v{i % 4}" for i in range(30)]})
    write_both(d, "a/one", t.slice(0, 10))
    write_both(d, "a/sub/two", t.slice(10, 10))
    write_both(d, "a/sub/deeper/three", t.slice(20, 5))
    write_both(d, "a/.hidden", t.slice(25, 5))
    write_both(d, "br[1]", t.slice(0, 3))
    (d / "a" / "notes.txt").write_text("not a stream")
    return d


@pytest.mark.parametrize("source", [
    "'{d}/a/one.EXT'",
    "'{d}/a/*.EXT'",
    "'{d}/a/**/*.EXT'",
    "'{d}/**/*.EXT'",
    "'{d}/a/sub/**/*.EXT'",
    "'{d}/a'",  # a directory: read_parquet reads its **/*.parquet
    "'{d}/a/'",
    "['{d}/a/one.EXT', '{d}/a/sub/*.EXT', '{d}/a/one.EXT']",  # a list keeps duplicates
    "'{d}/br[1].EXT'",  # a file named with glob characters is that file
])
def test_sources_match_read_parquet(con, tree, source: str) -> None:
    src = source.format(d=tree)
    ours, ref = both(con, f"SELECT x, s, filename FROM READ({src}, filename := true)")
    assert ours == ref
    assert ours[2], "no rows"


@pytest.mark.parametrize("source", [
    "'{d}/nope.EXT'", "'{d}/*.nomatch'", "'{d}/empty_dir'", "[]::VARCHAR[]", "42",
])
def test_missing_sources_fail_like_read_parquet(con, tree, source: str) -> None:
    (tree / "empty_dir").mkdir(exist_ok=True)
    ours, ref = both(con, f"SELECT * FROM READ({source.format(d=tree)})")
    assert ours[0] == ref[0] == "error"


def test_missing_file_message_names_the_pattern(con, tree) -> None:
    with pytest.raises(duckdb.Error) as ei:
        con.sql(f"SELECT * FROM vortex_ipc('{tree}/nope/*.vxipc')").fetchall()
    msg = str(ei.value)
    assert f'no files found that match the pattern "{tree}/nope/*.vxipc"' in msg
    assert "\n" not in msg


# -- filename ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["true", "'path'", "1", "false", "0", "'true'"])
def test_filename_option(con, tree, option: str) -> None:
    ours, ref = both(con, f"SELECT * FROM READ('{tree}/a/**/*.EXT', filename := {option})")
    assert ours == ref
    assert ours[0][-1] == {"true": "filename", "'path'": "path", "1": "filename",
                           "'true'": "true"}.get(option, "s")


@pytest.mark.parametrize("option", ["'x'", "'X'", "NULL"])
def test_filename_option_errors(con, tree, option: str) -> None:
    ours, ref = both(con, f"SELECT * FROM READ('{tree}/a/**/*.EXT', filename := {option})")
    assert ours[0] == ref[0] == "error"
    with pytest.raises(duckdb.Error, match="filename"):
        con.sql(f"SELECT * FROM vortex_ipc('{tree}/a/one.vxipc', filename := {option})")


# -- union_by_name, and files of differing schemas without it -------------------------------------

SCHEMA_CASES = {
    "missing and extra columns": (pa.table({"x": [1, 2], "s": ["a", "b"]}),
                                  pa.table({"x": [3], "y": [1.5]})),
    "int32 and int64": (pa.table({"x": pa.array([1], pa.int32())}),
                        pa.table({"x": pa.array([2**40], pa.int64())})),
    "int64 and double": (pa.table({"x": [1]}), pa.table({"x": [2.5]})),
    "int and string": (pa.table({"x": [7]}), pa.table({"x": ["seven"]})),
    "string and int": (pa.table({"x": ["a"]}), pa.table({"x": [5]})),
    "date and timestamp": (pa.table({"x": [datetime.date(2024, 1, 2)]}),
                           pa.table({"x": pa.array([datetime.datetime(2024, 1, 2, 3)],
                                                   pa.timestamp("us"))})),
    "struct fields": (pa.table({"x": [{"a": 1}]}), pa.table({"x": [{"b": "z"}]})),
    "reordered": (pa.table({"x": [1], "s": ["a"]}), pa.table({"s": ["b"], "x": [2]})),
    "other case": (pa.table({"x": [1]}), pa.table({"X": [2]})),
    "same schema": (pa.table({"x": [1]}), pa.table({"x": [2]})),
}


@pytest.fixture(scope="module")
def schemas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("schemas")
    for i, (a, b) in enumerate(SCHEMA_CASES.values()):
        write_both(d, f"c{i}/1", a)
        write_both(d, f"c{i}/2", b)
    return d


@pytest.mark.parametrize("union", ["true", "false"])
@pytest.mark.parametrize("case", list(SCHEMA_CASES))
def test_differing_schemas_match_read_parquet(con, schemas, case: str, union: str) -> None:
    i = list(SCHEMA_CASES).index(case)
    ours, ref = both(con, f"SELECT * FROM READ('{schemas}/c{i}/*.EXT', union_by_name := {union})")
    if case == "struct fields" and union == "false":
        # the one difference: read_parquet reads the second file's struct into the first's
        # field by field (b dropped, a NULL); vortex_ipc CASTs it, which DuckDB refuses
        assert ref[0] == ["x"] and ours[:2] == ("error", "BinderException")
        return
    assert ours == ref


def test_union_by_name_with_partitions_and_file_names(con, tmp_path) -> None:
    write_both(tmp_path, "k=1/f", pa.table({"x": pa.array([1, 2], pa.int32()), "s": ["a", "b"]}))
    write_both(tmp_path, "k=2/f", pa.table({"y": [0.5], "x": pa.array([3], pa.int64())}))
    ours, ref = both(con, f"SELECT * FROM READ('{tmp_path}/**/*.EXT', union_by_name := true, "
                          "filename := true)")
    assert ours == ref
    assert ours[0] == ["x", "s", "y", "filename", "k"]
    # a filter on the partition column prunes one of the two sources of the union
    ours, ref = both(con, f"SELECT x, y FROM READ('{tmp_path}/**/*.EXT', union_by_name := true) "
                          "WHERE k = 2")
    assert ours == ref == (["x", "y"], ["BIGINT", "DOUBLE"], [(3, 0.5)])


def test_schema_mismatch_error_says_what_to_do(con, schemas) -> None:
    i = list(SCHEMA_CASES).index("missing and extra columns")
    with pytest.raises(duckdb.InvalidInputException) as ei:
        con.sql(f"SELECT * FROM vortex_ipc('{schemas}/c{i}/*.vxipc')").fetchall()
    msg = str(ei.value)
    assert 'column "s" was read from the original file' in msg and "union_by_name" in msg
    assert "\n" not in msg


# -- hive partitioning -------------------------------------------------------------------------------


HIVE_VALUES = [
    ["1", "2", "30"], ["01", "1"], ["-1", "0"], ["1", "NULL"], ["1", "__HIVE_DEFAULT_PARTITION__"],
    ["2024-01-01", "2024-12-31"], ["2024-01-01 10:00:00", "2024-01-02 00:00:00"],
    ["2024-01-01", "abc"], ["a%20b", "c%2Fd"], ["1", ""], ["NULL"], ["1.5", "2.5"],
    ["9223372036854775808"], ["true", "false"],
]


@pytest.mark.parametrize("values", HIVE_VALUES, ids=lambda v: ",".join(v) or "empty")
def test_hive_type_inference_matches_read_parquet(con, tmp_path, values: list[str]) -> None:
    for j, v in enumerate(values):
        write_both(tmp_path, f"k={v}/j={j}/f", pa.table({"x": [j]}))
    for opt in ("", ", hive_partitioning := true"):
        ours, ref = both(con, f"SELECT * FROM READ('{tmp_path}/**/*.EXT'{opt})")
        assert ours == ref
        assert ours[0] == ["x", "j", "k"]


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hive")
    n = 0
    for year in (2023, 2024):
        for month in ("01", "02", "11"):
            t = pa.table({"x": pa.array(range(n, n + 100), pa.int64()),
                          "month": pa.array([-1] * 100, pa.int64()),  # the partition wins
                          "v": [float(i % 9) for i in range(100)]})
            write_both(d, f"year={year}/month={month}/part", t, chunk_rows=40)
            n += 100
    return d


@pytest.mark.parametrize("options", [
    "", "hive_partitioning := true", "hive_partitioning := false",
    "hive_types := {'month': 'INT'}", "hive_types := {'year': 'VARCHAR', 'month': 'DOUBLE'}",
    "hive_types := {'year': 'SMALLINT'}, filename := true",
    "hive_types := {'month': 'DECIMAL(4,1)'}",
])
def test_hive_options_match_read_parquet(con, hive, options: str) -> None:
    opt = f", {options}" if options else ""
    ours, ref = both(con, f"SELECT * FROM READ('{hive}/**/*.EXT'{opt})")
    assert ours == ref
    assert len(ours[2]) == 600


@pytest.mark.parametrize("options", [
    "hive_types := {'nope': 'INT'}", "hive_types := {'month': 'BLAH'}",
    "hive_types := {'month': 'DATE'}", "hive_types := {'month': 1}", "hive_types := 'INT'",
    "hive_partitioning := false, hive_types := {'month': 'INT'}",
    "filename := 'year'",
])
def test_hive_option_errors_match_read_parquet(con, hive, options: str) -> None:
    ours, ref = both(con, f"SELECT * FROM READ('{hive}/**/*.EXT', {options})")
    assert ours[0] == ref[0] == "error"


def test_hive_errors_read_as_read_parquet_s(con, hive) -> None:
    def msg(options: str) -> str:
        with pytest.raises(duckdb.Error) as ei:
            con.sql(f"SELECT * FROM vortex_ipc('{hive}/**/*.vxipc', {options})").fetchall()
        return str(ei.value)

    assert "Unknown hive_type: \"nope\" does not appear to be a partition" in msg(
        "hive_types := {'nope': 'INT'}")
    assert "Unable to cast '01' (from hive partition column 'MONTH') to: 'DATE'" in msg(
        "hive_types := {'month': 'DATE'}")
    assert "Type with name BLAH does not exist" in msg("hive_types := {'month': 'BLAH'}")
    assert "cannot disable hive_partitioning when hive_types is enabled" in msg(
        "hive_partitioning := false, hive_types := {'month': 'INT'}")


def test_forced_hive_partitioning_of_a_mixed_tree(con, tmp_path) -> None:
    write_both(tmp_path, "k=1/f", pa.table({"x": [1]}))
    write_both(tmp_path, "k=2/j=5/f", pa.table({"x": [2]}))
    ours, ref = both(con, f"SELECT * FROM READ('{tmp_path}/**/*.EXT')")
    assert ours == ref == (["x"], ["BIGINT"], [(1,), (2,)])  # not detected: no columns
    ours, ref = both(con, f"SELECT * FROM READ('{tmp_path}/**/*.EXT', hive_partitioning := true)")
    assert ours[0] == ref[0] == "error"  # Hive partition mismatch


# -- pruning on the file-name and partition columns -----------------------------------------------


@pytest.mark.parametrize("where, files", [
    ("year = 2024", 3), ("month = '02'", 2), ("year = 2023 AND month IN ('01', '11')", 2),
    ("year > 2023 OR month = '01'", 4), ("NOT (year = 2023)", 3), ("year IS NULL", 0),
    ("year BETWEEN 2023 AND 2023", 3), ("filename = '{f}'", 1), ("year = 2025", 0),
])
def test_partition_filters_prune_files(con, hive, where: str, files: int) -> None:
    where = where.format(f=f"{hive}/year=2024/month=11/part.EXT")
    sql = f"SELECT count(*), sum(x), min(v) FROM READ('{hive}/**/*.EXT', filename := true) WHERE "
    SCANS.clear()
    ours, ref = both(con, sql + where)
    assert ours == ref
    assert len(SCANS) == files  # the other files were never opened
    p = plan(con, (sql + where).replace("READ(", "vortex_ipc(").replace("EXT", "vxipc"))
    assert "Filters:" in p and not re.search(r"─ Filter ─|\bFILTER\b", p), p


def test_mixed_filters_split_between_files_and_rows(con, hive) -> None:
    sql = f"SELECT count(*), sum(x) FROM READ('{hive}/**/*.EXT') WHERE year = 2023 AND v > 4"
    SCANS.clear()
    ours, ref = both(con, sql)
    assert ours == ref
    assert len(SCANS) == 3
    assert all("col('v')" in repr(s.filter) for s in SCANS)
    # a predicate reading a partition and a file column at once stays with DuckDB
    sql = f"SELECT count(*) FROM READ('{hive}/**/*.EXT') WHERE year = 2023 OR v > 7"
    ours, ref = both(con, sql)
    assert ours == ref
    p = plan(con, sql.replace("READ(", "vortex_ipc(").replace("EXT", "vxipc"))
    assert re.search(r"─ Filter ─|\bFILTER\b", p), p


# -- the row estimate -----------------------------------------------------------------------------------


def _box_column(p: str, title: str) -> int:
    """The text column where the box titled ``title`` starts in an EXPLAIN plan."""
    for line in p.splitlines():
        i = line.find(f"─ {title} ─")
        if i >= 0:
            return i
    raise AssertionError(f"no {title} in\n{p}")


def test_explain_shows_the_row_estimate(con, hive) -> None:
    p = plan(con, f"SELECT * FROM vortex_ipc('{hive}/**/*.vxipc')")
    assert "~600 rows" in p, p
    assert "~600 rows" in plan(con, f"SELECT * FROM read_parquet('{hive}/**/*.parquet')")


def test_a_join_builds_on_the_small_side(con, hive, monkeypatch) -> None:
    con.execute("CREATE OR REPLACE TABLE small AS SELECT range AS x FROM range(50)")
    sql = f"SELECT count(*) FROM vortex_ipc('{hive}/**/*.vxipc') v JOIN small USING (x)"
    p = plan(con, sql)
    # DuckDB draws a hash join's probe side left and its build side right
    assert _box_column(p, "Python Arrow Scan") < _box_column(p, "Seq Scan"), p
    assert con.sql(sql).fetchall() == [(50,)]
    # without the estimate (DuckDB's ~1 row) the 600-row scan would be the build side
    monkeypatch.setattr(duckdb_ext.VortexSource, "rows", lambda self: None)
    p = plan(con, sql)
    assert _box_column(p, "Python Arrow Scan") > _box_column(p, "Seq Scan"), p


def test_row_estimate_follows_a_rewritten_file(con, tmp_path) -> None:
    p = tmp_path / "t.vxipc"
    vio.write_ipc(p, pa.table({"x": list(range(123))}))
    assert "~123 rows" in plan(con, f"SELECT * FROM vortex_ipc('{p}')")
    vio.write_ipc(p, pa.table({"x": list(range(4567))}), chunk_rows=1000)
    assert "~4,567 rows" in plan(con, f"SELECT * FROM vortex_ipc('{p}')")


# -- LIMIT stops reading ---------------------------------------------------------------------------------


def test_limit_stops_reading(con, tmp_path) -> None:
    from vortex_io._scan import message_spans

    t = pa.table({"x": list(range(60_000)), "s": [str(i % 13) for i in range(60_000)]})
    for j in range(3):
        vio.write_ipc(tmp_path / f"p{j}.vxipc", t, chunk_rows=200)
    messages = len(message_spans(tmp_path / "p0.vxipc"))
    assert messages == 300
    for opt in ("", ", filename := true"):  # one scan of every file, or one scan per file
        SCANS.clear()
        rows = con.sql(f"SELECT x FROM vortex_ipc('{tmp_path}/*.vxipc'{opt}) LIMIT 5").fetchall()
        assert len(rows) == 5
        assert len(SCANS) == 1  # the second and third files were never opened
        assert SCANS[0].stats.chunks < messages / 4, SCANS[0].stats
    assert not duckdb_ext._STREAMS and not duckdb_ext._OWNED  # every stream was released


def test_count_of_partitioned_files_without_columns(con, hive) -> None:
    for where in ("", " WHERE year = 2023", " WHERE filename LIKE '%month=02%'"):
        ours, ref = both(con, f"SELECT count(*) FROM READ('{hive}/**/*.EXT', filename := true)"
                              + where)
        assert ours == ref and ours[2][0][0] > 0


# -- connections, cursors, a database file reopened --------------------------------------------------


def test_cursors_and_independent_connections(tmp_path) -> None:
    p = tmp_path / "t.vxipc"
    vio.write_ipc(p, pa.table({"x": [1, 2, 3]}))
    sql = f"SELECT sum(x) FROM vortex_ipc('{p}')"
    a, b = duckdb.connect(), duckdb.connect()
    vio.register_duckdb(a)
    vio.register_duckdb(b)
    assert a.sql(sql).fetchall() == b.sql(sql).fetchall() == [(6,)]
    cur = a.cursor()
    assert cur.sql(sql).fetchall() == cur.cursor().sql(sql).fetchall() == [(6,)]
    a.close()
    assert b.sql(sql).fetchall() == [(6,)]
    b.close()


def test_two_connections_to_one_database_file(tmp_path) -> None:
    p = tmp_path / "t.vxipc"
    vio.write_ipc(p, pa.table({"x": [1, 2, 3]}))
    sql = f"SELECT sum(x) FROM vortex_ipc('{p}')"
    scans: list[vio.Scan] = []
    a = duckdb.connect(str(tmp_path / "db.duckdb"))
    b = duckdb.connect(str(tmp_path / "db.duckdb"))
    vio.register_duckdb(a)
    vio.register_duckdb(b, on_scan=scans.append)  # the database's function: joined, not refused
    assert a.sql(sql).fetchall() == b.sql(sql).fetchall() == [(6,)]
    assert len(scans) == 2  # the last register's on_scan, for the database
    b.close()
    assert a.sql(sql).fetchall() == [(6,)]  # b's close does not take the function with it
    a.close()


REOPEN = textwrap.dedent("""
    import sys, duckdb, vortex_io as vio
    db, path, mode = sys.argv[1:]
    con = duckdb.connect(db, read_only=mode == "read_only")
    if mode == "create":
        vio.register_duckdb(con)
        con.execute(f"CREATE VIEW v AS SELECT * FROM vortex_ipc('{path}')")
    elif mode != "bare":
        vio.register_duckdb(con)
    for sql in (f"SELECT sum(x) FROM vortex_ipc('{path}')", "SELECT sum(x) FROM v"):
        try:
            print(con.sql(sql).fetchall()[0][0])
        except duckdb.Error as e:
            print("error:", str(e).splitlines()[0])
""")


def test_a_database_file_reopened_in_a_new_process(tmp_path) -> None:
    p = tmp_path / "t.vxipc"
    vio.write_ipc(p, pa.table({"x": [1, 2, 3]}))
    db = tmp_path / "db.duckdb"

    def session(mode: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", REOPEN, str(db), str(p), mode],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    assert session("create") == ["6", "6"]
    # without register: DuckDB's catalog error naming the missing resolver, whose name says
    # what to do
    bare = session("bare")
    assert bare == ["error: Catalog Error: Scalar Function with name "
                    "vortex_ipc_needs_vortex_io_register_duckdb does not exist!"] * 2, bare
    # with register: the macro and the view stored in the file work again
    assert session("register") == ["6", "6"]
    assert session("read_only") == ["6", "6"]


# -- errors: one line, no traceback -------------------------------------------------------------------


#: vortex_ipc's named parameters and their defaults, as DuckDB lists the macro
NAMED = {"filename": "false", "union_by_name": "false", "hive_partitioning": "NULL",
         "hive_types": "NULL"}


@pytest.mark.parametrize("options", [
    *(f"{k} := {v}" for k, v in NAMED.items()),  # each one, at its default
    "filename := true", "filename := 'f'", "union_by_name := true", "hive_partitioning := true",
    "hive_partitioning := false", "hive_types := {'month': 'INT'}",
    "filename := true, union_by_name := true, hive_partitioning := true, "
    "hive_types := {'year': 'SMALLINT'}",
    "hive_types := {'month': 'INT'}, filename := 'f', union_by_name := false",  # any order
])
def test_each_named_parameter_is_accepted(con, hive, options: str) -> None:
    ours = run(con, f"SELECT * FROM vortex_ipc('{hive}/**/*.vxipc', {options})")
    # read_parquet refuses an explicit NULL for its hive options: what it does without them
    ref_options = "".join(f", {o}" for o in options.split(", ") if not o.endswith(":= NULL"))
    ref = run(con, f"SELECT * FROM read_parquet('{hive}/**/*.parquet'{ref_options})")
    assert ours == ref and ours[0] != "error"
    assert len(ours[2]) == 600


@pytest.mark.parametrize("options", [
    "nope := true",
    "binary_as_string := true",  # read_parquet's, not vortex_ipc's
    "filenam := true",  # a misspelling
    "filename := true, nope := 1",
])
def test_an_unknown_named_parameter_is_refused(con, hive, options: str) -> None:
    """DuckDB checks a table macro's named arguments itself, before any Python code runs, and
    its answer does not name the unknown one (read_parquet, a table function, does): it names
    vortex_ipc and lists the parameters it takes. DuckDB's Python package offers no table
    function that could do better (only scalar functions, macros and Arrow sources)."""
    name = options.split(", ")[-1].split(" :=")[0]
    with pytest.raises(duckdb.BinderException) as ei:
        con.sql(f"SELECT * FROM vortex_ipc('{hive}/**/*.vxipc', {options})").fetchall()
    signature = ", ".join(["source", *(f"{k} := {v}" for k, v in NAMED.items())])
    assert str(ei.value) == (
        "Binder Error: Macro vortex_ipc() does not support the supplied arguments. You might "
        f"need to add explicit type casts.\nCandidate macros:\n\tvortex_ipc({signature})")
    if name != "binary_as_string":  # read_parquet's answer, for comparison
        with pytest.raises(duckdb.BinderException,
                           match=f'^Binder Error: Invalid named parameter "{name}" for function '
                                 "read_parquet"):
            con.sql(f"SELECT * FROM read_parquet('{hive}/**/*.parquet', {options})").fetchall()
    # the connection goes on
    assert con.sql(f"SELECT count(*) FROM vortex_ipc('{hive}/**/*.vxipc')").fetchall() == [(600,)]


def test_errors_are_one_line(con, tmp_path) -> None:
    good = tmp_path / "good.vxipc"
    vio.write_ipc(good, pa.table({"x": list(range(20_000))}), chunk_rows=1000)
    garbage = tmp_path / "garbage.vxipc"
    garbage.write_bytes(b"not a vortex stream at all" * 4)
    cut = tmp_path / "cut.vxipc"
    cut.write_bytes(good.read_bytes()[:-300])
    from vortex_io._scan import message_spans

    last = message_spans(good)[-1]
    raw = bytearray(good.read_bytes())  # headers intact, a body garbled: found while reading
    for i in range(last.offset + last.size - 40, last.offset + last.size - 1):
        raw[i] ^= 0xFF
    garbled = tmp_path / "garbled.vxipc"
    garbled.write_bytes(bytes(raw))
    cases = {
        f"FROM vortex_ipc('{tmp_path}/nope.vxipc')":
            ("Python exception occurred while executing the UDF: FileNotFoundError: vortex_ipc: "
             f'no files found that match the pattern "{tmp_path}/nope.vxipc"'),
        f"FROM vortex_ipc('{garbage}')":
            "UDF: MalformedStreamError: not a Vortex IPC stream",
        f"FROM vortex_ipc('{cut}')": "UDF: TruncatedStreamError: stream ends inside",
        f"SELECT sum(x) FROM vortex_ipc('{garbled}')":
            "reading the Arrow source failed: MalformedStreamError: ",
        f"FROM vortex_ipc('{good}', union_by_name := 'maybe')":
            'vortex_ipc: could not cast value "maybe" to named parameter "union_by_name"',
        "FROM vortex_ipc(42)": "TypeError: vortex_ipc: a source is a path, a glob or a list",
    }
    for sql, want in cases.items():
        with pytest.raises(duckdb.InvalidInputException) as ei:
            con.sql(sql).fetchall()
        msg = str(ei.value)
        assert msg.startswith("Invalid Input Error: ") and want in msg, msg
        assert "\n" not in msg and "Traceback" not in msg, msg
        if "garb" in sql or "cut" in sql:
            assert re.search(r"\(.*\.vxipc, message \d+, byte offset \d+\)", msg), msg
    assert con.sql(f"SELECT count(*) FROM vortex_ipc('{good}')").fetchall() == [(20_000,)]


# -- what DuckDB's Python API has no hook for -----------------------------------------------------------


def test_copy_to_and_replacement_scans_are_not_available(con, tmp_path) -> None:
    p = tmp_path / "t.vxipc"
    vio.write_ipc(p, pa.table({"x": [1, 2, 3]}))
    with pytest.raises(duckdb.Error):
        con.sql(f"FROM '{p}'").fetchall()
    with pytest.raises(duckdb.Error):
        con.execute(f"COPY (SELECT 1 AS x) TO '{tmp_path}/o.vxipc' (FORMAT vortex_ipc)")
    # the alternatives the README shows
    vio.write_ipc(tmp_path / "o.vxipc", con.sql(f"SELECT x * 2 AS y FROM vortex_ipc('{p}')"))
    assert con.sql(f"SELECT sum(y) FROM vortex_ipc('{tmp_path}/o.vxipc')").fetchall() == [(12,)]
    assert os.path.getsize(tmp_path / "o.vxipc") > 0


def test_url_sources(con: Any) -> None:
    fsspec = pytest.importorskip("fsspec")
    for i in range(2):
        with fsspec.open(f"memory://duck-urls/p{i}.vxipc", "wb") as f:
            vio.write_ipc(f, pa.table({"x": [i, i + 10]}))
    assert con.sql("SELECT * FROM vortex_ipc('memory://duck-urls/p0.vxipc')").fetchall() == [
        (0,), (10,)]
    got = con.sql("SELECT x, filename FROM vortex_ipc('memory://duck-urls/*.vxipc', "
                  "filename := true) WHERE x > 5 ORDER BY x").fetchall()
    assert got == [(10, "memory:///duck-urls/p0.vxipc"), (11, "memory:///duck-urls/p1.vxipc")]
    plan = con.sql("EXPLAIN SELECT * FROM vortex_ipc('memory://duck-urls/*.vxipc')").fetchall()
    assert "~4 rows" in plan[0][1]
    with pytest.raises(duckdb.Error, match="nope"):
        con.sql("SELECT * FROM vortex_ipc('memory://duck-urls/nope.vxipc')").fetchall()


def test_home_directory_in_paths(con: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                 ) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    t = pa.table({"x": [1, 2]})
    vio.write_ipc(tmp_path / "h.vxipc", t)
    pq.write_table(t, tmp_path / "h.parquet")
    for name in ("~/h.{}", "~/h*.{}"):
        q = "SELECT x, filename FROM {}('" + name + "', filename := true) ORDER BY x"
        got = con.sql(q.format("vortex_ipc", "vxipc")).fetchall()
        exp = con.sql(q.format("read_parquet", "parquet")).fetchall()
        assert [(x, f.replace(".vxipc", ".parquet")) for x, f in got] == exp
