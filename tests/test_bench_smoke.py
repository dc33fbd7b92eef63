"""Smoke tests of the benchmark harness (bench/): the core group on a tiny trades table,
the output check, and the trades generator's protocol properties. Runs in a few seconds."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bench import harness
from bench.datasets import TICKERS, trades
from bench.run import run


@pytest.fixture
def restore_threads():
    """``run`` pins thread pools to 1 for the whole process: put them back afterwards."""
    cpu, io_ = pa.cpu_count(), pa.io_thread_count()
    yield
    pa.set_cpu_count(cpu)
    pa.set_io_thread_count(io_)
    try:
        import vortex as vx
    except ImportError:
        return
    vx.set_worker_threads()


def test_core_group_runs_and_writes_json(tmp_path, restore_threads):
    out = tmp_path / "bench.json"
    results, path = run(only=["core"], rows=5_000, rounds=1, json_path=out, log=lambda s: None)
    assert path == out
    doc = json.loads(out.read_text())
    assert doc["meta"]["threads"]["pyarrow_cpu_count"] == 1
    assert doc["meta"]["threads"]["pyarrow_io_threads"] == 1
    assert doc["meta"]["rows"] == 5_000 and doc["meta"]["rounds"] == 1
    assert doc["meta"]["versions"]["pyarrow"] == pa.__version__
    ops = {(r["group"], r["dataset"], r["op"]) for r in doc["results"]}
    assert ops == {("core", "trades", op) for op in
                   ("write", "read", "write-small-messages", "read-small-messages")}
    t = trades(5_000)
    small = [r for r in doc["results"] if r["op"].endswith("-small-messages")]
    for r in small:  # 500 batches of 10 rows: every row, checked against the peer's output
        assert r["check"] == "passed" and r["rows"] == 5_000 and r["peer"] == "pyarrow"
        names = {s["name"] for s in r["systems"]}
        assert names == ({"vortex_io", "vortex_io-compressed", "pyarrow"}
                         if r["op"].startswith("write") else {"vortex_io", "pyarrow"})
    for r in doc["results"]:
        if r in small:
            continue
        assert r["check"] == "passed"
        assert r["peer"] == "pyarrow" and r["rows"] == 5_000
        assert r["gbps_bytes"] == t.nbytes
        systems = {s["name"]: s for s in r["systems"]}
        assert set(systems) == {"vortex_io", "pyarrow"}
        for s in systems.values():
            assert len(s["times_s"]) == 1
            assert s["min_s"] <= s["median_s"] <= s["max_s"] and s["median_s"] > 0
            assert s["gbps"] == pytest.approx(t.nbytes / s["median_s"] / 1e9)
        assert systems["pyarrow"]["ratio_to_peer"] == 1.0
        assert systems["vortex_io"]["ratio_to_peer"] == pytest.approx(
            systems["vortex_io"]["median_s"] / systems["pyarrow"]["median_s"])
        if r["op"] == "write":
            # both are uncompressed encodings of the same columns: sizes of the same order
            vb, ab = systems["vortex_io"]["bytes"], systems["pyarrow"]["bytes"]
            assert ab > t.nbytes * 0.9 and 0.5 * ab < vb < 2 * ab
    # the printed table names both systems and the ratio column
    text = harness.format_case(results[1])
    assert "vortex_io" in text and "/ pyarrow" in text and "GB/s" in text


def test_check_rejects_a_wrong_output():
    t = pa.table({"x": [1, 2, 3], "s": ["a", "b", None]})
    wrong = pa.table({"x": [1, 2, 4], "s": ["a", "b", None]})
    case = harness.Case(group="g", dataset="d", op="o", expected=t, peer="good",
                        systems=[harness.System("good", lambda: t),
                                 harness.System("bad", lambda: wrong)])
    with pytest.raises(harness.CheckError, match=r"bad .*column 'x' row 2: 4 != 3"):
        harness.run_case(case, rounds=1)


def test_table_difference_compares_values_not_layouts():
    t = pa.table({"s": pa.array(["a", None, "ccc"]), "x": [1, 2, 3]})
    views = pa.table({"s": pa.array(["a", None, "ccc"], type=pa.string_view()), "x": [1, 2, 3]})
    chunked = pa.concat_tables([t.slice(0, 1), t.slice(1)])
    assert harness.table_difference(views, t) is None
    assert harness.table_difference(chunked, t) is None
    assert "row 1" in harness.table_difference(
        pa.table({"s": ["a", "b", "ccc"], "x": [1, 2, 3]}), t)
    assert "columns" in harness.table_difference(t.select(["x", "s"]), t)
    assert "type" in harness.table_difference(t.set_column(1, "x", pa.array([1.0, 2, 3])), t)


def test_trades_follows_the_protocol():
    n = 20_000
    t = trades(n)
    assert t.schema == pa.schema([("ts", pa.timestamp("ns")), ("symbol", pa.string()),
                                  ("price", pa.float64()), ("size", pa.int64()),
                                  ("side", pa.string())])
    assert t.num_rows == n and t.equals(trades(n)) and not t.equals(trades(n, seed=1))
    gaps = np.diff(t["ts"].cast(pa.int64()).to_numpy())
    assert gaps.min() >= 600_000 and gaps.max() <= 1_400_000
    assert abs(gaps.mean() - 1_000_000) < 10_000
    share = pc.mean(pc.equal(t["symbol"], "AAPL").cast(pa.float64())).as_py()
    assert 0.018 < share < 0.026
    assert set(pc.unique(t["symbol"]).to_pylist()) <= set(TICKERS)
    price = t["price"].to_numpy()
    assert price.min() >= 80 and price.max() <= 120
    np.testing.assert_array_equal(np.round(price, 2), price)
    size = t["size"].to_numpy()
    assert size.min() >= 1 and size.max() <= 10_000
    assert 0.45 < np.mean(size % 100 == 0) < 0.6
    assert set(pc.unique(t["side"]).to_pylist()) == {"B", "S"}


def test_issue19_groups_run_with_threads_faults_and_bars(tmp_path, restore_threads):
    """The decode group (with the malloc-tuned vortex-data worker when vortex-data is
    installed) and the adapters group on a tiny table: every system states its threads and
    page faults, and the bars summary is written."""
    pytest.importorskip("polars")
    pytest.importorskip("duckdb")
    out = tmp_path / "bench.json"
    lines: list[str] = []
    run(only=["decode", "adapters"], datasets=["trades"], rows=3_000, rounds=1, json_path=out,
        log=lines.append)
    doc = json.loads(out.read_text())
    by_op = {(r["group"], r["op"]): r for r in doc["results"]}
    dec = {s["name"]: s for s in by_op[("decode", "decode")]["systems"]}
    assert {"vortex_io", "vortex_io-1t", "parquet-zstd", "parquet-zstd-1t", "arrow-ipc-zstd",
            "arrow-ipc-zstd-1t"} <= set(dec)
    assert dec["vortex_io-1t"]["threads"].startswith("1")
    for s in dec.values():
        assert s["threads"] and len(s["minflt"]) == 1 and s["minflt_median"] >= 0
    try:
        import vortex.serde  # noqa: F401
    except ImportError:
        pass
    else:
        assert {"vortex-data", "vortex-data-1t", "vortex-data-malloc",
                "vortex-data-malloc-1t"} <= set(dec)
        assert doc["meta"]["malloc_worker"]["env"]["MALLOC_MMAP_THRESHOLD_"]
    ops = {op for g, op in by_op if g == "adapters"}
    assert {"polars-count-size-gt100", "polars-groupby-symbol", "polars-vwap-by-side",
            "polars-filter-symbol", "duckdb-groupby-symbol", "duckdb-like-m",
            "duckdb-ts-between", "duckdb-filter-symbol"} <= ops
    assert all(r["check"] == "passed" for r in doc["results"])
    # the reference rows are measured and checked beside the peers, and judge no bar
    names = {op: {s["name"] for s in by_op[("adapters", op)]["systems"]}
             for op in ("polars-count-size-gt100", "duckdb-like-m")}
    assert "polars-reader-floor" in names["polars-count-size-gt100"]
    assert {"vortex_ipc-range", "duckdb-ready-batches"} <= names["duckdb-like-m"]
    bars = {b["label"]: b for b in doc["bars"]}
    assert bars["Polars filter(size > 100).len(): vortex / Parquet zstd"]["fastest_peer"] \
        == "scan_parquet-zstd"
    assert bars["DuckDB LIKE 'M%': vortex / Parquet zstd"]["fastest_peer"] == "read_parquet-zstd"
    b = bars["decode trades: vortex_io / Parquet zstd"]
    assert b["measured"] and b["ratio"] == pytest.approx(
        dec["vortex_io"]["median_s"] / min(dec["parquet-zstd"]["median_s"],
                                           dec["parquet-zstd-1t"]["median_s"]))
    assert not bars["decode flights: vortex_io / Parquet zstd"]["measured"]
    assert any("issue 19 bars" in x for x in lines)


def test_float_tolerance_in_the_check():
    t = pa.table({"k": ["a", "b"], "x": [1.0, 2.0]})
    near = pa.table({"k": ["a", "b"], "x": [1.0 + 1e-12, 2.0]})
    assert harness.table_difference(near, t) is not None
    assert harness.table_difference(near, t, rtol=1e-9) is None
    far = pa.table({"k": ["a", "b"], "x": [1.1, 2.0]})
    assert "row 0" in harness.table_difference(far, t, rtol=1e-9)
