"""``fastlanes.for``: frame of reference, ``value = encoded + reference``.

Wire form (vortex-data 0.93): the metadata **is** the ``ScalarValue`` bytes of the
reference (a non-null integer of the node's dtype); no buffers; one child ``encoded`` of the
node's dtype and length (usually ``fastlanes.bitpacked``), which also carries the validity.
The addition wraps in the dtype's width (signed types add in their unsigned twin).

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> a = for_encode(primitive_array(np.array([1000, 1003, 1001], dtype=np.int64)))
>>> a.encoding, a.meta, a.children[0].encoding, a.children[0].meta.bit_width
('fastlanes.for', 1000, 'fastlanes.bitpacked', 2)
>>> a.to_pylist()
[1000, 1003, 1001]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError
from .._scalar import Scalar
from ..compute._kernels import compare_storage, is_in_storage, take, take_values
from ..compute._numeric import bound_answer, broadcast, int_bounds, validity
from . import _fastlanes_layout as fl
from ._bitpacked import empty_slice
from ._common import array_ptype
from ._primitive import primitive_array, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, as_unsigned, packed_cost, register_scheme

__all__ = ["FoREncoding", "FOR", "for_array", "for_encode"]


class FoREncoding(Encoding):
    id = "fastlanes.for"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Primitive) or not dtype.ptype.is_int:
            raise MalformedStreamError(f"fastlanes.for cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> int:
        """The reference value (a Python int in the dtype's range)."""
        self.check_dtype(dtype)
        if not raw:
            raise MalformedStreamError("fastlanes.for: the reference value is missing")
        v = Scalar.from_proto(dtype, raw).value
        if v is None:
            raise MalformedStreamError("fastlanes.for: the reference value is null")
        return int(v)

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        if parts.nchildren != 1:
            raise MalformedStreamError(f"fastlanes.for takes 1 child, got {parts.nchildren}")
        return [(dtype, length)]

    def canonicalize(self, arr: Array) -> Array:
        child = arr.children[0]
        p = array_ptype(arr)
        ut = fl.UNSIGNED[p.byte_width * 8]
        # a bit-packed child decodes into a fresh buffer: add in place without caching it
        fresh = child.encoding == "fastlanes.bitpacked"
        c = child.vtable.canonicalize(child) if fresh else child.canonical()
        if not isinstance(c.dtype, dt.Primitive) or c.dtype.ptype != p:
            raise MalformedStreamError(f"fastlanes.for: encoded child decoded to {c.dtype!r}")
        vals, _ = primitive_values(c)
        ref = ut.type(arr.meta & ((1 << (8 * p.byte_width)) - 1))
        u = vals.view(ut)
        if fresh and u.flags.writeable:
            np.add(u, ref, out=u)
        else:
            u = np.add(u, ref, out=_memory.empty(len(u), ut))
        validity = c.children[0] if c.children else None
        return primitive_array(u.view(p.np_dtype), validity, nullable=arr.dtype.nullable)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        if stop == start:
            return empty_slice(arr)
        return for_array(arr.children[0].slice(start, stop), arr.meta, arr.dtype)

    # -- compute kernels: translate the literal into the encoded domain -----------------
    def validity(self, arr: Array) -> Any:
        return validity(arr.children[0])

    def _encoded_bound(self, arr: Array) -> int | None:
        """Largest encoded value when ``value = reference + encoded`` never wraps and the
        encoded child reads the same signed or unsigned (so it can be compared directly);
        None otherwise."""

        b = int_bounds(arr.children[0])
        if b is None or b[0] < 0:
            return None
        hi = int(np.iinfo(array_ptype(arr).np_dtype).max)
        if arr.meta + b[1] > hi:
            return None
        return b[1]

    def int_bounds(self, arr: Array) -> tuple[int, int] | None:
        b = int_bounds(arr.children[0])
        if b is None or self._encoded_bound(arr) is None:
            return None
        return arr.meta + b[0], arr.meta + b[1]

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        if not isinstance(value, int) or isinstance(value, bool):
            return NotImplemented
        hi = self._encoded_bound(arr)
        if hi is None:
            return NotImplemented
        t = value - arr.meta
        ans = bound_answer(op, t, 0, hi)
        if ans is not None:  # the bit width (or the data) answers it: nothing to decode
            return broadcast(len(arr), ans, self.validity(arr))
        return compare_storage(arr.children[0], t, op)

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        hi = self._encoded_bound(arr)
        if hi is None:
            return NotImplemented
        ts = [v - arr.meta for v in values if isinstance(v, int) and not isinstance(v, bool)]
        return is_in_storage(arr.children[0], [t for t in ts if 0 <= t <= hi])

    def take(self, arr: Array, indices: Any) -> Any:
        """Takes the encoded child (random access into bit-packed values); the reference
        is added when the result is decoded."""

        return for_array(take(arr.children[0], indices), arr.meta, arr.dtype)

    def take_values(self, arr: Array, indices: np.ndarray) -> Any:
        vals, valid = take_values(arr.children[0], indices)
        p = array_ptype(arr)
        ut = fl.UNSIGNED[p.byte_width * 8]
        if vals.dtype.itemsize != ut.itemsize:
            raise MalformedStreamError(f"fastlanes.for: encoded child decoded to {vals.dtype}")
        ref = ut.type(arr.meta & ((1 << (8 * p.byte_width)) - 1))
        return np.add(vals.view(ut), ref).view(p.np_dtype), valid

    def describe(self, arr: Array) -> str:
        return f"reference={arr.meta}"

    def child_names(self, arr: Array) -> list[str]:
        return ["encoded"]


FOR = register_encoding(FoREncoding())


def for_array(encoded: Array, reference: int, dtype: dt.DType | None = None) -> Array:
    """A ``fastlanes.for`` node over ``encoded`` (of the node's dtype)."""
    d = dtype if dtype is not None else encoded.dtype
    meta = Scalar(d, int(reference)).to_proto()
    a = Array(FOR, d, len(encoded), metadata=meta, children=[encoded], meta=int(reference))
    return a


def for_encode(array: Array, *, bitpack: bool = True) -> Array:
    """Frame-of-reference encode an integer array: reference = min of the valid values
    (0 when there are none), encoded = value - reference (wrapping), then bit-packed
    (``bitpack=False`` keeps it ``vortex.primitive``). Nulls encode as 0."""
    c = array.canonical()
    if not isinstance(c.dtype, dt.Primitive) or not c.dtype.ptype.is_int:
        raise TypeError(f"for_encode needs an integer array, not {c.dtype!r}")
    p = c.dtype.ptype
    ut = fl.UNSIGNED[p.byte_width * 8]
    vals, mask = primitive_values(c)
    valid = vals if mask is None else vals[mask]
    ref = int(valid.min()) if len(valid) else 0
    u = vals.view(ut) - ut.type(ref & ((1 << (8 * p.byte_width)) - 1))
    if mask is not None:
        u[~mask] = 0
    validity = c.children[0] if c.children else None
    enc = primitive_array(u.view(p.np_dtype), validity, nullable=c.dtype.nullable)
    if bitpack and len(c):  # vortex-data 0.93 panics on an empty bit-packed FoR child
        from ._bitpacked import bitpack as _bitpack

        enc = _bitpack(enc)
    return for_array(enc, ref, c.dtype)


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_for(a: Array, params: Any = None) -> Array | None:
    return for_encode(a, bitpack=False)


def _estimate_for(f: Facts, comp: Any) -> Trial | None:
    if f.lo is None or f.lo == 0:
        return None  # reference 0: plain bit-packing is the same thing
    size = packed_cost(as_unsigned(f.vkey - f.lo), f.n) + f.validity_bytes + 2 * NODE_COST
    return Trial(size, lambda: _encode_for(f.a))


register_scheme(Scheme("fastlanes.for", frozenset({"int"}), _estimate_for, _encode_for,
                       priority=70))
