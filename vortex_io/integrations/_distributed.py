"""What the Ray Data and Dask readers share: the files of a read, and their cutting into
pieces (one file's message range each) from a header-only pass. Imports no engine.

>>> import os, tempfile, pyarrow as pa, vortex_io as vio
>>> d = tempfile.mkdtemp()
>>> with vio.StreamWriter(os.path.join(d, "a.vxipc"), pa.schema([("x", pa.int64())])) as w:
...     for i in range(4):
...         _ = w.write(pa.table({"x": [i] * 10}))
>>> [(os.path.basename(p.path), p.range.start, p.range.stop, p.rows)
...  for p in plan_pieces(resolve_paths(d), target_bytes=1)][:2]
[('a.vxipc', 1, 2, 10), ('a.vxipc', 2, 3, 10)]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import VortexIPCError
from .._limits import ReaderLimits
from .._scan import (
    MessageRange,
    MessageSpan,
    Scan,
    expand_sources,
    message_ranges,
    message_spans,
)

__all__ = ["Files", "Piece", "file_spans", "group_pieces", "plan_pieces", "resolve_paths"]


def _items(paths: Any) -> list[str]:
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    for it in items:
        if not isinstance(it, (str, os.PathLike)):
            raise TypeError(f"a source is a path, a glob, a directory or a list of them, not "
                            f"{type(it).__name__}")
    return [os.fspath(it) for it in items]


def _checked(files: list[str], paths: Any) -> list[str]:
    for p in files:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"no such file: {p!r}")
    if not files:
        raise FileNotFoundError(f"no files to read in {paths!r}")
    return files


def resolve_paths(paths: Any) -> list[str]:
    """The files of a distributed read: ``paths`` is a path, a glob, a directory or a list
    of those, expanded as every vortex_io source is (``vortex_io.expand_sources``: a
    directory is its ``*.vxipc`` files at any depth, sorted, ``.``/``_`` names skipped).
    Raises ``FileNotFoundError`` for a missing path or a read of no files."""
    return _checked([os.fspath(p) for p in expand_sources(_items(paths))], paths)


@dataclass(frozen=True)
class Files:
    """The files of a distributed read and their hive partitions (a directory's
    ``key=value`` paths, as ``vortex_io.scan`` reads them: ``Scan.partitions``; None:
    there are none). Picklable: read tasks take it along."""

    paths: list[str]
    partitions: Any
    #: path -> its index in ``paths`` (a read of many files looks pieces up by path)
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {p: i for i, p in enumerate(self.paths)})

    @classmethod
    def resolve(cls, paths: Any, limits: ReaderLimits | None = None) -> Files:
        """The files of ``paths`` (as ``resolve_paths``) and their partitions, as a scan of
        them all finds them (it reads the first file's header: a key the data has as a
        column is no partition)."""
        items = _items(paths)
        if not items:
            raise FileNotFoundError(f"no files to read in {paths!r}")
        s = Scan(items, limits=limits)  # (its errors name the file)
        return cls(_checked([os.fspath(p) for p in s.sources], paths), s.partitions)

    def pruned(self, path: str, filter: Any) -> bool:
        """Whether ``filter`` rules out every row of ``path`` by its partition values alone
        (a read task need not open it)."""
        return self.partitions is not None and filter is not None and \
            self.partitions.bind(filter, self.index[path]) is False

    def scan(self, path: str, **kw: Any) -> Scan:
        """The ``vortex_io.Scan`` of one of the files (``kw``: ``Scan``'s options), its
        partition columns included."""
        sub = None if self.partitions is None else \
            self.partitions.subset(self.index[path])
        return Scan(path, hive_partitioning=False if sub is None else None, _partitions=sub,
                    **kw)


@dataclass(frozen=True)
class Piece:
    """One read task's share of one file: the Array messages ``range`` of ``path``."""

    path: str
    range: MessageRange

    @property
    def rows(self) -> int:
        return self.range.rows or 0

    @property
    def size(self) -> int:
        return self.range.size or 0


def file_spans(paths: Sequence[str], limits: ReaderLimits | None = None
               ) -> list[list[MessageSpan]]:
    """Each file's ``message_spans`` (its headers only), errors naming the file."""
    out = []
    for p in paths:
        try:
            out.append(message_spans(p, limits=limits))
        except VortexIPCError as e:
            raise e.locate(source=p) from None
    return out


def plan_pieces(paths: Sequence[str], *, target_bytes: int | None = None,
                parts: int | None = None, limits: ReaderLimits | None = None,
                spans: Sequence[Sequence[MessageSpan]] | None = None) -> list[Piece]:
    """Every file cut at message boundaries into pieces of about ``target_bytes`` bytes,
    or into about ``parts`` pieces of equal bytes over all files (each file gets its share,
    at least one piece). A file of no Array messages gives no piece; neither option: one
    piece per file. Only the headers are read; a bad one raises the ``VortexIPCError``
    naming its file. ``spans``: the files' spans when already known (``file_spans``)."""
    if target_bytes is not None and parts is not None:
        raise ValueError("give target_bytes or parts, not both")
    if spans is None:
        spans = file_spans(paths, limits)
    out: list[Piece] = []
    total = sum(s.size for file in spans for s in file) or 1
    for p, file in zip(paths, spans):
        if parts is not None:
            share = max(1, round(parts * sum(s.size for s in file) / total))
            ranges = message_ranges(file, parts=share)
        else:
            ranges = message_ranges(file, target_bytes=target_bytes)
        out.extend(Piece(p, r) for r in ranges)
    return out


def group_pieces(pieces: Sequence[Piece], n: int) -> list[list[Piece]]:
    """``pieces`` (in order) in at most ``n`` consecutive groups of about equal bytes.

    >>> r = MessageRange(1, 2, 0, rows=1, size=10)
    >>> [len(g) for g in group_pieces([Piece("f", r)] * 5, 2)]
    [2, 3]
    """
    if n < 1:
        raise ValueError("n must be positive")
    if len(pieces) <= n:
        return [[p] for p in pieces]
    total = sum(max(p.size, 1) for p in pieces)
    groups: list[list[Piece]] = [[] for _ in range(n)]
    cum = 0
    for p in pieces:
        w = max(p.size, 1)
        g = min(n - 1, int((cum + w / 2) * n / total))
        groups[g].append(p)
        cum += w
    return [g for g in groups if g]
