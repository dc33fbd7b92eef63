"""``vortex.primitive``: n little-endian values of the dtype's primitive type."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError
from ..compute._numeric import compare_values, isin_values, with_validity
from ._bool import bool_array
from ._common import (
    array_ptype,
    arrow_validity,
    log2_width,
    typed_buffer,
    validity_mask,
    validity_spec,
)


class PrimitiveEncoding(Encoding):
    id = "vortex.primitive"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Primitive):
            raise MalformedStreamError(f"vortex.primitive cannot hold {dtype!r}")

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 1)

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        return validity_spec(self.id, dtype, length, parts.nchildren, 0)

    def validate(self, arr: Array, limits) -> None:
        p = array_ptype(arr)
        need = len(arr) * p.byte_width
        if arr.buffers[0].nbytes != need:
            raise MalformedStreamError(
                f"vortex.primitive buffer is {arr.buffers[0].nbytes} bytes, "
                f"{len(arr)} x {p.short} needs {need}"
            )

    def buffer_alignments(self, arr: Array) -> list[int]:
        return [log2_width(array_ptype(arr))]

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        n = len(arr)
        vals = primitive_raw(arr)
        validity, nulls = arrow_validity(arr.children[0] if arr.children else None, n)
        return pa.Array.from_buffers(arr.dtype.to_arrow(), n, [validity, pa.py_buffer(vals)],
                                     null_count=nulls)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        w = array_ptype(arr).byte_width
        v = arr.children[0].slice(start, stop) if arr.children else None
        return Array(self, arr.dtype, stop - start, buffers=[arr.buffers[0][start * w : stop * w]],
                     children=[v] if v is not None else [])

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[0] if arr.children else None, len(arr))

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        r = compare_values(primitive_raw(arr), array_ptype(arr), value, op)
        if r is None:
            return NotImplemented
        return with_validity(r, self.validity(arr))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        return with_validity(isin_values(primitive_raw(arr), array_ptype(arr), values),
                             self.validity(arr))

    def take(self, arr: Array, indices: np.ndarray) -> Any:
        vals, valid = self.take_values(arr, indices)
        v = None if valid is None else bool_array(valid)
        return primitive_array(vals, v, nullable=arr.dtype.nullable, ptype=array_ptype(arr))

    def take_values(self, arr: Array, indices: np.ndarray) -> Any:
        vals, valid = primitive_values(arr)
        return vals[indices], None if valid is None else valid[indices]

    def int_bounds(self, arr: Array) -> tuple[int, int] | None:
        if not array_ptype(arr).is_int:
            return None
        vals = primitive_raw(arr)
        return int(vals.min()), int(vals.max())

    def child_names(self, arr: Array) -> list[str]:
        return ["validity"]


PRIMITIVE = register_encoding(PrimitiveEncoding())


def primitive_raw(arr: Array) -> np.ndarray:
    """The values of a canonical primitive array as a typed numpy view (nulls not applied)."""
    return typed_buffer(arr, 0, array_ptype(arr).np_dtype, len(arr))


def primitive_values(arr: Array) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, validity mask or None) of a canonical primitive array."""
    return primitive_raw(arr), validity_mask(arr.children[0] if arr.children else None, len(arr))


def primitive_array(values: np.ndarray, validity: Array | None = None, *,
                    nullable: bool | None = None, ptype: dt.PType | None = None) -> Array:
    """A ``vortex.primitive`` array over a numpy array (zero-copy when contiguous)."""
    if type(values) is not np.ndarray or values.ndim != 1 or not values.flags.c_contiguous:
        values = np.ascontiguousarray(values).reshape(-1)
    p = ptype if ptype is not None else dt.PType.from_numpy(values.dtype)
    npd = p.np_dtype
    if values.dtype != npd:
        values = values.astype(npd)
    if nullable is None:
        nullable = validity is not None
    return Array(PRIMITIVE, dt.Primitive(p, nullable), len(values),
                 buffers=(values.view(np.uint8),),
                 children=(validity,) if validity is not None else ())
