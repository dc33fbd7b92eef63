"""Streams over real transports: an OS pipe between two processes, asyncio sockets, a
plain ``socket.socket``, and a file object that hands out one byte per ``read()``.

A reader must yield each batch as soon as its message has arrived (it reads exactly what
the decoder needs), which the handshake tests prove: the writer sends the next batch
only after the reader has acknowledged the previous one, so a reader that waited for
more input would deadlock (and the watchdog would fail the test).
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 60


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < 0.1
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64) + seed * 1_000_000),
        "v": pa.array(rng.normal(size=n), mask=mask),
        "s": pa.array([f"row-{seed}-{i}" for i in range(n)], pa.string()),
    })


def _child(code: str, *, bufsize: int = -1) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=bufsize,
                            env=env, cwd=ROOT)


def _shut(*socks: socket.socket) -> None:
    """Unblock any thread waiting on these sockets (close() alone does not)."""
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Watchdog:
    """Kills a process (or closes sockets) if the test takes too long: a deadlock then
    surfaces as an error instead of a hung test run."""

    def __init__(self, action, seconds: float = TIMEOUT) -> None:
        self.fired = False

        def fire():
            self.fired = True
            action()

        self._t = threading.Timer(seconds, fire)
        self._t.daemon = True

    def __enter__(self) -> Watchdog:
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._t.cancel()
        assert not self.fired, "deadlock: the watchdog fired"


# -- OS pipe between two processes --------------------------------------------------------

PIPE_WRITER = """
    import sys
    import numpy as np, pyarrow as pa
    import vortex_io as vio
    rng = np.random.default_rng(7)
    n = 100_000
    t = pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.normal(size=n),
                  "s": pa.array([str(i) for i in range(n)])})
    with vio.StreamWriter(sys.stdout.buffer, t.schema, metadata={"from": "child"}) as w:
        for i, start in enumerate(range(0, n, 25_000)):
            w.write(t.slice(start, 25_000), metadata={"chunk": str(i)})
        w.write(t.slice(0, 0), metadata={"status": "done"})
"""


@pytest.mark.parametrize("bufsize", [-1, 0], ids=["buffered", "raw"])
def test_pipe_between_processes(bufsize):
    proc = _child(PIPE_WRITER, bufsize=bufsize)
    with Watchdog(proc.kill):
        with vio.StreamReader(proc.stdout) as r:
            assert r.metadata == {b"from": b"child"}
            batches = list(r)
        rc = proc.wait()
    assert rc == 0, proc.stderr.read().decode()
    assert [dict(b.metadata) for b in batches] == (
        [{b"chunk": str(i).encode()} for i in range(4)] + [{b"status": b"done"}])
    assert [b.num_rows for b in batches] == [25_000] * 4 + [0]
    t = pa.Table.from_batches([b.to_arrow() for b in batches])
    # the same table built here independently
    n = 100_000
    rng = np.random.default_rng(7)
    expect = pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.normal(size=n),
                       "s": pa.array([str(i) for i in range(n)])})
    assert t.cast(expect.schema).equals(expect)


HANDSHAKE_WRITER = """
    import sys
    import pyarrow as pa
    import vortex_io as vio
    t = pa.table({"step": pa.array([0], pa.int64())})
    with vio.StreamWriter(sys.stdout.buffer, t.schema) as w:
        for step in range(3):
            w.write(pa.table({"step": pa.array([step] * (step + 1), pa.int64())}),
                    metadata={"step": str(step)})
            w.flush()
            ack = sys.stdin.readline().strip()   # blocks until the reader has the batch
            if ack != f"got {step}":
                sys.exit(f"bad ack {ack!r}")
"""


def test_pipe_reader_yields_each_batch_before_the_next_is_sent():
    # a buffered pipe: its read(n) blocks until n bytes arrive, so a reader asking for
    # more than the message it is decoding would deadlock here
    proc = _child(HANDSHAKE_WRITER)
    seen = []
    with Watchdog(proc.kill):
        with vio.StreamReader(proc.stdout) as r:
            for b in r:
                step = int(b.metadata[b"step"])
                seen.append((step, b.array.field("step").to_pylist()))
                proc.stdin.write(f"got {step}\n".encode())
                proc.stdin.flush()
        rc = proc.wait()
    assert rc == 0, proc.stderr.read().decode()
    assert seen == [(0, [0]), (1, [1, 1]), (2, [2, 2, 2])]


def test_pipe_writer_dies_mid_message():
    code = """
        import sys, io
        import pyarrow as pa
        import vortex_io as vio
        buf = io.BytesIO()
        vio.write_ipc(buf, pa.table({"x": list(range(1000))}), chunk_rows=500, compress=False)
        data = buf.getvalue()
        sys.stdout.buffer.write(data[: len(data) - 100])
        sys.stdout.buffer.flush()
    """
    proc = _child(code)
    rows = []
    with Watchdog(proc.kill):
        with pytest.raises(vio.TruncatedStreamError) as ei:
            with vio.StreamReader(proc.stdout) as r:
                for b in r:
                    rows.append(b.num_rows)
        proc.wait()
    assert rows == [500]  # the complete batch before the cut was delivered
    assert ei.value.message_index == 2 and "inside the body" in str(ei.value)


# -- plain sockets and file objects ------------------------------------------------------


def test_stream_reader_over_a_plain_socket():
    a, b = socket.socketpair()
    tables = [_table(n, i) for i, n in enumerate([1000, 0, 30_000, 7])]

    def send():
        with a, vio.StreamWriter(a, tables[0].schema, metadata={"over": "socket"}) as w:
            for i, t in enumerate(tables):
                w.write(t, metadata={"i": str(i)})

    th = threading.Thread(target=send, daemon=True)
    with Watchdog(lambda: _shut(a, b)):
        th.start()
        with b, vio.StreamReader(b) as r:
            assert r.metadata == {b"over": b"socket"}
            got = list(r)
        th.join()
    assert [int(x.metadata[b"i"]) for x in got] == [0, 1, 2, 3]
    for x, t in zip(got, tables):
        assert x.num_rows == t.num_rows
        assert pa.Table.from_batches([x.to_arrow()]).equals(t)


def test_socket_reader_yields_each_batch_before_the_next_is_sent():
    a, b = socket.socketpair()
    acks = a.makefile("rb")
    errors = []

    def send():
        try:
            with vio.StreamWriter(a, pa.schema([("k", pa.int32())])) as w:
                for k in range(3):
                    w.write(pa.table({"k": pa.array([k], pa.int32())}))
                    if acks.readline() != f"{k}\n".encode():
                        errors.append(k)
        finally:
            acks.close()  # the file object holds the socket open: close both
            a.shutdown(socket.SHUT_WR)
            a.close()

    th = threading.Thread(target=send, daemon=True)
    with Watchdog(lambda: _shut(a, b)):
        th.start()
        seen = []
        with vio.StreamReader(b) as r:
            for batch in r:
                k = batch.array.field("k").to_pylist()[0]
                seen.append(k)
                b.sendall(f"{k}\n".encode())
        th.join()
        b.close()
    assert seen == [0, 1, 2] and errors == []


class OneByteAtATime(io.RawIOBase):
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.calls = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        self.calls += 1
        out = self.data[self.pos : self.pos + min(1, n if n >= 0 else 1)]
        self.pos += len(out)
        return out


def test_reader_fed_one_byte_per_read():
    t = _table(500, 3)
    buf = io.BytesIO()
    vio.write_ipc(buf, t, metadata=[("a", "1"), ("a", "2")], chunk_rows=128, compress=False)
    data = buf.getvalue()
    src = OneByteAtATime(data)
    with vio.StreamReader(src) as r:
        assert r.metadata.get_all("a") == [b"1", b"2"]
        got = r.read_arrow()
    assert got.equals(t)
    assert src.pos == len(data)
    assert src.calls >= len(data)  # it really was one byte per read
    # the same batches as reading from bytes
    with vio.StreamReader(data) as r:
        assert [b.num_rows for b in r] == [128, 128, 128, 116]


# -- asyncio ----------------------------------------------------------------------------

REQ_SCHEMA = pa.schema([("x", pa.int64())])
RESP_SCHEMA = pa.schema([("y", pa.int64())])


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A tiny RPC server: each request batch gets one response batch; metadata carries the
    method and request id; 'ping' requests are metadata only (zero rows)."""
    out = vio.AsyncStreamWriter(writer, RESP_SCHEMA, metadata={"server": "test"})
    async with vio.AsyncStreamReader(reader) as req:
        assert req.metadata == {b"client": b"test"}
        async for batch in req:
            md = batch.metadata
            rid = md[b"request_id"]
            method = md[b"method"]
            if method == b"square":
                xs = np.asarray(batch.array.field("x").to_numpy())
                await out.write(pa.table({"y": xs * xs}), metadata={"request_id": rid, "ok": "1"})
            elif method == b"ping":
                await out.write(pa.table({"y": pa.array([], pa.int64())}),
                                metadata=[("request_id", rid), ("pong", "1"), ("pong", "2")])
            elif method == b"bye":
                await out.write(RESP_SCHEMA.empty_table(), metadata={"request_id": rid})
                break
            else:
                await out.write(RESP_SCHEMA.empty_table(),
                                metadata={"request_id": rid, "error": b"no such method " + method})
    await out.close()


async def _client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> list:
    req = vio.AsyncStreamWriter(writer, REQ_SCHEMA, metadata={"client": "test"})
    resp = vio.AsyncStreamReader(reader)
    log = []
    calls = [("square", [1, 2, 3]), ("ping", []), ("nope", []), ("square", list(range(10_000))),
             ("ping", []), ("bye", [])]
    for i, (method, xs) in enumerate(calls):
        await req.write(pa.table({"x": pa.array(xs, pa.int64())}),
                        metadata={"method": method, "request_id": str(i)})
        if i == 0:
            await resp.open()
            assert resp.metadata == {b"server": b"test"}
        # the response arrives before the next request is sent
        b = await asyncio.wait_for(resp.read_next_batch(), TIMEOUT)
        assert b is not None
        log.append((list(b.metadata.items()), b.array.field("y").to_pylist()))
    assert await resp.read_next_batch() is None  # the server closed its stream
    await req.close()
    return log


def _check_log(log) -> None:
    assert log[0] == ([(b"request_id", b"0"), (b"ok", b"1")], [1, 4, 9])
    assert log[1] == ([(b"request_id", b"1"), (b"pong", b"1"), (b"pong", b"2")], [])
    assert log[2] == ([(b"request_id", b"2"), (b"error", b"no such method nope")], [])
    assert log[3][0] == [(b"request_id", b"3"), (b"ok", b"1")]
    assert log[3][1] == [x * x for x in range(10_000)]
    assert log[4][1] == [] and dict(log[4][0])[b"request_id"] == b"4"
    assert log[5] == ([(b"request_id", b"5")], [])


def test_asyncio_tcp_request_response():
    async def main():
        server = await asyncio.start_server(_serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            return await asyncio.wait_for(_client(reader, writer), TIMEOUT)

    _check_log(asyncio.run(main()))


def test_asyncio_socketpair_request_response():
    async def main():
        s1, s2 = socket.socketpair()
        r1, w1 = await asyncio.open_connection(sock=s1)
        r2, w2 = await asyncio.open_connection(sock=s2)
        server = asyncio.create_task(_serve(r2, w2))
        log = await asyncio.wait_for(_client(r1, w1), TIMEOUT)
        await asyncio.wait_for(server, TIMEOUT)
        return log

    _check_log(asyncio.run(main()))


def test_asyncio_metadata_only_stream_and_truncation():
    async def main():
        s1, s2 = socket.socketpair()
        _, w1 = await asyncio.open_connection(sock=s1)
        r2, _ = await asyncio.open_connection(sock=s2)
        w = vio.AsyncStreamWriter(w1, pa.schema([("v", pa.float64())]))
        for i in range(5):
            n = await w.write(pa.table({"v": pa.array([], pa.float64())}),
                              metadata={"heartbeat": str(i)})
            assert n == 1
        await w.close()
        async with vio.AsyncStreamReader(r2) as r:
            got = [(b.num_rows, dict(b.metadata)) async for b in r]
        assert got == [(0, {b"heartbeat": str(i).encode()}) for i in range(5)]

        # a stream cut inside a message raises TruncatedStreamError
        buf = io.BytesIO()
        vio.write_ipc(buf, pa.table({"v": [1.0, 2.0]}), compress=False)
        data = buf.getvalue()[:-3]
        s3, s4 = socket.socketpair()
        _, w3 = await asyncio.open_connection(sock=s3)
        r4, _ = await asyncio.open_connection(sock=s4)
        w3.write(data)
        await w3.drain()
        w3.close()
        with pytest.raises(vio.TruncatedStreamError) as ei:
            async with vio.AsyncStreamReader(r4) as r:
                async for _ in r:
                    pass
        assert ei.value.offset == len(data)

    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


class AsyncDribble:
    """An async source with only ``read(n)``, handing out at most ``k`` bytes per call
    (short reads are normal there; only an empty read means the end)."""

    def __init__(self, data: bytes, k: int) -> None:
        self.data = data
        self.k = k
        self.pos = 0

    async def read(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + min(n, self.k)]
        self.pos += len(out)
        return out


@pytest.mark.parametrize("k", [1, 3, 1000])
def test_async_reader_over_a_read_only_source_with_short_reads(k):
    t = _table(300, 5)
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=False, chunk_rows=100, metadata={"k": str(k)})
    data = buf.getvalue()

    async def read(d: bytes):
        async with vio.AsyncStreamReader(AsyncDribble(d, k)) as r:
            assert r.metadata == {b"k": str(k).encode()}
            return [b.to_arrow() async for b in r]

    batches = asyncio.run(read(data))
    assert [b.num_rows for b in batches] == [100, 100, 100]
    assert pa.Table.from_batches(batches).equals(t)
    with pytest.raises(vio.TruncatedStreamError) as ei:
        asyncio.run(read(data[:-7]))
    assert ei.value.offset == len(data) - 7


def test_writer_finishes_short_writes_of_raw_sinks():
    """A raw sink may accept fewer bytes than offered; the writer must finish each part."""
    import io

    import pyarrow as pa

    class ThreeBytesAtATime(io.RawIOBase):
        def __init__(self) -> None:
            self.buf = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b) -> int:
            chunk = bytes(memoryview(b)[:3])
            self.buf += chunk
            return len(chunk)

    sink = ThreeBytesAtATime()
    t = pa.table({"x": list(range(1000)), "s": ["a", "bb"] * 500})
    with vio.StreamWriter(sink, t.schema, metadata={"k": "v"}) as w:
        w.write(t, metadata={"batch": "0"})
    with vio.StreamReader(bytes(sink.buf)) as r:
        assert dict(r.metadata) == {b"k": b"v"}
        assert r.read_arrow().equals(t)


def test_async_writer_compresses_with_one_session_per_stream():
    import asyncio

    import numpy as np
    import pyarrow as pa

    async def main():
        got = []

        async def handle(reader, writer):
            async with vio.AsyncStreamReader(reader) as r:
                async for b in r:
                    got.append((b.array.field("x").encoding, b.array.field("s").encoding,
                                b.to_arrow()))
            writer.close()

        srv = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        _, w = await asyncio.open_connection("127.0.0.1", port)
        t = pa.table({"x": np.arange(10_000) * 3, "s": ["a", "b"] * 5_000})
        aw = vio.AsyncStreamWriter(w, t.schema, compress=True, encodings={"s": "vortex.dict"})
        await aw.write(t)
        await aw.write(t)
        await aw.close()
        for _ in range(100):
            if len(got) == 2:
                break
            await asyncio.sleep(0.05)
        srv.close()
        return t, aw, got

    t, aw, got = asyncio.run(main())
    assert [(x, s) for x, s, _ in got] == [("vortex.sequence", "vortex.dict")] * 2
    assert all(rb.to_pydict() == t.to_pydict() for _, _, rb in got)
    assert aw._session.replays >= 1  # the second batch replayed the first one's plan
