"""``pl.scan_vortex_ipc``'s multi-file options against ``pl.scan_parquet`` on the same data
(the same tables written as Vortex IPC and as Parquet side by side), in both engines: same
rows, columns, dtypes and error classes."""

from __future__ import annotations

import datetime as dtm
import io
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pl = pytest.importorskip("polars")
from polars.testing import assert_frame_equal  # noqa: E402

import vortex_io as vio  # noqa: E402
from vortex_io.integrations import polars_plugin as pp  # noqa: E402

ENGINES = ("in-memory", "streaming")


def _write(base: Path, rel: str, table: pa.Table) -> None:
    for ext, write in (("vxipc", lambda p: vio.write_ipc(p, table)),
                       ("parquet", lambda p: pq.write_table(table, p))):
        p = base / ext / f"{rel}.{ext}"
        p.parent.mkdir(parents=True, exist_ok=True)
        write(p)


def _t(lo: int, n: int = 5, extra: bool = False) -> pa.Table:
    cols = {"id": pa.array(range(lo, lo + n), pa.int64()),
            "s": pa.array([f"v{i % 3}" for i in range(lo, lo + n)])}
    if extra:
        cols["e"] = pa.array([float(i) for i in range(n)])
    return pa.table(cols)


@pytest.fixture(autouse=True, scope="module")
def registered() -> None:
    vio.register_polars()


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("trees")
    # hive partitions: a string key, an int key and a date key
    for region, year, day, lo in (("eu", 2020, "2020-01-01", 0), ("eu", 2021, "2021-06-30", 10),
                                  ("us", 2020, "2020-02-02", 20), ("us", 2021, "2021-12-31", 30)):
        _write(base / "hive", f"region={region}/year={year}/day={day}/part", _t(lo))
    # a file lacking a column and a file with one more
    _write(base / "mixed", "a", _t(0))
    _write(base / "mixed", "b", _t(5).select(["id"]))
    _write(base / "mixed", "c", _t(10, extra=True))
    # a name with glob characters
    _write(base / "odd", "br[1]", _t(0, 3))
    # a directory of plain files
    _write(base / "flat", "x1", _t(0, 2))
    _write(base / "flat", "x2", _t(2, 2))
    _write(base / "flat", "_skip", _t(100, 2))
    return base


def _pair(tree: Path, rel: str) -> tuple[str, str]:
    """The same source in both formats (``{ext}`` in ``rel`` names the extension)."""
    return (str(tree / rel.replace("{x}", "vxipc").replace("{ext}", "vxipc")),
            str(tree / rel.replace("{x}", "parquet").replace("{ext}", "parquet")))


def _same(tree: Path, rel: str, engine: str, q: Callable = lambda lf: lf, **kw: object) -> None:
    v, p = _pair(tree, rel)
    got = q(pl.scan_vortex_ipc(v, **kw)).collect(engine=engine)
    exp = q(pl.scan_parquet(p, **kw)).collect(engine=engine)
    # file paths differ by extension only
    for c in [c for c, t in exp.schema.items() if t == pl.String and c == kw.get(
            "include_file_paths")]:
        got = got.with_columns(pl.col(c).str.replace(r"\.vxipc$", ".parquet")
                               .str.replace("/vxipc/", "/parquet/"))
    assert_frame_equal(got, exp)


def _same_error(tree: Path, rel: str, engine: str, q: Callable = lambda lf: lf,
                **kw: object) -> type:
    v, p = _pair(tree, rel)
    with pytest.raises(Exception) as pe:
        q(pl.scan_parquet(p, **kw)).collect(engine=engine)
    with pytest.raises(pe.type):
        q(pl.scan_vortex_ipc(v, **kw)).collect(engine=engine)
    return pe.type


@pytest.mark.parametrize("engine", ENGINES)
def test_hive_partitioning(tree: Path, engine: str) -> None:
    q = lambda lf: lf.sort("id")  # noqa: E731
    _same(tree, "hive/{x}", engine, q)  # a directory: hive partitioning on by itself
    _same(tree, "hive/{x}/**/*.{ext}", engine, q, hive_partitioning=True)
    _same(tree, "hive/{x}/**/*.{ext}", engine, q, hive_partitioning=False)
    _same(tree, "hive/{x}", engine, q, try_parse_hive_dates=False)
    _same(tree, "hive/{x}", engine, q,
          hive_schema={"region": pl.Categorical(), "year": pl.Int16, "day": pl.Date})
    got = pl.scan_vortex_ipc(_pair(tree, "hive/{x}")[0]).collect_schema()
    assert got["year"] == pl.Int64 and got["day"] == pl.Date and got["region"] == pl.String


@pytest.mark.parametrize("engine", ENGINES)
def test_hive_filters_prune_files(tree: Path, engine: str) -> None:
    scans: list[vio.Scan] = []
    q = lambda lf: lf.filter(pl.col("year") == 2021, pl.col("region") == "us",  # noqa: E731
                             pl.col("id") > 30).sort("id")
    _same(tree, "hive/{x}", engine, q)
    df = q(pl.scan_vortex_ipc(_pair(tree, "hive/{x}")[0], on_scan=scans.append)).collect(
        engine=engine)
    assert df["id"].to_list() == [31, 32, 33, 34]
    assert len(scans) == 1  # the other three files were never opened for reading
    q2 = lambda lf: lf.filter(pl.col("day") > dtm.date(2021, 1, 1)).select("id", "day")  # noqa: E731
    _same(tree, "hive/{x}", engine, lambda lf: q2(lf).sort("id"))


@pytest.mark.parametrize("engine", ENGINES)
def test_include_file_paths(tree: Path, engine: str) -> None:
    _same(tree, "flat/{x}/x*.{ext}", engine, include_file_paths="path")
    _same(tree, "flat/{x}/x*.{ext}", engine, lambda lf: lf.filter(pl.col("id") == 3),
          include_file_paths="path")
    v = _pair(tree, "flat/{x}/x*.{ext}")[0]
    df = pl.scan_vortex_ipc(v, include_file_paths="src").collect(engine=engine)
    assert df["src"].to_list() == [str(tree / "flat/vxipc/x1.vxipc")] * 2 + [
        str(tree / "flat/vxipc/x2.vxipc")] * 2


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_and_extra_columns(tree: Path, engine: str) -> None:
    a, b, c = (_pair(tree, f"mixed/{{x}}/{n}.{{ext}}") for n in "abc")
    pairs = {"ab": ([a[0], b[0]], [a[1], b[1]]), "ac": ([a[0], c[0]], [a[1], c[1]])}
    for key, kw in (("ab", {"missing_columns": "insert"}), ("ac", {"extra_columns": "ignore"})):
        v, p = pairs[key]
        for q in (lambda lf: lf, lambda lf: lf.filter(pl.col("id") > 2),
                  lambda lf: lf.filter(pl.col("s") == "v1").select("id")):
            assert_frame_equal(q(pl.scan_vortex_ipc(v, **kw)).collect(engine=engine),
                               q(pl.scan_parquet(p, **kw)).collect(engine=engine))
    for key in pairs:  # the defaults raise, as scan_parquet's do
        v, p = pairs[key]
        with pytest.raises(Exception) as pe:
            pl.scan_parquet(p).collect(engine=engine)
        with pytest.raises(pe.type):
            pl.scan_vortex_ipc(v).collect(engine=engine)
    with pytest.raises(ValueError, match="missing_columns"):
        pl.scan_vortex_ipc(a[0], missing_columns="nope")


@pytest.mark.parametrize("engine", ENGINES)
def test_schema_option(tree: Path, engine: str) -> None:
    schema = {"id": pl.Int64, "s": pl.String}
    _same(tree, "flat/{x}/x*.{ext}", engine, schema=schema)
    _same(tree, "flat/{x}/x*.{ext}", engine, lambda lf: lf.filter(pl.col("id") > 1),
          schema=schema)
    assert pl.scan_vortex_ipc("/no/such/file.vxipc", schema=schema).collect_schema() == \
        pl.Schema(schema)  # no file is read to plan
    _same_error(tree, "flat/{x}/x*.{ext}", engine, schema={"id": pl.Int32, "s": pl.String})
    _same_error(tree, "flat/{x}/x*.{ext}", engine, schema={"id": pl.Int64})


@pytest.mark.parametrize("engine", ENGINES)
def test_glob_and_directories(tree: Path, engine: str) -> None:
    _same(tree, "odd/{x}/br[1].{ext}", engine, glob=False)
    _same_error(tree, "odd/{x}/br[1].{ext}", engine)  # glob=True: a pattern matching nothing
    _same(tree, "flat/{x}", engine, lambda lf: lf.sort("id"), hidden_file_prefix="_")
    _same(tree, "flat/{x}", engine, lambda lf: lf.sort("id"))
    _same(tree, "flat/{x}/*.{ext}", engine, lambda lf: lf.sort("id"), hidden_file_prefix=["_"])
    v = _pair(tree, "flat/{x}")[0]
    assert pl.scan_vortex_ipc(v, hidden_file_prefix="_").select(pl.len()).collect().item() == 4


@pytest.mark.parametrize("engine", ENGINES)
def test_n_rows_row_index_across_files(tree: Path, engine: str) -> None:
    for kw in ({"n_rows": 3}, {"row_index_name": "r", "row_index_offset": 7},
               {"n_rows": 3, "row_index_name": "r"}):
        _same(tree, "flat/{x}/x*.{ext}", engine, **kw)
        _same(tree, "flat/{x}/x*.{ext}", engine, lambda lf: lf.filter(pl.col("id") >= 1), **kw)
        _same(tree, "flat/{x}/x*.{ext}", engine, lambda lf: lf.slice(1, 2), **kw)
        _same(tree, "flat/{x}/x*.{ext}", engine, lambda lf: lf.tail(3), **kw)


@pytest.mark.parametrize("engine", ENGINES)
def test_file_errors_come_at_collect(tree: Path, engine: str) -> None:
    lf = pl.scan_vortex_ipc(str(tree / "nope.vxipc"))  # no error yet
    with pytest.raises(FileNotFoundError, match=r"nope\.vxipc"):
        lf.collect(engine=engine)
    lf = pl.scan_vortex_ipc(str(tree / "nope" / "*.vxipc"))
    with pytest.raises(FileNotFoundError):
        lf.collect(engine=engine)


def test_read_columns_by_index(tree: Path) -> None:
    v, p = _pair(tree, "flat/{x}/x*.{ext}")
    assert_frame_equal(pl.read_vortex_ipc(v, columns=[1, 0]), pl.read_parquet(p, columns=[1, 0])
                       .select("s", "id"))
    assert_frame_equal(pl.read_vortex_ipc(v, columns=[1]), pl.read_parquet(p, columns=[1]))
    with pytest.raises(IndexError):
        pl.read_vortex_ipc(v, columns=[5])
    with pytest.raises(TypeError):
        pl.read_vortex_ipc(v, columns=[0, "s"])


def test_in_memory_sources_keep_names_in_errors(tree: Path) -> None:
    data = Path(_pair(tree, "flat/{x}/x1.{ext}")[0]).read_bytes()
    got = pl.scan_vortex_ipc([data, io.BytesIO(data)]).collect()
    assert got["id"].to_list() == [0, 1, 0, 1]
    with pytest.raises(vio.TruncatedStreamError, match=r"<bytes #1>"):
        pl.scan_vortex_ipc([data, data[:-3]]).collect()


def test_lazy_sink(tree: Path, tmp_path: Path) -> None:
    src = pl.scan_vortex_ipc(_pair(tree, "flat/{x}/x*.{ext}")[0]).filter(pl.col("id") > 0)
    out = tmp_path / "lazy.vxipc"
    sink = src.vortex.sink_ipc(out, lazy=True)
    assert isinstance(sink, pl.LazyFrame) and not out.exists()  # nothing written yet
    pq_sink = src.sink_parquet(tmp_path / "lazy.parquet", lazy=True)
    res = pl.collect_all([sink, pq_sink])
    assert [r.shape for r in res[:1]] == [(0, 0)]
    assert_frame_equal(pl.read_vortex_ipc(out), pl.read_parquet(tmp_path / "lazy.parquet"))
    n = pp.sink_ipc(src, tmp_path / "eager.vxipc")
    assert n == (tmp_path / "eager.vxipc").stat().st_size


def test_a_rewritten_file_is_read_afresh(tmp_path: Path) -> None:
    p = tmp_path / "f.vxipc"
    vio.write_ipc(p, pa.table({"a": [1, 2]}))
    assert pl.scan_vortex_ipc(p).collect()["a"].to_list() == [1, 2]
    vio.write_ipc(p, pa.table({"b": ["x"], "c": [1.5]}))  # another schema, same path
    assert pl.scan_vortex_ipc(p).collect().rows() == [("x", 1.5)]


@pytest.mark.parametrize("engine", ENGINES)
def test_cast_options(tmp_path: Path, engine: str) -> None:
    narrow, wide = pa.table({"id": pa.array([1, 2], pa.int32())}), pa.table({"id": [3]})
    srcs: dict[str, list[str]] = {"vxipc": [], "parquet": []}
    for i, t in enumerate((wide, narrow)):
        for ext in srcs:
            p = tmp_path / f"{i}.{ext}"
            (vio.write_ipc(p, t) if ext == "vxipc" else pq.write_table(t, p))
            srcs[ext].append(str(p))
    opts = pl.ScanCastOptions(integer_cast="upcast")
    for q in (lambda lf: lf, lambda lf: lf.filter(pl.col("id") > 1)):
        assert_frame_equal(q(pl.scan_vortex_ipc(srcs["vxipc"], cast_options=opts)).collect(
            engine=engine), q(pl.scan_parquet(srcs["parquet"], cast_options=opts)).collect(
            engine=engine))
    with pytest.raises(pl.exceptions.SchemaError):
        pl.scan_vortex_ipc(srcs["vxipc"]).collect(engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_url_sources(engine: str) -> None:
    fsspec = pytest.importorskip("fsspec")
    base = "memory://polars-urls"
    tables = [_t(0, 3), _t(3, 2)]
    for i, t in enumerate(tables):
        with fsspec.open(f"{base}/year={2020 + i}/part.vxipc", "wb") as f:
            vio.write_ipc(f, t)
    exp = pa.concat_tables(tables)
    got = pl.scan_vortex_ipc(f"{base}/*/part.vxipc").collect(engine=engine)
    assert got.to_arrow().cast(exp.schema).equals(exp)
    got = pl.scan_vortex_ipc(f"{base}/**/*.vxipc", hive_partitioning=True,
                             include_file_paths="src").filter(pl.col("year") == 2021).collect(
        engine=engine)
    assert got["id"].to_list() == [3, 4] and got["src"].str.starts_with("memory://").all()
    assert pl.scan_vortex_ipc(f"{base}/year=2020/part.vxipc", storage_options={}).filter(
        pl.col("id") > 0).collect(engine=engine)["id"].to_list() == [1, 2]
    with pytest.raises(FileNotFoundError, match="nope"):
        pl.scan_vortex_ipc(f"{base}/nope.vxipc").collect(engine=engine)


def test_home_directory_in_paths(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tree))
    for src in ("~/flat/vxipc/x1.vxipc", "~/flat/vxipc/x*.vxipc", ["~/flat/vxipc/x1.vxipc"]):
        got = pl.scan_vortex_ipc(src).collect()
        exp = pl.scan_parquet(src.replace("vxipc", "parquet") if isinstance(src, str)
                              else [s.replace("vxipc", "parquet") for s in src]).collect()
        assert_frame_equal(got, exp)


@pytest.mark.parametrize("engine", ENGINES)
def test_filters_mixing_partition_and_file_columns(tree: Path, engine: str) -> None:
    """Polars hands the readers an OR of a partition column and a file column: no file can
    evaluate it, so the readers only use what they can and Polars filters again."""
    for q in (lambda lf: lf.filter((pl.col("region") == "us") | (pl.col("id") > 30)),
              lambda lf: lf.filter(((pl.col("year") == 2021) | (pl.col("id") < 3))
                                   & (pl.col("id") != 1)),
              lambda lf: lf.filter(pl.col("id") > 2).head(3)):
        _same(tree, "hive/{x}", engine, lambda lf, q=q: q(lf).sort("id"))
    _same(tree, "flat/{x}/x*.{ext}", engine,
          lambda lf: lf.filter((pl.col("path").str.contains("x2")) | (pl.col("id") == 0)),
          include_file_paths="path")


@pytest.mark.parametrize("engine", ENGINES)
def test_slice_before_filter(tree: Path, engine: str) -> None:
    """A slice Polars hands the reader applies before the filters (head, then filter)."""
    for q in (lambda lf: lf.head(3).filter(pl.col("id") > 0),
              lambda lf: lf.slice(1, 3).filter(pl.col("s").str.contains("v")),
              lambda lf: lf.tail(3).filter(pl.col("id") != 2)):
        _same(tree, "flat/{x}/x*.{ext}", engine, q)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_file_created_after_the_frame(tmp_path: Path, engine: str) -> None:
    """A source missing when the frame is built is read when the query runs (its filter
    still reaches the scan)."""
    path = tmp_path / "later.vxipc"
    scans: list[vio.Scan] = []
    lf = pl.scan_vortex_ipc(path, on_scan=scans.append).filter(pl.col("id") > 1).select("s")
    with pytest.raises(FileNotFoundError):
        lf.collect(engine=engine)
    vio.write_ipc(path, _t(0, 4))
    assert lf.collect(engine=engine)["s"].to_list() == ["v2", "v0"]
    assert scans and str(scans[-1].filter) == "(col('id') > 1)"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_file_rewritten_after_the_frame(tmp_path: Path, engine: str) -> None:
    """The frame's schema is the file's when the frame was built (Polars fixes a scan's
    schema when it first resolves it); a file rewritten since is read as it is now, and a
    schema that no longer matches is Polars' SchemaError, as between the files of a scan."""
    path = tmp_path / "f.vxipc"
    vio.write_ipc(path, _t(0, 3))
    lf = pl.scan_vortex_ipc(path)
    vio.write_ipc(path, _t(10, 2))  # the same schema, new rows
    assert lf.collect(engine=engine)["id"].to_list() == [10, 11]
    vio.write_ipc(path, _t(0, 2, extra=True))
    with pytest.raises(pl.exceptions.SchemaError, match="extra column"):
        lf.collect(engine=engine)
    vio.write_ipc(path, pa.table({"id": pa.array([1.5]), "s": pa.array(["a"])}))
    with pytest.raises(pl.exceptions.SchemaError, match="mismatch"):
        lf.collect(engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", ["io-source", "external"])
def test_a_single_file_on_either_scan(tmp_path: Path, engine: str, path: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A single file gets the Python IO source when small, Polars' external-reader scan
    when not: the same rows as scan_parquet either way, for slices and filters in either
    order, filters that do not translate, projections, counts, row indexes, categoricals,
    a corrupt file and in-memory sources."""
    monkeypatch.setattr(pp, "SMALL_SOURCE", 1 << 40 if path == "io-source" else 0)
    t = pa.table({"id": pa.array(range(40), pa.int64()),
                  "s": pa.array([f"v{i % 7}" if i % 5 else None for i in range(40)]),
                  "f": pa.array([i / 4 for i in range(40)])})
    v, p = tmp_path / "one.vxipc", tmp_path / "one.parquet"
    vio.write_ipc(v, t, chunk_rows=16)
    pq.write_table(t, p)
    marker = "PYTHON[vortex-ipc] SCAN" if path == "io-source" else "ExternalReaderBuilder SCAN"
    assert marker in pl.scan_vortex_ipc(v).explain()
    c = pl.col
    for q in (lambda lf: lf,
              lambda lf: lf.select("s", "id"),
              lambda lf: lf.filter(c("id") > 30),
              lambda lf: lf.filter(c("id") > 3).head(5),
              lambda lf: lf.head(5).filter(c("id") > 3),
              lambda lf: lf.filter(c("s").str.contains("3")).head(2).select("f"),
              lambda lf: lf.filter((c("f") * 2 > 10) & (c("s") == "v1")).select("id"),
              lambda lf: lf.filter(c("s").is_null()).select(pl.len()),
              lambda lf: lf.slice(17, 6).filter(c("id") % 2 == 0),
              lambda lf: lf.tail(3),
              lambda lf: lf.select(pl.len()),
              lambda lf: lf.with_row_index("r", offset=3).filter(c("id") > 35)):
        assert_frame_equal(q(pl.scan_vortex_ipc(v)).collect(engine=engine),
                           q(pl.scan_parquet(p)).collect(engine=engine))
    for kw in ({"n_rows": 4, "row_index_name": "r"}, {"categorical": "s"}):
        got = pl.scan_vortex_ipc(v, **kw).filter(c("id") > 1).collect(engine=engine)
        exp = pl.scan_parquet(p, **{k: a for k, a in kw.items() if k != "categorical"}) \
            .filter(c("id") > 1).collect(engine=engine)
        if "categorical" in kw:
            assert got.schema["s"] == pl.Categorical()
            got = got.with_columns(c("s").cast(pl.String))
        assert_frame_equal(got, exp)
    data = v.read_bytes()
    assert marker in pl.scan_vortex_ipc(data).explain()
    assert_frame_equal(pl.scan_vortex_ipc(io.BytesIO(data)).filter(c("id") < 3)
                       .collect(engine=engine), pl.DataFrame(t).filter(c("id") < 3))
    with pytest.raises(vio.TruncatedStreamError, match=r"<bytes #0>"):
        pl.scan_vortex_ipc(data[:-3]).collect(engine=engine)


def test_which_scan_a_source_gets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python IO source only for one source of at most SMALL_SOURCE bytes and no
    multi-file option; everything else is Polars' external-reader scan."""
    v = tmp_path / "a.vxipc"
    vio.write_ipc(v, _t(0, 50))
    size = v.stat().st_size

    def scan_kind(*a: object, **kw: object) -> str:
        plan = pl.scan_vortex_ipc(*a, **kw).explain()
        return "io" if "PYTHON[vortex-ipc]" in plan else "ext" \
            if "ExternalReaderBuilder" in plan else plan

    monkeypatch.setattr(pp, "SMALL_SOURCE", size)
    assert scan_kind(v) == "io"
    assert scan_kind(v, n_rows=3, row_index_name="r") == "io"
    assert scan_kind([v, v]) == "ext"
    assert scan_kind(tmp_path) == "ext"  # a directory
    assert scan_kind(str(tmp_path / "*.vxipc")) == "ext"  # a glob
    assert scan_kind(v, include_file_paths="path") == "ext"
    assert scan_kind(v, hive_partitioning=True) == "ext"
    assert scan_kind(v, schema={"id": pl.Int64, "s": pl.String}) == "ext"
    assert scan_kind(v, missing_columns="insert") == "ext"
    assert scan_kind(v, cast_options=pl.ScanCastOptions(integer_cast="upcast")) == "ext"
    monkeypatch.setattr(pp, "SMALL_SOURCE", size - 1)
    assert scan_kind(v) == "ext"
    assert scan_kind(v.read_bytes()) == "ext"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_small_file_rewritten_after_the_frame(tmp_path: Path, engine: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python IO source of a small file checks a rewritten file as the external-reader
    scan does (it hands the query to it): Polars' own errors, and rows as they are now,
    even when the file has grown past SMALL_SOURCE."""
    path = tmp_path / "f.vxipc"
    vio.write_ipc(path, _t(0, 3))
    monkeypatch.setattr(pp, "SMALL_SOURCE", path.stat().st_size)
    lf = pl.scan_vortex_ipc(path)
    assert "PYTHON[vortex-ipc]" in lf.explain()
    vio.write_ipc(path, _t(0, 3000))  # the same schema, past SMALL_SOURCE
    assert path.stat().st_size > pp.SMALL_SOURCE
    assert lf.filter(pl.col("id") >= 2998).collect(engine=engine)["id"].to_list() == [2998, 2999]
    for table, error, match in (
            (_t(0, 2, extra=True), pl.exceptions.SchemaError, "extra column"),
            (pa.table({"id": pa.array([1.5]), "s": pa.array(["a"])}),
             pl.exceptions.SchemaError, "mismatch"),
            (pa.table({"id": pa.array([1])}), pl.exceptions.ColumnNotFoundError, "column s")):
        vio.write_ipc(path, table)
        with pytest.raises(error, match=match):
            lf.collect(engine=engine)
    vio.write_ipc(path, _t(5, 2, extra=True))
    assert lf.select("id").filter(pl.col("id") > 5).collect(engine=engine)["id"].to_list() == [6]


def test_frames_of_no_column_keep_their_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """A batch filtered by Polars and then left with no column (an IO source asked for no
    column) still counts its rows."""
    v = tmp_path / "a.vxipc"
    vio.write_ipc(v, _t(0, 9))
    seen: list[tuple] = []
    real = pp._small_scan
    monkeypatch.setattr(pp, "_small_scan", lambda spec, key: seen.append((spec, key))
                        or real(spec, key))
    pl.scan_vortex_ipc(v)
    (spec, key), = seen
    frames = list(pp._frames(spec, key, (), ["s"], None, [pl.col("s") == "v1"], keep=[]))
    assert [f.shape for f in frames] == [(3, 0)]
