"""The ``decode`` benchmark group (issue 19): compressed bytes in memory -> pyarrow Table on
trades, lineitem and flights, vortex_io's native core against vortex-data (as installed and
malloc-tuned), Parquet zstd and Arrow IPC zstd, each with its default threads and pinned
to one, in the same run, with page faults beside the times.

    .venv/bin/python bench/run.py --only decode      (or: .venv/bin/python bench/bench_decode.py)

Every format decodes its own encoding of the same table (64Ki-row messages / record
batches; Parquet with pyarrow's default row groups). Systems, each with the thread counts
it is labelled with (the "default" ones run with every library at its defaults, the
``-1t`` ones with everything pinned to one thread):

* ``vortex_io``: ``StreamReader(bytes).read_arrow()`` (``threads=None``: the native core
  decodes on every core), ``vortex_io-1t``: ``read_arrow(threads=1)``.
* ``vortex_io:vx-stream``: vortex_io reading vortex-data's stream (the same bytes as the
  peer; informational).
* ``vortex-data``: ``decode_ipc_array_buffers(...).to_arrow_array()`` per message in this
  process, as installed (default worker threads: ``available_parallelism() - 1``),
  ``vortex-data-1t``: workers pinned to one.
* ``vortex-data-malloc`` / ``-malloc-1t``: the same in a worker process started with
  ``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_MMAP_THRESHOLD_`` set (``bench/vx_worker.py``),
  where glibc keeps freed memory instead of returning it and faulting it in again.
* ``parquet-zstd`` / ``-1t``: ``pq.read_table``; ``arrow-ipc-zstd`` / ``-1t``:
  ``ipc.open_stream(bytes).read_all()`` (pyarrow's CPU and IO pools at their defaults, or
  both pinned to one).

The issue's bars (``bench/bars.py``): vortex_io at most 1.0x vortex-data (goal 0.5x) against
both vortex-data systems, and faster than Parquet zstd and Arrow IPC zstd.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import vortex_io as vio
from bench.formats import (
    arrow_decode,
    arrow_encode,
    have_vortex_data,
    parquet_decode,
    parquet_encode,
    vio_encode,
    vx_decode_split,
    vx_encode,
)
from bench.harness import (
    DEFAULT_THREADS,
    GROUPS,
    Case,
    Context,
    System,
    group,
    split_stream,
    thread_setup,
    vortex_default_threads,
)


def _nbytes(data: bytes) -> Any:
    """``System.size``: the input stream's length (the format's bytes)."""
    n = len(data)
    return lambda _out: n


def vio_threads_label() -> str:
    """How many threads vortex_io's native core uses by default."""
    from vortex_io import _native_glue as ng

    n = ng.decode_threads(None)
    return f"{n} (all cores)" if ng.enabled() else f"{n} (native core off: Python path)"


def pyarrow_label(n: int | None) -> str:
    if n is None:
        return (f"cpu {DEFAULT_THREADS['pyarrow_cpu_count']}, io "
                f"{DEFAULT_THREADS['pyarrow_io_threads']} (defaults)")
    return f"cpu {n}, io {n}"


def vx_label(n: int | None) -> str:
    if n is None:
        d = vortex_default_threads()
        return f"{d} worker{'s' if d != 1 else ''} (default: cores - 1)"
    return f"{n} worker{'s' if n != 1 else ''}"


def handed_back_table(data: bytes, names: list[str]) -> tuple[list[str], list[list[Any]]]:
    """Per column, in how many messages the native core hands it back to the Python
    decoders (encodings it does not know yet): one untimed read counting
    ``_native_glue.handed_back`` calls (the library's own counter hook)."""
    from vortex_io import _native_glue as ng

    _, msgs = split_stream(data)
    counts: Counter[int] = Counter()
    orig = ng.handed_back

    def spy(what: str) -> None:
        m = re.match(r"column (\d+) of message", what)
        if m is not None:
            counts[int(m.group(1))] += 1
        orig(what)

    ng.handed_back = spy
    try:
        vio.StreamReader(data).read_arrow(threads=1)
    finally:
        ng.handed_back = orig
    rows = [[c, "native" if not counts[j] else f"Python in {counts[j]} of {len(msgs)} messages"]
            for j, c in enumerate(names)]
    return ["column", "decoded by"], rows


def vx_systems(*, in_process: Any, worker_job: Any) -> list[System]:
    """vortex-data's four systems: in this process and in the malloc-tuned worker, each
    with its default workers and pinned to one. ``in_process()``: the callable timed here;
    ``worker_job(worker) -> key``: loads the same job into the worker."""
    from bench.vx_worker import WorkerError, shared_worker

    systems = [
        System("vortex-data", in_process, threads=vx_label(None),
               setup=thread_setup(pyarrow=None, vortex=None), note="in this process, as installed"),
        System("vortex-data-1t", in_process, threads=vx_label(1),
               setup=thread_setup(pyarrow=1, vortex=1), note="in this process, as installed"),
    ]
    try:
        w = shared_worker()
        key = worker_job(w)
    except (WorkerError, OSError) as e:  # reported, never silently dropped
        systems[0].note += f"; the malloc-tuned worker is unavailable: {e}"
        return systems
    systems += [w.system("vortex-data-malloc", key, threads=None, threads_label=vx_label(None)),
                w.system("vortex-data-malloc-1t", key, threads=1, threads_label=vx_label(1))]
    return systems


def decode_group(ctx: Context) -> Iterator[Case]:
    vx_ok = have_vortex_data()
    if not vx_ok:
        ctx.log("[bench] vortex-data is not installed: the decode group runs without its peer")
    for ds in ctx.datasets:
        t = ctx.load(ds)
        vdata = vio_encode(t, compress=True)
        adata = arrow_encode(t, "zstd")
        pdata = parquet_encode(t)
        vio_label = vio_threads_label()
        systems = [
            System("vortex_io", lambda d=vdata: vio.StreamReader(d).read_arrow(),
                   size=_nbytes(vdata), threads=vio_label + "; pyarrow defaults",
                   setup=thread_setup(pyarrow=None), note="StreamReader(bytes).read_arrow()"),
            System("vortex_io-1t", lambda d=vdata: vio.StreamReader(d).read_arrow(threads=1),
                   size=_nbytes(vdata), threads="1; pyarrow cpu 1, io 1",
                   setup=thread_setup(pyarrow=1), note="read_arrow(threads=1)"),
        ]
        notes = []
        if vx_ok:
            xdata = vx_encode(t)
            dm, ams = split_stream(xdata)
            systems.append(System(
                "vortex_io:vx-stream", lambda d=xdata: vio.StreamReader(d).read_arrow(),
                size=_nbytes(xdata), threads=vio_label + "; pyarrow defaults",
                setup=thread_setup(pyarrow=None),
                note="vortex_io reading vortex-data's stream (informational)"))
            for s in vx_systems(in_process=lambda dm=dm, ams=ams: vx_decode_split(dm, ams),
                                worker_job=lambda w, dm=dm, ams=ams: w.load_decode(dm, ams)):
                s.size = _nbytes(xdata)
                s.note += "; messages split before timing"
                systems.append(s)
        else:
            notes.append("vortex-data is not installed: ratios are vs arrow-ipc-zstd")
        for name, data, dec in (("parquet-zstd", pdata, parquet_decode),
                                ("arrow-ipc-zstd", adata, arrow_decode)):
            for n, suffix in ((None, ""), (1, "-1t")):
                systems.append(System(name + suffix, lambda d=data, dec=dec: dec(d),
                                      size=_nbytes(data), threads=pyarrow_label(n),
                                      setup=thread_setup(pyarrow=n)))
        notes.append(f"machine: {os.cpu_count()} cores; vortex_io's native core: "
                     f"{vio_label}")
        tables = {}
        from vortex_io import _native_glue as ng

        if ng.enabled():
            tables["columns of vortex_io's stream the native core hands back to Python"] = (
                handed_back_table(vdata, t.column_names))
            if vx_ok:
                tables["columns of vortex-data's stream the native core hands back to Python"] = (
                    handed_back_table(xdata, t.column_names))
        yield Case(
            group="decode", dataset=ds, op="decode", peer="vortex-data" if vx_ok else "arrow-ipc-zstd",
            description="compressed bytes in memory -> pyarrow Table (GB/s of output), "
                        "default threads and pinned",
            expected=t, gbps_bytes=t.nbytes, systems=systems, notes=notes, tables=tables)


# registered once, whether imported by bench/run.py or run as a script (which imports both)
if "decode" not in GROUPS:
    group("decode", datasets=("trades", "lineitem", "flights"),
          description="issue 19: decode bytes -> Table vs vortex-data (as installed, "
                      "malloc-tuned), Parquet zstd, Arrow IPC zstd; threads and page faults")(
        decode_group)


if __name__ == "__main__":
    from bench.run import main

    sys.exit(main(["--only", "decode", *sys.argv[1:]]))
