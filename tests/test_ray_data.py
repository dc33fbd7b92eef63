"""Ray Data: ``read_vortex_ipc`` / ``write_vortex_ipc`` on a local cluster (one ``ray.init``
for the module: Ray's start-up is most of this file's time).

Results are compared with ``vortex_io.scan`` over the same files and, for Ray's own
predicates, with pyarrow evaluating the predicate (Ray's semantics) on the decoded table.
Each read task reports its scans through ``on_scan`` (a JSON line per scan), which shows
what reached the scan (columns, filter) and what it read (its message range, bytes).
"""

from __future__ import annotations

import datetime
import functools
import itertools
import json
import logging
import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

ray = pytest.importorskip("ray")
from ray.data.expressions import col, lit  # noqa: E402

import vortex_io as vio  # noqa: E402
from vortex_io._scan import message_spans  # noqa: E402
from vortex_io.expr import col as vcol  # noqa: E402
from vortex_io.integrations.ray_data import (  # noqa: E402
    Untranslatable,
    VortexIPCDatasource,
    read_vortex_ipc,
    translate,
    write_vortex_ipc,
)

from .test_scan import same  # noqa: E402

ROWS_PER_FILE = 1200
CHUNK = 200


def make_table(n: int, start: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    f = rng.normal(0, 1, n).round(2)
    f[rng.random(n) < 0.05] = np.nan
    f[rng.random(n) < 0.05] = -0.0
    keys = np.array(["s0", "s1", "s2", "s3", "s4"])[rng.integers(0, 5, n)]
    base = datetime.datetime(2024, 1, 1)
    return pa.table({
        "id": pa.array(np.arange(start, start + n), pa.int64()),
        "k": pa.array(keys, mask=rng.random(n) < 0.1),
        "v": pa.array(rng.integers(0, 100, n).astype(np.int32), mask=rng.random(n) < 0.1),
        "f": pa.array(f, mask=rng.random(n) < 0.05),
        "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
        "ts": pa.array([base + datetime.timedelta(minutes=int(m))
                        for m in np.sort(rng.integers(0, 100_000, n))], pa.timestamp("us")),
        "day": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=int(d))
                         for d in rng.integers(0, 60, n)], pa.date32()),
    })


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("streams")
    tables = []
    for i in range(3):
        t = make_table(ROWS_PER_FILE, i * ROWS_PER_FILE, seed=i)
        vio.write_ipc(str(d / f"part-{i}.vxipc"), t, chunk_rows=CHUNK, metadata={"part": str(i)})
        tables.append(t)
    return str(d), pa.concat_tables(tables)


def _record(log: str, s: vio.Scan) -> None:
    """on_scan: one JSON line per finished scan (called in the read task)."""
    r = s.messages
    with open(log, "a") as fh:
        fh.write(json.dumps({
            "source": os.fspath(s.sources[0]), "columns": s.columns,
            "filter": None if s.filter is None else repr(s.filter),
            "messages": None if r is None else [r.start, r.stop, r.offset],
            "bytes_read": s.stats.bytes_read, "rows": s.stats.rows_returned,
            "pid": os.getpid()}) + "\n")


@pytest.fixture
def scans(tmp_path):
    """(on_scan hook, a function returning the scans recorded so far)."""
    log = str(tmp_path / "scans.jsonl")

    def recorded() -> list[dict]:
        if not os.path.exists(log):
            return []
        with open(log) as fh:
            return [json.loads(line) for line in fh]

    return functools.partial(_record, log), recorded


def collect(ds) -> pa.Table:
    refs = ds.to_arrow_refs()
    tables = [t for t in ray.get(refs) if t.num_rows]
    if not tables:
        return None
    return pa.concat_tables(tables).sort_by("id")


def reference(d: str, columns=None, filter=None) -> pa.Table:
    paths = sorted(os.path.join(d, n) for n in os.listdir(d))
    return vio.scan(paths, columns=columns, filter=filter).to_arrow().sort_by("id")


def test_read_all_equals_scan(cluster, files, scans):
    d, table = files
    hook, recorded = scans
    got = collect(read_vortex_ipc(d, on_scan=hook))
    assert same(got, reference(d))
    assert same(got, table)
    assert {os.path.basename(r["source"]) for r in recorded()} == {
        "part-0.vxipc", "part-1.vxipc", "part-2.vxipc"}


def test_projection_is_pushed(cluster, files, scans):
    d, _ = files
    hook, recorded = scans
    ds = read_vortex_ipc(d, on_scan=hook).select_columns(["id", "f", "k"])
    got = collect(ds)
    assert got.column_names == ["id", "f", "k"]
    assert same(got, reference(d, columns=["id", "f", "k"]))
    assert recorded() and all(r["columns"] == ["id", "f", "k"] for r in recorded())


# (Ray predicate, the vortex_io filter that keeps the same rows)
FILTERS = [
    (col("k") == "s1", vcol("k") == "s1"),
    (col("v").is_in([1, 2, 3, 50]), vcol("v").is_in([1, 2, 3, 50])),
    ((col("v") >= 10) & (col("v") < 40), (vcol("v") >= 10) & (vcol("v") < 40)),
    (col("k").is_null(), vcol("k").is_null()),
    ((col("k") == "s1") | (col("f") > 0.5), (vcol("k") == "s1") | (vcol("f") > 0.5)),
    # pyarrow's is_in is never null: NOT IN keeps the null rows
    (col("k").not_in(["s1", "s2"]), vcol("k").is_null() | ~vcol("k").is_in(["s1", "s2"])),
    (col("k").is_in(["s3", None]), vcol("k").is_null() | (vcol("k") == "s3")),
    (col("f") != 0.0, vcol("f") != 0.0),  # NaN != 0 is true; -0.0 == 0.0
    (~(col("f") <= 0.25) & col("b").is_not_null(), ~(vcol("f") <= 0.25) & ~vcol("b").is_null()),
    ((lit(20) > col("v")) & (col("b") == True),  # noqa: E712
     (vcol("v") < 20) & (vcol("b") == True)),  # noqa: E712
    ((col("ts") >= datetime.datetime(2024, 2, 1)) & (col("day") < datetime.date(2024, 2, 10)),
     (vcol("ts") >= datetime.datetime(2024, 2, 1)) & (vcol("day") < datetime.date(2024, 2, 10))),
    ((col("id") > 3500) | col("v").is_null(), (vcol("id") > 3500) | vcol("v").is_null()),
]


@pytest.mark.parametrize("ray_expr, vexpr", FILTERS, ids=[repr(v) for _, v in FILTERS])
def test_filters_are_pushed_and_exact(cluster, files, scans, ray_expr, vexpr):
    d, table = files
    hook, recorded = scans
    got = collect(read_vortex_ipc(d, on_scan=hook).filter(expr=ray_expr))
    want = reference(d, filter=vexpr)
    assert want.num_rows > 0
    assert same(got, want)
    # Ray's own semantics: pyarrow evaluating the predicate on the decoded table
    assert same(got, table.filter(ray_expr.to_pyarrow()).sort_by("id"))
    pushed = {r["filter"] for r in recorded()}
    assert pushed == {repr(translate(ray_expr, table.schema))}


UNTRANSLATABLE = [
    col("v") + 1 > 10,                               # arithmetic
    col("v") > col("id"),                            # column against column
    (col("k") == "s1") & (col("v") * 2 > 10),        # one conjunct untranslatable
    col("f") < float("inf"),                         # an infinite literal
    col("v") > 2.5,                                  # a float against integers
    col("ts") > datetime.datetime(2024, 2, 1, tzinfo=datetime.UTC),  # zone vs naive
]


@pytest.mark.parametrize("ray_expr", UNTRANSLATABLE, ids=range(len(UNTRANSLATABLE)))
def test_untranslatable_predicates_stay_with_ray(cluster, files, scans, ray_expr):
    d, table = files
    hook, recorded = scans
    with pytest.raises(Untranslatable):
        translate(ray_expr, table.schema)
    try:
        want = table.filter(ray_expr.to_pyarrow()).sort_by("id")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return  # pyarrow itself cannot evaluate it: Ray fails the same way, not our concern
    got = collect(read_vortex_ipc(d, on_scan=hook).filter(expr=ray_expr))
    assert same(got, want) if want.num_rows else got is None
    assert {r["filter"] for r in recorded()} == {None}  # nothing was pushed


def test_apply_predicate_refuses_by_identity(files):
    d, _ = files
    src = VortexIPCDatasource(d)
    assert src.apply_predicate(col("v") + 1 > 2) is src
    pushed = src.apply_predicate(col("v") > 2).apply_predicate(col("k") == "s1")
    assert repr(pushed.scan_filter) == "((col('v') > 2) & (col('k') == 's1'))"
    assert pushed.get_current_predicate() is not None
    assert src.scan_filter is None and src.get_current_predicate() is None
    assert "filter=" in pushed.get_name()


def test_counts(cluster, files, scans):
    d, table = files
    hook, recorded = scans
    ds = read_vortex_ipc(d, on_scan=hook)
    assert ds.count() == table.num_rows
    assert recorded() == []  # counted from the message headers: no scan ran
    f = (col("k") == "s2") & (col("v") < 30)
    n = reference(d, filter=(vcol("k") == "s2") & (vcol("v") < 30)).num_rows
    assert ds.filter(expr=f).count() == n
    # the count's empty projection reaches the scan: only the filter's columns are read
    assert recorded() and all(r["columns"] == [] for r in recorded())
    assert ds.select_columns([]).count() == table.num_rows
    assert ds.filter(expr=col("v") + 0 > 50).count() == table.filter(
        (col("v") > 50).to_pyarrow()).num_rows


def test_limits(cluster, files):
    d, table = files
    ds = read_vortex_ipc(d)
    assert ds.limit(17).count() == 17
    rows = ds.limit(17).take_all()
    assert len(rows) == 17
    ids = set(table.column("id").to_pylist())
    assert all(r["id"] in ids for r in rows)
    want = reference(d, filter=vcol("k") == "s4")
    got = ds.filter(expr=col("k") == "s4").limit(9).take_all()
    assert len(got) == 9 and {r["id"] for r in got} <= set(want.column("id").to_pylist())
    assert all(r["k"] == "s4" for r in got)


def test_columns_and_filter_arguments(cluster, files):
    d, _ = files
    got = collect(read_vortex_ipc(d, columns=["id", "v"], filter=vcol("k") == "s0"))
    assert same(got, reference(d, columns=["id", "v"], filter=vcol("k") == "s0"))
    got = collect(read_vortex_ipc(d, columns=["id", "v"], filter=col("v").is_in([5, 6])))
    assert same(got, reference(d, columns=["id", "v"], filter=vcol("v").is_in([5, 6])))
    with pytest.raises(KeyError):
        read_vortex_ipc(d, columns=["nope"])
    with pytest.raises(TypeError):
        read_vortex_ipc(d, filter="k == 's0'")


def test_each_task_reads_only_its_message_range(cluster, tmp_path, scans):
    hook, recorded = scans
    t = make_table(4800, 0, seed=7)
    path = str(tmp_path / "big.vxipc")
    vio.write_ipc(path, t, chunk_rows=400)  # 12 messages
    spans = message_spans(path)
    assert len(spans) == 12
    ds = read_vortex_ipc(path, override_num_blocks=4, on_scan=hook)
    assert same(collect(ds), t)
    runs = sorted(recorded(), key=lambda r: r["messages"][0])
    assert len(runs) == 4
    # the ranges tile the stream
    assert runs[0]["messages"][0] == 1 and runs[-1]["messages"][1] == 13
    assert all(a["messages"][1] == b["messages"][0] for a, b in itertools.pairwise(runs))
    by_index = {s.index: s for s in spans}
    size = os.path.getsize(path)
    for r in runs:
        start, stop, offset = r["messages"]
        assert offset == by_index[start].offset
        in_range = sum(by_index[i].size for i in range(start, stop))
        # the DType message and its own messages, nothing else
        assert r["bytes_read"] == spans[0].offset + in_range < size / 2
    assert sum(r["rows"] for r in runs) == t.num_rows


def test_malformed_file_fails_the_job_with_our_error(cluster, files, tmp_path):
    d, _ = files
    bad_dir = tmp_path / "bad"
    shutil.copytree(d, bad_dir)
    victim = bad_dir / "part-1.vxipc"
    data = bytearray(victim.read_bytes())
    m = message_spans(bytes(data))[2]
    data[m.offset + m.size - 64: m.offset + m.size] = b"\xff" * 64  # its array flatbuffer
    victim.write_bytes(bytes(data))
    with pytest.raises(vio.MalformedStreamError) as e:
        read_vortex_ipc(str(bad_dir)).filter(expr=col("k") == "s1").count()
    assert "part-1.vxipc" in str(e.value)
    # a cut file fails when the read is planned (its headers), naming it too
    victim.write_bytes(bytes(data[: m.offset + 10]))
    with pytest.raises(vio.TruncatedStreamError) as e:
        read_vortex_ipc(str(bad_dir)).count()
    assert "part-1.vxipc" in str(e.value)


def test_write_one_stream_per_block(cluster, files, tmp_path):
    d, table = files
    out = tmp_path / "out"
    n = table.num_rows // 3
    ds = ray.data.from_arrow([table.slice(0, n), table.slice(n, n), table.slice(2 * n)])
    written = write_vortex_ipc(ds, str(out), metadata={"job": "test"})
    assert len(written) == 3 and sorted(os.listdir(out)) == [os.path.basename(p) for p in written]
    total = 0
    for p in written:
        with vio.StreamReader(p) as r:
            assert dict(r.metadata) == {b"job": b"test"}
            total += r.read_arrow().num_rows
    assert total == table.num_rows
    assert same(collect(read_vortex_ipc(str(out))), table)
    # written through a read: projection and filter pushed, then one stream per block
    again = write_vortex_ipc(read_vortex_ipc(d).filter(expr=col("k") == "s3"), str(tmp_path / "o2"))
    assert same(vio.scan(again).to_arrow().sort_by("id"), reference(d, filter=vcol("k") == "s3"))


def test_hive_partitions_are_columns_and_prune_files(cluster, tmp_path, scans):
    """A directory's key=value paths are columns, as vortex_io.scan reads them; a filter on
    them (vortex_io's or Ray's pushed one) leaves the files it rules out unread."""
    on_scan, recorded = scans
    for year in (2023, 2024):
        for part in range(2):
            p = tmp_path / "h" / f"year={year}" / f"{part}.vxipc"
            p.parent.mkdir(parents=True, exist_ok=True)
            vio.write_ipc(p, pa.table({"v": [year * 10 + part, part]}))
    d = str(tmp_path / "h")
    want = vio.read_table(d)
    ds = read_vortex_ipc(d, on_scan=on_scan)
    order = [("v", "ascending"), ("year", "ascending")]
    got = pa.concat_tables([ray.get(r) for r in ds.to_arrow_refs()]).sort_by(order)
    assert got.column_names == ["v", "year"] and got.equals(want.sort_by(order))
    rows = read_vortex_ipc(d, on_scan=on_scan).filter(expr=col("year") == 2024).take_all()
    assert sorted(r["v"] for r in rows) == [0, 1, 20240, 20241]
    assert {r["year"] for r in rows} == {2024}
    last = [s for s in recorded() if s["filter"] is not None]
    assert last and all("year=2024" in s["source"] for s in last)
    sel = read_vortex_ipc(d, columns=["year"], filter=vcol("v") > 5).take_all()
    assert sorted(r["year"] for r in sel) == [2023, 2023, 2024, 2024]
