"""The ``duckdb`` benchmark group (issue 6): DuckDB queries on a Vortex IPC file through
``vortex_ipc(...)`` against ``read_parquet`` on a zstd Parquet file of the same data and
against the same data registered as an in-memory Arrow table, in the same run.

    .venv/bin/python bench/run.py --only duckdb      (or: .venv/bin/python bench/bench_duckdb.py)

Files are written once per dataset to a temporary directory (Vortex: ``write_ipc``,
compressed, 64Ki-row messages; Parquet: ``pq.write_table(compression='zstd')``, default row
groups). Every system runs the same SQL on one connection (DuckDB's default settings; its
thread count is in the case notes) and fetches the result as a pyarrow Table. The
acceptance bar of the issue: ``vortex_ipc`` at most 1.0x ``read_parquet`` on the zstd file
(goal: at most the registered Arrow table).
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.compute as pc

import vortex_io as vio
from bench.harness import GROUPS, Case, Context, System, group

CHUNK_ROWS = 65_536


def _systems(con, vx: Path, pq: Path, where: str) -> list[System]:
    def q(source: str):
        sql = f"SELECT * FROM {source} WHERE {where}"
        return lambda: con.sql(sql).to_arrow_table()

    return [
        System("vortex_ipc", q(f"vortex_ipc('{vx}')"),
               note=f"{vx.stat().st_size / 1e6:.1f} MB, filter + projection pushed"),
        System("read_parquet-zstd", q(f"read_parquet('{pq}')"),
               note=f"{pq.stat().st_size / 1e6:.1f} MB"),
        System("arrow-table", q("mem"), note="con.register('mem', table): decoded, in memory"),
    ]


def duckdb_group(ctx: Context) -> Iterator[Case]:
    """``symbol = 'AAPL'`` (2.2% of rows) and ``symbol IN ('AAPL', 'MSFT', 'NVDA')`` (6.2%)."""
    try:
        import duckdb
    except ImportError:
        ctx.log("[bench] duckdb is not installed: skipping the duckdb group")
        return
    import pyarrow.parquet as pq

    tmp = Path(tempfile.mkdtemp(prefix="vortex-bench-duckdb-"))
    atexit.register(shutil.rmtree, tmp, True)
    con = duckdb.connect()
    vio.register_duckdb(con)
    threads = con.sql("SELECT current_setting('threads')").fetchall()[0][0]
    for ds in ctx.datasets:
        t = ctx.load(ds)
        vx, pqf = tmp / f"{ds}.vxipc", tmp / f"{ds}.parquet"
        vio.write_ipc(vx, t, compress=True, chunk_rows=CHUNK_ROWS)
        pq.write_table(t, pqf, compression="zstd")
        con.register("mem", t)
        notes = [f"duckdb {duckdb.__version__}, threads={threads} (default settings)"]
        if ds != "trades":
            continue
        for op, where, mask in [
            ("filter-symbol", "symbol = 'AAPL'", pc.equal(t["symbol"], "AAPL")),
            ("filter-symbol-in3", "symbol IN ('AAPL', 'MSFT', 'NVDA')",
             pc.is_in(t["symbol"], pa.array(["AAPL", "MSFT", "NVDA"]))),
        ]:
            yield Case(
                group="duckdb", dataset=ds, op=op, peer="read_parquet-zstd",
                description=f"SELECT * FROM <source> WHERE {where} -> pyarrow Table",
                expected=t.filter(mask), notes=notes,
                systems=_systems(con, vx, pqf, where))


# registered once, whether imported by bench/run.py or run as a script (which imports both)
if "duckdb" not in GROUPS:
    group("duckdb", datasets=("trades",),
          description="issue 6: vortex_ipc() vs read_parquet (zstd) and an Arrow table")(
        duckdb_group)


if __name__ == "__main__":
    from bench.run import main

    sys.exit(main(["--only", "duckdb", *sys.argv[1:]]))
