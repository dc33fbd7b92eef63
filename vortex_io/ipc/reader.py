"""Stream readers: thin loops that move bytes from a source into ``MessageDecoder``.

``StreamReader`` reads paths (memory-mapped), bytes-like objects (zero-copy) and binary
file objects (pipes and sockets included: it reads exactly what the decoder needs, so it
never blocks waiting for a message that has not been sent). ``AsyncStreamReader`` does
the same over asyncio streams.
"""

from __future__ import annotations

import mmap
import os
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

from .. import _native_glue as ng
from .. import dtype as dt
from ..array import Array
from ..errors import MalformedStreamError, VortexIPCError
from ..limits import DEFAULT_LIMITS, ReaderLimits
from ..metadata import Metadata
from .framing import MessageDecoder
from .messages import HeaderPlans, Message
from .schema import MessageType

__all__ = ["Batch", "StreamReader", "AsyncStreamReader", "read_ipc"]


class Batch:
    """One Array message of a stream: ``array`` (lazily decoded) and its ``metadata``."""

    __slots__ = ("array", "index", "metadata", "offset")

    def __init__(self, array: Array, metadata: Metadata, index: int, offset: int) -> None:
        self.array = array
        self.metadata = metadata
        self.index = index
        self.offset = offset

    @property
    def num_rows(self) -> int:
        return len(self.array)

    def to_arrow(self, *, string_view: bool | None = None) -> Any:
        """A ``pyarrow.RecordBatch`` (struct streams, batch metadata attached as the
        schema's metadata) or a ``pyarrow.Array``. ``string_view=True`` decodes strings
        to Arrow ``string_view``."""
        import pyarrow as pa

        a = self.array.to_arrow(string_view=string_view)
        if isinstance(self.array.dtype, dt.Struct) and not self.array.dtype.nullable:
            if isinstance(a, pa.ChunkedArray):
                a = a.combine_chunks()
            rb = pa.RecordBatch.from_struct_array(a)
            schema = pa.schema([pa.field(f.name, f.type, f.nullable) for f in a.type],
                               metadata=self.metadata.to_arrow() if self.metadata else None)
            return pa.RecordBatch.from_arrays(rb.columns, schema=schema)
        return a

    def __repr__(self) -> str:
        md = f", metadata={self.metadata!r}" if self.metadata else ""
        return f"Batch(index={self.index}, rows={len(self.array)}, encoding={self.array.encoding}{md})"


def _decode_threads(threads: int | None) -> int:
    """How many threads ``read_arrow`` decodes on (``None``: pyarrow's CPU count, <= 8)."""
    if threads is None:
        import pyarrow as pa

        return max(1, min(8, pa.cpu_count()))
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer or None, not {threads!r}")
    return threads


class _Done:
    """A finished 'future' (the single-threaded path runs tasks on the spot)."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self) -> Any:
        return self._value


#: batches with fewer rows decode on the calling thread even when ``threads`` > 1
THREAD_MIN_ROWS = 1 << 18

#: the native core decodes up to this many messages (or bytes of bodies) in one call
NATIVE_WINDOW_MESSAGES = 64
NATIVE_WINDOW_BYTES = 64 << 20


def _canonical_tree(a: Array) -> bool:
    """Whether every node under ``a`` is canonical (nothing to decompress)."""
    return a.is_canonical and all(_canonical_tree(c) for c in a.children)


def _runner(pool: Any) -> Any:
    """run(fn, inline=False) -> object with .result(): on ``pool`` in a copy of the caller's
    context (string_view output and decode meters are context variables), or right away
    when there is no pool or ``inline``."""
    import contextvars

    def run(fn: Any, inline: bool = False) -> Any:
        if pool is None or inline:
            return _Done(fn())
        return pool.submit(contextvars.copy_context().run, fn)

    return run


def _check_stream_message(msg: Message) -> None:
    if msg.type == MessageType.BUFFER:
        raise MalformedStreamError("a Buffer message is not allowed in an array stream",
                                   message_index=msg.index, offset=msg.offset)
    if msg.type == MessageType.DTYPE:
        raise MalformedStreamError("a second DType message in the stream",
                                   message_index=msg.index, offset=msg.offset)


def _stream_header(first: Message | None, limits: ReaderLimits) -> tuple[dt.DType, Metadata]:
    """(dtype, stream metadata) from a stream's first message, which must be a DType message."""
    if first is None:
        raise MalformedStreamError("the stream is empty: it has no DType message", offset=0)
    if first.type != MessageType.DTYPE:
        raise MalformedStreamError(
            f"a stream must start with a DType message, not {first.type.name}",
            message_index=first.index, offset=first.offset)
    return first.dtype(limits), first.metadata


class _Source:
    """Bytes in, for the decoder: whole buffers at once, or exact reads from a file."""

    def __init__(self, source: Any) -> None:
        self.name: str | None = None
        self.buffer: Any = None
        self.file: Any = None
        self._owned: list[Any] = []
        if isinstance(source, (str, os.PathLike)):
            self.name = os.fspath(source)
            f = open(self.name, "rb")
            self._owned.append(f)
            size = os.fstat(f.fileno()).st_size
            if size:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                self._owned.append(mm)
                self.buffer = mm
            else:
                self.buffer = b""
        elif isinstance(source, (bytes, bytearray, memoryview)) or (
            hasattr(source, "__buffer__") and not hasattr(source, "read")
        ):
            self.buffer = source
        elif isinstance(source, socket.socket):
            self.file = source.makefile("rb", buffering=0)
            self._owned.append(self.file)
        elif hasattr(source, "read"):
            self.file = source
            self.name = getattr(source, "name", None) if isinstance(getattr(source, "name", None), str) else None
        else:
            try:
                self.buffer = memoryview(source)
            except TypeError:
                raise TypeError(
                    f"cannot read a Vortex IPC stream from {type(source).__name__}: "
                    "give a path, a bytes-like object or a binary file object"
                ) from None

    def pump(self, dec: MessageDecoder) -> bool:
        """Feed the decoder; False at end of input."""
        if self.buffer is not None:
            buf, self.buffer = self.buffer, None
            dec.feed(buf)
            return True
        if self.file is None:
            return False
        need = max(dec.bytes_needed, 1)
        data = self.file.read(need)
        if not data:
            return False
        dec.feed(data)
        return True

    def close(self) -> None:
        for o in reversed(self._owned):
            try:
                o.close()
            except BufferError:
                pass  # arrays still view the mapping; it is released when they are
        self._owned.clear()


def _lazy_field(arr: Array, name: str) -> Array:
    """A lazily built field of a message's root struct, failing as the whole message's eager
    build does (``messages._located``): malformed input whose Python checks raise a plain
    exception is a MalformedStreamError."""
    import struct

    try:
        return arr.field(name)
    except (IndexError, KeyError, struct.error, OverflowError, TypeError, ValueError,
            MemoryError, ZeroDivisionError) as e:
        raise MalformedStreamError(
            f"array message is inconsistent: {type(e).__name__}: {e}") from e


class StreamReader:
    """Reads a Vortex IPC stream: the DType message, then one ``Batch`` per Array message.

    ``source``: a path (memory-mapped), a bytes-like object, or a binary file object
    (pipes and sockets included). Arrays are decoded lazily; ``limits`` bounds what the
    stream may make the reader allocate.

    >>> import io, vortex_io as vio
    >>> buf = io.BytesIO()
    >>> with vio.StreamWriter(buf, vio.dtype.int64(True), metadata={"app": "demo"}) as w:
    ...     _ = w.write(vio.array([1, 2, 3]), metadata={"batch": "0"})
    >>> with vio.StreamReader(buf.getvalue()) as r:
    ...     print(r.dtype, dict(r.metadata))
    ...     for b in r:
    ...         print(b.array.to_pylist(), dict(b.metadata))
    i64? {b'app': b'demo'}
    [1, 2, 3] {b'batch': b'0'}
    """

    def __init__(self, source: Any, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or DEFAULT_LIMITS
        self._src = _Source(source)
        self._dec = MessageDecoder(limits=self.limits)
        self._plans = HeaderPlans()
        #: build struct fields on first use (a scan sets it: it locates errors itself)
        self._lazy_fields = False
        self._done = False
        try:
            self.dtype: dt.DType
            self.metadata: Metadata
            self.dtype, self.metadata = _stream_header(self._next_message(), self.limits)
        except VortexIPCError as e:
            self._src.close()
            raise e.locate(source=self._src.name) from None
        except BaseException:
            self._src.close()
            raise

    def _next_message(self) -> Message | None:
        dec = self._dec
        while True:
            m = dec.next_message()
            if m is not None:
                return m
            if not self._src.pump(dec):
                dec.end_of_input()
                return None

    @property
    def schema(self) -> Any:
        """The Arrow schema batches convert to (struct streams: one field per column)."""
        from ..arrow import to_arrow_schema

        return to_arrow_schema(self.dtype).with_metadata(
            self.metadata.to_arrow() if self.metadata else None)

    def read_next_batch(self) -> Batch:
        """The next batch; ``StopIteration`` at the end of the stream."""
        if self._done:
            raise StopIteration
        try:
            m = self._next_message()
            if m is None:
                self._done = True
                self._src.close()
                raise StopIteration
            _check_stream_message(m)
            return Batch(m.array(self.dtype, self.limits, self._plans, self._lazy_fields), m.metadata,
                         m.index, m.offset)
        except VortexIPCError as e:
            self._done = True
            raise e.locate(source=self._src.name) from None

    def __iter__(self) -> Iterator[Batch]:
        while True:
            try:
                yield self.read_next_batch()
            except StopIteration:
                return

    def read_all(self) -> Array:
        """Every remaining batch as one array (``vortex.chunked`` when there are several)."""
        from ..encodings.chunked import chunked_array

        chunks = [b.array for b in self]
        return chunks[0] if len(chunks) == 1 else chunked_array(chunks, self.dtype)

    def read_arrow(self, *, string_view: bool = False, threads: int | None = None) -> Any:
        """Every remaining batch as a ``pyarrow.Table`` (struct streams) or ChunkedArray.

        ``string_view=True`` decodes strings to Arrow ``string_view`` (what Polars uses
        natively; dictionary-encoded strings then decode without copying their bytes).

        ``threads``: decode on this many threads (messages are still read and their headers
        parsed in order on the calling thread; the compressed columns of each batch of at
        least ``THREAD_MIN_ROWS`` rows are decoded on a pool, where numpy and pyarrow
        release the GIL; smaller batches gain nothing from it). ``None`` follows
        ``pyarrow.cpu_count()`` (capped at 8), so ``pa.set_cpu_count(1)`` makes every read
        single-threaded; ``1`` decodes on the calling thread. The result is the same
        whatever the count.
        """
        from ..arrow import string_view_output

        if ng.enabled():
            return self._read_arrow_native(string_view, ng.decode_threads(threads))
        n = _decode_threads(threads)
        with string_view_output(string_view):
            if n <= 1:
                return self._read_arrow(None)
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=n, thread_name_prefix="vortex_io-decode") as ex:
                return self._read_arrow(ex)

    def _native_windows(self) -> Iterator[tuple[list[Message], VortexIPCError | None]]:
        """The remaining Array messages in windows for the native core (up to
        ``NATIVE_WINDOW`` messages or bytes of bodies), each with the error that ended the
        stream after it, if any (errors come after the batches before them)."""
        msgs: list[Message] = []
        size = 0
        while True:
            try:
                m = None if self._done else self._next_message()
                if m is None:
                    self._done = True
                    self._src.close()
                else:
                    _check_stream_message(m)
            except VortexIPCError as e:
                self._done = True
                yield msgs, e.locate(source=self._src.name)
                return
            if m is None:
                if msgs:
                    yield msgs, None
                return
            msgs.append(m)
            size += m.body.nbytes
            if len(msgs) >= NATIVE_WINDOW_MESSAGES or size >= NATIVE_WINDOW_BYTES:
                yield msgs, None
                msgs, size = [], 0

    def _native_batches(self, fields: list[int] | None, string_view: bool, threads: int
                        ) -> Iterator[tuple[Message, list[Any]]]:
        """(message, its decoded columns as Arrow arrays) for every remaining message:
        decoded by the native core on ``threads`` threads, a window of messages at a time;
        columns it hands back (encodings only Python knows) decoded here. ``fields``: the
        root struct's fields (None: each message's whole array, one column)."""
        import pyarrow as pa

        from ..arrow import dtype_to_arrow, string_view_output

        d = self.dtype
        s = ng.stream(d, self.limits)
        with string_view_output(string_view):
            if fields is None:
                types = [dtype_to_arrow(d)]
            else:
                types = [dtype_to_arrow(d.dtypes[i]) for i in fields]  # type: ignore[attr-defined]
        caps = [t.__arrow_c_schema__ for t in types]
        imp = pa.Array._import_from_c_capsule
        for msgs, err in self._native_windows():
            if msgs:
                res = s.decode([(m.body, m.header.row_count, m.header.encodings,
                                 ng.known_flags(m.header.encodings)) for m in msgs],
                               fields, string_view, threads)
                for m, r in zip(msgs, res):
                    if r[0] == "err":
                        self._done = True
                        self._src.close()
                        raise ng.error_of(r[1], r[2]).locate(
                            message_index=m.index, offset=m.offset, source=self._src.name)
                    cols = r[1]
                    out = [None if c is None else imp(cap(), c) for c, cap in zip(cols, caps)]
                    if any(c is None for c in out):
                        out = self._python_columns(m, fields, out, string_view)
                    yield m, out
            if err is not None:
                raise err

    def _python_columns(self, m: Message, fields: list[int] | None, out: list[Any],
                        string_view: bool) -> list[Any]:
        """The columns the native core left to Python (subtrees of encodings it does not
        know), decoded by the Python implementation."""
        import pyarrow as pa

        from ..arrow import string_view_output

        try:
            with string_view_output(string_view):
                arr = m.array(self.dtype, self.limits, self._plans, lazy=fields is not None)
                for j, c in enumerate(out):
                    if c is not None:
                        continue
                    ng.handed_back(f"column {j} of message {m.index} ({m.header.encodings})")
                    if fields is None:
                        a = arr.to_arrow()
                    else:
                        a = _lazy_field(arr, self.dtype.names[fields[j]]).to_arrow()  # type: ignore[attr-defined]
                    if isinstance(a, pa.ChunkedArray):
                        a = a.combine_chunks()
                    out[j] = a
        except VortexIPCError as e:
            self._done = True
            self._src.close()
            raise e.locate(message_index=m.index, offset=m.offset, source=self._src.name) from None
        return out

    def _read_arrow_native(self, string_view: bool, threads: int) -> Any:
        import pyarrow as pa

        from ..arrow import string_view_output

        d = self.dtype
        with string_view_output(string_view):
            schema = self.schema
            dtype_type = d.to_arrow()
        table = isinstance(d, dt.Struct) and not d.nullable
        fields = list(range(len(d.dtypes))) if table and d.names else None  # type: ignore[attr-defined]
        if table and fields is None:  # a struct of no columns: rows only
            rows = []
            for b in self:
                rows.append(pa.RecordBatch.from_struct_array(
                    pa.StructArray.from_arrays([], names=[]).slice(0, 0)) if len(b.array) == 0
                    else b.to_arrow())
            return pa.Table.from_batches(rows, schema=schema)
        cols: list[list[Any]] = [[] for _ in (fields or [0])]
        for _, out in self._native_batches(fields, string_view, threads):
            for col, a in zip(cols, out):
                col.append(a)
        if fields is None:
            return pa.chunked_array(cols[0], type=dtype_type)
        return pa.Table.from_arrays(
            [pa.chunked_array(c, type=f.type) for c, f in zip(cols, schema)], schema=schema)

    def _read_arrow(self, pool: Any) -> Any:
        import pyarrow as pa

        run = _runner(pool)
        if isinstance(self.dtype, dt.Struct) and not self.dtype.nullable and self.dtype.names:
            # columns straight from each batch's fields: no per-batch StructArray/RecordBatch
            schema = self.schema
            cols: list[list[Any]] = [[] for _ in self.dtype.names]
            pending = []
            for b in self:
                arr = b.array
                if arr.encoding == "vortex.struct" and len(arr.children) == len(arr.dtype.dtypes):
                    # canonical columns are zero-copy views, and small batches decode in
                    # many short numpy calls that contend for the GIL: on a pool both cost
                    # more than they gain (measured: 64Ki-row batches 1.0-1.3x slower on 2
                    # threads, 1Mi-row batches 1.1-1.2x faster)
                    small = len(arr) < THREAD_MIN_ROWS
                    pending.append([run(c.to_arrow, small or _canonical_tree(c))
                                    for c in arr.children])
                else:
                    pending.append(run(lambda b=b: b.to_arrow().columns,
                                       len(arr) < THREAD_MIN_ROWS))
            for p in pending:
                fields = [f.result() for f in p] if isinstance(p, list) else p.result()
                for col, f in zip(cols, fields):
                    col.extend(f.chunks if isinstance(f, pa.ChunkedArray) else (f,))
            return pa.Table.from_arrays(
                [pa.chunked_array([c if c.type == fld.type else c.cast(fld.type) for c in col],
                                  type=fld.type) for col, fld in zip(cols, schema)],
                schema=schema)
        batches = [f.result() for f in [run(b.to_arrow, len(b.array) < THREAD_MIN_ROWS)
                                        for b in self]]
        if isinstance(self.dtype, dt.Struct) and not self.dtype.nullable:
            return pa.Table.from_batches(batches, schema=self.schema)
        return pa.chunked_array(batches, type=self.dtype.to_arrow())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """Export the remaining batches as an Arrow C stream (struct streams)."""
        import pyarrow as pa

        if not isinstance(self.dtype, dt.Struct) or self.dtype.nullable:
            raise TypeError("only streams of a non-nullable struct dtype export as record batches")
        schema = self.schema
        gen = (pa.RecordBatch.from_arrays(b.to_arrow().columns, schema=schema) for b in self)
        return pa.RecordBatchReader.from_batches(schema, gen).__arrow_c_stream__(requested_schema)

    def close(self) -> None:
        self._done = True
        self._src.close()

    def __enter__(self) -> StreamReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _repr_html_(self) -> str:
        import html

        return (f"<b>vortex_io.StreamReader</b> dtype <code>{html.escape(repr(self.dtype))}</code>"
                f", metadata {html.escape(repr(dict(self.metadata)))}")

    def __repr__(self) -> str:
        return f"StreamReader(dtype={self.dtype!r}, metadata={self.metadata!r})"


def read_ipc(source: Any, *, limits: ReaderLimits | None = None) -> Array:
    """Read a whole stream into one array (all chunks).

    >>> import vortex_io as vio
    >>> import io
    >>> buf = io.BytesIO()
    >>> _ = vio.write_ipc(buf, vio.array([1.5, 2.5]))
    >>> vio.read_ipc(buf.getvalue()).to_pylist()
    [1.5, 2.5]
    """
    with StreamReader(source, limits=limits) as r:
        return r.read_all()


class AsyncStreamReader:
    """Reads a stream from an ``asyncio.StreamReader`` (or anything with ``async
    readexactly(n)`` or ``async read(n)``).

    ``async with AsyncStreamReader(stream) as r:`` reads the DType message; then
    ``async for batch in r`` yields ``Batch`` objects.
    """

    def __init__(self, stream: Any, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or DEFAULT_LIMITS
        self._stream = stream
        self._dec = MessageDecoder(limits=self.limits)
        self._plans = HeaderPlans()
        #: build struct fields on first use (a scan sets it: it locates errors itself)
        self._lazy_fields = False
        self._done = False
        self._eof = False
        self.dtype: dt.DType | None = None
        self.metadata: Metadata = Metadata()

    async def _read_some(self, n: int) -> tuple[bytes, bool]:
        """Up to ``n`` bytes, and whether the input has ended. ``readexactly`` comes up
        short only at end of input; ``read`` may return fewer bytes any time (empty: end)."""
        import asyncio

        s = self._stream
        if hasattr(s, "readexactly"):
            try:
                return await s.readexactly(n), False
            except asyncio.IncompleteReadError as e:
                return e.partial, True
        data = await s.read(n)
        return data, not data

    async def _next_message(self) -> Message | None:
        dec = self._dec
        while True:
            m = dec.next_message()
            if m is not None or self._eof:
                return m
            data, self._eof = await self._read_some(max(dec.bytes_needed, 1))
            if data:
                dec.feed(data)
            if self._eof:
                # complete messages still buffered come out first; a cut one raises
                dec.end_of_input()

    async def open(self) -> AsyncStreamReader:
        """Read the DType message (done by ``async with``)."""
        if self.dtype is not None:
            return self
        self.dtype, self.metadata = _stream_header(await self._next_message(), self.limits)
        return self

    async def read_next_batch(self) -> Batch | None:
        """The next batch, or None at the end of the stream."""
        await self.open()
        if self._done:
            return None
        try:
            m = await self._next_message()
        except VortexIPCError:
            self._done = True
            raise
        if m is None:
            self._done = True
            return None
        _check_stream_message(m)
        assert self.dtype is not None
        return Batch(m.array(self.dtype, self.limits, self._plans, self._lazy_fields), m.metadata,
                         m.index, m.offset)

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[Batch]:
        while (b := await self.read_next_batch()) is not None:
            yield b

    async def read_all(self) -> Array:
        from ..encodings.chunked import chunked_array

        chunks = [b.array async for b in self]
        assert self.dtype is not None
        return chunks[0] if len(chunks) == 1 else chunked_array(chunks, self.dtype)

    async def __aenter__(self) -> AsyncStreamReader:
        return await self.open()

    async def __aexit__(self, *exc: Any) -> None:
        self._done = True


