"""Dask DataFrame integration: ``read_vortex_ipc`` builds a ``dask.dataframe.DataFrame`` with
``dd.from_map``, one partition per file or per message range of a file.

>>> import dask.dataframe as dd                                         # doctest: +SKIP
>>> from vortex_io.expr import col                                      # doctest: +SKIP
>>> from vortex_io.integrations.dask_dataframe import read_vortex_ipc   # doctest: +SKIP
>>> df = read_vortex_ipc("trades/", filter=col("symbol") == "AAPL", blocksize="64MiB")  # doctest: +SKIP
>>> df.groupby("side")["price"].mean().compute()                        # doctest: +SKIP

- **Projection**: the partition function takes ``columns=``, so Dask's optimizer pushes a
  later ``df[["a", "b"]]`` into every partition's ``vortex_io.scan`` (``df.explain()`` shows
  the ``FromMapProjectable`` node with the columns).
- **Filter**: ``filter=`` is a ``vortex_io.expr`` expression evaluated by the scan on the
  encoded data (messages pruned by their statistics). Dask has no predicate pushdown for
  ``from_map``: filter with ``df[df.x > 1]`` after the read and Dask does it.
- **Partitions**: ``blocksize=None`` is one partition per file; a byte count (``64_000_000``
  or ``"64MiB"``) cuts each file at message boundaries (a header-only pass) into ranges of
  about that many bytes, each scanned alone (``vortex_io.scan(messages=...)``).
- **Dtypes**: every column is Arrow-backed (``pd.ArrowDtype``): strings, nulls in integer
  columns, timestamps and decimals keep their Arrow types.
- Errors are our ``VortexIPCError`` subclasses naming the file, message and offset, raised
  from ``compute()`` (also from a ``distributed`` cluster: they pickle with their fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    import dask.dataframe as dd
    import pandas as pd
    from dask.utils import parse_bytes
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "vortex_io.integrations.dask_dataframe needs Dask: pip install 'vortex-io[dask]'") from _e

import pyarrow as pa

from .._errors import ColumnNotFoundError, VortexIPCError
from .._limits import ReaderLimits
from .._scan import scan
from ..compute._expr import Expr
from ._distributed import Files, Piece, plan_pieces

__all__ = ["read_vortex_ipc", "read_partition"]


def _to_pandas(t: pa.Table) -> pd.DataFrame:
    if t.num_columns == 0:
        return pd.DataFrame(index=pd.RangeIndex(t.num_rows))
    return t.to_pandas(types_mapper=pd.ArrowDtype)


def read_partition(piece: Piece | str, columns: Sequence[str] | None = None,
                   filter: Expr | None = None, limits: ReaderLimits | None = None,
                   files: Files | None = None) -> pd.DataFrame:
    """One partition: the rows of ``piece`` (a file, or a file's message range) that pass
    ``filter``, the ``columns`` asked for, as a pandas DataFrame of ``pd.ArrowDtype``
    columns. Dask calls it once per partition; ``columns`` is where its optimizer pushes
    a projection. ``files``: the read's files and their hive partitions (whose columns the
    piece's file then has).

    >>> import io, os, tempfile, vortex_io as vio
    >>> p = os.path.join(tempfile.mkdtemp(), "t.vxipc")
    >>> _ = vio.write_ipc(p, pa.table({"k": ["a", "b"], "v": [1, None]}))
    >>> read_partition(p, columns=["v"]).dtypes["v"]
    int64[pyarrow]
    """
    path, messages = (piece, None) if isinstance(piece, str) else (piece.path, piece.range)
    try:
        cols = None if columns is None else list(columns)
        s = scan(path, columns=cols, filter=filter, limits=limits, messages=messages) \
            if files is None or files.partitions is None else \
            files.scan(path, columns=cols, filter=filter, limits=limits, messages=messages)
        t = s.to_arrow()
    except VortexIPCError as e:
        raise e.locate(source=path) from None
    return _to_pandas(t)


def read_vortex_ipc(paths: Any, *, columns: Sequence[str] | None = None,
                    filter: Expr | None = None, blocksize: int | str | None = None,
                    limits: ReaderLimits | None = None) -> dd.DataFrame:
    """A ``dask.dataframe.DataFrame`` over Vortex IPC files (a path, glob, directory or list,
    all of one dtype), Arrow-backed dtypes; a directory's hive partitions (``key=value``
    directories) are columns, as ``vortex_io.scan`` reads them.

    ``columns``: the columns to read (a later ``df[[...]]`` is pushed into the scans as
    well). ``filter``: a ``vortex_io.expr`` expression scanned on the encoded data.
    ``blocksize``: None for one partition per file, or bytes (int or ``"64MiB"``) per
    partition, files cut at message boundaries.

    >>> import os, tempfile, vortex_io as vio
    >>> from vortex_io.expr import col
    >>> d = tempfile.mkdtemp()
    >>> for i in range(2):
    ...     _ = vio.write_ipc(os.path.join(d, f"{i}.vxipc"), pa.table({"v": [i, i + 10]}))
    >>> df = read_vortex_ipc(d, filter=col("v") > 5)
    >>> df.npartitions, sorted(df["v"].compute(scheduler="sync").tolist())
    (2, [10, 11])
    """
    resolved = Files.resolve(paths, limits)
    files = resolved.paths
    if filter is not None and not isinstance(filter, Expr):
        raise TypeError(f"filter is a vortex_io.expr expression, not {type(filter).__name__}")
    if isinstance(columns, str):
        raise TypeError("columns takes a sequence of column names, not a str")
    try:
        schema = resolved.scan(files[0], limits=limits, filter=filter).schema
    except VortexIPCError as e:
        raise e.locate(source=files[0]) from None
    meta = _to_pandas(schema.empty_table())
    if columns is not None:
        for c in columns:
            if c not in schema.names:
                raise ColumnNotFoundError(c, schema.names)
        meta = meta[list(columns)]
    pieces: list[Piece | str]
    if blocksize is None:
        pieces = list(files)
    else:
        target = parse_bytes(blocksize) if isinstance(blocksize, str) else int(blocksize)
        if target < 1:
            raise ValueError("blocksize must be positive")
        pieces = list(plan_pieces(files, target_bytes=target, limits=limits)) or list(files)
    # files the filter rules out by their hive partitions are not read (one is kept: a
    # frame has at least one partition)
    kept = [p for p in pieces
            if not resolved.pruned(p if isinstance(p, str) else p.path, filter)]
    pieces = kept or pieces[:1]
    return dd.from_map(read_partition, pieces, columns=None if columns is None else list(columns),
                       filter=filter, limits=limits, files=resolved, meta=meta,
                       label="read-vortex-ipc",
                       enforce_metadata=False)
