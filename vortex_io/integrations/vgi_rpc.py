"""Vortex IPC as vgi-rpc's wire encoding: ``VortexTransport``.

vgi-rpc (``pip install 'vortex-io[vgi-rpc]'``, Python 3.13+) writes and reads Arrow IPC
streams on a transport: an object with a ``reader`` and a ``writer`` (binary streams) and
``close()`` (pipes, subprocesses, Unix and TCP sockets). ``VortexTransport(inner)`` wraps
one, on each end of the connection, so the Arrow IPC that vgi-rpc writes crosses the wire
as Vortex IPC (compressed with ``compress=True``) and is handed back to vgi-rpc as the same
Arrow IPC: exact schemas, batches and their custom metadata, zero-row batches, streams back
to back. Each Arrow stream is one Vortex stream ending with an end marker; the reader reads
exactly what each message needs, so nothing past a stream's end is read before vgi-rpc asks
for it. The transcoding is ``vortex_io.transcode``'s (sans-IO); this module moves bytes,
and answers a batch Vortex cannot carry (a union column) with vgi-rpc's own error batch
(``vgi_rpc.log.Message``, imported only then), so the peer raises an ``RpcError`` and the
connection goes on.

>>> import os, threading, pyarrow as pa
>>> from vortex_io.integrations.vgi_rpc import VortexTransport
>>> class Pipe:  # any object with reader, writer and close() (vgi-rpc's PipeTransport)
...     def __init__(self, r, w): self.reader, self.writer = r, w
...     def close(self): self.reader.close(); self.writer.close()
>>> r1, w1 = os.pipe()
>>> a = VortexTransport(Pipe(open(os.devnull, "rb"), os.fdopen(w1, "wb", buffering=0)))
>>> b = VortexTransport(Pipe(os.fdopen(r1, "rb"), open(os.devnull, "wb")))
>>> t = pa.table({"x": [1, 2, 3]})
>>> with pa.ipc.new_stream(a.writer, t.schema) as w:
...     w.write_batch(t.to_batches()[0], custom_metadata={"method": "add"})
>>> batch, md = pa.ipc.open_stream(b.reader).read_next_batch_with_custom_metadata()
>>> batch.to_pydict(), dict(md)
({'x': [1, 2, 3]}, {b'method': b'add'})
>>> a.close(); b.close()
"""

from __future__ import annotations

import io
from typing import Any

from ..transcode import ArrowToVortex, VortexToArrow

__all__ = ["VortexTransport"]


def _error_batches(error: Exception, schema: Any) -> list[tuple[Any, Any]]:
    """vgi-rpc's answer to a batch that cannot be sent: its zero-row error batch (the
    stream's schema, or none when the schema itself failed), as its server writes one for
    a method that raised. The peer raises it as an ``RpcError``; the stream still ends, so
    the connection stays in step."""
    import pyarrow as pa
    from vgi_rpc.log import Message
    from vgi_rpc.metadata import encode_metadata

    schema = schema if schema is not None else pa.schema([])
    md = encode_metadata(Message.from_exception(error, include_traceback=False).add_to_metadata())
    return [(pa.RecordBatch.from_pylist([], schema=schema), md)]


class _VortexWriter(io.RawIOBase):
    """Takes the Arrow IPC that vgi-rpc writes; writes Vortex IPC to the inner writer."""

    def __init__(self, inner: Any, compress: Any) -> None:
        super().__init__()
        self._inner = inner
        self._enc = ArrowToVortex(compress=compress, on_unsupported=_error_batches)

    def writable(self) -> bool:
        return True

    def write(self, b: Any, /) -> int:
        n = memoryview(b).nbytes
        out = self._enc.send(b)
        if out:
            view = memoryview(out)
            while view.nbytes:
                k = self._inner.write(view)
                if k is None:
                    raise BlockingIOError("the transport's writer is non-blocking")
                view = view[k:]
            self._inner.flush()
        return n

    def flush(self) -> None:
        if not self._inner.closed:
            self._inner.flush()

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
            finally:
                super().close()


class _VortexReader(io.RawIOBase):
    """Hands vgi-rpc Arrow IPC; reads Vortex IPC off the inner reader, exactly as much as
    each message needs."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self._inner = inner
        self._dec = VortexToArrow()
        self._buf = bytearray()
        self._eof = False

    def readable(self) -> bool:
        return True

    def _fill(self, n: int) -> None:
        """Transcode until ``n`` Arrow bytes are buffered or the input ends."""
        dec = self._dec
        while len(self._buf) < n and not self._eof:
            data = self._inner.read(dec.bytes_needed)
            if not data:
                self._eof = True
                self._buf += dec.close()
                break
            self._buf += dec.send(data)

    def read(self, n: int | None = -1, /) -> bytes:
        if n is None or n < 0:
            return self.readall()
        self._fill(n)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def readall(self) -> bytes:
        self._fill(1 << 62)
        out = bytes(self._buf)
        self._buf.clear()
        return out

    def readinto(self, b: Any, /) -> int:
        view = memoryview(b).cast("B")
        data = self.read(view.nbytes)
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
            finally:
                super().close()


class VortexTransport:
    """A vgi-rpc transport that carries Vortex IPC on ``inner`` (any vgi-rpc
    ``RpcTransport``: an object with ``reader``, ``writer`` and ``close()``).

    Wrap both ends of a connection: ``VortexTransport(inner)`` hands vgi-rpc Arrow IPC on
    ``reader`` and takes it on ``writer``, as the inner transport did, while the bytes on
    the wire are Vortex IPC. ``compress=True`` (or a ``vortex_io.CompressOptions``)
    compresses each batch sent; either end reads both. A malformed stream from the peer
    raises a ``vortex_io`` error (message index and byte offset) from vgi-rpc's read; a
    batch that Vortex cannot carry is sent as vgi-rpc's error batch in its place (the rest
    of its stream is dropped), which the peer raises as an ``RpcError``.
    """

    def __init__(self, inner: Any, *, compress: Any = False) -> None:
        for attr in ("reader", "writer", "close"):
            if not hasattr(inner, attr):
                raise TypeError(f"VortexTransport(): inner must be a vgi-rpc transport (with "
                                f"reader, writer and close()); {type(inner).__name__} has no "
                                f"{attr}")
        self.inner = inner
        self.compress = compress
        self._reader = _VortexReader(inner.reader)
        self._writer = _VortexWriter(inner.writer, compress)

    @property
    def reader(self) -> io.RawIOBase:
        """Arrow IPC, read from the Vortex IPC the peer sends."""
        return self._reader

    @property
    def writer(self) -> io.RawIOBase:
        """Takes Arrow IPC; sends it to the peer as Vortex IPC."""
        return self._writer

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()
