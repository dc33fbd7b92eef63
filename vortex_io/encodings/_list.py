"""``vortex.list``: elements, offsets (n + 1), optional validity."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._proto import ProtoWriter, parse
from ._common import (
    arrow_validity,
    canonical_ints,
    held,
    int_ptype_of,
    primitive,
    validity_mask,
    validity_spec,
)
from ._varbin import arrow_offsets, check_offsets


def arrow_list(arr: Array, offsets: np.ndarray, elems: Any, validity: Array | None) -> Any:
    """The Arrow list (or large list, as ``offsets`` need) of the n + 1 ``offsets`` into
    the Arrow array ``elems``, with ``arr``'s length, element nullability and validity."""
    import pyarrow as pa

    n = len(arr)
    offs, large = arrow_offsets(offsets)
    field = pa.field("item", elems.type, held(arr.dtype, dt.List, arr.encoding).element.nullable)
    t = pa.large_list(field) if large else pa.list_(field)
    vbuf, nulls = arrow_validity(validity, n)
    return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(offs)], null_count=nulls,
                                 children=[elems])


class ListEncoding(Encoding):
    id = "vortex.list"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        held(dtype, dt.List, self.id)

    def parse_metadata(self, raw, dtype, length) -> tuple[int, dt.PType]:
        f = parse(raw, "ListMetadata")
        return f.get_uint(1, 0), int_ptype_of(f.get_uint(2, 0), "vortex.list offsets")

    def child_specs(self, dtype: dt.DType, length, meta, parts: ArrayParts):
        elements_len, optype = meta
        element = held(dtype, dt.List, self.id).element
        return [(element, elements_len), (dt.Primitive(optype), length + 1),
                *validity_spec(self.id, dtype, length, parts.nchildren, 2)]

    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[2] if len(arr.children) > 2 else None, len(arr))

    def offsets(self, arr: Array) -> np.ndarray:
        return arr.memo("offsets", lambda: _checked_offsets(arr))

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        offs = self.offsets(arr)
        elems = arr.children[0].to_arrow(string_view=string_view)
        if isinstance(elems, pa.ChunkedArray):
            elems = elems.combine_chunks()
        return arrow_list(arr, offs, elems, arr.children[2] if len(arr.children) > 2 else None)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        v = arr.children[2].slice(start, stop) if len(arr.children) > 2 else None
        return Array(self, arr.dtype, stop - start, metadata=arr.metadata,
                     children=[arr.children[0], arr.children[1].slice(start, stop + 1),
                               *([v] if v is not None else [])])

    def describe(self, arr: Array) -> str:
        return f"offsets={arr.meta[1].short}"

    def child_names(self, arr: Array) -> list[str]:
        return ["elements", "offsets", "validity"]


def _checked_offsets(arr: Array) -> np.ndarray:
    o = canonical_ints(arr.children[1], "vortex.list offsets")
    check_offsets(o, len(arr.children[0]), "vortex.list")
    return o


LIST = register_encoding(ListEncoding())


def list_array(dtype: dt.List, elements: Array, offsets: Array, validity: Array | None = None
               ) -> Array:
    p = primitive(offsets.dtype, "vortex.list offsets").ptype
    meta = ProtoWriter().varint(1, len(elements)).varint(2, int(p)).finish()
    a = Array(LIST, dtype, len(offsets) - 1, metadata=meta,
              children=[elements, offsets, *([validity] if validity is not None else [])],
              meta=(len(elements), p))
    return a
