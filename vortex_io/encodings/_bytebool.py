"""``vortex.bytebool``: booleans stored one byte per value (non-zero is true).

Wire layout (0.93): empty metadata; buffer 0 holds exactly n bytes; optional validity
child. vortex-data's compressor never emits it, but reads it.

>>> import numpy as np
>>> b = bytebool_encode(np.array([True, False, True]))
>>> b.encoding, b.buffers[0].tolist(), b.to_arrow().to_pylist()
('vortex.bytebool', [1, 0, 1], [True, False, True])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError, UnsupportedError
from ._bool import bool_array, bool_values
from ._common import as_array, validity_spec

__all__ = ["bytebool_array", "bytebool_encode"]


class ByteBoolEncoding(Encoding):
    id = "vortex.bytebool"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Bool):
            raise MalformedStreamError(f"vortex.bytebool holds booleans, not {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> None:
        if raw:
            raise MalformedStreamError(f"vortex.bytebool takes no metadata, got {len(raw)} bytes")

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 1)

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        return validity_spec(self.id, dtype, length, parts.nchildren, 0)

    def validate(self, arr: Array, limits) -> None:
        if arr.buffers[0].nbytes != len(arr):
            raise MalformedStreamError(
                f"vortex.bytebool buffer is {arr.buffers[0].nbytes} bytes for {len(arr)} values")

    def canonicalize(self, arr: Array) -> Array:
        vals = arr.buffers[0][: len(arr)] != 0
        return bool_array(vals, arr.children[0] if arr.children else None, nullable=arr.dtype.nullable)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        v = arr.children[0].slice(start, stop) if arr.children else None
        return bytebool_array(arr.buffers[0][start:stop], v, arr.dtype.nullable)

    def child_names(self, arr: Array) -> list[str]:
        return ["validity"]


BYTEBOOL = register_encoding(ByteBoolEncoding())


def bytebool_array(values: np.ndarray, validity: Array | None = None, nullable: bool = False) -> Array:
    """A ``vortex.bytebool`` array over one byte per value (bools or uint8)."""
    buf = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
    return Array(BYTEBOOL, dt.Bool(nullable or validity is not None), len(buf), buffers=[buf],
                 children=[validity] if validity is not None else [])


def bytebool_encode(array: Any) -> Array:
    """A bool array (``vortex_io.Array``, Arrow or numpy bools) as ``vortex.bytebool``;
    validity is kept as it is."""

    if isinstance(array, np.ndarray):
        return bytebool_array(array.astype(np.bool_, copy=False))
    arr = as_array(array)
    if not isinstance(arr.dtype, dt.Bool):
        raise UnsupportedError(f"bytebool encodes booleans, not {arr.dtype!r}")
    c = arr.canonical()
    return bytebool_array(bool_values(c), c.children[0] if c.children else None, arr.dtype.nullable)
