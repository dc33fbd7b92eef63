"""The ``adapters`` benchmark group (issue 19): full-scan and selective queries through the
Polars and DuckDB adapters on a Vortex IPC file, against the same engine reading the same
data as Parquet zstd (and, for Polars' selective query, as an Arrow IPC zstd file), in the
same run.

    .venv/bin/python bench/run.py --only adapters   (or: .venv/bin/python bench/bench_adapters.py)

The table is the trades generator at twice ``--rows`` (2,000,000 rows by default), written
once to a temporary directory: Vortex IPC by ``write_ipc(compress=True, chunk_rows=65536)``,
Parquet by ``pq.write_table(compression='zstd')`` (pyarrow's default row groups), Arrow IPC
as a file with zstd buffers and 64Ki-row record batches. The adapters are added the public
way (``vortex_io.register_polars()`` -> ``pl.scan_vortex_ipc``, ``vortex_io.register_duckdb(con)``
-> ``vortex_ipc(path)``). Every engine runs with its default thread pool, vortex_io's scans
with the native core's default (every core), pyarrow's pools at their defaults.

Queries (every result is checked against one computed with pyarrow from the table before
anything is timed; group results are sorted by key, floats compared with rtol 1e-9):

* Polars: ``filter(size > 100).select(pl.len())``, ``group_by('symbol').agg(mean price,
  sum size)``, VWAP by side (``sum(price * size) / sum(size)``), ``filter(symbol == 'AAPL')``
  (all columns).
* DuckDB: ``GROUP BY symbol`` (avg price, sum size), ``WHERE symbol LIKE 'M%'`` (count, sum
  size), ``WHERE ts BETWEEN lo AND hi`` (the middle 10% of rows: count, avg price),
  ``SELECT * WHERE symbol = 'AAPL'``.

Bars (``bench/bars.py``): each at most 1.0x the same engine on Parquet zstd (goal 0.5x); the
selective query at most 1.0x ``pl.scan_ipc`` (zstd) and ``read_parquet`` (zstd).

Reference rows, not peers (no bar uses them), show what the engines' Python interfaces leave
a Python source: ``polars-reader-floor`` beside the Polars count (Polars' external-reader scan
of a reader yielding that query's frames, made before the timed call: the protocol's own
cost); beside the DuckDB ``LIKE 'M%'``, ``duckdb-ready-batches`` (the query over a
RecordBatchReader of the batches ``vortex_ipc`` hands DuckDB, made before the timed call:
DuckDB's own work, which evaluates the prefix on every row, since it offers a Python source
no filter for a prefix ``LIKE``) and ``vortex_ipc-range`` (the range ``read_parquet`` is
given for the prefix, written out, which DuckDB does push).
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

import vortex_io as vio
from bench.datasets import trades
from bench.harness import GROUPS, Case, Context, System, group, thread_setup

CHUNK_ROWS = 65_536
RTOL = 1e-9


def normalize(t: pa.Table, sort_by: list[str] | None = None) -> pa.Table:
    """The table in the types results are compared in (integers and scale-0 decimals as
    int64, floats as float64, strings as utf8), sorted by ``sort_by``."""
    cols = []
    for c in t.columns:
        ty = c.type
        if pa.types.is_integer(ty) or (pa.types.is_decimal(ty) and ty.scale == 0):
            c = c.cast(pa.int64())
        elif pa.types.is_floating(ty) or pa.types.is_decimal(ty):
            c = c.cast(pa.float64())
        elif pa.types.is_dictionary(ty):
            c = c.cast(ty.value_type)
        cols.append(c)
    out = pa.table(cols, names=t.column_names)
    if sort_by:
        out = out.sort_by([(k, "ascending") for k in sort_by])
    return out


def _write_files(t: pa.Table, d: Path) -> dict[str, Path]:

    paths = {"vortex": d / "trades.vxipc", "parquet": d / "trades.parquet",
             "ipc-zstd": d / "trades-zstd.arrow"}
    vio.write_ipc(paths["vortex"], t, compress=True, chunk_rows=CHUNK_ROWS)
    pq.write_table(t, paths["parquet"], compression="zstd")
    with ipc.new_file(paths["ipc-zstd"], t.schema,
                      options=ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(t, max_chunksize=CHUNK_ROWS)
    return paths


def _mb(p: Path) -> str:
    return f"{p.stat().st_size / 1e6:.1f} MB"


# -- expected results, computed with pyarrow / numpy from the table ------------------------------


def _group_symbol(t: pa.Table) -> pa.Table:
    g = t.group_by("symbol").aggregate([("price", "mean"), ("size", "sum")])
    return normalize(pa.table({"symbol": g["symbol"], "avg_price": g["price_mean"],
                               "sum_size": g["size_sum"]}), ["symbol"])


def _vwap(t: pa.Table) -> pa.Table:
    side = t["side"].to_numpy(zero_copy_only=False)
    price, size = t["price"].to_numpy(), t["size"].to_numpy()
    keys = sorted(set(side.tolist()))
    vw = [float((price[side == k] * size[side == k]).sum() / size[side == k].sum()) for k in keys]
    return pa.table({"side": keys, "vwap": pa.array(vw, pa.float64())})


def _count_sum(mask: Any, t: pa.Table, names: tuple[str, str] = ("n", "sum_size")) -> pa.Table:
    sel = t.filter(mask)
    return pa.table({names[0]: pa.array([sel.num_rows], pa.int64()),
                     names[1]: pa.array([pc.sum(sel["size"]).as_py()], pa.int64())})


# -- Polars -------------------------------------------------------------------------------------


def polars_cases(t: pa.Table, paths: dict[str, Path], vio_label: str, ds: str) -> Iterator[Case]:
    import polars as pl

    vio.register_polars()
    threads = f"polars {pl.thread_pool_size()}"
    notes = [f"polars {pl.__version__}, {pl.thread_pool_size()} threads; in-memory engine; "
             f"files: vortex {_mb(paths['vortex'])}, parquet zstd {_mb(paths['parquet'])}, "
             f"arrow ipc zstd {_mb(paths['ipc-zstd'])}"]

    def systems(query: Callable[[Any], Any], sort_by: list[str] | None, *, ipc_too: bool,
                floor: bool = False) -> list[System]:
        def as_table(df: Any) -> pa.Table:
            return normalize(df.to_arrow(), sort_by)

        def sys_(name: str, scan: Callable[[], Any], label: str, note: str) -> System:
            return System(name, lambda: query(scan()).collect(), as_table, threads=label,
                          setup=thread_setup(pyarrow=None), note=note)

        out = [
            sys_("scan_vortex_ipc", lambda: pl.scan_vortex_ipc(paths["vortex"]),
                 f"{threads} + vortex_io {vio_label}", "pl.scan_vortex_ipc (vortex_io adapter)"),
            sys_("scan_parquet-zstd", lambda: pl.scan_parquet(paths["parquet"]), threads,
                 "pl.scan_parquet"),
        ]
        if ipc_too:
            out.append(sys_("scan_ipc-zstd", lambda: pl.scan_ipc(paths["ipc-zstd"]), threads,
                            "pl.scan_ipc on the Arrow IPC zstd file"))
        if floor:
            out.append(sys_("polars-reader-floor", lambda: _ready_frames_scan(paths["vortex"]),
                            threads, "reference, not a peer: Polars' external-reader scan of "
                            "a reader that yields this query's frames made before the timed "
                            "call (what Polars' Python reader protocol costs with nothing "
                            "read or decoded)"))
        return out

    yield Case(
        group="adapters", dataset=ds, op="polars-count-size-gt100", peer="scan_parquet-zstd",
        description="scan(f).filter(pl.col('size') > 100).select(pl.len()).collect()",
        expected=pa.table({"len": pa.array([int(pc.sum(pc.greater(t["size"], 100)).as_py())],
                                           pa.int64())}),
        notes=notes,
        systems=systems(lambda lf: lf.filter(pl.col("size") > 100).select(pl.len()), None,
                        ipc_too=False, floor=True))
    yield Case(
        group="adapters", dataset=ds, op="polars-groupby-symbol", peer="scan_parquet-zstd",
        description="scan(f).group_by('symbol').agg(price.mean(), size.sum()).collect()",
        expected=_group_symbol(t), notes=notes, rtol=RTOL,
        systems=systems(lambda lf: lf.group_by("symbol").agg(
            pl.col("price").mean().alias("avg_price"), pl.col("size").sum().alias("sum_size")),
            ["symbol"], ipc_too=False))
    yield Case(
        group="adapters", dataset=ds, op="polars-vwap-by-side", peer="scan_parquet-zstd",
        description="scan(f).group_by('side').agg((price * size).sum() / size.sum()).collect()",
        expected=_vwap(t), notes=notes, rtol=RTOL,
        systems=systems(lambda lf: lf.group_by("side").agg(
            ((pl.col("price") * pl.col("size")).sum() / pl.col("size").sum()).alias("vwap")),
            ["side"], ipc_too=False))
    yield Case(
        group="adapters", dataset=ds, op="polars-filter-symbol", peer="scan_ipc-zstd",
        description="scan(f).filter(pl.col('symbol') == 'AAPL').collect() (2.2% of rows)",
        expected=normalize(t.filter(pc.equal(t["symbol"], "AAPL"))), notes=notes,
        systems=systems(lambda lf: lf.filter(pl.col("symbol") == "AAPL"), None, ipc_too=True))


def _ready_frames_scan(path: Path) -> Any:
    """``pl.scan_external_reader`` over a reader that yields, whatever it is asked, the frames
    of ``scan(path).filter(size > 100)`` (the ``size`` column Polars asks for that query),
    made once: Polars' reader protocol alone (its thread pool per query, its calls into the
    reader, a frame per message), the floor under any Python reader of this query."""
    import polars as pl

    global _READY
    if _READY is None or _READY[0] != path:
        from polars.io.external_reader import FileReader, FileReaderBuilder, ReaderCapabilities

        from vortex_io.expr import col

        frames = [pl.DataFrame(b) for b in vio.scan(path, columns=["size"],
                                                    filter=col("size") > 100)]
        schema = pl.scan_vortex_ipc(path).collect_schema()  # type: ignore[attr-defined]

        class Reader(FileReader):
            def schema(self) -> Any:
                return schema

            def n_rows_in_file(self, limit: int | None = None) -> int:
                return sum(f.height for f in frames)

            def collect_batches(self, **_: Any) -> Iterator[Any]:
                yield from frames

        class Builder(FileReaderBuilder):
            def reader_capabilities(self) -> Any:
                return ReaderCapabilities(pre_slice=True, supported_filter="full")

            def build_file_reader(self, source: Any, multi_scan_context: Any) -> Any:
                return Reader()

        _READY = (path, Builder(), schema)
    _, builder, schema = _READY
    return pl.scan_external_reader(builder, sources=[str(path)], schema=schema)


_READY: tuple[Path, Any, Any] | None = None


# -- DuckDB -------------------------------------------------------------------------------------


def _sql_query(con: Any, text: str) -> Callable[[], pa.Table]:
    """The timed call of a DuckDB query: its result as a pyarrow Table."""
    return lambda: con.sql(text).to_arrow_table()


def _ready_batches_query(con: Any, sql: str, path: Path) -> Callable[[], pa.Table]:
    """``sql`` over a RecordBatchReader of the batches ``vortex_ipc(path)`` gives DuckDB for
    it (``symbol`` as a dictionary, ``size``; strings as ``string_view``), made here."""
    batches = list(vio.scan(path, columns=["symbol", "size"], string_view=True,
                            read_dictionary=["symbol"]))
    schema = batches[0].schema
    text = sql.format(src="ready")

    def run() -> pa.Table:
        con.register("ready", pa.RecordBatchReader.from_batches(schema, batches))
        try:
            return con.sql(text).to_arrow_table()
        finally:
            con.unregister("ready")

    return run


def duckdb_cases(t: pa.Table, paths: dict[str, Path], vio_label: str, ds: str) -> Iterator[Case]:
    import duckdb

    con = duckdb.connect()
    vio.register_duckdb(con)
    nthreads = con.sql("SELECT current_setting('threads')").fetchall()[0][0]
    threads = f"duckdb {nthreads}"
    notes = [f"duckdb {duckdb.__version__}, threads={nthreads} (default settings); files: "
             f"vortex {_mb(paths['vortex'])}, parquet zstd {_mb(paths['parquet'])}"]
    ts = t["ts"]
    n = len(ts)
    lo_i, hi_i = int(n * 0.45), min(n - 1, int(n * 0.55))
    lo_v, hi_v = ts[lo_i].value, ts[hi_i].value  # nanoseconds

    def ns_literal(v: int) -> str:
        s = np.datetime_as_string(np.datetime64(v, "ns"), unit="ns").replace("T", " ")
        return f"'{s}'::TIMESTAMP_NS"

    between = pc.and_(pc.greater_equal(ts, pa.scalar(lo_v, ts.type)),
                      pc.less_equal(ts, pa.scalar(hi_v, ts.type)))
    sel = t.filter(between)
    m_mask = pc.starts_with(t["symbol"], "M")

    def systems(sql: str, sort_by: list[str] | None) -> list[System]:
        def q(source: str) -> Callable[[], pa.Table]:
            return _sql_query(con, sql.format(src=source))

        def as_table(out: pa.Table) -> pa.Table:
            return normalize(out, sort_by)

        return [
            System("vortex_ipc", q(f"vortex_ipc('{paths['vortex']}')"), as_table,
                   threads=f"{threads} + vortex_io {vio_label}", setup=thread_setup(pyarrow=None),
                   note="vortex_ipc(path) (vortex_io adapter)"),
            System("read_parquet-zstd", q(f"read_parquet('{paths['parquet']}')"), as_table,
                   threads=threads, setup=thread_setup(pyarrow=None), note="read_parquet(path)"),
        ]

    queries = [
        ("duckdb-groupby-symbol", "SELECT symbol, avg(price) AS avg_price, sum(size) AS sum_size "
         "FROM {src} GROUP BY symbol", ["symbol"], _group_symbol(t), RTOL),
        ("duckdb-like-m", "SELECT count(*) AS n, sum(size) AS sum_size FROM {src} "
         "WHERE symbol LIKE 'M%'", None, _count_sum(m_mask, t), None),
        ("duckdb-ts-between", "SELECT count(*) AS n, avg(price) AS avg_price FROM {src} "
         f"WHERE ts BETWEEN {ns_literal(lo_v)} AND {ns_literal(hi_v)}", None,
         pa.table({"n": pa.array([sel.num_rows], pa.int64()),
                   "avg_price": pa.array([pc.mean(sel["price"]).as_py()], pa.float64())}), RTOL),
        ("duckdb-filter-symbol", "SELECT * FROM {src} WHERE symbol = 'AAPL'", None,
         normalize(t.filter(pc.equal(t["symbol"], "AAPL"))), None),
    ]
    for op, sql, sort_by, expected, rtol in queries:
        extra = []
        if op == "duckdb-like-m":
            # what read_parquet is given for the LIKE, written out: DuckDB offers a Python
            # source no filter for a prefix LIKE (no node for it), but pushes this one
            ranged = sql.replace("symbol LIKE 'M%'", "symbol >= 'M' AND symbol < 'N'")
            extra.append(System(
                "vortex_ipc-range", _sql_query(con, ranged.format(
                    src=f"vortex_ipc('{paths['vortex']}')")),
                normalize, threads=f"{threads} + vortex_io {vio_label}",
                setup=thread_setup(pyarrow=None),
                note="reference, not a peer: the LIKE written as the range read_parquet is "
                     "given (symbol >= 'M' AND symbol < 'N'), pushed into the scan"))
            extra.append(System(
                "duckdb-ready-batches", _ready_batches_query(con, sql, paths["vortex"]), normalize,
                threads=threads, setup=thread_setup(pyarrow=None),
                note="reference, not a peer: the LIKE over a RecordBatchReader of the batches "
                     "vortex_ipc hands DuckDB (symbol as a dictionary, size), made before the "
                     "timed call: what DuckDB's own evaluation costs with nothing read or "
                     "decoded"))
        yield Case(group="adapters", dataset=ds, op=op, peer="read_parquet-zstd",
                   description=sql.format(src="<source>"), expected=expected, notes=notes,
                   rtol=rtol, systems=[*systems(sql, sort_by), *extra])


# -- fixed cost ---------------------------------------------------------------------------------

#: queries per timed call of the fixed-cost cases (one query is too short to time alone)
FIXED_REPEAT = 50


def fixed_cost_cases(tmp: Path) -> Iterator[Case]:
    """Issue 14's fixed cost: a whole query on a 2-row file through each adapter against the
    same engine reading the same rows from Parquet (``FIXED_REPEAT`` queries per call)."""
    t = pa.table({"x": pa.array([1, 2], pa.int64()), "s": pa.array(["a", "b"])})
    d = tmp / "tiny"
    d.mkdir()
    vx, pq_path = d / "tiny.vxipc", d / "tiny.parquet"
    vio.write_ipc(vx, t)
    pq.write_table(t, pq_path)
    note = (f"a 2-row file ({vx.stat().st_size} B Vortex IPC, {pq_path.stat().st_size} B "
            f"Parquet); each timed call runs the query {FIXED_REPEAT} times")

    def repeat(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            for _ in range(FIXED_REPEAT - 1):
                fn()
            return fn()
        return run

    try:
        import polars as pl
    except ImportError:
        pass
    else:
        vio.register_polars()
        yield Case(
            group="adapters", dataset="tiny-2rows", op="polars-fixed-cost",
            peer="scan_parquet", description="scan(f).collect() on a 2-row file",
            expected=t, notes=[note],
            systems=[System("scan_vortex_ipc", repeat(lambda: pl.scan_vortex_ipc(vx).collect()),
                            lambda df: df.to_arrow().cast(t.schema)),
                     System("scan_parquet", repeat(lambda: pl.scan_parquet(pq_path).collect()),
                            lambda df: df.to_arrow().cast(t.schema))])
    try:
        import duckdb
    except ImportError:
        pass
    else:
        con = duckdb.connect()
        vio.register_duckdb(con)

        def q(sql: str) -> Callable[[], Any]:
            return repeat(lambda: con.sql(sql).to_arrow_table())

        yield Case(
            group="adapters", dataset="tiny-2rows", op="duckdb-fixed-cost",
            peer="read_parquet", description="SELECT * FROM <source> on a 2-row file",
            expected=t, notes=[note],
            systems=[System("vortex_ipc", q(f"SELECT * FROM vortex_ipc('{vx}')"),
                            lambda out: out.cast(t.schema)),
                     System("read_parquet", q(f"SELECT * FROM read_parquet('{pq_path}')"),
                            lambda out: out.cast(t.schema))])


def adapters_group(ctx: Context) -> Iterator[Case]:
    """Polars and DuckDB through vortex_io's adapters vs the same engine on Parquet zstd."""
    from bench.bench_decode import vio_threads_label

    rows = 2 * ctx.rows
    t = trades(rows)
    ds = f"trades-{rows // 1000}k" if rows < 1_000_000 else f"trades-{rows / 1e6:g}M"
    tmp = Path(tempfile.mkdtemp(prefix="vortex-bench-adapters-"))
    atexit.register(shutil.rmtree, tmp, True)
    paths = _write_files(t, tmp)
    label = vio_threads_label()
    try:
        import polars  # noqa: F401
    except ImportError:
        ctx.log("[bench] polars is not installed: skipping the Polars adapter cases")
    else:
        yield from polars_cases(t, paths, label, ds)
    try:
        import duckdb  # noqa: F401
    except ImportError:
        ctx.log("[bench] duckdb is not installed: skipping the DuckDB adapter cases")
    else:
        yield from duckdb_cases(t, paths, label, ds)
    yield from fixed_cost_cases(tmp)


# registered once, whether imported by bench/run.py or run as a script (which imports both)
if "adapters" not in GROUPS:
    group("adapters", datasets=("trades",),
          description="issue 19: Polars and DuckDB adapters on 2x--rows trades (64Ki-row "
                      "messages) vs the same engine on Parquet zstd / Arrow IPC zstd")(
        adapters_group)


if __name__ == "__main__":
    from bench.run import main

    sys.exit(main(["--only", "adapters", *sys.argv[1:]]))
