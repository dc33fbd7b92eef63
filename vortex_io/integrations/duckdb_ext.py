"""DuckDB integration: ``SELECT * FROM vortex_ipc('trades.vxipc') WHERE ...``.

Example::

    import duckdb, vortex_io
    con = duckdb.connect()
    vortex_io.register_duckdb(con)
    con.sql("SELECT symbol, avg(price) FROM vortex_ipc('data/*.vxipc') "
            "WHERE symbol IN ('AAPL', 'MSFT') GROUP BY symbol").fetchall()
    vortex_io.write_ipc("aapl.vxipc", con.sql("FROM vortex_ipc('trades.vxipc') WHERE symbol = 'AAPL'"))

``register(con)`` makes the table function ``vortex_ipc(source, filename := false,
union_by_name := false, hive_partitioning := NULL, hive_types := NULL)`` available on ``con``
and on every cursor of it. ``source`` is a path, a glob (``'dir/**/*.vxipc'``), a directory
(its ``**/*.vxipc``) or a list of those; the options mean what they mean to ``read_parquet``.

How it works (DuckDB's Python package has no public table-function API):
``vortex_ipc`` is a table macro
``FROM query(vortex_ipc_needs_vortex_io_register_duckdb(to_json({'source': source, ...})))``.
The resolver is a Python scalar function that DuckDB evaluates while it plans the query (a
database file reopened without ``register`` fails naming it: the name says what to do); it
expands the source,
reads each file's headers (its DType message and, header by header, the row count of its
messages: remembered per file version), works out the file-name and hive-partition columns,
puts a :class:`VortexSource` per dtype among the files in the database's source registry and
returns the SQL that reads them (``FROM <name>``; with several dtypes, a ``UNION ALL [BY
NAME]`` of them, which is how ``union_by_name`` widens types and fills missing columns as
read_parquet does). DuckDB's Arrow scan then talks to each source through its (internal)
source protocol:

- ``rows()``: the row count from the headers, the planner's cardinality (``EXPLAIN`` shows
  ``~N rows``; a join builds its hash table on the smaller side).
- ``accepts(predicate)`` for each filter DuckDB would apply. A predicate is accepted only when
  :func:`translate` turns it into a ``vortex_io.expr`` expression that gives exactly DuckDB's
  answer on every row (SQL three-valued logic, NaN ordered above every number, literal types
  equal to the column's), or when it reads only the file-name and partition columns: then it
  is evaluated per file and the files it rules out are never opened. DuckDB does not filter
  accepted predicates again; anything refused stays a DuckDB ``FILTER`` above the scan.
- ``stream(columns, filters)`` for each scan: a ``vortex_io.scan(paths, columns=...,
  filter=..., string_view=True)`` (projection and filter pushdown on the encoded data;
  chunks pruned by their statistics; strings as ``string_view``, which DuckDB reads
  natively, and the string columns the first message dictionary-encodes as Arrow
  dictionaries, ``read_dictionary=``: their codes and distinct values cross undecoded and
  DuckDB groups, compares and LIKEs its dictionary vectors once per distinct value)
  exported as an Arrow C stream whose errors are one line (no Python traceback). The files
  are read afresh by every query: a file rewritten between two queries is seen as it is now.
  DuckDB stops pulling under ``LIMIT``, and the scan stops reading there.

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

import ctypes
import datetime
import decimal
import glob as _globmod
import io
import itertools
import json
import math
import os
import re
import threading
import urllib.parse
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

try:
    import duckdb
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "vortex_io.integrations.duckdb_ext needs DuckDB: pip install 'vortex-io[duckdb]'") from _e

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from .. import _fs
from .. import dtype as dt
from .._arrow_schema import engine_schema
from .._errors import VortexIPCError
from .._ipc import StreamReader
from .._scan import Scan, expand_sources, message_spans, scan
from ..compute._expr import Column, Compare, Expr, IsIn, IsNull, Literal, Not, Or
from ._versions import FileVersions

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
#: the resolver's name is what DuckDB shows when a database file that stores the macro is
#: reopened and vortex_ipc is called before register(): "Scalar Function with name
#: vortex_ipc_needs_vortex_io_register_duckdb does not exist!"
_RESOLVER = "vortex_ipc_needs_vortex_io_register_duckdb"


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
    from duckdb._sources.nodes import Binary, Col, In, Lit, Node, Postfix, Unary, exact_value
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


# -- an Arrow C stream whose errors are one line -----------------------------------------------------
#
# pyarrow's RecordBatchReader.from_batches appends the Python traceback of an exception raised
# by the batches to the stream's error text, and DuckDB shows that text in its error. This
# exporter implements the C stream interface itself (ctypes callbacks, which take the GIL
# whatever thread DuckDB pulls on), and its error text is ``Type: message``, one line.


class _CStream(ctypes.Structure):
    """``struct ArrowArrayStream`` of the Arrow C stream interface."""


_CStreamP = ctypes.POINTER(_CStream)
_GetSchema = ctypes.CFUNCTYPE(ctypes.c_int, _CStreamP, ctypes.c_void_p)
_GetNext = ctypes.CFUNCTYPE(ctypes.c_int, _CStreamP, ctypes.c_void_p)
_GetLastError = ctypes.CFUNCTYPE(ctypes.c_void_p, _CStreamP)
_Release = ctypes.CFUNCTYPE(None, _CStreamP)
_CStream._fields_ = [
    ("get_schema", _GetSchema),
    ("get_next", _GetNext),
    ("get_last_error", _GetLastError),
    ("release", _Release),
    ("private_data", ctypes.c_void_p),
]
#: sizeof(struct ArrowArray): five int64 and five pointers
_ARROW_ARRAY_SIZE = 5 * ctypes.sizeof(ctypes.c_int64) + 5 * ctypes.sizeof(ctypes.c_void_p)
_EIO, _EINVAL = 5, 22


class _StreamState:
    """The Python side of one exported stream."""

    __slots__ = ("schema", "batches", "error")

    def __init__(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
        self.schema = schema
        self.batches = batches
        self.error: Any = None  # a ctypes string buffer, alive until the next error or release

    def fail(self, e: BaseException) -> int:
        text = " ".join(f"{type(e).__name__}: {e}".split())
        self.error = ctypes.create_string_buffer(text.encode("utf-8", "replace"))
        return _EIO


#: private_data -> state, for every stream not yet released
_STREAMS: dict[int, _StreamState] = {}
_STREAM_IDS = itertools.count(1)
#: id(capsule) -> the struct it points to, until the capsule is destroyed
_OWNED: dict[int, _CStream] = {}


def _stream_call(stream: Any, fill: Callable[[_StreamState], None]) -> int:
    """A C stream callback's result: 0 once ``fill`` has run on the stream's state, else
    the errno (an exception's text is kept for get_last_error)."""
    state = _STREAMS.get(stream.contents.private_data)
    if state is None:
        return _EINVAL
    try:
        fill(state)
    except BaseException as e:  # reported through get_last_error
        return state.fail(e)
    return 0


@_GetSchema
def _stream_get_schema(stream: Any, out: int) -> int:
    return _stream_call(stream, lambda state: state.schema._export_to_c(out))


def _next_into(state: _StreamState, out: int) -> None:
    batch = next(state.batches, None)
    if batch is None:
        ctypes.memset(out, 0, _ARROW_ARRAY_SIZE)  # release == NULL: the end of the stream
    else:
        batch._export_to_c(out)


@_GetNext
def _stream_get_next(stream: Any, out: int) -> int:
    return _stream_call(stream, lambda state: _next_into(state, out))


@_GetLastError
def _stream_get_last_error(stream: Any) -> int | None:
    state = _STREAMS.get(stream.contents.private_data)
    if state is None or state.error is None:
        return None
    return ctypes.addressof(state.error)


@_Release
def _stream_release(stream: Any) -> None:
    s = stream.contents
    _STREAMS.pop(s.private_data, None)  # drops the batches: a scan stops reading here
    s.release = _Release()


_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_Destructor
def _capsule_destructor(capsule: int) -> None:
    try:
        s = _OWNED.pop(capsule, None)
        if s is not None and s.release:  # never moved out by a consumer
            _STREAMS.pop(s.private_data, None)
            s.release = _Release()
    except Exception:  # at interpreter exit the module may be gone
        pass


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_CAPSULE_NAME = ctypes.create_string_buffer(b"arrow_array_stream")
_DESTRUCTOR = ctypes.cast(_capsule_destructor, ctypes.c_void_p)


def _export_stream(schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> Any:
    """An ``arrow_array_stream`` PyCapsule of ``batches`` (each of ``schema``). An exception
    raised while reading becomes the stream's error, ``Type: message`` on one line; releasing
    the stream (a consumer that stops early, as DuckDB under ``LIMIT``) drops ``batches``."""
    sid = next(_STREAM_IDS)
    _STREAMS[sid] = _StreamState(schema, iter(batches))
    s = _CStream(_stream_get_schema, _stream_get_next, _stream_get_last_error, _stream_release,
                 sid)
    cap = _capsule_new(ctypes.addressof(s), ctypes.addressof(_CAPSULE_NAME), _DESTRUCTOR)
    _OWNED[id(cap)] = s
    return cap


# -- files: expanding sources, and what the headers of each file version say -------------------------

#: the files a directory source stands for: ``dir/**/*.vxipc`` (read_parquet reads a directory
#: as ``dir/**/*.parquet``)
DIRECTORY_GLOB = "**/*.vxipc"


def _glob(pattern: str) -> list[str]:
    """The files (not directories) a glob matches, sorted; ``**`` spans directories and
    hidden files match, as in DuckDB's globs."""
    return sorted(p for p in _globmod.glob(pattern, recursive=True, include_hidden=True)
                  if os.path.isfile(p))


def _expand(source: Any) -> list[str]:
    """The files of a ``vortex_ipc`` source, in order: a path, a glob, a directory (its
    ``**/*.vxipc``) or a list of those. A path naming a file is that file even if it holds
    glob characters (``br[1].vxipc``)."""
    if source is None:
        raise ValueError("vortex_ipc: the source is NULL")
    items = source if isinstance(source, list) else [source]
    if not items:
        raise ValueError("vortex_ipc needs at least one file to read: the list of files is empty")
    out: list[str] = []
    for it in items:
        if not isinstance(it, str):
            raise TypeError(f"vortex_ipc: a source is a path, a glob or a list of paths, "
                            f"not {it!r}")
        if _fs.is_remote(it):
            # a URL (any fsspec protocol): its globs expanded by its file system
            found = expand_sources(it) if _fs.has_glob(it) else [it]
            out.extend(found)
            continue
        it = os.path.expanduser(it)  # "~" is the home directory, as read_parquet has it
        if os.path.isfile(it):
            out.append(it)
            continue
        if os.path.isdir(it):
            found = _glob(os.path.join(_globmod.escape(it), DIRECTORY_GLOB))
        elif _globmod.has_magic(it):
            found = _glob(it)
        else:
            found = []
        if not found:
            raise FileNotFoundError(f'vortex_ipc: no files found that match the pattern "{it}"')
        out.extend(found)
    return out


@dataclass(frozen=True)
class _Facts:
    """What planning needs of one version of a file; from its message headers alone."""

    dtype: dt.DType
    schema: pa.Schema  # the Arrow schema translate() reads (strings as string)
    stream_schema: pa.Schema  # what DuckDB binds: string_view, and dictionaries as below
    dictionary: tuple[str, ...]  # the string/binary columns its first message dictionary-encodes
    rows: int  # the rows of all its messages
    messages: int  # how many Array messages it has
    size: int  # its bytes


#: the _Facts of each local file version; the resolver runs at every planning
_FACTS = FileVersions(maxsize=4096)


def _facts(path: str) -> _Facts:
    """The header facts of ``path`` as it is now (remembered per file version; a URL's are
    read afresh at every planning)."""
    key: tuple[Any, ...] | None = None
    if not _fs.is_url(path):
        key = _FACTS.key(path)
        if key is None:
            raise FileNotFoundError(f"vortex_ipc: no such file: {path!r}")
        hit = _FACTS.get(key)
        if hit is not None:
            return hit
    try:
        with StreamReader(path) as r:  # first: it tells a stream of another format apart
            d = r.dtype
            exact = r.schema.remove_metadata()  # the stream's exact Arrow types
            first = next(iter(r), None)
            arr = None if first is None else first.array
            dictionary: tuple[str, ...] = ()
            if arr is not None and isinstance(d, dt.Struct):
                dictionary = tuple(n for n in d.names
                                   if isinstance(d.field(n), (dt.Utf8, dt.Binary))
                                   and arr.field(n).encoding == "vortex.dict")
        spans = message_spans(path)
        rows = sum(s.rows for s in spans)
    except VortexIPCError as e:
        raise e.locate(source=path) from None
    schema = exact
    if len(set(schema.names)) != len(schema.names):
        raise VortexIPCError(f"vortex_ipc: {path!r} has repeated column names {schema.names}")
    sv = engine_schema(exact)
    # dictionary-encoded string columns cross as Arrow dictionaries: DuckDB groups, compares
    # and LIKEs them once per distinct value
    stream_schema = pa.schema(
        [f.with_type(pa.dictionary(pa.int32(), pa.string() if pa.types.is_string_view(f.type)
                                   else pa.binary()))
         if f.name in dictionary and (pa.types.is_string_view(f.type)
                                      or pa.types.is_binary_view(f.type)) else f for f in sv])
    if key is None:  # a URL: its stream's end
        size = spans[-1].offset + spans[-1].size if spans else 0
    else:
        size = FileVersions.size(key)
    out = _Facts(d, schema, stream_schema, dictionary, rows, len(spans), size)
    if key is not None:
        out = _FACTS.put(key, out)
    return out


# -- a private DuckDB for what only DuckDB knows: hive type inference, casts, type names -----------

_HELPER: Any = None
_HELPER_LOCK = threading.Lock()
_T = TypeVar("_T")


def _with_helper(fn: Callable[[Any], _T]) -> _T:
    """``fn(con)`` on a private in-memory DuckDB (never the user's database, which is planning
    the query that called us), one call at a time; a DuckDB error as one line."""
    global _HELPER
    with _HELPER_LOCK:
        if _HELPER is None:
            _HELPER = duckdb.connect(config={"threads": 1})
        try:
            return fn(_HELPER)
        except duckdb.Error as e:
            raise ValueError(f"vortex_ipc: {_first_line(e)}") from None


def _first_line(e: BaseException) -> str:
    """A DuckDB error's message without its ``Kind Error: `` prefix, first line only."""
    text = str(e).strip().split("\n", 1)[0]
    return re.sub(r"^[A-Za-z ]*Error: ", "", text)


def _helper_query(sql: str, params: Sequence[Any] = ()) -> pa.Table:
    """The result of ``sql`` on the private DuckDB, as an Arrow table."""
    return _with_helper(lambda h: h.sql(sql, params=list(params)).to_arrow_table())


def _sql_type(text: str) -> str:
    """DuckDB's name of the type ``text`` (``'INT'`` -> ``'INTEGER'``)."""
    return _with_helper(lambda h: str(h.sqltype(text)))


_ENGINE_TYPES: dict[str, list[str]] = {}


def _engine_types(schema: pa.Schema) -> list[str]:
    """DuckDB's type of each column of an Arrow schema, as it binds them."""
    key = str(schema)
    hit = _ENGINE_TYPES.get(key)
    if hit is None:
        hit = _with_helper(lambda h: [str(t) for t in h.from_arrow(schema.empty_table()).types])
        if len(_ENGINE_TYPES) < 1024:
            _ENGINE_TYPES[key] = hit
    return hit


# -- the options of vortex_ipc(...) ------------------------------------------------------------------


@dataclass(frozen=True)
class _Options:
    """The named arguments of ``vortex_ipc``, with read_parquet's meanings."""

    filename: str | None = None  # the name of the column of file names, None: no such column
    union_by_name: bool = False
    hive_partitioning: bool | None = None  # None: when the paths look hive-partitioned
    hive_types: dict[str, str] | None = None


_JSON_SQL_TYPE = {str: "VARCHAR", int: "INTEGER", float: "DOUBLE", bool: "BOOLEAN",
                  list: "LIST", dict: "STRUCT"}
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def _bool_option(name: str, v: Any) -> bool:
    """A BOOLEAN named argument, cast as DuckDB casts one (``'yes'``, ``1`` and ``0.5`` are
    true)."""
    if v is None:
        raise ValueError(f'vortex_ipc: cannot use NULL as argument for "{name}"')
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, str) and v.lower() in _TRUE | _FALSE:
        return v.lower() in _TRUE
    raise ValueError(f'vortex_ipc: could not cast value {json.dumps(v)} to named parameter '
                     f'"{name}" of type BOOLEAN')


def _options(req: dict[str, Any]) -> _Options:
    fn = req.get("filename")
    if fn is None:
        raise ValueError('vortex_ipc: cannot use NULL as argument for "filename"')
    if isinstance(fn, str):  # a string is the column's name, even 'true' (as read_parquet)
        if not fn:
            raise ValueError("vortex_ipc: filename := '' names no column")
        filename: str | None = fn
    else:
        filename = "filename" if _bool_option("filename", fn) else None
    hp = req.get("hive_partitioning")
    types = req.get("hive_types")
    if types is not None:
        if not isinstance(types, dict):
            raise ValueError(f"vortex_ipc: 'hive_types' only accepts a STRUCT('name':VARCHAR, "
                             f"...), but '{_JSON_SQL_TYPE.get(type(types), 'VARCHAR')}' was "
                             "provided")
        if not types:
            raise ValueError("vortex_ipc: 'hive_types' must specify the type of at least one "
                             "column")
        for k, v in types.items():
            if not isinstance(v, str):
                kind = "NULL" if v is None else _JSON_SQL_TYPE.get(type(v), "VARCHAR")
                raise ValueError(f'vortex_ipc: hive_types: "{k}" must be a VARCHAR, instead: '
                                 f"'{kind}' was provided")
    return _Options(
        filename=filename,
        union_by_name=_bool_option("union_by_name", req.get("union_by_name")),
        hive_partitioning=None if hp is None else _bool_option("hive_partitioning", hp),
        hive_types=types,
    )


# -- columns of per-file constants: the file name, hive partitions -----------------------------------

_STRING_DICT = pa.dictionary(pa.int32(), pa.string())
_HIVE_DEFAULT = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class _Virtual:
    """A column holding one value per file: the file name or a hive partition key."""

    name: str
    type: pa.DataType  # its Arrow type (strings: dictionary<int32, string>)
    engine: str  # its DuckDB type
    values: tuple[Any, ...]  # per planned file, Python values (None: NULL)

    def subset(self, idx: Sequence[int]) -> _Virtual:
        return _Virtual(self.name, self.type, self.engine, tuple(self.values[i] for i in idx))

    def array(self, i: int, n: int) -> pa.Array:
        """Its column for ``n`` rows of file ``i``."""
        v = self.values[i]
        if v is None:
            return pa.nulls(n, self.type)
        if self.type == _STRING_DICT:
            return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                                  pa.array([v], pa.string()))
        return pa.repeat(pa.scalar(v, self.type), n)


def _raw_partitions(path: str) -> dict[str, str]:
    """The ``key=value`` directory components of a path (the last of a key wins), as DuckDB
    splits them: a component with one ``=``."""
    out: dict[str, str] = {}
    for part in path.split(os.sep)[:-1]:
        kv = part.split("=")
        if len(kv) == 2:
            out[kv[0]] = kv[1]
    return out


#: tuple(paths) -> DuckDB's hive columns of those paths (see _detect_hive)
_HIVE_CACHE: OrderedDict[tuple[str, ...], list[tuple[str, str, pa.DataType, list[Any]]] | None] = \
    OrderedDict()
_HIVE_LOCK = threading.Lock()


def _detect_hive(paths: Sequence[str]) -> list[tuple[str, str, pa.DataType, list[Any]]] | None:
    """The hive partition columns DuckDB detects for ``paths``, in its order, each as
    (name, DuckDB type, Arrow type, value per path), or None when it detects none. DuckDB's
    multi-file reader does the work (``read_blob`` never reads a file's bytes when its
    ``content`` is not selected), so detection, type inference,
    URL-decoding and ``__HIVE_DEFAULT_PARTITION__`` are read_parquet's own."""
    key = tuple(paths)
    with _HIVE_LOCK:
        if key in _HIVE_CACHE:
            return _HIVE_CACHE[key]
    t = _helper_query("SELECT * EXCLUDE (content, size, last_modified) "
                      "FROM read_blob(?::VARCHAR[])", [list(paths)])
    out: list[tuple[str, str, pa.DataType, list[Any]]] | None = None
    if t.num_columns > 1 and t.num_rows == len(paths):
        engines = _engine_types(t.schema)
        out = [(name, engines[j], t.schema.field(j).type, t.column(j).to_pylist())
               for j, name in enumerate(t.column_names) if j > 0]
    with _HIVE_LOCK:
        _HIVE_CACHE[key] = out
        while len(_HIVE_CACHE) > 64:
            _HIVE_CACHE.popitem(last=False)
    return out


def _cast_hive(key: str, engine: str, raw: Sequence[str | None]) -> tuple[pa.DataType, list[Any]]:
    """Partition values (URL-decoded strings) cast to ``engine`` as read_parquet's
    ``hive_types`` does: ``__HIVE_DEFAULT_PARTITION__`` is NULL, and for a type other than
    VARCHAR so are ``''`` and ``NULL``; a value that does not cast is an error."""
    def null(v: str | None) -> bool:
        return v is None or v == _HIVE_DEFAULT or (
            engine != "VARCHAR" and (v == "" or v.upper() == "NULL"))

    if engine == "VARCHAR":
        return _STRING_DICT, [None if null(v) else v for v in raw]
    distinct = sorted({v for v in raw if v is not None and not null(v)})
    t = _helper_query(f"SELECT v, TRY_CAST(v AS {engine}) AS c FROM unnest(?::VARCHAR[]) AS u(v)",
                      [distinct])
    cast = dict(zip(t.column("v").to_pylist(), t.column("c").to_pylist()))
    for v in distinct:
        if cast.get(v) is None:
            raise ValueError(f"vortex_ipc: Unable to cast '{v}' (from hive partition column "
                             f"'{key.upper()}') to: '{engine}'")
    return t.schema.field("c").type, [None if null(v) else cast[v] for v in raw]


def _hive(paths: Sequence[str], opts: _Options) -> list[_Virtual]:
    """The hive partition columns of ``paths`` under ``opts``, as read_parquet makes them."""
    mode = opts.hive_partitioning
    if opts.hive_types is not None:
        if mode is False:
            raise ValueError("vortex_ipc: cannot disable hive_partitioning when hive_types is "
                             "enabled")
        mode = True
    if mode is False:
        return []
    raws = [_raw_partitions(p) for p in paths]
    if not any(raws):
        return []
    detected = _detect_hive(paths)
    if detected is None:
        if mode is None:
            return []
        first = (len(paths[0].split(os.sep)), set(raws[0]))
        other = next((p for p, r in zip(paths, raws)
                      if (len(p.split(os.sep)), set(r)) != first), paths[-1])
        raise ValueError(f'vortex_ipc: Hive partition mismatch between file "{paths[0]}" and '
                         f'"{other}"')
    types = opts.hive_types or {}
    names = [d[0] for d in detected]
    for k in types:
        if k not in names:
            raise ValueError(f'vortex_ipc: Unknown hive_type: "{k}" does not appear to be a '
                             "partition")
    out: list[_Virtual] = []
    for name, engine, arrow_type, values in detected:
        if name in types:
            engine = _sql_type(types[name])
            raw = [None if r.get(name) is None else urllib.parse.unquote(r[name]) for r in raws]
            arrow_type, values = _cast_hive(name, engine, raw)
        elif engine == "VARCHAR":
            arrow_type = _STRING_DICT
        out.append(_Virtual(name, arrow_type, engine, tuple(values)))
    return out


# -- pruning files by their constant columns ------------------------------------------------------

#: the DuckDB types whose values compare in Python exactly as in DuckDB
_PRUNABLE = re.compile(r"BOOLEAN|U?(TINY|SMALL|BIG)?INT(EGER)?|HUGEINT|VARCHAR|DATE|TIMESTAMP"
                       r"|DECIMAL\(\d+,\d+\)")
_PY_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _columns_of(node: Node) -> set[str]:
    """The top-level columns a predicate reads ('' for a struct field: never a constant)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Col):
            out.add(n.parts[0] if len(n.parts) == 1 else "")
        else:
            stack.extend(n._children())
    return out


def _check_prunable(node: Node, engines: dict[str, str]) -> None:
    """Raise ``Untranslatable`` unless ``_evaluate`` gives DuckDB's answer for ``node`` over
    columns of the DuckDB types ``engines``."""
    def lit(c: Any, v: Any) -> None:
        if not (isinstance(c, Col) and len(c.parts) == 1 and c.parts[0] in engines):
            raise Untranslatable(f"not a constant column: {c!r}")
        engine = engines[c.parts[0]]
        if _PRUNABLE.fullmatch(engine) is None:
            raise Untranslatable(f"a column of type {engine}")
        if not (isinstance(v, Lit) and v.type == engine and v.value is not None
                and exact_value(v)):
            raise Untranslatable(f"constant {v!r} against a column of type {engine}")

    if isinstance(node, Binary) and node.op in ("AND", "OR"):
        _check_prunable(node.left, engines)
        _check_prunable(node.right, engines)
    elif isinstance(node, Binary) and node.op in _PY_CMP:
        lit(node.left, node.right)
    elif isinstance(node, Unary) and node.op == "NOT":
        _check_prunable(node.operand, engines)
    elif isinstance(node, Postfix) and node.op in ("IS NULL", "IS NOT NULL"):
        c = node.operand
        if not (isinstance(c, Col) and len(c.parts) == 1 and c.parts[0] in engines):
            raise Untranslatable(f"not a constant column: {c!r}")
    elif isinstance(node, In) and node.values:
        for v in node.values:
            lit(node.operand, v)
    else:
        raise Untranslatable(f"predicate {node!r}")


def _evaluate(node: Node, row: dict[str, Any]) -> bool | None:
    """SQL's value of a predicate ``_check_prunable`` accepted, over one file's constants."""
    if isinstance(node, Binary) and node.op == "AND":
        a, b = _evaluate(node.left, row), _evaluate(node.right, row)
        return False if a is False or b is False else (None if a is None or b is None else True)
    if isinstance(node, Binary) and node.op == "OR":
        a, b = _evaluate(node.left, row), _evaluate(node.right, row)
        return True if a is True or b is True else (None if a is None or b is None else False)
    if isinstance(node, Unary):
        a = _evaluate(node.operand, row)
        return None if a is None else not a
    if isinstance(node, Postfix):
        v = row[node.operand.parts[0]]  # type: ignore[attr-defined]
        return (v is None) == (node.op == "IS NULL")
    if isinstance(node, In):
        v = row[node.operand.parts[0]]  # type: ignore[attr-defined]
        return None if v is None else any(v == x.value for x in node.values)  # type: ignore[attr-defined]
    assert isinstance(node, Binary)
    v = row[node.left.parts[0]]  # type: ignore[attr-defined]
    return None if v is None else _PY_CMP[node.op](v, node.right.value)  # type: ignore[attr-defined]


# -- the source ---------------------------------------------------------------------------------------


def _describe(paths: Sequence[str]) -> str:
    return repr(paths[0]) if len(paths) == 1 else f"{len(paths)} files ({paths[0]!r}, ...)"


class VortexSource(pads.Dataset, ArrowScanSource):
    """Vortex IPC files of one dtype as a source of DuckDB's Arrow scan (``vortex_ipc(...)``
    plans one per dtype among its files).

    Its columns are the files' columns, then ``virtual`` ones holding a value per file (the
    file name, hive partitions; a hive column takes the place of a file column of its name,
    as in read_parquet). ``rows()`` is the files' row count from their message headers: the
    planner's cardinality. It subclasses ``pyarrow.dataset.Dataset`` only because DuckDB's
    source registry admits pyarrow objects alone; DuckDB then talks to it through its source
    protocol (``accepts``/``stream``). ``scanner(columns=, filter=)`` with a pyarrow
    expression is not offered: use ``vortex_io.scan``.
    """

    schema_is_stable = True

    def __init__(self, paths: Sequence[str], on_scan: Callable[[Scan], None] | None = None, *,
                 virtual: Sequence[_Virtual] = (), facts: Sequence[_Facts] | None = None
                 ) -> None:
        self.obj = self
        self.paths = list(paths)
        self.on_scan = on_scan
        if not self.paths:
            raise ValueError("VortexSource needs at least one file")
        self._facts = [_facts(p) for p in self.paths] if facts is None else list(facts)
        first = self._facts[0]
        self._virtual = {v.name: v for v in virtual}
        by_fold = {v.name.casefold(): v for v in virtual}
        names: list[str] = []
        fields: list[pa.Field] = []
        self._replacing: set[str] = set()  # hive columns in place of a file column
        for f in first.stream_schema:
            v = by_fold.pop(f.name.casefold(), None)
            if v is not None:
                self._replacing.add(v.name)
            names.append(f.name if v is None else v.name)
            fields.append(f if v is None else pa.field(v.name, v.type))
        for v in virtual:
            if v.name.casefold() in by_fold:
                names.append(v.name)
                fields.append(pa.field(v.name, v.type))
        self._names = names
        self._data = [n for n in names if n not in self._virtual]
        self._schema = pa.schema([first.schema.field(n) for n in self._data])
        self._stream_schema = pa.schema(fields)
        self._dictionary = [n for n in first.dictionary if n in self._data]
        self._rows = sum(f.rows for f in self._facts)
        self._messages = {p: f.messages for p, f in zip(self.paths, self._facts)}
        self._sizes = {p: f.size for p, f in zip(self.paths, self._facts)}
        self._engines = {v.name: v.engine for v in virtual}

    # pyarrow.dataset.Dataset's own methods would touch an empty C++ object: replace the ones
    # a caller may reach
    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the files' columns (the first file's), read at planning."""
        return self._schema

    def scanner(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("VortexSource is scanned by DuckDB; use vortex_io.scan()")

    def to_table(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("VortexSource is scanned by DuckDB; use vortex_io.scan()")

    def count_rows(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("VortexSource is scanned by DuckDB; use vortex_io.scan()")

    def __repr__(self) -> str:
        return f"VortexSource({_describe(self.paths)})"

    # -- DuckDB's source protocol --

    def __arrow_c_schema__(self) -> Any:
        return self._stream_schema.__arrow_c_schema__()

    def rows(self) -> int | None:
        """The row count of the files, from their message headers (the planner's estimate:
        ``EXPLAIN`` shows it, and joins build their hash table on the smaller side)."""
        return self._rows

    def accepts(self, predicate: Node) -> bool:
        """Whether the scan applies ``predicate`` exactly: a predicate of the files' columns
        that translates, or one of the per-file columns alone (files it rules out are never
        opened)."""
        cols = _columns_of(predicate)
        if cols and cols <= self._virtual.keys():
            try:
                _check_prunable(predicate, self._engines)
            except Untranslatable:
                return False
            return True
        if cols & self._virtual.keys():
            return False
        return _translatable(predicate, self._schema)

    def stream(self, columns: Sequence[int] | None, filters: Sequence[Node]) -> tuple[Any, bool]:
        """An Arrow C stream of the columns ``columns`` (all: None) of the rows that pass
        ``filters``. Errors surface when DuckDB reads it, as one line."""
        names = self._names if columns is None else [self._names[i] for i in columns]
        want = pa.schema([self._stream_schema.field(n) for n in names])
        batches = self._read(names, columns is None, filters, want)
        return _export_stream(want, batches), columns is not None

    def _read(self, names: list[str], every: bool, filters: Sequence[Node], want: pa.Schema
              ) -> Iterator[pa.RecordBatch]:
        expr: Expr | None = None
        keep: list[int] = list(range(len(self.paths)))
        for f in filters:
            cols = _columns_of(f)
            if cols and cols <= self._virtual.keys():
                rows = [{n: v.values[i] for n, v in self._virtual.items()} for i in keep]
                keep = [i for i, row in zip(keep, rows) if _evaluate(f, row) is True]
            else:
                e = translate(f, self._schema)
                expr = e if expr is None else expr & e
        data = [n for n in names if n not in self._virtual]
        dictionary = [n for n in self._dictionary if n in data]
        if not self._virtual:  # one scan over every file
            s = self._scan(self.paths, None if every else data, expr, dictionary, want)
            yield from _located(s, self.paths)
            return
        for i in keep:
            path = self.paths[i]
            s = self._scan([path], data, expr, dictionary,
                           pa.schema([want.field(n) for n in data]))
            pos = {n: j for j, n in enumerate(data)}
            for b in _located(s, [path]):
                if not names:  # no column at all: the rows alone (a batch keeps its count)
                    yield b
                    continue
                n = b.num_rows
                arrays = [b.column(pos[c]) if c in pos else self._virtual[c].array(i, n)
                          for c in names]
                yield pa.RecordBatch.from_arrays(arrays, schema=want)

    def _scan(self, paths: list[str], names: list[str] | None, expr: Expr | None,
              dictionary: list[str], want: pa.Schema) -> Scan:
        try:
            # one message has nothing to decode in parallel: no thread pool for it
            few = sum(self._messages[p] for p in paths) <= 1
            src: Any = _small(paths[0], self._sizes[paths[0]]) if len(paths) == 1 else paths
            s = scan(src, columns=names, filter=expr, string_view=True,
                     read_dictionary=dictionary, threads=1 if few else None)
            got = s.schema
        except VortexIPCError as e:
            raise e.locate(source=paths[0]) from None
        if got.types != want.types or got.names != want.names:
            raise VortexIPCError(f"vortex_ipc: {_describe(paths)} changed while the query was "
                                 f"planned: schema {want} is now {got}")
        if self.on_scan is not None:
            self.on_scan(s)
        return s


#: a file scanned alone of at most this many bytes is read whole, in one call, and scanned in
#: memory (a scan of a path opens it twice and reads its headers twice: its DType message at
#: the start, then the scan)
SMALL_FILE = 1 << 20


def _small(path: str, size: int) -> str | io.BytesIO:
    """``path``, or its bytes when it is small (as a file object: a scan of one reads its
    DType message once)."""
    if size > SMALL_FILE or _fs.is_url(path):
        return path
    with open(path, "rb") as f:
        return io.BytesIO(f.read())


def _located(s: Scan, paths: Sequence[str]) -> Iterator[pa.RecordBatch]:
    try:
        yield from s
    except VortexIPCError as e:
        raise e.locate(source=paths[0] if len(paths) == 1 else None) from None


# -- the registry of planned sources -----------------------------------------------------------------

#: the handles of the sources plans named most recently (name -> handle, the newest last). The
#: resolver returns SQL naming registered sources and DuckDB binds those names right after, on
#: the planning thread; what it has bound, its plan holds. A repeated request is answered with
#: the names an earlier planning registered, possibly on another thread, so no planning may
#: drop a handle another one has just returned: every answer holds its handles here, and only
#: the _MAX_PENDING most recent answers' handles are kept (the registry stays bounded).
_PENDING: OrderedDict[str, Any] = OrderedDict()
_PENDING_LOCK = threading.Lock()
_MAX_PENDING = 256


def _hold(handles: Sequence[Any]) -> None:
    with _PENDING_LOCK:
        for handle in handles:
            _PENDING[handle.name] = handle
            _PENDING.move_to_end(handle.name)
        while len(_PENDING) > _MAX_PENDING:
            _PENDING.popitem(last=False)


# -- planning: what vortex_ipc(...) expands to ----------------------------------------------------------


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _virtual_columns(paths: list[str], facts: list[_Facts], opts: _Options) -> list[_Virtual]:
    """The filename column (when asked for) and the hive columns, read_parquet's checks
    included."""
    hive = _hive(paths, opts)
    out: list[_Virtual] = []
    if opts.filename is not None:
        fold = opts.filename.casefold()
        if any(fold == n.casefold() for f in {f.dtype: f for f in facts}.values()
               for n in f.schema.names):
            raise ValueError(f'vortex_ipc: Option filename adds column "{opts.filename}", but a '
                             "column with this name is also in the file. Try setting a different "
                             "name: filename := '<filename column name>'")
        if any(fold == v.name.casefold() for v in hive):
            raise ValueError(f'vortex_ipc: Option filename adds column "{opts.filename}", but a '
                             "hive partition column with this name also exists. Try setting a "
                             "different name: filename := '<filename column name>'")
        out.append(_Virtual(opts.filename, _STRING_DICT, "VARCHAR", tuple(paths)))
    return out + hive


def _union_sql(sources: list[tuple[VortexSource, str]], virtual: list[_Virtual]) -> str:
    """The sources as read_parquet's ``union_by_name`` reads files: columns by name (in order
    of first appearance, the per-file columns last), types widened and missing columns NULL
    by DuckDB's ``UNION ALL BY NAME``."""
    order: list[str] = []
    seen: set[str] = set()
    added = [n for src, _ in sources for n in src._names
             if n not in src._virtual or n in src._replacing]
    for n in added + [v.name for v in virtual]:
        if n.casefold() not in seen:
            seen.add(n.casefold())
            order.append(n)
    union = " UNION ALL BY NAME ".join(f"SELECT * FROM {_ident(name)}" for _, name in sources)
    return f"SELECT {', '.join(map(_ident, order))} FROM ({union})"


def _first_schema_sql(sources: list[tuple[VortexSource, str]]) -> str:
    """The sources as read_parquet reads files without ``union_by_name``: the first file's
    columns, found by name (any case) in every other file and cast to the first file's types;
    a column a file lacks is an error."""
    ref, ref_name = sources[0]
    ref_types = _engine_types(ref._stream_schema)
    parts = [f"SELECT * FROM {_ident(ref_name)}"]
    for src, name in sources[1:]:
        types = dict(zip(src._names, _engine_types(src._stream_schema)))
        by_fold = {n.casefold(): n for n in src._names}
        select = []
        for n, t in zip(ref._names, ref_types):
            have = by_fold.get(n.casefold())
            if have is None:
                raise ValueError(
                    f'vortex_ipc: schema mismatch in glob: column "{n}" was read from the '
                    f'original file "{ref.paths[0]}", but could not be found in file '
                    f'"{src.paths[0]}". Candidate names: {", ".join(src._data)}. If you are '
                    "trying to read files with different schemas, try setting "
                    "union_by_name := true")
            col = _ident(have)
            select.append(f"{col} AS {_ident(n)}" if types[have] == t
                          else f"CAST({col} AS {t}) AS {_ident(n)}")
        parts.append(f"SELECT {', '.join(select)} FROM {_ident(name)}")
    return " UNION ALL ".join(parts)


_PROBE = "__vortex_ipc_probe__"
_RECENT_PLANS = 32


class _Resolver:
    """The scalar function DuckDB evaluates while it plans ``vortex_ipc(...)``: it reads the
    files' headers, registers a :class:`VortexSource` per dtype among them and returns the SQL
    the macro runs (``query(...)``). One per database: every connection ``register`` is called
    on is an owner (sources are registered through a cursor of a live one)."""

    def __init__(self, on_scan: Callable[[Scan], None] | None) -> None:
        self.token = f"vortex_ipc:{uuid.uuid4().hex}"
        self.on_scan = on_scan
        self._owners: list[weakref.ref[Any]] = []
        self._lock = threading.Lock()
        #: request -> what it was planned as: DuckDB binds a query more than once (a relation,
        #: then its execution), and the second planning of the same files reuses the first's
        self._recent: OrderedDict[str, tuple[tuple[_Facts, ...], str, list[Any]]] = OrderedDict()

    def forget(self) -> None:
        """Drop the remembered plans (their sources hold the old ``on_scan``)."""
        with self._lock:
            self._recent.clear()

    def add(self, con: Any) -> None:
        with self._lock:
            self._owners = [r for r in self._owners if r() is not None and r() is not con]
            self._owners.append(weakref.ref(con))

    def _cursor(self) -> Any:
        with self._lock:
            owners = [r() for r in self._owners]
        for c in owners:
            if c is None:
                continue
            try:
                return c.cursor()
            except duckdb.Error:  # closed
                continue
        raise RuntimeError("vortex_ipc: the connections it was registered on are closed: call "
                           "vortex_io.register_duckdb(con) on an open one")

    def __call__(self, request: str) -> str:
        req = json.loads(request)
        if req == _PROBE:
            return self.token
        opts = _options(req)
        paths = _expand(req.get("source"))
        facts = tuple(_facts(p) for p in paths)
        with self._lock:
            hit = self._recent.get(request)
        if hit is not None and len(hit[0]) == len(facts) and all(
                a is b for a, b in zip(hit[0], facts)):  # the same versions of the same files
            with self._lock:
                if request in self._recent:
                    self._recent.move_to_end(request)
            _hold(hit[2])  # registered while DuckDB binds them, whatever replaces the plan
            return hit[1]
        virtual = _virtual_columns(paths, list(facts), opts)
        groups: dict[dt.DType, list[int]] = {}
        for i, f in enumerate(facts):
            groups.setdefault(f.dtype, []).append(i)
        cur = self._cursor()
        sources: list[tuple[VortexSource, str]] = []
        handles: list[Any] = []
        for idx in groups.values():
            src = VortexSource([paths[i] for i in idx], self.on_scan,
                               virtual=[v.subset(idx) for v in virtual],
                               facts=[facts[i] for i in idx])
            handle = cur._register_source(src, None)
            handles.append(handle)
            sources.append((src, handle.name))
        if len(sources) == 1:
            sql = f"FROM {_ident(sources[0][1])}"
        elif opts.union_by_name:
            sql = _union_sql(sources, virtual)
        else:
            sql = _first_schema_sql(sources)
        _hold(handles)
        with self._lock:
            self._recent[request] = (facts, sql, handles)
            while len(self._recent) > _RECENT_PLANS:
                self._recent.popitem(last=False)
        return sql


#: token -> resolver, for register() on a second connection of a database
_RESOLVERS: weakref.WeakValueDictionary[str, _Resolver] = weakref.WeakValueDictionary()

_MACRO = (
    f"MACRO {FUNCTION_NAME}(source, filename := false, union_by_name := false, "
    "hive_partitioning := NULL, hive_types := NULL) AS TABLE "
    f"FROM query({_RESOLVER}(to_json({{'source': source, 'filename': filename, "
    "'union_by_name': union_by_name, 'hive_partitioning': hive_partitioning, "
    "'hive_types': hive_types})))"
)


def _resolver_of(con: Any) -> _Resolver | None:
    """The resolver already registered on ``con``'s database (by another connection), if any."""
    try:
        row = con.execute(f"SELECT {_RESOLVER}(?::JSON)", [json.dumps(_PROBE)]).fetchone()
    except duckdb.Error:
        return None
    return _RESOLVERS.get(row[0]) if row else None


class QueryError(Exception):
    """A query ``query_file`` ran failed; the message is one line."""


_OUR_ERROR = re.compile(
    r"\b(?:MalformedStreamError|TruncatedStreamError|IntegrityError|UnsupportedError|"
    r"LimitExceededError|VortexIPCError): (.*)")


def query_file(path: str, query: str) -> pa.Table | None:
    """The result of ``query`` (None for a statement without one) on a new in-memory
    connection where the view ``t`` is ``vortex_ipc(path)``: what ``vortex-ipc sql`` runs.
    A failure raises ``QueryError`` with one line: the error our scan raised inside DuckDB
    when it did (DuckDB wraps it in a UDF error), else DuckDB's first line."""
    con = register(duckdb.connect())
    try:
        quoted = path.replace("'", "''")
        con.execute(f"CREATE VIEW t AS SELECT * FROM vortex_ipc('{quoted}')")
        res = con.sql(query)
        return res.to_arrow_table() if res is not None else None
    except duckdb.Error as e:
        m = _OUR_ERROR.search(str(e))
        if m:
            line = m.group(1).strip()
        else:
            text = str(e).strip()
            line = text.splitlines()[0] if text else type(e).__name__
            line = line.replace("Python exception occurred while executing the UDF: ", "")
        line = "".join(ch if ch.isprintable() else "?" for ch in line)
        raise QueryError(line if len(line) <= 300 else line[:297] + "...") from None
    finally:
        con.close()


def register(con: Any, *, on_scan: Callable[[Scan], None] | None = None) -> Any:
    """Make ``vortex_ipc(source, ...)`` available on ``con`` and every cursor of it; returns
    ``con``.

    ``vortex_ipc(source, filename := false, union_by_name := false, hive_partitioning :=
    NULL, hive_types := NULL)``, with read_parquet's meanings:
    ``source`` is a path, a glob (``'dir/**/*.vxipc'``), a directory (its ``**/*.vxipc``) or
    a list of those; ``filename := true`` (or a column name) adds the file's path;
    ``union_by_name`` unifies the files' columns by name; ``hive_partitioning`` (NULL: when
    the paths look partitioned) adds ``key=value`` directories as columns, typed as DuckDB
    infers them or by ``hive_types := {'key': 'TYPE'}``. Filters (``=``, ``<>``, ``<``,
    ``<=``, ``>``, ``>=``, ``IN``, ``BETWEEN``, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT``)
    and the column projection are pushed into ``vortex_io.scan``; filters of the file name or
    partitions alone skip whole files unopened. ``on_scan`` is called with every ``Scan`` a
    query starts (its ``stats`` fill in as DuckDB reads it).

    Register each connection you open (``duckdb.connect(...)``); its cursors need nothing.
    Calling ``register`` again (on any connection of the database) replaces ``on_scan``.
    ``vortex_ipc`` is a table macro in the connection's default schema: with a database file
    it is stored there, and a later session calls ``register`` again before using it (on a
    read-only database the macro is made TEMPORARY: that connection only). Query results go
    to Vortex IPC with ``vortex_io.write_ipc(path, con.sql(...))`` (Arrow stream interface).

    Errors about the files are ``duckdb.InvalidInputException`` (DuckDB lets no Python
    exception through) whose one-line message ends with the ``vortex_io`` error whole:
    ``TruncatedStreamError: stream ends inside ... (path, message 3, byte offset 973)``. An
    unknown named parameter is refused by DuckDB's binder before the resolver runs (DuckDB
    checks a macro's arguments itself): ``Macro vortex_ipc() does not support the supplied
    arguments``, with the parameters it takes under ``Candidate macros:``.
    """
    check_duckdb_version()
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise TypeError(f"register() needs a duckdb connection, not {type(con).__name__}")
    resolver = _resolver_of(con)
    if resolver is None:
        resolver = _Resolver(on_scan)
        try:
            con.remove_function(_RESOLVER)
        except duckdb.Error:  # not registered yet
            pass
        con.create_function(_RESOLVER, resolver, ["JSON"], "VARCHAR")
        _RESOLVERS[resolver.token] = resolver
    resolver.on_scan = on_scan
    resolver.forget()
    resolver.add(con)
    try:
        con.execute(f"CREATE OR REPLACE {_MACRO}")
    except duckdb.Error:  # a read-only database: the macro lives on this connection only
        con.execute(f"CREATE OR REPLACE TEMPORARY {_MACRO}")
    return con
