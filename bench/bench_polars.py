"""The ``polars`` benchmark group (issue 5): Polars queries on a Vortex IPC file through
``pl.scan_vortex_ipc`` against ``pl.scan_ipc`` on the same data as Arrow IPC files, zstd
and uncompressed, in the same run.

    .venv/bin/python bench/run.py --only polars      (or: .venv/bin/python bench/bench_polars.py)

Files are written once per dataset to a temporary directory (Vortex: ``write_ipc``,
compressed, 64Ki-row messages; Arrow: IPC file format, 64Ki-row record batches). Every
system runs the same lazy query and collects it with the default (in-memory) engine;
Polars uses its own thread pool (its size is in the case notes). The acceptance bar of the
issue: ``scan_vortex_ipc`` at most 1.0x ``scan_ipc`` on the zstd file (goal: below the
uncompressed file).
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

import vortex_io as vio
from bench.harness import GROUPS, Case, Context, System, group

CHUNK_ROWS = 65_536


def _write_files(t: pa.Table, d: Path) -> dict[str, Path]:
    paths = {"vortex": d / "data.vxi", "ipc": d / "data.arrow", "ipc-zstd": d / "data-zstd.arrow"}
    vio.write_ipc(paths["vortex"], t, compress=True, chunk_rows=CHUNK_ROWS)
    for name, comp in (("ipc", None), ("ipc-zstd", "zstd")):
        with ipc.new_file(paths[name], t.schema,
                          options=ipc.IpcWriteOptions(compression=comp)) as w:
            w.write_table(t, max_chunksize=CHUNK_ROWS)
    return paths


def _systems(paths: dict[str, Path], query: Callable) -> list[System]:
    import polars as pl

    from vortex_io.integrations.polars_plugin import scan_vortex_ipc

    def as_table(df: pl.DataFrame) -> pa.Table:
        return df.to_arrow()

    return [
        System("scan_vortex_ipc", lambda: query(scan_vortex_ipc(paths["vortex"])).collect(),
               as_table, note=f"{paths['vortex'].stat().st_size / 1e6:.1f} MB"),
        System("scan_ipc-zstd", lambda: query(pl.scan_ipc(paths["ipc-zstd"])).collect(),
               as_table, note=f"{paths['ipc-zstd'].stat().st_size / 1e6:.1f} MB"),
        System("scan_ipc", lambda: query(pl.scan_ipc(paths["ipc"])).collect(),
               as_table, note=f"uncompressed, {paths['ipc'].stat().st_size / 1e6:.1f} MB"),
    ]


def polars_group(ctx: Context) -> Iterator[Case]:
    """``filter(symbol == 'AAPL')`` and a 1% time-range filter on the sorted ``ts``."""
    try:
        import polars as pl
    except ImportError:
        ctx.log("[bench] polars is not installed: skipping the polars group")
        return
    tmp = Path(tempfile.mkdtemp(prefix="vortex-bench-polars-"))
    atexit.register(shutil.rmtree, tmp, True)
    for ds in ctx.datasets:
        t = ctx.load(ds)
        d = tmp / ds
        d.mkdir()
        paths = _write_files(t, d)
        notes = [f"polars {pl.__version__}, {pl.thread_pool_size()} threads; in-memory engine"]
        if ds == "trades":
            aapl = t.filter(pc.equal(t["symbol"], "AAPL"))
            yield Case(
                group="polars", dataset=ds, op="filter-symbol", peer="scan_ipc-zstd",
                description="scan(f).filter(pl.col('symbol') == 'AAPL').collect()",
                expected=aapl, notes=notes,
                systems=_systems(paths, lambda lf: lf.filter(pl.col("symbol") == "AAPL")))
            ts = t["ts"]
            us = pc.cast(ts, pa.timestamp("us"), safe=False)  # Python datetimes: microseconds
            lo, hi = us[len(ts) // 2].as_py(), us[len(ts) // 2 + len(ts) // 100].as_py()
            window = t.filter(pc.and_(pc.greater_equal(ts, pa.scalar(lo, ts.type)),
                                      pc.less(ts, pa.scalar(hi, ts.type))))
            yield Case(
                group="polars", dataset=ds, op="filter-ts-1pct", peer="scan_ipc-zstd",
                description="scan(f).filter((pl.col('ts') >= lo) & (pl.col('ts') < hi)) "
                            "(1% of rows, sorted column: chunk pruning)",
                expected=window, notes=notes,
                systems=_systems(paths, lambda lf, lo=lo, hi=hi: lf.filter(
                    (pl.col("ts") >= lo) & (pl.col("ts") < hi))))


# registered once, whether imported by bench/run.py or run as a script (which imports both)
if "polars" not in GROUPS:
    group("polars", datasets=("trades",),
          description="issue 5: pl.scan_vortex_ipc vs pl.scan_ipc (zstd, uncompressed)")(
        polars_group)


if __name__ == "__main__":
    from bench.run import main

    sys.exit(main(["--only", "polars", *sys.argv[1:]]))
