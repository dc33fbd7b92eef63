"""The benchmark protocol (see bench/README.md and shared/reference/benchmarks.md).

A ``Case`` is one measurement (e.g. "read trades from bytes into a pyarrow Table") with the
``System`` s that compete on the same input. ``run_case``:

1. **Check**: runs every system once and verifies that its output, viewed as a pyarrow
   Table (``System.as_table``), has the same values as ``Case.expected``. A mismatch raises
   ``CheckError`` naming the system and the first difference: nothing is timed.
2. **Warm-up**: one more untimed round, every system once.
3. **Rounds**: ``rounds`` rounds, round-robin: every system once per round, the starting
   system rotating each round, so machine noise hits all alike. Each call is timed alone
   with ``time.perf_counter`` and the garbage collector paused (collected before the call).
4. **Report**: median and min-max per system, the ratio of each median to the named peer's
   median from the same run, output bytes and throughput (GB/s of ``Case.gbps_bytes``).

Thread counts are pinned by ``pin_threads`` (pyarrow CPU and IO pools, vortex-data workers).
Groups of cases register with ``@group(name)``; ``bench/run.py`` runs them.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

__all__ = [
    "GROUPS",
    "OUT_DIR",
    "Case",
    "CaseResult",
    "CheckError",
    "Context",
    "Group",
    "System",
    "SystemResult",
    "environment",
    "format_case",
    "group",
    "pin_threads",
    "run_case",
    "split_stream",
    "table_difference",
    "write_json",
]

OUT_DIR = Path(__file__).resolve().parent / "out"


class CheckError(AssertionError):
    """A system's output differs from the expected table (raised before any timing)."""


# -- what is measured ---------------------------------------------------------------------------


@dataclass
class System:
    """One competitor: ``run()`` does the measured work and returns its output.

    ``as_table(output)`` views the output as a pyarrow Table for the equality check (default:
    the output itself); ``size(output)`` is the output's size in bytes when that is a result
    (encoders: the stream length).
    """

    name: str
    run: Callable[[], Any]
    as_table: Callable[[Any], pa.Table] | None = None
    size: Callable[[Any], int] | None = None
    note: str = ""


@dataclass
class Case:
    """One measurement: systems on the same input, all checked against ``expected``."""

    group: str
    dataset: str
    op: str
    systems: list[System]
    expected: pa.Table
    peer: str | None = None
    #: bytes counted for the GB/s column (e.g. the decoded table's ``nbytes``); None: no column
    gbps_bytes: int | None = None
    description: str = ""
    notes: list[str] = field(default_factory=list)
    #: extra tables for the report: title -> (header, rows)
    tables: dict[str, tuple[list[str], list[list[Any]]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.group}/{self.dataset}/{self.op}"


@dataclass
class SystemResult:
    name: str
    times_s: list[float]
    median_s: float
    min_s: float
    max_s: float
    ratio_to_peer: float | None
    bytes: int | None
    gbps: float | None
    note: str = ""


@dataclass
class CaseResult:
    group: str
    dataset: str
    op: str
    name: str
    description: str
    peer: str | None
    rows: int
    rounds: int
    check: str
    gbps_bytes: int | None
    systems: list[SystemResult]
    notes: list[str]
    tables: dict[str, tuple[list[str], list[list[Any]]]]

    def system(self, name: str) -> SystemResult:
        for s in self.systems:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["systems"] = [dict(s.__dict__) for s in self.systems]
        d["tables"] = {k: {"header": h, "rows": r} for k, (h, r) in self.tables.items()}
        return d


# -- equality -----------------------------------------------------------------------------------


def _plain_type(t: pa.DataType) -> pa.DataType:
    """The type values are compared in: view and large layouts map to the plain ones."""
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_dictionary(t):
        return _plain_type(t.value_type)
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.list_(_plain_type(t.value_type))
    if pa.types.is_list(t):
        return pa.list_(_plain_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain_type(f.type)) for f in t])
    return t


def table_difference(got: pa.Table, want: pa.Table) -> str | None:
    """None if ``got`` holds the same values as ``want`` (same column names, row count and
    values; string/binary layouts, chunking, nullability flags and metadata may differ),
    else a description of the first difference."""
    if not isinstance(got, pa.Table):
        return f"output is a {type(got).__name__}, not a pyarrow Table"
    if got.column_names != want.column_names:
        return f"columns {got.column_names} != {want.column_names}"
    if got.num_rows != want.num_rows:
        return f"{got.num_rows} rows != {want.num_rows}"
    for name in want.column_names:
        g, w = got[name], want[name]
        tw = _plain_type(w.type)
        if _plain_type(g.type) != tw:
            return f"column {name!r}: type {g.type} != {w.type}"
        g = g.cast(tw) if g.type != tw else g
        w = w.cast(tw) if w.type != tw else w
        if not g.equals(w):
            gc_, wc = g.combine_chunks(), w.combine_chunks()
            import pyarrow.compute as pc

            ne = pc.invert(pc.fill_null(pc.equal(gc_, wc), False))
            both_null = pc.and_(gc_.is_null(), wc.is_null())
            bad = pc.and_(ne, pc.invert(both_null))
            idx = pc.index(bad, True).as_py()
            if idx is None or idx < 0:
                return f"column {name!r} differs"
            return f"column {name!r} row {idx}: {gc_[idx].as_py()!r} != {wc[idx].as_py()!r}"
    return None


# -- threads and environment --------------------------------------------------------------------


def split_stream(data: bytes) -> tuple[memoryview, list[memoryview]]:
    """(DType message, [Array messages]) of a Vortex IPC stream, framing only (vortex_io's
    decoder): what vortex-data's message-level decoder takes."""
    import vortex_io as vio

    dec = vio.MessageDecoder()
    dec.feed(data)
    msgs = list(dec)
    dec.end_of_input()
    mv = memoryview(data)
    views = [mv[m.offset : m.offset + m.size] for m in msgs]
    return views[0], views[1:]


def pin_threads(n: int = 1, *, vortex: bool = True) -> dict[str, Any]:
    """Pin pyarrow's CPU and IO thread pools (and vortex-data's workers when ``vortex`` and it
    is installed) to ``n`` threads; returns what was set, for the report.

    BLAS thread variables (OPENBLAS_NUM_THREADS...) are irrelevant: nothing here calls BLAS.
    """
    pa.set_cpu_count(n)
    pa.set_io_thread_count(n)
    out: dict[str, Any] = {"pyarrow_cpu_count": pa.cpu_count(), "pyarrow_io_threads": pa.io_thread_count()}
    if vortex:
        try:
            import vortex as vx
        except ImportError:
            out["vortex_worker_threads"] = None
        else:
            vx.set_worker_threads(n)
            out["vortex_worker_threads"] = n
    return out


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    """The checkout's commit (``+dirty`` when files differ from it), or None outside git."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, text=True, capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def environment() -> dict[str, Any]:
    """Versions and machine facts recorded with every result file."""
    return {
        "git_commit": _git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine_cpus": os.cpu_count(),
        "versions": {d: _version(d) for d in ("vortex-io", "pyarrow", "numpy", "vortex-data",
                                               "zstandard", "polars", "duckdb")},
    }


# -- running ------------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
    finally:
        gc.enable()
    del out
    return t1 - t0


def run_case(case: Case, rounds: int = 7, *, log: Callable[[str], None] | None = None) -> CaseResult:
    """Check, warm up, then time ``rounds`` round-robin rounds of every system (see module doc)."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    names = [s.name for s in case.systems]
    if len(set(names)) != len(names):
        raise ValueError(f"{case.name}: duplicate system names {names}")
    if case.peer is not None and case.peer not in names:
        raise ValueError(f"{case.name}: peer {case.peer!r} is not one of {names}")
    if log:
        log(f"{case.name}: checking {len(names)} systems")
    sizes: dict[str, int | None] = {}
    notes = list(case.notes)
    for s in case.systems:
        out = s.run()
        tbl = s.as_table(out) if s.as_table is not None else out
        diff = table_difference(tbl, case.expected)
        if diff is not None:
            raise CheckError(f"{case.name}: {s.name} output differs from the expected table: {diff}")
        sizes[s.name] = s.size(out) if s.size is not None else None
        odd = [f"{f.name}: {f.type}" for f, w in zip(tbl.schema, case.expected.schema)
               if f.type != w.type]
        if odd:
            notes.append(f"{s.name} returns other Arrow types (values equal): {', '.join(odd)}")
        del out, tbl
    for s in case.systems:  # warm-up round
        _timed(s.run)
    times: dict[str, list[float]] = {n: [] for n in names}
    k = len(case.systems)
    for r in range(rounds):
        for j in range(k):
            s = case.systems[(r + j) % k]
            times[s.name].append(_timed(s.run))
    med = {n: statistics.median(ts) for n, ts in times.items()}
    peer_med = med[case.peer] if case.peer is not None else None
    results = []
    for s in case.systems:
        ts = times[s.name]
        m = med[s.name]
        results.append(SystemResult(
            name=s.name, times_s=ts, median_s=m, min_s=min(ts), max_s=max(ts),
            ratio_to_peer=(m / peer_med) if peer_med else None,
            bytes=sizes[s.name],
            gbps=(case.gbps_bytes / m / 1e9) if case.gbps_bytes and m > 0 else None,
            note=s.note,
        ))
    return CaseResult(
        group=case.group, dataset=case.dataset, op=case.op, name=case.name,
        description=case.description, peer=case.peer, rows=case.expected.num_rows,
        rounds=rounds, check="passed", gbps_bytes=case.gbps_bytes, systems=results,
        notes=notes, tables=dict(case.tables),
    )


# -- groups -------------------------------------------------------------------------------------


@dataclass
class Context:
    """What a group's case builder gets: the options and a dataset loader (cached)."""

    rows: int
    rounds: int
    datasets: list[str]
    load: Callable[[str], pa.Table]
    log: Callable[[str], None] = print


@dataclass
class Group:
    name: str
    build: Callable[[Context], Iterable[Case]]
    datasets: tuple[str, ...]
    description: str


GROUPS: dict[str, Group] = {}


def group(name: str, *, datasets: tuple[str, ...], description: str
          ) -> Callable[[Callable[[Context], Iterable[Case]]], Callable[[Context], Iterable[Case]]]:
    """Register a group of cases: ``build(ctx)`` yields ``Case`` s for ``ctx.datasets``
    (by default ``datasets``). Later issues add groups (``scan``, ``polars``, ``duckdb``)
    the same way."""

    def deco(fn: Callable[[Context], Iterable[Case]]) -> Callable[[Context], Iterable[Case]]:
        if name in GROUPS:
            raise ValueError(f"benchmark group {name!r} is already registered")
        GROUPS[name] = Group(name, fn, datasets, description)
        return fn

    return deco


# -- reporting ----------------------------------------------------------------------------------


def _fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms" if s >= 0.1 else f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.0f} us"


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return ""
    return f"{n / 1e6:.2f} MB" if n >= 10_000 else f"{n} B"


def _render(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]

    def line(cells: list[Any]) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def format_case(res: CaseResult) -> str:
    """A readable table of one case's results."""
    title = f"== {res.name}: {res.description}" if res.description else f"== {res.name}"
    lines = [title, f"   {res.rows:,} rows, {res.rounds} rounds, output check: {res.check}"
             + (f", ratios vs {res.peer} (same run)" if res.peer else "")]
    has_bytes = any(s.bytes is not None for s in res.systems)
    has_gbps = res.gbps_bytes is not None
    header = ["system", "median", "min .. max"]
    if res.peer:
        header.append(f"/ {res.peer}")
    if has_gbps:
        header.append("GB/s")
    if has_bytes:
        header.append("bytes")
        if res.peer:
            header.append("bytes / peer")
    peer_bytes = res.system(res.peer).bytes if res.peer else None
    rows = []
    for s in res.systems:
        r = [s.name + (" *" if s.name == res.peer else ""), _fmt_time(s.median_s),
             f"{_fmt_time(s.min_s)} .. {_fmt_time(s.max_s)}"]
        if res.peer:
            r.append(f"{s.ratio_to_peer:.2f}x" if s.ratio_to_peer is not None else "")
        if has_gbps:
            r.append(f"{s.gbps:.2f}" if s.gbps is not None else "")
        if has_bytes:
            r.append(_fmt_bytes(s.bytes))
            if res.peer:
                r.append(f"{s.bytes / peer_bytes:.2f}x" if s.bytes and peer_bytes else "")
        rows.append(r)
    lines += ["   " + x for x in _render(header, rows, set(range(1, len(header))))]
    for s in res.systems:
        if s.note:
            lines.append(f"   {s.name}: {s.note}")
    for n in res.notes:
        lines.append(f"   note: {n}")
    for title, (h, trows) in res.tables.items():
        lines.append(f"   -- {title}")
        lines += ["   " + x for x in _render(h, [[str(c) for c in r] for r in trows], set())]
    return "\n".join(lines)


def write_json(results: list[CaseResult], meta: dict[str, Any], path: Path | None = None) -> Path:
    """Write the results (and run metadata) as JSON; default ``bench/out/bench-<UTC time>.json``."""
    if path is None:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = OUT_DIR / f"bench-{stamp}.json"
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"meta": meta, "results": [r.to_json() for r in results]}
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path
