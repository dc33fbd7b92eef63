"""Where the time of our read, scan and adapter paths goes: run one path in a loop (for a
sampling profiler) and summarize py-spy's raw (collapsed) output.

    # the loop alone (prints ms per call)
    .venv/bin/python bench/profile_paths.py run decode --dataset trades --seconds 10
    # the loop under py-spy (pip install py-spy; root or ptrace rights), native frames
    # included; py-spy attaches once the inputs are built, so only the loop is sampled
    .venv/bin/python bench/profile_paths.py profile decode --dataset trades --seconds 20 \\
        -o /tmp/decode.txt
    .venv/bin/python bench/profile_paths.py summarize /tmp/decode.txt

Native frames have names only in an unstripped build of the extension (same flags, symbols
kept): ``.venv/bin/python native/dev_build.py -DVX_NOSTRIP=ON`` (needs ``pip install
nanobind`` in the venv; ``make .venv/.installed-stamp`` puts the stripped build back when
the native sources change).

Paths: ``decode`` (``StreamReader(bytes).read_arrow()``), ``scan-aapl`` / ``scan-price``
(``scan(bytes, filter=...).to_arrow()``), ``polars-count`` / ``polars-groupby``
(``pl.scan_vortex_ipc``), ``duckdb-groupby`` / ``duckdb-between`` (``vortex_ipc``), on the
same streams and files as the bench (64Ki-row messages; adapters on 2x ``--rows``).
``--threads`` sets ``read_arrow``/``scan``'s threads (default: the library's).

``summarize`` buckets every sample by the first frame (from the leaf up) that matches a
category (native kernels, the Python decoders, pyarrow, the engines, idle waits...; a libc
leaf such as memcpy counts for the frame that called it) and prints the shares, then the
top self and inclusive frames.
"""

from __future__ import annotations

import argparse
import collections
import io
import re
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PATHS = ("decode", "scan-aapl", "scan-price", "polars-count", "polars-groupby",
         "duckdb-groupby", "duckdb-between")


def _make(path: str, dataset: str, rows: int, threads: int | None):
    import vortex_io as vio
    from bench.datasets import load, trades
    from vortex_io.expr import col

    if path in ("decode", "scan-aapl", "scan-price"):
        t = load(dataset, rows)
        buf = io.BytesIO()
        vio.write_ipc(buf, t, compress=True, chunk_rows=65_536)
        data = buf.getvalue()
        if path == "decode":
            return lambda: vio.StreamReader(data).read_arrow(threads=threads)
        e = col("symbol") == "AAPL" if path == "scan-aapl" else col("price") < 90.0
        return lambda: vio.scan(data, filter=e, threads=threads).to_arrow()
    t = trades(2 * rows)
    d = Path(tempfile.mkdtemp(prefix="vortex-profile-"))
    f = d / "trades.vxipc"
    vio.write_ipc(f, t, compress=True, chunk_rows=65_536)
    if path.startswith("polars"):
        import polars as pl

        vio.register_polars()
        if path == "polars-count":
            return lambda: pl.scan_vortex_ipc(f).filter(pl.col("size") > 100).select(
                pl.len()).collect()
        return lambda: pl.scan_vortex_ipc(f).group_by("symbol").agg(
            pl.col("price").mean(), pl.col("size").sum()).collect()
    import duckdb

    con = duckdb.connect()
    vio.register_duckdb(con)
    if path == "duckdb-groupby":
        sql = f"SELECT symbol, avg(price), sum(size) FROM vortex_ipc('{f}') GROUP BY symbol"
    else:
        ts = t["ts"]
        lo, hi = ts[int(len(ts) * 0.45)].value, ts[int(len(ts) * 0.55)].value
        sql = (f"SELECT count(*), avg(price) FROM vortex_ipc('{f}') WHERE ts BETWEEN "
               f"make_timestamp_ns({lo}) AND make_timestamp_ns({hi})")
    return lambda: con.sql(sql).to_arrow_table()


def run(path: str, dataset: str, rows: int, seconds: float, threads: int | None,
        ready: Path | None = None) -> None:
    """Build the inputs, call once, then call in a loop for ``seconds`` with the garbage
    collector paused (as the bench times). ``ready``: a file written when the loop starts."""
    import gc

    fn = _make(path, dataset, rows, threads)
    fn()
    gc.collect()
    gc.disable()
    if ready is not None:
        ready.write_text("ready")
        time.sleep(0.5)  # let the profiler attach
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    dt = time.perf_counter() - t0
    gc.enable()
    print(f"{path} {dataset}: {n} calls in {dt:.1f} s, {dt / max(n, 1) * 1e3:.1f} ms per call",
          file=sys.stderr)


def profile(path: str, dataset: str, rows: int, seconds: float, threads: int | None,
            out: Path, rate: int) -> None:
    """``run`` in a subprocess, py-spy attached once its loop starts (raw output)."""
    import shutil
    import subprocess

    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    ready = Path(tempfile.mkdtemp(prefix="vortex-profile-")) / "ready"
    cmd = [sys.executable, str(Path(__file__).resolve()), "run", path, "--dataset", dataset,
           "--rows", str(rows), "--seconds", str(seconds + 2), "--ready", str(ready)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    proc = subprocess.Popen(cmd)
    while not ready.exists():
        if proc.poll() is not None:
            raise SystemExit(f"the profiled loop exited with {proc.returncode}")
        time.sleep(0.1)
    subprocess.run([spy, "record", "--native", "--rate", str(rate), "--format", "raw",
                    "--duration", str(int(seconds)), "--pid", str(proc.pid), "-o", str(out)],
                   check=True)
    proc.wait()


_NATIVE = r"(?=.*_native\.cpython)"  # a frame of vortex_io's extension module

#: (category, regex on a frame) tried from the leaf frame up; the first match wins
CATEGORIES = [
    ("idle: waiting (futex, condvar, sleep, poll)",
     r"futex|pthread_cond|__GI___poll|epoll_wait|nanosleep|sched_yield|do_futex"),
    ("page faults / kernel memory", r"page_fault|clear_page|do_anonymous|munmap|mmap"),
    ("native: FastLanes bit-unpack", _NATIVE + r".*(unpack|bitpack|BitPack)"),
    ("native: dictionary / take / gather", _NATIVE + r".*([Dd]ict|gather|[Tt]ake)"),
    ("native: FoR / delta / ALP / other kernels",
     _NATIVE + r".*(fastlanes|for_|[Aa]lp|delta|patch|kernel)"),
    ("native: header walk / node building",
     _NATIVE + r".*([Hh]eader|[Ff]latbuf|[Nn]ode|[Pp]lan|walk|build)"),
    ("native: filter / predicate", _NATIVE + r".*([Pp]redicate|[Ff]ilter|[Cc]ompare|mask)"),
    ("native: other (Arrow export, buffers, pool, scan driver)", _NATIVE),
    ("Python decoders (vortex_io/encodings, compute)",
     r"vortex_io/(encodings|compute|array|_memory)"),
    ("vortex_io adapters (Python)", r"vortex_io/integrations"),
    ("vortex_io reader/scan glue (Python)", r"vortex_io/(ipc|scan|_native|arrow|stats|expr)"),
    ("numpy", r"numpy|multiarray|umath"),
    ("pyarrow", r"pyarrow|libarrow|arrow::"),
    ("polars engine", r"polars"),
    ("duckdb engine", r"duckdb"),
]


def _frame_name(frame: str) -> str:
    """A frame without its line number (``f (file.py:12)`` -> ``f (file.py)``), shortened."""
    return re.sub(r":\d+\)$", ")", frame)[:140]


def summarize(raw: Path, top: int = 25) -> None:
    cats: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    compiled = [(name, re.compile(rx)) for name, rx in CATEGORIES]
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        k = int(count)
        total += k
        frames = stack.split(";")
        leaves[frames[-1][:140]] += k
        for fr in {_frame_name(f) for f in frames}:
            inclusive[fr] += k
        for fr in reversed(frames):
            hit = next((name for name, rx in compiled if rx.search(fr)), None)
            if hit is not None:
                cats[hit] += k
                break
        else:  # e.g. a stack that unwound no further than libc / libpython
            cats["other (unattributed)"] += k
    print(f"{total} samples (every thread)")
    for name, k in cats.most_common():
        print(f"  {100 * k / total:5.1f}%  {name}")
    print("top self frames:")
    for fr, k in leaves.most_common(top):
        print(f"  {100 * k / total:5.1f}%  {fr}")
    print("top inclusive frames (share of samples with the frame on the stack):")
    for fr, k in inclusive.most_common(top):
        print(f"  {100 * k / total:5.1f}%  {fr}")


def _path_parser(sub, name: str, seconds: float) -> argparse.ArgumentParser:
    """The subcommand `name`, running one path on a dataset for `seconds` by default."""
    sp = sub.add_parser(name)
    sp.add_argument("path", choices=PATHS)
    sp.add_argument("--dataset", default="trades")
    sp.add_argument("--rows", type=int, default=1_000_000)
    sp.add_argument("--seconds", type=float, default=seconds)
    sp.add_argument("--threads", type=int, default=None)
    return sp


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = _path_parser(sub, "run", 10.0)
    r.add_argument("--ready", type=Path, default=None, help=argparse.SUPPRESS)
    pr = _path_parser(sub, "profile", 20.0)
    pr.add_argument("--rate", type=int, default=200)
    pr.add_argument("-o", "--out", type=Path, required=True)
    s = sub.add_parser("summarize")
    s.add_argument("raw", type=Path)
    s.add_argument("--top", type=int, default=25)
    a = p.parse_args(argv)
    if a.cmd == "run":
        run(a.path, a.dataset, a.rows, a.seconds, a.threads, a.ready)
    elif a.cmd == "profile":
        profile(a.path, a.dataset, a.rows, a.seconds, a.threads, a.out, a.rate)
    else:
        summarize(a.raw, a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
