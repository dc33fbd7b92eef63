"""``vortex.datetimeparts``: timestamps split into days, seconds of the day and subseconds.

Wire layout (vortex-data 0.93): no buffers; metadata ``DateTimePartsMetadata { 1:
days_ptype, 2: seconds_ptype, 3: subseconds_ptype }``; children ``days`` (integers, the
array's nullability: it carries the validity), ``seconds`` and ``subseconds`` (non-null
integers), all of the array's length. The node's dtype is the ``vortex.timestamp``
extension itself (there is no ``vortex.ext`` wrapper), in s, ms, us or ns.

Decoding: ``days * 86400 * D + seconds * D + subseconds`` in wrapping i64 arithmetic, with
D = 1, 10**3, 10**6, 10**9 ticks per second. The canonical form is a ``vortex.ext`` over
an i64 ``vortex.primitive``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ..compute._kernels import compare_storage, take
from ..compute._numeric import OPS, int_bounds, validity
from ._common import canonical_ints, int_ptype_of, narrowest_int
from ._constant import constant_value
from ._ext import ext_array
from ._primitive import primitive_array, primitive_raw, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, child_int_cost, register_scheme

__all__ = ["DateTimePartsEncoding", "datetimeparts_encode", "TICKS_PER_SECOND"]

SECONDS_PER_DAY = 86_400
#: ticks per second of each timestamp unit
TICKS_PER_SECOND = {dt.TimeUnit.NS: 10**9, dt.TimeUnit.US: 10**6, dt.TimeUnit.MS: 10**3,
                    dt.TimeUnit.S: 1}


class DateTimePartsMeta(NamedTuple):
    days_ptype: dt.PType
    seconds_ptype: dt.PType
    subseconds_ptype: dt.PType


def _part(a: Array, n: int, what: str) -> np.ndarray | int:
    """The seconds or subseconds child: an int when it is a (non-null) constant, else its
    values (integers without nulls)."""
    if a.encoding == "vortex.constant" and isinstance(a.dtype, dt.Primitive) and a.dtype.ptype.is_int:
        v = constant_value(a)
        if v is not None:
            if len(a) != n:
                raise MalformedStreamError(
                    "vortex.datetimeparts children do not match the array length")
            return (int(v) + 2**63) % 2**64 - 2**63  # wrapped to i64, as the arrays are
    vals = canonical_ints(a, what)
    if len(vals) != n:
        raise MalformedStreamError("vortex.datetimeparts children do not match the array length")
    return vals


def _timestamp(dtype: dt.DType) -> dt.Extension:
    """``dtype`` as the ``vortex.timestamp`` extension the encoding holds."""
    if not (isinstance(dtype, dt.Extension) and dtype.id == dt.TIMESTAMP_ID):
        raise MalformedStreamError(f"vortex.datetimeparts holds timestamps, not {dtype!r}")
    return dtype


def _ticks(dtype: dt.DType) -> int:
    unit = _timestamp(dtype).unit
    if unit not in TICKS_PER_SECOND:
        raise MalformedStreamError(f"vortex.datetimeparts cannot hold a timestamp in {unit.name}")
    return TICKS_PER_SECOND[unit]


class DateTimePartsEncoding(Encoding):
    id = "vortex.datetimeparts"

    def check_dtype(self, dtype: dt.DType) -> None:
        _ticks(dtype)
        storage = _timestamp(dtype).storage
        if not (isinstance(storage, dt.Primitive) and storage.ptype == dt.PType.I64):
            raise MalformedStreamError(
                f"vortex.datetimeparts needs i64 timestamp storage, not {storage!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> DateTimePartsMeta:
        f = parse(raw, "DateTimePartsMetadata")
        return DateTimePartsMeta(*(int_ptype_of(f.get_uint(i, 0), f"vortex.datetimeparts {name}")
                                   for i, name in ((1, "days"), (2, "seconds"),
                                                   (3, "subseconds"))))

    def child_specs(self, dtype, length, meta: DateTimePartsMeta, parts: ArrayParts):
        if parts.nchildren != 3:
            raise MalformedStreamError(
                f"vortex.datetimeparts takes 3 children, got {parts.nchildren}")
        return [(dt.Primitive(meta.days_ptype, dtype.nullable), length),
                (dt.Primitive(meta.seconds_ptype, False), length),
                (dt.Primitive(meta.subseconds_ptype, False), length)]

    def canonicalize(self, arr: Array) -> Array:
        d = _ticks(arr.dtype)
        days_c = arr.children[0].canonical()
        if not (isinstance(days_c.dtype, dt.Primitive) and days_c.dtype.ptype.is_int):
            raise MalformedStreamError(f"vortex.datetimeparts days must be integers, not {days_c.dtype!r}")
        days = primitive_raw(days_c)
        n = len(arr)
        secs = _part(arr.children[1], n, "vortex.datetimeparts seconds")
        subs = _part(arr.children[2], n, "vortex.datetimeparts subseconds")
        if len(days) != n:
            raise MalformedStreamError("vortex.datetimeparts children do not match the array length")
        # wrapping i64 arithmetic, like the reference (u64 parts are reinterpreted); the
        # parts widen inside the ufuncs, constant parts (a whole-second or whole-day column)
        # are added as scalars
        i64 = np.dtype(np.int64)
        out = _memory.empty(n, i64)
        with np.errstate(over="ignore"):
            np.multiply(days, np.int64(SECONDS_PER_DAY * d), out=out, dtype=i64, casting="unsafe")
            if isinstance(secs, int):
                if secs:
                    np.add(out, np.int64(secs) * np.int64(d), out=out)
            else:
                tmp = np.empty(n, i64)
                np.multiply(secs, np.int64(d), out=tmp, dtype=i64, casting="unsafe")
                np.add(out, tmp, out=out)
            if isinstance(subs, int):
                if subs:
                    np.add(out, np.int64(subs), out=out)
            else:
                np.add(out, subs, out=out, dtype=i64, casting="unsafe")
        validity = days_c.children[0] if days_c.children else None
        storage = primitive_array(out, validity, nullable=arr.dtype.nullable)
        return ext_array(_timestamp(arr.dtype), storage)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        a = Array(self, arr.dtype, stop - start, metadata=arr.metadata,
                  children=[c.slice(start, stop) for c in arr.children], meta=arr.meta)
        return a

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity(arr.children[0])

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        """From the days part (its own kernels) and cheap bounds of the seconds and
        subseconds: a row whose day puts every possible time of day below (above) the
        literal is decided without reading its other parts; seconds and subseconds are
        read only for the rows left (near the literal's day). Falls back when the bounds
        are unknown, the values could wrap, or most rows are left undecided."""

        if not isinstance(value, int) or isinstance(value, bool):
            return NotImplemented
        bounds = [int_bounds(c) for c in arr.children]
        if any(b is None for b in bounds):
            return NotImplemented
        (dlo, dhi), (slo, shi), (ulo, uhi) = bounds  # type: ignore[misc]
        d = _ticks(arr.dtype)
        per_day = SECONDS_PER_DAY * d
        tlo, thi = slo * d + ulo, shi * d + uhi
        if not (-(2**63) <= dlo * per_day + tlo and dhi * per_day + thi < 2**63):
            return NotImplemented  # i64 arithmetic could wrap: decode instead
        n = len(arr)
        days = arr.children[0]
        # day < a: every value is below the literal; day > b: every value is above it
        a, b = -((thi - value) // per_day), (value - tlo) // per_day
        below, valid = compare_storage(days, a, "lt")
        above = compare_storage(days, b, "gt")[0]
        rest = ~(below | above)
        if valid is not None:
            rest &= valid
        rows = np.flatnonzero(rest)
        if 2 * len(rows) > n:
            return NotImplemented
        out = np.zeros(n, dtype=np.bool_)
        if op in ("lt", "lte", "neq"):
            out |= below
        if op in ("gt", "gte", "neq"):
            out |= above
        if len(rows):
            parts = [canonical_ints(take(c, rows), f"vortex.datetimeparts {nm}")
                     for c, nm in zip(arr.children, ("days", "seconds", "subseconds"))]
            with np.errstate(over="ignore"):
                t = parts[0].astype(np.int64) * np.int64(per_day)
                t += parts[1].astype(np.int64) * np.int64(d)
                t += parts[2].astype(np.int64)
            out[rows] = OPS[op](t, np.int64(value))
        return out, valid

    def take(self, arr: Array, indices: Any) -> Any:
        """Takes each part (each keeps its encoding)."""

        a = Array(self, arr.dtype, len(indices), metadata=arr.metadata,
                  children=[take(c, indices) for c in arr.children], meta=arr.meta)
        return a

    def describe(self, arr: Array) -> str:
        m = arr.meta
        return f"days={m.days_ptype.short}, seconds={m.seconds_ptype.short}, subseconds={m.subseconds_ptype.short}"

    def child_names(self, arr: Array) -> list[str]:
        return ["days", "seconds", "subseconds"]


DATETIMEPARTS = register_encoding(DateTimePartsEncoding())



def datetimeparts_encode(array: Array) -> Array:
    """Encode a ``vortex.timestamp`` array (s/ms/us/ns, any encoding) as
    ``vortex.datetimeparts`` (decodable by vortex-data 0.93).

    Timestamps are split with floor division, so seconds (0..86399) and subseconds
    (0..D-1) are never negative, and each part gets the narrowest integer type that holds
    its values (nulls count as 0). Validity goes with the days.
    """

    d = _ticks(array.dtype)
    storage = array.canonical()
    if storage.encoding == "vortex.ext":
        storage = storage.children[0]
    c = storage.canonical()
    if not (isinstance(c.dtype, dt.Primitive) and c.dtype.ptype == dt.PType.I64):
        raise TypeError(f"timestamps must be stored as i64, not {c.dtype!r}")
    vals, valid = primitive_values(c)
    n = len(vals)
    vals = vals.astype(np.int64) if valid is None else np.where(valid, vals, 0).astype(np.int64)
    per_day = SECONDS_PER_DAY * d
    days, rem = np.divmod(vals, np.int64(per_day))
    secs, subs = np.divmod(rem, np.int64(d))

    def part(x: np.ndarray, validity: Array | None = None, nullable: bool = False) -> tuple[Array, dt.PType]:
        p = narrowest_int(int(x.min()), int(x.max())) if n else dt.PType.U8
        return primitive_array(x.astype(p.np_dtype), validity, nullable=nullable), p

    days_a, dp = part(days, c.children[0] if c.children else None, array.dtype.nullable)
    secs_a, sp = part(secs)
    subs_a, up = part(subs)
    meta = ProtoWriter().varint(1, int(dp)).varint(2, int(sp)).varint(3, int(up)).finish()
    a = Array(DATETIMEPARTS, array.dtype, n, metadata=meta, children=[days_a, secs_a, subs_a],
              meta=DateTimePartsMeta(dp, sp, up))
    return a


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_datetimeparts(a: Array, params: Any = None) -> Array | None:
    return datetimeparts_encode(a)


def _estimate_datetimeparts(f: Facts, comp: Any) -> Trial | None:
    if not (isinstance(f.a.dtype, dt.Extension) and f.a.dtype.id == dt.TIMESTAMP_ID):
        return None
    r = _encode_datetimeparts(f.a)
    if r is None:
        return None
    size: float = 4 * NODE_COST
    for c in r.children:
        size += child_int_cost(c, compact=f.compact)
    return Trial(size, lambda: r)


register_scheme(Scheme("vortex.datetimeparts", frozenset({"ext"}), _estimate_datetimeparts, _encode_datetimeparts,
                       priority=40))
