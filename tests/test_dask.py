"""Dask DataFrame: ``read_vortex_ipc`` (``dd.from_map``), results equal to ``vortex_io.scan``
over the same files. The synchronous scheduler where a cluster is not the point; one
``distributed.LocalCluster`` (two worker processes) for the rest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

dd = pytest.importorskip("dask.dataframe")
import pandas as pd  # noqa: E402
from dask.dataframe.dask_expr.io import FromMapProjectable  # noqa: E402

import vortex_io as vio  # noqa: E402
import vortex_io.integrations.dask_dataframe as vdd  # noqa: E402
from vortex_io._scan import message_spans  # noqa: E402
from vortex_io.expr import col  # noqa: E402
from vortex_io.integrations.dask_dataframe import read_vortex_ipc  # noqa: E402

from .test_scan import make_table, same  # noqa: E402

ROWS = 1500


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("dask")
    tables = []
    for i in range(3):
        t = make_table(ROWS, seed=i)
        t = t.add_column(0, "id", pa.array(range(i * ROWS, (i + 1) * ROWS), pa.int64()))
        vio.write_ipc(str(d / f"part-{i}.vxipc"), t, chunk_rows=250)  # 6 messages a file
        tables.append(t)
    return str(d), pa.concat_tables(tables)


def paths(d: str) -> list[str]:
    return sorted(os.path.join(d, n) for n in os.listdir(d))


def to_arrow(df) -> pa.Table:
    pdf = df.compute(scheduler="sync") if hasattr(df, "compute") else df
    return pa.Table.from_pandas(pdf, preserve_index=False).sort_by("id")


def reference(d: str, columns=None, filter=None) -> pa.Table:
    return vio.scan(paths(d), columns=columns, filter=filter).to_arrow().sort_by("id")


def test_one_partition_per_file(files):
    d, table = files
    df = read_vortex_ipc(d)
    assert df.npartitions == 3
    got = to_arrow(df)
    assert same(got, reference(d)) and same(got, table)


def test_dtypes_are_arrow_backed(files):
    d, table = files
    df = read_vortex_ipc(d)
    assert all(isinstance(t, pd.ArrowDtype) for t in df.dtypes)
    assert {n: t.pyarrow_dtype for n, t in df.dtypes.items()} == dict(
        zip(table.schema.names, table.schema.types))
    part = df.partitions[0].compute(scheduler="sync")
    assert part["i"].isna().any() and part["i"].dtype == pd.ArrowDtype(pa.int64())


def test_projection_is_pushed_into_the_scans(files):
    d, _ = files
    sel = read_vortex_ipc(d)[["s", "id", "ts"]]
    reads = [e for e in sel.optimize(fuse=False).expr.walk() if isinstance(e, FromMapProjectable)]
    assert len(reads) == 1 and sorted(reads[0].kwargs["columns"]) == ["id", "s", "ts"]
    got = to_arrow(sel)
    assert got.column_names == ["s", "id", "ts"]
    assert same(got, reference(d, columns=["s", "id", "ts"]))
    # the columns= argument too
    df = read_vortex_ipc(d, columns=["id", "f"])
    assert list(df.columns) == ["id", "f"]
    assert same(to_arrow(df), reference(d, columns=["id", "f"]))


@pytest.mark.parametrize("expr", [
    col("s") == "fig",
    col("i").is_in([1, 2, 3]),
    (col("i") >= -10) & (col("i") < 10),
    col("s").is_null(),
    (col("s") == "pear") | (col("f") > 5),
    ~(col("b") == True) & col("d").is_not_null(),  # noqa: E712
], ids=repr)
def test_filters_equal_the_scan(files, expr):
    d, _ = files
    want = reference(d, filter=expr)
    assert want.num_rows > 0
    assert same(to_arrow(read_vortex_ipc(d, filter=expr)), want)
    assert same(to_arrow(read_vortex_ipc(d, filter=expr, blocksize=4000)), want)


def test_counts_and_limits(files):
    d, table = files
    df = read_vortex_ipc(d, blocksize="8KiB")
    assert len(df) == table.num_rows
    assert len(read_vortex_ipc(d, filter=col("s") == "kiwi")) == reference(
        d, filter=col("s") == "kiwi").num_rows
    head = df.head(7, npartitions=-1, compute=False).compute(scheduler="sync")
    assert len(head) == 7 and list(head["id"]) == list(range(7))
    assert len(read_vortex_ipc(d, columns=[])) == table.num_rows  # zero columns, all rows


def test_blocksize_partitions_scan_only_their_messages(files, monkeypatch):
    d, table = files
    seen = []
    real_scan = vdd.scan

    def recording_scan(*args, **kw):
        s = real_scan(*args, **kw)
        seen.append(s)
        return s

    monkeypatch.setattr(vdd, "scan", recording_scan)
    df = read_vortex_ipc(d, blocksize=1)  # one message a partition
    assert df.npartitions == 18
    seen.clear()
    assert same(to_arrow(df), table)
    spans = {p: {s.index: s for s in message_spans(p)} for p in paths(d)}
    assert len(seen) == 18
    for s in seen:
        p, r = os.fspath(s.sources[0]), s.messages
        assert r.stop == r.start + 1
        # the DType message and its own message only
        assert s.stats.bytes_read == spans[p][1].offset + spans[p][r.start].size
    with pytest.raises(ValueError):
        read_vortex_ipc(d, blocksize=0)


def test_malformed_files_raise_our_error_naming_the_file(files, tmp_path):
    d, _ = files
    bad = tmp_path / "bad"
    shutil.copytree(d, bad)
    victim = bad / "part-2.vxipc"
    data = bytearray(victim.read_bytes())
    m = message_spans(bytes(data))[3]
    data[m.offset + m.size - 64: m.offset + m.size] = b"\xff" * 64
    victim.write_bytes(bytes(data))
    with pytest.raises(vio.MalformedStreamError) as e:
        read_vortex_ipc(str(bad)).compute(scheduler="sync")
    assert "part-2.vxipc" in str(e.value)
    victim.write_bytes(bytes(data[: m.offset + 5]))
    with pytest.raises(vio.TruncatedStreamError) as e:
        read_vortex_ipc(str(bad), blocksize="1MiB")  # planned from the headers: fails early
    assert "part-2.vxipc" in str(e.value)
    with pytest.raises(FileNotFoundError):
        read_vortex_ipc(str(tmp_path / "nothing-here"))
    with pytest.raises(TypeError):
        read_vortex_ipc(d, filter="s == 'fig'")


def test_on_a_local_cluster(files, tmp_path):
    distributed = pytest.importorskip("distributed")
    d, _ = files
    bad = tmp_path / "bad"
    shutil.copytree(d, bad)
    victim = bad / "part-0.vxipc"
    data = bytearray(victim.read_bytes())
    m = message_spans(bytes(data))[1]
    data[m.offset + m.size - 64: m.offset + m.size] = b"\xff" * 64
    victim.write_bytes(bytes(data))
    expr = (col("s") == "apple") & (col("i") > 0)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  processes=True) as cluster, distributed.Client(cluster) as client:
        df = read_vortex_ipc(d, filter=expr, blocksize=4000)[["id", "f", "s"]]
        got = pa.Table.from_pandas(client.compute(df).result(), preserve_index=False)
        assert same(got.sort_by("id"), reference(d, columns=["id", "f", "s"], filter=expr))
        with pytest.raises(vio.MalformedStreamError) as e:
            client.compute(read_vortex_ipc(str(bad))).result()
        assert "part-0.vxipc" in str(e.value) and e.value.message_index == 2


def test_the_core_imports_no_engine():
    code = ("import sys, vortex_io, vortex_io._scan, vortex_io.integrations._distributed; "
            "print(sorted(m for m in ('ray', 'dask', 'distributed', 'polars', 'duckdb') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_hive_partitions_are_columns(tmp_path):
    """A directory's key=value paths are columns, as vortex_io.scan reads them."""
    from vortex_io.expr import col

    for city in ("Paris", "Rome"):
        for part in range(2):
            p = tmp_path / f"city={city}" / f"{part}.vxipc"
            p.parent.mkdir(parents=True, exist_ok=True)
            vio.write_ipc(p, pa.table({"v": [part, part + 10]}))
    df = read_vortex_ipc(str(tmp_path), filter=col("city") == "Rome", blocksize=1)
    got = df.compute(scheduler="sync").sort_values("v")
    assert list(got.columns) == ["v", "city"]
    assert got["v"].tolist() == [0, 1, 10, 11] and set(got["city"]) == {"Rome"}
    assert df[["city"]].compute(scheduler="sync")["city"].tolist() == ["Rome"] * 4
