#!/usr/bin/env python3
"""Run the native libFuzzer harnesses one after the other (``make fuzz-native``).

Each harness ``build/fuzz/fuzz/<name>`` runs for ``--seconds`` on one core
(``-workers=1 -jobs=1``) over ``fuzz/native-corpus/<name>`` (seeded by
``fuzz/native_corpus.py``; libFuzzer adds what it finds) and the minimized inputs of fixed
findings in ``native/fuzz/regressions/<name>``, with ``-timeout`` 30 s (a shared machine),
``-rss_limit_mb=2048`` and ``-max_len=65536``; ASan's leak check is on. A failing input is
saved as ``fuzz/native-findings/<name>-crash-*`` (``-leak-``, ``-timeout-``, ``-oom-``);
replay it with ``build/fuzz/fuzz/<name> FILE``. Per harness the executions, executions per
second and final coverage are printed and written to ``fuzz/native-report.json`` (``--report``); the exit
status is 1 when any harness failed.

Usage: ``python fuzz/run_native.py [--build DIR] [--seconds N] [--report FILE] [HARNESS ...]``; extra
libFuzzer flags go in ``FUZZ_NATIVE_FLAGS`` (e.g. ``-max_len=4096``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT = ["fuzz_message", "fuzz_take", "fuzz_fastlanes", "fuzz_bitmap", "fuzz_scalar", "fuzz_header"]


def _stats(log: str) -> dict:
    out: dict = {}
    for key in ("number_of_executed_units", "average_exec_per_sec", "new_units_added",
                "slowest_unit_time_sec", "peak_rss_mb"):
        m = re.findall(rf"stat::{key}:\s*(\d+)", log)
        if m:
            out[key] = int(m[-1])
    cov = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", log)
    if cov:
        out["cov"], out["ft"], out["corpus"] = (int(x) for x in cov[-1])
    return out


def run(name: str, build: pathlib.Path, seconds: int, extra: list[str]) -> dict:
    exe = build / "fuzz" / name
    corpus = ROOT / "fuzz" / "native-corpus" / name
    regressions = ROOT / "native" / "fuzz" / "regressions" / name  # fixed findings, kept
    findings = ROOT / "fuzz" / "native-findings"
    work = build / "runs" / name
    for d in (corpus, findings, work):
        d.mkdir(parents=True, exist_ok=True)
    for old in work.glob("fuzz-*.log"):
        old.unlink()
    dirs = [str(corpus)] + ([str(regressions)] if regressions.is_dir() else [])
    cmd = [str(exe), *dirs, "-workers=1", "-jobs=1", f"-max_total_time={seconds}",
           "-timeout=30", "-rss_limit_mb=2048", "-max_len=65536", "-print_final_stats=1",
           f"-artifact_prefix={findings}/{name}-", *extra]
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    print(f"== {name}: {seconds} s\n   {shlex.join(cmd)}", flush=True)
    t0 = time.time()
    rc = subprocess.run(cmd, cwd=work, env=env).returncode
    logs = sorted(work.glob("fuzz-*.log"))
    log = "".join(p.read_text(errors="replace") for p in logs)
    res = {"harness": name, "exit": rc, "wall_s": round(time.time() - t0, 1), **_stats(log)}
    if rc != 0:
        tail = log[-6000:]
        print(tail)
    print(f"   {json.dumps(res)}", flush=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build" / "fuzz"))
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--report", type=pathlib.Path, default=ROOT / "fuzz" / "native-report.json",
                    help="where the per-harness results go (default fuzz/native-report.json)")
    ap.add_argument("harnesses", nargs="*")
    a = ap.parse_args()
    extra = shlex.split(os.environ.get("FUZZ_NATIVE_FLAGS", ""))
    results = [run(h, pathlib.Path(a.build).resolve(), a.seconds, extra)
               for h in (a.harnesses or DEFAULT)]
    a.report.write_text(json.dumps(results, indent=1) + "\n")
    print("\nharness          execs        execs/s  cov    corpus  exit")
    for r in results:
        print(f"{r['harness']:<16} {r.get('number_of_executed_units', 0):>11,} "
              f"{r.get('average_exec_per_sec', 0):>8,}  {r.get('cov', 0):<6} "
              f"{r.get('corpus', 0):<7} {r['exit']}")
    return 1 if any(r["exit"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
