"""The ``rpc`` group: Vortex IPC as vgi-rpc's wire encoding (``VortexTransport``), against
vgi-rpc's own Arrow IPC, and the per-message cost of small batches with metadata against
pyarrow's stream writer and reader. Python >= 3.13 with vgi-rpc (``.venv-313``):
``.venv-313/bin/python bench/run.py --only rpc``; without vgi-rpc only the small-message
cases run.

- ``unary``: ``CALLS`` calls of a small unary method (two floats in, one out) on one
  connection over an in-process pipe: plain, ``VortexTransport`` canonical, compressed;
  the bytes of one response in the case's table.
- ``trades-1m``: the 1M-row trades table streamed back from a worker subprocess
  (``examples/vgi_rpc_vortex.py``), plain against compressed Vortex IPC; its wire bytes.
- ``write-small-md`` / ``read-small-md``: ``SMALL`` batches of 10 trades rows, each with
  two metadata pairs, written one ``write`` each; read back to Arrow with their metadata.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.ipc as ipc

import vortex_io as vio
from bench.harness import Case, Context, System, group

ROOT = Path(__file__).resolve().parents[1]
CALLS = 200
SMALL, SMALL_ROWS = 1000, 10


def _have_vgi_rpc() -> bool:
    try:
        import vgi_rpc  # noqa: F401
    except ImportError:
        return False
    return True


class Adder(Protocol):
    def add(self, a: float, b: float) -> float: ...


class _AdderImpl:
    def add(self, a: float, b: float) -> float:
        return a + b


class _Counting:
    """A writer that counts the bytes it passes on."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.n = inner, 0

    def write(self, b: Any) -> Any:
        self.n += memoryview(b).nbytes
        return self.inner.write(b)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _pipe_connection(mode: str) -> tuple[Any, _Counting]:
    """A connected ``Adder`` proxy over a pipe, served on a daemon thread; the server's
    writer counts the response bytes."""
    from vgi_rpc.rpc import PipeTransport, RpcConnection, RpcServer, make_pipe_pair

    from vortex_io.integrations.vgi_rpc import VortexTransport

    client, server = make_pipe_pair()
    counted = _Counting(server.writer)
    server = PipeTransport(server.reader, counted)
    if mode != "plain":
        kw = {"compress": mode == "vortex-compressed"}
        client, server = VortexTransport(client, **kw), VortexTransport(server, **kw)
    threading.Thread(target=RpcServer(Adder, _AdderImpl()).serve, args=(server,),
                     daemon=True).start()
    conn = RpcConnection(Adder, client)
    return conn.__enter__(), counted


def _unary_cases() -> Iterator[Case]:
    modes = ("plain", "vortex", "vortex-compressed")
    conns = {m: _pipe_connection(m) for m in modes}
    per_call = {}
    for m, (proxy, counted) in conns.items():
        proxy.add(a=1.0, b=2.0)
        before = counted.n
        proxy.add(a=1.0, b=2.0)
        per_call[m] = counted.n - before
    expected = pa.table({"sum": [float(i) + 0.5 for i in range(CALLS)]})

    def calls(proxy: Any) -> pa.Table:
        return pa.table({"sum": [proxy.add(a=float(i), b=0.5) for i in range(CALLS)]})

    base = per_call["plain"]
    yield Case(
        group="rpc", dataset="adder", op="unary", peer="vgi-rpc",
        description=f"{CALLS} small unary calls on one connection (in-process pipe)",
        expected=expected,
        notes=["bytes: one response as it crosses the wire"],
        tables={"response bytes": (["system", "bytes", "vs Arrow IPC"], [
            [m, per_call[m], f"{per_call[m] / base:.2f}x"] for m in modes])},
        systems=[
            System("vgi-rpc", lambda p=conns["plain"][0]: calls(p), note="Arrow IPC, plain"),
            System("vortex_io", lambda p=conns["vortex"][0]: calls(p),
                   note="VortexTransport on both ends"),
            System("vortex_io-compressed", lambda p=conns["vortex-compressed"][0]: calls(p),
                   note="VortexTransport(compress=True) on both ends"),
        ],
    )


def _trades_case() -> Iterator[Case]:
    from vgi_rpc.rpc import PipeTransport, RpcConnection, SubprocessTransport

    sys.path.insert(0, str(ROOT / "examples"))
    import vgi_rpc_vortex as ex  # the example's service, and its worker

    from vortex_io.integrations.vgi_rpc import VortexTransport

    wire: dict[str, Any] = {}

    class _Reading:
        def __init__(self, inner: Any, mode: str) -> None:
            self.inner, self.mode = inner, mode

        def read(self, n: int = -1) -> bytes:
            data = self.inner.read(n)
            wire[self.mode] = wire.get(self.mode, 0) + len(data)
            return data

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    proxies = {}
    for mode in ("plain", "vortex-compressed"):
        cmd = [sys.executable, str(ROOT / "examples" / "vgi_rpc_vortex.py"), "--serve"]
        worker = SubprocessTransport(cmd + (["--plain"] if mode == "plain" else []))
        t = PipeTransport(_Reading(worker.reader, mode), worker.writer)
        conn = RpcConnection(ex.TradesService, t if mode == "plain" else VortexTransport(t))
        proxies[mode] = conn.__enter__()

    def fetch(mode: str) -> pa.Table:
        return pa.Table.from_batches([ab.batch for ab in proxies[mode].trades(rows=1_000_000)])

    expected = ex.trades(1_000_000)
    sizes = {}
    for mode in proxies:
        before = wire.get(mode, 0)
        fetch(mode)
        sizes[mode] = wire[mode] - before
    yield Case(
        group="rpc", dataset="trades", op="trades-1m", peer="vgi-rpc",
        description="1M trades rows streamed from a worker subprocess (64Ki rows a batch)",
        expected=expected,
        tables={"wire bytes": (["system", "MB", "vs Arrow IPC"], [
            [m, f"{sizes[m] / 1e6:.2f}", f"{sizes[m] / sizes['plain']:.2f}x"] for m in sizes])},
        systems=[
            System("vgi-rpc", lambda: fetch("plain"), note="Arrow IPC, plain"),
            System("vortex_io-compressed", lambda: fetch("vortex-compressed"),
                   note="VortexTransport, the worker's responses compressed"),
        ],
    )


def _small_cases(t: pa.Table) -> Iterator[Case]:
    batches = t.slice(0, SMALL * SMALL_ROWS).to_batches(max_chunksize=SMALL_ROWS)[:SMALL]
    mds = [{"vgi_rpc.method": "add", "vgi_rpc.request_id": f"{i:016x}"} for i in range(len(batches))]
    expected = pa.Table.from_batches(batches)

    def vx(compress: bool) -> bytes:
        buf = io.BytesIO()
        with vio.StreamWriter(buf, t.schema, compress=compress) as w:
            for b, md in zip(batches, mds):
                w.write(b, metadata=md)
        return buf.getvalue()

    def arrow() -> bytes:
        buf = io.BytesIO()
        with ipc.new_stream(buf, t.schema) as w:
            for b, md in zip(batches, mds):
                w.write_batch(b, custom_metadata=md)
        return buf.getvalue()

    def vx_read(data: bytes) -> pa.Table:
        out, seen = [], []
        with vio.StreamReader(data) as r:
            for b in r:
                out.append(b.to_arrow())
                seen.append(b.metadata)
        assert len(seen) == len(batches)
        return pa.Table.from_batches(out)

    def arrow_read(data: bytes) -> pa.Table:
        r = ipc.open_stream(data)
        out, seen = [], []
        while True:
            try:
                b, md = r.read_next_batch_with_custom_metadata()
            except StopIteration:
                break
            out.append(b)
            seen.append(md)
        assert len(seen) == len(batches)
        return pa.Table.from_batches(out, schema=r.schema)

    def decode(data: bytes) -> pa.Table:
        return vio.StreamReader(data).read_arrow()

    yield Case(
        group="rpc", dataset="trades", op="write-small-md", peer="pyarrow",
        description=f"{len(batches)} batches of {SMALL_ROWS} rows, 2 metadata pairs each, one write each",
        expected=expected,
        systems=[
            System("vortex_io", lambda: vx(False), decode, len, note="StreamWriter(compress=False)"),
            System("vortex_io-compressed", lambda: vx(True), decode, len, note="StreamWriter(compress=True)"),
            System("pyarrow", arrow, lambda d: ipc.open_stream(d).read_all(), len,
                   note="ipc.new_stream().write_batch(custom_metadata=)"),
        ],
    )
    vdata, cdata, adata = vx(False), vx(True), arrow()
    yield Case(
        group="rpc", dataset="trades", op="read-small-md", peer="pyarrow",
        description="the same stream -> Arrow batches with their metadata",
        expected=expected,
        systems=[
            System("vortex_io", lambda: vx_read(vdata), note="StreamReader: Batch.to_arrow(), .metadata"),
            System("vortex_io-compressed", lambda: vx_read(cdata), note="(the compressed stream)"),
            System("pyarrow", lambda: arrow_read(adata), note="read_next_batch_with_custom_metadata()"),
        ],
    )


@group("rpc", datasets=("trades",),
       description="vgi-rpc over VortexTransport vs plain; small batches with metadata vs pyarrow")
def rpc(ctx: Context) -> Iterator[Case]:
    yield from _small_cases(ctx.load("trades"))
    if _have_vgi_rpc():
        yield from _unary_cases()
        yield from _trades_case()
