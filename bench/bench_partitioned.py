"""The ``partitioned`` benchmark group: a hive-partitioned directory (one directory per
symbol), written and read by vortex_io against Parquet through pyarrow, Polars and DuckDB.

    .venv/bin/python bench/run.py --only partitioned   (or: .venv/bin/python bench/bench_partitioned.py)

Cases (trades, partitioned by ``symbol``; every system's output is read back and checked
against the same rows, sorted, partition column as a string):

* ``write``: ``write_ipc(dir, table, partition_by=["symbol"])`` vs pyarrow's
  ``pq.write_to_dataset(partition_cols=...)`` and Polars' ``write_parquet(partition_by=...)``
  (Parquet zstd where the writer lets us say so). The note gives each directory's bytes.
* ``read``: the whole directory as one table: ``vio.read_table(dir)`` vs
  ``pq.read_table(dir)``, ``pl.read_parquet(dir, hive_partitioning=True)`` and DuckDB's
  ``read_parquet('dir/**/*.parquet', hive_partitioning=true)``.
* ``filter``: ``symbol = 'AAPL' AND size > 100`` (one partition of fifty, then a data
  column), each engine over its own format; the files the partition rules out are not read.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import vortex_io as vio
from bench.harness import Case, Context, System, group
from vortex_io.expr import col

PEER = "pyarrow-parquet"
KEY = "symbol"


def _dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def _canonical(t: Any, schema: pa.Schema) -> pa.Table:
    """A read-back table in ``schema``'s column order and types (the partition column comes
    back last, as a dictionary from pyarrow), rows sorted."""
    if not isinstance(t, pa.Table):
        t = t.to_arrow() if hasattr(t, "to_arrow") else pa.table(t)
    t = t.select(schema.names)
    cols = [c.cast(f.type) if c.type != f.type else c
            for c, f in zip(t.columns, schema)]
    t = pa.table(cols, schema=schema.remove_metadata())
    return t.sort_by([(n, "ascending") for n in schema.names])


def _rmtree(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)


def partitioned_cases(ctx: Context) -> Iterator[Case]:
    root = Path(tempfile.mkdtemp(prefix="vxbench-part-"))
    for ds in ctx.datasets:
        yield from _dataset_cases(ds, ctx.load(ds), root)


def _dataset_cases(ds: str, t: pa.Table, root: Path) -> Iterator[Case]:
    import duckdb
    import polars as pl

    t = t.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f
                          for f in t.schema]))
    schema = t.schema.remove_metadata()
    want = _canonical(t, schema)
    vx_dir, pq_dir, pl_dir = root / f"{ds}-vx", root / f"{ds}-pq", root / f"{ds}-pl"

    def vx_write(t: pa.Table = t, d: Path = vx_dir) -> Path:
        _rmtree(d)
        vio.write_ipc(d, t, partition_by=[KEY])
        return d

    def pq_write(t: pa.Table = t, d: Path = pq_dir) -> Path:
        _rmtree(d)
        pq.write_to_dataset(t, d, partition_cols=[KEY], compression="zstd")
        return d

    def pl_write(t: pa.Table = t, d: Path = pl_dir) -> Path:
        _rmtree(d)
        pl.from_arrow(t).write_parquet(d, partition_by=KEY, compression="zstd")
        return d

    vx_write()
    pq_write()
    pl_write()
    sizes = {n: _dir_bytes(d) for n, d in (("vortex_io", vx_dir), (PEER, pq_dir),
                                           ("polars-parquet", pl_dir))}
    yield Case(
        group="partitioned", dataset=ds, op="write", peer=PEER,
        description=f"Table -> a directory partitioned by {KEY} (GB/s of input)",
        expected=want, gbps_bytes=t.nbytes,
        systems=[
            System("vortex_io", vx_write, lambda d: _canonical(vio.read_table(d), schema),
                   note="write_ipc(dir, t, partition_by=[...])"),
            System(PEER, pq_write, lambda d: _canonical(pq.read_table(d), schema),
                   note="pq.write_to_dataset(partition_cols=..., zstd)"),
            System("polars-parquet", pl_write,
                   lambda d: _canonical(pl.scan_parquet(d, hive_partitioning=True).collect()
                                        .to_arrow(), schema),
                   note="DataFrame.write_parquet(partition_by=..., zstd)"),
        ],
        notes=["directory bytes: " + ", ".join(f"{n} {b / 1e6:.2f} MB"
                                               for n, b in sizes.items())],
    )

    con = duckdb.connect()

    def queries(flt_vx: Any, flt_pl: Any, sql_where: str) -> list[System]:
        return [
            System("vortex_io", lambda: vio.read_table(vx_dir, filter=flt_vx),
                   lambda r: _canonical(r, schema), note="vio.read_table(dir, filter=...)"),
            System(PEER, lambda: pq.read_table(
                pq_dir, filters=None if flt_vx is None else [(KEY, "=", "AAPL"), ("size", ">", 100)]),
                lambda r: _canonical(r, schema), note="pq.read_table(dir, filters=...)"),
            System("polars-parquet", lambda: (
                pl.scan_parquet(pl_dir, hive_partitioning=True) if flt_pl is None else
                pl.scan_parquet(pl_dir, hive_partitioning=True).filter(flt_pl)).collect(),
                lambda r: _canonical(r.to_arrow(), schema),
                note="pl.scan_parquet(dir, hive_partitioning=True)"),
            System("duckdb-parquet", lambda: con.sql(
                f"SELECT * FROM read_parquet('{pq_dir}/**/*.parquet', "
                f"hive_partitioning = true){sql_where}").arrow(),
                lambda r: _canonical(r, schema), note="read_parquet(..., hive_partitioning)"),
        ]

    yield Case(group="partitioned", dataset=ds, op="read", peer=PEER,
               description="the whole directory -> one Table (GB/s of output)",
               expected=want, gbps_bytes=t.nbytes,
               systems=queries(None, None, ""))
    hit = t.filter(pc.and_(pc.equal(t[KEY], "AAPL"), pc.greater(t["size"], 100)))
    yield Case(group="partitioned", dataset=ds, op="filter", peer=PEER,
               description=f"{KEY} = 'AAPL' AND size > 100 (one partition of the directory)",
               expected=_canonical(hit, schema),
               systems=queries((col(KEY) == "AAPL") & (col("size") > 100),
                               (pl.col(KEY) == "AAPL") & (pl.col("size") > 100),
                               f" WHERE {KEY} = 'AAPL' AND size > 100"))


group("partitioned", datasets=("trades",),
      description="a hive-partitioned directory written and read, vs Parquet in pyarrow, "
                  "Polars and DuckDB")(partitioned_cases)

if __name__ == "__main__":
    from bench.run import main

    sys.exit(main(["--only", "partitioned", *sys.argv[1:]]))
