"""DuckDB integration: ``SELECT * FROM vortex_ipc('trades.vxipc') WHERE ...``.

Example::

    import duckdb, vortex_io
    con = duckdb.connect()
    vortex_io.register_duckdb(con)
    con.sql("SELECT symbol, avg(price) FROM vortex_ipc('data/*.vxipc') "
            "WHERE symbol IN ('AAPL', 'MSFT') GROUP BY symbol").fetchall()
    vortex_io.write_ipc("aapl.vxipc", con.sql("FROM vortex_ipc('trades.vxipc') WHERE symbol = 'AAPL'"))

``register(con)`` makes the table function ``vortex_ipc(source)`` available on ``con`` and on
every cursor of it (every connection of its database). ``source`` is a path, a glob
(``'dir/*.vxipc'``) or a list of paths, all of the same dtype.

How it works (DuckDB's Python package has no public table-function API; see
``shared/reference/adapters.md``): ``vortex_ipc`` is a table macro
``FROM query_table(__vortex_ipc_resolve(to_json(source)))``. The resolver is a Python scalar
function that DuckDB evaluates while it plans the query: it expands the source, reads the
first stream's DType message (the schema), puts a :class:`VortexSource` in the database's
source registry and returns its name. DuckDB's Arrow scan then talks to that source through
its (internal) source protocol:

- ``accepts(predicate)`` for each filter DuckDB would apply. A predicate is accepted only when
  :func:`translate` turns it into a ``vortex_io.expr`` expression that gives exactly DuckDB's
  answer on every row (SQL three-valued logic, NaN ordered above every number, literal types
  equal to the column's). DuckDB does not filter accepted predicates again; anything refused
  stays a DuckDB ``FILTER`` above the scan.
- ``stream(columns, filters)`` for each scan: a ``vortex_io.scan(paths, columns=...,
  filter=..., string_view=True)`` (projection and filter pushdown on the encoded data;
  chunks pruned by their statistics; strings as ``string_view``, which DuckDB reads
  natively, and the string columns the first message dictionary-encodes as Arrow
  dictionaries, ``read_dictionary=``: their codes and distinct values cross undecoded and
  DuckDB groups, compares and LIKEs its dictionary vectors once per distinct value)
  exported as an Arrow C stream. The files are read afresh by every query: a file
  rewritten between two queries is seen as it is now.

``EXPLAIN`` shows what was pushed under ``Filters:`` and ``Projections:`` of the
``PYTHON_ARROW_SCAN`` operator. Pass ``on_scan=`` to observe each ``vortex_io.Scan`` (and its
``ScanStats``).

Writing: this route offers no ``COPY ... (FORMAT vortex_ipc)``. A query result exports the
Arrow C stream interface, so ``vortex_io.write_ipc('out.vxipc', con.sql('SELECT ...'))``
writes it (streaming, batch by batch).

The route relies on internal APIs of DuckDB's 2.0.x Python package (the source registry,
``duckdb._sources``): :data:`SUPPORTED_DUCKDB` is checked by :func:`register`.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

try:
    import duckdb
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "vortex_io.integrations.duckdb_ext needs DuckDB: pip install 'vortex-io[duckdb]'") from _e

import pyarrow as pa
import pyarrow.dataset as pads

from .. import dtype as dt
from ..arrow import string_view_output, to_arrow_schema
from ..compute.expr import Column, Compare, Expr, IsIn, IsNull, Literal, Not, Or
from ..errors import VortexIPCError
from ..ipc import StreamReader
from ..scan import Scan, expand_sources, scan

__all__ = [
    "FUNCTION_NAME",
    "SUPPORTED_DUCKDB",
    "VortexSource",
    "check_duckdb_version",
    "register",
    "translate",
]

#: the DuckDB versions this module was written and tested against: [min, max)
SUPPORTED_DUCKDB = ((2, 0, 1), (2, 1, 0))
#: the table function (a table macro) ``register`` creates
FUNCTION_NAME = "vortex_ipc"
_RESOLVER = "__vortex_ipc_resolve"


def _version_tuple(v: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", v)
    if m is None:
        raise ValueError(f"cannot parse the DuckDB version {v!r}")
    return tuple(int(x or 0) for x in m.groups())


def check_duckdb_version(version: str | None = None) -> tuple[int, ...]:
    """Raise ``ImportError`` unless DuckDB ``version`` (default: the installed one) is in
    :data:`SUPPORTED_DUCKDB`; returns the parsed version."""
    v = _version_tuple(duckdb.__version__ if version is None else version)
    lo, hi = SUPPORTED_DUCKDB
    if not (lo <= v < hi):
        raise ImportError(
            f"vortex_ipc for DuckDB relies on internals of duckdb "
            f">={'.'.join(map(str, lo))},<{'.'.join(map(str, hi[:2]))}; "
            f"duckdb {duckdb.__version__ if version is None else version} is installed")
    return v


try:
    check_duckdb_version()
    from duckdb._sources import ArrowScanSource
    from duckdb._sources.nodes import Binary, Col, In, Lit, Node, Postfix, Unary
except ImportError:
    raise
except Exception as _e:  # pragma: no cover - only on an unsupported DuckDB
    raise ImportError(f"this DuckDB ({duckdb.__version__}) lacks the internals vortex_ipc uses: "
                      f"{_e}") from _e


# -- translating DuckDB's pushed predicates --------------------------------------------------------


class Untranslatable(ValueError):
    """A predicate ``translate`` cannot express exactly; DuckDB keeps it."""


_INT_ENGINE = {
    "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
    "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT",
}
_NAIVE_TS_ENGINE = {"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "us": "TIMESTAMP"}
_US_PER = {"s": 1_000_000, "ms": 1_000, "us": 1}
_EPOCH = datetime.datetime(1970, 1, 1)
_CMP = {"=": "eq", "!=": "neq", "<": "lt", "<=": "lte", ">": "gt", ">=": "gte"}


def _engine_type(t: pa.DataType) -> str | None:
    """The name DuckDB gives a literal compared with a column of Arrow type ``t``, for the
    types ``translate`` handles (None: never translated)."""
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_integer(t):
        return _INT_ENGINE[str(t)]
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_string(t):
        return "VARCHAR"
    if pa.types.is_binary(t):
        return "BLOB"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_time(t) and t.unit in _US_PER:
        return "TIME"
    if pa.types.is_timestamp(t) and t.unit in _US_PER:
        return _NAIVE_TS_ENGINE[t.unit] if t.tz is None else "TIMESTAMP WITH TIME ZONE"
    if pa.types.is_decimal128(t):
        return f"DECIMAL({t.precision},{t.scale})"
    return None


def _to_unit(us: int, unit: str) -> int:
    """A count of microseconds in ``unit``; refused when it falls between two points."""
    q, r = divmod(us, _US_PER[unit])
    if r:
        raise Untranslatable(f"{us} us is not a whole number of {unit}")
    return q


def _literal(lit: Any, t: pa.DataType) -> Any:
    """The literal's value in the storage domain ``vortex_io`` compares a column of Arrow type
    ``t`` in (what ``coerce_literal`` accepts), or ``Untranslatable``."""
    if not isinstance(lit, Lit):
        raise Untranslatable(f"not a constant: {lit!r}")
    engine = _engine_type(t)
    v = lit.value
    if engine is None or lit.type != engine or v is None:
        raise Untranslatable(f"constant {lit!r} against a column of type {t}")
    if engine == "BOOLEAN":
        if isinstance(v, bool):
            return v
    elif pa.types.is_integer(t):
        if isinstance(v, int) and not isinstance(v, bool):
            bits, signed = t.bit_width, pa.types.is_signed_integer(t)
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            if lo <= v <= hi:
                return v
    elif engine in ("FLOAT", "DOUBLE"):
        # NaN and infinities are left to DuckDB (it orders NaN above every number)
        if isinstance(v, float) and math.isfinite(v):
            return v
    elif engine == "VARCHAR":
        if isinstance(v, str):
            return v
    elif engine == "BLOB":
        if isinstance(v, bytes):
            return v
    elif engine == "DATE":
        if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
            return (v - _EPOCH.date()).days
    elif engine == "TIME":
        if isinstance(v, datetime.time) and v.tzinfo is None:
            us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
            return _to_unit(us, t.unit)
    elif engine == "TIMESTAMP WITH TIME ZONE":
        if isinstance(v, int) and not isinstance(v, bool):
            return _to_unit(v, t.unit)  # an instant: microseconds since the epoch (UTC)
    elif engine.startswith("TIMESTAMP"):
        if isinstance(v, datetime.datetime) and v.tzinfo is None:
            d = v - _EPOCH
            us = (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds
            return _to_unit(us, t.unit)
    elif engine.startswith("DECIMAL"):
        if isinstance(v, decimal.Decimal) and v.is_finite():
            q = v.scaleb(t.scale)
            if q == q.to_integral_value() and abs(q) < 10 ** t.precision:
                return v
    raise Untranslatable(f"constant {lit!r} against a column of type {t}")


def _column(node: Any, schema: pa.Schema) -> tuple[Column, pa.DataType]:
    if not isinstance(node, Col) or len(node.parts) != 1:
        raise Untranslatable(f"not a top-level column: {node!r}")
    name = node.parts[0]
    i = schema.get_field_index(name)  # -1 when missing or repeated
    if i < 0:
        raise Untranslatable(f"no single column {name!r}")
    return Column(name), schema.field(i).type


def _comparison(op: str, c: Column, t: pa.DataType, v: Any) -> Expr:
    if pa.types.is_floating(t) and op in ("gt", "gte"):
        # DuckDB orders NaN above every number: NaN > 1 is true there and false in IEEE
        # arithmetic. NOT (x <= v) is DuckDB's x > v on every row (a null stays null).
        return Not(Compare("lte" if op == "gt" else "lt", c, Literal(v)))
    return Compare(op, c, Literal(v))


def translate(node: Node, schema: pa.Schema) -> Expr:
    """A ``vortex_io.expr`` expression that keeps exactly the rows DuckDB's predicate ``node``
    keeps over a source of Arrow ``schema``; raises ``Untranslatable`` otherwise.

    Handled: ``AND``, ``OR``, ``NOT``, ``IS [NOT] NULL`` of a top-level column, and ``=``,
    ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``IN`` of a top-level column with constants of the
    column's own type (booleans, integers, finite floats, strings, blobs, dates, times,
    timestamps in s/ms/us with or without a zone, decimals). BETWEEN arrives as AND.
    """
    if isinstance(node, Binary):
        if node.op == "AND":
            return translate(node.left, schema) & translate(node.right, schema)
        if node.op == "OR":
            return Or(translate(node.left, schema), translate(node.right, schema))
        if node.op in _CMP:
            c, t = _column(node.left, schema)
            return _comparison(_CMP[node.op], c, t, _literal(node.right, t))
    elif isinstance(node, Unary) and node.op == "NOT":
        return Not(translate(node.operand, schema))
    elif isinstance(node, Postfix) and node.op in ("IS NULL", "IS NOT NULL"):
        c, _ = _column(node.operand, schema)
        return IsNull(c, node.op == "IS NOT NULL")
    elif isinstance(node, In):
        c, t = _column(node.operand, schema)
        if not node.values:
            raise Untranslatable("IN of no constants")
        vals = [_literal(x, t) for x in node.values]
        if pa.types.is_floating(t):
            # equality, not bit identity: -0.0 IN (0.0) is true in DuckDB
            out: Expr = Compare("eq", c, Literal(vals[0]))
            for v in vals[1:]:
                out = Or(out, Compare("eq", c, Literal(v)))
            return out
        return IsIn(c, tuple(vals))
    raise Untranslatable(f"predicate {node!r}")


def _translatable(node: Node, schema: pa.Schema) -> bool:
    try:
        translate(node, schema)
    except (Untranslatable, RecursionError):
        return False
    return True


# -- the source ---------------------------------------------------------------------------------------


def _describe(paths: Sequence[str]) -> str:
    return repr(paths[0]) if len(paths) == 1 else f"{len(paths)} files ({paths[0]!r}, ...)"


class VortexSource(pads.Dataset, ArrowScanSource):
    """Vortex IPC files as a source of DuckDB's Arrow scan (one per ``vortex_ipc(...)`` call).

    It subclasses ``pyarrow.dataset.Dataset`` only because DuckDB's source registry admits
    pyarrow objects alone; DuckDB then talks to it through its source protocol
    (``accepts``/``stream``). ``scanner(columns=, filter=)`` with a pyarrow expression is not
    offered: use ``vortex_io.scan``.
    """

    schema_is_stable = True

    def __init__(self, paths: Sequence[str], on_scan: Callable[[Scan], None] | None = None
                 ) -> None:
        self.obj = self
        self.paths = list(paths)
        self.on_scan = on_scan
        self.registered_name: str | None = None
        try:
            first = scan(self.paths)
            self._schema = first.schema
            # what DuckDB binds and reads: strings as string_view (DuckDB 2.0 reads views
            # natively, and dictionary strings then decode without copying their bytes)
            with string_view_output(True):
                stream_schema = to_arrow_schema(first.dtype)
            # dictionary-encoded string columns cross as Arrow dictionaries: DuckDB groups,
            # compares and LIKEs a dictionary vector once per distinct value
            self._dictionary = _dictionary_columns(self.paths[0], first.dtype)
            self._stream_schema = pa.schema(
                [f.with_type(pa.dictionary(pa.int32(), pa.string() if pa.types.is_string_view(f.type)
                                           else pa.binary()))
                 if f.name in self._dictionary else f for f in stream_schema],
                metadata=stream_schema.metadata)
        except VortexIPCError as e:
            raise _located(e, self.paths[0]) from None
        if len(set(self._schema.names)) != len(self._schema.names):
            raise VortexIPCError(f"vortex_ipc: {_describe(self.paths)} has repeated column names "
                                 f"{self._schema.names}")

    # pyarrow.dataset.Dataset's own methods would touch an empty C++ object: replace the ones
    # a caller may reach
    @property
    def schema(self) -> pa.Schema:  # type: ignore[override]
        """The Arrow schema (of the first file), read when the query was planned."""
        return self._schema

    def scanner(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise NotImplementedError("VortexSource is scanned by DuckDB; use vortex_io.scan()")

    def to_table(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise NotImplementedError("VortexSource is scanned by DuckDB; use vortex_io.scan()")

    def count_rows(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise NotImplementedError("VortexSource is scanned by DuckDB; use vortex_io.scan()")

    def __repr__(self) -> str:
        return f"VortexSource({_describe(self.paths)})"

    # -- DuckDB's source protocol --

    def __arrow_c_schema__(self) -> Any:
        # DuckDB reads the schema once it has bound the registered name: from here on the
        # plan holds this object and the registry entry is no longer needed
        _release(self.registered_name)
        return self._stream_schema.__arrow_c_schema__()

    def rows(self) -> int | None:
        return None  # unknown without reading every message header

    def accepts(self, predicate: Node) -> bool:
        """Whether ``predicate`` translates exactly (then the scan applies it)."""
        return _translatable(predicate, self._schema)

    def stream(self, columns: Sequence[int] | None, filters: Sequence[Node]) -> tuple[Any, bool]:
        """An Arrow C stream of the projected columns of the rows that pass ``filters``."""
        names = None if columns is None else [self._schema.names[i] for i in columns]
        expr: Expr | None = None
        for f in filters:
            e = translate(f, self._schema)
            expr = e if expr is None else expr & e
        try:
            s = scan(self.paths, columns=names, filter=expr, string_view=True,
                     read_dictionary=[n for n in self._dictionary if names is None or n in names])
            got = s.schema
        except VortexIPCError as e:
            raise _located(e, self.paths[0]) from None
        full = self._stream_schema
        want = full if names is None else pa.schema([full.field(n) for n in names])
        if got.types != want.types or got.names != want.names:
            raise VortexIPCError(f"vortex_ipc: {self.paths[0]!r} changed while the query was "
                                 f"planned: schema {want} is now {got}")
        if self.on_scan is not None:
            self.on_scan(s)
        reader = pa.RecordBatchReader.from_batches(want, _batches(s, self.paths))
        return reader.__arrow_c_stream__(), names is not None


#: (path, inode, size, mtime) -> the dictionary-encoded columns of its first message
_DICT_COLUMNS: OrderedDict[tuple[Any, ...], list[str]] = OrderedDict()
_DICT_COLUMNS_MAX = 256
_DICT_LOCK = threading.Lock()


def _dictionary_columns(path: str, d: dt.DType) -> list[str]:
    """The string and binary columns that the first message of ``path`` dictionary-encodes
    (its header only: nothing is decoded; remembered per file version, since the resolver
    runs at every query)."""
    if not isinstance(d, dt.Struct):
        return []
    names = [n for n in d.names if isinstance(d.field(n), (dt.Utf8, dt.Binary))]
    if not names:
        return []
    try:
        st = os.stat(path)
        key: tuple[Any, ...] | None = (path, st.st_ino, st.st_size, st.st_mtime_ns, d)
    except OSError:
        key = None
    with _DICT_LOCK:
        hit = _DICT_COLUMNS.get(key) if key is not None else None
    if hit is not None:
        return hit
    with StreamReader(path) as r:
        first = next(iter(r), None)
        arr = None if first is None else first.array
        found = [] if arr is None else [n for n in names if arr.field(n).encoding == "vortex.dict"]
    if key is not None:
        with _DICT_LOCK:
            _DICT_COLUMNS[key] = found
            while len(_DICT_COLUMNS) > _DICT_COLUMNS_MAX:
                _DICT_COLUMNS.popitem(last=False)
    return found


def _located(e: VortexIPCError, path: str) -> VortexIPCError:
    return e.locate(source=path)


def _batches(s: Scan, paths: Sequence[str]) -> Any:
    try:
        yield from s
    except VortexIPCError as e:
        raise e.locate(source=paths[0] if len(paths) == 1 else None) from None


# -- the registry of planned sources -----------------------------------------------------------------

#: handles of registered sources whose schema DuckDB has not read yet (name -> handle). A handle
#: keeps its registry entry alive; DuckDB binds the name right after the resolver returns it.
_PENDING: OrderedDict[str, Any] = OrderedDict()
_PENDING_LOCK = threading.Lock()
_MAX_PENDING = 256


def _release(name: str | None) -> None:
    if name is None:
        return
    with _PENDING_LOCK:
        _PENDING.pop(name, None)


def _hold(name: str, handle: Any) -> None:
    with _PENDING_LOCK:
        _PENDING[name] = handle
        while len(_PENDING) > _MAX_PENDING:  # planned but never bound (a failed query)
            _PENDING.popitem(last=False)


def _paths(source: Any) -> list[str]:
    """The files of a ``vortex_ipc`` source (a path, a glob or a list of them)."""
    items = source if isinstance(source, list) else [source]
    if not items:
        raise ValueError("vortex_ipc: the list of files is empty")
    out: list[str] = []
    for it in items:
        if not isinstance(it, str):
            raise TypeError(f"vortex_ipc: a source is a path, a glob or a list of paths, "
                            f"not {it!r}")
        for p in expand_sources(it):  # a glob matching nothing raises FileNotFoundError
            if not os.path.isfile(p):
                raise FileNotFoundError(f"vortex_ipc: no such file: {p!r}")
            out.append(p)
    return out


def _make_resolver(con: Any, on_scan: Callable[[Scan], None] | None) -> Callable[[str], str]:
    con_ref = weakref.ref(con)

    def resolve(source_json: str) -> str:
        owner = con_ref()
        if owner is None:
            raise RuntimeError("vortex_ipc: the connection it was registered on is gone")
        src = VortexSource(_paths(json.loads(source_json)), on_scan)
        handle = owner.cursor()._register_source(src, None)
        src.registered_name = handle.name
        _hold(handle.name, handle)
        return handle.name

    return resolve


def register(con: Any, *, on_scan: Callable[[Scan], None] | None = None) -> Any:
    """Make ``vortex_ipc(source)`` available on ``con`` and every cursor of it; returns ``con``.

    ``source``: a path, a glob or a list of paths (``vortex_ipc(['a.vxipc', 'b.vxipc'])``).
    Filters (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``BETWEEN``, ``IS [NOT]
    NULL``, ``AND``, ``OR``, ``NOT``) and the column projection are pushed into
    ``vortex_io.scan``. ``on_scan`` is called with every ``Scan`` a query starts (its
    ``stats`` fill in as DuckDB reads it). Calling ``register`` again replaces the function.

    ``vortex_ipc`` is a table macro in the connection's default schema: with a database file
    it is stored there and needs ``register`` again in the next session. Query results go to
    Vortex IPC with ``vortex_io.write_ipc(path, con.sql(...))`` (Arrow stream interface).
    """
    check_duckdb_version()
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise TypeError(f"register() needs a duckdb connection, not {type(con).__name__}")
    try:
        con.remove_function(_RESOLVER)
    except duckdb.Error:  # not registered yet
        pass
    con.create_function(_RESOLVER, _make_resolver(con, on_scan), ["VARCHAR"], "VARCHAR")
    con.execute(f"CREATE OR REPLACE MACRO {FUNCTION_NAME}(source) AS TABLE "
                f"FROM query_table({_RESOLVER}(to_json(source)::VARCHAR))")
    return con
