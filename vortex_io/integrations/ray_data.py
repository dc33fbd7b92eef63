"""Ray Data integration: ``read_vortex_ipc`` / ``write_vortex_ipc`` with projection and
predicate pushdown into ``vortex_io.scan``.

>>> import ray                                                  # doctest: +SKIP
>>> from ray.data.expressions import col                        # doctest: +SKIP
>>> from vortex_io.integrations.ray_data import read_vortex_ipc  # doctest: +SKIP
>>> ds = read_vortex_ipc("trades/")                             # doctest: +SKIP
>>> ds.filter(expr=col("symbol") == "AAPL").select_columns(["price"]).count()  # doctest: +SKIP

How it plugs into Ray Data (2.60, checked against its source; pinned in ``vortex-io[ray]``):

- :class:`VortexIPCDatasource` is a public ``ray.data.Datasource``. It answers
  ``supports_projection_pushdown()`` and ``supports_predicate_pushdown()`` with True, so Ray's
  optimizer hands ``ds.select_columns(...)`` (and the empty projection of ``count()``) to
  ``apply_projection`` and ``ds.filter(expr=...)`` to ``apply_predicate``; both return a
  new datasource, and ``get_current_predicate()`` shows the pushed predicate.
- **Ray trusts a pushed predicate**: it drops its ``Filter`` once the datasource takes it.
  :func:`translate` therefore accepts only what it expresses *exactly* as a
  ``vortex_io.expr`` expression with Ray's (pyarrow's) semantics on every row:
  comparisons of a top-level column with a literal of its own type, ``is_in`` /
  ``not_in`` (pyarrow's: a null row is never "in" unless the list holds a null),
  ``is_null`` / ``is_not_null``, ``&``, ``|``, ``~``. Anything else (arithmetic, UDFs,
  column-to-column comparisons, NaN or infinite literals, floats that the column's type
  cannot hold, a ``datetime`` between two whole units of the column...) is refused:
  ``apply_predicate`` returns the datasource unchanged and Ray keeps its ``Filter``.
- Read tasks: the driver reads the message headers of every file (no bodies) and cuts
  the files at message boundaries into about ``parallelism`` pieces of equal bytes, so one
  big stream is several tasks; each task scans its pieces with
  ``vortex_io.scan(path, messages=range)``, which jumps to the range's byte offset and
  stops after it. Without a predicate the headers give each task's exact row count, so
  ``count()`` reads nothing more.
- Errors: a bad stream raises our ``VortexIPCError`` subclass (named file, message,
  offset) in the task; Ray re-raises it on the driver as that class.
- :func:`write_vortex_ipc` writes one Vortex IPC stream per block through a
  ``ray.data.Datasink``, with the given stream metadata.
"""

from __future__ import annotations

import datetime
import math
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

try:
    import ray
    import ray.data
    from ray.data.block import BlockAccessor, BlockMetadata
    from ray.data.datasource import Datasink, Datasource, ReadTask
    from ray.data.expressions import BinaryExpr, ColumnExpr, LiteralExpr, Operation, UnaryExpr
    from ray.data.expressions import Expr as RayExpr
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "vortex_io.integrations.ray_data needs Ray Data: pip install 'vortex-io[ray]'") from _e

import numpy as np
import pyarrow as pa

from .._errors import ColumnNotFoundError, VortexIPCError
from .._limits import ReaderLimits
from .._metadata import MetadataLike
from .._scan import Scan
from ..compute._expr import Column, Compare, Expr, IsIn, IsNull, Literal, Not, Or
from ._distributed import Files, Piece, file_spans, group_pieces, plan_pieces

__all__ = [
    "SUPPORTED_RAY",
    "Untranslatable",
    "VortexIPCDatasink",
    "VortexIPCDatasource",
    "read_vortex_ipc",
    "translate",
    "write_vortex_ipc",
]

#: the Ray versions this module was written and tested against (its datasource hooks)
SUPPORTED_RAY = ">=2.60,<2.61"

try:  # Ray counts the rows of a block by its columns: a zero-column read carries this stub
    from ray.data._internal.arrow_block import _BATCH_SIZE_PRESERVING_STUB_COL_NAME as _STUB
except ImportError:  # pragma: no cover - another Ray
    _STUB = "__bsp_stub"


# -- translating Ray's predicates ---------------------------------------------------------------


class Untranslatable(ValueError):
    """A Ray predicate :func:`translate` cannot express exactly; Ray keeps it."""


_CMP = {Operation.EQ: "eq", Operation.NE: "neq", Operation.LT: "lt", Operation.LE: "lte",
        Operation.GT: "gt", Operation.GE: "gte"}
_FLIP = {"eq": "eq", "neq": "neq", "lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}
_UNIT_US = {"s": 1_000_000, "ms": 1_000, "us": 1}
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _micros(d: datetime.timedelta) -> int:
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def _in_unit(us: int, unit: str) -> int:
    if unit == "ns":
        return us * 1000
    q, r = divmod(us, _UNIT_US[unit])
    if r:
        raise Untranslatable(f"{us} us is not a whole number of {unit}")
    return q


def _literal(v: Any, t: pa.DataType) -> Any:
    """``v`` (a Ray literal) in the domain ``vortex_io`` compares a column of Arrow type ``t``
    in, when pyarrow's comparison of the column with ``pa.scalar(v)`` and ours agree on every
    row; else ``Untranslatable``."""
    if isinstance(v, np.generic):  # numpy scalars compare as their Python values
        v = v.item()
    if v is None:
        raise Untranslatable("a null literal")
    if pa.types.is_boolean(t):
        if isinstance(v, bool):
            return v
    elif pa.types.is_integer(t):
        # pyarrow casts a float literal and the column to double (inexact past 2**53)
        if isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63):
            return v  # pyarrow takes int64 literals; out of the column's range: exact both sides
    elif pa.types.is_floating(t) and not pa.types.is_float16(t):
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) <= 1 << 53:
            v = float(v)
        if isinstance(v, float) and math.isfinite(v):
            # pyarrow compares a float32 column in double: the same rows when the literal is
            # a float32 value
            if pa.types.is_float32(t):
                with np.errstate(over="ignore"):  # too big for float32: inf, refused
                    if float(np.float32(v)) != v:
                        raise Untranslatable(f"{v!r} is not a float32 value")
            return v
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        if isinstance(v, str):
            return v
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        if isinstance(v, bytes):
            return v
    elif pa.types.is_date32(t):
        if type(v) is datetime.date:
            return (v - _EPOCH.date()).days
    elif pa.types.is_timestamp(t):
        if type(v) is datetime.datetime:
            if t.tz is None and v.tzinfo is None:
                return _in_unit(_micros(v - _EPOCH), t.unit)
            if t.tz is not None and v.tzinfo is not None and v.utcoffset() is not None:
                return _in_unit(_micros(v - _EPOCH_UTC), t.unit)  # an instant
    raise Untranslatable(f"literal {v!r} against a column of type {t}")


def _column(e: RayExpr, schema: pa.Schema) -> tuple[Column, pa.DataType]:
    if not isinstance(e, ColumnExpr):
        raise Untranslatable(f"not a column: {e!r}")
    i = schema.get_field_index(e.name)  # -1 when missing or repeated
    if i < 0:
        raise Untranslatable(f"no single column {e.name!r}")
    return Column(e.name), schema.field(i).type


def _is_in(e: BinaryExpr, schema: pa.Schema) -> Expr:
    """pyarrow's ``is_in`` (Ray's): true when the row equals a listed value, a null row is
    true only when the list holds a null; never null itself."""
    c, t = _column(e.left, schema)
    if not isinstance(e.right, LiteralExpr) or not isinstance(e.right.value, list):
        raise Untranslatable("is_in of something else than a literal list")
    values = e.right.value
    if not values:
        raise Untranslatable("is_in of an empty list")
    if pa.types.is_floating(t):
        raise Untranslatable("is_in on floats (hash equality of NaN and -0.0)")
    has_null = any(v is None for v in values)
    vals = tuple(dict.fromkeys(_literal(v, t) for v in values if v is not None))
    if not vals:
        raise Untranslatable("is_in of nulls only (pyarrow cannot type the list)")
    if pa.types.is_integer(t):
        # pyarrow casts the list to the column's type: a value outside it raises there
        info = np.iinfo(t.to_pandas_dtype())
        if any(not (int(info.min) <= v <= int(info.max)) for v in vals):
            raise Untranslatable("is_in value outside the column's range")
    inside: Expr = IsIn(c, vals)
    if has_null:
        return Or(IsNull(c, False), inside)
    return IsNull(c, True) & inside


def translate(e: RayExpr, schema: pa.Schema) -> Expr:
    """A ``vortex_io.expr`` expression that keeps exactly the rows Ray's predicate ``e``
    keeps over data of Arrow ``schema``; raises :class:`Untranslatable` otherwise.

    >>> from ray.data.expressions import col
    >>> s = pa.schema([("k", pa.string()), ("v", pa.int64())])
    >>> translate((col("k") == "a") & (col("v") >= 2), s)
    ((col('k') == 'a') & (col('v') >= 2))
    >>> translate(col("v").is_in([1, None]), s)
    (col('v').is_null() | col('v').is_in([1]))
    >>> translate(col("v") + 1 > 2, s)
    Traceback (most recent call last):
    ...
    vortex_io.integrations.ray_data.Untranslatable: not a column: ...
    """
    if isinstance(e, BinaryExpr):
        if e.op == Operation.AND:
            return translate(e.left, schema) & translate(e.right, schema)
        if e.op == Operation.OR:
            return Or(translate(e.left, schema), translate(e.right, schema))
        if e.op == Operation.IN:
            return _is_in(e, schema)
        if e.op == Operation.NOT_IN:
            return Not(_is_in(e, schema))  # never null inside: NOT is exact
        if e.op in _CMP:
            op, left, right = _CMP[e.op], e.left, e.right
            if isinstance(left, LiteralExpr) and isinstance(right, ColumnExpr):
                op, left, right = _FLIP[op], right, left
            c, t = _column(left, schema)
            if not isinstance(right, LiteralExpr):
                raise Untranslatable(f"not a literal: {right!r}")
            return Compare(op, c, Literal(_literal(right.value, t)))
    elif isinstance(e, ColumnExpr):
        c, t = _column(e, schema)
        if pa.types.is_boolean(t):  # a boolean column as the predicate: its true rows
            return Compare("eq", c, Literal(True))
        raise Untranslatable(f"column {e.name!r} of type {t} is not a predicate")
    elif isinstance(e, UnaryExpr):
        if e.op == Operation.NOT:
            return Not(translate(e.operand, schema))
        if e.op in (Operation.IS_NULL, Operation.IS_NOT_NULL):
            c, t = _column(e.operand, schema)
            if pa.types.is_null(t):
                raise Untranslatable("is_null on a column of nulls")
            # validity only on both sides: NaN is not null (pyarrow's nan_is_null=False)
            return IsNull(c, e.op == Operation.IS_NOT_NULL)
    raise Untranslatable(f"predicate {e!r}")


# -- the datasource -------------------------------------------------------------------------------


def _located(e: VortexIPCError, path: str) -> VortexIPCError:
    return e.locate(source=path)


class VortexIPCDatasource(Datasource):
    """Vortex IPC files as a ``ray.data.Datasource`` with projection and predicate pushdown.

    ``paths``: a path, glob, directory or list of them (all of one dtype). ``columns``: the
    initial projection; ``filter``: a ``vortex_io.expr`` expression applied by the scan.
    Ray's own ``select_columns`` and ``filter(expr=...)`` reach the scan through
    ``apply_projection`` / ``apply_predicate``. ``on_scan``: called in the read task with each
    finished ``vortex_io.Scan`` (one per piece: ``scan.sources``, ``scan.messages``,
    ``scan.stats``); it must be picklable.
    """

    def __init__(self, paths: Any, *, columns: Sequence[str] | None = None,
                 filter: Expr | None = None, limits: ReaderLimits | None = None,
                 on_scan: Callable[[Scan], None] | None = None) -> None:
        super().__init__()
        self._files = Files.resolve(paths, limits)
        self._paths = self._files.paths
        self._limits = limits
        self._on_scan = on_scan
        try:
            first = self._files.scan(self._paths[0], limits=limits, filter=filter)
            self._schema: pa.Schema = first.schema
        except VortexIPCError as e:
            raise _located(e, self._paths[0]) from None
        if len(set(self._schema.names)) != len(self._schema.names):
            raise VortexIPCError(f"{self._paths[0]}: repeated column names {self._schema.names}")
        if columns is not None:
            if isinstance(columns, str):
                raise TypeError("columns takes a sequence of column names, not a str")
            for c in columns:
                if c not in self._schema.names:
                    raise ColumnNotFoundError(c, self._schema.names)
        self._projection_map: dict[str, str] | None = (
            None if columns is None else {c: c for c in columns})
        self._filter = filter          # the caller's vortex_io filter
        self._pushed: Expr | None = None  # the translation of Ray's pushed predicate
        # the header-only pass ("spans") and its cuts (by parallelism), shared by the
        # copies Ray makes of this datasource
        self._cache: dict[Any, Any] = {}

    # -- what Ray asks --

    def get_name(self) -> str:
        """``VortexIPC``, with what was pushed into the scan in brackets (Ray names the read
        operator ``Read<name>`` in ``explain()`` and its progress output)."""
        pushed = []
        if self._projection_map is not None:
            pushed.append(f"columns={list(self._projection_map)}")
        if self.scan_filter is not None:
            pushed.append(f"filter={self.scan_filter!r}")
        return f"VortexIPC[{', '.join(pushed)}]" if pushed else "VortexIPC"

    def supports_projection_pushdown(self) -> bool:
        return True

    def supports_predicate_pushdown(self) -> bool:
        return True

    def apply_predicate(self, predicate_expr: RayExpr) -> VortexIPCDatasource:
        """A copy scanning with ``predicate_expr`` too, or ``self`` (not pushed: Ray keeps its
        filter) when :func:`translate` refuses it."""
        try:
            pushed = translate(predicate_expr, self._schema)
        except (Untranslatable, RecursionError):
            return self
        clone = super().apply_predicate(predicate_expr)
        assert isinstance(clone, VortexIPCDatasource)
        clone._pushed = pushed if self._pushed is None else self._pushed & pushed
        return clone

    @property
    def columns(self) -> list[str] | None:
        """The projected columns (None: all)."""
        return None if self._projection_map is None else list(self._projection_map)

    @property
    def scan_filter(self) -> Expr | None:
        """The ``vortex_io`` filter each task's scan applies (the caller's and Ray's pushed
        predicate)."""
        if self._filter is None:
            return self._pushed
        return self._filter if self._pushed is None else self._filter & self._pushed

    def output_schema(self) -> pa.Schema:
        """The schema of the blocks (a zero-column read: Ray's row-count stub column alone)."""
        cols = self.columns
        if cols is None:
            return self._schema
        if not cols:
            return pa.schema([pa.field(_STUB, pa.null())])
        return pa.schema([self._schema.field(c) for c in cols])

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(os.path.getsize(p) for p in self._paths)

    def _plan(self, parallelism: int) -> list[Piece]:
        """The files cut into about ``parallelism`` pieces (remembered per parallelism: Ray
        asks for one task first, to learn the schema and row count)."""
        parallelism = max(1, parallelism)
        hit = self._cache.get(parallelism)
        if hit is None:
            if "spans" not in self._cache:
                self._cache["spans"] = file_spans(self._paths, self._limits)
            hit = self._cache[parallelism] = plan_pieces(self._paths, parts=parallelism,
                                                         spans=self._cache["spans"])
        return hit

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context: Any = None) -> list[ReadTask]:
        """About ``parallelism`` tasks, each a run of message ranges of about equal bytes."""
        # (files the filter rules out by their hive partitions get no task)
        pieces = [p for p in self._plan(parallelism)
                  if not self._files.pruned(p.path, self.scan_filter)]
        schema = self.output_schema()
        exact_rows = self.scan_filter is None
        tasks = []
        for group in group_pieces(pieces, max(1, parallelism)):
            rows = sum(p.rows for p in group)
            if per_task_row_limit is not None:
                rows = min(rows, per_task_row_limit)
            meta = BlockMetadata(
                num_rows=rows if exact_rows else None,
                size_bytes=int(sum(p.size for p in group)),
                input_files=tuple(dict.fromkeys(p.path for p in group)),
                exec_stats=None)
            tasks.append(ReadTask(_read_fn(group, self._files, self.columns, self.scan_filter,
                                           self._limits, per_task_row_limit, self._on_scan,
                                           schema),
                                  meta, schema=schema, per_task_row_limit=per_task_row_limit))
        return tasks

    def __repr__(self) -> str:
        return (f"VortexIPCDatasource({len(self._paths)} files, columns={self.columns}, "
                f"filter={self.scan_filter!r})")


def _read_fn(group: list[Piece], files: Files, columns: list[str] | None, filt: Expr | None,
             limits: ReaderLimits | None, row_limit: int | None,
             on_scan: Callable[[Scan], None] | None, schema: pa.Schema
             ) -> Callable[[], Iterable[pa.Table]]:
    def read() -> Iterable[pa.Table]:
        left = row_limit
        for piece in group:
            if left is not None and left <= 0:
                return
            try:
                s = files.scan(piece.path, columns=columns, filter=filt, limits=limits,
                               messages=piece.range, limit=left)
                t = s.to_arrow()
            except VortexIPCError as e:
                raise _located(e, piece.path) from None
            if on_scan is not None:
                on_scan(s)
            if left is not None:
                left -= t.num_rows
            if not t.num_rows:
                continue
            if t.num_columns == 0:  # rows only (a count): Ray counts a block by its columns
                t = pa.table({_STUB: pa.nulls(t.num_rows)})
            yield t if t.schema.equals(schema) else t.cast(schema)
    return read


def read_vortex_ipc(paths: Any, *, columns: Sequence[str] | None = None,
                    filter: Expr | RayExpr | None = None,
                    override_num_blocks: int | None = None,
                    limits: ReaderLimits | None = None,
                    on_scan: Callable[[Scan], None] | None = None,
                    **read_args: Any) -> ray.data.Dataset:
    """A ``ray.data.Dataset`` over Vortex IPC files (a path, glob, directory or list).

    ``columns``: the columns to read. ``filter``: a ``vortex_io.expr`` expression (scanned
    on the encoded data) or a ``ray.data.expressions`` predicate (pushed when it translates
    exactly, else applied by Ray). ``override_num_blocks``: the number of read tasks (files
    are cut at message boundaries). ``read_args`` go to ``ray.data.read_datasource``
    (``concurrency``, ``num_cpus``, ...). Later ``select_columns`` / ``filter(expr=...)``
    are pushed into the scan too.

    >>> ds = read_vortex_ipc("trades/", columns=["symbol", "price"])  # doctest: +SKIP
    >>> ds.filter(expr=col("price") > 100).count()                   # doctest: +SKIP
    """
    ray_filter = None
    if filter is not None and not isinstance(filter, Expr):
        if not isinstance(filter, RayExpr):
            raise TypeError(f"filter is a vortex_io.expr or ray.data.expressions expression, "
                            f"not {type(filter).__name__}")
        ray_filter, filter = filter, None
    src = VortexIPCDatasource(paths, columns=columns, filter=filter, limits=limits,
                              on_scan=on_scan)
    ds = ray.data.read_datasource(src, override_num_blocks=override_num_blocks, **read_args)
    if ray_filter is not None:
        ds = ds.filter(expr=ray_filter)  # pushed by Ray's optimizer when it translates
    return ds


# -- writing ------------------------------------------------------------------------------------


class VortexIPCDatasink(Datasink):
    """Writes each block of a dataset as one Vortex IPC stream ``<path>/<prefix>_<task>_<n>.vxipc``
    with stream ``metadata``; ``written`` lists the files after the write."""

    def __init__(self, path: str, *, metadata: MetadataLike = None,
                 compress: bool = True) -> None:
        self.path = os.fspath(path)
        self.metadata = metadata
        self.compress = compress
        self.prefix = uuid.uuid4().hex[:12]
        self.written: list[str] = []

    def get_name(self) -> str:
        return "VortexIPC"

    def on_write_start(self, schema: pa.Schema | None = None) -> None:
        os.makedirs(self.path, exist_ok=True)

    def write(self, blocks: Iterable[Any], ctx: Any) -> list[tuple[str, int]]:
        from .._ipc import write_ipc

        out = []
        for i, block in enumerate(blocks):
            table = BlockAccessor.for_block(block).to_arrow()
            if table.num_rows == 0:
                continue
            name = os.path.join(self.path, f"{self.prefix}_{ctx.task_idx:06d}_{i:06d}.vxipc")
            tmp = name + ".tmp"
            try:
                write_ipc(tmp, table, metadata=self.metadata, compress=self.compress)
                os.replace(tmp, name)
            except BaseException:
                if os.path.exists(tmp):
                    os.remove(tmp)
                raise
            out.append((name, table.num_rows))
        return out

    def on_write_complete(self, write_result: Any) -> None:
        self.written = sorted(n for task in write_result.write_returns for n, _ in task)


def write_vortex_ipc(ds: ray.data.Dataset, path: str, *, metadata: MetadataLike = None,
                     compress: bool = True, concurrency: int | None = None) -> list[str]:
    """Write ``ds`` under directory ``path``, one Vortex IPC stream per block, each with
    stream ``metadata``; returns the files written (sorted). Empty blocks write nothing.

    >>> files = write_vortex_ipc(ray.data.range(10), "out/", metadata={"job": "x"})  # doctest: +SKIP
    """
    sink = VortexIPCDatasink(path, metadata=metadata, compress=compress)
    ds.write_datasink(sink, concurrency=concurrency)
    return sink.written
