"""``VortexTransport`` with vgi-rpc itself (Python >= 3.13): what crosses the wire is
Vortex IPC, one stream per Arrow stream with an end marker; a response Vortex cannot carry
reaches the client as vgi-rpc's own error and the connection goes on; the README's
server + client example runs. vgi-rpc's conformance suite runs in tests/vgi_conformance."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, Protocol

import pyarrow as pa
import pytest

vgi_rpc = pytest.importorskip("vgi_rpc")

import vortex_io as vio  # noqa: E402
from vortex_io._ipc.framing import MessageDecoder  # noqa: E402
from vortex_io.integrations.vgi_rpc import VortexTransport  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
UNION = pa.sparse_union([pa.field("i", pa.int64()), pa.field("s", pa.string())])


class Service(Protocol):
    def echo(self, value: str) -> str: ...
    def wide(self, n: int) -> list[int]: ...
    def union(self) -> Annotated[Any, vgi_rpc.ArrowType(UNION)]: ...


class Impl:
    def echo(self, value: str) -> str:
        return value

    def wide(self, n: int) -> list[int]:
        return list(range(n))

    def union(self) -> Any:
        return 1


class Tap:
    """A writer that keeps a copy of what it passes on."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.data = inner, bytearray()

    def write(self, b: Any) -> int:
        self.data += b
        return self.inner.write(b)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _connect(compress: bool = False):
    from vgi_rpc.rpc import PipeTransport, RpcConnection, RpcServer, make_pipe_pair

    client, server = make_pipe_pair()
    tap = Tap(server.writer)
    server = PipeTransport(server.reader, tap)
    thread = threading.Thread(target=RpcServer(Service, Impl()).serve,
                              args=(VortexTransport(server, compress=compress),), daemon=True)
    thread.start()
    wrapped = VortexTransport(client, compress=compress)
    return RpcConnection(Service, wrapped), wrapped, thread, tap


def _vortex_streams(data: bytes) -> list[bytes]:
    """The wire's bytes cut into Vortex streams, each ending at its end marker."""
    streams = []
    while data:
        dec = MessageDecoder()
        dec.feed(data)
        msgs = list(dec)
        assert dec.finished and msgs[-1].end_marker, "a stream without its end marker"
        assert all(m.type.name in ("DTYPE", "ARRAY") for m in msgs)
        rest = dec.unused_data
        streams.append(data[:len(data) - len(rest)])
        data = rest
    return streams


@pytest.mark.parametrize("compress", [False, True], ids=["canonical", "compressed"])
def test_the_wire_carries_vortex_ipc(compress: bool) -> None:
    conn, wrapped, thread, tap = _connect(compress)
    with conn as svc:
        assert svc.echo(value="hello") == "hello"
        assert svc.wide(n=50_000) == list(range(50_000))
    wrapped.close()
    thread.join(5)
    assert not thread.is_alive()
    assert tap.data[:4] != b"\xff\xff\xff\xff"  # not Arrow IPC's continuation marker
    # one stream per response (the connection's handshake first), each read by vortex_io
    results = [vio.StreamReader(s).read_arrow() for s in _vortex_streams(bytes(tap.data))]
    columns = [t.column(0).to_pylist() for t in results if t.num_columns]
    assert ["hello"] in columns and [list(range(50_000))] in columns
    if compress:  # 50,000 consecutive integers: far smaller than 8 bytes each
        assert len(tap.data) < 50_000


def test_a_response_vortex_cannot_carry_is_vgi_rpcs_error_and_the_connection_goes_on() -> None:
    conn, wrapped, thread, _ = _connect()
    with conn as svc:
        with pytest.raises(vgi_rpc.RpcError, match=r"sparse_union.*no Vortex equivalent"):
            svc.union()
        assert svc.echo(value="still here") == "still here"
    wrapped.close()
    thread.join(5)
    assert not thread.is_alive()


def test_the_transport_checks_what_it_wraps() -> None:
    with pytest.raises(TypeError, match="no reader"):
        VortexTransport(object())
    from vgi_rpc.rpc import make_pipe_pair

    a, b = make_pipe_pair()
    t = VortexTransport(a)
    assert not hasattr(t, "shm")  # vgi-rpc would route batches around the wire through it
    t.close()
    b.close()


def test_the_readme_example_runs() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "vgi_rpc_vortex.py")],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "equal to the worker's table: True" in out, out
    ratio = float(out.rsplit("MB (", 1)[1].split("x)")[0])
    assert ratio < 0.25, out  # compressed trades: under a quarter of Arrow IPC's bytes
