"""Stream writers: ``StreamWriter`` (files, pipes, sockets), ``AsyncStreamWriter``
(asyncio), and the one-shot ``write_ipc``.

The DType message is written when the writer is created; each ``write`` writes one Array
message per chunk of its data. Closing a writer mid-stream leaves whole messages only.
"""

from __future__ import annotations

import io
import os
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .. import dtype as dt
from .._array import Array
from .._check import check_int, check_metadata, check_type, describe
from .._metadata import Metadata, MetadataLike
from .framing import MessageEncoder

__all__ = ["StreamWriter", "AsyncStreamWriter", "write_ipc", "to_vortex_chunks", "coerce_dtype"]

MAX_ROWS = 2**32 - 1


def coerce_dtype(d: Any, func: str = "StreamWriter") -> dt.DType:
    """A Vortex dtype from a DType, an Arrow schema, type or field (``func``: the caller,
    for the ``TypeError`` any other value raises)."""
    if isinstance(d, dt.DType):
        return d
    import pyarrow as pa

    if not isinstance(d, (pa.Schema, pa.Field, pa.DataType)):
        raise TypeError(f"{func}(): dtype must be a vortex_io DType or an Arrow schema, field "
                        f"or type, not {describe(d)}")
    from .._arrow import dtype_from_arrow

    return dtype_from_arrow(d)


def _schema_pairs(d: Any) -> list[tuple[bytes, bytes]]:
    """The reserved stream metadata that keeps the exact Arrow schema ``d`` (an Arrow
    schema, field or type a writer was given), when its dtype would not read back as it."""
    if isinstance(d, dt.DType):
        return []
    from .._arrow_schema import SCHEMA_KEY, ArrowLayout

    layout = ArrowLayout.for_schema(d)
    return [] if layout is None else [(SCHEMA_KEY, layout.value())]


#: Arrow schema (serialized) -> its dtype and reserved pairs: RPC streams repeat a few schemas
_SCHEMA_CACHE: dict[bytes, tuple[dt.DType, list[tuple[bytes, bytes]]]] = {}
_SCHEMA_CACHE_SIZE = 256


def _stream_dtype(d: Any, func: str) -> tuple[dt.DType, list[tuple[bytes, bytes]]]:
    """``coerce_dtype(d)`` and ``_schema_pairs(d)``, remembered for Arrow schemas."""
    import pyarrow as pa

    if not isinstance(d, pa.Schema):
        return coerce_dtype(d, func), _schema_pairs(d)
    key = d.serialize().to_pybytes()
    hit = _SCHEMA_CACHE.get(key)
    if hit is None:
        hit = coerce_dtype(d, func), _schema_pairs(d)
        if len(_SCHEMA_CACHE) >= _SCHEMA_CACHE_SIZE:
            _SCHEMA_CACHE.clear()
        _SCHEMA_CACHE[key] = hit
    return hit[0], list(hit[1])


#: what ``write_ipc`` and ``StreamWriter.write`` accept as data
DATA_ACCEPTED = ("a vortex_io.Array, Arrow data (Table, RecordBatch, Array, ChunkedArray, "
                 "RecordBatchReader), a mapping of column names to columns, a pandas or Polars "
                 "DataFrame, a numpy array, a list, or an object exporting the Arrow PyCapsule "
                 "interface (__arrow_c_stream__ / __arrow_c_array__)")


def as_arrow_data(func: str, data: Any) -> Any:
    """``data`` as a ``vortex_io.Array`` or Arrow data (Table, RecordBatch, Array,
    ChunkedArray, RecordBatchReader): what ``pa.table`` / ``pa.array`` accept is converted
    (mappings of columns, pandas and Polars frames, numpy arrays, lists, Arrow PyCapsule
    producers); anything else raises ``TypeError`` naming ``func``'s ``data``."""
    import numpy as np
    import pyarrow as pa

    if isinstance(data, (Array, pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch,
                         pa.RecordBatchReader)):
        return data
    if isinstance(data, (np.ndarray, list, tuple)):
        return pa.array(data)
    if isinstance(data, Mapping):
        return pa.table(dict(data))
    mod = type(data).__module__ or ""
    if mod.startswith("pandas"):
        if hasattr(data, "columns"):
            return pa.Table.from_pandas(data)
        return pa.array(data)  # a Series (or an Index)
    if hasattr(data, "__arrow_c_stream__"):
        # record batches (a frame, a query result) or arrays (a Polars Series)
        if hasattr(data, "__arrow_c_schema__"):
            t = pa.DataType._import_from_c_capsule(data.__arrow_c_schema__())
            if not pa.types.is_struct(t):
                return pa.chunked_array(data)
        try:
            return pa.RecordBatchReader.from_stream(data)
        except pa.ArrowInvalid:  # a stream of arrays that are not record batches
            return pa.chunked_array(data)
    if hasattr(data, "__arrow_c_array__"):
        return pa.array(data)
    if hasattr(data, "__dataframe__"):
        return pa.table(data)
    raise TypeError(f"{func}(): data must be {DATA_ACCEPTED}; not {describe(data)}")


def _arrow_chunks(data: Any) -> Iterator[Any]:
    """Arrow arrays / record batches making up ``data`` (normalized by ``as_arrow_data``)."""
    import pyarrow as pa

    if isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.ChunkedArray):
        yield from data.chunks
    elif isinstance(data, (pa.RecordBatch, pa.Array)):
        yield data
    else:
        yield from data


def to_vortex_chunks(data: Any, dtype: dt.DType) -> Iterator[Array]:
    """``data`` as Vortex arrays of exactly ``dtype``, each at most 2**32-1 rows."""
    from .._arrow import from_arrow

    if isinstance(data, Array):
        if data.dtype != dtype:
            raise TypeError(f"array of dtype {data.dtype!r} written to a stream of {dtype!r}")
        if data.encoding == "vortex.chunked":
            yield from (c for c in data.children[1:])
        else:
            yield data
        return
    for chunk in _arrow_chunks(as_arrow_data("write", data)):
        for start in range(0, max(len(chunk), 1), MAX_ROWS):
            part = chunk.slice(start, MAX_ROWS) if len(chunk) > MAX_ROWS else chunk
            yield from_arrow(part, dtype=dtype)


class _Sink:
    def __init__(self, sink: Any, func: str = "StreamWriter") -> None:
        self._owned = None
        #: writes a part, returns how many bytes it wrote (None: ``socket.sendall``, all)
        self._write: Callable[[memoryview], int | None]
        if isinstance(sink, io.TextIOBase):
            raise TypeError(f"{func}(): sink is a text file: open it in binary mode ('wb'), "
                            "or give sys.stdout.buffer rather than sys.stdout")
        if isinstance(sink, (str, os.PathLike)):
            self._owned = open(os.fspath(sink), "wb")
            self._write = self._owned.write
        elif isinstance(sink, socket.socket):
            self._write = sink.sendall
        elif hasattr(sink, "write"):
            self._write = sink.write
            self._flush = getattr(sink, "flush", None)
        else:
            raise TypeError(f"{func}(): sink must be a path, a binary file object or a socket, "
                            f"not {describe(sink)}")
        self._flush = getattr(self._owned or sink, "flush", None)

    def write(self, parts: list[Any]) -> None:
        w = self._write
        for p in parts:
            mv = memoryview(p).cast("B")
            n = w(mv)
            # raw (unbuffered) files and pipes may write less than asked: finish the part
            while n is not None and n < len(mv):
                mv = mv[n:]
                n = w(mv)

    def flush(self) -> None:
        if self._flush is not None:
            self._flush()

    def close(self) -> None:
        self.flush()
        if self._owned is not None:
            self._owned.close()


class _Compressing:
    """What both writers do to data before sending it: split it into chunks of the stream's
    dtype, compress each (``compress``: a bool or the ``CompressOptions`` to use) with one
    ``CompressSession`` per stream, so later chunks replay the encodings chosen for earlier
    ones, apply forced ``encodings``, and frame it."""

    dtype: dt.DType
    _enc: MessageEncoder

    def _init_compression(self, compress: Any, encodings: Mapping[str, str] | None,
                          func: str = "StreamWriter") -> None:
        from .._compress import CompressOptions

        check_type(func, "compress", compress, (bool, CompressOptions),
                   "a bool or a vortex_io.CompressOptions")
        check_type(func, "encodings", encodings, (Mapping, type(None)),
                   "a mapping of column names to an encoding ID or a list of IDs, or None")
        self._options = None if isinstance(compress, bool) else compress
        self._min_batch_bytes = (self._options or CompressOptions()).min_batch_bytes
        self.compress = bool(compress) or bool(encodings)
        self.encodings = dict(encodings) if encodings else None
        self._session: Any = None

    def _messages(self, data: Any, metadata: MetadataLike) -> Iterator[list[Any]]:
        """The framed Array messages for ``data``: one per chunk, each carrying
        ``metadata``; a single zero-row message when ``data`` has no rows."""
        md = Metadata.coerce(metadata)
        sent = False
        for chunk in to_vortex_chunks(data, self.dtype):
            if sent and len(chunk) == 0:
                continue
            sent = True
            yield self._enc.array_message(self._prepare(chunk), md)
        if not sent:
            from .._arrow import from_arrow

            yield self._enc.array_message(from_arrow(_empty_arrow(self.dtype), dtype=self.dtype), md)

    def _prepare(self, a: Array) -> Array:
        if self.compress and (self.encodings is not None or a.nbytes >= self._min_batch_bytes):
            from .._compress import CompressSession, compress

            if self._session is None:
                self._session = CompressSession()
            return compress(a, encodings=self.encodings, session=self._session,
                            options=self._options)
        return a


class StreamWriter(_Compressing):
    """Writes a Vortex IPC stream: the DType message now, one Array message per chunk of
    each ``write``.

    ``sink``: a path, a binary file object (``write``), or a socket. ``dtype``: a Vortex
    ``DType`` or an Arrow schema/type. ``metadata``: the stream's custom metadata.
    ``write(data, metadata=...)`` takes a ``vortex_io.Array``, Arrow data, or any object
    exporting ``__arrow_c_array__``/``__arrow_c_stream__``; the metadata goes on every
    message the call writes (one per chunk; a zero-row batch is written when the data has
    no rows). Metadata keys starting with ``vortex_io.`` are reserved.

    ``end_marker=True``: ``close()`` ends the stream with an end marker, one small zero-row
    message (``MessageEncoder.end_marker``): readers stop at it and read nothing after it,
    so streams can follow one another on one pipe or socket (vortex-data reads the marker
    as one more, empty, array). ``close()`` closes a sink given by path and only flushes a
    file object or socket (it stays open for what follows).

    ``integrity=True``: every message carries a CRC-32C record and ``close()`` writes the
    end marker (``vortex_io.integrity``), so readers detect any corruption and any cut. A
    ``with`` block left by an exception closes the sink without the end marker: the stream
    then reads as truncated, not as complete.

    >>> import io, pyarrow as pa, vortex_io as vio
    >>> sink = io.BytesIO()
    >>> t = pa.table({"x": [1, 2, 3]})
    >>> with vio.StreamWriter(sink, t.schema) as w:
    ...     _ = w.write(t, metadata={"request_id": "7"})
    ...     _ = w.write(t.slice(0, 0), metadata={"status": "done"})
    >>> [dict(b.metadata) for b in vio.StreamReader(sink.getvalue())]
    [{b'request_id': b'7'}, {b'status': b'done'}]
    """

    def __init__(self, sink: Any, dtype: Any, *, metadata: MetadataLike = None,
                 compress: Any = False, encodings: Mapping[str, str] | None = None,
                 integrity: bool = False, end_marker: bool = False,
                 _caller: str = "StreamWriter",
                 _reserved: Sequence[tuple[bytes, bytes]] = (), _session: Any = None) -> None:
        self.dtype, schema_pairs = _stream_dtype(dtype, _caller)
        if _reserved:  # (what the library adds under its reserved prefix, e.g. hive keys)
            schema_pairs = [*schema_pairs, *_reserved]
        self.metadata = check_metadata(_caller, "metadata", metadata)
        check_type(_caller, "end_marker", end_marker, bool, "a bool")
        self.integrity = integrity
        #: whether ``close()`` writes the end marker (always, with integrity data)
        self.end_marker = bool(end_marker) or bool(integrity)
        self._init_compression(compress, encodings, _caller)
        if _session is not None:  # the compressor's plans, shared with other streams
            self._session = _session
        self._enc = MessageEncoder(integrity=integrity)
        # (refuses reserved keys from the user; adds the exact Arrow schema where needed)
        first = self._enc.dtype_message(self.dtype, self.metadata, schema_pairs)
        self._sink = _Sink(sink, _caller)
        self._closed = False
        self._sink.write(first)

    @property
    def bytes_written(self) -> int:
        return self._enc.position

    def write(self, data: Any, *, metadata: MetadataLike = None) -> int:
        """Write ``data`` (one message per chunk); returns the number of messages written."""
        if self._closed:
            raise ValueError("write() on a closed StreamWriter")
        metadata = check_metadata("write", "metadata", metadata)
        n = 0
        for parts in self._messages(data, metadata):
            self._sink.write(parts)
            n += 1
        return n

    def write_batch(self, array: Array, *, metadata: MetadataLike = None) -> None:
        """Write one already-built array as one message, as it is (no compression)."""
        check_type("write_batch", "array", array, Array, "a vortex_io.Array")
        if array.dtype != self.dtype:
            raise TypeError(f"array of dtype {array.dtype!r} written to a stream of {self.dtype!r}")
        self._sink.write(self._enc.array_message(array, Metadata.coerce(metadata)))

    def flush(self) -> None:
        self._sink.flush()

    def close(self) -> None:
        """End the stream (with ``end_marker`` or integrity: write its end marker) and close
        the sink."""
        self._close(end=True)

    def _close(self, end: bool) -> None:
        if not self._closed:
            self._closed = True
            try:
                if end and self.end_marker:
                    self._sink.write(self._enc.end_marker())
            finally:
                self._sink.close()

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._close(end=exc_type is None)


def _empty_arrow(d: dt.DType) -> Any:
    import pyarrow as pa

    return pa.array([], type=d.to_arrow())


class AsyncStreamWriter(_Compressing):
    """Writes a stream to an ``asyncio.StreamWriter``. The DType message is queued at
    construction; ``await write(...)`` sends a batch and drains. ``compress``,
    ``encodings``, ``integrity`` and ``end_marker`` are as for ``StreamWriter`` (``close()``
    sends the end marker; an ``async with`` block left by an exception does not)."""

    def __init__(self, writer: Any, dtype: Any, *, metadata: MetadataLike = None,
                 compress: Any = False, encodings: Mapping[str, str] | None = None,
                 integrity: bool = False, end_marker: bool = False) -> None:
        self.dtype = coerce_dtype(dtype, "AsyncStreamWriter")
        self.metadata = check_metadata("AsyncStreamWriter", "metadata", metadata)
        check_type("AsyncStreamWriter", "end_marker", end_marker, bool, "a bool")
        self.integrity = integrity
        self.end_marker = bool(end_marker) or bool(integrity)
        self._init_compression(compress, encodings, "AsyncStreamWriter")
        self._w = writer
        self._enc = MessageEncoder(integrity=integrity)
        self._closed = False
        self._send(self._enc.dtype_message(self.dtype, self.metadata, _schema_pairs(dtype)))

    def _send(self, parts: list[Any]) -> None:
        for p in parts:
            self._w.write(bytes(p) if hasattr(p, "dtype") else p)

    @property
    def bytes_written(self) -> int:
        return self._enc.position

    async def write(self, data: Any, *, metadata: MetadataLike = None) -> int:
        if self._closed:
            raise ValueError("write() on a closed AsyncStreamWriter")
        n = 0
        for parts in self._messages(data, metadata):
            self._send(parts)
            n += 1
            await self._w.drain()
        return n

    async def close(self) -> None:
        """Flush and close the underlying writer (ends the stream; with integrity, after
        its end marker)."""
        await self._close(end=True)

    async def _close(self, end: bool) -> None:
        if not self._closed:
            self._closed = True
            if end and self.end_marker:
                self._send(self._enc.end_marker())
            await self._w.drain()
            self._w.close()
            if hasattr(self._w, "wait_closed"):
                try:
                    await self._w.wait_closed()
                except (ConnectionError, OSError):
                    pass

    async def __aenter__(self) -> AsyncStreamWriter:
        return self

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        await self._close(end=exc_type is None)


def write_ipc(sink: Any, data: Any, *, metadata: MetadataLike = None, compress: Any = True,
              chunk_rows: int = 65_536, dtype: Any = None,
              encodings: Mapping[str, str] | None = None, integrity: bool = False,
              end_marker: bool = False, partition_by: Any = None, max_open_files: int = 1024,
              existing: str = "error", basename_template: str = "part-{i}.vxipc") -> int:
    """Write ``data`` as a whole stream, ``chunk_rows`` rows per message; returns bytes written.

    ``sink``: a path, a binary file object or a socket. ``data``: a ``vortex_io.Array``,
    Arrow data, a mapping of column names to columns (as ``pa.table`` takes), a pandas or
    Polars DataFrame, a numpy array, a list, or an object exporting the Arrow PyCapsule
    interface (a DuckDB relation, say). Arrow schema metadata (pandas' included) becomes the
    stream's metadata unless ``metadata`` is given. ``compress=False`` always writes canonical arrays; a
    ``vortex_io.CompressOptions`` compresses with those options (e.g. ``compact=True``).
    ``encodings`` forces an encoding per column, e.g. ``{"city": "vortex_io.inverted_index"}``.
    ``integrity=True`` adds a CRC-32C record to every message and an end marker
    (``vortex_io.integrity``): readers then detect any corruption and any cut.
    ``end_marker=True`` ends the stream with an end marker without integrity data (see
    ``StreamWriter``).

    ``partition_by`` (a column name or a list of them): ``sink`` is a directory, written in
    the hive layout ``sink/k1=v1/k2=v2/part-0.vxipc`` (as Polars' and pyarrow's
    partitioned Parquet writes), the partition columns left out of the files; the data
    (a ``RecordBatchReader`` too) is streamed, messages have at most ``chunk_rows`` rows,
    and every other option applies to every file. ``max_open_files``: files open at once
    (the least recently used is closed, and its partition's later rows go to a new file,
    ``part-1.vxipc``...). ``existing``: for a ``sink`` that is not empty, ``'error'``,
    ``'overwrite_or_ignore'`` (files of the same name are replaced) or
    ``'delete_matching'`` (each partition directory written is emptied first), as
    pyarrow's ``existing_data_behavior``. ``basename_template``: the files' name, ``{i}``
    the file part. Returns the bytes written over all files (see
    ``vortex_io._ipc.partitioned``).

    >>> import io, pyarrow as pa, vortex_io as vio
    >>> n = vio.write_ipc(io.BytesIO(), pa.table({"x": list(range(10))}), chunk_rows=4)
    >>> n > 0
    True
    """
    import pyarrow as pa

    if partition_by is not None:
        from .partitioned import write_partitioned

        return write_partitioned(sink, data, partition_by, metadata=metadata,
                                 compress=compress, chunk_rows=chunk_rows, dtype=dtype,
                                 encodings=encodings, integrity=integrity,
                                 end_marker=end_marker, max_open_files=max_open_files,
                                 existing=existing, basename_template=basename_template)

    check_int("write_ipc", "chunk_rows", chunk_rows, minimum=1)
    chunk_rows = min(chunk_rows, MAX_ROWS)
    check_metadata("write_ipc", "metadata", metadata)
    data = as_arrow_data("write_ipc", data)
    if metadata is None and isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        from .._arrow import schema_metadata_pairs

        metadata = schema_metadata_pairs(data.schema) or None  # Arrow schema metadata carries over
    if dtype is None:  # an Arrow schema is kept exactly (see vortex_io._arrow_schema)
        if isinstance(data, Array):
            dtype = data.dtype
        elif isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
            dtype = data.schema.remove_metadata()
        else:
            dtype = pa.field("values", data.type, True)
    else:
        coerce_dtype(dtype, "write_ipc")
    with StreamWriter(sink, dtype, metadata=metadata, compress=compress, encodings=encodings,
                      integrity=integrity, end_marker=end_marker, _caller="write_ipc") as w:
        wrote = 0
        for piece in _rechunk(data, chunk_rows):
            wrote += w.write(piece)
        if wrote == 0:
            w.write(_empty_arrow(w.dtype))
    return w.bytes_written


def _rechunk(data: Any, rows: int) -> Iterator[Any]:
    """Pieces of at most ``rows`` rows (fewer only at the end or at input boundaries)."""
    import pyarrow as pa

    if isinstance(data, Array):
        for start in range(0, len(data), rows):
            yield data.slice(start, start + rows)
        return
    if isinstance(data, pa.RecordBatchReader):
        pending: list[Any] = []
        count = 0
        for b in data:
            pending.append(b)
            count += b.num_rows
            if count >= rows:
                t = pa.Table.from_batches(pending)
                full = (count // rows) * rows
                yield from _rechunk(t.slice(0, full), rows)
                pending = t.slice(full).to_batches()
                count -= full
        if count:
            yield from _rechunk(pa.Table.from_batches(pending, schema=data.schema), rows)
        return
    n = len(data) if not isinstance(data, (pa.Table, pa.RecordBatch)) else data.num_rows
    for start in range(0, n, rows):
        # the length bounded here: pyarrow 26's Table.slice of a zero-column table ignores
        # the end (5 rows sliced at 4 for 2 gives 2 rows)
        piece = data.slice(start, min(rows, n - start))
        if isinstance(piece, pa.Table):
            piece = piece.combine_chunks() if any(c.num_chunks > 1 for c in piece.columns) else piece
        elif isinstance(piece, pa.ChunkedArray) and piece.num_chunks > 1:
            piece = piece.combine_chunks()
        yield piece
