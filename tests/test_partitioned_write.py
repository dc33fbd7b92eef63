"""Partitioned writes: ``write_ipc(directory, data, partition_by=...)``, the CLI's
``convert`` of directories and globs and ``--partition-by``, and Polars'
``sink_ipc(partition_by=...)``. What is written is read back with DuckDB's ``vortex_ipc``
and Polars' ``scan_vortex_ipc`` (hive partitioning on) and must give exactly the rows
written."""

from __future__ import annotations

import datetime as dtm
import decimal
import io
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vortex_io as vio
from vortex_io.cli import main

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

#: awkward partition values: separators, spaces, '=', '%', unicode, the empty string, null
AWKWARD = ["a/b", "x y", "k=v", "50%", "ünï €", "a?b#c&d", "[x]+'\"", "", None, "plain"]


def _table(n: int = 600) -> pa.Table:
    days = [dtm.date(2024, 1, 1), dtm.date(2024, 2, 29), dtm.date(1999, 12, 31)]
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([AWKWARD[i % len(AWKWARD)] for i in range(n)], pa.string()),
        "n": pa.array([i % 4 - 1 for i in range(n)], pa.int64()),
        "d": pa.array([days[i % 3] for i in range(n)], pa.date32()),
        "x": pa.array([i * 0.25 for i in range(n)], pa.float64()),
        "t": pa.array([f"row {i}" for i in range(n)], pa.string()),
    })


def _reader(t: pa.Table, rows: int = 37) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=rows))


def _files(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*") if p.is_file())


def _rows(rows: list[dict], order: list[str]) -> list[tuple]:
    return sorted((tuple(r[c] for c in order) for r in rows), key=lambda r: r[0])


def _duckdb_rows(d: Path, order: list[str]) -> list[tuple]:
    con = duckdb.connect()
    vio.register_duckdb(con)
    rel = con.sql(f"SELECT {', '.join(order)} FROM vortex_ipc('{d}/**/*.vxipc', "
                  "hive_partitioning := true)")
    return sorted((tuple(r) for r in rel.fetchall()), key=lambda r: r[0])


def _polars_rows(d: Path, order: list[str]) -> list[tuple]:
    vio.register_polars()
    df = pl.scan_vortex_ipc(d, hive_partitioning=True).collect()
    return _rows(df.select(order).to_dicts(), order)


# -- the layout ---------------------------------------------------------------------------------


def test_a_partitioned_write_reads_back_exactly_with_duckdb_and_polars(tmp_path: Path) -> None:
    t = _table()
    out = tmp_path / "ds"
    n = vio.write_ipc(out, _reader(t), partition_by=["s", "n", "d"], chunk_rows=50)
    files = _files(out)
    assert n == sum(p.stat().st_size for p in files)  # the bytes of every file written
    # one directory per (s, n, d) combination, three levels deep
    combos = {(r["s"], r["n"], r["d"]) for r in t.select(["s", "n", "d"]).to_pylist()}
    assert len(files) == len(combos)
    assert all(len(p.relative_to(out).parts) == 4 for p in files)
    order = ["id", "s", "n", "d", "x", "t"]
    want = _rows(t.to_pylist(), order)
    assert _duckdb_rows(out, order) == want
    assert _polars_rows(out, order) == want


def test_view_and_nested_columns_are_split_into_partitions(tmp_path: Path) -> None:
    """string_view / binary_view columns (what Parquet readers give for TPC-H strings),
    for which pyarrow has no take kernel, and views nested in lists."""
    n = 300
    t = pa.table({
        "k": pa.array([f"k{i % 4}" for i in range(n)], pa.string_view()),
        "s": pa.array([f"value {i}" if i % 7 else None for i in range(n)], pa.string_view()),
        "b": pa.array([bytes([i % 256]) * (i % 20) for i in range(n)], pa.binary_view()),
        "l": pa.array([[f"x{i}"] * (i % 3) for i in range(n)], pa.list_(pa.string_view())),
        "i": pa.array(range(n), pa.int64()),
    })
    vio.write_ipc(tmp_path / "v", t, partition_by=["k"])
    back = vio.read_table(tmp_path / "v")
    assert back.column_names == ["s", "b", "l", "i", "k"]
    got = {r["i"]: r for r in back.to_pylist()}
    assert got == {r["i"]: r for r in t.select(back.column_names).to_pylist()}
    assert back.schema.field("s").type == pa.string_view()  # the file's own types are kept


def test_the_files_hold_the_other_columns_and_every_message_at_most_chunk_rows(
        tmp_path: Path) -> None:
    t = _table()
    vio.write_ipc(tmp_path / "ds", t, partition_by="n", chunk_rows=40)
    seen = 0
    for p in _files(tmp_path / "ds"):
        assert p.parent.name.startswith("n=") and p.name == "part-0.vxipc"
        got = vio.read_table(p)
        assert got.column_names == ["id", "s", "d", "x", "t"]
        key = int(p.parent.name[2:])
        want = t.filter(pa.compute.equal(t["n"], key)).drop_columns(["n"])
        assert got.equals(want)  # the rows in their input order
        sizes = [len(b.array) for b in vio.StreamReader(p)]
        assert max(sizes) <= 40 and sum(sizes) == want.num_rows
        seen += got.num_rows
    assert seen == t.num_rows


def test_directory_names_are_escaped_as_pyarrow_escapes_them(tmp_path: Path) -> None:
    t = pa.table({"k": AWKWARD, "v": list(range(len(AWKWARD)))})
    vio.write_ipc(tmp_path / "ours", t, partition_by=["k"])
    pq.write_to_dataset(t, tmp_path / "theirs", partition_cols=["k"])
    ours = sorted(p.name for p in (tmp_path / "ours").iterdir())
    assert ours == sorted(p.name for p in (tmp_path / "theirs").iterdir())
    assert {"k=a%2Fb", "k=x%20y", "k=k%3Dv", "k=50%25", "k=__HIVE_DEFAULT_PARTITION__",
            "k=", "k=%C3%BCn%C3%AF%20%E2%82%AC"} <= set(ours)
    # and read back as the values they were (pyarrow reads its own layout the same way)
    want = _rows(t.to_pylist(), ["v", "k"])
    assert _polars_rows(tmp_path / "ours", ["v", "k"]) == want
    con = duckdb.connect()
    vio.register_duckdb(con)
    got = con.sql(f"SELECT v, k FROM vortex_ipc('{tmp_path}/ours/**/*.vxipc', "
                  "hive_partitioning := true) ORDER BY v").fetchall()
    assert [tuple(r) for r in got] == want


@pytest.mark.parametrize("typ,values,names", [
    (pa.int64(), [3, -1, None], ["k=-1", "k=3", "k=__HIVE_DEFAULT_PARTITION__"]),
    (pa.date32(), [dtm.date(2024, 3, 1), dtm.date(2000, 1, 1)], ["k=2000-01-01", "k=2024-03-01"]),
    (pa.dictionary(pa.int32(), pa.string()), ["a b", "c"], ["k=a%20b", "k=c"]),
    (pa.bool_(), [True, False], ["k=false", "k=true"]),
])
def test_int_date_dictionary_and_bool_keys(tmp_path: Path, typ, values, names) -> None:
    t = pa.table({"k": pa.array(values * 3, typ), "v": list(range(len(values) * 3))})
    vio.write_ipc(tmp_path / "ds", t, partition_by=["k"])
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == names
    got = _duckdb_rows(tmp_path / "ds", ["v", "k"]) if typ != pa.bool_() else None
    if got is not None:
        plain = t.cast(pa.schema([("k", pa.string() if pa.types.is_dictionary(typ) else typ),
                                  ("v", pa.int64())]))
        assert got == _rows(plain.to_pylist(), ["v", "k"])


def test_max_open_files_closes_the_least_recently_used_and_starts_new_parts(
        tmp_path: Path) -> None:
    t = pa.table({"k": [i % 3 for i in range(90)], "v": list(range(90))})
    # batches of 3 rows, each holding every key: with one open file, each key's file is
    # closed when the next key comes, and its next rows start part-1, part-2...
    n = vio.write_ipc(tmp_path / "ds", _reader(t, rows=3), partition_by=["k"], chunk_rows=1,
                      max_open_files=1)
    files = _files(tmp_path / "ds")
    assert n == sum(p.stat().st_size for p in files)
    by_key: dict[str, list[str]] = {}
    for p in files:
        by_key.setdefault(p.parent.name, []).append(p.name)
    assert sorted(by_key) == ["k=0", "k=1", "k=2"]
    assert all(len(v) == 30 for v in by_key.values())  # a new part for every batch
    assert "part-29.vxipc" in by_key["k=0"]
    assert _polars_rows(tmp_path / "ds", ["v", "k"]) == _rows(t.to_pylist(), ["v", "k"])
    # with enough open files, one file per partition
    vio.write_ipc(tmp_path / "ds2", _reader(t, rows=3), partition_by=["k"], chunk_rows=1,
                  max_open_files=3)
    assert len(_files(tmp_path / "ds2")) == 3


def test_stream_options_apply_to_every_file(tmp_path: Path) -> None:
    t = _table(120)
    vio.write_ipc(tmp_path / "ds", t, partition_by=["n"], metadata={"who": "me"},
                  integrity=True, compress=False, chunk_rows=7)
    files = _files(tmp_path / "ds")
    assert len(files) == 4
    for p in files:
        with vio.StreamReader(p, require_integrity=True) as r:
            assert r.metadata[b"who"] == b"me"
            sizes = [len(b.array) for b in r]
        assert max(sizes) <= 7
    # pandas' schema metadata carries over as it does for one file
    t2 = t.replace_schema_metadata({"origin": "test"})
    vio.write_ipc(tmp_path / "md", t2, partition_by=["n"])
    for p in _files(tmp_path / "md"):
        with vio.StreamReader(p) as r:
            assert r.metadata[b"origin"] == b"test"


def test_basename_template_and_empty_input(tmp_path: Path) -> None:
    t = _table(20)
    vio.write_ipc(tmp_path / "ds", t, partition_by=["n"], basename_template="chunk-{i}.vxipc")
    assert {p.name for p in _files(tmp_path / "ds")} == {"chunk-0.vxipc"}
    assert vio.write_ipc(tmp_path / "empty", t.slice(0, 0), partition_by=["n"]) == 0
    assert _files(tmp_path / "empty") == []


# -- existing data ------------------------------------------------------------------------------


def test_existing_error_overwrite_or_ignore_and_delete_matching(tmp_path: Path) -> None:
    d = tmp_path / "ds"
    first = pa.table({"k": ["a", "b"], "v": [1, 2]})
    vio.write_ipc(d, first, partition_by="k")
    with pytest.raises(FileExistsError, match="not empty"):
        vio.write_ipc(d, first, partition_by="k")
    # an empty directory is fine with the default
    (tmp_path / "empty").mkdir()
    vio.write_ipc(tmp_path / "empty", first, partition_by="k")

    (d / "k=a" / "other.vxipc").write_bytes((d / "k=a" / "part-0.vxipc").read_bytes())
    second = pa.table({"k": ["a", "c"], "v": [10, 30]})
    vio.write_ipc(d, second, partition_by="k", existing="overwrite_or_ignore")
    # part-0 of k=a replaced, other.vxipc and k=b kept, k=c added
    assert {str(p.relative_to(d)) for p in _files(d)} == {
        "k=a/part-0.vxipc", "k=a/other.vxipc", "k=b/part-0.vxipc", "k=c/part-0.vxipc"}
    assert vio.read_table(d / "k=a" / "part-0.vxipc")["v"].to_pylist() == [10]

    vio.write_ipc(d, second, partition_by="k", existing="delete_matching")
    # the partitions written were emptied first: other.vxipc is gone; k=b is untouched
    assert {str(p.relative_to(d)) for p in _files(d)} == {
        "k=a/part-0.vxipc", "k=b/part-0.vxipc", "k=c/part-0.vxipc"}
    assert _polars_rows(d, ["v", "k"]) == [(2, "b"), (10, "a"), (30, "c")]

    with pytest.raises(ValueError, match="existing must be one of"):
        vio.write_ipc(d, second, partition_by="k", existing="append")
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        vio.write_ipc(tmp_path / "file", second, partition_by="k")


# -- bad input ----------------------------------------------------------------------------------


def test_bad_input_raises_errors_naming_the_column(tmp_path: Path) -> None:
    t = pa.table({"k": [1, 2], "l": pa.array([[1], [2]]), "v": ["a", "b"]})
    with pytest.raises(vio.ColumnNotFoundError, match="no column 'nope'") as e:
        vio.write_ipc(tmp_path / "a", t, partition_by=["k", "nope"])
    assert e.value.column == "nope" and e.value.choices == ["k", "l", "v"]
    with pytest.raises(vio.UnsupportedError, match=r"column 'l'.*nested"):
        vio.write_ipc(tmp_path / "b", t, partition_by=["l"])
    with pytest.raises(ValueError, match=r"names every column \(k, v\)"):
        vio.write_ipc(tmp_path / "c", t.select(["k", "v"]), partition_by=["k", "v"])
    with pytest.raises(ValueError, match="column 'k' twice"):
        vio.write_ipc(tmp_path / "d", t, partition_by=["k", "k"])
    with pytest.raises(TypeError, match="needs data with columns"):
        vio.write_ipc(tmp_path / "e", pa.array([1, 2, 3]), partition_by=["k"])
    with pytest.raises(TypeError, match="directory path"):
        vio.write_ipc(io.BytesIO(), t, partition_by=["k"])
    with pytest.raises(ValueError, match="encodings names partition column 'k'"):
        vio.write_ipc(tmp_path / "f", t, partition_by=["k"], encodings={"k": "vortex.dict"})
    with pytest.raises(TypeError, match="partition_by must be"):
        vio.write_ipc(tmp_path / "g", t, partition_by=[])
    # nothing was written by any of them
    assert not any((tmp_path / x).exists() for x in "abcdefg")


def test_a_vortex_struct_array_and_a_dtype_can_be_partitioned(tmp_path: Path) -> None:
    t = _table(50).select(["id", "n", "t"])
    arr = vio.array(t)
    vio.write_ipc(tmp_path / "ds", arr, partition_by=["n"])
    assert _polars_rows(tmp_path / "ds", ["id", "n", "t"]) == _rows(t.to_pylist(),
                                                                   ["id", "n", "t"])
    schema = pa.schema([("id", pa.int32()), ("n", pa.int64()), ("t", pa.large_string())])
    vio.write_ipc(tmp_path / "typed", t, partition_by=["n"], dtype=schema)
    for p in _files(tmp_path / "typed"):
        with vio.StreamReader(p) as r:
            assert r.schema.remove_metadata() == pa.schema([("id", pa.int32()),
                                                            ("t", pa.large_string())])


# -- the CLI ------------------------------------------------------------------------------------


@pytest.fixture
def parts(tmp_path: Path) -> tuple[Path, pa.Table]:
    """A directory of three Parquet files (one in a subdirectory, one hidden: skipped)."""
    t = _table(90)
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    (d / ".hidden").mkdir()
    pq.write_table(t.slice(0, 30), d / "a.parquet")
    pq.write_table(t.slice(30, 30), d / "b.parquet")
    pq.write_table(t.slice(60, 30), d / "sub" / "c.parquet")
    pq.write_table(t.slice(0, 5), d / ".hidden" / "x.parquet")
    (d / "_SUCCESS").write_bytes(b"")
    return d, t


def test_cli_convert_a_directory_or_a_glob_reads_its_files_sorted_as_one_table(
        parts, tmp_path: Path) -> None:
    d, t = parts
    assert main(["convert", str(d), str(tmp_path / "all.vxipc"), "-q"]) == 0
    assert vio.read_table(tmp_path / "all.vxipc").equals(t)
    assert main(["convert", f"{d}/*.parquet", str(tmp_path / "glob.vxipc"), "-q"]) == 0
    assert vio.read_table(tmp_path / "glob.vxipc").equals(t.slice(0, 60))
    assert main(["convert", f"{d}/*/*.parquet", str(tmp_path / "sub.arrows"), "-q"]) == 0
    assert pa.ipc.open_stream(tmp_path / "sub.arrows").read_all().equals(t.slice(60, 30))


def test_cli_convert_partition_by_writes_a_hive_directory(parts, tmp_path: Path) -> None:
    d, t = parts
    out = tmp_path / "out"
    assert main(["convert", str(d), str(out), "--partition-by", "s,n", "-q"]) == 0
    assert {p.name for p in out.iterdir()} >= {"s=a%2Fb", "s=__HIVE_DEFAULT_PARTITION__"}
    order = ["id", "s", "n", "d", "x", "t"]
    assert _duckdb_rows(out, order) == _rows(t.to_pylist(), order)
    # nothing left beside it (it was written beside and renamed into place)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]
    # one file in, repeated --partition-by
    out2 = tmp_path / "out2"
    assert main(["convert", str(d / "a.parquet"), str(out2), "--partition-by", "n",
                 "--partition-by", "d", "-q", "--integrity"]) == 0
    assert _polars_rows(out2, order) == _rows(t.slice(0, 30).to_pylist(), order)
    for p in _files(out2):
        with vio.StreamReader(p, require_integrity=True) as r:
            assert list(r)


def test_cli_convert_of_a_hive_directory_keeps_its_partition_columns(tmp_path: Path) -> None:
    """A partitioned directory converted back to one file: its key=value directories are
    columns after the data's (as vortex_io.scan, Polars and pyarrow read them), for Vortex
    IPC and Parquet layouts alike."""
    t = pa.table({"v": list(range(12)), "k": [i % 3 for i in range(12)],
                  "c": ["x y" if i % 2 else "a/b" for i in range(12)]})
    vio.write_ipc(tmp_path / "vx", t, partition_by=["k", "c"])
    pq.write_to_dataset(t, tmp_path / "pq", partition_cols=["k", "c"])
    for src in ("vx", "pq"):
        out = tmp_path / f"{src}.vxipc"
        assert main(["convert", str(tmp_path / src), str(out), "-q"]) == 0
        back = vio.read_table(out)
        assert back.column_names == ["v", "k", "c"], src
        assert back.sort_by("v").equals(t), src


def test_cli_convert_partition_by_existing(parts, tmp_path: Path, capsys) -> None:
    d, t = parts
    out = tmp_path / "out"
    assert main(["convert", str(d / "a.parquet"), str(out), "--partition-by", "n", "-q"]) == 0
    capsys.readouterr()
    assert main(["convert", str(d / "a.parquet"), str(out), "--partition-by", "n", "-q"]) == 1
    assert capsys.readouterr().err == (
        f"vortex-ipc convert: {out}: directory is not empty; use --existing "
        "overwrite_or_ignore or delete_matching to write into it\n")
    assert main(["convert", str(d / "b.parquet"), str(out), "--partition-by", "n", "-q",
                 "--existing", "delete_matching"]) == 0
    order = ["id", "s", "n", "d", "x", "t"]
    assert _polars_rows(out, order) == _rows(t.slice(30, 30).to_pylist(), order)


@pytest.mark.parametrize("argv,status,message", [
    (["--partition-by", "nope"], 2,
     "--partition-by nope: no column 'nope'; columns are id, s, n, d, x, t "
     "(see vortex-ipc convert --help)"),
    (["--partition-by", "id,s,n,d,x,t"], 2,
     "--partition-by id,s,n,d,x,t: partition_by names every column (id, s, n, d, x, t): "
     "the files would have no columns left (see vortex-ipc convert --help)"),
    (["--partition-by", "n", "--to", "csv"], 2,
     "--partition-by writes Vortex IPC files only (--to vxipc) (see vortex-ipc convert --help)"),
    (["--partition-by", "n", "--encoding", "n=vortex.dict"], 2,
     "--encoding n=...: 'n' is a partition column, not in the files "
     "(see vortex-ipc convert --help)"),
])
def test_cli_partition_by_mistakes(parts, tmp_path: Path, capsys, argv, status,
                                   message) -> None:
    d, _ = parts
    out = tmp_path / "out"
    assert main(["convert", str(d), str(out), "-q", *argv]) == status
    assert capsys.readouterr().err == f"vortex-ipc convert: {message}\n"
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_cli_directory_and_glob_input_errors(parts, tmp_path: Path, capsys) -> None:
    d, t = parts
    err = lambda: capsys.readouterr().err  # noqa: E731
    assert main(["convert", f"{tmp_path}/nothing/*.parquet", str(tmp_path / "o.vxipc")]) == 1
    assert err() == f"vortex-ipc convert: {tmp_path}/nothing/*.parquet: no files match\n"
    (tmp_path / "bare").mkdir()
    assert main(["convert", str(tmp_path / "bare"), str(tmp_path / "o.vxipc")]) == 1
    assert err() == (f"vortex-ipc convert: {tmp_path / 'bare'}: is a directory without "
                     "Vortex IPC, Arrow or Parquet files\n")
    vio.write_ipc(d / "z.vxipc", t)
    assert main(["convert", str(d), str(tmp_path / "o.vxipc")]) == 2
    assert err() == (f"vortex-ipc convert: {d}: holds files of several formats (Parquet file, "
                     "Vortex IPC stream): choose one with --from (see vortex-ipc convert "
                     "--help)\n")
    # --from chooses: only the Vortex IPC file
    assert main(["convert", str(d), str(tmp_path / "o.vxipc"), "--from", "vxipc", "-q"]) == 0
    assert vio.read_table(tmp_path / "o.vxipc").equals(t)
    os.unlink(d / "z.vxipc")
    pq.write_table(t.select(["id"]), d / "sub" / "d.parquet")
    assert main(["convert", str(d), str(tmp_path / "p.vxipc")]) == 1
    assert err() == (f"vortex-ipc convert: {d / 'sub' / 'd.parquet'}: its schema differs from "
                     f"{d / 'a.parquet'}'s: id: int64 vs id: int64, s: string, n: int64, "
                     "d: date32[day], x: double, t: string\n")
    assert not (tmp_path / "p.vxipc").exists()  # the output is atomic: nothing left


# -- Polars' sink --------------------------------------------------------------------------------


def test_polars_sink_ipc_with_and_without_partition_by(tmp_path: Path) -> None:
    vio.register_polars()
    t = _table(3000)
    src = tmp_path / "src.parquet"
    pq.write_table(t, src, row_group_size=500)
    lf = pl.scan_parquet(src).filter(pl.col("id") % 3 != 0)
    want = lf.collect()
    one = tmp_path / "one.vxipc"
    n = lf.vortex.sink_ipc(one, chunk_rows=256)
    assert n == one.stat().st_size
    assert max(len(b.array) for b in vio.StreamReader(one)) <= 256
    assert pl.read_vortex_ipc(one).sort("id").equals(want.sort("id"))

    out = tmp_path / "ds"
    n = lf.vortex.sink_ipc(out, partition_by=["s", "n"], chunk_rows=256)
    files = _files(out)
    assert n == sum(p.stat().st_size for p in files)
    order = ["id", "s", "n", "d", "x", "t"]
    expect = _rows(want.to_dicts(), order)
    assert _polars_rows(out, order) == expect
    assert _duckdb_rows(out, order) == expect
    with pytest.raises(FileExistsError):
        lf.vortex.sink_ipc(out, partition_by="n")
    # lazy: nothing written until collected
    later = tmp_path / "later"
    q = lf.vortex.sink_ipc(later, partition_by="n", lazy=True)
    assert not later.exists()
    q.collect()
    assert _polars_rows(later, order) == expect


def test_buffered_rows_are_written_out_past_the_byte_bound(tmp_path: Path, monkeypatch) -> None:
    from vortex_io._ipc import partitioned

    t = pa.table({"k": [i % 2 for i in range(100)], "v": list(range(100))})
    vio.write_ipc(tmp_path / "whole", _reader(t, rows=10), partition_by="k")
    # by default each partition's 50 rows are buffered and written as one message
    assert [len(b.array) for b in vio.StreamReader(tmp_path / "whole" / "k=0" / "part-0.vxipc")] == [50]
    monkeypatch.setattr(partitioned, "MAX_BUFFERED_BYTES", 1)
    vio.write_ipc(tmp_path / "bounded", _reader(t, rows=10), partition_by="k")
    sizes = [len(b.array) for b in vio.StreamReader(tmp_path / "bounded" / "k=0" / "part-0.vxipc")]
    assert sizes == [5] * 10  # each batch's rows written as they came
    assert vio.read_table(tmp_path / "bounded" / "k=0" / "part-0.vxipc")["v"].to_pylist() == \
        list(range(0, 100, 2))


def test_polars_sink_never_collects_the_whole_frame(tmp_path: Path, monkeypatch) -> None:
    """The sink takes the streaming engine's batches (``collect_batches``), never
    ``collect()``: that would hold the whole frame in memory."""
    vio.register_polars()
    t = _table(2000)
    pq.write_table(t, tmp_path / "src.parquet", row_group_size=300)
    lf = pl.scan_parquet(tmp_path / "src.parquet")
    batches = []
    real = pl.LazyFrame.collect_batches

    def spy(self, *args, **kwargs):
        assert kwargs.get("engine") == "streaming"
        for df in real(self, *args, **kwargs):
            batches.append(df.height)
            yield df

    def refuse(self, *args, **kwargs):
        raise AssertionError("sink_ipc collected the whole frame")

    monkeypatch.setattr(pl.LazyFrame, "collect_batches", spy)
    monkeypatch.setattr(pl.LazyFrame, "collect", refuse)
    lf.vortex.sink_ipc(tmp_path / "ds", partition_by="n", chunk_rows=128)
    assert max(batches) == 128 and sum(batches) == 2000  # batches of chunk_rows rows
    monkeypatch.undo()
    order = ["id", "s", "n", "d", "x", "t"]
    assert _polars_rows(tmp_path / "ds", order) == _rows(t.to_pylist(), order)


KEY_TYPES = {
    "i8": (pa.int8(), [1, 2, None, 1]),
    "dt": (pa.date32(), [dtm.date(2024, 1, 1), dtm.date(2024, 1, 2)] * 2),
    "ts": (pa.timestamp("us"), [dtm.datetime(2024, 1, 1, 0, 0, 0, 5),
                                dtm.datetime(2024, 1, 1, 1)] * 2),
    "tz": (pa.timestamp("ns", tz="Europe/Paris"), [dtm.datetime(2024, 1, 1, 3)] * 4),
    "b": (pa.bool_(), [True, False, True, None]),
    "dc": (pa.decimal128(5, 2), [decimal.Decimal("1.25"), decimal.Decimal("-3.50")] * 2),
    "ls": (pa.large_string(), ["a", "b/c", "a", "é"]),
    "sv": (pa.string_view(), ["a b", "x", None, "x"]),
    "dic": (pa.dictionary(pa.int32(), pa.string()), ["x", "y", "x", None]),
    "f": (pa.float64(), [0.1, 1e300, 0.1, -0.0]),
    "bin": (pa.binary(), [b"plain", b"ab", b"ab", None]),
}


@pytest.mark.parametrize("key", list(KEY_TYPES))
def test_partition_columns_read_back_with_their_exact_arrow_fields(tmp_path: Path, key) -> None:
    """Every file keeps the partition columns' Arrow fields (reserved stream metadata), so
    ``vortex_io.read_table`` gives back their types, nullability and field metadata, where
    a reader of the paths alone could only infer int64 / float64 / string."""
    typ, values = KEY_TYPES[key]
    field = pa.field(key, typ, nullable=None in values, metadata={"unit": key})
    t = pa.table({"v": list(range(len(values))), key: pa.array(values, typ)},
                 schema=pa.schema([pa.field("v", pa.int64()), field]))
    vio.write_ipc(tmp_path / "d", t, partition_by=[key])
    back = vio.read_table(tmp_path / "d")
    got = back.schema.field(key)
    assert got.equals(field, check_metadata=True), (got, field)
    rows = sorted(zip(back["v"].to_pylist(), back[key].to_pylist()))
    assert rows == sorted(zip(t["v"].to_pylist(), t[key].to_pylist()))
    with vio.StreamReader(_files(tmp_path / "d")[0]) as r:
        assert r.partition_schema.field(key).equals(field, check_metadata=True)
        assert not any(k.startswith(b"vortex_io.") for k in r.metadata)  # not the user's
    # hive_schema= still decides; hive_partitioning=False reads the data columns only
    assert vio.read_table(tmp_path / "d", hive_schema={key: pa.string()}).schema.field(
        key).type == pa.string()
    assert vio.read_table(tmp_path / "d", hive_partitioning=False).column_names == ["v"]


def test_binary_keys_that_are_no_text_are_refused_naming_the_column(tmp_path: Path) -> None:
    t = pa.table({"v": [1], "k": pa.array([b"\x00\xff"], pa.binary())})
    with pytest.raises(vio.UnsupportedError, match="partition column 'k' holds values that "
                       "are no text"):
        vio.write_ipc(tmp_path / "d", t, partition_by=["k"])
