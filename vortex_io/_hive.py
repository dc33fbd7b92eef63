"""Hive partitions of a directory source: ``dir/year=2024/month=01/part-0.vxipc`` stands for
the rows of that file with the constant columns ``year`` and ``month``, as Polars, pyarrow
and DuckDB read such a layout. Pure functions, no IO: what a scan asks of the paths its
sources expanded to.

>>> import pyarrow as pa
>>> files = [("d/k=1/a.vxipc", "d"), ("d/k=20/b.vxipc", "d"), ("d/k=__HIVE_DEFAULT_PARTITION__/c.vxipc", "d")]
>>> p = partitions(files, None)
>>> p.schema
k: int64
>>> [v["k"] for v in p.values]
[1, 20, None]
>>> from vortex_io.expr import col
>>> [p.bind(col("k") > 5, i) for i in range(3)]
[False, True, False]
>>> p.bind((col("k") == 1) | (col("x") > 0), 1)
(col('x') > 0)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from . import dtype as dt
from ._errors import ColumnNotFoundError, MalformedStreamError, TypeMismatchError, VortexIPCError
from .compute._expr import FLIP, And, Column, Compare, Expr, IsIn, IsNull, Literal, Not, Or

__all__ = ["DEFAULT_PARTITION", "STORED_KEY", "Partitions", "partitions", "path_keys",
           "read_stored", "stored_value"]

#: the directory value of a null key (Hive's, and what Polars, pyarrow and DuckDB write)
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: the reserved stream metadata key under which a partitioned write keeps the partition
#: columns' exact Arrow fields (types, nullability, field metadata) in every file
STORED_KEY = b"vortex_io.hive_schema"


def stored_value(schema: Any) -> tuple[bytes, bytes]:
    """The reserved pair keeping ``schema`` (the partition columns' fields)."""
    return STORED_KEY, schema.serialize().to_pybytes()


def read_stored(values: Sequence[bytes], source: str | None) -> Any:
    """The partition columns' schema a file keeps (``values``: its ``STORED_KEY`` values),
    None when it keeps none; a value that is no schema is a ``MalformedStreamError``."""
    import pyarrow as pa

    if not values:
        return None
    if len(values) > 1:
        raise MalformedStreamError(f"the stream has {len(values)} {STORED_KEY.decode()} values",
                                   source=source)
    try:
        return pa.ipc.read_schema(pa.py_buffer(values[0]))
    except (pa.ArrowException, ValueError, TypeError, OSError) as e:
        raise MalformedStreamError(f"the stream's {STORED_KEY.decode()} value is not an Arrow "
                                   f"schema: {e}", source=source) from None


def path_keys(path: str, base: str | None) -> list[tuple[str, str]]:
    """The ``key=value`` directories of ``path`` below ``base`` (the whole path's when
    ``base`` is None), outermost first, values percent-decoded.

    >>> path_keys("/data/t/year=2024/city=New%20York/0.vxipc", "/data/t")
    [('year', '2024'), ('city', 'New York')]
    """
    sep = "/" if "://" in path else os.sep
    if base is not None:
        b = base.rstrip("/" + os.sep)
        rel = path[len(b):].lstrip("/" + os.sep) if path.startswith(b) else path
    else:
        rel = path.split("://", 1)[-1]
    parts = rel.replace(os.sep, "/").split("/") if sep != "/" else rel.split("/")
    out = []
    for part in parts[:-1]:
        k, eq, v = part.partition("=")
        if eq and k:
            out.append((unquote(k), unquote(v)))
    return out


def _parse(raw: Sequence[str | None], t: Any, key: str, paths: Sequence[str]) -> list[Any]:
    """The values of one key as Python values of the Arrow type ``t`` (a value that does
    not convert raises naming the key and the file)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: list[Any] = []
    for v, p in zip(raw, paths):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(pc.cast(pa.array([v], pa.string()), t)[0].as_py())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise VortexIPCError(f"hive partition {key}={v!r} is not a {t}: {e}",
                                 source=p) from None
    return out


def _infer(raw: Sequence[str | None]) -> Any:
    """The Arrow type of a key's values: int64 when every value is an integer that fits,
    float64 when every value is a finite number, else string (as Polars infers)."""
    import pyarrow as pa

    vals = [v for v in raw if v is not None]
    if not vals:
        return pa.string()
    try:
        if all(-(1 << 63) <= int(v) < (1 << 63) for v in vals):
            return pa.int64()
    except ValueError:
        pass
    try:
        if all(math.isfinite(float(v)) for v in vals):
            return pa.float64()
    except ValueError:
        pass
    return pa.string()


@dataclass(frozen=True)
class Partitions:
    """The partition columns of a scan's files: ``schema`` (their Arrow fields, in path
    order), ``values`` (one dict per file, key to Python value or None)."""

    schema: Any
    values: list[dict[str, Any]]

    @property
    def names(self) -> list[str]:
        return list(self.schema.names)

    def dtype(self, name: str) -> dt.DType:
        import pyarrow as pa

        t = self.schema.field(name).type
        return dt.from_arrow(t.value_type if pa.types.is_dictionary(t) else t)

    def subset(self, index: int) -> Partitions:
        """The partition values of file ``index`` alone (what a scan of that file takes)."""
        return Partitions(self.schema, [self.values[index]])

    def columns(self, names: Sequence[str], rows: int, index: int, *,
                string_view: bool = False, dictionary: Sequence[str] = ()) -> list[Any]:
        """The constant Arrow arrays of ``names`` for ``rows`` rows of file ``index``."""
        import numpy as np
        import pyarrow as pa

        from ._arrow import arrow_take

        out = []
        for n in names:
            t = self.schema.field(n).type
            v = self.values[index][n]
            if n in dictionary:
                value_type = pa.binary() if pa.types.is_binary(t) else pa.string()
                vals = pa.array([] if v is None else [v], value_type)
                idx = pa.nulls(rows, pa.int32()) if v is None else \
                    pa.array([0] * rows, pa.int32())
                out.append(pa.DictionaryArray.from_arrays(idx, vals))
                continue
            if string_view and pa.types.is_string(t):
                t = pa.string_view()
            one = pa.nulls(1, t) if v is None else pa.array([v], t)
            out.append(arrow_take(one, np.zeros(rows, dtype=np.int64)))
        return out

    def bind(self, e: Expr, index: int) -> Expr | bool:
        """``e`` with file ``index``'s partition values put in: True (every row of the file
        matches what the partition columns decide), False (no row does: the file is not
        read), or the expression on the data columns that is left. A null comparison is
        false where it decides the outcome as false, and true under a negation, which keeps
        SQL's three-valued answer of the whole filter exact."""
        out = self._bind(e, index, True)
        return out if isinstance(out, Expr) else bool(out)

    def _bind(self, e: Expr, i: int, positive: bool) -> Expr | bool:
        vals = self.values[i]

        null = not positive  # what a null answer here stands for (see bind)

        if isinstance(e, Column):
            return e
        if isinstance(e, Compare):
            op, left, right = e.normalized()
            if isinstance(left, Column) and left.name in vals:
                if isinstance(right, Column) and right.name in vals:
                    a, b = vals[left.name], vals[right.name]
                    if a is None or b is None:
                        return null
                    d = self.dtype(left.name)
                    return _compare(self._coerce(left.name, d, a), op,
                                    self._coerce(left.name, d, b))
                v = vals[left.name]
                if isinstance(right, Column):  # partition column against a data column
                    return null if v is None else Compare(FLIP[op], right, Literal(v))
                if not isinstance(right, Literal):
                    return e
                if right.value is None or v is None:
                    return null
                d = self.dtype(left.name)
                return _compare(self._coerce(left.name, d, v), op,
                                self._coerce(left.name, d, right.value))
            if isinstance(right, Column) and right.name in vals:
                v = vals[right.name]
                if v is None:
                    return null
                return Compare(op, left, Literal(v))
            return e
        if isinstance(e, IsNull):
            c = e.child
            if isinstance(c, Column) and c.name in vals:
                return (vals[c.name] is None) != e.negated
            return e
        if isinstance(e, IsIn):
            c = e.child
            if isinstance(c, Column) and c.name in vals:
                v = vals[c.name]
                if v is None:
                    return null
                d = self.dtype(c.name)
                v = self._coerce(c.name, d, v)
                # (nulls among the values never match, as the kernels' is_in has it)
                return any(x is not None and _compare(v, "eq", self._coerce(c.name, d, x))
                           for x in e.values)
            return e
        if isinstance(e, Not):
            inner = self._bind(e.child, i, not positive)
            return (not inner) if isinstance(inner, bool) else Not(inner)
        if isinstance(e, (And, Or)):
            a = self._bind(e.left, i, positive)
            b = self._bind(e.right, i, positive)
            absorbing = isinstance(e, Or)  # True absorbs an Or, False an And
            for x, y in ((a, b), (b, a)):
                if isinstance(x, bool):
                    return absorbing if x is absorbing else y
            assert isinstance(a, Expr) and isinstance(b, Expr)
            return type(e)(a, b)
        return e

    def _coerce(self, name: str, d: dt.DType, value: Any) -> Any:
        from .compute._kernels import coerce_literal

        try:
            return coerce_literal(d, value)
        except TypeMismatchError as err:
            raise err.name_column(name) from None

    def check(self, e: Expr, data: dt.DType) -> None:
        """Raise early for a column neither the data nor the partitions have (``bind``
        raises for a literal a partition column cannot be compared with)."""
        data_names = list(data.names) if isinstance(data, dt.Struct) else []
        for c in sorted(e.columns()):
            if c not in data_names and c not in self.schema.names:
                raise ColumnNotFoundError(c, data_names + [n for n in self.schema.names
                                                           if n not in data_names])


def _compare(a: Any, op: str, b: Any) -> bool:
    from .compute._numeric import py_compare

    return py_compare(a, b, op)


def _base_dir(base: str) -> str:
    return base.rstrip("/") if "://" in base else os.path.normpath(base)


def partitions(files: Sequence[tuple[Any, str | None]], enabled: bool | None,
               schema: Mapping[str, Any] | None = None,
               data_names: Sequence[str] = (), stored: Any = None) -> Partitions | None:
    """The hive partitions of ``files`` (each ``(path, base)``: the directory it was found
    in, None for a path given as a file), or None when there are none.

    ``enabled``: None detects them (every file found in a directory, all with the same
    keys below it); True reads the ``key=value`` directories of every path (raising when
    the files disagree on the keys); False: none. ``schema``: Arrow types of keys (a
    mapping of name to ``pyarrow.DataType``), then the fields ``stored`` (an Arrow schema:
    what a partitioned write keeps in its files) gives, the others inferred. A key the data
    already has as a column is not a partition column (the stream's column is read).
    """
    import pyarrow as pa

    if enabled is False or not files:
        return None
    if enabled is None and any(b is None or not isinstance(p, str) for p, b in files):
        return None
    keys: list[list[tuple[str, str]]] = []
    for p, b in files:
        if not isinstance(p, str):
            raise ValueError("hive_partitioning=True needs paths: a source is "
                             f"{type(p).__name__}")
        keys.append(path_keys(p, None if b is None else _base_dir(b)))
    names = [k for k, _ in keys[0]]
    for (p, _), ks in zip(files, keys):
        if [k for k, _ in ks] != names:
            if enabled is None:
                return None
            raise VortexIPCError(f"hive partitions differ: {files[0][0]!r} has the keys "
                                 f"{names}, this file {[k for k, _ in ks]}", source=p)
    if not names:
        if enabled and schema:
            raise ValueError(f"hive_schema names {sorted(schema)}, but no path has key=value "
                             "directories")
        return None
    if len(set(names)) != len(names):
        raise VortexIPCError(f"hive partitions repeat a key: {names}", source=files[0][0])
    schema = dict(schema or {})
    unknown = sorted(set(schema) - set(names))
    if unknown:
        raise ColumnNotFoundError(unknown[0], names, context="hive_schema")
    paths = [p for p, _ in files]
    fields = []
    cols: dict[str, list[Any]] = {}
    for j, name in enumerate(names):
        if name in data_names:
            continue
        raw = [None if ks[j][1] in (DEFAULT_PARTITION, "") else ks[j][1] for ks in keys]
        t = schema.get(name)
        f = None
        if t is None and stored is not None and name in stored.names:
            f = stored.field(name)
            t = f.type
        elif t is None:
            t = _infer(raw)
        elif not isinstance(t, pa.DataType):
            raise TypeError(f"hive_schema: the type of {name!r} must be a pyarrow.DataType, "
                            f"not {type(t).__name__}")
        cols[name] = _parse(raw, t, name, paths)
        fields.append(f if f is not None else pa.field(name, t))
    if not fields:
        return None
    values = [{n: cols[n][i] for n in cols} for i in range(len(files))]
    return Partitions(pa.schema(fields), values)

