"""``vortex.zigzag``: signed integers mapped to unsigned ones, ``u = (x << 1) ^ (x >> (W-1))``.

Wire form (vortex-data 0.93): empty metadata, no buffers, one child ``encoded`` of the
unsigned type of the same width with the node's nullability (it carries the validity).
Decoding is ``x = (u >> 1) ^ -(u & 1)``.

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> z = zigzag_encode(primitive_array(np.array([0, -1, 1, -2], dtype=np.int32)))
>>> z.children[0].to_pylist(), z.to_pylist()
([0, 1, 2, 3], [0, -1, 1, -2])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError
from ._bitpacked import empty_slice
from ._common import array_ptype, primitive
from ._primitive import primitive_array, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, packed_cost, register_scheme

__all__ = ["ZigZagEncoding", "ZIGZAG", "zigzag_array", "zigzag_encode", "zigzag_decode_values",
           "zigzag_encode_values"]


def zigzag_decode_values(u: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Unsigned zigzag codes to the signed values of the same width (into ``out``, an
    unsigned array of u's shape that may be ``u`` itself, or a new array)."""
    one = u.dtype.type(1)
    # -(u & 1) in unsigned arithmetic: 0 or all ones (in per-thread scratch)
    neg = np.empty(u.shape, dtype=u.dtype)
    np.bitwise_and(u, one, out=neg)
    np.negative(neg, out=neg)
    if out is None:
        out = _memory.empty(u.size, u.dtype).reshape(u.shape)
    np.right_shift(u, one, out=out)
    np.bitwise_xor(out, neg, out=out)
    return out.view(u.dtype.str.replace("u", "i"))


def zigzag_encode_values(x: np.ndarray) -> np.ndarray:
    """Signed values to their unsigned zigzag codes of the same width."""
    w = x.dtype.itemsize * 8
    ut = np.dtype(x.dtype.str.replace("i", "u"))
    return (x.view(ut) << ut.type(1)) ^ (x >> x.dtype.type(w - 1)).view(ut)


class ZigZagEncoding(Encoding):
    id = "vortex.zigzag"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Primitive) or not dtype.ptype.is_signed_int:
            raise MalformedStreamError(f"vortex.zigzag cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> None:
        if raw:
            raise MalformedStreamError(f"vortex.zigzag takes empty metadata, got {len(raw)} bytes")

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        if parts.nchildren != 1:
            raise MalformedStreamError(f"vortex.zigzag takes 1 child, got {parts.nchildren}")
        return [(dt.Primitive(primitive(dtype, self.id).ptype.to_unsigned(), dtype.nullable), length)]

    def canonicalize(self, arr: Array) -> Array:
        c = arr.children[0].canonical()
        up = array_ptype(arr).to_unsigned()
        if not isinstance(c.dtype, dt.Primitive) or c.dtype.ptype != up:
            raise MalformedStreamError(f"vortex.zigzag: encoded child decoded to {c.dtype!r}")
        vals, _ = primitive_values(c)
        validity = c.children[0] if c.children else None
        return primitive_array(zigzag_decode_values(vals), validity, nullable=arr.dtype.nullable)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        if stop == start:
            return empty_slice(arr)
        return zigzag_array(arr.children[0].slice(start, stop), arr.dtype)

    def child_names(self, arr: Array) -> list[str]:
        return ["encoded"]


ZIGZAG = register_encoding(ZigZagEncoding())


def zigzag_array(encoded: Array, dtype: dt.DType | None = None) -> Array:
    """A ``vortex.zigzag`` node over an unsigned ``encoded`` array."""
    if dtype is None:
        dtype = dt.Primitive(array_ptype(encoded).to_signed(), encoded.dtype.nullable)
    return Array(ZIGZAG, dtype, len(encoded), children=[encoded])


def zigzag_encode(array: Array, *, bitpack: bool = False) -> Array:
    """ZigZag-encode a signed integer array (the child is ``vortex.primitive``, or
    bit-packed with ``bitpack=True``). Nulls encode as 0."""
    c = array.canonical()
    if not isinstance(c.dtype, dt.Primitive) or not c.dtype.ptype.is_signed_int:
        raise TypeError(f"zigzag_encode needs a signed integer array, not {c.dtype!r}")
    vals, mask = primitive_values(c)
    u = zigzag_encode_values(vals)
    if mask is not None:
        u[~mask] = 0
    validity = c.children[0] if c.children else None
    enc = primitive_array(u, validity, nullable=c.dtype.nullable)
    if bitpack and len(c):  # vortex-data 0.93 panics on some empty bit-packed children
        from ._bitpacked import bitpack as _bitpack

        enc = _bitpack(enc)
    return zigzag_array(enc, c.dtype)


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_zigzag(a: Array, params: Any = None) -> Array | None:
    if not array_ptype(a).is_signed_int:
        return None
    return zigzag_encode(a)


def _estimate_zigzag(f: Facts, comp: Any) -> Trial | None:
    if f.lo is None or f.vkey.dtype.kind != "i" or f.lo >= 0:
        return None
    size = packed_cost(zigzag_encode_values(f.vkey), f.n) + f.validity_bytes + 2 * NODE_COST
    return Trial(size, lambda: _encode_zigzag(f.a))


register_scheme(Scheme("vortex.zigzag", frozenset({"int"}), _estimate_zigzag, _encode_zigzag,
                       priority=80))
