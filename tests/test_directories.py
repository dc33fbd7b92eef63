"""Directories and globs as sources of the Python API (scan, read_table, the distributed
readers), and the hive partitions of a directory's paths as columns."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import vortex_io as vio
from vortex_io.expr import col, lit


def _write(path, table, **kw):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    vio.write_ipc(path, table, **kw)


def _sorted(t: pa.Table, keys) -> pa.Table:
    return t.sort_by([(k, "ascending") for k in keys])


# -- directories ------------------------------------------------------------------------


@pytest.fixture
def flat(tmp_path):
    """A directory of three streams, one nested, plus files a directory read skips."""
    d = tmp_path / "flat"
    parts = [pa.table({"x": [i * 10 + j for j in range(3)], "s": [f"{i}{j}" for j in range(3)]})
             for i in range(3)]
    _write(str(d / "b.vxipc"), parts[1])
    _write(str(d / "a.vxipc"), parts[0])
    _write(str(d / "sub" / "c.vxipc"), parts[2])
    _write(str(d / ".hidden.vxipc"), parts[0])
    _write(str(d / "_tmp" / "x.vxipc"), parts[0])
    (d / "_SUCCESS").write_bytes(b"")
    (d / "notes.txt").write_text("not a stream")
    return d, pa.concat_tables(parts)


def test_read_table_of_a_directory_reads_its_vxipc_files_in_sorted_order(flat):
    d, want = flat
    assert [os.path.relpath(p, d) for p in vio.expand_sources(str(d))] == \
        ["a.vxipc", "b.vxipc", os.path.join("sub", "c.vxipc")]
    assert vio.read_table(d).equals(want)  # a pathlib.Path too
    assert vio.read_table(str(d) + os.sep).equals(want)
    assert vio.read_table(d.as_uri()).equals(want)  # a file:// URL of the directory


def test_scan_of_a_directory_projects_filters_and_limits_across_its_files(flat):
    d, want = flat
    s = vio.scan(str(d), columns=["s"], filter=col("x") >= 2, limit=4, offset=1)
    got = s.to_arrow()
    expect = want.filter(pc.field("x") >= 2).select(["s"]).slice(1, 4)
    assert got.equals(expect)
    assert s.stats.sources == 3
    assert vio.scan(str(d), columns=[]).to_arrow().num_rows == want.num_rows


def test_a_glob_with_double_star_spans_directories(flat):
    d, want = flat
    assert vio.read_table(str(d / "**" / "*.vxipc")).num_rows == want.num_rows + 3  # _tmp's too
    assert vio.read_table(str(d / "*.vxipc")).num_rows == 6  # a.vxipc, b.vxipc (not .hidden)


def test_an_empty_directory_is_a_file_not_found_error_naming_it(tmp_path):
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "readme.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"no \.vxipc files in the directory .*e'"):
        vio.read_table(tmp_path / "e")


def test_stream_reader_of_a_directory_says_what_reads_one(tmp_path):
    with pytest.raises(IsADirectoryError, match=r"reads one stream; vortex_io.scan\(\) and "
                       r"read_table\(\) read the files of a directory") as e:
        vio.StreamReader(tmp_path)
    assert e.value.filename == str(tmp_path)
    with pytest.raises(IsADirectoryError):
        vio.read_ipc(str(tmp_path))


def test_a_directory_url_ends_with_a_slash(flat):
    fsspec = pytest.importorskip("fsspec")
    d, want = flat
    fs = fsspec.filesystem("memory")
    for p in [*vio.expand_sources(str(d)), str(d / ".hidden.vxipc")]:
        fs.pipe("/dirsrc/" + os.path.relpath(p, d).replace(os.sep, "/"), open(p, "rb").read())
    assert vio.expand_sources("memory://dirsrc/") == [
        "memory:///dirsrc/a.vxipc", "memory:///dirsrc/b.vxipc", "memory:///dirsrc/sub/c.vxipc"]
    assert vio.read_table("memory://dirsrc/").equals(want)


def test_distributed_readers_expand_directories_the_same_way(flat):
    from vortex_io.integrations._distributed import resolve_paths

    d, _ = flat
    assert resolve_paths(str(d)) == vio.expand_sources(str(d))
    assert resolve_paths([d / "a.vxipc", str(d / "sub")]) == \
        [str(d / "a.vxipc"), str(d / "sub" / "c.vxipc")]
    with pytest.raises(FileNotFoundError):
        resolve_paths(str(d / "missing.vxipc"))


# -- hive partitions ----------------------------------------------------------------------


@pytest.fixture
def hive(tmp_path):
    """year=int, city=string (escaped, and a null partition) over rows with x and s."""
    d = tmp_path / "hive"
    rows = []
    i = 0
    for year in (2023, 2024):
        for city, dirname in (("New York", "New%20York"), ("a/b=c", "a%2Fb%3Dc"),
                              (None, "__HIVE_DEFAULT_PARTITION__")):
            n = 3 + i
            x = [i * 100 + j for j in range(n)]
            s = [None if j == 1 else f"v{j}" for j in range(n)]
            _write(str(d / f"year={year}" / f"city={dirname}" / "part-0.vxipc"),
                   pa.table({"x": pa.array(x, pa.int32()), "s": s}))
            rows.append(pa.table({"x": pa.array(x, pa.int32()), "s": s,
                                  "year": pa.array([year] * n, pa.int64()),
                                  "city": pa.array([city] * n, pa.string())}))
            i += 1
    return d, pa.concat_tables(rows)


def test_hive_partitions_are_columns_after_the_data(hive):
    d, want = hive
    got = vio.read_table(d)
    assert got.schema == want.schema
    assert _sorted(got, ["x"]).equals(_sorted(want, ["x"]))
    assert vio.read_table(d, hive_partitioning=False).column_names == ["x", "s"]


FILTERS = [
    col("year") == 2024,
    col("year") > 2023,
    col("city") == "New York",
    col("city") == "a/b=c",
    col("city").is_null(),
    col("city").is_not_null(),
    ~(col("city") == "New York"),
    (col("year") == 2023) & (col("x") > 100),
    (col("year") == 2023) | (col("x") > 400),
    ~((col("city") == "New York") | (col("x") < 300)),
    col("city").is_in(["a/b=c", "nowhere"]),
    ~col("city").is_in(["a/b=c", None]),
    (col("city") != "New York") & col("s").is_null(),
    col("year").between(2023, 2023) & ~col("s").is_null(),
    lit(2024) == col("year"),
    ~~(col("city") == "New York"),
]


@pytest.mark.parametrize("f", FILTERS, ids=repr)
def test_filters_on_partitions_agree_with_the_same_filter_on_a_stream(hive, tmp_path, f):
    """The oracle: the partition columns written as data columns of one stream, scanned with
    the same filter (the single-stream filter is tested against pyarrow elsewhere)."""
    d, want = hive
    one = tmp_path / "one.vxipc"
    vio.write_ipc(one, want)
    expect = vio.read_table(one, filter=f)
    s = vio.scan(d, filter=f)
    got = s.to_arrow()
    assert _sorted(got, ["x"]).equals(_sorted(expect, ["x"])), (got, expect)
    if f.columns() <= {"year", "city"}:
        # decided by the paths alone: the files ruled out are not opened
        read = len({(y, c) for y, c in zip(expect["year"].to_pylist(),
                                           expect["city"].to_pylist())})
        assert s.stats.files_pruned == 6 - read


def test_pruned_files_are_never_opened(hive):
    d, _ = hive
    victim = d / "year=2024" / "city=a%2Fb%3Dc" / "part-0.vxipc"  # (not the first: its
    victim.write_bytes(b"garbage, not a stream")                  # header is the schema)
    got = vio.read_table(d, filter=col("year") == 2023)
    assert set(got["year"].to_pylist()) == {2023}
    with pytest.raises(vio.VortexIPCError) as e:
        vio.read_table(d, filter=col("year") == 2024)
    assert e.value.source == str(victim)


def test_columns_select_and_order_partition_columns(hive):
    d, want = hive
    got = vio.read_table(d, columns=["city", "x", "year"])
    assert got.column_names == ["city", "x", "year"]
    assert _sorted(got, ["x"]).equals(_sorted(want.select(["city", "x", "year"]), ["x"]))
    only = vio.read_table(d, columns=["year"])
    assert sorted(only["year"].to_pylist()) == sorted(want["year"].to_pylist())
    assert vio.scan(d, columns=[]).to_arrow().num_rows == want.num_rows


def test_limit_offset_batch_size_over_partitions(hive):
    d, _ = hive
    full = vio.read_table(d)
    got = vio.scan(d, offset=5, limit=9, batch_size=2)
    batches = list(got)
    assert all(b.num_rows <= 2 for b in batches)
    assert pa.Table.from_batches(batches).equals(full.slice(5, 9))


def test_hive_schema_string_views_and_dictionaries(hive):
    d, want = hive
    t = vio.read_table(d, hive_schema={"year": pa.string()})
    assert t.schema.field("year").type == pa.string()
    assert sorted(set(t["year"].to_pylist())) == ["2023", "2024"]
    sv = vio.scan(d, string_view=True, read_dictionary=["city"]).to_arrow()
    assert sv.schema.field("city").type == pa.dictionary(pa.int32(), pa.string())
    assert sv.schema.field("s").type == pa.string_view()
    assert sorted(sv["city"].cast(pa.string()).to_pylist(), key=str) == \
        sorted(want["city"].to_pylist(), key=str)
    with pytest.raises(vio.VortexIPCError, match="year='2023' is not a date32"):
        vio.read_table(d, hive_schema={"year": pa.date32()})
    with pytest.raises(vio.ColumnNotFoundError, match="hive_schema: no column 'month'"):
        vio.read_table(d, hive_schema={"month": pa.int8()})


def test_errors_name_the_partition_columns_and_the_data_columns(hive):
    d, _ = hive
    with pytest.raises(vio.ColumnNotFoundError) as e:
        vio.read_table(d, columns=["nope"])
    assert e.value.choices == ["x", "s", "year", "city"]
    with pytest.raises(vio.ColumnNotFoundError, match="no column 'zz'"):
        vio.scan(d, filter=col("zz") == 1)
    with pytest.raises(vio.TypeMismatchError, match="column 'year'") as e:
        vio.scan(d, filter=col("year") == "2024")
    assert isinstance(e.value, TypeError)
    with pytest.raises(vio.TypeMismatchError, match="column 'x'"):
        vio.scan(d, filter=(col("year") == 2024) & (col("x") == "1"))


def test_a_key_the_data_has_is_read_from_the_data(tmp_path):
    _write(str(tmp_path / "k=1" / "a.vxipc"), pa.table({"k": ["from data"], "v": [1]}))
    t = vio.read_table(tmp_path)
    assert t.to_pydict() == {"k": ["from data"], "v": [1]}


def test_disagreeing_keys_are_not_partitions_unless_asked_then_an_error(tmp_path):
    _write(str(tmp_path / "k=1" / "a.vxipc"), pa.table({"v": [1]}))
    _write(str(tmp_path / "j=2" / "b.vxipc"), pa.table({"v": [2]}))
    assert vio.read_table(tmp_path).column_names == ["v"]
    with pytest.raises(vio.VortexIPCError, match="hive partitions differ"):
        vio.read_table(tmp_path, hive_partitioning=True)


def test_hive_partitioning_true_reads_keys_of_listed_files(tmp_path):
    a, b = tmp_path / "k=1" / "a.vxipc", tmp_path / "k=2" / "b.vxipc"
    _write(str(a), pa.table({"v": [1]}))
    _write(str(b), pa.table({"v": [2]}))
    assert vio.read_table([str(a), str(b)]).column_names == ["v"]  # files, not a directory
    t = vio.read_table([str(a), str(b)], hive_partitioning=True)
    assert t.to_pydict() == {"v": [1, 2], "k": [1, 2]}
    with pytest.raises(TypeError, match="hive_partitioning must be True, False or None"):
        vio.read_table(tmp_path, hive_partitioning="yes")


def test_directories_read_the_same_in_polars_and_duckdb(hive):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    d, _ = hive
    ours = vio.read_table(d).sort_by("x")
    vio.register_polars()
    got = pl.scan_vortex_ipc(str(d)).sort("x").collect()
    assert got.columns == ours.column_names
    assert got["x"].to_list() == ours["x"].to_pylist()
    assert got["year"].to_list() == ours["year"].to_pylist()
    assert got["city"].to_list() == ours["city"].to_pylist()
    con = duckdb.connect()
    vio.register_duckdb(con)
    rows = con.sql(f"SELECT x, year, city FROM vortex_ipc('{d}') ORDER BY x").fetchall()
    assert rows == list(zip(ours["x"].to_pylist(), ours["year"].to_pylist(),
                            ours["city"].to_pylist()))


def _atoms():
    from hypothesis import strategies as st

    return st.one_of(
        st.builds(lambda op, v: getattr(col("year"), op)(v),
                  st.sampled_from(["__eq__", "__ne__", "__lt__", "__ge__"]),
                  st.sampled_from([2022, 2023, 2024, 2025])),
        st.builds(lambda op, v: getattr(col("city"), op)(v), st.sampled_from(["__eq__", "__ne__"]),
                  st.sampled_from(["New York", "a/b=c", "elsewhere"])),
        st.builds(lambda vs: col("city").is_in(vs),
                  st.lists(st.sampled_from(["New York", "a/b=c", None]), max_size=2)),
        st.sampled_from([col("city").is_null(), col("city").is_not_null(), col("s").is_null()]),
        st.builds(lambda v: col("x") > v, st.integers(0, 500)),
        st.builds(lambda v: col("x") != v, st.integers(0, 500)),
    )


def _filters():
    from hypothesis import strategies as st

    return st.recursive(_atoms(), lambda sub: st.one_of(
        st.builds(lambda a, b: a & b, sub, sub), st.builds(lambda a, b: a | b, sub, sub),
        st.builds(lambda a: ~a, sub)), max_leaves=6)


@pytest.fixture(scope="module")
def hive_and_oracle(tmp_path_factory):
    d = tmp_path_factory.mktemp("hprop")
    parts = []
    for year in (2023, 2024):
        for city, dirname in (("New York", "New%20York"), ("a/b=c", "a%2Fb%3Dc"),
                              (None, "__HIVE_DEFAULT_PARTITION__")):
            n = len(parts) * 80
            t = pa.table({"x": pa.array(range(n, n + 80), pa.int32()),
                          "s": [None if j % 3 == 0 else "v" for j in range(80)]})
            _write(str(d / "hive" / f"year={year}" / f"city={dirname}" / "0.vxipc"), t)
            parts.append(t.append_column("year", pa.array([year] * 80, pa.int64()))
                          .append_column("city", pa.array([city] * 80, pa.string())))
    vio.write_ipc(d / "one.vxipc", pa.concat_tables(parts))
    return d / "hive", d / "one.vxipc"


def test_any_filter_over_partitions_agrees_with_the_stream_oracle(hive_and_oracle):
    from hypothesis import given, settings

    d, one = hive_and_oracle

    @settings(max_examples=150, deadline=None)
    @given(_filters())
    def check(f):
        got = vio.read_table(d, filter=f)
        expect = vio.read_table(one, filter=f)
        assert _sorted(got, ["x"]).equals(_sorted(expect, ["x"])), f

    check()


def test_a_kept_partition_schema_that_is_no_schema_is_a_malformed_stream(tmp_path):
    p = tmp_path / "k=1" / "a.vxipc"
    p.parent.mkdir()
    with vio.StreamWriter(p, pa.schema([("v", pa.int64())]),
                          _reserved=[(b"vortex_io.hive_schema", b"not a schema")]) as w:
        w.write(pa.table({"v": [1]}))
    with pytest.raises(vio.MalformedStreamError, match=r"vortex_io\.hive_schema value is not an "
                       r"Arrow schema") as e:
        vio.read_table(tmp_path)
    assert e.value.source == str(p)


def test_a_renamed_partition_directory_that_no_longer_parses_names_the_file(tmp_path):
    t = pa.table({"v": [1, 2], "day": pa.array([0, 1], pa.int32()).cast(pa.date32())})
    vio.write_ipc(tmp_path / "d", t, partition_by=["day"])
    (tmp_path / "d" / "day=1970-01-02").rename(tmp_path / "d" / "day=tuesday")
    with pytest.raises(vio.VortexIPCError, match=r"hive partition day='tuesday' is not a "
                       r"date32") as e:
        vio.read_table(tmp_path / "d")
    assert "day=tuesday" in e.value.source


def test_distributed_readers_keep_the_partition_types(tmp_path):
    pytest.importorskip("dask.dataframe")
    from vortex_io.integrations.dask_dataframe import read_vortex_ipc

    t = pa.table({"v": [1, 2, 3], "k": pa.array([1, 2, 1], pa.int8())})
    vio.write_ipc(tmp_path / "d", t, partition_by=["k"])
    df = read_vortex_ipc(str(tmp_path / "d")).compute(scheduler="sync")
    assert str(df["k"].dtype) == "int8[pyarrow]"
    assert sorted(zip(df["v"], df["k"])) == [(1, 1), (2, 2), (3, 1)]
