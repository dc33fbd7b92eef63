"""Polars integration: ``pl.scan_vortex_ipc`` with projection, predicate and slice pushdown.

>>> import vortex_io as vio
>>> vio.register_polars()  # doctest: +SKIP
>>> pl.scan_vortex_ipc("trades.vxi").filter(pl.col("symbol") == "AAPL").collect()  # doctest: +SKIP

``register()`` (``vortex_io.register_polars()``) adds ``pl.scan_vortex_ipc``,
``pl.read_vortex_ipc``, ``DataFrame.vortex.write_ipc`` and ``LazyFrame.vortex.sink_ipc``;
the same functions are importable from this module (type checkers see them here).

How it plugs into Polars 2.1 (measured)
---------------------------------------
Polars offers two Python scan-source APIs. We use ``scan_external_reader`` (one
``FileReader`` per source, Polars' own ``scan_lance`` uses it), not ``register_io_source``,
because measured on Polars 2.1.0:

* **Slice pushdown.** ``register_io_source`` only ever receives ``n_rows`` for ``head``
  without a filter: ``slice(o, n)`` and ``tail`` arrive as nothing and read everything.
  The external reader receives ``pre_slice=(offset, len)`` per file for ``head``,
  ``slice`` and ``tail`` (Polars resolves negative offsets with ``n_rows_in_file``, which
  we answer from message headers without decoding), and ``vortex_io.scan(offset=...)``
  skips whole chunks undecoded.
* **Filters.** The readers announce ``supported_filter="full"``: Polars hands each reader
  the query's filters (AND-conjuncts, optimizer-typed) and does not filter again. The
  conjuncts that translate run in the scan on the encoded data (exactly Polars' rows: NaN
  ordering, nulls and literal types are followed, and ``test_pushed_filters_are_exact``
  checks random predicates against Polars); a conjunct that does not (``str.contains``,
  arithmetic, casts, NaN/inf literals, ...) is evaluated by Polars on each batch in the
  reader. With a slice the slice comes first and Polars evaluates every filter on the
  sliced rows. Where the scan adds hive partition or file path columns, Polars may hand a
  reader a filter naming them (an OR of a partition and a file column), which no file can
  evaluate: those scans announce ``"partial"`` (the reader uses what translates to skip
  work, Polars filters again); scans that insert missing columns or cast announce none
  (Polars 2.1 panics handing filters to the readers of a scan that inserts columns).
* **Multi-file.** Polars drives one reader per file, checks each file's schema against the
  first (or ``schema=``), and runs files on its pipelines. The scan is built with Polars'
  own ``ScanOptions`` (``PyLazyFrame.new_from_external_reader_builder``; the public
  ``scan_external_reader`` passes only ``expand_paths``), so globs, directories, hidden
  files, hive partitions (parsed, typed and pruned by Polars), ``include_file_paths``,
  ``missing_columns``/``extra_columns`` and ``cast_options`` behave as in ``scan_parquet``.
  Those entry points, and ``polars.io._expand_paths`` (which finds the first file, whose
  header is the schema), are internal to Polars 2.1: the ``polars`` extra pins
  ``>=2.1,<2.2``, :func:`register` checks it, and ``tests/test_polars_options.py``
  compares every option with ``scan_parquet``.
* **The schema when the frame is built.** An external-reader scan takes the file columns
  when it is built, so ``scan_vortex_ipc`` reads the first source's header then (kept per
  file version: an unchanged file is not read again). Errors are still raised by
  ``collect``, as ``scan_parquet`` raises them: where that read fails (a missing file, a
  malformed header), and for URLs (no remote IO before a query), the frame is a small
  ``LazyFrameResolver`` that reads the header when the query runs. A file rewritten after
  the frame was built is read as it is then, and a schema that no longer matches is
  Polars' ``SchemaError`` (Polars fixes a ``scan_parquet`` frame's schema when it first
  resolves it). A resolver on every frame would cost every query three Python thread
  pools (one per callback: about 0.8 ms on a 2-core machine, more than a tiny query).
* **One small source** (at most ``SMALL_SOURCE`` = 64 KiB, no multi-file option) is a
  ``register_io_source`` scan instead. The external-reader scan costs every query a new
  Python thread pool, whose fresh threads run the reader's first pyarrow and Polars calls
  about 2x slower: 0.7 ms a query for a reader that yields a ready frame, against 0.3 ms
  for an IO source (``scan_parquet``'s whole query on a 2-row file: 0.55 ms). On a small
  file the slices and column-free counts the IO source cannot push cost less than that.
  The predicate is applied as above (``n_rows`` with a predicate is a head below it); a
  file rewritten with another schema after the frame was built is handed to the
  external-reader scan, so Polars' own schema errors come as they would.
* **explain()** shows the filters under the scan (``SELECTION``) and how its readers apply
  them (``PYTHON[vortex-ipc] SCAN`` with an ``INFO`` line for a small source);
  ``on_scan=`` shows each file's ``vortex_io.Scan`` with the filter it ran.
* Both APIs pass our exception classes through both engines unchanged.

Literals are read from ``expr.meta.serialize(format="json")``: typed scalars (ints,
floats, strings, binary, bools, ``Date`` days, ``Datetime [value, unit, zone]``,
``Decimal [unscaled, precision, scale]``) and ``is_in`` lists, which arrive as Arrow IPC
stream bytes decoded with pyarrow. Float comparisons follow Polars' total order (NaN is
the largest value and equals itself): ``x > v`` is pushed as ``~(x <= v)``, and NaN or
infinite literals (which the JSON cannot tell apart: both serialize as null) stay with
Polars.
"""

from __future__ import annotations

import decimal
import functools
import io
import json
import operator
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any
from typing import Literal as TypeLiteral

import vortex_io as vio
from vortex_io import _fs
from vortex_io._arrow_schema import polars_schema, restore_batch, same_schema
from vortex_io._errors import VortexIPCError
from vortex_io.compute import check_expr
from vortex_io.compute._expr import And, Column, Compare, Expr, IsIn, IsNull, Literal, Not, Or
from vortex_io.integrations._versions import FileVersions

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa
    from polars import DataFrame, LazyFrame  # for functions whose local ``pl`` hides the module

__all__ = [
    "register",
    "scan_vortex_ipc",
    "read_vortex_ipc",
    "write_ipc",
    "sink_ipc",
    "translate_predicate",
]

_POLARS_SPEC = ">=2.1,<2.2"

# -- sources --------------------------------------------------------------------------------


class _Sources:
    """The sources of one scan and the strings Polars sees for them.

    Local paths (files, directories, globs) go to Polars as they are, and Polars' own path
    expansion runs on them (``glob``, ``hidden_file_prefix``, directories, hive
    partitions), as in ``scan_parquet``. URLs are expanded here with fsspec (their
    ``storage_options`` are fsspec's) and in-memory sources (bytes, file objects) get keys
    ``<bytes #i>`` / ``<file #i: name>``; a scan with either hands Polars the expanded list
    (Polars still parses hive partitions off the paths). Nothing is opened before the
    query runs: a missing file is an error of ``collect``, as with ``scan_parquet``.
    """

    def __init__(self, source: Any, glob: bool, hidden_file_prefix: Any,
                 storage_options: dict[str, Any] | None) -> None:
        raw = list(source) if isinstance(source, (list, tuple)) else [source]
        # local paths as scan_parquet normalizes them: "~" is the home directory
        raw = [os.path.expanduser(os.fspath(s)) if isinstance(s, (str, os.PathLike))
               and not _fs.is_remote(os.fspath(s)) else s for s in raw]
        if not raw:
            raise ValueError("scan_vortex_ipc() needs at least one source")
        self.glob = glob
        self.hidden_file_prefix = hidden_file_prefix
        self.storage_options = storage_options
        self._raw = raw
        self._items: dict[str, Any] = {}  # key -> bytes or file object (in-memory sources)
        self._lock = threading.Lock()
        self._expanded: list[str] | None = None
        self.local = all(isinstance(s, (str, os.PathLike)) and not _fs.is_remote(os.fspath(s))
                         for s in raw)
        for i, item in enumerate(raw):
            if isinstance(item, (str, os.PathLike)):
                continue
            if not (hasattr(item, "read") or isinstance(item, (bytes, bytearray, memoryview))):
                raise TypeError("scan_vortex_ipc() sources are paths, URLs, bytes or binary "
                                f"file objects, not {type(item).__name__}")
            name = getattr(item, "name", None)
            kind = "file" if hasattr(item, "read") else "bytes"
            key = f"<{kind} #{i}{': ' + name if isinstance(name, str) else ''}>"
            self._items[key] = item
        self._keys = list(self._items)

    def remote_free(self) -> bool:
        """Whether no source is a URL (reading a header is local IO at most)."""
        return not any(isinstance(s, (str, os.PathLike)) and _fs.is_remote(os.fspath(s))
                       for s in self._raw)

    def single_directory(self) -> bool:
        """Whether the scan is of one local directory."""
        raw = self._raw
        return len(raw) == 1 and isinstance(raw[0], (str, os.PathLike)) \
            and not _fs.is_remote(os.fspath(raw[0])) and os.path.isdir(raw[0])

    def polars_sources(self) -> list[str]:
        """What Polars is given: the local paths as they are (Polars expands them), else
        the expanded list."""
        if self.local:
            return [os.fspath(s) for s in self._raw]
        return self.expanded()

    def expanded(self) -> list[str]:
        """Every source after expansion, in order (the first one gives the schema)."""
        with self._lock:
            if self._expanded is None:
                self._expanded = self._expand()
            return self._expanded

    def _expand(self) -> list[str]:
        out: list[str] = []
        keys = iter(self._keys)
        for item in self._raw:
            if not isinstance(item, (str, os.PathLike)):
                out.append(next(keys))
                continue
            s = os.fspath(item)
            if _fs.is_remote(s):
                if self.glob and _fs.has_glob(s):
                    out.extend(_expand_url(s, self.storage_options))
                else:
                    out.append(s)
            elif self._literal(s):
                out.append(s)  # a file, or a missing one (opening it names it)
            else:
                from polars.io._expand_paths import _expand_paths

                paths = _expand_paths(s, glob=self.glob, hidden_file_prefix=self.hidden_file_prefix
                                      ).collect().to_series().to_list()
                if not paths:
                    raise _no_files(s)
                out.extend(paths)
        return out

    def _literal(self, path: str) -> bool:
        """Whether the local ``path`` names one file (or none), not a pattern or directory."""
        return not (self.glob and _fs.has_glob(path)) and not os.path.isdir(path)

    def first(self) -> str:
        """The first source (its header is the scan's schema)."""
        if self.local and len(self._raw) == 1:
            s = os.fspath(self._raw[0])
            if self._literal(s):
                return s
        exp = self.expanded()
        if not exp:
            raise _no_files(self._raw)
        return exp[0]

    def get(self, key: str | bytes) -> Any:
        """The readable source for ``key``: a path or URL, or bytes (file objects are read
        once, from their current position, and kept: a scan may read a source several
        times)."""
        if isinstance(key, (bytes, memoryview)):
            return key
        item = self._items.get(key)
        if item is None:
            return key
        if hasattr(item, "read"):
            with self._lock:
                item = self._items[key]
                if hasattr(item, "read"):
                    data = item.read()
                    if not isinstance(data, (bytes, bytearray, memoryview)):
                        raise TypeError(f"{key}: file objects must be opened in binary mode")
                    item = self._items[key] = bytes(data)
        return item

    def label(self, key: str | bytes) -> str | None:
        """The name errors carry (None for a path or URL: the reader names it already)."""
        return key if isinstance(key, str) and key in self._items else None


_NO_FILES: type | None = None


def _no_files(pattern: Any) -> Exception:
    """A glob or directory that expands to nothing: a ``FileNotFoundError`` that is also the
    ``ComputeError`` ``scan_parquet`` raises for it (either ``except`` catches it)."""
    global _NO_FILES
    if _NO_FILES is None:
        import polars as pl

        class NoFilesMatch(FileNotFoundError, pl.exceptions.ComputeError):
            """No file matches the source."""

        _NO_FILES = NoFilesMatch
    return _NO_FILES(f"no files match {pattern!r}")


def _expand_url(url: str, storage_options: dict[str, Any] | None) -> list[str]:
    """A URL glob expanded with fsspec (sorted, protocol kept)."""
    from vortex_io._scan import expand_sources

    return list(expand_sources(url, storage_options=storage_options))


def _polars_schema(arrow_schema: pa.Schema) -> pl.Schema:
    """The Polars schema batches of ``arrow_schema`` convert to (the same conversion; a
    copy of the one remembered per Arrow schema: every query plans with it)."""
    import polars as pl

    return pl.Schema(_polars_schema_of(arrow_schema))


@functools.lru_cache(maxsize=256)
def _polars_schema_of(arrow_schema: pa.Schema) -> pl.Schema:
    import polars as pl

    return pl.DataFrame(polars_schema(arrow_schema).empty_table()).schema


def _to_polars(batch: pa.RecordBatch, categorical: Sequence[str] = ()) -> pl.DataFrame:
    import polars as pl

    if batch.num_columns == 0:
        return pl.DataFrame(height=batch.num_rows)
    want = polars_schema(batch.schema)
    if not same_schema(want, batch.schema):  # (types Polars has no form for)
        batch = restore_batch(batch, want)
    df = pl.DataFrame(batch)
    cats = [n for n in categorical if n in batch.schema.names]
    if cats:
        df = df.with_columns(pl.col(cats).cast(pl.Categorical()))
    return df


def _categorical_columns(categorical: bool | str | Sequence[str], schema: pl.Schema
                         ) -> tuple[str, ...]:
    """The string columns ``scan_vortex_ipc(categorical=...)`` names: all of them for
    True, none for False, else the given names (each must be a string column)."""
    import polars as pl

    if categorical is True:
        return tuple(n for n, t in schema.items() if t == pl.String)
    if categorical is False or categorical is None:
        return ()
    names = [categorical] if isinstance(categorical, str) else list(categorical)
    for n in names:
        if n not in schema:
            raise ValueError(f"categorical: no column {n!r}; columns are {list(schema)}")
        if schema[n] != pl.String:
            raise ValueError(f"categorical: column {n!r} is {schema[n]}, not a string column")
    return tuple(dict.fromkeys(names))


# -- predicate translation ------------------------------------------------------------------

_CMP = {"Eq": "eq", "NotEq": "neq", "Lt": "lt", "LtEq": "lte", "Gt": "gt", "GtEq": "gte"}
_FLIP = {"eq": "eq", "neq": "neq", "lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}
_UNITS = {"Nanoseconds": "ns", "Microseconds": "us", "Milliseconds": "ms"}
_DYN = {"Int": "Int64", "Float": "Float64", "Str": "String"}
_INT_KINDS = {f"{s}Int{b}" for s in ("", "U") for b in (8, 16, 32, 64, 128)}


class _Untranslatable(Exception):
    """This (sub)expression stays with Polars."""


def _scalar(sc: Any) -> Any:
    """A Python (or pyarrow, for temporal values) literal from a serialized Polars scalar."""
    import pyarrow as pa

    if not isinstance(sc, dict) or len(sc) != 1:
        raise _Untranslatable(sc)
    kind, v = next(iter(sc.items()))
    if v is None:  # null, and also NaN/inf floats (the JSON cannot tell them apart)
        raise _Untranslatable(sc)
    if kind in _INT_KINDS:
        return int(v)
    if kind in ("Float32", "Float64"):
        return float(v)
    if kind == "String":
        return str(v)
    if kind == "Boolean":
        return bool(v)
    if kind == "Binary":
        return bytes(v)
    if kind == "Date":
        return pa.scalar(int(v), pa.date32())
    if kind == "Datetime":
        value, unit, tz = v
        if unit not in _UNITS:
            raise _Untranslatable(sc)
        zone = tz.get("inner") if isinstance(tz, dict) else tz
        return pa.scalar(int(value), pa.timestamp(_UNITS[unit], zone))
    if kind == "Decimal":
        unscaled, _precision, scale = v
        return decimal.Decimal(int(unscaled)).scaleb(-int(scale))
    if kind == "List":
        return _ipc_values(bytes(v))
    raise _Untranslatable(sc)


def _ipc_values(data: bytes) -> list[Any]:
    """The values of an ``is_in`` list (Arrow IPC stream bytes of one column)."""
    import pyarrow as pa

    try:
        t = pa.ipc.open_stream(data).read_all()
    except (pa.ArrowInvalid, OSError) as e:
        raise _Untranslatable(str(e)) from None
    if t.num_columns != 1:
        raise _Untranslatable("is_in list")
    a = t.column(0)
    if pa.types.is_nested(a.type):
        raise _Untranslatable("nested is_in list")
    temporal = pa.types.is_temporal(a.type)
    return [a[i] if temporal and a[i].is_valid else a[i].as_py() for i in range(len(a))]


class _Translator:
    """Polars expression (serialized JSON) -> ``vortex_io.expr``, for one Arrow schema."""

    def __init__(self, arrow_schema: pa.Schema, dtype: Any) -> None:
        self.schema = arrow_schema
        self.dtype = dtype

    def _is_float(self, name: str) -> bool:
        import pyarrow as pa

        return pa.types.is_floating(self.schema.field(name).type)

    def column(self, node: Any) -> str:
        if isinstance(node, dict) and set(node) == {"Column"} and isinstance(node["Column"], str):
            if node["Column"] in self.schema.names:
                return node["Column"]
        raise _Untranslatable(node)

    def literal(self, node: Any) -> Any:
        if isinstance(node, dict) and set(node) == {"Literal"}:
            lit = node["Literal"]
            if isinstance(lit, dict) and set(lit) == {"Scalar"}:
                return _scalar(lit["Scalar"])
            if isinstance(lit, dict) and set(lit) == {"Dyn"}:  # untyped (not optimized yet)
                return _scalar({_DYN.get(k, k): v for k, v in (lit["Dyn"] or {}).items()})
        raise _Untranslatable(node)

    def compare(self, op: str, name: str, value: Any) -> Expr:
        if isinstance(value, float) and value != value:
            raise _Untranslatable("NaN literal")
        if self._is_float(name) and op in ("gt", "gte"):
            # Polars orders NaN above every number: x > v keeps NaN rows, ~(x <= v) too
            return Not(Compare("lte" if op == "gt" else "lt", Column(name), Literal(value)))
        return Compare(op, Column(name), Literal(value))

    def tr(self, node: Any) -> Expr:
        if not isinstance(node, dict) or len(node) != 1:
            raise _Untranslatable(node)
        kind, body = next(iter(node.items()))
        if kind == "Column":
            return Column(self.column(node))
        if kind == "Literal":
            v = self.literal(node)
            if isinstance(v, bool):
                return Literal(v)
            raise _Untranslatable(node)
        if kind == "BinaryExpr":
            op = body.get("op")
            if op in ("And", "LogicalAnd"):
                return And(self.tr(body["left"]), self.tr(body["right"]))
            if op in ("Or", "LogicalOr"):
                return Or(self.tr(body["left"]), self.tr(body["right"]))
            if op in _CMP:
                left, right, cop = body["left"], body["right"], _CMP[op]
                if "Literal" in left:  # lit <op> col
                    left, right, cop = right, left, _FLIP[cop]
                return self.compare(cop, self.column(left), self.literal(right))
            raise _Untranslatable(node)
        if kind == "Function":
            fn = body.get("function")
            args = body.get("input") or []
            boolean = fn.get("Boolean") if isinstance(fn, dict) else None
            if boolean == "Not" and len(args) == 1:
                return Not(self.tr(args[0]))
            if boolean in ("IsNull", "IsNotNull") and len(args) == 1:
                return IsNull(Column(self.column(args[0])), boolean == "IsNotNull")
            if isinstance(boolean, dict) and "IsIn" in boolean and len(args) == 2:
                name = self.column(args[0])
                values = self.literal(args[1])
                if not isinstance(values, list):
                    raise _Untranslatable(node)
                if any(isinstance(v, float) and (v != v or v in (float("inf"), float("-inf")))
                       for v in values):
                    raise _Untranslatable("NaN in is_in")
                e: Expr = IsIn(Column(name), tuple(v for v in values if v is not None))
                if (boolean["IsIn"] or {}).get("nulls_equal"):
                    # never null: a null row is true iff the list holds a null
                    if any(v is None for v in values):
                        return Or(e, IsNull(Column(name), False))
                    return And(e, IsNull(Column(name), True))
                return e
            if isinstance(boolean, dict) and "IsBetween" in boolean and len(args) == 3:
                name = self.column(args[0])
                lo, hi = self.literal(args[1]), self.literal(args[2])
                closed = (boolean["IsBetween"] or {}).get("closed", "Both")
                lo_op = "gte" if closed in ("Both", "Left") else "gt"
                hi_op = "lte" if closed in ("Both", "Right") else "lt"
                # (x > lo) & (x < hi) gives NaN rows the same answer (false) under Polars'
                # order and IEEE's, since the upper bound is never NaN here
                for v in (lo, hi):
                    if isinstance(v, float) and v != v:
                        raise _Untranslatable("NaN bound")
                return And(Compare(lo_op, Column(name), Literal(lo)),
                           Compare(hi_op, Column(name), Literal(hi)))
        raise _Untranslatable(node)

    def translate(self, node: Any) -> Expr | None:
        """The vortex expression equivalent to a serialized Polars filter, or None."""
        try:
            e = self.tr(node)
            check_expr(e, self.dtype)  # literals the core cannot compare with the column
            return e
        except Exception:  # whatever fails to translate stays with Polars
            return None


def _split(node: Any) -> list[Any]:
    if (isinstance(node, dict) and set(node) == {"BinaryExpr"}
            and node["BinaryExpr"].get("op") in ("And", "LogicalAnd")):
        return _split(node["BinaryExpr"]["left"]) + _split(node["BinaryExpr"]["right"])
    return [node]


def translate_predicate(filters: Sequence[pl.Expr], arrow_schema: pa.Schema,
                        dtype: Any = None) -> tuple[Expr | None, list[pl.Expr]]:
    """Split Polars filters into AND-conjuncts: ``(pushed, kept)`` where ``pushed`` is the
    ``vortex_io.expr`` conjunction of those that translate (None if none does) and ``kept``
    the Polars expressions of the others.

    ``dtype``: the stream's Vortex dtype (default: derived from ``arrow_schema``), used to
    check that each literal can be compared with its column.
    """
    import polars as pl

    if dtype is None:
        dtype = vio.dtype.from_arrow(arrow_schema)
    t = _Translator(arrow_schema, dtype)
    pushed: list[Expr] = []
    kept: list[pl.Expr] = []
    for f in filters:
        try:
            parts = _split(json.loads(f.meta.serialize(format="json")))
        except Exception:  # e.g. not serializable: Polars evaluates it
            kept.append(f)
            continue
        rest = []
        for part in parts:
            e = t.translate(part)
            if e is None:
                rest.append(part)
            else:
                pushed.append(e)
        if len(rest) == len(parts):
            kept.append(f)
            continue
        for part in rest:
            try:
                kept.append(pl.Expr.deserialize(io.BytesIO(json.dumps(part).encode()),
                                                format="json"))
            except Exception:  # cannot show it apart: show the whole filter
                kept.append(f)
                break
    return (reduce(operator.and_, pushed) if pushed else None), kept


# -- the scan -------------------------------------------------------------------------------


#: a scan of one source of at most this many bytes runs as a Python IO source, not as
#: Polars' external-reader scan (see ``_small_scan``): 64 KiB decodes in well under the
#: 0.4 ms a query that saves
SMALL_SOURCE = 64 << 10

#: (dtype, Arrow schema) of each local file version (and ReaderLimits) a scan planned
_HEADERS = FileVersions(maxsize=1024)

#: what the readers' filter support means, for explain()
_FILTER_SUPPORT = {
    "full": "applied by the reader: on the encoded data where they translate, by Polars on "
            "each batch where not",
    "partial": "used by the reader to skip work; Polars applies them again (the scan adds "
               "partition or file path columns)",
    None: "applied by Polars (the scan inserts missing columns or casts)",
}


class _Spec:
    """What one ``scan_vortex_ipc`` call scans, shared by its readers (and its resolver)."""

    def __init__(self, sources: _Sources, limits: Any,
                 on_scan: Callable[[vio.Scan], None] | None, batch_size: int | None,
                 categorical: bool | str | Sequence[str], schema: Any,
                 scan_options: dict[str, Any]) -> None:
        self.sources = sources
        self.limits = limits
        self.on_scan = on_scan
        self.batch_size = batch_size
        self.categorical = categorical
        self.user_schema = schema  # a pl.Schema or None
        self.scan_options = scan_options  # ScanOptions keywords (hive, paths, columns)
        #: what the readers tell Polars about its filters (set by ``settle``): "full" (the
        #: reader applies them exactly), "partial" (they only save work: Polars applies them
        #: again) or None (Polars filters)
        self.filter_support: TypeLiteral["full", "partial"] | None = None
        self._lock = threading.Lock()
        self._schemas: dict[str | bytes, tuple[Any, Any, Any, tuple[str, ...]]] = {}
        #: what file_schema derived from each header read (kept per file version)
        self._derived: dict[int, tuple[Any, tuple[Any, Any, Any, tuple[str, ...]]]] = {}
        self._full_schema: Any = None
        self._file_columns: Any = None

    # what the scan's rows look like -------------------------------------------------------
    def file_schema(self, key: str | bytes) -> tuple[Any, Any, Any, tuple[str, ...]]:
        """(Vortex dtype, Arrow schema, Polars schema, the columns read as Categorical) of
        one source (header only). A local file's are those of its current version (a file
        rewritten after the frame was built is checked against the scan's schema by
        Polars); other sources' are read once per scan."""
        src = self.sources.get(key)
        if isinstance(src, str) and not _fs.is_remote(src):
            header = self._header(key)
            with self._lock:
                memo = self._derived.get(id(header))
            if memo is None or memo[0] is not header:  # (a new version's header)
                memo = (header, self._derive(*header))
                with self._lock:
                    if len(self._derived) >= 64:  # (headers not kept per version: fresh ones)
                        self._derived.clear()
                    self._derived[id(header)] = memo
            return memo[1]
        ck = key if isinstance(key, str) else bytes(key)
        with self._lock:
            hit = self._schemas.get(ck)
        if hit is None:
            hit = self._derive(*self._header(key))
            with self._lock:
                self._schemas[ck] = hit
        return hit

    def _derive(self, dtype: Any, arrow_schema: Any) -> tuple[Any, Any, Any, tuple[str, ...]]:
        schema = _polars_schema(arrow_schema)
        cats = _categorical_columns(self.categorical, schema)
        if cats:
            import polars as pl

            schema = pl.Schema({n: pl.Categorical() if n in cats else t
                                for n, t in schema.items()})
        return dtype, arrow_schema, schema, cats

    def _header(self, key: str | bytes) -> tuple[Any, Any]:
        """(Vortex dtype, Arrow schema) of one source from its DType message. A local file's
        are kept process-wide while its identity, size and modification time stay the same
        (a query planned again on an unchanged file does not read its header again)."""
        src = self.sources.get(key)
        # missing (opening names it), a URL or unhashable limits: not kept
        ck = _HEADERS.key(src, self.limits) if isinstance(src, str) \
            and not _fs.is_remote(src) else None
        hit = None if ck is None else _HEADERS.get(ck)
        if hit is not None:
            return hit
        s = self.open(key)
        out = (s.dtype, s.schema)
        if ck is not None:
            out = _HEADERS.put(ck, out)
        return out

    def file_columns(self) -> Any:
        """The file columns of the scan: ``schema=`` if given, else the first source's when
        first asked (the frame's schema, fixed from then on)."""
        if self.user_schema is not None:
            return self.user_schema
        if self._file_columns is None:
            self._file_columns = self.file_schema(self.sources.first())[2]
        return self._file_columns

    def full_schema(self) -> Any:
        """The scan's schema: the file columns, then hive partition columns and the file
        path column where Polars adds them."""
        if self._full_schema is None:
            so = self.scan_options
            if so.get("include_file_paths") is None and not so.get("hive_partitioning"):
                full = self.file_columns()
            else:
                full = self.external().collect_schema()
            self._full_schema = full
        return self._full_schema

    def settle(self) -> None:
        """Decide, once the scan's schema is known, how its readers take Polars' filters."""
        so = self.scan_options
        if so.get("missing_columns", "raise") != "raise" or so.get("cast_options") is not None:
            # a file may lack a column or hold another type: Polars filters after inserting or
            # casting (and Polars 2.1 panics handing filters to the readers of a scan that
            # inserts missing columns)
            self.filter_support = None
        elif len(self.full_schema()) != len(self.file_columns()):
            # partition or file path columns: Polars hands the readers filters that name them
            # (an OR of a partition and a file column), which no file can evaluate
            self.filter_support = "partial"
        else:
            self.filter_support = "full"

    def small_source(self) -> str | None:
        """The key of the scan's source if it is one small local file or in-memory stream
        (at most ``SMALL_SOURCE`` bytes) and the scan adds nothing of Polars' multi-file
        machinery (no partition or file path columns, ``schema=``, casts or inserted
        columns), else None. Call after ``settle``."""
        so, raw = self.scan_options, self.sources._raw
        if (self.filter_support != "full" or self.user_schema is not None or len(raw) != 1
                or so.get("hive_partitioning") or so.get("include_file_paths") is not None):
            return None
        item = raw[0]
        if isinstance(item, (str, os.PathLike)):
            path = os.fspath(item)
            if _fs.is_remote(path) or not self.sources._literal(path):
                return None
            try:
                size = os.stat(path).st_size
            except OSError:
                return None
            key = path
        else:
            key = self.sources.first()
            data = self.sources.get(key)
            size = memoryview(data).nbytes
        return key if size <= SMALL_SOURCE else None

    def external(self) -> pl.LazyFrame:
        """The external-reader scan of every source under Polars' multi-file options."""
        from polars._plr import PyLazyFrame
        from polars._utils.wrap import wrap_ldf
        from polars.io.scan_options._options import ScanOptions

        builder = _reader_classes()[0](self)
        opts = ScanOptions(expand_paths=self.sources.local, glob=self.sources.glob,
                           hidden_file_prefix=self.sources.hidden_file_prefix,
                           **self.scan_options)
        return wrap_ldf(PyLazyFrame.new_from_external_reader_builder(
            sources=self.sources.polars_sources(), reader_builder=builder,
            schema=self.file_columns(), scan_options=opts))

    def open(self, key: str | bytes, **kw: Any) -> vio.Scan:
        src = self.sources.get(key)
        if self.sources.storage_options is not None and isinstance(src, str) and _fs.is_remote(src):
            kw["storage_options"] = self.sources.storage_options
        try:
            return vio.scan(src, limits=self.limits, **kw)
        except VortexIPCError as e:
            raise e.locate(source=self.sources.label(key)) from None


class _Reader:
    """One source, as Polars' ``FileReader`` protocol wants it (``VortexFileReader`` adds
    the ABC; ``VortexReaderBuilder.build_file_reader`` creates one per source)."""

    def __init__(self, spec: _Spec, key: str | bytes) -> None:
        self.spec = spec
        self.key = key
        self._nrows: int | None = None

    def schema(self) -> pl.Schema:
        schema = self.spec.file_schema(self.key)[2]
        if self.spec.scan_options.get("extra_columns") == "ignore":
            import polars as pl

            want = self.spec.file_columns()
            schema = pl.Schema({n: t for n, t in schema.items() if n in want})
        return schema

    def fetch_metadata(self) -> None:
        self.spec.file_schema(self.key)

    def n_rows_in_file(self, limit: int | None = None) -> int:
        if self._nrows is None:
            n = 0
            for b in self.spec.open(self.key, columns=[]):  # headers only, nothing decoded
                n += b.num_rows
                if limit is not None and n >= limit:
                    return n
            self._nrows = n
        return self._nrows

    def collect_batches(self, *, columns: Sequence[str], row_index: Any = None,
                        pre_slice: tuple[int, int] | None = None, filters: Sequence[Any] = (),
                        num_pipelines: int = 1) -> Iterator[pl.DataFrame]:
        spec = self.spec
        dtype, arrow_schema, _, cats = spec.file_schema(self.key)
        offset, limit = (0, None) if pre_slice is None else pre_slice
        if offset < 0:
            raise ValueError(f"negative pre_slice offset {offset} (not announced as supported)")
        exprs = [f.expr for f in filters]
        full = spec.filter_support == "full"
        vfilter: Expr | None = None
        after: list[pl.Expr] = []  # what Polars evaluates on each batch
        if exprs and pre_slice is not None:
            # the slice comes first (Polars' order), then every filter, on the sliced rows
            after = exprs if full else []
        elif exprs:
            # the conjuncts that translate run on the encoded data (exactly Polars' rows:
            # test_pushed_filters_are_exact); with "full" the others run here, with "partial"
            # Polars applies them all again
            vfilter, kept = translate_predicate(exprs, arrow_schema, dtype)
            after = kept if full else []
        # a column this file lacks is Polars' to insert (missing_columns="insert")
        names = set(arrow_schema.names)
        cols = [c for c in columns if c in names]
        yield from _frames(spec, self.key, cats, cols, vfilter, after, limit=limit,
                           offset=offset)


def _frames(spec: _Spec, key: str | bytes, cats: Sequence[str], columns: Sequence[str],
            vfilter: Expr | None, after: Sequence[pl.Expr], *, limit: int | None = None,
            offset: int = 0, keep: Sequence[str] | None = None) -> Iterator[pl.DataFrame]:
    """One source's rows as Polars frames: ``columns`` scanned with ``vfilter`` on the
    encoded data (and ``limit``/``offset``), ``after`` evaluated by Polars on each batch,
    then only ``keep`` (default: every column read)."""
    # string_view: Polars' own string layout (handing it `string` costs a conversion pass)
    scan = spec.open(key, columns=columns, filter=vfilter, limit=limit, offset=offset,
                     batch_size=spec.batch_size, string_view=True)
    if spec.on_scan is not None:
        spec.on_scan(scan)
    import polars as pl

    try:
        for batch in scan:
            df = _to_polars(batch, cats)
            if after:
                df = df.filter(*after)
            if keep is not None:  # (no column: the rows still count)
                df = df.select(keep) if keep else pl.DataFrame(height=df.height)
            yield df
    except VortexIPCError as e:
        raise e.locate(source=spec.sources.label(key)) from None


def _reader_classes() -> tuple[type, type]:
    """(builder, reader) classes deriving from Polars' ABCs (created on first use)."""
    global _CLASSES
    if _CLASSES is None:
        from polars.io.external_reader import FileReader, FileReaderBuilder, ReaderCapabilities

        class VortexFileReader(_Reader, FileReader):
            pass

        class VortexReaderBuilder(FileReaderBuilder):
            def __init__(self, spec: _Spec) -> None:
                self.spec = spec

            def reader_capabilities(self) -> Any:
                return ReaderCapabilities(pre_slice=True,
                                          supported_filter=self.spec.filter_support)

            def build_file_reader(self, source: str | bytes, multi_scan_context: Any) -> Any:
                return VortexFileReader(self.spec, source)

            def explain_properties(self) -> dict[str, str]:
                n = len(self.spec.sources._raw)
                return {"format": f"vortex-ipc ({n} source{'s' if n != 1 else ''})",
                        "filters": _FILTER_SUPPORT[self.spec.filter_support]}

        _CLASSES = (VortexReaderBuilder, VortexFileReader)
    return _CLASSES


_CLASSES: tuple[type, type] | None = None
_RESOLVER: type | None = None


def _resolver_class() -> type:
    global _RESOLVER
    if _RESOLVER is None:
        from polars.lazyframe.resolver import LazyFrameResolver, ResolvedLazyFrameProps

        class VortexScan(LazyFrameResolver):
            """The scan of sources whose schema is read when a query runs, not when the frame
            is built (a URL, or a source that could not be read then): what the first query
            resolves to is the external-reader scan."""

            def __init__(self, spec: _Spec) -> None:
                self.spec = spec

            def schema(self) -> Any:
                return self.spec.full_schema()

            def resolve_lazyframe(self, *, projection: list[str] | None, limit: int | None,
                                  filters: list[Any], filter_columns: list[str],
                                  filter_drop_columns_idx: int | None,
                                  existing_resolved_version_key: str | None) -> Any:
                import polars as pl

                self.spec.settle()
                lf = self.spec.external()
                exprs = [f.expr for f in filters]
                # the order Polars' own resolvers use: limit, projection, then filters (which
                # Polars pushes into the scan above)
                if limit is not None:
                    lf = lf.head(limit)
                if projection is not None:
                    lf = lf.select(projection) if projection else lf.drop(pl.selectors.all())
                if exprs:
                    lf = lf.filter(reduce(operator.and_, exprs))
                    if projection is not None and filter_drop_columns_idx is not None:
                        # columns at and past the index serve only the filters
                        lf = lf.select(projection[:filter_drop_columns_idx])
                return lf, ResolvedLazyFrameProps(applied_filters=range(len(exprs)))

        _RESOLVER = VortexScan
    return _RESOLVER


def _check_polars() -> Any:
    try:
        import polars as pl
    except ImportError:
        raise ImportError(
            f"the Polars integration needs polars{_POLARS_SPEC}: pip install 'vortex-io[polars]'"
        ) from None
    major_minor = tuple(int(x) for x in pl.__version__.split(".")[:2])
    if major_minor != (2, 1):
        raise ImportError(f"the Polars integration is built for polars{_POLARS_SPEC}, "
                          f"found {pl.__version__}")
    return pl


def scan_vortex_ipc(
    source: Any,
    *,
    n_rows: int | None = None,
    row_index_name: str | None = None,
    row_index_offset: int = 0,
    glob: bool = True,
    hidden_file_prefix: str | Sequence[str] | None = None,
    schema: Any = None,
    hive_partitioning: bool | None = None,
    hive_schema: Any = None,
    try_parse_hive_dates: bool = True,
    include_file_paths: str | None = None,
    missing_columns: str = "raise",
    extra_columns: str = "raise",
    cast_options: Any = None,
    storage_options: dict[str, Any] | None = None,
    cache: bool = True,
    batch_size: int | None = None,
    limits: vio.ReaderLimits | None = None,
    on_scan: Callable[[vio.Scan], None] | None = None,
    categorical: bool | str | Sequence[str] = False,
) -> pl.LazyFrame:
    """Lazily scan Vortex IPC streams into a ``polars.LazyFrame``, as ``pl.scan_parquet``
    scans Parquet.

    ``source``: a path, a directory, a glob (``'data/**/*.vxipc'``), a URL (``s3://``,
    ``https://``, ``memory://``, any fsspec protocol), bytes, a binary file object (read
    whole on first use), or a list of those (read in order).

    The multi-file options mean what they mean for ``scan_parquet`` and run on Polars' own
    machinery: ``glob`` (expand ``*``/``?``/``[...]``; False reads ``br[1].vxipc`` as a
    name), ``hidden_file_prefix``, ``hive_partitioning`` (None: on for a single directory),
    ``hive_schema``, ``try_parse_hive_dates``, ``include_file_paths`` (a column with each
    row's source), ``missing_columns`` (``"insert"``: nulls for a column a file lacks),
    ``extra_columns`` (``"ignore"``: drop columns outside the schema), ``schema`` (the file
    columns, checked against every file; no file is read to plan), ``cast_options``,
    ``n_rows``, ``row_index_name``/``row_index_offset``, ``cache``. ``storage_options``
    go to fsspec for URL sources (Polars' own cloud options do not apply: the streams are
    read by vortex_io). The frame's schema is the first local source's header, read when
    the frame is built (URLs are read when a query runs); errors about the files
    (missing, malformed, mismatched schemas) are raised by ``collect``.

    ``batch_size``: split batches to at most this many rows. ``limits``: ``ReaderLimits``
    for untrusted input. ``on_scan``: called with each per-source ``vortex_io.Scan`` as it
    starts (its ``filter`` shows what was pushed down; its ``stats`` are complete once the
    query returns). ``categorical``: read string columns as ``pl.Categorical`` (True: every
    string column; a name or names: those columns, which must be strings).

    Projection, filters and slices (``head``, ``slice``, ``tail``) are pushed down;
    ``explain()`` shows the filters the scan applies.
    """
    pl = _check_polars()
    if n_rows is not None and n_rows < 0:
        raise ValueError("n_rows must be >= 0")
    for name, value, allowed in (("missing_columns", missing_columns, ("insert", "raise")),
                                 ("extra_columns", extra_columns, ("ignore", "raise"))):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, not {value!r}")
    if isinstance(hidden_file_prefix, str):
        hidden_file_prefix = [hidden_file_prefix]
    options = {"hive_partitioning": hive_partitioning, "hive_schema": hive_schema,
               "try_parse_hive_dates": try_parse_hive_dates,
               "include_file_paths": include_file_paths, "missing_columns": missing_columns,
               "extra_columns": extra_columns, "cast_options": cast_options, "cache": cache}
    sources = _Sources(source, glob, hidden_file_prefix, storage_options)
    if hive_partitioning is None:  # scan_parquet's default: on for a single directory
        options["hive_partitioning"] = sources.single_directory()
    spec = _Spec(sources, limits, on_scan, batch_size, categorical,
                 None if schema is None else pl.Schema(schema), options)
    lf = _build(spec)
    if n_rows is not None:  # before the row index: Polars pushes no slice below one
        lf = lf.head(n_rows)
    if row_index_name is not None:
        lf = lf.with_row_index(row_index_name, offset=row_index_offset)
    return lf


def _build(spec: _Spec) -> pl.LazyFrame:
    """The frame of a scan. Polars' external-reader scan wants the file columns when it is
    built: they are the first source's header, read now (and kept per file version) for
    local files and in-memory sources. Where that read fails (a missing file, a malformed
    header) or would be remote IO, the frame is a resolver that reads the header when a
    query runs, so the error is raised by ``collect``, as ``scan_parquet`` raises it."""
    import polars as pl

    if spec.user_schema is None and not spec.sources.remote_free():
        return pl.LazyFrame.from_lazyframe_resolver(_resolver_class()(spec))
    try:
        spec.settle()
    except Exception:  # raised again when the query reads the header
        return pl.LazyFrame.from_lazyframe_resolver(_resolver_class()(spec))
    key = spec.small_source()
    return spec.external() if key is None else _small_scan(spec, key)


def _small_scan(spec: _Spec, key: str) -> pl.LazyFrame:
    """The frame of a scan of one small source (``_Spec.small_source``): a Python IO
    source, which Polars calls on one of its own threads. Polars' external-reader scan
    costs a query about 0.4 ms more (a new Python thread pool per query, whose fresh
    threads run the reader's first pyarrow and Polars calls 2x slower), more than reading
    a small file; its slice pushdown and column-free counts save less than that here.

    The same rows, errors and filters as the external-reader scan: the predicate's
    conjuncts that translate run on the encoded data, the others on each batch; a file
    rewritten with another schema after the frame was built is read by the external-reader
    scan, so Polars checks it as it would there."""
    from polars.io.plugins import register_io_source

    schema = spec.file_columns()

    def source(with_columns: list[str] | None, predicate: pl.Expr | None,
               n_rows: int | None, batch_size: int | None) -> Iterator[pl.DataFrame]:
        dtype, arrow_schema, file_schema, cats = spec.file_schema(key)
        # Polars' order: the first n_rows rows (a head below the filter), then the filter
        if file_schema != schema:
            lf = spec.external()
            if n_rows is not None:
                lf = lf.head(n_rows)
            if predicate is not None:
                lf = lf.filter(predicate)
            yield lf.collect() if with_columns is None else lf.select(with_columns).collect()
            return
        cols = list(schema) if with_columns is None else list(with_columns)
        if predicate is None:
            yield from _frames(spec, key, cats, cols, None, (), limit=n_rows)
            return
        if n_rows is None:
            vfilter, after = translate_predicate([predicate], arrow_schema, dtype)
        else:
            vfilter, after = None, [predicate]
        if not after:
            yield from _frames(spec, key, cats, cols, vfilter, ())
            return
        # Polars evaluates the rest on each batch: the columns it names are read too
        need = predicate.meta.root_names()
        read = cols + [c for c in dict.fromkeys(need) if c not in cols]
        yield from _frames(spec, key, cats, read, vfilter, after, limit=n_rows,
                           keep=cols if len(read) != len(cols) else None)

    return register_io_source(
        source, schema=schema, is_pure=bool(spec.scan_options.get("cache", True)),
        explain_name="vortex-ipc",
        explain_detail=f"format: vortex-ipc ({spec.sources.label(key) or key}), "
                       f"filters: {_FILTER_SUPPORT['full']}")


def read_vortex_ipc(source: Any, *, columns: Sequence[str] | Sequence[int] | None = None,
                    n_rows: int | None = None, **kwargs: Any) -> pl.DataFrame:
    """Read Vortex IPC streams into a ``polars.DataFrame`` (``scan_vortex_ipc`` + collect).

    ``columns``: the columns to read, by name or by index (default: all). Other keywords
    as ``scan_vortex_ipc``.
    """
    lf = scan_vortex_ipc(source, n_rows=n_rows, **kwargs)
    if columns is not None:
        cols = list(columns)
        indices = [c for c in cols if isinstance(c, int) and not isinstance(c, bool)]
        if cols and len(indices) == len(cols):
            names = lf.collect_schema().names()
            for c in indices:
                if not -len(names) <= c < len(names):
                    raise IndexError(f"column index {c} out of range: the scan has "
                                     f"{len(names)} columns")
            cols = [names[c] for c in indices]
        elif not all(isinstance(c, str) for c in cols):
            raise TypeError("columns must be all names or all indices")
        lf = lf.select(cols)
    return lf.collect()


def write_ipc(df: pl.DataFrame, sink: Any, *, metadata: Any = None, compress: bool = True,
              chunk_rows: int = 65_536) -> int:
    """Write a ``polars.DataFrame`` as a Vortex IPC stream; returns the bytes written.

    ``sink``: a path or binary file object. ``metadata``: the stream's custom metadata.
    ``compress``: use the sampling compressor (default) or write canonical arrays.
    """
    return vio.write_ipc(sink, df.to_arrow(), metadata=metadata, compress=compress,
                         chunk_rows=chunk_rows)


def sink_ipc(lf: pl.LazyFrame, sink: Any, *, metadata: Any = None, compress: bool = True,
             chunk_rows: int = 65_536, lazy: bool = False, partition_by: Any = None,
             max_open_files: int = 1024, existing: str = "error") -> Any:
    """Stream a ``polars.LazyFrame`` into a Vortex IPC stream with bounded memory (the
    streaming engine produces batches of about ``chunk_rows`` rows; each becomes one or
    more messages as it arrives). Returns the bytes written.

    ``partition_by`` (a column name or a list of them): ``sink`` is a directory written in
    the hive layout ``sink/k1=v1/.../part-0.vxipc`` (as ``sink_parquet`` with a
    partitioned target writes it), still batch by batch; ``max_open_files`` and
    ``existing`` are ``vortex_io.write_ipc``'s.

    ``lazy=True`` (as ``sink_parquet(lazy=True)``): return a ``LazyFrame`` that writes the
    stream when it is collected (alone or with ``pl.collect_all``) and collects to an empty
    frame; nothing is written before that.
    """
    pl = _check_polars()
    if lazy:
        from polars.io.plugins import register_io_source

        def run(with_columns: Any, predicate: Any, n_rows: Any, batch_size: Any
                ) -> Iterator[DataFrame]:
            sink_ipc(lf, sink, metadata=metadata, compress=compress, chunk_rows=chunk_rows,
                     partition_by=partition_by, max_open_files=max_open_files,
                     existing=existing)
            return iter(())

        return register_io_source(run, schema=pl.Schema(), explain_name="vortex-ipc sink",
                                  explain_detail=f"to {sink!r}")
    import pyarrow as pa

    schema = lf.collect_schema()
    arrow_schema = pl.DataFrame(schema=schema).to_arrow().schema

    def batches() -> Iterator[pa.RecordBatch]:
        for df in lf.collect_batches(chunk_size=chunk_rows, engine="streaming"):
            t = df.to_arrow()
            if t.schema != arrow_schema:
                t = t.cast(arrow_schema)
            yield from t.to_batches()

    reader = pa.RecordBatchReader.from_batches(arrow_schema, batches())
    if partition_by is not None:
        return vio.write_ipc(sink, reader, metadata=metadata, compress=compress,
                             chunk_rows=chunk_rows, partition_by=partition_by,
                             max_open_files=max_open_files, existing=existing)
    return vio.write_ipc(sink, reader, metadata=metadata, compress=compress,
                         chunk_rows=chunk_rows)


# -- registration ---------------------------------------------------------------------------

_registered = False
_register_lock = threading.Lock()


def register() -> None:
    """Add ``pl.scan_vortex_ipc``, ``pl.read_vortex_ipc`` and the ``vortex`` namespace
    (``DataFrame.vortex.write_ipc``, ``LazyFrame.vortex.sink_ipc``). Idempotent."""
    global _registered
    pl = _check_polars()
    with _register_lock:
        if _registered:
            return

        @pl.api.register_dataframe_namespace("vortex")
        class DataFrameVortex:
            """``df.vortex.write_ipc(sink, *, metadata=None, compress=True)``."""

            def __init__(self, df: DataFrame) -> None:
                self._df = df

            def write_ipc(self, sink: Any, *, metadata: Any = None, compress: bool = True,
                          chunk_rows: int = 65_536) -> int:
                return write_ipc(self._df, sink, metadata=metadata, compress=compress,
                                 chunk_rows=chunk_rows)

        @pl.api.register_lazyframe_namespace("vortex")
        class LazyFrameVortex:
            """``lf.vortex.sink_ipc(sink, *, metadata=None, compress=True, lazy=False,
            partition_by=None)``."""

            def __init__(self, lf: LazyFrame) -> None:
                self._lf = lf

            def sink_ipc(self, sink: Any, *, metadata: Any = None, compress: bool = True,
                         chunk_rows: int = 65_536, lazy: bool = False,
                         partition_by: Any = None, max_open_files: int = 1024,
                         existing: str = "error") -> Any:
                return sink_ipc(self._lf, sink, metadata=metadata, compress=compress,
                                chunk_rows=chunk_rows, lazy=lazy, partition_by=partition_by,
                                max_open_files=max_open_files, existing=existing)

        pl.scan_vortex_ipc = scan_vortex_ipc
        pl.read_vortex_ipc = read_vortex_ipc
        _registered = True
