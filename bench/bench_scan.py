"""The ``scan`` benchmark group (issue 4): filtered scans of a compressed Vortex IPC stream
in memory, ``vortex_io.scan`` against vortex-data's best path on the same bytes, in the
same run.

    .venv/bin/python bench/run.py --only scan      (or: .venv/bin/python bench/bench_scan.py)

The stream is written once per dataset by ``vortex_io.write_ipc(..., compress=True)``,
64Ki-row messages. Systems:

* ``vortex_io.scan``: ``scan(bytes, filter=...).to_arrow()`` (filter kernels on the encoded
  columns, then ``take`` of the selected rows only), ``threads=None``: the native core on
  every core; ``vortex_io.scan-1t``: ``threads=1`` (and pyarrow pinned to one);
  ``vortex_io.scan-sv`` the default with ``string_view=True`` (strings as ``string_view``,
  the types vortex-data returns).
* ``vortex-data``: every message decoded lazily with ``vortex.serde.decode_ipc_array_buffers``
  then ``array.filter(array.apply(expr)).to_arrow_table()`` (the acceptance peer of issues 4
  and 19: at most 1.0x, goal 0.5x), with its default worker threads; ``vortex-data-1t``
  pinned to one; ``vortex-data-malloc`` the same in the malloc-tuned worker process
  (``bench/vx_worker.py``).
* ``decode+pyarrow``: ``StreamReader(bytes).read_arrow()`` then ``Table.filter`` (the cost of
  not pushing the filter down).

The case notes carry the scan's ``ScanStats`` (chunks pruned, bytes canonicalized against
the table's decoded size).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.compute as pc

import vortex_io as vio
from bench.harness import GROUPS, Case, Context, System, group, split_stream, thread_setup
from vortex_io.expr import col

CHUNK_ROWS = 65_536


def _vx_filter(data: bytes, make_expr: Any) -> Any:
    """vortex-data's path: decode each message lazily, filter by the expression, to Arrow."""
    import vortex.serde as serde

    dmsg, amsgs = split_stream(data)
    expr = make_expr()

    def run() -> pa.Table:
        out = []
        for m in amsgs:
            a = serde.decode_ipc_array_buffers([m], [dmsg])
            out.append(a.filter(a.apply(expr)).to_arrow_table())
        return pa.concat_tables(out)

    return run


def _have_vortex_data() -> bool:
    try:
        import vortex.expr
        import vortex.serde  # noqa: F401
    except ImportError:
        return False
    return True


def _stats_note(data: bytes, e: Any, table: pa.Table) -> str:
    s = vio.scan(data, filter=e)
    s.to_arrow()
    st = s.stats
    return (f"vortex_io ScanStats: chunks={st.chunks}, pruned={st.chunks_pruned}, "
            f"rows {st.rows_returned}/{st.rows_scanned}, bytes_canonicalized="
            f"{st.bytes_canonicalized / 1e6:.2f} MB = "
            f"{100 * st.bytes_canonicalized / table.nbytes:.1f}% of the table's "
            f"{table.nbytes / 1e6:.1f} MB")


def scan_group(ctx: Context) -> Iterator[Case]:
    """``symbol == 'AAPL'`` (2.2% of rows), ``symbol IN (3 tickers)`` (6.2%), ``price < 90``
    (a range on ALP floats) and ``ts < t0`` with t0 inside the first chunk (pruning)."""
    vx_ok = _have_vortex_data()
    if not vx_ok:
        ctx.log("[bench] vortex-data is not installed: the scan group runs without its peer")
    for ds in ctx.datasets:
        t = ctx.load(ds)
        buf = io.BytesIO()
        vio.write_ipc(buf, t, compress=True, chunk_rows=CHUNK_ROWS)
        data = buf.getvalue()
        if ds != "trades":
            continue
        t0 = t["ts"][min(1000, t.num_rows - 1)].as_py() if t.num_rows else None
        three = ["AAPL", "MSFT", "NVDA"]
        cases = [
            ("filter-symbol", col("symbol") == "AAPL", pc.field("symbol") == "AAPL",
             ("eq", "symbol", "AAPL")),
            ("filter-symbol-in3", col("symbol").is_in(three), pc.field("symbol").isin(three),
             ("in", "symbol", three)),
            ("filter-price-lt90", col("price") < 90.0, pc.field("price") < 90.0,
             ("lt", "price", 90.0)),
        ]
        if t0 is not None:
            cases.append(("filter-ts-first-chunk", col("ts") < t0, pc.field("ts") < t0, None))
        from bench.bench_decode import vio_threads_label, vx_systems

        vio_label = vio_threads_label()
        for op, e, pe, vx_spec in cases:
            expected = t.filter(pe)
            systems = [
                System("vortex_io.scan", lambda e=e, d=data: vio.scan(d, filter=e).to_arrow(),
                       threads=vio_label + "; pyarrow defaults", setup=thread_setup(pyarrow=None),
                       note="scan(bytes, filter=...).to_arrow()"),
                System("vortex_io.scan-1t",
                       lambda e=e, d=data: vio.scan(d, filter=e, threads=1).to_arrow(),
                       threads="1; pyarrow cpu 1, io 1", setup=thread_setup(pyarrow=1),
                       note="scan(bytes, filter=..., threads=1).to_arrow()"),
                System("vortex_io.scan-sv",
                       lambda e=e, d=data: vio.scan(d, filter=e, string_view=True).to_arrow(),
                       threads=vio_label + "; pyarrow defaults", setup=thread_setup(pyarrow=None),
                       note="scan(..., string_view=True): the Arrow types vortex-data returns"),
                System("decode+pyarrow",
                       lambda pe=pe, d=data: vio.StreamReader(d).read_arrow().filter(pe),
                       threads=vio_label + "; pyarrow defaults", setup=thread_setup(pyarrow=None),
                       note="StreamReader(bytes).read_arrow().filter(expr)"),
            ]
            peer = None
            if vx_ok and vx_spec is not None:
                from bench.vx_worker import _vx_expr

                try:
                    run = _vx_filter(data, lambda spec=vx_spec: _vx_expr(spec))
                    run()
                except Exception as exc:  # an expression vortex-data cannot build or apply
                    ctx.log(f"[bench] scan/{op}: vortex-data path unavailable: {exc}")
                else:
                    dm, ams = split_stream(data)
                    for s in vx_systems(
                            in_process=run,
                            worker_job=lambda w, dm=dm, ams=ams, spec=vx_spec: w.load_filter(
                                dm, ams, spec)):
                        if s.name.endswith("-malloc-1t"):  # one malloc-tuned system is enough here
                            continue
                        s.note += ("; decode_ipc_array_buffers per message, "
                                   "filter(apply(expr)).to_arrow_table()")
                        systems.append(s)
                    peer = "vortex-data"
            yield Case(
                group="scan", dataset=ds, op=op, peer=peer,
                description=f"filter {e!r} over {len(data) / 1e6:.1f} MB of compressed stream "
                            "bytes in memory -> pyarrow Table",
                expected=expected, notes=[_stats_note(data, e, t)], systems=systems)


# registered once, whether imported by bench/run.py or run as a script (which imports both)
if "scan" not in GROUPS:
    group("scan", datasets=("trades",),
          description="issue 4: vortex_io.scan with a filter vs vortex-data's filter path")(
        scan_group)


if __name__ == "__main__":
    from bench.run import main

    sys.exit(main(["--only", "scan", *sys.argv[1:]]))
