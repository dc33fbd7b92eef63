"""``vortex.struct``: one child per field (each of the struct's length); validity first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, LazyChildren, register_encoding
from .._errors import MalformedStreamError
from ..compute._kernels import take
from ._common import BOOL, arrow_validity, held, validity_mask


class StructEncoding(Encoding):
    id = "vortex.struct"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        held(dtype, dt.Struct, self.id)

    def child_specs(self, dtype: dt.DType, length, meta, parts: ArrayParts):
        dtypes = held(dtype, dt.Struct, self.id).dtypes
        nf = len(dtypes)
        fields = [(d, length) for d in dtypes]
        if parts.nchildren == nf:
            return fields
        if parts.nchildren == nf + 1:
            if not dtype.nullable:
                raise MalformedStreamError("vortex.struct: validity child on a non-nullable struct")
            return [(BOOL, length), *fields]
        raise MalformedStreamError(
            f"vortex.struct has {parts.nchildren} children for {nf} fields"
        )

    @staticmethod
    def _first_field(arr: Array) -> int:
        """The index of the first field among the children (1 after a validity child)."""
        nf = len(held(arr.dtype, dt.Struct, "vortex.struct").dtypes)
        return 1 if len(arr.children) == nf + 1 else 0

    @classmethod
    def split(cls, arr: Array) -> tuple[Array | None, Sequence[Array] | LazyChildren]:
        """(validity or None, the fields)."""
        if cls._first_field(arr):
            return arr.children[0], arr.children[1:]
        return None, arr.children

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        n = len(arr)
        st = held(arr.dtype, dt.Struct, self.id)
        validity, fields = self.split(arr)
        vbuf, nulls = arrow_validity(validity, n)
        children = [f.to_arrow(string_view=string_view) for f in fields]
        children = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in children]
        t = pa.struct([pa.field(nm, c.type, d.nullable)
                       for nm, c, d in zip(st.names, children, st.dtypes)])
        return pa.Array.from_buffers(t, n, [vbuf], null_count=nulls, children=children)

    def struct_field(self, arr: Array, name: str) -> Array:
        try:
            i = held(arr.dtype, dt.Struct, self.id).names.index(name)
        except ValueError:
            raise KeyError(name) from None
        # that child alone: a scan's lazily built root builds (and checks) neither the
        # struct's validity nor the other fields for it, as the native core does not
        return arr.children[self._first_field(arr) + i]

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        return Array(self, arr.dtype, stop - start, children=[c.slice(start, stop) for c in arr.children])

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(self.split(arr)[0], len(arr))

    def take(self, arr: Array, indices: Any) -> Any:
        """Every field (and the validity) taken on its own, keeping their encodings."""

        v, fields = self.split(arr)
        return struct_array(held(arr.dtype, dt.Struct, self.id), len(indices),
                            [take(f, indices) for f in fields],
                            None if v is None else take(v, indices))

    def child_names(self, arr: Array) -> list[str]:
        v, _ = self.split(arr)
        names = held(arr.dtype, dt.Struct, self.id).names
        return (["validity"] if v is not None else []) + list(names)


STRUCT = register_encoding(StructEncoding())


def struct_array(dtype: dt.Struct, length: int, fields: list[Array], validity: Array | None = None
                 ) -> Array:
    return Array(STRUCT, dtype, length, children=[*([validity] if validity is not None else []), *fields])
