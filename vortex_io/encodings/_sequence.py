"""``vortex.sequence``: ``base + i * multiplier`` for i in ``[0, n)`` (integers only).

Wire layout (0.93): no buffers, no children; ``SequenceMetadata`` holds ``base`` (1) and
``multiplier`` (2) as ``ScalarValue`` messages (sint64 or uint64 for any integer type).
The dtype may be nullable, but every row is valid. As in vortex-data, the last value must
be representable: the sequence never overflows its type.

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> s = sequence_encode(primitive_array(np.arange(5, dtype=np.int32) * 3 + 10))
>>> s.encoding, s.meta, s.slice(2, 4).to_arrow().to_pylist()
('vortex.sequence', SequenceMeta(base=10, multiplier=3), [16, 19])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, Encoding, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from .._scalar import int_field, value_to_proto
from ..compute._numeric import FLIP, py_compare
from ._common import array_ptype, as_array, primitive
from ._primitive import primitive_array, primitive_values
from ._scheme import Facts, Scheme, Trial, register_scheme

__all__ = ["SequenceMeta", "sequence_array", "sequence_encode"]


def _int_range(p: dt.PType) -> tuple[int, int]:
    info = np.iinfo(p.np_dtype)
    return int(info.min), int(info.max)


def _scalar_int(raw: bytes | None, p: dt.PType, what: str) -> int:
    """An integer ScalarValue (field 3 sint64 or 4 uint64) that must fit ``p``."""
    if raw is None:
        raise MalformedStreamError(f"vortex.sequence: {what} is missing")
    name = f"vortex.sequence {what}"
    v = int_field(parse(raw, name), name)
    lo, hi = _int_range(p)
    if not lo <= v <= hi:
        raise MalformedStreamError(f"vortex.sequence: {what} {v} does not fit {p.short}")
    return v


@dataclass(frozen=True)
class SequenceMeta:
    """``SequenceMetadata``: 1 base ScalarValue; 2 multiplier ScalarValue."""

    base: int
    multiplier: int

    def encode(self, ptype: dt.PType) -> bytes:
        d = dt.Primitive(ptype)
        return (ProtoWriter().message(1, value_to_proto(d, self.base))
                .message(2, value_to_proto(d, self.multiplier)).finish())


class SequenceEncoding(Encoding):
    id = "vortex.sequence"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Primitive) or not dtype.ptype.is_int:
            raise MalformedStreamError(f"vortex.sequence holds integers, not {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> SequenceMeta:
        f = parse(raw, "SequenceMetadata")
        p = primitive(dtype, self.id).ptype
        return SequenceMeta(_scalar_int(f.get_bytes(1), p, "base"),
                            _scalar_int(f.get_bytes(2), p, "multiplier"))

    def validate(self, arr: Array, limits) -> None:
        from .._array import check_decoded_size

        m: SequenceMeta = arr.meta
        n = len(arr)
        p = array_ptype(arr)
        if n:
            last = m.base + (n - 1) * m.multiplier
            lo, hi = _int_range(p)
            if not lo <= last <= hi or n - 1 > hi:
                raise MalformedStreamError(
                    f"vortex.sequence: value {last} at row {n - 1} overflows {p.short}")
        check_decoded_size(n * p.byte_width, f"vortex.sequence of {n} rows", limits)

    def canonicalize(self, arr: Array) -> Array:
        m: SequenceMeta = arr.meta
        p = array_ptype(arr)
        t = p.np_dtype.type
        # validated: no step overflows, so arithmetic in the type itself is exact
        out = np.arange(len(arr), dtype=p.np_dtype)
        with np.errstate(over="ignore"):
            out *= t(m.multiplier)
            out += t(m.base)
        return primitive_array(out, nullable=arr.dtype.nullable, ptype=p)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        m: SequenceMeta = arr.meta
        if stop == start:  # vortex-data refuses empty sequences
            return arr.canonical().slice(0, 0)
        return sequence_array(m.base + start * m.multiplier, m.multiplier, stop - start, arr.dtype)

    # -- compute kernels: arithmetic ---------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return None

    def int_bounds(self, arr: Array) -> tuple[int, int] | None:
        m: SequenceMeta = arr.meta
        last = m.base + (len(arr) - 1) * m.multiplier
        return min(m.base, last), max(m.base, last)

    def _index_range(self, arr: Array, value: int, op: str) -> tuple[int, int, bool]:
        """Rows ``[a, b)`` where ``base + i * multiplier op value`` holds (``inside``
        True), or where it fails (``inside`` False: neq, and the mirrored ops)."""

        m: SequenceMeta = arr.meta
        n = len(arr)
        base, mult, v = m.base, m.multiplier, int(value)
        if mult < 0:  # mirror: -x is increasing; x op v <=> -x FLIP[op] -v
            base, mult, v, op = -base, -mult, -v, FLIP[op]
        if mult == 0:
            return (0, n, True) if py_compare(base, v, op) else (0, 0, True)
        # values are increasing: the first row >= v and the first row > v
        ge = min(max(-((base - v) // mult), 0), n)  # ceil((v - base) / mult)
        gt = min(max((v - base) // mult + 1, 0), n)
        return {"lt": (0, ge, True), "lte": (0, gt, True), "gt": (gt, n, True),
                "gte": (ge, n, True), "eq": (ge, gt, True), "neq": (ge, gt, False)}[op]

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        if not isinstance(value, int) or isinstance(value, bool):
            return NotImplemented
        a, b, inside = self._index_range(arr, value, op)
        out = np.full(len(arr), not inside, dtype=np.bool_)
        out[a:b] = inside
        return out, None

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        out = np.zeros(len(arr), dtype=np.bool_)
        for v in dict.fromkeys(values):
            if isinstance(v, int) and not isinstance(v, bool):
                a, b, _ = self._index_range(arr, v, "eq")
                out[a:b] = True
        return out, None

    def take(self, arr: Array, indices: Any) -> Any:
        m: SequenceMeta = arr.meta
        p = array_ptype(arr)
        t = p.np_dtype.type
        # validated: no value overflows, so wrapping arithmetic in the type is exact
        out = np.asarray(indices).astype(p.np_dtype)
        with np.errstate(over="ignore"):
            out *= t(m.multiplier)
            out += t(m.base)
        return primitive_array(out, nullable=arr.dtype.nullable, ptype=p)

    def describe(self, arr: Array) -> str:
        m: SequenceMeta = arr.meta
        return f"base={m.base}, multiplier={m.multiplier}"


SEQUENCE = register_encoding(SequenceEncoding())


def sequence_array(base: int, multiplier: int, length: int, dtype: dt.DType) -> Array:
    """A ``vortex.sequence`` array ``base + i * multiplier`` of an integer ``dtype``."""
    if not isinstance(dtype, dt.Primitive) or not dtype.ptype.is_int:
        raise TypeError(f"a sequence holds integers, not {dtype!r}")
    meta = SequenceMeta(int(base), int(multiplier))
    a = Array(SEQUENCE, dtype, length, metadata=meta.encode(dtype.ptype), meta=meta)
    return a


def sequence_encode(array: Any) -> Array | None:
    """A ``vortex.sequence`` for an integer array that is exactly ``base + i * step`` with
    ``step != 0`` (any step for one row); ``None`` otherwise (also for empty arrays,
    arrays with nulls, floats, and constant runs, which ``vortex.constant`` covers)."""

    arr = as_array(array)
    d = arr.dtype
    n = len(arr)
    if not isinstance(d, dt.Primitive) or not d.ptype.is_int or n == 0:
        return None
    vals, valid = primitive_values(arr.canonical())
    if valid is not None and not valid.all():
        return None
    base = int(vals[0])
    if n == 1:
        return sequence_array(base, 0, 1, d)
    step = int(vals[1]) - base
    lo, hi = _int_range(d.ptype)
    last = base + (n - 1) * step
    if step == 0 or not lo <= step <= hi or not lo <= last <= hi or n - 1 > hi:
        return None
    t = d.ptype.np_dtype.type
    with np.errstate(over="ignore"):
        expect = np.arange(n, dtype=d.ptype.np_dtype) * t(step) + t(base)
    if not np.array_equal(expect, vals):
        return None
    return sequence_array(base, step, n, d)


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_sequence(a: Array, params: Any = None) -> Array | None:
    if not _is_int(a):
        return None
    return sequence_encode(a)


def _estimate_sequence(f: Facts, comp: Any) -> Trial | None:
    if f.nulls or f.n < 2:
        return None
    k = f.key
    step = int(k[1]) - int(k[0])
    if step == 0 or int(k[-1]) - int(k[0]) != step * (f.n - 1):
        return None
    r = _encode_sequence(f.a)
    return None if r is None else Trial(0, lambda: r)


def _is_int(a: Array) -> bool:
    return isinstance(a.dtype, dt.Primitive) and a.dtype.ptype.is_int


register_scheme(Scheme("vortex.sequence", frozenset({"int"}), _estimate_sequence, _encode_sequence, cascade=False, exact=True,
                       priority=20))
