"""The acceptance bars of issue 19, judged on the results of one run.

Each bar names a case, our system and the peer systems it is judged against; the ratio is
our median over the *fastest* peer configuration's median measured in the same run (e.g.
vortex-data with its default workers or pinned to one, whichever was faster), so a bar
passes only against the peer at its best. ``bar`` is the issue's limit (1.0x), ``goal`` its
goal (0.5x) where the issue names one. A bar whose case was not run (``--only``,
``--datasets``) is listed as not measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.harness import CaseResult, _fmt_time, _render

__all__ = ["BARS", "Bar", "BarResult", "evaluate", "format_bars"]


@dataclass(frozen=True)
class Bar:
    label: str
    group: str
    op: str
    #: dataset of the case; None: any dataset of the group (the adapters' table is named
    #: after its row count)
    dataset: str | None
    ours: str
    peers: tuple[str, ...]
    bar: float = 1.0
    goal: float | None = 0.5


def _bars() -> list[Bar]:
    out: list[Bar] = []
    vx = ("vortex-data", "vortex-data-1t")
    vx_malloc = ("vortex-data-malloc", "vortex-data-malloc-1t")
    for ds in ("trades", "lineitem", "flights"):
        out += [
            Bar(f"decode {ds}: vortex_io / vortex-data (as installed)", "decode", "decode", ds,
                "vortex_io", vx),
            Bar(f"decode {ds}: vortex_io / vortex-data (malloc-tuned)", "decode", "decode", ds,
                "vortex_io", vx_malloc),
            Bar(f"decode {ds}: vortex_io / Parquet zstd", "decode", "decode", ds, "vortex_io",
                ("parquet-zstd", "parquet-zstd-1t"), goal=None),
            Bar(f"decode {ds}: vortex_io / Arrow IPC zstd", "decode", "decode", ds, "vortex_io",
                ("arrow-ipc-zstd", "arrow-ipc-zstd-1t"), goal=None),
        ]
    for op, what in (("filter-symbol", "symbol == 'AAPL'"), ("filter-price-lt90", "price < 90")):
        out.append(Bar(f"scan {what}: vortex_io / vortex-data lazy filter", "scan", op, "trades",
                       "vortex_io.scan", vx))
        out.append(Bar(f"scan {what}: vortex_io / vortex-data lazy filter (malloc-tuned)", "scan",
                       op, "trades", "vortex_io.scan", ("vortex-data-malloc",)))
    for op, what in (("polars-count-size-gt100", "Polars filter(size > 100).len()"),
                     ("polars-groupby-symbol", "Polars group_by(symbol)"),
                     ("polars-vwap-by-side", "Polars VWAP by side")):
        out.append(Bar(f"{what}: vortex / Parquet zstd", "adapters", op, None, "scan_vortex_ipc",
                       ("scan_parquet-zstd",)))
    out += [
        Bar("Polars symbol == 'AAPL': vortex / scan_ipc zstd", "adapters", "polars-filter-symbol",
            None, "scan_vortex_ipc", ("scan_ipc-zstd",), goal=None),
        Bar("Polars symbol == 'AAPL': vortex / Parquet zstd", "adapters", "polars-filter-symbol",
            None, "scan_vortex_ipc", ("scan_parquet-zstd",), goal=None),
    ]
    for op, what in (("duckdb-groupby-symbol", "DuckDB GROUP BY symbol"),
                     ("duckdb-like-m", "DuckDB LIKE 'M%'"),
                     ("duckdb-ts-between", "DuckDB ts BETWEEN")):
        out.append(Bar(f"{what}: vortex / Parquet zstd", "adapters", op, None, "vortex_ipc",
                       ("read_parquet-zstd",)))
    out.append(Bar("DuckDB symbol = 'AAPL': vortex / Parquet zstd", "adapters",
                   "duckdb-filter-symbol", None, "vortex_ipc", ("read_parquet-zstd",), goal=None))
    return out


BARS: list[Bar] = _bars()


@dataclass
class BarResult:
    bar: Bar
    measured: bool
    ours_s: float | None = None
    peer: str | None = None
    peer_s: float | None = None
    ratio: float | None = None
    #: ratio of the fastest calls (min / min): what the medians hide on a noisy machine
    ratio_min: float | None = None
    #: CPU time of ours over the same peer's (all threads; ours may use more cores)
    ratio_cpu: float | None = None
    passed: bool | None = None
    goal_passed: bool | None = None
    case: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.bar.label, "case": self.case, "ours": self.bar.ours,
                "peers": list(self.bar.peers), "measured": self.measured,
                "ours_median_s": self.ours_s, "fastest_peer": self.peer,
                "peer_median_s": self.peer_s, "ratio": self.ratio, "ratio_min": self.ratio_min,
                "ratio_cpu": self.ratio_cpu,
                "bar": self.bar.bar, "passed": self.passed, "goal": self.bar.goal,
                "goal_passed": self.goal_passed}


def _find(results: list[CaseResult], b: Bar) -> CaseResult | None:
    for r in results:
        if r.group == b.group and r.op == b.op and (b.dataset is None or r.dataset == b.dataset):
            return r
    return None


def evaluate(results: list[CaseResult], bars: list[Bar] | None = None) -> list[BarResult]:
    out = []
    for b in bars or BARS:
        r = _find(results, b)
        names = {s.name for s in r.systems} if r is not None else set()
        peers = [p for p in b.peers if p in names]
        if r is None or b.ours not in names or not peers:
            out.append(BarResult(b, measured=False, case=r.name if r is not None else None))
            continue
        ours = r.system(b.ours)
        best = min((r.system(p) for p in peers), key=lambda s: s.median_s)
        fastest_min = min(r.system(p).min_s for p in peers)
        ratio = ours.median_s / best.median_s
        cpu = (ours.cpu_median_s / best.cpu_median_s
               if ours.cpu_median_s is not None and best.cpu_median_s else None)
        out.append(BarResult(
            b, measured=True, ours_s=ours.median_s, peer=best.name, peer_s=best.median_s,
            ratio=ratio, ratio_min=ours.min_s / fastest_min, ratio_cpu=cpu, passed=ratio <= b.bar,
            goal_passed=None if b.goal is None else ratio <= b.goal, case=r.name))
    return out


def format_bars(res: list[BarResult]) -> str:
    """The "issue 19 bars" summary table."""
    header = ["bar", "ours", "fastest peer", "ratio", "(min/min)", "(cpu/cpu)", "bar 1.0x",
              "goal 0.5x"]
    rows = []
    for x in res:
        if not x.measured:
            rows.append([x.bar.label, "", "", "not measured", "", "", "", ""])
            continue
        rows.append([
            x.bar.label, _fmt_time(x.ours_s), f"{x.peer} {_fmt_time(x.peer_s)}",
            f"{x.ratio:.2f}x", f"{x.ratio_min:.2f}x",
            f"{x.ratio_cpu:.2f}x" if x.ratio_cpu is not None else "",
            "PASS" if x.passed else "FAIL",
            "n/a" if x.goal_passed is None else ("PASS" if x.goal_passed else "FAIL")])
    measured = [x for x in res if x.measured]
    lines = ["== issue 19 bars (median of ours / median of the fastest peer configuration, "
             "same run)"]
    lines += ["   " + s for s in _render(header, rows, {1, 2, 3, 4, 5})]
    if measured:
        lines.append(f"   {sum(bool(x.passed) for x in measured)} of {len(measured)} measured "
                     f"bars pass; goals met: {sum(bool(x.goal_passed) for x in measured)} of "
                     f"{sum(x.goal_passed is not None for x in measured)}")
    return "\n".join(lines)
