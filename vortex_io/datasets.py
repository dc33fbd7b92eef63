"""Generated example data (nothing is downloaded): the trades table used by the demo, the
notebooks, the tests and the benchmarks.

>>> from vortex_io.datasets import trades
>>> t = trades(1000)
>>> t.num_rows, t.column_names
(1000, ['ts', 'symbol', 'price', 'size', 'side'])
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["TICKERS", "trades"]

#: 50 tickers; AAPL, MSFT and NVDA first (their popularity is pinned, see ``trades``)
TICKERS = (
    "AAPL MSFT NVDA AMZN GOOGL META TSLA AVGO JPM V UNH XOM JNJ WMT MA PG HD COST ORCL CVX "
    "MRK ABBV KO PEP BAC ADBE CRM NFLX AMD TMO LIN MCD CSCO ACN ABT WFC DHR INTC DIS TXN "
    "VZ PFE CMCSA NKE QCOM IBM AMGN T GE CAT"
).split()

#: 2024-01-02 14:30:00 UTC in nanoseconds (a market open)
_T0_NS = 1_704_205_800_000_000_000


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


def main(argv: list[str] | None = None) -> int:
    """``python -m vortex_io.datasets PATH [ROWS]``: write the trades table to ``PATH`` as
    Parquet (``.parquet``), Vortex IPC (``.vxipc``) or CSV (``.csv``), to try things on."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m vortex_io.datasets",
                                description="Write the generated trades table to a file.")
    p.add_argument("path", help="the file: .parquet, .vxipc or .csv")
    p.add_argument("rows", nargs="?", type=int, default=100_000,
                   help="how many rows (default: 100000)")
    args = p.parse_args(argv)
    if args.rows < 0:
        p.error("rows must be >= 0")
    t = trades(args.rows)
    if args.path.endswith(".parquet"):
        import pyarrow.parquet as pq

        pq.write_table(t, args.path)
    elif args.path.endswith(".vxipc"):
        from ._ipc.writer import write_ipc

        write_ipc(args.path, t)
    elif args.path.endswith(".csv"):
        import pyarrow.csv as pcsv

        pcsv.write_csv(t, args.path)
    else:
        p.error(f"cannot tell the format of {args.path!r}: use .parquet, .vxipc or .csv")
    print(f"{args.path}: {t.num_rows:,} trades")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
