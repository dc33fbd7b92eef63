"""The scan API: projection, filter and limit over one or many Vortex IPC streams.

This is the one entry point the Polars and DuckDB adapters use. Per chunk it (1) prunes
the chunk if statistics prove the filter cannot match (only the header was read),
(2) evaluates the filter on the encoded columns it references, (3) takes the selected
rows of the projected columns, decoding only those, and (4) yields Arrow record batches
in stream order. ``Scan.stats`` makes all of this observable.

>>> import io, pyarrow as pa, vortex_io as vio
>>> from vortex_io.expr import col
>>> buf = io.BytesIO()
>>> _ = vio.write_ipc(buf, pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]}))
>>> s = vio.scan(buf.getvalue(), columns=["v"], filter=col("k") == "a")
>>> s.to_arrow().to_pydict()
{'v': [1, 3]}
>>> s.stats.rows_scanned, s.stats.rows_returned
(3, 2)
"""

from __future__ import annotations

import glob as _glob
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _fs
from . import _native_glue as ng
from . import dtype as dt
from ._array import Array, canonicalized_nbytes
from ._arrow import arrow_take
from ._arrow_schema import restore_array, restore_batch, same_schema
from ._check import check_int, check_names, check_source, check_type, describe
from ._errors import (
    ColumnNotFoundError,
    LimitExceededError,
    MalformedStreamError,
    TruncatedStreamError,
    VortexIPCError,
)
from ._hive import Partitions, partitions
from ._ipc.messages import check_message_rows
from ._ipc.reader import StreamReader
from ._ipc.schema import MessageType, decode_message_header
from ._limits import DEFAULT_LIMITS, ReaderLimits
from ._native_scan import lower
from .compute._evaluate import can_skip, check_expr, evaluate_mask
from .compute._expr import And, Column, Compare, Expr, Literal
from .compute._kernels import coerce_literal, mask_true, take_arrow

__all__ = ["scan", "read_table", "Scan", "ScanStats", "expand_sources", "MessageSpan",
           "MessageRange", "message_spans", "message_ranges"]


@dataclass
class ScanStats:
    """What a scan did. ``bytes_canonicalized`` counts bytes of decoded (canonical) data
    the scan materialized: decoded columns and the selected rows it gathered."""

    sources: int = 0
    #: sources not read: their hive partitions rule out every row
    files_pruned: int = 0
    chunks: int = 0
    chunks_pruned: int = 0
    rows_scanned: int = 0
    rows_returned: int = 0
    bytes_read: int = 0
    bytes_canonicalized: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


# -- message boundaries: a header-only pass, and ranges of messages to scan ------------------


@dataclass(frozen=True)
class MessageSpan:
    """Where one Array message of a stream is: its stream ``index`` (0 is the DType message,
    so Array messages count from 1), byte ``offset``, ``size`` in bytes (length prefix,
    header and body) and ``rows``. Made by :func:`message_spans` from the headers alone."""

    index: int
    offset: int
    size: int
    rows: int


@dataclass(frozen=True)
class MessageRange:
    """The Array messages ``start <= index < stop`` of one stream (stream message indices:
    the DType message is 0). ``offset``: the byte offset of message ``start`` (as
    :func:`message_spans` found it); with it, a scan of a path or bytes jumps there and
    reads nothing before it but the DType message. Without it the scan walks the headers
    before ``start`` (their bodies are not decoded)."""

    start: int
    stop: int
    offset: int | None = None
    rows: int | None = None  # the rows of the range, when known (informational)
    size: int | None = None  # its bytes, when known (informational)

    def __post_init__(self) -> None:
        if self.start < 1 or self.stop < self.start:
            raise ValueError(f"a message range needs 1 <= start <= stop, not {self.start}..{self.stop}")
        if self.offset is not None and self.offset < 0:
            raise ValueError("offset must be >= 0")


def _as_range(messages: Any) -> MessageRange:
    if isinstance(messages, MessageRange):
        return messages
    if isinstance(messages, range):
        if messages.step != 1:
            raise ValueError("messages= takes a range of step 1")
        return MessageRange(messages.start, messages.stop)
    if isinstance(messages, tuple) and len(messages) == 2:
        return MessageRange(int(messages[0]), int(messages[1]))
    raise TypeError(f"messages= takes a MessageRange, a range or a (start, stop) tuple, "
                    f"not {type(messages).__name__}")


_U32 = 4


def message_spans(source: Any, *, limits: ReaderLimits | None = None,
                  storage_options: dict[str, Any] | None = None) -> list[MessageSpan]:
    """The Array messages of one stream, from a header-only pass: each message's length
    prefix and header are read and its body is skipped (a file is read with seeks, never
    mapped whole), so planning a distributed read of large files costs a few bytes per
    message. ``source``: a path, a URL or a bytes-like object; a URL (fsspec, with its
    ``storage_options``) is read with one ranged read of 64 KiB at each message's start
    (bodies are never fetched). Bad framing raises the
    ``VortexIPCError`` a reader would (``TruncatedStreamError`` for a cut stream), naming
    the file, message and offset; bodies are checked when they are scanned.

    >>> import io, pyarrow as pa, vortex_io as vio
    >>> buf = io.BytesIO()
    >>> with vio.StreamWriter(buf, pa.schema([("x", pa.int64())])) as w:
    ...     for i in range(3):
    ...         _ = w.write(pa.table({"x": list(range(i + 1))}))
    >>> spans = message_spans(buf.getvalue())
    >>> [(s.index, s.rows) for s in spans]
    [(1, 1), (2, 2), (3, 3)]
    >>> vio.scan(buf.getvalue(), messages=range(2, 4)).to_arrow()["x"].to_pylist()
    [0, 1, 0, 1, 2]
    """
    lim = limits or DEFAULT_LIMITS
    storage_options = _fs.check_storage_options("message_spans", storage_options)
    if _fs.is_remote(source):
        with _fs.open_url(source, storage_options) as f:
            size = _fs.size_of(f, source)
            try:
                return _spans(_fs.RangedReads(f, size).read, size, lim)
            except VortexIPCError as e:
                raise e.locate(source=source) from None
    if not _fs.is_url(source):
        _fs.no_url_options("message_spans", storage_options)
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        with open(_fs.local_path(name), "rb") as f:
            size = os.fstat(f.fileno()).st_size

            def read(pos: int, n: int) -> bytes:
                f.seek(pos)
                return f.read(n)

            try:
                return _spans(read, size, lim)
            except VortexIPCError as e:
                raise e.locate(source=name) from None
    if hasattr(source, "read") or isinstance(source, str):
        raise TypeError("message_spans() needs a path or a bytes-like object")
    buf = memoryview(source).cast("B")
    return _spans(lambda pos, n: bytes(buf[pos:pos + n]), len(buf), lim)


def _spans(read: Callable[[int, int], bytes], size: int, lim: ReaderLimits) -> list[MessageSpan]:
    return list(_iter_spans(read, size, lim))


def _iter_spans(read: Callable[[int, int], bytes], size: int, lim: ReaderLimits
                ) -> Iterator[MessageSpan]:
    """The Array messages' spans, message by message (an error once the walk reaches it)."""
    pos = index = 0
    while pos < size:
        if size - pos < _U32:
            raise TruncatedStreamError(
                f"stream ends inside the length prefix of a message ({size - pos} of 4 bytes "
                "present)", message_index=index, offset=size)
        n = int.from_bytes(read(pos, _U32), "little")
        if n == 0:
            raise MalformedStreamError("message header length is 0", message_index=index,
                                       offset=pos)
        if n > lim.max_header_bytes:
            raise LimitExceededError(f"message header of {n} bytes exceeds the limit of "
                                     f"{lim.max_header_bytes}", message_index=index, offset=pos)
        if pos + _U32 + n > size:
            raise TruncatedStreamError(
                f"stream ends inside the header of a message ({size - pos - _U32} of {n} bytes "
                "present)", message_index=index, offset=size)
        try:
            hdr = decode_message_header(memoryview(read(pos + _U32, n)))
        except VortexIPCError as e:
            raise e.locate(message_index=index, offset=pos) from None
        if hdr.body_size > lim.max_body_bytes:
            raise LimitExceededError(f"message body of {hdr.body_size} bytes exceeds the limit "
                                     f"of {lim.max_body_bytes}", message_index=index, offset=pos)
        end = pos + _U32 + n + hdr.body_size
        if end > size:
            raise TruncatedStreamError(
                f"stream ends inside the body of a message ({size - pos - _U32 - n} of "
                f"{hdr.body_size} bytes present)", message_index=index, offset=size)
        if index == 0:
            if hdr.type != MessageType.DTYPE:
                raise MalformedStreamError(
                    f"a stream must start with a DType message, not {hdr.type.name}",
                    message_index=0, offset=0)
        elif hdr.type == MessageType.BUFFER:
            raise MalformedStreamError("a Buffer message is not allowed in an array stream",
                                       message_index=index, offset=pos)
        elif hdr.type == MessageType.DTYPE:
            raise MalformedStreamError("a second DType message in the stream",
                                       message_index=index, offset=pos)
        else:
            yield MessageSpan(index, pos, end - pos, hdr.row_count)
        pos, index = end, index + 1
    if index == 0:
        raise MalformedStreamError("the stream is empty: it has no DType message", offset=0)


def message_ranges(spans: Sequence[MessageSpan], *, target_bytes: int | None = None,
                   target_rows: int | None = None, parts: int | None = None
                   ) -> list[MessageRange]:
    """``spans`` (of one stream, in order) cut at message boundaries into consecutive
    ranges: of about ``target_bytes`` bytes and / or ``target_rows`` rows each (a range
    closes once it reaches either), or ``parts`` ranges of about equal bytes (fewer when
    there are fewer messages). Every range holds at least one message; with no option, one
    range of everything; no spans, no ranges.

    >>> spans = [MessageSpan(i, 100 * i, 100, 10) for i in range(1, 6)]
    >>> [(r.start, r.stop, r.rows) for r in message_ranges(spans, target_bytes=200)]
    [(1, 3, 20), (3, 5, 20), (5, 6, 10)]
    >>> [(r.start, r.stop) for r in message_ranges(spans, parts=2)]
    [(1, 3), (3, 6)]
    """
    if target_bytes is not None and target_bytes < 1:
        raise ValueError("target_bytes must be positive")
    if target_rows is not None and target_rows < 1:
        raise ValueError("target_rows must be positive")
    if parts is not None:
        if parts < 1:
            raise ValueError("parts must be positive")
        if target_bytes is not None or target_rows is not None:
            raise ValueError("give parts or targets, not both")
    out: list[MessageRange] = []
    group: list[MessageSpan] = []
    if parts is not None:
        # each message to the part its byte midpoint falls in
        total = sum(s.size for s in spans) or 1
        cum, part = 0, 0
        for s in spans:
            p = min(parts - 1, int((cum + s.size / 2) * parts / total))
            if p != part and group:
                out.append(_range_of(group))
                group = []
            part = p
            group.append(s)
            cum += s.size
        if group:
            out.append(_range_of(group))
        return out

    def close() -> None:
        if group:
            out.append(_range_of(group))
            group.clear()

    nbytes = nrows = 0
    for s in spans:
        group.append(s)
        nbytes += s.size
        nrows += s.rows
        if ((target_bytes is not None and nbytes >= target_bytes)
                or (target_rows is not None and nrows >= target_rows)):
            close()
            nbytes = nrows = 0
    close()
    return out


def _range_of(group: Sequence[MessageSpan]) -> MessageRange:
    return MessageRange(group[0].index, group[-1].index + 1, group[0].offset,
                        rows=sum(s.rows for s in group), size=sum(s.size for s in group))


#: a directory source stands for its files whose names end with this, at any depth
DIRECTORY_SUFFIX = ".vxipc"


def _hidden(name: str) -> bool:
    """Names a directory listing skips (``.``/``_`` prefixed: ``_SUCCESS``, ``.tmp``), as
    pyarrow datasets and Spark skip them."""
    return name.startswith((".", "_"))


def directory_files(path: str, keep: Callable[[str], bool] | None = None) -> list[str]:
    """The files below the local directory ``path`` whose names ``keep`` accepts (default:
    those ending in ``.vxipc``), at any depth, sorted; hidden names (and what is below
    them) skipped. None raises ``FileNotFoundError``."""
    if keep is None:
        keep = _is_stream_name
    out: list[str] = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not _hidden(d)]
        out.extend(os.path.join(root, f) for f in files if not _hidden(f) and keep(f))
    if not out:
        what = f"{DIRECTORY_SUFFIX} files" if keep is _is_stream_name else "files to read"
        raise FileNotFoundError(f"no {what} in the directory {path!r}")
    return sorted(out)


def _is_stream_name(name: str) -> bool:
    return name.endswith(DIRECTORY_SUFFIX)


def expand_with_bases(source: Any, storage_options: dict[str, Any] | None) -> list[tuple[Any, str | None]]:
    """``expand_sources`` with, for each file, the directory it was found in (None for a
    source naming it, or found by a glob): where its hive partitions start."""
    if isinstance(source, (list, tuple)):
        out: list[tuple[Any, str | None]] = []
        for s in source:
            out.extend(expand_with_bases(s, storage_options))
        return out
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        return [(source, None)]
    if _fs.is_remote(source):
        if _fs.has_glob(source):
            return [(u, None) for u in _fs.glob_url(source, storage_options)]
        if source.endswith("/"):
            return [(u, source) for u in _fs.list_url_directory(
                source, storage_options, suffix=DIRECTORY_SUFFIX, hidden=_hidden)]
        return [(source, None)]
    path = _fs.file_url_path(source) if _fs.is_file_url(source) else source
    if os.path.isdir(path):
        return [(f, path) for f in directory_files(path)]
    if _fs.has_glob(path) and not os.path.exists(path):  # a file named br[1].vxipc is that file
        matches = sorted(m for m in _glob.glob(path, recursive=True) if not os.path.isdir(m))
        if not matches:
            raise FileNotFoundError(f"no files match {path!r}")
        return [(m, None) for m in matches]
    return [(source, None)]  # (a file:// URL as given: errors name it)


def expand_sources(source: Any, *, storage_options: dict[str, Any] | None = None
                   ) -> list[Any]:
    """The streams a source stands for, in order: a list/tuple each of its items expanded,
    a directory its ``*.vxipc`` files at any depth (sorted; names starting with ``.`` or
    ``_`` skipped, as pyarrow datasets skip them), a glob pattern its matching files
    (sorted; ``**`` spans directories), else the source itself. A glob or directory of no
    file raises ``FileNotFoundError``; a path that exists is never a pattern
    (``br[1].vxipc``). A URL glob (``s3://bucket/*.vxipc``) and a URL ending in ``/`` (a
    directory) are listed by its fsspec file system (with ``storage_options``), the
    results keeping the URL's scheme; ``file://`` URLs are local paths.

    >>> import fsspec, io, pyarrow as pa, vortex_io as vio
    >>> for name in ["b", "a"]:
    ...     with fsspec.open(f"memory://doc-expand/{name}.vxipc", "wb") as f:
    ...         _ = vio.write_ipc(f, pa.table({"x": [1]}))
    >>> expand_sources("memory://doc-expand/*.vxipc")
    ['memory:///doc-expand/a.vxipc', 'memory:///doc-expand/b.vxipc']
    >>> expand_sources("memory://doc-expand/")
    ['memory:///doc-expand/a.vxipc', 'memory:///doc-expand/b.vxipc']
    """
    storage_options = _fs.check_storage_options("expand_sources", storage_options)
    return [s for s, _ in expand_with_bases(source, storage_options)]


def _exact_schema(storage: Any, d: dt.DType, columns: Sequence[str] | None, exact: Any,
                  string_view: bool) -> Any:
    """``storage`` (a ``_schema_of``) in the stream's exact Arrow types (``exact``: the
    reader's ``schema``); its metadata as it is (duplicate keys kept)."""
    from ._arrow import to_arrow_schema
    from ._arrow_schema import engine_schema

    if same_schema(exact.remove_metadata(), to_arrow_schema(d)):
        return storage  # the dtype gives the exact types
    if string_view:
        exact = engine_schema(exact)
    names = list(d.names) if isinstance(d, dt.Struct) else ["values"]
    out = storage
    for i, n in enumerate(names if columns is None else columns):
        out = out.set(i, exact.field(names.index(n)))
    return out


def _schema_of(d: dt.DType, columns: Sequence[str] | None, metadata: Any = None,
               string_view: bool = False) -> Any:
    """The Arrow schema of the scan's batches: the projected columns (strings as views
    with ``string_view``), and the stream's metadata (``metadata``: a ``Metadata``) as the
    schema's, as ``StreamReader.schema`` has it (pandas' dtypes, for one, live there)."""
    import pyarrow as pa

    from ._arrow import to_arrow_schema

    md = metadata.to_arrow() if metadata else None
    if not isinstance(d, dt.Struct):
        if columns:
            raise ValueError("column projection needs a stream of struct (table) dtype")
        s = to_arrow_schema(d, string_view)
        return s if md is None else s.with_metadata(md)
    full = to_arrow_schema(d, string_view)  # remembered per dtype
    if columns is None:
        return full if md is None else full.with_metadata(md)
    fields = []
    for n in columns:
        if n not in d.names:
            raise ColumnNotFoundError(n, d.names)
        fields.append(full.field(d.names.index(n)))
    return pa.schema(fields, metadata=md)


def _dictionary_schema(schema: Any, d: dt.DType, names: Sequence[str]) -> Any:
    """``schema`` with the columns ``names`` as ``dictionary<int32, string | binary>``."""
    import pyarrow as pa

    if not names:
        return schema
    if not isinstance(d, dt.Struct):
        raise ValueError("read_dictionary needs a stream of struct (table) dtype")
    for n in names:
        if n not in d.names:
            raise ColumnNotFoundError(n, d.names, context="read_dictionary")
        if not isinstance(d.field(n), (dt.Utf8, dt.Binary)):
            raise TypeError(f"read_dictionary: column {n!r} is {d.field(n)!r}; only string and "
                            "binary columns read as dictionaries")
    fields = []
    for f in schema:
        if f.name in names:
            value = pa.string() if isinstance(d.field(f.name), dt.Utf8) else pa.binary()
            f = f.with_type(pa.dictionary(pa.int32(), value))
        fields.append(f)
    return pa.schema(fields, metadata=schema.metadata)


def _rows_only(n: int) -> Any:
    """A RecordBatch of ``n`` rows and no column (a count's batch)."""
    import pyarrow as pa

    return pa.record_batch([pa.nulls(n)], names=["_"]).select([])


class _Budget:
    """The rows a scan still returns (``remaining``, None: no limit) and still skips."""

    __slots__ = ("remaining", "skip")

    def __init__(self, remaining: int | None, skip: int) -> None:
        self.remaining = remaining
        self.skip = skip


#: the native scan's windows grow to this many messages
NATIVE_WINDOW = 64


class Scan:
    """An iterable of ``pyarrow.RecordBatch`` over the matching rows, in stream order.

    Create with ``vortex_io.scan(...)``. ``schema`` is known before reading data (it reads
    the first source's DType message, and the first iteration goes on from there: a source
    is opened once). Iterating twice re-reads the sources.
    """

    def __init__(self, source: Any, *, columns: Sequence[str] | None = None,
                 filter: Expr | None = None, limit: int | None = None,
                 batch_size: int | None = None, limits: ReaderLimits | None = None,
                 offset: int = 0, string_view: bool = False, threads: int | None = None,
                 read_dictionary: Sequence[str] | None = None, messages: Any = None,
                 storage_options: dict[str, Any] | None = None,
                 hive_partitioning: bool | None = None,
                 hive_schema: Mapping[str, Any] | None = None,
                 _caller: str = "scan", _partitions: Partitions | None = None) -> None:
        fn = _caller
        storage_options = _fs.check_storage_options(fn, storage_options)
        check_type(fn, "hive_partitioning", hive_partitioning, (bool, type(None)),
                   "True, False or None")
        check_type(fn, "hive_schema", hive_schema, (Mapping, type(None)),
                   "a mapping of partition key to pyarrow.DataType, or None")
        self._expanded = expand_with_bases(source, storage_options)
        self.sources = _one_shot_paths([src for src, _ in self._expanded])
        if not self.sources:
            raise ValueError(f"{fn}() needs at least one source")
        if not any(_fs.is_url(s) for s in self.sources):
            _fs.no_url_options(fn, storage_options)
        #: the fsspec options of the sources given as URLs
        self.storage_options = storage_options
        self.messages = None if messages is None else _as_range(messages)
        if self.messages is not None and len(self.sources) != 1:
            raise ValueError("messages= selects messages of one stream: give one source")
        for s in self.sources:
            check_source(fn, "source", s)
        columns = check_names(fn, "columns", columns)
        if filter is not None and not isinstance(filter, Expr):
            raise TypeError(
                f"{fn}(): filter must be a vortex_io.expr expression such as "
                f"col('x') == 1 (from vortex_io.expr import col), or None, not {describe(filter)}")
        check_int(fn, "limit", limit, minimum=0, optional=True)
        check_int(fn, "offset", offset, minimum=0)
        check_int(fn, "batch_size", batch_size, minimum=1, optional=True)
        check_int(fn, "threads", threads, minimum=1, optional=True)
        check_type(fn, "limits", limits, (ReaderLimits, type(None)),
                   "a vortex_io.ReaderLimits or None")
        check_type(fn, "string_view", string_view, bool, "a bool")
        if isinstance(read_dictionary, str):
            raise TypeError(f"{fn}(): read_dictionary takes a sequence of column names, not a str")
        read_dictionary = check_names(fn, "read_dictionary", read_dictionary)
        self.columns = None if columns is None else list(columns)
        self.filter = filter
        self.limit = limit
        self.offset = offset
        self.batch_size = batch_size
        self.limits = limits
        self.string_view = string_view
        self.read_dictionary = [] if read_dictionary is None else list(read_dictionary)
        self._out_schema: Any = None  # the schema with read_dictionary's columns as dictionaries
        self.stats = ScanStats(sources=len(self.sources))
        self._dtype: dt.DType | None = None
        self._metadata: Any = None  # the first source's stream metadata
        self._schema: Any = None
        #: the reader that read the first source's DType message, for the first iteration
        self._first_reader: StreamReader | None = None
        self._first_closer: weakref.finalize | None = None
        self._pinned: dict[str, Any] | None = None  # see _pinned_values
        self._native: Any = None  # see _native_plan
        self.threads = threads
        #: the hive partitions of the sources (see _set_dtype), None: there are none
        self.hive_partitioning = hive_partitioning
        self._hive_schema = None if hive_schema is None else dict(hive_schema)
        self._hive: Partitions | None = None
        #: the partition values of the sources, when the caller knows them (a distributed
        #: reader's task scanning one file of many)
        self._given_partitions = _partitions
        if _partitions is not None and len(_partitions.values) != len(self.sources):
            raise ValueError("_partitions: one set of partition values per source")
        if any(isinstance(s, (bytes, bytearray, memoryview, str, os.PathLike)) for s in self.sources[:1]):
            self._read_dtype()

    def _read_dtype(self) -> dt.DType:
        d = self._dtype
        if d is None:
            src = self.sources[0]
            r = self._open(src)
            # kept for the first iteration: a source is opened once (a URL costs one request
            # less); a file object, socket or pipe must be, its DType message is consumed.
            # A scan dropped before it is iterated closes it.
            self._first_reader = r
            self._first_closer = weakref.finalize(self, r.close)
            d = self._set_dtype(r)
        return d

    def _open(self, src: Any) -> StreamReader:
        # fields are built on first use: pruned batches and unprojected columns never are
        # (errors in what is used are located by the scan, like lazily decoded data)
        return StreamReader(src, limits=self.limits, lazy_fields=True,
                            storage_options=self.storage_options if _fs.is_url(src) else None)

    def _set_dtype(self, r: StreamReader) -> dt.DType:
        """The dtype, metadata and schemas of the scan, from its first source's reader;
        returns the dtype."""
        d = self._dtype = r.dtype
        self._metadata = r.metadata
        hive = self._hive = self._given_partitions if self._given_partitions is not None \
            else partitions(self._expanded, self.hive_partitioning, self._hive_schema,
                            d.names if isinstance(d, dt.Struct) else (),
                            stored=r.partition_schema)
        if hive is not None:
            self._set_hive_schema(r, hive)
            return d
        if self.filter is not None:
            check_expr(self.filter, d)
        self._schema = _schema_of(d, self.columns, self._metadata, self.string_view)
        exact = _exact_schema(self._schema, d, self.columns, r.schema, self.string_view)
        self._out_schema = _dictionary_schema(exact, d, self.read_dictionary)
        return d

    def _set_hive_schema(self, r: StreamReader, hive: Partitions) -> None:
        """The schemas of a scan of hive-partitioned files: the data columns asked for (all
        by default), then the partition columns (or in the order ``columns`` gives)."""
        import pyarrow as pa

        d = self._dtype
        if not isinstance(d, dt.Struct):
            raise ValueError("hive partitions need streams of struct (table) dtype")
        keys = hive.names
        everything = list(d.names) + keys
        for n in (self.columns or []) + self.read_dictionary:
            if n not in everything:
                raise ColumnNotFoundError(n, everything)
        #: per source, the filter with its partition values put in (Partitions.bind)
        self._residues: list[Expr | bool] = [True] * len(self.sources)
        if self.filter is not None:
            hive.check(self.filter, d)
            self._residues = [hive.bind(self.filter, i) for i in range(len(self.sources))]
            for rest in self._residues:
                if isinstance(rest, Expr):
                    check_expr(rest, d)
        for n in self.read_dictionary:
            if n in keys and not pa.types.is_string(hive.schema.field(n).type):
                raise TypeError(f"read_dictionary: hive partition column {n!r} is "
                                f"{hive.schema.field(n).type}; only string columns read as "
                                "dictionaries")
        names = everything if self.columns is None else self.columns
        data = [n for n in names if n not in keys]
        self._schema = _schema_of(d, data, self._metadata, self.string_view)
        exact = _exact_schema(self._schema, d, data, r.schema, self.string_view)
        exact = _dictionary_schema(exact, d, [n for n in self.read_dictionary if n not in keys])
        parts = hive.columns([n for n in names if n in keys], 0, 0,
                             string_view=self.string_view, dictionary=self.read_dictionary)
        part_fields = {n: hive.schema.field(n).with_type(a.type) for n, a in
                       zip([n for n in names if n in keys], parts)}
        self._out_schema = pa.schema([part_fields[n] if n in keys else exact.field(n)
                                      for n in names], metadata=exact.metadata)

    def _run_hive(self, hive: Partitions, b: _Budget, emit: Callable[[Any], Iterator[Any]]
                  ) -> Iterator[Any]:
        """A scan of hive-partitioned files: per file, a scan of its data columns with the
        filter left once its partition values are put in (a file they rule out is not
        opened), its batches given the partition columns."""
        import pyarrow as pa

        if self._first_reader is not None:  # each file is scanned by its own Scan
            self._first_reader.close()
            self._first_reader = None
            if self._first_closer is not None:
                self._first_closer.detach()
        out_schema = self._out_schema
        names = out_schema.names
        keys = [n for n in names if n in hive.names]
        data = [n for n in names if n not in hive.names]
        stats = self.stats
        for i, src in enumerate(self.sources):
            if b.remaining is not None and b.remaining <= 0:
                return
            rest = self._residues[i]
            if rest is False:
                with stats._lock:
                    stats.files_pruned += 1
                continue
            part = Scan(src, columns=data, filter=None if rest is True else rest,
                        limit=None if b.remaining is None else b.remaining + b.skip,
                        limits=self.limits, string_view=self.string_view, threads=self.threads,
                        read_dictionary=[n for n in self.read_dictionary if n in data],
                        messages=self.messages, storage_options=self.storage_options,
                        hive_partitioning=False, _caller="scan")
            try:
                if part.dtype != self._dtype:
                    raise VortexIPCError(f"stream dtype {part.dtype!r} differs from the first "
                                         f"source's {self._dtype!r}",
                                         source=src if isinstance(src, str) else None)
                for batch in part:
                    consts = dict(zip(keys, hive.columns(
                        keys, batch.num_rows, i, string_view=self.string_view,
                        dictionary=self.read_dictionary)))
                    arrays = [consts[n] if n in consts else batch.column(n) for n in names]
                    yield from emit(pa.RecordBatch.from_arrays(arrays, schema=out_schema)
                                    if arrays else _rows_only(batch.num_rows))
                    if b.remaining is not None and b.remaining <= 0:
                        return
            finally:
                got = part.stats
                with stats._lock:
                    for f in ("chunks", "chunks_pruned", "rows_scanned", "bytes_read",
                              "bytes_canonicalized"):
                        setattr(stats, f, getattr(stats, f) + getattr(got, f))

    @property
    def partitions(self) -> Partitions | None:
        """The hive partitions of the sources (their keys' ``schema`` and each source's
        ``values``), None when there are none (reads the first source's DType message)."""
        self._read_dtype()
        return self._hive

    @property
    def dtype(self) -> dt.DType:
        """The dtype of the streams (the first source's)."""
        return self._read_dtype()

    @property
    def schema(self) -> Any:
        """The Arrow schema of the batches this scan yields."""
        self._read_dtype()
        return self._out_schema

    def __iter__(self) -> Iterator[Any]:
        return self._run()

    def _run(self) -> Iterator[Any]:
        stats = self.stats
        b = _Budget(self.limit, self.offset)
        d = self._dtype

        def emit(out: Any) -> Iterator[Any]:
            """The batches one chunk's (or group's) result gives, after offset and limit."""
            if out is None:
                return
            if b.skip:
                dropped = min(b.skip, out.num_rows)
                out, b.skip = out.slice(dropped), b.skip - dropped
            if b.remaining is not None:
                out = out.slice(0, b.remaining)
                b.remaining -= out.num_rows
            with stats._lock:
                stats.rows_returned += out.num_rows
            if out.num_rows == 0:
                return
            if out.schema is not self._out_schema and not same_schema(out.schema,
                                                                      self._out_schema):
                out = restore_batch(out, self._out_schema)
            if self.batch_size:
                for s in range(0, out.num_rows, self.batch_size):
                    yield out.slice(s, self.batch_size)
            else:
                yield out

        if self._hive is not None:
            yield from self._run_hive(self._hive, b, emit)
            return
        for src in self.sources:
            if b.remaining is not None and b.remaining <= 0:
                return
            if self._first_reader is not None and src is self.sources[0]:
                reader, self._first_reader = self._first_reader, None
                if self._first_closer is not None:  # closed below, as every reader is
                    self._first_closer.detach()
            else:
                reader = self._open(src)
            skipped = 0  # bytes before a message range that were jumped over, never read
            reader.read_ahead = self.limit is None  # a scan without a limit reads to the end
            try:
                if self.messages is not None:
                    skipped = self._enter_range(reader)
                if d is None:
                    d = self._set_dtype(reader)
                elif reader.dtype != d:
                    raise VortexIPCError(
                        f"stream dtype {reader.dtype!r} differs from the first source's {d!r}",
                        source=str(src) if isinstance(src, (str, os.PathLike)) else None)
                if self._counts_from_headers(reader):
                    for out in self._header_rows(reader):
                        yield from emit(out)
                        if b.remaining is not None and b.remaining <= 0:
                            return
                    continue
                plan = self._native_plan()
                if plan is not None:
                    for out in self._scan_native(reader, plan, b):
                        yield from emit(out)
                        if b.remaining is not None and b.remaining <= 0:
                            return
                    continue
                yield from self._scan_source(reader, b, emit)
            finally:
                with stats._lock:
                    stats.bytes_read += reader.bytes_consumed - skipped
                reader.close()

    def _counts_from_headers(self, reader: StreamReader) -> bool:
        """Whether the source's rows are counted from its messages' headers alone, bodies
        never read: a scan that reads no column and filters nothing (a count), of a regular
        local file without integrity data (a stream with it is read whole, every body
        verified) and no message range."""
        return (not self._schema.names and self.filter is None and self.messages is None
                and reader.file_descriptor is not None and not reader.integrity)

    def _header_rows(self, reader: StreamReader) -> Iterator[Any]:
        """A batch of no column per Array message of ``reader``'s file, its rows read off
        the message's header: the file is read with ``os.pread`` at each message's start
        (its length prefix and header; bodies are skipped, so damage inside a body goes
        unseen, as a Parquet count from the footer does not read pages). Framing errors
        are the reader's (``message_spans``)."""
        fd = reader.file_descriptor
        assert fd is not None
        size = os.fstat(fd).st_size
        lim = reader.limits
        stats = self.stats
        read_bytes = 0

        def read(pos: int, n: int) -> bytes:
            nonlocal read_bytes
            data = os.pread(fd, n, pos)
            read_bytes += len(data)
            return data

        spans = _iter_spans(read, size, lim)
        while True:
            try:
                sp = next(spans, None)
            except VortexIPCError as e:
                raise e.locate(source=reader.source_name) from None
            finally:
                with stats._lock:  # (the DType message's bytes are the reader's)
                    stats.bytes_read += read_bytes
                read_bytes = 0
            if sp is None:
                return
            try:
                check_message_rows(sp.rows, lim)
            except VortexIPCError as e:
                raise e.locate(message_index=sp.index, offset=sp.offset,
                               source=reader.source_name) from None
            with stats._lock:
                stats.chunks += 1
                stats.rows_scanned += sp.rows
            if sp.rows:
                yield _rows_only(sp.rows)

    def _enter_range(self, reader: StreamReader) -> int:
        """Position ``reader`` at the first message of ``self.messages`` and end it before
        ``stop``; returns the bytes jumped over unread (0 when the headers before the range
        were walked: a file object, or no offset given)."""
        r = self.messages
        assert r is not None
        try:
            return reader.select_messages(r.start, r.stop, offset=r.offset)
        except ValueError as e:
            raise ValueError(f"messages=: {e}") from None

    def _scan_source(self, reader: StreamReader, b: _Budget, emit: Callable[[Any], Iterator[Any]]
                     ) -> Iterator[Any]:
        """One source scanned by the Python implementation, batch by batch."""
        stats = self.stats
        for batch in reader:
            if b.remaining is not None and b.remaining <= 0:
                return
            arr = batch.array
            if b.skip and self.filter is None:
                # without a filter the offset skips rows undecoded
                if len(arr) <= b.skip:
                    b.skip -= len(arr)
                    with stats._lock:
                        stats.chunks += 1
                    continue
                try:
                    arr, b.skip = arr.slice(b.skip, len(arr)), 0
                except VortexIPCError as e:
                    raise e.locate(message_index=batch.index, offset=batch.offset,
                                   source=reader.source_name) from None
            yield from emit(self._scan_one(arr, batch, reader,
                                           None if b.remaining is None else b.remaining + b.skip))

    # -- the native core ------------------------------------------------------------------

    def _dict_names(self) -> list[str]:
        """read_dictionary's columns among the output columns."""
        return [n for n in self._schema.names if n in self.read_dictionary]

    def _native_plan(self) -> Any:
        """(predicate, filter fields, output fields, pinned) for the native core, or None
        when this scan runs in Python (the core is off, the dtype is not a struct, or the
        filter has a part only Python evaluates)."""
        if not ng.enabled():
            return None
        d = self._dtype
        if not isinstance(d, dt.Struct):
            return None
        if self._native is None:
            program = None
            if self.filter is not None:
                program = lower(self.filter, d)
                if program is None:
                    self._native = False
                    return None
            if self._pinned is None:
                self._pinned = (_pinned_values(self.filter, d, self._schema)
                                if self.filter is not None else {})
            ffields = (sorted(d.names.index(n) for n in self.filter.columns())
                       if self.filter is not None else [])
            out = [d.names.index(n) for n in self._schema.names if n not in self._pinned]
            dict_fields = [d.names.index(n) for n in self._dict_names() if n not in self._pinned]
            self._native = (program, ffields, out, dict_fields)
        return self._native or None

    def _scan_native(self, reader: StreamReader, plan: Any, b: _Budget) -> Iterator[Any]:
        """One source scanned by the native core: windows of messages (the first alone,
        then doubling up to ``NATIVE_WINDOW`` messages) pruned, filtered and taken with
        the GIL released on the core's threads; batches in stream order, an error after
        the batches before it."""
        import pyarrow as pa

        program, ffields, outf, dict_fields = plan
        d = self._dtype
        assert isinstance(d, dt.Struct)  # a plan is made for a struct dtype only (_native_plan)
        stats = self.stats
        s = ng.stream(d, reader.limits)
        schema = self._out_schema if dict_fields else self._schema
        names = schema.names
        # the native core hands read_dictionary's columns over as dictionaries
        types = {d.names[f]: (schema if f in dict_fields else self._schema).field(d.names[f]).type
                 for f in outf}
        imp = pa.Array._import_from_c_capsule
        threads = ng.decode_threads(self.threads)
        reader.background_checks = threads > 1
        err: VortexIPCError | None = None

        def fill(window: int) -> list[Any]:
            """The next window's messages (an error reading them is kept in ``err``, raised
            after the batches before it)."""
            nonlocal err
            pending: list[Any] = []
            while len(pending) < window and err is None:
                try:
                    m = reader.read_message()
                except VortexIPCError as e:
                    err = e
                    break
                if m is None:
                    break
                if program is None and b.skip:
                    rows = m.header.row_count
                    if rows <= b.skip:  # without a filter the offset skips rows undecoded
                        try:
                            m.check_body()  # (verified all the same)
                        except VortexIPCError as e:
                            err = e.locate(source=reader.source_name)
                            break
                        b.skip -= rows
                        with stats._lock:
                            stats.chunks += 1
                        continue
                    pending.append((m, b.skip))
                    b.skip = 0
                    continue
                pending.append((m, 0))
            # the bodies' integrity checks (computed in the background while the window was
            # framed): a failure ends the window before that message (it is raised after the
            # batches before it, and before any later framing error)
            for j, (m, _) in enumerate(pending):
                try:
                    m.check_body()
                except VortexIPCError as e:
                    err = e.locate(source=reader.source_name)
                    del pending[j:]
                    break
            return pending

        def run(pending: list[Any]) -> Any:
            cap = -1 if b.remaining is None else b.remaining + b.skip
            msgs = [(m.body, m.header.row_count, m.header.encodings,
                     ng.known_flags(m.header.encodings)) for m, _ in pending]
            ranges = [(start, m.header.row_count, cap) for m, start in pending]
            return cap, s.scan(msgs, program, ffields, outf, ranges, self.string_view, threads,
                               dict_fields)

        window = 1
        pending = fill(window)
        while pending:
            cap, res = run(pending)
            for (m, start), r in zip(pending, res):
                kind = r[0]
                if kind == "err":
                    raise ng.error_of(r[1], r[2]).locate(
                        message_index=m.index, offset=m.offset, source=reader.source_name)
                rows = m.header.row_count
                if kind == "python":
                    arr = m.array(d, reader.limits, lazy=True)
                    if start:
                        arr = arr.slice(start, len(arr))
                    yield self._scan_one(arr, m, reader, None if cap < 0 else cap)
                    continue
                with stats._lock:
                    stats.chunks += 1
                    stats.rows_scanned += rows - start
                    if kind == "pruned":
                        stats.chunks_pruned += 1
                        continue
                    stats.bytes_canonicalized += r[4]
                n, pos, cols = r[1], r[2], r[3]
                by_name = {}
                for f, c in zip(outf, cols):
                    nm = d.names[f]
                    by_name[nm] = None if c is None else imp(types[nm].__arrow_c_schema__(), c)
                # the columns handed back are built (so checked) here, as the reference builds
                # every output column of a message: but none of one a filter selects no row of
                if (n or self.filter is None) and any(v is None for v in by_name.values()):
                    idx = None if pos is None else np.frombuffer(pos, dtype=np.uint32).astype(np.int64)
                    arr = m.array(d, reader.limits, lazy=True)
                    gathered: list[int] = []
                    try:
                        for nm, v in by_name.items():
                            if v is None:
                                ng.handed_back(f"column {nm!r} of message {m.index}")
                                by_name[nm] = _select(arr.field(nm), idx, self.string_view,
                                                      gathered)
                    except VortexIPCError as e:
                        raise e.locate(message_index=m.index, offset=m.offset,
                                       source=reader.source_name) from None
                    with stats._lock:
                        stats.bytes_canonicalized += sum(gathered) + canonicalized_nbytes(arr)
                if n == 0:
                    if names:
                        yield pa.RecordBatch.from_pylist([], schema=schema)
                    continue
                if not names:  # rows only (a count)
                    yield _rows_only(n)
                    continue
                pinned = self._pinned or {}
                out = [pa.repeat(pinned[nm], n) if nm in pinned else by_name[nm] for nm in names]
                if dict_fields:  # columns Python built (handed back, pinned) as dictionaries too
                    out = [restore_array(a, schema.field(i).type) for i, a in enumerate(out)]
                yield pa.RecordBatch.from_arrays(out, schema=schema)
            if err is not None:
                raise err
            if b.remaining is not None and b.remaining <= 0:
                return
            window = min(window * 2, NATIVE_WINDOW)
            pending = fill(window)
        if err is not None:
            raise err

    def _scan_one(self, arr: Array, batch: Any, reader: StreamReader, remaining: int | None) -> Any:
        """One batch: its selected rows as a RecordBatch, or None when pruned (counted)."""
        stats = self.stats
        decoded: list[int] = []
        try:
            out = self._scan_chunk(arr, remaining, decoded)
        except VortexIPCError as e:  # decoded lazily: say which file and message
            raise e.locate(message_index=batch.index, offset=batch.offset,
                           source=reader.source_name) from None
        with stats._lock:
            stats.chunks += 1
            stats.rows_scanned += len(arr)
            stats.bytes_canonicalized += sum(decoded)
            if out is None:
                stats.chunks_pruned += 1
        return out

    def _output(self, select: Callable[[str], Any], idx: np.ndarray | None) -> Any:
        """The RecordBatch of the schema's columns for the rows ``idx`` (all when None):
        columns an equality conjunct pins repeat its literal, the others are
        ``select(name)``."""
        import pyarrow as pa

        if self._pinned is None:
            self._pinned = (_pinned_values(self.filter, self.dtype, self._schema)
                            if idx is not None else {})
        pinned = self._pinned
        cols = [pa.repeat(pinned[nm], len(idx)) if nm in pinned and idx is not None
                else select(nm) for nm in self._schema.names]
        return pa.RecordBatch.from_arrays(cols, schema=self._schema)

    def _scan_chunk(self, arr: Array, remaining: int | None, decoded: list[int]) -> Any:
        """The selected rows of one chunk as a RecordBatch, or None when pruned; appends to
        ``decoded`` the bytes it materialized (``ScanStats.bytes_canonicalized``)."""
        roots = [arr]  # the trees decoded: ``arr``, and the slice a limit cuts of it
        try:
            return self._chunk_batch(arr, remaining, decoded, roots)
        finally:
            decoded.extend(canonicalized_nbytes(r) for r in roots)

    def _chunk_batch(self, arr: Array, remaining: int | None, gathered: list[int],
                     roots: list[Array]) -> Any:
        import pyarrow as pa

        schema = self._schema
        n = len(arr)
        if self.filter is not None:
            if can_skip(self.filter, arr):
                return None
            sel = mask_true(evaluate_mask(self.filter, arr))
            idx = np.flatnonzero(sel)
        else:
            idx = None
        if remaining is not None:
            cap = remaining
            if idx is None:
                if cap < n:
                    arr = arr.slice(0, cap)
                    roots.append(arr)
                    n = cap
            elif len(idx) > cap:
                idx = idx[:cap]
        if idx is not None and len(idx) == 0:
            # nothing selected: no column is built or decoded (with lazily built fields,
            # a batch the filter rejects costs its filter columns only)
            return pa.RecordBatch.from_pylist([], schema=schema)
        if not isinstance(self._dtype, dt.Struct):
            col = _select(arr, idx, self.string_view, gathered)
            return pa.RecordBatch.from_arrays([col], schema=schema)
        names = schema.names
        if not names:
            return _rows_only(n if idx is None else len(idx))
        return self._output(
            lambda nm: _select(arr.field(nm), idx, self.string_view, gathered), idx)

    def to_arrow(self) -> Any:
        """All matching rows as a ``pyarrow.Table``."""
        import pyarrow as pa

        batches = list(self)
        return pa.Table.from_batches(batches, schema=self.schema)

    def to_reader(self) -> Any:
        """A ``pyarrow.RecordBatchReader`` over the scan."""
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self.schema, iter(self))

    def __arrow_c_schema__(self) -> Any:
        """``schema`` as an Arrow PyCapsule (reads the first source's DType message only)."""
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The scan as an Arrow C stream: batches are scanned as the consumer pulls them
        (nothing is materialized first). Each export is a new pass over the sources, as
        iterating is, so pyarrow, Polars, DuckDB and pandas take a scan as often as they
        like. ``requested_schema``: the batches are cast to it as pyarrow casts.

        >>> import io, pyarrow as pa, vortex_io as vio
        >>> buf = io.BytesIO()
        >>> _ = vio.write_ipc(buf, pa.table({"x": [1, 2, 3]}))
        >>> s = vio.scan(buf.getvalue(), filter=vio.expr.col("x") > 1)
        >>> pa.RecordBatchReader.from_stream(s).read_all()["x"].to_pylist()
        [2, 3]
        >>> pa.table(s).num_rows  # a second export: a second pass
        2
        """
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return (f"Scan(sources={len(self.sources)}, columns={self.columns}, filter={self.filter!r}, "
                f"limit={self.limit}, offset={self.offset})")

    def _repr_html_(self) -> str:
        import html

        return (f"<b>vortex_io.Scan</b> over {len(self.sources)} source(s)<br>columns: "
                f"{html.escape(str(self.columns or 'all'))}<br>filter: "
                f"<code>{html.escape(repr(self.filter))}</code><br>stats: "
                f"{html.escape(str(self.stats.as_dict()))}")


def _one_shot_paths(sources: list[Any]) -> list[Any]:
    """``sources`` with paths naming pipes, FIFOs and character devices (``/dev/stdin``,
    ``mkfifo``) opened, once: their bytes can be read only once, so they are scanned as the
    file objects they are."""
    import stat

    out = []
    for s in sources:
        if isinstance(s, (str, os.PathLike)) and not _fs.is_url(s):
            try:
                mode = os.stat(s).st_mode
            except OSError:
                mode = None  # the reader reports it
            if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
                s = open(s, "rb")
        out.append(s)
    return out


def _pinned_values(filter: Expr | None, d: dt.DType, schema: Any) -> dict[str, Any]:
    """Output columns every selected row holds one known value of: ``col == literal``
    among the filter's AND-conjuncts, for dtypes where equal means identical (strings,
    binary, booleans, integers, timestamps; not floats: ``-0.0 == 0.0``). The scan
    repeats the literal for them instead of decoding the rows it already compared."""
    import pyarrow as pa

    out: dict[str, Any] = {}
    if filter is None or not isinstance(d, dt.Struct):
        return out
    stack = [filter]
    while stack:
        e = stack.pop()
        if isinstance(e, And):
            stack += [e.left, e.right]
            continue
        if not isinstance(e, Compare):
            continue
        op, c, v = e.normalized()
        if op != "eq" or not isinstance(c, Column) or not isinstance(v, Literal):
            continue
        if c.name not in d.names or c.name not in schema.names:
            continue
        fd = d.field(c.name)
        s = fd.storage if isinstance(fd, dt.Extension) else fd
        if isinstance(fd, dt.Extension) and not (fd.is_temporal and isinstance(s, dt.Primitive)):
            continue
        want: tuple[type, ...] | None = (
            (str,) if isinstance(s, dt.Utf8) else (bytes,) if isinstance(s, dt.Binary)
            else (bool,) if isinstance(s, dt.Bool)
            else (int,) if isinstance(s, dt.Primitive) and s.ptype.is_int else None)
        if want is None:
            continue
        try:
            value = coerce_literal(fd, v.value)
            if type(value) not in want:  # e.g. 1.5 against integers: no row can match
                continue
            out[c.name] = pa.scalar(value, type=schema.field(c.name).type)
        except (TypeError, ValueError, OverflowError, pa.ArrowInvalid):
            continue  # out of the column's range: no row matches, nothing to pin
    return out


def _select(a: Array, idx: np.ndarray | None, string_view: bool = False,
            gathered: list[int] | None = None) -> Any:
    """Arrow array of the rows ``idx`` (all rows when None), decoding only those; strings
    as views with ``string_view``. The bytes of rows gathered into new arrays are appended
    to ``gathered`` (the canonical forms decoding caches on ``a`` are counted apart:
    ``canonicalized_nbytes``)."""
    import pyarrow as pa

    if idx is not None and len(idx) != len(a):
        out = take_arrow(a, idx, string_view=string_view) if len(idx) else None
        if out is not None:  # decoded straight from the encoded buffers
            if gathered is not None:
                gathered.append(out.nbytes)
            return out
        sub = a.vtable.take(a, idx) if len(idx) else a.slice(0, 0)
        if sub is NotImplemented:
            # no encoded gather for this encoding: decode once and gather in Arrow, rather
            # than gather in Arrow, re-import to Vortex and export again (kernels.take)
            full = a.to_arrow(string_view=string_view)
            if isinstance(full, pa.ChunkedArray):
                full = full.combine_chunks()
            out = arrow_take(full, idx)
            if gathered is not None:
                gathered.append(out.nbytes)
            return out
    else:
        sub = a
    out = sub.to_arrow(string_view=string_view)
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    if gathered is not None and sub is not a:
        gathered.append(out.nbytes)
    return out


def scan(source: Any, *, columns: Sequence[str] | None = None, filter: Expr | None = None,
         limit: int | None = None, batch_size: int | None = None,
         limits: ReaderLimits | None = None, offset: int = 0,
         string_view: bool = False, threads: int | None = None,
         read_dictionary: Sequence[str] | None = None, messages: Any = None,
         storage_options: dict[str, Any] | None = None,
         hive_partitioning: bool | None = None,
         hive_schema: Mapping[str, Any] | None = None) -> Scan:
    """Scan one or many streams with projection, filter and limit pushdown.

    ``source``: a path, URL, bytes-like object, binary file object, a list of those, a
    directory (its ``*.vxipc`` files at any depth, sorted; ``.``/``_`` names skipped), or a
    glob pattern (of paths or URLs; see :func:`expand_sources`). A URL (``s3://``, ``gs://``, ``https://``,
    ``memory://``, any scheme fsspec knows; ``pip install 'vortex-io[fsspec]'``) is read
    with ranged reads in growing blocks; ``storage_options`` go to its fsspec file system.
    ``columns``: the fields to return (default: all; ``[]``: rows only, a count, which a
    local file without integrity data answers from its messages' headers, bodies never
    read, as Parquet counts from its footer). ``filter``: a ``vortex_io.expr`` expression.
    ``limit``: at most this many rows. ``offset``: skip this many matching rows first
    (without a filter, whole chunks are skipped undecoded). ``batch_size``: split output
    batches to at most this many rows. ``string_view``: strings come out as Arrow
    ``string_view`` (Polars' native layout; cheaper to decode from dictionaries) instead of
    ``string``. ``threads``: how many threads the native
    core scans on (None: every core; 1: the calling thread only); the batches and their
    order are the same whatever the count. ``read_dictionary``: string or binary columns to
    return as Arrow ``dictionary<int32, string | binary>`` (as ``pyarrow.parquet``'s option of
    that name): a dictionary-encoded column is handed over as its codes and values, never
    expanded (engines group and filter such columns per distinct value); a column encoded
    otherwise in some message is dictionary-encoded for it. ``messages``: scan only these
    Array messages of one stream, a ``MessageRange`` (from :func:`message_ranges` over the
    header-only :func:`message_spans`: the scan jumps to its byte offset and stops after it,
    so ``stats.bytes_read`` counts the DType message and the range), a ``range`` or a
    ``(start, stop)`` tuple of stream message indices (the DType message is 0); distributed
    readers give each task one range. ``hive_partitioning``: the ``key=value`` directories
    of the files' paths as columns (``dir/year=2024/part-0.vxipc``), after the data's, as
    Polars and pyarrow read such a layout; None (the default): when every source is a
    directory and its files agree on the keys; True: for any paths; False: never. Their
    types are inferred (int64, float64, else string; ``__HIVE_DEFAULT_PARTITION__`` is
    null) unless ``hive_schema`` maps a key to a ``pyarrow.DataType``. A filter on them
    skips the files it rules out unopened (``stats.files_pruned``); a key the data has as
    a column is read from the data.

    >>> import os, tempfile, pyarrow as pa, vortex_io as vio
    >>> from vortex_io.expr import col
    >>> d = tempfile.mkdtemp()
    >>> for year in (2023, 2024):
    ...     os.makedirs(f"{d}/year={year}")
    ...     _ = vio.write_ipc(f"{d}/year={year}/0.vxipc", pa.table({"v": [year % 10, 7]}))
    >>> s = vio.scan(d, filter=(col("year") == 2024) & (col("v") > 5))
    >>> s.to_arrow().to_pydict(), s.stats.files_pruned
    ({'v': [7], 'year': [2024]}, 1)
    """
    return Scan(source, columns=columns, filter=filter, limit=limit, batch_size=batch_size,
                limits=limits, offset=offset, string_view=string_view, threads=threads,
                read_dictionary=read_dictionary, messages=messages,
                storage_options=storage_options, hive_partitioning=hive_partitioning,
                hive_schema=hive_schema)


def read_table(source: Any, *, columns: Sequence[str] | None = None,
               filter: Expr | None = None,
               storage_options: dict[str, Any] | None = None,
               hive_partitioning: bool | None = None,
               hive_schema: Mapping[str, Any] | None = None) -> Any:
    """Read a stream (or several: a list, a directory or a glob, as for ``scan``; a hive
    layout's partition columns included) into one
    ``pyarrow.Table``: the one-call read, like ``pyarrow.parquet.read_table``.

    ``columns``: the columns to read (default: all); ``filter``: a ``vortex_io.expr``
    expression the rows must satisfy, evaluated on the encoded data; ``storage_options``:
    for URLs, as for ``scan``. The table's schema
    carries the stream's metadata. For limits, offsets, threads or dictionaries use
    ``scan(...)``, whose options this shares.

    >>> import io, pyarrow as pa, vortex_io as vio
    >>> from vortex_io.expr import col
    >>> buf = io.BytesIO()
    >>> _ = vio.write_ipc(buf, pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]}))
    >>> vio.read_table(buf.getvalue(), columns=["v"], filter=col("k") == "a").to_pydict()
    {'v': [1, 3]}
    """
    return Scan(source, columns=columns, filter=filter, storage_options=storage_options,
                hive_partitioning=hive_partitioning, hive_schema=hive_schema,
                _caller="read_table").to_arrow()
