"""The benchmark protocol (see bench/README.md).

A ``Case`` is one measurement (e.g. "read trades from bytes into a pyarrow Table") with the
``System`` s that compete on the same input. ``run_case``:

1. **Check**: runs every system once and verifies that its output, viewed as a pyarrow
   Table (``System.as_table``), has the same values as ``Case.expected``. A mismatch raises
   ``CheckError`` naming the system and the first difference: nothing is timed.
2. **Warm-up**: one more untimed round, every system once.
3. **Rounds**: ``rounds`` rounds, round-robin: every system once per round, the starting
   system rotating each round, so machine noise hits all alike. Each call is timed alone
   with ``time.perf_counter`` and the garbage collector paused (collected before the call),
   and its page faults are counted (``resource.getrusage`` minor / major faults of the
   process, every thread, around the call).
4. **Report**: median and min-max per system, the ratio of each median to the named peer's
   median from the same run, median page faults, each system's thread count, output bytes
   and throughput (GB/s of ``Case.gbps_bytes``).

Threads: ``pin_threads`` sets the baseline of the run (pyarrow CPU and IO pools and
vortex-data's workers pinned to 1). A system that runs with other counts says so with
``System.threads`` (the label reported) and sets them with ``System.setup`` (see
``thread_setup``), which runs untimed before each of its calls and whose returned undo runs
after it, so the next system finds the baseline again.

A system may run elsewhere (a worker subprocess with another environment): its ``run``
returns a ``Measured`` (time and faults taken inside the worker), which the harness records
instead of its own clock, and its ``check_run`` returns the output for the check.

Groups of cases register with ``@group(name)``; ``bench/run.py`` runs them.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

__all__ = [
    "DEFAULT_THREADS",
    "GROUPS",
    "OUT_DIR",
    "Case",
    "CaseResult",
    "CheckError",
    "Context",
    "Group",
    "Measured",
    "System",
    "SystemResult",
    "environment",
    "format_case",
    "group",
    "pin_threads",
    "run_case",
    "split_stream",
    "table_difference",
    "thread_setup",
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
    (encoders: the stream length). ``threads``: the thread count(s) the system runs with, as
    reported (e.g. ``"2 (all cores)"``; empty: the run's pinned baseline). ``setup()``: runs
    untimed before each call (e.g. sets thread pools) and may return an undo, run after the
    call. ``check_run()``: what the check calls instead of ``run`` (a remote system whose
    ``run`` returns only a ``Measured``).
    """

    name: str
    run: Callable[[], Any]
    as_table: Callable[[Any], pa.Table] | None = None
    size: Callable[[Any], int] | None = None
    note: str = ""
    threads: str = ""
    setup: Callable[[], Callable[[], None] | None] | None = None
    check_run: Callable[[], Any] | None = None


@dataclass
class Measured:
    """What a system measured itself (e.g. inside a worker process): the harness records
    these instead of its own clock and fault counts."""

    seconds: float
    minflt: int
    majflt: int
    #: CPU seconds (user + system, every thread) of the call; None: not measured
    cpu_s: float | None = None


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
    #: compare floating-point columns with this relative tolerance (aggregates summed in
    #: another order); None: exactly
    rtol: float | None = None

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
    threads: str = ""
    #: page faults of each timed call (minor, major), and their medians
    minflt: list[int] = field(default_factory=list)
    majflt: list[int] = field(default_factory=list)
    minflt_median: float | None = None
    majflt_median: float | None = None
    #: CPU seconds (user + system, every thread of the process) of each timed call, and
    #: their median: on a loaded machine less disturbed by other jobs than wall time
    cpu_s: list[float] = field(default_factory=list)
    cpu_median_s: float | None = None


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


def table_difference(got: pa.Table, want: pa.Table, rtol: float | None = None) -> str | None:
    """None if ``got`` holds the same values as ``want`` (same column names, row count and
    values; string/binary layouts, chunking, nullability flags and metadata may differ),
    else a description of the first difference. ``rtol``: floating-point columns may differ
    by this relative tolerance (nulls and NaNs in the same places)."""
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
        if rtol is not None and pa.types.is_floating(tw) and not g.equals(w):
            import numpy as np

            ga, wa = g.combine_chunks(), w.combine_chunks()
            if not ga.is_null().equals(wa.is_null()):
                return f"column {name!r}: nulls differ"
            gn = ga.to_numpy(zero_copy_only=False)
            wn = wa.to_numpy(zero_copy_only=False)
            ok = np.isclose(gn, wn, rtol=rtol, atol=0.0, equal_nan=True) | ga.is_null().to_numpy(
                zero_copy_only=False)
            if not ok.all():
                idx = int(np.flatnonzero(~ok)[0])
                return f"column {name!r} row {idx}: {gn[idx]!r} != {wn[idx]!r} (rtol {rtol})"
            continue
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


#: pyarrow's own pool sizes, read before anything pins them (``thread_setup(pyarrow=None)``
#: restores these)
DEFAULT_THREADS: dict[str, int] = {"pyarrow_cpu_count": pa.cpu_count(),
                                   "pyarrow_io_threads": pa.io_thread_count()}


def vortex_default_threads() -> int | None:
    """vortex-data's default worker count (``set_worker_threads(None)``:
    ``available_parallelism() - 1``, at least 1), or None when it is not installed."""
    try:
        import vortex  # noqa: F401
    except ImportError:
        return None
    return max(1, (os.cpu_count() or 1) - 1)


def thread_setup(*, pyarrow: int | bool | None = False, vortex: int | bool | None = False
                 ) -> Callable[[], Callable[[], None]]:
    """A ``System.setup`` that sets pyarrow's CPU and IO pools (``pyarrow=n``; ``None``: its
    defaults, ``DEFAULT_THREADS``) and vortex-data's workers (``vortex=n``; ``None``: its
    default) before a call and puts the previous counts back after it. ``False`` (the
    default) leaves that library alone."""

    def setup() -> Callable[[], None]:
        undo: list[Callable[[], None]] = []
        if pyarrow is not False:
            cpu, io_ = pa.cpu_count(), pa.io_thread_count()
            want_cpu = DEFAULT_THREADS["pyarrow_cpu_count"] if pyarrow is None else pyarrow
            want_io = DEFAULT_THREADS["pyarrow_io_threads"] if pyarrow is None else pyarrow
            if (cpu, io_) != (want_cpu, want_io):
                pa.set_cpu_count(want_cpu)
                pa.set_io_thread_count(want_io)

                def back_pa() -> None:
                    pa.set_cpu_count(cpu)
                    pa.set_io_thread_count(io_)

                undo.append(back_pa)
        if vortex is not False:
            import vortex as vx

            before = vx.worker_threads()
            vx.set_worker_threads(vortex)
            if vx.worker_threads() != before:
                undo.append(lambda: vx.set_worker_threads(before))

        def restore() -> None:
            for u in reversed(undo):
                u()

        return restore

    return setup


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


def _usage() -> tuple[int, int, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt, r.ru_majflt, r.ru_utime + r.ru_stime


def _timed(s: System) -> tuple[float, int, int, float | None]:
    """One timed call of ``s``: (seconds, minor faults, major faults, CPU seconds)."""
    undo = s.setup() if s.setup is not None else None
    try:
        gc.collect()
        gc.disable()
        try:
            f0 = _usage()
            t0 = time.perf_counter()
            out = s.run()
            t1 = time.perf_counter()
            f1 = _usage()
        finally:
            gc.enable()
        if isinstance(out, Measured):
            return out.seconds, out.minflt, out.majflt, out.cpu_s
        del out
        return t1 - t0, f1[0] - f0[0], f1[1] - f0[1], f1[2] - f0[2]
    finally:
        if undo is not None:
            undo()


def _checked_output(s: System) -> Any:
    undo = s.setup() if s.setup is not None else None
    try:
        return (s.check_run or s.run)()
    finally:
        if undo is not None:
            undo()


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
    odd_types: dict[str, list[str]] = {}  # "col: type, ..." -> systems returning it
    for s in case.systems:
        out = _checked_output(s)
        if isinstance(out, Measured):
            raise ValueError(f"{case.name}: {s.name} returns only a measurement: give it a check_run")
        tbl = s.as_table(out) if s.as_table is not None else out
        diff = table_difference(tbl, case.expected, case.rtol)
        if diff is not None:
            raise CheckError(f"{case.name}: {s.name} output differs from the expected table: {diff}")
        sizes[s.name] = s.size(out) if s.size is not None else None
        odd = [f"{f.name}: {f.type}" for f, w in zip(tbl.schema, case.expected.schema)
               if f.type != w.type]
        if odd:
            odd_types.setdefault(", ".join(odd), []).append(s.name)
        del out, tbl
    for odd_s, who in odd_types.items():
        notes.append(f"{', '.join(who)} return{'s' if len(who) == 1 else ''} other Arrow "
                     f"types (values equal): {odd_s}")
    for s in case.systems:  # warm-up round
        _timed(s)
    times: dict[str, list[float]] = {n: [] for n in names}
    faults: dict[str, list[tuple[int, int]]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    k = len(case.systems)
    for r in range(rounds):
        for j in range(k):
            s = case.systems[(r + j) % k]
            dt, minflt, majflt, cpu_s = _timed(s)
            times[s.name].append(dt)
            faults[s.name].append((minflt, majflt))
            if cpu_s is not None:
                cpu[s.name].append(cpu_s)
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
            note=s.note, threads=s.threads,
            minflt=[f[0] for f in faults[s.name]], majflt=[f[1] for f in faults[s.name]],
            minflt_median=statistics.median(f[0] for f in faults[s.name]),
            majflt_median=statistics.median(f[1] for f in faults[s.name]),
            cpu_s=cpu[s.name], cpu_median_s=statistics.median(cpu[s.name]) if cpu[s.name] else None,
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


def _fmt_faults(s: SystemResult) -> str:
    """Median page faults of a call: minor, and major when there were any."""
    if s.minflt_median is None:
        return ""
    out = f"{s.minflt_median:,.0f}"
    if s.majflt_median:
        out += f" / {s.majflt_median:,.0f} maj"
    return out


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
             + (f", ratios vs {res.peer} (same run)" if res.peer else "")
             + "; cpu: median CPU time per call (all threads); faults: median page faults per call"]
    has_bytes = any(s.bytes is not None for s in res.systems)
    has_gbps = res.gbps_bytes is not None
    has_threads = any(s.threads for s in res.systems)
    header = ["system"] + (["threads"] if has_threads else []) + ["median", "min .. max"]
    if res.peer:
        header.append(f"/ {res.peer}")
    header += ["cpu", "faults"]
    if has_gbps:
        header.append("GB/s")
    if has_bytes:
        header.append("bytes")
        if res.peer:
            header.append("bytes / peer")
    peer_bytes = res.system(res.peer).bytes if res.peer else None
    rows = []
    for s in res.systems:
        r = [s.name + (" *" if s.name == res.peer else "")]
        if has_threads:
            r.append(s.threads or "pinned")
        r += [_fmt_time(s.median_s), f"{_fmt_time(s.min_s)} .. {_fmt_time(s.max_s)}"]
        if res.peer:
            r.append(f"{s.ratio_to_peer:.2f}x" if s.ratio_to_peer is not None else "")
        r.append(_fmt_time(s.cpu_median_s) if s.cpu_median_s is not None else "")
        r.append(_fmt_faults(s))
        if has_gbps:
            r.append(f"{s.gbps:.2f}" if s.gbps is not None else "")
        if has_bytes:
            r.append(_fmt_bytes(s.bytes))
            if res.peer:
                r.append(f"{s.bytes / peer_bytes:.2f}x" if s.bytes and peer_bytes else "")
        rows.append(r)
    first_num = 2 if has_threads else 1
    lines += ["   " + x for x in _render(header, rows, set(range(first_num, len(header))))]
    for s in res.systems:
        if s.note:
            lines.append(f"   {s.name}: {s.note}")
    for n in res.notes:
        lines.append(f"   note: {n}")
    for title, (h, trows) in res.tables.items():
        lines.append(f"   -- {title}")
        lines += ["   " + x for x in _render(h, [[str(c) for c in r] for r in trows], set())]
    return "\n".join(lines)


def write_json(results: list[CaseResult], meta: dict[str, Any], path: Path | None = None,
               extra: dict[str, Any] | None = None) -> Path:
    """Write the results (and run metadata, and ``extra`` top-level keys such as the bars) as
    JSON; default ``bench/out/bench-<UTC time>.json``."""
    if path is None:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = OUT_DIR / f"bench-{stamp}.json"
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"meta": meta, "results": [r.to_json() for r in results], **(extra or {})}
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path
