"""``vortex.masked``: a non-nullable child plus a validity child that masks it."""

from __future__ import annotations

from typing import Any

from .. import dtype as dt
from ..array import Array, ArrayParts, Encoding, register_encoding
from ._common import arrow_validity, validity_spec


class MaskedEncoding(Encoding):
    id = "vortex.masked"

    def child_specs(self, dtype: dt.DType, length, meta, parts: ArrayParts):
        return [(dtype.with_nullable(False), length),
                *validity_spec(self.id, dtype, length, parts.nchildren, 1)]

    def to_arrow(self, arr: Array) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        child = arr.children[0].to_arrow()
        if isinstance(child, pa.ChunkedArray):
            child = child.combine_chunks()
        target = arr.dtype.to_arrow()
        if len(arr.children) < 2:
            return child.cast(target) if child.type != target else child
        n = len(arr)
        vbuf, _ = arrow_validity(arr.children[1], n)
        if vbuf is None:
            return child
        mask = pa.Array.from_buffers(pa.bool_(), n, [None, vbuf])
        return pc.if_else(mask, child, pa.nulls(n, type=child.type))

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        return Array(self, arr.dtype, stop - start, children=[c.slice(start, stop) for c in arr.children])

    def child_names(self, arr: Array) -> list[str]:
        return ["child", "validity"]


MASKED = register_encoding(MaskedEncoding())
