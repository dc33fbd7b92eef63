"""Partitioned writes: ``write_ipc(directory, data, partition_by=[...])``.

The layout is the hive one Polars' ``write_parquet(partition_by=...)`` and pyarrow's
``write_to_dataset`` write: ``directory/k1=v1/k2=v2/part-0.vxipc``. The partition columns
are left out of the files; each value is its Arrow cast to a string, percent-escaped as
pyarrow escapes it (everything but ``A-Z a-z 0-9 - . _ ~``), null is
``__HIVE_DEFAULT_PARTITION__`` and the empty string an empty name (``k=``), as pyarrow,
Polars and DuckDB write and read them.

The data is read batch by batch: each batch is split by its partition values, each part
buffered for its partition until ``chunk_rows`` rows are there, then written to that
partition's open ``StreamWriter``. At most ``max_open_files`` writers are open; opening
one more closes the least recently used, and that partition's next rows start a new file
(``part-1.vxipc``, ...). Memory is bounded by the batch being split and the buffered rows
(fewer than ``chunk_rows`` rows per partition, and never more than
``MAX_BUFFERED_BYTES`` over all partitions: past it buffers are written out, those of
open files first, then the largest, down to half of it).
"""

from __future__ import annotations

import itertools
import os
import shutil
import urllib.parse
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .. import dtype as dt
from .._array import Array
from .._arrow import arrow_take
from .._check import check_int, check_metadata, check_type, describe
from .._errors import ColumnNotFoundError, UnsupportedError
from .._metadata import MetadataLike

__all__ = ["write_partitioned", "HIVE_DEFAULT_PARTITION", "hive_segment", "EXISTING"]

#: the directory name of a null partition value (Hive's, pyarrow's, Polars', DuckDB's)
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: what ``existing=`` takes (pyarrow's ``existing_data_behavior``)
EXISTING = ("error", "overwrite_or_ignore", "delete_matching")
#: bytes of rows buffered over all partitions at most
MAX_BUFFERED_BYTES = 64 << 20

_FUNC = "write_ipc"


def _escape(s: str) -> str:
    """``s`` percent-escaped as pyarrow escapes a hive path segment."""
    return urllib.parse.quote(s, safe="")


def hive_segment(key: str, value: str | None) -> str:
    """The directory name ``key=value`` of one partition value (``value`` already a
    string; None for null).

    >>> hive_segment("city", "São Paulo"), hive_segment("k", "a/b=c"), hive_segment("k", None)
    ('city=S%C3%A3o%20Paulo', 'k=a%2Fb%3Dc', 'k=__HIVE_DEFAULT_PARTITION__')
    """
    v = HIVE_DEFAULT_PARTITION if value is None else _escape(value)
    return f"{_escape(key)}={v}"


def _tabular(data: Any) -> tuple[Any, Iterator[Any]]:
    """The Arrow schema of ``data`` (normalized by ``as_arrow_data``) and its record
    batches; ``TypeError`` when it has no columns to partition by."""
    import pyarrow as pa

    if isinstance(data, Array):
        if not isinstance(data.dtype, dt.Struct):
            raise TypeError(f"{_FUNC}(): partition_by needs data with columns (a struct), "
                            f"not an array of {data.dtype!r}")
        data = data.to_arrow()
    if isinstance(data, pa.ChunkedArray) and pa.types.is_struct(data.type):
        data = pa.Table.from_struct_array(data)
    if isinstance(data, pa.StructArray):
        data = pa.RecordBatch.from_struct_array(data)
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    what = getattr(data, "type", None)
    raise TypeError(f"{_FUNC}(): partition_by needs data with columns (a table, record "
                    f"batches, a frame), not {describe(data) if what is None else what}")


def _check_keys(partition_by: Any, schema: Any) -> list[str]:
    import pyarrow as pa

    if isinstance(partition_by, str):
        partition_by = [partition_by]
    if not isinstance(partition_by, Sequence) or not partition_by \
            or not all(isinstance(k, str) for k in partition_by):
        raise TypeError(f"{_FUNC}(): partition_by must be a column name or a non-empty list "
                        f"of column names, not {describe(partition_by)}")
    keys = list(partition_by)
    names = schema.names
    for k in keys:
        if keys.count(k) > 1:
            raise ValueError(f"{_FUNC}(): partition_by names column {k!r} twice")
        if k not in names:
            raise ColumnNotFoundError(k, names, context=f"{_FUNC}(partition_by=)")
        t = schema.field(k).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_nested(t):
            raise UnsupportedError(f"{_FUNC}(): cannot partition by column {k!r}: its type "
                                   f"{t} is nested (partition values must be scalars)")
        if not _castable(t):
            raise UnsupportedError(f"{_FUNC}(): cannot partition by column {k!r}: its type "
                                   f"{t} has no string form for a directory name")
    if len(keys) == len(names):
        raise ValueError(f"{_FUNC}(): partition_by names every column ({', '.join(keys)}): "
                         "the files would have no columns left")
    return keys


def _castable(t: Any) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pc.cast(pa.array([], type=t), pa.string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return False
    return True


def _prepare_dir(root: str, existing: str) -> None:
    if os.path.exists(root) and not os.path.isdir(root):
        raise NotADirectoryError(f"{_FUNC}(): {root!r} is not a directory (partition_by "
                                 "writes a directory)")
    if existing == "error" and os.path.isdir(root) and os.listdir(root):
        raise FileExistsError(f"{_FUNC}(): directory {root!r} is not empty; pass "
                              "existing='overwrite_or_ignore' or 'delete_matching' to write "
                              "into it")
    os.makedirs(root, exist_ok=True)


class _Partition:
    """One partition's directory, its buffered rows, its open writer and file part."""

    __slots__ = ("dir", "pending", "rows", "nbytes", "writer", "part")

    def __init__(self, d: str) -> None:
        self.dir = d
        self.pending: list[Any] = []
        self.rows = 0
        self.nbytes = 0
        self.writer: Any = None
        self.part = 0


class _PartitionedWriter:
    def __init__(self, root: str, keys: list[str], file_schema: Any, file_dtype: Any, *,
                 writer_options: dict[str, Any], chunk_rows: int, max_open_files: int,
                 existing: str, basename_template: str) -> None:
        self.root, self.keys = root, keys
        #: every file's reserved stream metadata: the partition columns' exact Arrow fields
        self.reserved: list[tuple[bytes, bytes]] = []
        from .._compress import CompressSession

        #: the compressor's plans, shared by every file: a column's encodings are searched
        #: once, then replayed in each partition (searched again where they fit worse)
        self.session = CompressSession()
        self.file_schema, self.file_dtype = file_schema, file_dtype
        self.options = writer_options
        self.chunk_rows, self.max_open = chunk_rows, max_open_files
        self.existing, self.template = existing, basename_template
        self.parts: dict[tuple[str, ...], _Partition] = {}
        self.open: OrderedDict[tuple[str, ...], _Partition] = OrderedDict()
        self.buffered = 0
        self.bytes = 0
        self.files: list[str] = []

    # -- splitting a batch by its partition values --------------------------------------

    def add(self, batch: Any) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if batch.num_rows == 0:
            return
        segments: list[list[str]] = []  # per key: the directory names by code
        per_key: list[Any] = []  # per key: each row's code
        codes: Any = None
        for k in self.keys:
            col = batch.column(k)
            if pa.types.is_dictionary(col.type):
                col = col.dictionary_decode()
            try:
                text = pc.cast(col, pa.string())
            except pa.ArrowInvalid as e:  # binary keys that are not UTF-8
                raise UnsupportedError(f"{_FUNC}(): partition column {k!r} holds values that "
                                       f"are no text, which a directory name must be: {e}"
                                       ) from None
            enc = pc.dictionary_encode(text, null_encoding="encode")
            segments.append([hive_segment(k, v) for v in enc.dictionary.to_pylist()])
            idx = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
            per_key.append(idx)
            if codes is None:
                codes = idx
            else:  # one code per combination, kept dense (below num_rows)
                _, codes = np.unique(codes * len(segments[-1]) + idx, return_inverse=True)
        data = batch.drop_columns(self.keys)
        if not data.schema.equals(self.file_schema):
            data = data.cast(self.file_schema)
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.diff(sorted_codes)) + 1
        bounds = [0, *starts.tolist(), len(order)]
        single = len(bounds) == 2
        # (arrow_take: pyarrow has no take kernel for string_view / binary_view columns)
        taken = data if single else pa.RecordBatch.from_arrays(
            [arrow_take(c, order) for c in data.columns], schema=data.schema)
        for a, b in itertools.pairwise(bounds):
            row = int(order[a])
            key = tuple(seg[int(idx[row])] for seg, idx in zip(segments, per_key))
            self._buffer(key, taken if single else taken.slice(a, b - a))

    def _buffer(self, key: tuple[str, ...], rows: Any) -> None:
        p = self.parts.get(key)
        if p is None:
            p = self.parts[key] = _Partition(os.path.join(self.root, *key))
            if self.existing == "delete_matching" and os.path.isdir(p.dir):
                shutil.rmtree(p.dir)
        p.pending.append(rows)
        p.rows += rows.num_rows
        p.nbytes += rows.nbytes
        self.buffered += rows.nbytes
        if p.rows >= self.chunk_rows:
            self._flush(key, p)
        if self.buffered > MAX_BUFFERED_BYTES:
            # down to half the bound: the open files' buffers first (no file opened or
            # closed for them), then the largest
            waiting = sorted((q for q in self.parts.items() if q[1].rows),
                             key=lambda q: (q[1].writer is None, -q[1].nbytes))
            for k, q in waiting:
                self._flush(k, q)
                if self.buffered <= MAX_BUFFERED_BYTES // 2:
                    break

    # -- writing ------------------------------------------------------------------------

    def _writer(self, key: tuple[str, ...], p: _Partition) -> Any:
        if p.writer is not None:
            self.open.move_to_end(key)
            return p.writer
        while len(self.open) >= self.max_open:
            old_key, old = self.open.popitem(last=False)
            self._close(old_key, old)
        from .writer import StreamWriter

        os.makedirs(p.dir, exist_ok=True)
        path = os.path.join(p.dir, self.template.format(i=p.part))
        p.part += 1
        p.writer = StreamWriter(path, self.file_dtype, _caller=_FUNC, _reserved=self.reserved,
                                _session=self.session, **self.options)
        self.files.append(path)
        self.open[key] = p
        return p.writer

    def _flush(self, key: tuple[str, ...], p: _Partition) -> None:
        """Write ``p``'s buffered rows: messages of ``chunk_rows`` rows, the rest (fewer)
        as one more."""
        import pyarrow as pa

        if not p.rows:
            return
        t = pa.Table.from_batches(p.pending, schema=self.file_schema)
        self.buffered -= p.nbytes
        p.pending, p.rows, p.nbytes = [], 0, 0
        w = self._writer(key, p)
        for start in range(0, t.num_rows, self.chunk_rows):
            piece = t.slice(start, min(self.chunk_rows, t.num_rows - start))
            w.write(piece.combine_chunks() if any(c.num_chunks > 1 for c in piece.columns)
                    else piece)

    def _close(self, key: tuple[str, ...], p: _Partition, end: bool = True) -> None:
        w, p.writer = p.writer, None
        if w is not None:
            w._close(end=end)
            self.bytes += w.bytes_written
        self.open.pop(key, None)

    def finish(self) -> int:
        for k, p in list(self.parts.items()):
            self._flush(k, p)
        for k, p in list(self.open.items()):
            self._close(k, p)
        return self.bytes

    def abort(self) -> None:
        """Close every open file without its end marker (they then read as cut)."""
        for k, p in list(self.open.items()):
            try:
                self._close(k, p, end=False)
            except Exception:  # pragma: no cover - closing after a failure: best effort
                pass


def _file_dtype(dtype: Any, schema: Any, keys: list[str]) -> Any:
    """What the files' ``StreamWriter`` takes: ``dtype`` (the whole data's) without the
    partition columns, or the data's Arrow schema without them."""
    import pyarrow as pa

    from .writer import coerce_dtype

    if dtype is None:
        s = schema.remove_metadata()
        return pa.schema([f for f in s if f.name not in keys])
    if isinstance(dtype, pa.Schema):
        missing = [k for k in keys if k not in dtype.names]
        if missing:
            raise ColumnNotFoundError(missing[0], dtype.names, context=f"{_FUNC}(dtype=)")
        return pa.schema([f for f in dtype.remove_metadata() if f.name not in keys])
    d = coerce_dtype(dtype, _FUNC)
    if not isinstance(d, dt.Struct):
        raise TypeError(f"{_FUNC}(): with partition_by, dtype must be a struct (the "
                        f"columns), not {d!r}")
    for k in keys:
        d.field(k)  # ColumnNotFoundError for a partition column it does not have
    pairs = [(n, t) for n, t in zip(d.names, d.dtypes) if n not in keys]
    return dt.Struct([n for n, _ in pairs], [t for _, t in pairs], nullable=d.nullable)


def write_partitioned(directory: Any, data: Any, partition_by: Any, *,
                      metadata: MetadataLike = None, compress: Any = True,
                      chunk_rows: int = 65_536, dtype: Any = None,
                      encodings: Mapping[str, str] | None = None, integrity: bool = False,
                      end_marker: bool = False, max_open_files: int = 1024,
                      existing: str = "error",
                      basename_template: str = "part-{i}.vxipc") -> int:
    """``write_ipc(directory, data, partition_by=...)``: see the module's docstring and
    ``write_ipc``. Returns the bytes written over all files."""
    import pyarrow as pa

    from .writer import MAX_ROWS, as_arrow_data

    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"{_FUNC}(): with partition_by, the sink must be a directory path, "
                        f"not {describe(directory)}")
    root = os.fspath(directory)
    if "://" in root:
        raise UnsupportedError(f"{_FUNC}(): partition_by writes to a local directory, not "
                               f"{root!r}")
    check_int(_FUNC, "chunk_rows", chunk_rows, minimum=1)
    check_int(_FUNC, "max_open_files", max_open_files, minimum=1)
    check_metadata(_FUNC, "metadata", metadata)
    check_type(_FUNC, "existing", existing, str, f"one of {', '.join(map(repr, EXISTING))}")
    if existing not in EXISTING:
        raise ValueError(f"{_FUNC}(): existing must be one of "
                         f"{', '.join(map(repr, EXISTING))}, not {existing!r}")
    check_type(_FUNC, "basename_template", basename_template, str, "a str with '{i}'")
    if "{i}" not in basename_template or os.sep in basename_template:
        raise ValueError(f"{_FUNC}(): basename_template must be a file name with '{{i}}' "
                         f"(the file part), not {basename_template!r}")
    data = as_arrow_data(_FUNC, data)
    schema, batches = _tabular(data)
    keys = _check_keys(partition_by, schema)
    if encodings:
        for k in keys:
            if k in encodings:
                raise ValueError(f"{_FUNC}(): encodings names partition column {k!r}, which "
                                 "the files do not hold")
    if metadata is None:
        from .._arrow import schema_metadata_pairs

        metadata = schema_metadata_pairs(schema) or None
    file_dtype = _file_dtype(dtype, schema, keys)
    file_schema = pa.schema([f for f in schema.remove_metadata() if f.name not in keys])
    if isinstance(file_dtype, pa.Schema):
        file_schema = file_dtype
    _prepare_dir(root, existing)
    w = _PartitionedWriter(
        root, keys, file_schema, file_dtype,
        writer_options={"metadata": metadata, "compress": compress, "encodings": encodings,
                        "integrity": integrity, "end_marker": end_marker},
        chunk_rows=min(chunk_rows, MAX_ROWS), max_open_files=max_open_files,
        existing=existing, basename_template=basename_template)
    from .._hive import stored_value

    w.reserved = [stored_value(pa.schema([schema.field(k) for k in keys]))]
    try:
        for b in batches:
            w.add(b)
        return w.finish()
    except BaseException:
        w.abort()
        raise
