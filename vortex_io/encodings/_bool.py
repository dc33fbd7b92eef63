"""``vortex.bool``: LSB-first bits starting at a bit offset (< 8), plus optional validity."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ..compute._numeric import bool_compare, with_validity
from ._common import arrow_validity, pack_bits, unpack_bits, validity_mask, validity_spec


class BoolEncoding(Encoding):
    id = "vortex.bool"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Bool):
            raise MalformedStreamError(f"vortex.bool cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> int:
        off = parse(raw, "BoolMetadata").get_uint(1, 0, bits=32)
        if off >= 8:
            raise MalformedStreamError(f"vortex.bool bit offset {off} is not below 8")
        return off

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 1)

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        return validity_spec(self.id, dtype, length, parts.nchildren, 0)

    def validate(self, arr: Array, limits) -> None:
        need = (arr.meta + len(arr) + 7) >> 3
        if arr.buffers[0].nbytes < need:
            raise MalformedStreamError(
                f"vortex.bool buffer of {arr.buffers[0].nbytes} bytes holds fewer than {len(arr)} bits"
            )

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        n = len(arr)
        validity, nulls = arrow_validity(arr.children[0] if arr.children else None, n)
        return pa.Array.from_buffers(pa.bool_(), n, [validity, pa.py_buffer(bool_bitmap(arr))],
                                     null_count=nulls)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        off = arr.meta + start
        buf = arr.buffers[0][off >> 3 : (off + (stop - start) + 7) >> 3]
        v = arr.children[0].slice(start, stop) if arr.children else None
        return bool_array_from_bits(buf, off & 7, stop - start, v, arr.dtype.nullable)

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[0] if arr.children else None, len(arr))

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        if not isinstance(value, (bool, np.bool_)):
            return NotImplemented
        return with_validity(bool_compare(bool_values(arr), value, op), self.validity(arr))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        want = {bool(v) for v in values if isinstance(v, (bool, np.bool_))}
        vals = bool_values(arr)
        if want == {True, False}:
            r = np.ones(len(arr), dtype=np.bool_)
        elif want == {True}:
            r = vals.copy()
        elif want == {False}:
            r = ~vals
        else:
            r = np.zeros(len(arr), dtype=np.bool_)
        return with_validity(r, self.validity(arr))

    def take(self, arr: Array, indices: np.ndarray) -> Any:
        valid = self.validity(arr)
        v = None if valid is None else bool_array(valid[indices])
        return bool_array(bool_values(arr)[indices], v, arr.dtype.nullable)

    def describe(self, arr: Array) -> str:
        return f"offset={arr.meta}" if arr.meta else ""

    def child_names(self, arr: Array) -> list[str]:
        return ["validity"]


BOOL = register_encoding(BoolEncoding())


def bool_array_from_bits(bits: np.ndarray, offset: int, n: int, validity: Array | None = None,
                         nullable: bool = False) -> Array:
    meta = ProtoWriter().varint(1, offset).finish()
    a = Array(BOOL, dt.Bool(nullable or validity is not None), n, metadata=meta, buffers=[bits],
              children=[validity] if validity is not None else [], meta=offset)
    return a


def bool_array(mask: np.ndarray, validity: Array | None = None, nullable: bool = False) -> Array:
    mask = np.asarray(mask, dtype=np.bool_)
    return bool_array_from_bits(pack_bits(mask), 0, len(mask), validity, nullable)


def bool_values(arr: Array) -> np.ndarray:
    """The values of a canonical bool array as numpy bools (nulls not applied)."""
    return unpack_bits(arr.buffers[0], arr.meta, len(arr))


def bool_bitmap(arr: Array) -> np.ndarray:
    """The bits of a vortex.bool array re-based to bit offset 0 (zero-copy when already)."""
    n = len(arr)
    nbytes = (n + 7) >> 3
    if arr.meta == 0:
        return arr.buffers[0][:nbytes]
    return pack_bits(bool_values(arr))


def bool_values_or_const(v: Array) -> np.ndarray | bool:
    """Values of a bool array; a plain bool for a constant (validity children)."""
    if v.encoding == "vortex.constant":
        from ._constant import constant_value

        val = constant_value(v)
        return bool(val) if val is not None else False
    c = v.canonical()
    if c.encoding != "vortex.bool":
        raise MalformedStreamError(f"a validity child must be boolean, not {c.encoding}")
    vals = bool_values(c)
    m = validity_mask(c.children[0] if c.children else None, len(c))
    return vals if m is None else vals & m


def bool_bitmap_or_const(v: Array) -> np.ndarray | bool:
    """Like ``bool_values_or_const`` but as an offset-0 bit buffer."""
    if v.encoding == "vortex.constant":
        return bool_values_or_const(v)
    c = v.canonical()
    if c.encoding != "vortex.bool":
        raise MalformedStreamError(f"a validity child must be boolean, not {c.encoding}")
    if c.children:
        return pack_bits(bool_values_or_const(c))  # type: ignore[arg-type]
    return bool_bitmap(c)


