"""``vortex.listview``: elements, offsets (n), sizes (n), optional validity."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._arrow import arrow_take
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ._common import canonical_ints, held, int_ptype_of, primitive, validity_mask, validity_spec
from ._list import arrow_list


class ListViewEncoding(Encoding):
    id = "vortex.listview"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        held(dtype, dt.List, self.id)

    def parse_metadata(self, raw, dtype, length):
        f = parse(raw, "ListViewMetadata")
        return (f.get_uint(1, 0), int_ptype_of(f.get_uint(2, 0), "vortex.listview offsets"),
                int_ptype_of(f.get_uint(3, 0), "vortex.listview sizes"))

    def child_specs(self, dtype: dt.DType, length, meta, parts: ArrayParts):
        elements_len, optype, sptype = meta
        element = held(dtype, dt.List, self.id).element
        return [(element, elements_len), (dt.Primitive(optype), length),
                (dt.Primitive(sptype), length),
                *validity_spec(self.id, dtype, length, parts.nchildren, 3)]

    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[3] if len(arr.children) > 3 else None, len(arr))

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        n = len(arr)
        offs = canonical_ints(arr.children[1], "vortex.listview offsets").astype(np.int64)
        sizes = canonical_ints(arr.children[2], "vortex.listview sizes").astype(np.int64)
        nel = min(len(arr.children[0]), 2**63 - 1)
        # (offs + sizes could wrap int64)
        if ((offs < 0) | (sizes < 0) | (offs > nel) | (sizes > nel - offs)).any():
            raise MalformedStreamError("vortex.listview: a list view falls outside its elements")
        elems = arr.children[0].to_arrow(string_view=string_view)
        if isinstance(elems, pa.ChunkedArray):
            elems = elems.combine_chunks()
        new_offs = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes, out=new_offs[1:])
        if n and (offs == new_offs[:-1] + offs[0]).all():
            # already contiguous: slice instead of gathering
            elems = elems.slice(int(offs[0]), int(new_offs[-1]))
        else:
            total = int(new_offs[-1])
            idx = np.arange(total, dtype=np.int64) - np.repeat(new_offs[:-1] - offs, sizes)
            elems = arrow_take(elems, idx)  # (views included: Arrow has no take for them)
        return arrow_list(arr, new_offs, elems, arr.children[3] if len(arr.children) > 3 else None)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        v = arr.children[3].slice(start, stop) if len(arr.children) > 3 else None
        return Array(self, arr.dtype, stop - start, metadata=arr.metadata,
                     children=[arr.children[0], arr.children[1].slice(start, stop),
                               arr.children[2].slice(start, stop), *([v] if v is not None else [])])

    def child_names(self, arr: Array) -> list[str]:
        return ["elements", "offsets", "sizes", "validity"]


LISTVIEW = register_encoding(ListViewEncoding())


def listview_array(dtype: dt.List, elements: Array, offsets: Array, sizes: Array,
                   validity: Array | None = None) -> Array:
    op = primitive(offsets.dtype, "vortex.listview offsets").ptype
    sp = primitive(sizes.dtype, "vortex.listview sizes").ptype
    meta = ProtoWriter().varint(1, len(elements)).varint(2, int(op)).varint(3, int(sp)).finish()
    return Array(LISTVIEW, dtype, len(offsets), metadata=meta,
                 children=[elements, offsets, sizes, *([validity] if validity is not None else [])])
