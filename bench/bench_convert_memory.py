"""Peak memory of converting TPC-H lineitem (SF1 by default: 6,001,215 rows) from Parquet to
Vortex IPC with the CLI (issue 7: under 1.5 GB), against reading the whole table first.

    .venv/bin/python bench/bench_convert_memory.py [--scale 1] [--chunk-rows 65536]
    (or: make bench-memory)

Each conversion runs in a fresh process; its peak resident set size is read from
``getrusage(RUSAGE_CHILDREN)`` by a small wrapper process, so nothing else is counted. The
Parquet file comes from ``tpchgen-cli`` (cached under bench/.cache/).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.datasets import CACHE_DIR, DatasetUnavailable, _tpchgen_exe, ensure_package

LIMIT_MB = 1500

_WRAPPER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
rc = subprocess.run(sys.argv[1:]).returncode
secs = time.perf_counter() - t0
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": rc, "seconds": secs, "peak_mb": peak_kb / 1024}))
"""

_WHOLE_TABLE = """
import sys, pyarrow.parquet as pq, vortex_io as vio
vio.write_ipc(sys.argv[2], pq.read_table(sys.argv[1]), chunk_rows=int(sys.argv[3]))
"""


def lineitem_parquet(scale: float) -> Path:
    """The tpchgen-cli Parquet file for ``scale`` (generated once, then cached)."""
    path = CACHE_DIR / f"lineitem-sf{scale:g}" / "lineitem.parquet"
    if path.exists():
        return path
    exe = _tpchgen_exe()
    if exe is None and ensure_package("tpchgen_cli", "tpchgen-cli"):
        exe = _tpchgen_exe()
    if exe is None:
        raise DatasetUnavailable("lineitem needs the tpchgen-cli package (pip install tpchgen-cli)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / "tmp"
    subprocess.run([exe, "parquet", "-s", f"{scale:g}", "-T", "lineitem", "--output-dir", str(tmp)],
                   check=True, capture_output=True)
    os.replace(tmp / "lineitem.parquet", path)
    tmp.rmdir()
    return path


def measure(cmd: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], check=True,
                         capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise RuntimeError(f"{cmd} failed with exit code {res['rc']}")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--chunk-rows", type=int, default=65_536)
    ap.add_argument("--skip-whole-table", action="store_true",
                    help="do not measure the read-everything-first baseline")
    args = ap.parse_args(argv)
    try:
        src = lineitem_parquet(args.scale)
    except DatasetUnavailable as e:
        print(f"[bench] skipped: {e}")
        return 0
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(src).metadata
    print(f"lineitem SF{args.scale:g}: {meta.num_rows:,} rows, {meta.num_row_groups} row groups, "
          f"{src.stat().st_size / 1e6:.0f} MB Parquet")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lineitem.vxipc"
        t0 = time.perf_counter()
        results["cli convert (streaming)"] = measure(
            [sys.executable, "-m", "vortex_io.cli", "convert", str(src), str(out), "-q",
             "--chunk-rows", str(args.chunk_rows)])
        size = out.stat().st_size
        print(f"  wrote {size / 1e6:.1f} MB of Vortex IPC in {time.perf_counter() - t0:.1f} s")
        if not args.skip_whole_table:
            results["read whole table, then write_ipc"] = measure(
                [sys.executable, "-c", _WHOLE_TABLE, str(src), str(out), str(args.chunk_rows)])
    print(f"\n  {'conversion':<36}{'peak RSS':>12}{'time':>10}")
    for name, r in results.items():
        print(f"  {name:<36}{r['peak_mb']:>9.0f} MB{r['seconds']:>9.1f}s")
    peak = results["cli convert (streaming)"]["peak_mb"]
    verdict = "within" if peak < LIMIT_MB else "OVER"
    print(f"\n  streaming conversion peak {peak:.0f} MB: {verdict} the {LIMIT_MB} MB budget of issue 7")
    return 0 if peak < LIMIT_MB else 1


if __name__ == "__main__":
    sys.exit(main())
