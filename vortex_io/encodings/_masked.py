"""``vortex.masked``: a non-nullable child plus a validity child that masks it."""

from __future__ import annotations

from typing import Any

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from ..compute._kernels import compare_storage, is_in_storage, take
from ..compute._numeric import int_bounds, with_validity
from ._common import arrow_validity, validity_mask, validity_spec


class MaskedEncoding(Encoding):
    id = "vortex.masked"

    def child_specs(self, dtype: dt.DType, length, meta, parts: ArrayParts):
        return [(dtype.with_nullable(False), length),
                *validity_spec(self.id, dtype, length, parts.nchildren, 1)]

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        child = arr.children[0].to_arrow(string_view=string_view)
        if isinstance(child, pa.ChunkedArray):
            child = child.combine_chunks()
        target = arr.dtype.to_arrow(string_view=string_view)
        if len(arr.children) < 2:
            return child.cast(target) if child.type != target else child
        n = len(arr)
        vbuf, _ = arrow_validity(arr.children[1], n)
        if vbuf is None:
            return child
        mask = pa.Array.from_buffers(pa.bool_(), n, [None, vbuf])
        t = child.type
        if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
            # (if_else has no kernel for the view types)
            flat = pa.large_string() if pa.types.is_string_view(t) else pa.large_binary()
            return pc.if_else(mask, child.cast(flat), pa.nulls(n, type=flat)).cast(t)
        return pc.if_else(mask, child, pa.nulls(n, type=t))

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        return Array(self, arr.dtype, stop - start, children=[c.slice(start, stop) for c in arr.children])

    # -- compute kernels: the child's, masked -------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[1] if len(arr.children) > 1 else None, len(arr))

    def int_bounds(self, arr: Array) -> tuple[int, int] | None:
        return int_bounds(arr.children[0])

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        vals, valid = compare_storage(arr.children[0], value, op)
        own = self.validity(arr)
        return with_validity(vals, own if valid is None or own is None else own & valid)

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        vals, valid = is_in_storage(arr.children[0], values)
        own = self.validity(arr)
        return with_validity(vals, own if valid is None or own is None else own & valid)

    def take(self, arr: Array, indices: Any) -> Any:
        return Array(self, arr.dtype, len(indices), children=[take(c, indices) for c in arr.children])

    def child_names(self, arr: Array) -> list[str]:
        return ["child", "validity"]


MASKED = register_encoding(MaskedEncoding())
