"""vgi-rpc with Vortex IPC on the wire: a server in a worker process and a client.

Run ``python examples/vgi_rpc_vortex.py`` (Python >= 3.13, ``pip install 'vortex-io[vgi-rpc]'``).
The client starts this file again as its worker (``--serve``): the worker serves
``TradesService`` on its stdin/stdout, and both ends wrap their transport in
``VortexTransport``, so every request and response crosses the pipe as Vortex IPC (the
responses compressed) while vgi-rpc on either side reads and writes Arrow IPC as always.
The client counts the bytes it receives, calls each method, and prints what came back.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
from vgi_rpc import (
    CallContext,
    OutputCollector,
    PipeTransport,
    ProducerState,
    RpcConnection,
    RpcServer,
    Stream,
    SubprocessTransport,
)

from vortex_io import datasets
from vortex_io.integrations.vgi_rpc import VortexTransport

BATCH_ROWS = 65_536


@functools.cache
def trades(rows: int) -> pa.Table:
    """The generated trades table (``vortex_io.datasets.trades``), built once per size."""
    return datasets.trades(rows)


class TradesService(Protocol):
    def vwap(self, symbol: str, rows: int) -> float:
        """The volume-weighted average price of ``symbol`` in the first ``rows`` trades."""
        ...

    def trades(self, rows: int) -> Stream[TradesState]:
        """The first ``rows`` trades, ``BATCH_ROWS`` per batch."""
        ...


@dataclass
class TradesState(ProducerState):
    rows: int
    sent: int = 0

    def produce(self, out: OutputCollector, ctx: CallContext) -> None:
        if self.sent >= self.rows:
            out.finish()
            return
        n = min(BATCH_ROWS, self.rows - self.sent)
        out.emit(trades(self.rows).slice(self.sent, n).combine_chunks().to_batches()[0],
                 metadata={"first_row": str(self.sent)})
        self.sent += n


class TradesImpl:
    def vwap(self, symbol: str, rows: int) -> float:
        t = trades(rows).filter(pc.field("symbol") == symbol)
        return pc.sum(pc.multiply(t["price"], t["size"])).as_py() / pc.sum(t["size"]).as_py()

    def trades(self, rows: int) -> Stream[TradesState]:
        return Stream(output_schema=trades(1).schema, state=TradesState(rows=rows))


def serve(plain: bool = False) -> None:
    """The worker: serve on stdin/stdout, Vortex IPC both ways, responses compressed
    (``plain``: vgi-rpc's Arrow IPC as it is, the baseline ``bench/bench_rpc.py`` compares)."""
    stdio = PipeTransport(os.fdopen(0, "rb", closefd=False),
                          os.fdopen(1, "wb", buffering=0, closefd=False))
    server = RpcServer(TradesService, TradesImpl())
    server.serve(stdio if plain else VortexTransport(stdio, compress=True))


class Counting:
    """The worker's stdout as the client reads it, counting the bytes (Vortex IPC)."""

    def __init__(self, inner):
        self.inner, self.bytes = inner, 0

    def read(self, n=-1):
        data = self.inner.read(n)
        self.bytes += len(data)
        return data

    def __getattr__(self, name):
        return getattr(self.inner, name)


def main() -> None:
    worker = SubprocessTransport([sys.executable, __file__, "--serve"])
    received = Counting(worker.reader)
    wire = VortexTransport(PipeTransport(received, worker.writer))
    try:
        with RpcConnection(TradesService, wire) as svc:
            print("vwap(AAPL, 100k rows) =", round(svc.vwap(symbol="AAPL", rows=100_000), 4))
            got = pa.Table.from_batches([ab.batch for ab in svc.trades(rows=1_000_000)])
    finally:
        worker.close()
    want = trades(1_000_000)
    print(f"trades(1M rows): {got.num_rows} rows, equal to the worker's table: {got.equals(want)}")
    arrow = sum(b.serialize().size for b in want.to_batches(BATCH_ROWS))
    print(f"received {received.bytes / 1e6:.2f} MB of Vortex IPC; the same batches as Arrow IPC: "
          f"{arrow / 1e6:.2f} MB ({received.bytes / arrow:.2f}x)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(plain=sys.argv[2:] == ["--plain"])
    else:
        main()
