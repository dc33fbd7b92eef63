"""The demo behind `make demo`: generate a trades table, write it as a Vortex IPC stream,
read it back, query it, and compare sizes with Arrow IPC and Parquet. Nothing is downloaded,
and it needs only the package's runtime dependencies (numpy, flatbuffers, pyarrow).

Run from the repository root: `.venv-demo/bin/python -m bench.demo [--rows N] [--out DIR]`.
The files go to a temporary directory removed at the end (also when the demo fails), or to
``--out DIR``, which is kept.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

import vortex_io as vio
from vortex_io.datasets import trades
from vortex_io.expr import col


def _arrow_ipc_bytes(table: pa.Table, compression: str | None) -> bytes:
    sink = io.BytesIO()
    opts = ipc.IpcWriteOptions(compression=compression)
    with ipc.new_stream(sink, table.schema, options=opts) as w:
        for b in table.to_batches(max_chunksize=65_536):
            w.write_batch(b)
    return sink.getvalue()


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=65_536)
    return sink.getvalue()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", default=None,
                    help="directory for the files, kept (default: a temporary directory, removed "
                         "at the end)")
    args = ap.parse_args(argv)
    if args.out is not None:
        os.makedirs(args.out, exist_ok=True)
        _run(args.rows, args.out)
        print(f"\nfiles are in {args.out}")
        return
    with tempfile.TemporaryDirectory(prefix="vortex-io-demo-") as out:
        _run(args.rows, out)


def _run(rows: int, out: str) -> None:
    """The demo, its files written to the directory ``out``."""
    t0 = time.perf_counter()
    table = trades(rows)
    print(f"generated trades: {table.num_rows:,} rows, {table.nbytes / 1e6:.1f} MB in memory "
          f"({time.perf_counter() - t0:.2f} s)")
    print(f"schema: {', '.join(f'{f.name}: {f.type}' for f in table.schema)}\n")

    path = os.path.join(out, "trades.vxipc")
    t0 = time.perf_counter()
    size = vio.write_ipc(path, table, metadata={"dataset": "trades", "rows": str(table.num_rows)})
    t_write = time.perf_counter() - t0
    print(f"wrote {path}: {size / 1e6:.2f} MB in {t_write:.2f} s")

    t0 = time.perf_counter()
    with vio.StreamReader(path) as r:
        back = r.read_arrow()
        meta = dict(r.metadata)
    t_read = time.perf_counter() - t0
    assert back.equals(table), "round trip changed the data"
    print(f"read it back: {back.num_rows:,} rows in {t_read * 1e3:.0f} ms, identical to the input; "
          f"stream metadata {meta}\n")

    with vio.StreamReader(path) as r:
        first = next(iter(r))
        print("encodings of the first chunk:")
        print(first.array.tree())
    print()

    sizes = {
        "Vortex IPC (vortex_io)": size,
        "Vortex IPC, canonical": len(_write_bytes(table, compress=False)),
        "Arrow IPC": len(_arrow_ipc_bytes(table, None)),
        "Arrow IPC + lz4": len(_arrow_ipc_bytes(table, "lz4")),
        "Arrow IPC + zstd": len(_arrow_ipc_bytes(table, "zstd")),
        "Parquet + zstd": len(_parquet_bytes(table)),
    }
    base = sizes["Arrow IPC"]
    print(f"{'format':<26}{'MB':>10}{'vs Arrow IPC':>14}")
    for k, v in sizes.items():
        print(f"{k:<26}{v / 1e6:>10.2f}{v / base:>13.2f}x")
    print()

    t0 = time.perf_counter()
    s = vio.scan(path, columns=["ts", "price", "size"], filter=col("symbol") == "AAPL")
    aapl = s.to_arrow()
    t_scan = time.perf_counter() - t0
    st = s.stats
    print(f"scan symbol == 'AAPL': {aapl.num_rows:,} rows in {t_scan * 1e3:.0f} ms; "
          f"{st.chunks} chunks, {st.chunks_pruned} pruned, "
          f"{st.bytes_canonicalized / 1e6:.2f} MB decoded of {table.nbytes / 1e6:.1f} MB")
    t_first = table["ts"][0].value
    cutoff = pa.scalar(t_first + 10_000_000_000, pa.timestamp("ns"))
    s2 = vio.scan(path, filter=col("ts") < cutoff)
    n2 = s2.to_arrow().num_rows
    print(f"scan ts < first + 10 s: {n2:,} rows; {s2.stats.chunks_pruned} of {s2.stats.chunks} "
          "chunks pruned by their statistics (only their headers were read)")


def _write_bytes(table: pa.Table, *, compress: bool) -> bytes:
    sink = io.BytesIO()
    vio.write_ipc(sink, table, compress=compress)
    return sink.getvalue()


if __name__ == "__main__":
    main()
