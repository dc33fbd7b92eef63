"""``vortex.decimal_byte_parts``: decimals whose unscaled values fit a signed integer type.

Wire layout (vortex-data 0.93): no buffers; metadata ``DecimalBytesPartsMetadata { 1:
zeroth_child_ptype, 2: lower_part_count (must be 0) }``; one child ``msp`` (the signed
integer type, the array's nullability, the array's length) holding the unscaled values.
The node's dtype is the Decimal itself; precision and scale are the dtype's.

Decoding: the msp values are the unscaled decimals; the canonical form is a
``vortex.decimal`` of the msp's width (i8..i64).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError, UnsupportedError
from .._proto import ProtoWriter, parse
from ..compute._kernels import compare_storage, is_in_storage, take
from ..compute._numeric import broadcast, decimal_unscaled, validity
from ._bool import bool_array
from ._common import held, ptype_of
from ._constant import constant_array
from ._primitive import primitive_array
from ._scheme import NODE_COST, Facts, Scheme, Trial, child_int_cost, register_scheme

__all__ = ["DecimalBytePartsEncoding", "decimal_byte_parts_encode"]

_SIGNED = (dt.PType.I8, dt.PType.I16, dt.PType.I32, dt.PType.I64)


class DecimalBytePartsMeta(NamedTuple):
    msp_ptype: dt.PType
    lower_part_count: int


class DecimalBytePartsEncoding(Encoding):
    id = "vortex.decimal_byte_parts"

    def check_dtype(self, dtype: dt.DType) -> None:
        held(dtype, dt.Decimal, self.id)

    def parse_metadata(self, raw: bytes, dtype, length) -> DecimalBytePartsMeta:
        f = parse(raw, "DecimalBytesPartsMetadata")
        p = ptype_of(f.get_uint(1, 0), "vortex.decimal_byte_parts msp")
        if p not in _SIGNED:
            raise MalformedStreamError(
                f"vortex.decimal_byte_parts: the msp must be a signed integer, not {p.short}")
        lower = f.get_uint(2, 0, bits=32)
        if lower:
            raise UnsupportedError(
                f"vortex.decimal_byte_parts with {lower} lower parts is not supported")
        return DecimalBytePartsMeta(p, 0)

    def child_specs(self, dtype, length, meta: DecimalBytePartsMeta, parts: ArrayParts):
        if parts.nchildren != 1:
            raise MalformedStreamError(
                f"vortex.decimal_byte_parts takes 1 child, got {parts.nchildren}")
        return [(dt.Primitive(meta.msp_ptype, dtype.nullable), length)]

    def canonicalize(self, arr: Array) -> Array:
        from ._decimal import decimal_array

        msp = arr.children[0].canonical()
        if not (isinstance(msp.dtype, dt.Primitive) and msp.dtype.ptype in _SIGNED):
            raise MalformedStreamError(
                f"vortex.decimal_byte_parts msp must be signed integers, not {msp.dtype!r}")
        if len(msp) != len(arr):
            raise MalformedStreamError("vortex.decimal_byte_parts msp does not match the array length")
        w = msp.dtype.ptype.byte_width
        validity = msp.children[0] if msp.children else None
        return decimal_array(held(arr.dtype, dt.Decimal, self.id), msp.buffers[0][: len(arr) * w], w,
                             validity)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        a = Array(self, arr.dtype, stop - start, metadata=arr.metadata,
                  children=[arr.children[0].slice(start, stop)], meta=arr.meta)
        return a

    # -- compute kernels: on the msp (the unscaled integers) ----------------------------
    def validity(self, arr: Array) -> Any:
        return validity(arr.children[0])

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        r = decimal_unscaled(held(arr.dtype, dt.Decimal, self.id), value, op)
        if r is None:
            return NotImplemented
        if isinstance(r, bool):
            return broadcast(len(arr), r, self.validity(arr))
        return compare_storage(arr.children[0], r[1], r[0])

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        d = held(arr.dtype, dt.Decimal, self.id)
        ints = []
        for v in values:
            r = decimal_unscaled(d, v, "eq")
            if isinstance(r, tuple):
                ints.append(r[1])
        return is_in_storage(arr.children[0], ints)

    def take(self, arr: Array, indices: Any) -> Any:
        a = Array(self, arr.dtype, len(indices), metadata=arr.metadata,
                  children=[take(arr.children[0], indices)], meta=arr.meta)
        return a

    def describe(self, arr: Array) -> str:
        return f"msp={arr.meta.msp_ptype.short}"

    def child_names(self, arr: Array) -> list[str]:
        return ["msp"]


DECIMAL_BYTE_PARTS = register_encoding(DecimalBytePartsEncoding())


def _decimal_ints(array: Array) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Unscaled values of a decimal array: (int64 values, or None when some do not fit in
    64 bits; validity mask or None). Null slots read as 0."""
    import pyarrow as pa

    a = array.to_arrow()
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks else pa.array([], type=a.type)
    n = len(a)
    w = a.type.byte_width
    valid = None
    if a.null_count:
        valid = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    if n == 0:
        return np.zeros(0, np.int64), None
    raw = np.frombuffer(a.buffers()[1], dtype=np.uint8)[a.offset * w : (a.offset + n) * w]
    if w <= 8:
        lo = raw.view(f"<i{w}").astype(np.int64)
        fits = np.ones(n, dtype=np.bool_)
    else:
        words = raw.reshape(n, w).view("<u8")
        lo = words[:, 0].view(np.int64)
        sign = (lo >> 63).view(np.uint64)  # all ones when negative
        fits = (words[:, 1:] == sign[:, None]).all(axis=1)
    if valid is not None:
        fits |= ~valid
        lo = np.where(valid, lo, 0)
    if not bool(fits.all()):
        return None, valid
    return np.ascontiguousarray(lo), valid


def decimal_byte_parts_encode(array: Array, ptype: dt.PType | None = None) -> Array:
    """Encode a decimal array as ``vortex.decimal_byte_parts`` (decodable by vortex-data
    0.93).

    The msp gets the narrowest signed type (i8..i64) holding the unscaled values, or
    ``ptype`` when given. Raises ``ValueError`` when the values do not fit an i64 (or
    ``ptype``).
    """

    if not isinstance(array.dtype, dt.Decimal):
        raise TypeError(f"expected a decimal array, not {array.dtype!r}")
    vals, valid = _decimal_ints(array)
    if vals is None:
        raise ValueError("decimal values do not fit in 64 bits; vortex.decimal_byte_parts cannot hold them")
    n = len(vals)
    lo, hi = (int(vals.min()), int(vals.max())) if n else (0, 0)
    if ptype is None:
        ptype = next(p for p in _SIGNED if -(1 << (8 * p.byte_width - 1)) <= lo and hi < (1 << (8 * p.byte_width - 1)))
    elif ptype not in _SIGNED:
        raise ValueError(f"the msp type must be a signed integer type, not {ptype.short}")
    else:
        b = 8 * ptype.byte_width - 1
        if lo < -(1 << b) or hi >= (1 << b):
            raise ValueError(f"decimal values do not fit in {ptype.short}")

    v = None
    if valid is not None:
        v = constant_array(False, n, dt.Bool()) if not valid.any() else bool_array(valid)
    msp = primitive_array(vals.astype(ptype.np_dtype), v, nullable=array.dtype.nullable)
    meta = ProtoWriter().varint(1, int(ptype)).finish()
    a = Array(DECIMAL_BYTE_PARTS, array.dtype, n, metadata=meta, children=[msp],
              meta=DecimalBytePartsMeta(ptype, 0))
    return a


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_decimal_byte_parts(a: Array, params: Any = None) -> Array | None:
    try:
        return decimal_byte_parts_encode(a)
    except ValueError:  # unscaled values wider than 64 bits
        return None


def _estimate_decimal_byte_parts(f: Facts, comp: Any) -> Trial | None:

    r = _encode_decimal_byte_parts(f.a)
    if r is None:
        return None
    size = child_int_cost(r.children[0], compact=f.compact)
    return Trial(size + NODE_COST, lambda: r)


register_scheme(Scheme("vortex.decimal_byte_parts", frozenset({"decimal"}), _estimate_decimal_byte_parts, _encode_decimal_byte_parts,
                       priority=30))
