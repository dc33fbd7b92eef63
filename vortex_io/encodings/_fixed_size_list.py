"""``vortex.fixed_size_list``: elements (n x size), optional validity."""

from __future__ import annotations

from typing import Any

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from ._common import arrow_validity, held, validity_mask, validity_spec


class FixedSizeListEncoding(Encoding):
    id = "vortex.fixed_size_list"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        held(dtype, dt.FixedSizeList, self.id)

    def child_specs(self, dtype: dt.DType, length, meta, parts: ArrayParts):
        d = held(dtype, dt.FixedSizeList, self.id)
        return [(d.element, length * d.size),
                *validity_spec(self.id, dtype, length, parts.nchildren, 1)]

    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[1] if len(arr.children) > 1 else None, len(arr))

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        n = len(arr)
        elems = arr.children[0].to_arrow(string_view=string_view)
        if isinstance(elems, pa.ChunkedArray):
            elems = elems.combine_chunks()
        d = held(arr.dtype, dt.FixedSizeList, self.id)
        t = pa.list_(pa.field("item", elems.type, d.element.nullable), d.size)
        validity, nulls = arrow_validity(arr.children[1] if len(arr.children) > 1 else None, n)
        return pa.Array.from_buffers(t, n, [validity], null_count=nulls, children=[elems])

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        s = held(arr.dtype, dt.FixedSizeList, self.id).size
        v = arr.children[1].slice(start, stop) if len(arr.children) > 1 else None
        return Array(self, arr.dtype, stop - start,
                     children=[arr.children[0].slice(start * s, stop * s), *([v] if v is not None else [])])

    def child_names(self, arr: Array) -> list[str]:
        return ["elements", "validity"]


FIXED_SIZE_LIST = register_encoding(FixedSizeListEncoding())


def fixed_size_list_array(dtype: dt.FixedSizeList, length: int, elements: Array,
                          validity: Array | None = None) -> Array:
    return Array(FIXED_SIZE_LIST, dtype, length,
                 children=[elements, *([validity] if validity is not None else [])])
