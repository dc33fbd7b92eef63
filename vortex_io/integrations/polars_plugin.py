"""Polars integration: ``pl.scan_vortex_ipc`` with projection, predicate and slice pushdown.

>>> import vortex_io as vio
>>> vio.register_polars()  # doctest: +SKIP
>>> pl.scan_vortex_ipc("trades.vxi").filter(pl.col("symbol") == "AAPL").collect()  # doctest: +SKIP

``register()`` (``vortex_io.register_polars()``) adds ``pl.scan_vortex_ipc``,
``pl.read_vortex_ipc``, ``DataFrame.vortex.write_ipc`` and ``LazyFrame.vortex.sink_ipc``;
the same functions are importable from this module (type checkers see them here).

How it plugs into Polars 2.1 (measured; see ``shared/reference/adapters.md``)
-------------------------------------------------------------------------------
Polars offers two Python scan-source APIs. We use ``scan_external_reader`` (one
``FileReader`` per source, Polars' own ``scan_lance`` uses it) under a small
``LazyFrameResolver``, not ``register_io_source``, because measured on Polars 2.1.0:

* **Slice pushdown.** ``register_io_source`` only ever receives ``n_rows`` for ``head``
  without a filter: ``slice(o, n)`` and ``tail`` arrive as nothing and read everything.
  The external reader receives ``pre_slice=(offset, len)`` per file for ``head``,
  ``slice`` and ``tail`` (Polars resolves negative offsets with ``n_rows_in_file``, which
  we answer from message headers without decoding), and ``vortex_io.scan(offset=...)``
  skips whole chunks undecoded.
* **Filters are never wrong.** ``register_io_source`` treats the pushed predicate as a
  requirement (Polars does not filter again), so one translation slip returns wrong rows.
  The resolver pushes the conjuncts that translate into the scan as its filter (exactly
  Polars' rows: NaN ordering, nulls and literal types are followed, and
  ``test_pushed_filters_are_exact`` checks random predicates against Polars), so Polars
  neither reads the columns only they use nor filters again; a conjunct that does not
  translate (``str.contains``, arithmetic, casts, NaN/inf literals, ...) stays a Polars
  filter above the scan. Nothing is dropped and nothing is all-or-nothing. With a limit
  (which applies before the filters) every filter stays Polars'; filters Polars hands the
  reader itself (``supported_filter="partial"``: Polars re-applies them) only skip work
  (chunk pruning on statistics, kernels on encoded data).
* **Conjuncts arrive split.** Both APIs hand over optimizer-typed expressions; the
  external reader and the resolver get the AND-conjuncts as a list.
* **Multi-file.** Polars drives one reader per file (globs, lists), checks each file's
  schema against the first, and runs files on its pipelines.
* **explain().** ``register_io_source`` fixes ``explain_detail`` when the frame is built,
  before any filter exists. The resolver is called with the query's projection, limit and
  filters during optimization, so the plan shows per query what runs on encoded data
  (``vortex filter``) and what Polars evaluates (``polars filter``).
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
import io
import json
import operator
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

import vortex_io as vio
from vortex_io.compute import check_expr
from vortex_io.compute.expr import And, Column, Compare, Expr, IsIn, IsNull, Literal, Not, Or
from vortex_io.errors import VortexIPCError
from vortex_io.scan import expand_sources

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

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
    """The sources of one scan, keyed by the strings Polars sees (paths stay paths)."""

    def __init__(self, source: Any) -> None:
        items = expand_sources(source)
        if not items:
            raise ValueError("scan_vortex_ipc() needs at least one source")
        self.keys: list[str] = []
        self._items: dict[str, Any] = {}
        self._lock = threading.Lock()
        for i, item in enumerate(items):
            if isinstance(item, (str, os.PathLike)):
                key = os.fspath(item)
            else:
                name = getattr(item, "name", None)
                kind = "file" if hasattr(item, "read") else "bytes"
                key = f"<{kind} #{i}{': ' + name if isinstance(name, str) else ''}>"
            while key in self._items:  # the same path twice is read twice
                key += " "
            self.keys.append(key)
            self._items[key] = item

    def get(self, key: str) -> Any:
        """The readable source for ``key``: a path or bytes (file objects are read once,
        from their current position, and kept: a scan may read a source several times)."""
        item = self._items[key]
        if isinstance(item, (str, os.PathLike)):
            return os.fspath(item)
        if hasattr(item, "read"):
            with self._lock:
                item = self._items[key]
                if hasattr(item, "read"):
                    data = item.read()
                    if not isinstance(data, (bytes, bytearray, memoryview)):
                        raise TypeError(f"{key}: file objects must be opened in binary mode")
                    item = self._items[key] = bytes(data)
        return item

    def label(self, key: str) -> str | None:
        """The name errors carry (None for a path: the reader names it already)."""
        item = self._items[key]
        return None if isinstance(item, (str, os.PathLike)) else key.rstrip()


def _polars_schema(arrow_schema: pa.Schema) -> pl.Schema:
    """The Polars schema batches of ``arrow_schema`` convert to (the same conversion)."""
    import polars as pl

    return pl.DataFrame(arrow_schema.empty_table()).schema


def _to_polars(batch: pa.RecordBatch, categorical: Sequence[str] = ()) -> pl.DataFrame:
    import polars as pl

    if batch.num_columns == 0:
        return pl.DataFrame(height=batch.num_rows)
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


class _Spec:
    """What one ``scan_vortex_ipc`` call scans, shared by its resolver and readers."""

    def __init__(self, source: Any, limits: Any, on_scan: Callable[[vio.Scan], None] | None,
                 batch_size: int | None, categorical: bool | str | Sequence[str] = False) -> None:
        self.sources = _Sources(source)
        self.limits = limits
        self.on_scan = on_scan
        self.batch_size = batch_size
        self.categorical = categorical
        self._lock = threading.Lock()
        self._schemas: dict[str, tuple[Any, Any, Any, tuple[str, ...]]] = {}

    def file_schema(self, key: str) -> tuple[Any, Any, Any, tuple[str, ...]]:
        """(Vortex dtype, Arrow schema, Polars schema, the columns read as Categorical) of
        one source (header only)."""
        with self._lock:
            hit = self._schemas.get(key)
        if hit is None:
            s = self.open(key)
            schema = _polars_schema(s.schema)
            cats = _categorical_columns(self.categorical, schema)
            if cats:
                import polars as pl

                schema = pl.Schema({n: pl.Categorical() if n in cats else t
                                    for n, t in schema.items()})
            hit = (s.dtype, s.schema, schema, cats)
            with self._lock:
                self._schemas[key] = hit
        return hit

    @property
    def first(self) -> str:
        return self.sources.keys[0]

    def open(self, key: str, **kw: Any) -> vio.Scan:
        try:
            return vio.scan(self.sources.get(key), limits=self.limits, **kw)
        except VortexIPCError as e:
            raise e.locate(source=self.sources.label(key)) from None


class _Reader:
    """One source, as Polars' ``FileReader`` protocol wants it (``VortexFileReader`` adds
    the ABC; ``VortexReaderBuilder.build_file_reader`` creates one per source)."""

    def __init__(self, spec: _Spec, key: str, exact: Expr | None = None) -> None:
        self.spec = spec
        self.key = key
        self.exact = exact  # the resolver's filter: the reader's rows are those it keeps
        self._nrows: int | None = None

    def schema(self) -> pl.Schema:
        return self.spec.file_schema(self.key)[2]

    def fetch_metadata(self) -> None:
        self.spec.file_schema(self.key)

    def n_rows_in_file(self, limit: int | None = None) -> int:
        if self._nrows is None:
            n = 0
            # headers only without a filter (nothing decoded); with one, the mask of each
            # message (the filter's columns on their encoded data)
            for b in self.spec.open(self.key, columns=[], filter=self.exact):
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
        vfilter = self.exact
        if filters and pre_slice is None:
            # Polars re-applies these filters ("partial"): push what translates, as is
            partial, _ = translate_predicate([f.expr for f in filters], arrow_schema, dtype)
            if partial is not None:
                vfilter = partial if vfilter is None else And(vfilter, partial)
        # string_view: Polars' own string layout (handing it `string` costs a conversion pass)
        scan = spec.open(self.key, columns=list(columns), filter=vfilter, limit=limit,
                         offset=offset, batch_size=spec.batch_size, string_view=True)
        if spec.on_scan is not None:
            spec.on_scan(scan)
        try:
            for batch in scan:
                yield _to_polars(batch, cats)
        except VortexIPCError as e:
            raise e.locate(source=spec.sources.label(self.key)) from None


def _reader_classes() -> tuple[type, type]:
    """(builder, reader) classes deriving from Polars' ABCs (created on first use)."""
    global _CLASSES
    if _CLASSES is None:
        from polars.io.external_reader import FileReader, FileReaderBuilder, ReaderCapabilities

        class VortexFileReader(_Reader, FileReader):  # type: ignore[misc]
            pass

        class VortexReaderBuilder(FileReaderBuilder):
            def __init__(self, spec: _Spec, properties: dict[str, str],
                         exact: Expr | None = None) -> None:
                self.spec = spec
                self.properties = properties
                self.exact = exact

            def reader_capabilities(self) -> Any:
                return ReaderCapabilities(pre_slice=True, supported_filter="partial")

            def build_file_reader(self, source: str | bytes, multi_scan_context: Any) -> Any:
                if not isinstance(source, str):
                    raise TypeError("vortex scan sources are keys (str)")
                return VortexFileReader(self.spec, source, self.exact)

            def explain_properties(self) -> dict[str, str]:
                return self.properties

        _CLASSES = (VortexReaderBuilder, VortexFileReader)
    return _CLASSES


_CLASSES: tuple[type, type] | None = None
_RESOLVER: type | None = None


def _resolver_class() -> type:
    global _RESOLVER
    if _RESOLVER is None:
        from polars.lazyframe.resolver import LazyFrameResolver, ResolvedLazyFrameProps

        class VortexScan(LazyFrameResolver):
            """Resolves a query's projection/limit/filters into an external-reader scan
            whose explain() shows what runs on encoded data."""

            def __init__(self, spec: _Spec) -> None:
                self.spec = spec

            def schema(self) -> Any:
                return self.spec.file_schema(self.spec.first)[2]

            def resolve_lazyframe(self, *, projection: list[str] | None, limit: int | None,
                                  filters: list[Any], filter_columns: list[str],
                                  filter_drop_columns_idx: int | None,
                                  existing_resolved_version_key: str | None) -> Any:
                import polars as pl

                spec = self.spec
                dtype, arrow_schema, schema, _ = spec.file_schema(spec.first)
                exprs = [f.expr for f in filters]
                pushed, kept = translate_predicate(exprs, arrow_schema, dtype)
                # Without a limit the translated conjuncts are the scan's own filter: they
                # give exactly Polars' rows (test_pushed_filters_are_exact), so Polars neither
                # reads their columns nor filters again; what does not translate stays a
                # Polars filter. A limit applies before the filters (Polars' order), so with
                # one every filter stays Polars' and the translation only skips work.
                exact = pushed if limit is None else None
                post = kept if exact is not None else exprs
                props = {"format": f"vortex-ipc ({len(spec.sources.keys)} source(s))",
                         "vortex filter": _show(pushed) if pushed is not None else "none"}
                if post:
                    props["polars filter"] = _show(" & ".join(str(k) for k in post))
                if limit is not None:
                    props["limit"] = str(limit)
                builder = _reader_classes()[0](spec, props, exact)
                lf = pl.scan_external_reader(builder, sources=list(spec.sources.keys),
                                             schema=schema)
                if (projection is not None and filter_drop_columns_idx is not None
                        and exact is not None and not post):
                    # columns at and past the index serve only the filters, which the scan ran
                    projection = projection[:filter_drop_columns_idx]
                # the order Polars' own resolvers use: limit, projection, then filters
                if limit is not None:
                    lf = lf.head(limit)
                if projection is not None:
                    lf = lf.select(projection) if projection else lf.drop(pl.all())
                if post:
                    lf = lf.filter(reduce(operator.and_, post))
                return lf, ResolvedLazyFrameProps(applied_filters=range(len(exprs)))

        _RESOLVER = VortexScan
    return _RESOLVER


def _show(e: Any) -> str:
    """One line for explain(): pyarrow scalar reprs shortened, double quotes as single
    (Polars prints property values escaped)."""
    return re.sub(r"<pyarrow\.\w*Scalar: (.*?)>", r"\1", repr(e) if isinstance(e, Expr) else e
                  ).replace('"', "'")


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


def scan_vortex_ipc(source: Any, *, n_rows: int | None = None,
                    row_index_name: str | None = None, row_index_offset: int = 0,
                    batch_size: int | None = None, limits: vio.ReaderLimits | None = None,
                    on_scan: Callable[[vio.Scan], None] | None = None,
                    categorical: bool | str | Sequence[str] = False) -> pl.LazyFrame:
    """Lazily scan Vortex IPC streams into a ``polars.LazyFrame``.

    ``source``: a path, a glob, bytes, a binary file object (read whole on first use), or
    a list of those (concatenated in order; all must have the same schema). ``n_rows``:
    read at most this many rows. ``row_index_name``/``row_index_offset``: add a row index.
    ``batch_size``: split batches to at most this many rows. ``limits``: ``ReaderLimits``
    for untrusted input. ``on_scan``: called with each per-source ``vortex_io.Scan`` as it
    starts (its ``filter`` shows what was pushed down; its ``stats`` are complete once the
    query returns). ``categorical``: read string columns as ``pl.Categorical`` (True: every
    string column; a name or names: those columns, which must be strings), the natural
    Polars type for low-cardinality (dictionary-encoded) columns.

    Projection, filters and slices (``head``, ``slice``, ``tail``) are pushed down;
    ``explain()`` shows which filters run on the encoded data.
    """
    pl = _check_polars()
    if n_rows is not None and n_rows < 0:
        raise ValueError("n_rows must be >= 0")
    spec = _Spec(source, limits, on_scan, batch_size, categorical)
    lf = pl.LazyFrame.from_lazyframe_resolver(_resolver_class()(spec))
    if n_rows is not None:  # before the row index: Polars pushes no slice below one
        lf = lf.head(n_rows)
    if row_index_name is not None:
        lf = lf.with_row_index(row_index_name, offset=row_index_offset)
    return lf


def read_vortex_ipc(source: Any, *, columns: Sequence[str] | None = None,
                    n_rows: int | None = None, **kwargs: Any) -> pl.DataFrame:
    """Read Vortex IPC streams into a ``polars.DataFrame`` (``scan_vortex_ipc`` + collect).

    ``columns``: the columns to read (default: all). Other keywords as ``scan_vortex_ipc``.
    """
    lf = scan_vortex_ipc(source, n_rows=n_rows, **kwargs)
    if columns is not None:
        lf = lf.select(list(columns))
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
             chunk_rows: int = 65_536) -> int:
    """Stream a ``polars.LazyFrame`` into a Vortex IPC stream with bounded memory (the
    streaming engine produces batches of about ``chunk_rows`` rows; each becomes one or
    more messages as it arrives). Returns the bytes written."""
    import pyarrow as pa

    pl = _check_polars()
    schema = lf.collect_schema()
    arrow_schema = pl.DataFrame(schema=schema).to_arrow().schema

    def batches() -> Iterator[pa.RecordBatch]:
        for df in lf.collect_batches(chunk_size=chunk_rows, engine="streaming"):
            t = df.to_arrow()
            if t.schema != arrow_schema:
                t = t.cast(arrow_schema)
            yield from t.to_batches()

    reader = pa.RecordBatchReader.from_batches(arrow_schema, batches())
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

            def __init__(self, df: pl.DataFrame) -> None:
                self._df = df

            def write_ipc(self, sink: Any, *, metadata: Any = None, compress: bool = True,
                          chunk_rows: int = 65_536) -> int:
                return write_ipc(self._df, sink, metadata=metadata, compress=compress,
                                 chunk_rows=chunk_rows)

        @pl.api.register_lazyframe_namespace("vortex")
        class LazyFrameVortex:
            """``lf.vortex.sink_ipc(sink, *, metadata=None, compress=True)``."""

            def __init__(self, lf: pl.LazyFrame) -> None:
                self._lf = lf

            def sink_ipc(self, sink: Any, *, metadata: Any = None, compress: bool = True,
                         chunk_rows: int = 65_536) -> int:
                return sink_ipc(self._lf, sink, metadata=metadata, compress=compress,
                                chunk_rows=chunk_rows)

        pl.scan_vortex_ipc = scan_vortex_ipc
        pl.read_vortex_ipc = read_vortex_ipc
        _registered = True
