"""Stream readers: thin loops that move bytes from a source into ``MessageDecoder``.

``StreamReader`` reads paths (read ahead in aligned blocks, never memory-mapped),
bytes-like objects (zero-copy: a memory map passed as one is viewed in place) and binary
file objects (pipes and sockets included: it reads exactly what the decoder needs, so it
never blocks waiting for a message that has not been sent). ``AsyncStreamReader`` does
the same over asyncio streams.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import stat
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import _fs
from .. import _native_glue as ng
from .. import dtype as dt
from .._array import Array
from .._errors import MalformedStreamError, VortexIPCError
from .._hive import STORED_KEY as HIVE_STORED_KEY
from .._hive import read_stored
from .._limits import DEFAULT_LIMITS, ReaderLimits
from .._metadata import ARROW_SCHEMA_KEY, Metadata
from .framing import STREAM_ALIGNMENT, MessageDecoder
from .messages import Message, aligned_empty
from .schema import MessageType

__all__ = ["Batch", "StreamReader", "AsyncStreamReader", "read_ipc"]


class Batch:
    """One Array message of a stream: ``array`` (lazily decoded) and its ``metadata``.

    With the native core, ``to_arrow()`` decodes the message natively and ``array`` (the
    Python encoding tree, for inspecting encodings or custom compute) is built on first use.

    A batch exports the Arrow PyCapsule interface (``__arrow_c_schema__``,
    ``__arrow_c_array__``, ``__arrow_c_stream__``), so ``pa.table(batch)``,
    ``pa.record_batch(batch)``, ``pl.from_arrow(batch)``, DuckDB and
    ``pd.DataFrame.from_arrow`` take it as they take ``batch.to_arrow()``: a batch of a
    table (a non-nullable struct dtype) as a record batch, others as an array. Each export
    decodes the message again; a ``requested_schema`` other than the batch's is cast to as
    pyarrow casts (``ValueError`` when it cannot be).

    >>> import io, pyarrow as pa, vortex_io as vio
    >>> buf = io.BytesIO()
    >>> _ = vio.write_ipc(buf, pa.table({"x": [1, 2], "y": ["a", "b"]}))
    >>> batch = next(iter(vio.StreamReader(buf.getvalue())))
    >>> pa.table(batch).to_pydict()
    {'x': [1, 2], 'y': ['a', 'b']}
    >>> pa.record_batch(batch).equals(batch.to_arrow())
    True
    """

    __slots__ = ("_array", "_ctx", "_layout", "_msg", "_stream_metadata", "index", "metadata",
                 "offset")

    def __init__(self, array: Array | None, metadata: Metadata, index: int, offset: int,
                 msg: Message | None = None, ctx: Any = None, layout: Any = None,
                 stream_metadata: Metadata | None = None) -> None:
        self._array = array
        self._msg = msg
        self._ctx = ctx  # (dtype, limits, lazy fields) to build the array later
        self._layout = layout  # the stream's exact Arrow schema (vortex_io._arrow_schema)
        self._stream_metadata = stream_metadata
        self.metadata = metadata
        self.index = index
        self.offset = offset

    @property
    def array(self) -> Array:
        """The batch's encoding tree (built on first use when the native core read it)."""
        if self._array is None:
            d, limits, lazy = self._ctx
            self._array = self._msg.array(d, limits, lazy)  # type: ignore[union-attr]
        return self._array

    @property
    def num_rows(self) -> int:
        if self._array is None and self._msg is not None:
            return self._msg.header.row_count
        return len(self.array)

    def to_arrow(self, *, string_view: bool = False) -> Any:
        """A ``pyarrow.RecordBatch`` (struct streams; its schema is the stream's, metadata
        included, as a ``pyarrow.ipc`` reader gives it: the batch's own metadata is
        ``metadata``) or a ``pyarrow.Array``. ``string_view=True`` decodes strings to Arrow
        ``string_view``."""
        a = self._decoded(string_view)
        layout = self._layout
        if layout is None:
            return a
        from .._arrow_schema import restore_array, restore_batch

        if _table_fields(self._dtype()) is not None:
            return restore_batch(a, layout.schema(string_view).with_metadata(self._schema_metadata()))
        return restore_array(a, layout.field_types(None, string_view)[0])

    def _schema_metadata(self) -> Any:
        md = self._stream_metadata
        return md.to_arrow() if md else None

    def _decoded(self, string_view: bool) -> Any:
        """``to_arrow`` in the types the dtype decodes to."""
        import pyarrow as pa

        if self._msg is not None and self._array is None and ng.enabled():
            return self._native_arrow(string_view)
        with _in_batch(self):  # (arrays check some of their parts when decoded)
            a = self.array.to_arrow(string_view=string_view)
        if isinstance(self.array.dtype, dt.Struct) and not self.array.dtype.nullable:
            if isinstance(a, pa.ChunkedArray):
                a = a.combine_chunks()
            rb = pa.RecordBatch.from_struct_array(a)
            schema = pa.schema([pa.field(f.name, f.type, f.nullable) for f in a.type],
                               metadata=self._schema_metadata())
            return _with_schema(rb, schema)  # (no columns: its rows kept)
        return a

    def _native_arrow(self, string_view: bool) -> Any:
        import pyarrow as pa

        d, limits, _ = self._ctx
        m = self._msg
        assert m is not None
        fields = _table_fields(d)
        done, err = native_columns([m], d, limits, fields, string_view, 1)
        if err is not None:
            raise err
        cols = done[0]
        if fields is None:
            return cols[0]
        if not fields:
            return pa.RecordBatch.from_struct_array(
                pa.StructArray.from_arrays([], names=[]).slice(0, 0)) if m.header.row_count == 0 \
                else pa.record_batch([pa.nulls(m.header.row_count)], names=["_"]).select([])
        schema = _plan(d, limits).schema(string_view, self._stream_metadata)
        return pa.RecordBatch.from_arrays(cols, schema=schema)

    # -- the Arrow PyCapsule interface ----------------------------------------------------

    def _dtype(self) -> dt.DType:
        return self._ctx[0] if self._array is None else self._array.dtype

    def _export(self) -> Any:
        """``to_arrow()`` as one RecordBatch (a table) or one Array."""
        import pyarrow as pa

        a = self.to_arrow()
        if isinstance(a, pa.ChunkedArray):
            a = a.combine_chunks()
        return a

    def __arrow_c_schema__(self) -> Any:
        """The batch's Arrow schema (a table's, with the batch's metadata) or type, as a
        PyCapsule; nothing is decoded."""
        from .._arrow import dtype_to_arrow, to_arrow_schema

        d = self._dtype()
        layout = self._layout
        if _table_fields(d) is None:
            t = dtype_to_arrow(d) if layout is None else layout.field_types(None)[0]
            return t.__arrow_c_schema__()
        schema = to_arrow_schema(d) if layout is None else layout.schema()
        return schema.with_metadata(self._schema_metadata()).__arrow_c_schema__()

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]:
        """The batch as an Arrow C array (a table's as a struct array: a record batch):
        the (schema, array) PyCapsules, cast to ``requested_schema`` when it is given."""
        return self._export().__arrow_c_array__(requested_schema)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The batch as an Arrow C stream of one record batch (a table) or one array."""
        import pyarrow as pa

        a = self._export()
        if isinstance(a, pa.RecordBatch):
            s = pa.RecordBatchReader.from_batches(a.schema, [a])
        else:
            s = pa.chunked_array([a], type=a.type)
        return s.__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        md = f", metadata={self.metadata!r}" if self.metadata else ""
        return f"Batch(index={self.index}, rows={self.num_rows}, encoding={self.array.encoding}{md})"


@contextlib.contextmanager
def _in_batch(b: Batch) -> Iterator[None]:
    """Errors raised within name batch ``b``'s message (index and offset) if they do not
    say where they are yet."""
    try:
        yield
    except VortexIPCError as e:
        raise e.locate(message_index=b.index, offset=b.offset) from None


def _with_schema(rb: Any, schema: Any) -> Any:
    """Record batch ``rb`` with ``schema`` (the stream's metadata rather than the batch's;
    a batch of no columns keeps its rows)."""
    import pyarrow as pa

    if rb.num_columns == 0:
        return rb.replace_schema_metadata(schema.metadata)
    return pa.RecordBatch.from_arrays(rb.columns, schema=schema)


def _table_fields(d: dt.DType) -> list[int] | None:
    """The root fields decoded as columns (a table: a non-nullable struct), else None (the
    whole array is one column)."""
    if isinstance(d, dt.Struct) and not d.nullable:
        return list(range(len(d.dtypes)))
    return None


class _Plan:
    """What decoding the batches of one stream natively needs, worked out once: the
    native decoder, the root fields decoded as columns, their Arrow types and schema, and
    the known-encoding flags of each encoding table seen."""

    __slots__ = ("dtype", "fields", "flags", "limits", "schemas", "stream", "types")

    def __init__(self, d: dt.DType, limits: ReaderLimits) -> None:
        self.dtype, self.limits = d, limits
        self.stream = ng.stream(d, limits)
        self.fields = _table_fields(d)
        self.types: dict[bool, list[Any]] = {}
        self.schemas: dict[tuple[bool, int], tuple[Any, Any]] = {}
        self.flags: dict[tuple[str, ...], tuple[bool, ...]] = {}

    def known_flags(self, encodings: tuple[str, ...]) -> tuple[bool, ...]:
        """``ng.known_flags``, remembered once every encoding is known (the registry only
        grows, so a table Python knows whole stays known)."""
        flags = self.flags.get(encodings)
        if flags is None:
            flags = ng.known_flags(encodings)
            if all(flags):
                self.flags[encodings] = flags
        return flags

    def column_types(self, string_view: bool) -> list[Any]:
        types = self.types.get(string_view)
        if types is None:
            from .._arrow import dtype_to_arrow, to_arrow_schema

            if self.fields is None:
                types = [dtype_to_arrow(self.dtype, string_view)]
            else:  # the fields' types from the (remembered) schema
                schema = to_arrow_schema(self.dtype, string_view)
                types = [schema.field(i).type for i in self.fields]
            self.types[string_view] = types
        return types

    def schema(self, string_view: bool, stream_metadata: Metadata | None) -> Any:
        """The Arrow schema of a table's batches, with the stream's metadata."""
        key = (string_view, id(stream_metadata))
        hit = self.schemas.get(key)
        if hit is None or hit[0] is not stream_metadata:
            from .._arrow import to_arrow_schema

            schema = to_arrow_schema(self.dtype, string_view)
            if stream_metadata:
                schema = schema.with_metadata(stream_metadata.to_arrow())
            hit = self.schemas[key] = (stream_metadata, schema)
        return hit[1]


#: (id(dtype), id(limits)) -> the plan of the streams read with them (readers keep one
#: dtype and one limits object per stream, so a lookup is one dict probe, no hashing of
#: the dtype's tree)
_PLANS: dict[tuple[int, int], _Plan] = {}
_PLANS_SIZE = 256


def _plan(d: dt.DType, limits: ReaderLimits) -> _Plan:
    p = _PLANS.get((id(d), id(limits)))
    if p is None or p.dtype is not d or p.limits is not limits:
        if len(_PLANS) >= _PLANS_SIZE:
            _PLANS.clear()
        p = _PLANS[(id(d), id(limits))] = _Plan(d, limits)
    return p


def native_columns(msgs: list[Message], d: dt.DType, limits: ReaderLimits,
                   fields: list[int] | None, string_view: bool, threads: int
                   ) -> tuple[list[list[Any]], VortexIPCError | None]:
    """(the columns, the error) of a window of messages: each message's columns (the root
    fields ``fields``, or the whole array when None) as Arrow arrays, decoded by the native
    core on ``threads`` threads (columns it hands back, of encodings only Python knows, are
    decoded by the Python implementation), up to the first message that fails; the error
    is that message's, located (message index, offset), or None. Callers pass windows in
    stream order, emit the columns of the messages before a failing one, then raise."""
    import pyarrow as pa

    plan = _plan(d, limits)
    types = plan.column_types(string_view)
    if fields is not None and fields != plan.fields:
        from .._arrow import to_arrow_schema

        schema = to_arrow_schema(d, string_view)
        types = [schema.field(i).type for i in fields]
    imp = pa.Array._import_from_c_capsule
    bad: VortexIPCError | None = None
    for j, m in enumerate(msgs):  # integrity: the bodies' checks first, in order
        try:
            m.check_body()
        except VortexIPCError as e:
            bad, msgs = e, msgs[:j]
            break
    flags = plan.known_flags
    res = plan.stream.decode([(m.body, m.header.row_count, m.header.encodings,
                               flags(m.header.encodings)) for m in msgs],
                             fields, string_view, threads) if msgs else []
    out: list[list[Any]] = []
    for m, r in zip(msgs, res):
        if r[0] == "err":
            return out, ng.error_of(r[1], r[2]).locate(message_index=m.index, offset=m.offset)
        cols = [None if c is None else imp(t.__arrow_c_schema__(), c) for c, t in zip(r[1], types)]
        if None in cols:
            try:
                cols = _python_columns(m, d, limits, fields, cols, string_view)
            except VortexIPCError as e:
                return out, e
        out.append(cols)
    return out, bad


def _python_columns(m: Message, d: dt.DType, limits: ReaderLimits,
                    fields: list[int] | None, out: list[Any], string_view: bool) -> list[Any]:
    """The columns the native core left to Python (subtrees of encodings it does not
    know), decoded by the Python implementation."""
    import pyarrow as pa

    try:
        arr = m.array(d, limits, lazy=fields is not None)
        for j, c in enumerate(out):
            if c is not None:
                continue
            ng.handed_back(f"column {j} of message {m.index} ({m.header.encodings})")
            col = arr if fields is None else _lazy_field(arr, d.names[fields[j]])  # type: ignore[attr-defined]
            a = col.to_arrow(string_view=string_view)
            if isinstance(a, pa.ChunkedArray):
                a = a.combine_chunks()
            out[j] = a
    except VortexIPCError as e:
        raise e.locate(message_index=m.index, offset=m.offset) from None
    return out


def _batch(m: Message, d: dt.DType, limits: ReaderLimits, lazy: bool, layout: Any = None,
           stream_metadata: Metadata | None = None) -> Batch:
    """The Batch of an Array message: with the native core, its header is walked and
    checked natively now (the errors the reference builder raises, raised here) and the
    Python tree is built only if asked for; else the Python tree now. ``layout`` and
    ``stream_metadata``: the stream's exact Arrow schema (or None) and metadata."""
    if ng.enabled():
        m.check_body()
        plan = _plan(d, limits)
        r = plan.stream.validate(
            [(m.body, m.header.row_count, m.header.encodings, plan.known_flags(m.header.encodings))], 1)[0]
        if r is not None:
            raise ng.error_of(r[0], r[1]).locate(message_index=m.index, offset=m.offset)
        return Batch(None, m.metadata, m.index, m.offset, m, (d, limits, lazy), layout,
                     stream_metadata)
    return Batch(m.array(d, limits, lazy), m.metadata, m.index, m.offset, None, None, layout,
                 stream_metadata)


#: the native core decodes up to this many messages (or bytes of bodies) in one call
NATIVE_WINDOW_MESSAGES = 64
NATIVE_WINDOW_BYTES = 64 << 20


def _check_stream_message(msg: Message) -> None:
    if msg.type == MessageType.BUFFER:
        raise MalformedStreamError("a Buffer message is not allowed in an array stream",
                                   message_index=msg.index, offset=msg.offset)
    if msg.type == MessageType.DTYPE:
        raise MalformedStreamError("a second DType message in the stream",
                                   message_index=msg.index, offset=msg.offset)


def _stream_header(first: Message | None, limits: ReaderLimits
                   ) -> tuple[dt.DType, Metadata, Any]:
    """(dtype, stream metadata, its exact Arrow layout or None) from a stream's first
    message, which must be a DType message."""
    if first is None:
        raise MalformedStreamError("the stream is empty: it has no DType message", offset=0)
    if first.type != MessageType.DTYPE:
        raise MalformedStreamError(
            f"a stream must start with a DType message, not {first.type.name}",
            message_index=first.index, offset=first.offset)
    d = first.dtype(limits)
    layout = None
    stored = first.header.custom_metadata.get_all(ARROW_SCHEMA_KEY)
    if stored:
        from .._arrow_schema import ArrowLayout

        if len(stored) > 1:
            raise MalformedStreamError(f"the stream has {len(stored)} {ARROW_SCHEMA_KEY.decode()} "
                                       "values", message_index=first.index, offset=first.offset)
        try:
            layout = ArrowLayout.read(stored[0], d)
        except VortexIPCError as e:
            raise e.locate(offset=first.offset) from None
    return d, first.metadata, layout


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _read_ahead_pool() -> ThreadPoolExecutor:
    """The threads that read local files' next blocks in the background (one per core)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max(1, os.cpu_count() or 1),
                                       thread_name_prefix="vortex-io-read")
        return _POOL


def _forget_pool() -> None:
    """In a forked child: the parent's pool has no threads here (its reads would wait
    forever); the child starts its own on first use."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


#: a file named by path is read ahead of the decoder in a first block of ``_fs.FIRST_READ``
#: (its DType message: opening a reader for its schema reads little), then one of
#: LOCAL_SECOND_READ (a scan that stops early reads little more), then blocks of
#: LOCAL_MAX_READ (measured on a 13 MB file: growing blocks that doubled from 64 KiB copied
#: a third of the messages, which straddled them, and cost Polars' count query 4 ms)
LOCAL_SECOND_READ = 4 << 20
LOCAL_MAX_READ = 64 << 20


class _Source:
    """Bytes in, for the decoder: whole buffers at once, or reads from a file.

    A file named by path is read, not memory-mapped: a mapped file that another process (or
    this one) truncates or rewrites while a reader or the arrays it returned still view it
    kills the process with SIGBUS (``t = read_table(p); write_ipc(p, t)`` would). Its bytes
    are read ahead of the decoder in a few large blocks (see ``LOCAL_SECOND_READ``), each
    into 64-byte aligned memory at the file offset's phase, so buffers keep the alignment
    the writer planned and stay views of their block. To view a file in place, pass a
    memory map (``memoryview(mmap.mmap(...))``): it is read as bytes in memory are.
    """

    def __init__(self, source: Any, storage_options: dict[str, Any] | None = None) -> None:
        self.name: str | None = None
        self.buffer: Any = None
        self.file: Any = None
        #: the file is a remote one (a URL)
        self.remote = False
        #: reads go ahead of the decoder in growing blocks and the file can seek (a message
        #: range is entered by a jump): a URL, or a regular file named by path
        self.seekable = False
        self._local = False  # a regular local file, read into aligned blocks
        #: read the next block of a local file in the background while the current one is
        #: decoded (for a reader that reads to the end: ``StreamReader.read_ahead``)
        self.read_ahead = False
        self._ahead: Future[tuple[np.ndarray, int]] | None = None
        self._read = _fs.FIRST_READ
        self._owned: list[Any] = []
        if _fs.is_remote(source):
            self.name = source
            self.file = _fs.open_url(source, storage_options)
            self._owned.append(self.file)
            self.remote = self.seekable = True
            return
        if storage_options and not _fs.is_url(source):
            _fs.no_url_options("StreamReader", storage_options)
        if isinstance(source, (str, os.PathLike)):
            self.name = os.fspath(source)
            try:
                f = open(_fs.local_path(self.name), "rb", buffering=0)
            except IsADirectoryError as e:
                raise IsADirectoryError(
                    e.errno, f"{e.strerror}: a StreamReader reads one stream; "
                    "vortex_io.scan() and read_table() read the files of a directory",
                    self.name) from None
            self._owned.append(f)
            st = os.fstat(f.fileno())
            self.file = f
            # a pipe, FIFO, character device or socket named by path is streamed as it comes
            self.seekable = self._local = stat.S_ISREG(st.st_mode)
            self._size = st.st_size  # (a file that grows is read on: only a hint)
        elif isinstance(source, (bytes, bytearray, memoryview)) or (
            hasattr(source, "__buffer__") and not hasattr(source, "read")
        ):
            self.buffer = source
        elif isinstance(source, socket.socket):
            self.file = source.makefile("rb", buffering=0)
            self._owned.append(self.file)
        elif isinstance(source, io.TextIOBase):
            raise TypeError("source is a text file: open it in binary mode ('rb'), or give "
                            "sys.stdin.buffer rather than sys.stdin")
        elif hasattr(source, "read"):
            self.file = source
            self.name = getattr(source, "name", None) if isinstance(getattr(source, "name", None), str) else None
        else:
            try:
                self.buffer = memoryview(source)
            except TypeError:
                raise TypeError(
                    f"source must be a path, a bytes-like object, a binary file object or a "
                    f"socket, not {type(source).__name__}"
                ) from None

    def pump(self, dec: MessageDecoder) -> bool:
        """Feed the decoder; False at end of input."""
        if self.buffer is not None:
            buf, self.buffer = self.buffer, None
            dec.feed(buf)
            return True
        if self.file is None:
            return False
        least = need = max(dec.bytes_needed, 1)
        if self._local:
            ahead, self._ahead = self._ahead, None
            # the block read in the background (its error raised here), else a block now (a
            # block read ahead may be less than the decoder needs: it asks again)
            block, got = ahead.result() if ahead is not None else self._read_block(least)
            if not got:
                return False
            dec.feed(block[:got])
            if self.read_ahead and got == len(block) and self.file.tell() < self._size:
                # the next block is read while the caller decodes this one
                self._ahead = _read_ahead_pool().submit(self._read_block, 1)
            return True
        if self.seekable:  # a URL: ahead of the decoder, in blocks that grow
            need, self._read = max(need, self._read), min(self._read * 2, _fs.MAX_READ)
        data = self.file.read(need)
        if not data:
            return False
        dec.feed(data)
        return True

    def _read_block(self, least: int) -> tuple[np.ndarray, int]:
        """The next block of a local file: (aligned block, bytes read into it). A first
        block, then one of LOCAL_SECOND_READ, then the rest of the file in blocks of
        LOCAL_MAX_READ (a message across two blocks is copied whole into one: few, large
        blocks copy few messages); at least ``least`` bytes, at most what the file holds
        (a small file: one read; at its end, a read of ``least`` tells whether it grew)."""
        need = max(least, self._read)
        self._read = LOCAL_SECOND_READ if self._read < LOCAL_SECOND_READ else LOCAL_MAX_READ
        pos = self.file.tell()
        need = max(min(need, self._size - pos), least)
        phase = pos % STREAM_ALIGNMENT
        block = aligned_empty(need + phase, STREAM_ALIGNMENT)[phase:]
        return block, self.file.readinto(block) or 0

    def _settle(self) -> None:
        """Wait for a background read (before the file is moved or closed); its block is
        dropped, and the file is put back where the decoder's bytes end."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            try:
                _, got = ahead.result()
            except OSError:
                return
            if got:
                self.file.seek(-got, os.SEEK_CUR)

    def jump(self, dec: MessageDecoder, offset: int, index: int) -> None:
        """Continue ``dec`` at the message at stream ``offset``, numbered ``index``, without
        reading the bytes before it: a whole buffer is skipped in, a file seeks past what
        was read ahead (``ValueError`` if ``offset`` is before the decoder's position)."""
        if not self.seekable:
            dec.skip_to(offset, index)
            return
        self._settle()
        dec.skip_to(offset, index, past_buffer=True)
        if offset > self.file.tell():
            self.file.seek(offset)

    def close(self) -> None:
        self._settle()
        for o in reversed(self._owned):
            o.close()
        self._owned.clear()


def _lazy_field(arr: Array, name: str) -> Array:
    """A lazily built field of a message's root struct, failing as the whole message's eager
    build does (``messages._located``): malformed input whose Python checks raise a plain
    exception is a MalformedStreamError."""
    import struct

    try:
        return arr.field(name)
    except VortexIPCError:
        raise
    except (IndexError, KeyError, struct.error, OverflowError, TypeError, ValueError,
            MemoryError, ZeroDivisionError) as e:
        raise MalformedStreamError(
            f"array message is inconsistent: {type(e).__name__}: {e}") from e


class StreamReader:
    """Reads a Vortex IPC stream: the DType message, then one ``Batch`` per Array message.

    ``source``: a path, a URL, a bytes-like object, or a binary file object (pipes and
    sockets included). A path is read ahead of the decoder in aligned blocks, never
    memory-mapped (a mapped file rewritten while in use crashes the process); a memory map
    passed as a bytes-like object, ``memoryview(mmap.mmap(...))``, is read in place, zero
    copy (then the file must not be truncated while a reader or its arrays use it).
    Arrays are decoded lazily; ``limits`` bounds what the stream may make the reader
    allocate. A URL (``s3://``, ``gs://``, ``https://``, ``memory://``, any scheme fsspec
    knows; ``pip install 'vortex-io[fsspec]'``) is read with ranged reads, ahead of the
    decoder in blocks that grow from 64 KiB (opening a reader for its ``schema`` reads one
    block, never the whole file); ``storage_options`` go to its fsspec file system
    (credentials, endpoints). ``file://`` URLs are paths.

    Streams written with integrity data (``integrity=True``) are verified as they are read:
    each message's checksums before any of it is used, and the end marker at the end. A
    failed check raises ``IntegrityError`` (message index and byte offset), a stream cut
    before its end marker ``TruncatedStreamError``. ``require_integrity=True`` refuses a
    stream without integrity data (``IntegrityError`` when it opens).

    ``lazy_fields=True`` builds a struct batch's fields from the message header only when
    each is first used: a consumer that projects or prunes batches never builds, nor checks,
    the others (an error in a field surfaces when, and only if, it is used; ``vortex_io.scan``
    reads this way and locates such errors itself). ``bytes_consumed`` is how much of the
    stream the decoder has taken so far, ``source_name`` the path or URL errors name.

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

    def __init__(self, source: Any, *, limits: ReaderLimits | None = None,
                 require_integrity: bool = False,
                 storage_options: dict[str, Any] | None = None,
                 lazy_fields: bool = False) -> None:
        self.limits = limits or DEFAULT_LIMITS
        self._src = _Source(source, _fs.check_storage_options("StreamReader", storage_options))
        self._dec = MessageDecoder(limits=self.limits, require_integrity=require_integrity,
                                   defer_body_checks=True)
        self._lazy_fields = bool(lazy_fields)
        #: the stream ends, for this reader, before the message of this index (a scan of a
        #: message range sets it: later messages are never read)
        self._stop_index: int | None = None
        self._done = False
        self._exported = False  # see __arrow_c_stream__
        try:
            self.dtype: dt.DType
            self.metadata: Metadata
            first = self._next_message()
            self.dtype, self.metadata, self._layout = _stream_header(first, self.limits)
            assert first is not None  # (_stream_header raised for a stream of no message)
            #: the Arrow fields of the hive partition columns a partitioned write kept in
            #: this file (``write_ipc(dir, data, partition_by=...)``), None when it kept none
            self.partition_schema: Any = read_stored(
                first.header.custom_metadata.get_all(HIVE_STORED_KEY), self._src.name)
        except VortexIPCError as e:
            self._src.close()
            raise e.locate(source=self._src.name) from None
        except BaseException:
            self._src.close()
            raise

    def _next_message(self) -> Message | None:
        """The next message; None at the end of the stream (after an end marker nothing
        more is read: a pipe or socket may carry more after it). Once the source has ended
        it is not read again: a file that grows (or is rewritten) after its end was seen
        ends this reader there all the same."""
        dec = self._dec
        if dec.finished or (self._stop_index is not None
                            and dec.messages_decoded >= self._stop_index):
            return None
        while True:
            m = dec.next_message()
            if m is not None:
                if m.end_marker:
                    dec.next_message()  # (with integrity data) bytes buffered after it raise
                    return None
                return m
            if dec.ended:
                return None
            if not self._src.pump(dec):
                dec.end_of_input()
                return None

    def select_messages(self, start: int, stop: int | None = None, *,
                        offset: int | None = None) -> int:
        """Read only the Array messages ``start <= index < stop`` from here on (message
        indexes count the DType message as 0, as ``message_spans`` does); call it before
        iterating. With ``offset`` (where message ``start`` begins, from ``message_spans``)
        a file named by path, bytes or a URL jump there without reading what lies between;
        otherwise, and for streams with integrity data (whose header checksums chain), the
        messages before ``start`` are framed and dropped. Returns the bytes jumped over
        unread. ``ValueError`` when ``offset`` lies before what was read already.

        >>> import io, vortex_io as vio
        >>> buf = io.BytesIO()
        >>> _ = vio.write_ipc(buf, {"x": list(range(6))}, chunk_rows=2, compress=False)
        >>> spans = vio.message_spans(buf.getvalue())
        >>> with vio.StreamReader(buf.getvalue()) as r:
        ...     _ = r.select_messages(2, 3, offset=spans[1].offset)
        ...     [b.array.field("x").to_pylist() for b in r]
        [[2, 3]]
        """
        self._stop_index = stop
        dec = self._dec
        if offset is not None and (self._src.file is None or self._src.seekable) \
                and not self.integrity:
            before = dec.position
            try:
                self._src.jump(dec, offset, start)
            except ValueError:
                raise ValueError(f"offset {offset} of message {start} is not after the DType "
                                 f"message and what was read (up to {before})") from None
            return offset - before
        while dec.messages_decoded < start and self.read_message() is not None:
            pass
        return 0

    def read_message(self) -> Message | None:
        """The next Array message framed but not decoded (its parsed header, its body
        bytes), None at the end of the stream: what iterating does before it builds a
        ``Batch`` (``message.array(dtype, limits)`` decodes it). Errors name the source."""
        try:
            m = self._next_message()
            if m is not None:
                _check_stream_message(m)
            return m
        except VortexIPCError as e:
            raise e.locate(source=self._src.name) from None

    @property
    def integrity(self) -> bool:
        """True when the stream carries integrity data (every message is verified)."""
        return bool(self._dec.integrity)

    @property
    def bytes_consumed(self) -> int:
        """Bytes of the stream the decoder has taken so far (framed messages)."""
        return self._dec.position

    @property
    def file_descriptor(self) -> int | None:
        """The descriptor of the regular local file the stream is read from (a source named
        by path), else None (bytes, URLs, file objects, pipes). Reads at given offsets
        (``os.pread``) leave the reader's position alone."""
        src = self._src
        return src.file.fileno() if src._local and src._owned else None

    @property
    def source_name(self) -> str | None:
        """The path or URL the stream comes from (what errors name), or None."""
        return self._src.name

    @property
    def background_checks(self) -> bool:
        """Whether the integrity checksums of large message bodies are computed on the
        native core's background thread while the next messages are framed (worth it when
        batches are decoded on other threads; ``read_arrow`` sets it from its ``threads``).
        Off by default; errors are the same either way."""
        return self._dec.background_checks

    @background_checks.setter
    def background_checks(self, on: bool) -> None:
        self._dec.background_checks = bool(on)

    @property
    def read_ahead(self) -> bool:
        """Whether a file named by path reads its next block on a background thread while
        the messages of the current one are decoded (worth it for a reader that reads to
        the end: ``read_arrow`` and scans without a limit set it; off by default, so a
        reader that stops early reads no block for nothing). Other sources ignore it."""
        return self._src.read_ahead

    @read_ahead.setter
    def read_ahead(self, on: bool) -> None:
        self._src.read_ahead = bool(on)

    @property
    def schema(self) -> Any:
        """The Arrow schema batches convert to (struct streams: one field per column)."""
        return self._schema()

    def _schema(self, string_view: bool = False) -> Any:
        """The schema of what this reader gives: the stream's exact Arrow schema."""
        if self._layout is None:
            return self._storage_schema(string_view)
        return self._layout.schema(string_view).with_metadata(
            self.metadata.to_arrow() if self.metadata else None)

    def _storage_schema(self, string_view: bool = False) -> Any:
        """The schema the dtype decodes to (``_schema`` without an exact Arrow layout)."""
        from .._arrow import to_arrow_schema

        return to_arrow_schema(self.dtype, string_view).with_metadata(
            self.metadata.to_arrow() if self.metadata else None)

    def _restore(self, data: Any, string_view: bool) -> Any:
        """A table or chunked array as the dtype decodes it, in the stream's exact types."""
        if self._layout is None:
            return data
        import pyarrow as pa

        from .._arrow_schema import restore_array

        if isinstance(data, pa.Table):
            schema = self._schema(string_view)
            return pa.Table.from_arrays(
                [restore_array(c, f.type) for c, f in zip(data.columns, schema)], schema=schema) \
                if data.num_columns else data
        return restore_array(data, self._layout.field_types(None, string_view)[0])

    def read_next_batch(self) -> Batch:
        """The next batch; ``StopIteration`` at the end of the stream."""
        if self._done:
            raise StopIteration
        try:
            m = self.read_message()
        except VortexIPCError:
            self._done = True
            raise
        if m is None:
            self._done = True
            self._src.close()
            raise StopIteration
        try:
            return _batch(m, self.dtype, self.limits, self._lazy_fields, self._layout,
                          self.metadata)
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
        from ..encodings._chunked import chunked_array

        name = self.source_name
        chunks = [b.array.located(message_index=b.index, offset=b.offset, source=name)
                  for b in self]
        return chunks[0] if len(chunks) == 1 else chunked_array(chunks, self.dtype)

    def read_arrow(self, *, string_view: bool = False, threads: int | None = None) -> Any:
        """Every remaining batch as a ``pyarrow.Table`` (struct streams) or ChunkedArray.

        ``string_view=True`` decodes strings to Arrow ``string_view`` (what Polars uses
        natively; dictionary-encoded strings then decode without copying their bytes).

        ``threads``: the native core decodes on this many threads (messages are framed in
        order on the calling thread, then windows of them are decoded column by column on
        the core's pool with the GIL released); ``None``: every core; ``1``: the calling
        thread only. The result is the same whatever the count. (The numpy implementation,
        ``VORTEX_IO_NATIVE=0``, decodes on the calling thread.)
        """
        n = ng.decode_threads(threads)
        self.read_ahead = True  # to the end
        if ng.enabled():
            return self._restore(self._read_arrow_native(string_view, n), string_view)
        return self._restore(self._read_arrow(string_view), string_view)

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
        decoded by the native core on ``threads`` threads, a window of messages at a time
        (``native_columns``). ``fields``: the root struct's fields (None: each message's
        whole array, one column)."""
        # integrity: bodies are checksummed on a background thread while the window is framed
        self.background_checks = threads > 1
        for msgs, err in self._native_windows():
            if msgs:
                done, bad = native_columns(msgs, self.dtype, self.limits, fields,
                                           string_view, threads)
                yield from zip(msgs, done)
                if bad is not None:
                    self._done = True
                    self._src.close()
                    raise bad.locate(source=self._src.name)
            if err is not None:
                raise err

    def _read_arrow_native(self, string_view: bool, threads: int) -> Any:
        import pyarrow as pa

        d = self.dtype
        schema = self._storage_schema(string_view)
        table = isinstance(d, dt.Struct) and not d.nullable
        fields = list(range(len(d.dtypes))) if table and d.names else None  # type: ignore[attr-defined]
        if table and fields is None:  # a struct of no columns: rows only
            rows = []
            for b in self:
                rows.append(pa.RecordBatch.from_struct_array(
                    pa.StructArray.from_arrays([], names=[]).slice(0, 0)) if len(b.array) == 0
                    else b.to_arrow(string_view=string_view))
            return pa.Table.from_batches(rows, schema=schema)
        cols: list[list[Any]] = [[] for _ in (fields or [0])]
        for _, out in self._native_batches(fields, string_view, threads):
            for col, a in zip(cols, out):
                col.append(a)
        if fields is None:
            return pa.chunked_array(cols[0], type=d.to_arrow(string_view=string_view))
        return pa.Table.from_arrays(
            [pa.chunked_array(c, type=f.type) for c, f in zip(cols, schema)], schema=schema)

    def _read_arrow(self, string_view: bool) -> Any:
        """``read_arrow`` by the numpy implementation, batch by batch."""
        import pyarrow as pa

        if isinstance(self.dtype, dt.Struct) and not self.dtype.nullable and self.dtype.names:
            # columns straight from each batch's fields: no per-batch StructArray/RecordBatch
            schema = self._storage_schema(string_view)
            cols: list[list[Any]] = [[] for _ in self.dtype.names]
            for b in self:
                arr = b.array
                if (arr.encoding == "vortex.struct" and isinstance(arr.dtype, dt.Struct)
                        and len(arr.children) == len(arr.dtype.dtypes)):
                    with _in_batch(b):
                        fields = [c.to_arrow(string_view=string_view) for c in arr.children]
                else:
                    fields = b._decoded(string_view).columns
                for col, f in zip(cols, fields):
                    col.extend(f.chunks if isinstance(f, pa.ChunkedArray) else (f,))
            return pa.Table.from_arrays(
                [pa.chunked_array([c if c.type == fld.type else c.cast(fld.type) for c in col],
                                  type=fld.type) for col, fld in zip(cols, schema)],
                schema=schema)
        batches = [b._decoded(string_view) for b in self]
        if isinstance(self.dtype, dt.Struct) and not self.dtype.nullable:
            return pa.Table.from_batches(batches, schema=self._storage_schema(string_view))
        # (a vortex.chunked message decodes to a ChunkedArray: its chunks are the stream's)
        return pa.chunked_array([c for b in batches
                                 for c in (b.chunks if isinstance(b, pa.ChunkedArray) else (b,))],
                                type=self.dtype.to_arrow(string_view=string_view))

    # -- the Arrow PyCapsule interface ----------------------------------------------------

    def __arrow_c_schema__(self) -> Any:
        """``schema`` as an Arrow PyCapsule (what ``__arrow_c_stream__`` will carry)."""
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The remaining batches as an Arrow C stream of record batches (streams of a
        non-nullable struct dtype), decoded as the consumer pulls them, one message (the
        native core: one window of messages) at a time. ``requested_schema``: the batches
        are cast to it as pyarrow casts (errors arrive when they are read).

        A reader reads its source once, as a ``pyarrow.RecordBatchReader`` does: it is
        exported once, and a second export, or one after the reader was read to its end or
        closed, raises ``ValueError`` (rather than hand a second consumer no rows).
        ``vortex_io.scan(...)`` re-reads its sources on each export.

        >>> import io, pyarrow as pa, vortex_io as vio
        >>> buf = io.BytesIO()
        >>> _ = vio.write_ipc(buf, pa.table({"x": [1, 2, 3]}))
        >>> r = vio.StreamReader(buf.getvalue())
        >>> pa.RecordBatchReader.from_stream(r).read_all()["x"].to_pylist()
        [1, 2, 3]
        >>> pa.table(r)
        Traceback (most recent call last):
        ...
        ValueError: this StreamReader was already exported as an Arrow stream: ...
        """
        import pyarrow as pa

        if not isinstance(self.dtype, dt.Struct) or self.dtype.nullable:
            raise TypeError("only streams of a non-nullable struct dtype export as record "
                            "batches; read_arrow() reads the others as a ChunkedArray")
        if self._exported or self._done:
            what = "exported as an Arrow stream" if self._exported else "read to its end"
            raise ValueError(f"this StreamReader was already {what}: a reader reads its "
                             "source once; open a new one (or use vortex_io.scan(...), which "
                             "re-reads its sources on each export)")
        self._exported = True
        schema = self.schema
        fields = _table_fields(self.dtype)
        if ng.enabled() and fields:
            storage = self._storage_schema()
            gen = (pa.RecordBatch.from_arrays(cols, schema=storage)
                   for _, cols in self._native_batches(fields, False, ng.decode_threads(None)))
            if self._layout is not None:
                from .._arrow_schema import restore_batch

                gen = (restore_batch(rb, schema) for rb in gen)
        else:
            gen = (_with_schema(b.to_arrow(), schema) for b in self)
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


def read_ipc(source: Any, *, limits: ReaderLimits | None = None,
             require_integrity: bool = False,
             storage_options: dict[str, Any] | None = None) -> Array:
    """Read a whole stream into one array (all chunks); ``source``, ``require_integrity``
    and ``storage_options`` as for ``StreamReader``.

    >>> import vortex_io as vio
    >>> import io
    >>> buf = io.BytesIO()
    >>> _ = vio.write_ipc(buf, vio.array([1.5, 2.5]))
    >>> vio.read_ipc(buf.getvalue()).to_pylist()
    [1.5, 2.5]
    """
    with StreamReader(source, limits=limits, require_integrity=require_integrity,
                      storage_options=storage_options) as r:
        return r.read_all()


class AsyncStreamReader:
    """Reads a stream from an ``asyncio.StreamReader`` (or anything with ``async
    readexactly(n)`` or ``async read(n)``).

    ``async with AsyncStreamReader(stream) as r:`` reads the DType message; then
    ``async for batch in r`` yields ``Batch`` objects. Integrity data is verified and
    ``require_integrity`` works as for ``StreamReader``; after an end marker nothing more
    is read from the stream.
    """

    def __init__(self, stream: Any, *, limits: ReaderLimits | None = None,
                 require_integrity: bool = False, lazy_fields: bool = False) -> None:
        self.limits = limits or DEFAULT_LIMITS
        self._stream = stream
        self._dec = MessageDecoder(limits=self.limits, require_integrity=require_integrity,
                                   defer_body_checks=True)
        #: build struct fields on first use (see StreamReader)
        self._lazy_fields = bool(lazy_fields)
        self._done = False
        self._eof = False
        self.dtype: dt.DType | None = None
        self._layout: Any = None
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
        if dec.finished:
            return None
        while True:
            m = dec.next_message()
            if m is not None and m.end_marker:
                dec.next_message()  # (with integrity data) bytes buffered after it raise
                return None
            if m is not None or self._eof:
                return m
            data, self._eof = await self._read_some(max(dec.bytes_needed, 1))
            if data:
                dec.feed(data)
            if self._eof:
                # complete messages still buffered come out first; a cut one raises
                dec.end_of_input()

    @property
    def integrity(self) -> bool:
        """True when the stream carries integrity data (every message is verified)."""
        return bool(self._dec.integrity)

    async def open(self) -> AsyncStreamReader:
        """Read the DType message (done by ``async with``)."""
        if self.dtype is not None:
            return self
        self.dtype, self.metadata, self._layout = _stream_header(await self._next_message(),
                                                                 self.limits)
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
        try:
            return _batch(m, self.dtype, self.limits, self._lazy_fields, self._layout,
                          self.metadata)
        except VortexIPCError:
            self._done = True
            raise

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[Batch]:
        while (b := await self.read_next_batch()) is not None:
            yield b

    async def read_all(self) -> Array:
        from ..encodings._chunked import chunked_array

        chunks = [b.array.located(message_index=b.index, offset=b.offset, source=None)
                  async for b in self]
        assert self.dtype is not None
        return chunks[0] if len(chunks) == 1 else chunked_array(chunks, self.dtype)

    async def __aenter__(self) -> AsyncStreamReader:
        return await self.open()

    async def __aexit__(self, *exc: Any) -> None:
        self._done = True


