"""``vortex.decimal``: unscaled integers (i8..i256) whose scale and precision are the dtype's."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as dt
from ..array import Array, ArrayParts, Encoding, register_encoding
from ..errors import MalformedStreamError
from ..proto import ProtoWriter, parse
from ._common import arrow_validity, validity_spec

# DecimalType enum -> byte width
WIDTHS = {0: 1, 1: 2, 2: 4, 3: 8, 4: 16, 5: 32}
_TYPE_OF_WIDTH = {w: t for t, w in WIDTHS.items()}


class DecimalEncoding(Encoding):
    id = "vortex.decimal"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Decimal):
            raise MalformedStreamError(f"vortex.decimal cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> int:
        t = parse(raw, "DecimalMetadata").get_uint(1, 0)
        if t not in WIDTHS:
            raise MalformedStreamError(f"vortex.decimal: unknown values type {t}")
        return WIDTHS[t]  # byte width

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 1)

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        return validity_spec(self.id, dtype, length, parts.nchildren, 0)

    def validate(self, arr: Array, limits) -> None:
        need = len(arr) * arr.meta
        if arr.buffers[0].nbytes != need:
            raise MalformedStreamError(
                f"vortex.decimal buffer is {arr.buffers[0].nbytes} bytes, needs {need}"
            )

    def buffer_alignments(self, arr: Array) -> list[int]:
        return [min(arr.meta, 16).bit_length() - 1]

    def to_arrow(self, arr: Array) -> Any:
        import pyarrow as pa

        n = len(arr)
        width = arr.meta
        target = arr.dtype.to_arrow()
        tw = 16 if target.byte_width == 16 else target.byte_width
        if width == tw:
            data = arr.buffers[0]
        else:
            data = resize_decimal_words(arr.buffers[0], n, width, tw)
        validity, nulls = arrow_validity(arr.children[0] if arr.children else None, n)
        return pa.Array.from_buffers(target, n, [validity, pa.py_buffer(data)], null_count=nulls)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        w = arr.meta
        v = arr.children[0].slice(start, stop) if arr.children else None
        a = Array(self, arr.dtype, stop - start, metadata=arr.metadata,
                  buffers=[arr.buffers[0][start * w : stop * w]], children=[v] if v is not None else [])
        return a

    def describe(self, arr: Array) -> str:
        return f"i{8 * arr.meta}"

    def child_names(self, arr: Array) -> list[str]:
        return ["validity"]


DECIMAL = register_encoding(DecimalEncoding())


def resize_decimal_words(buf: np.ndarray, n: int, width: int, target: int) -> np.ndarray:
    """Sign-extend or truncate little-endian two's-complement integers to ``target`` bytes."""
    if width <= 8:
        src = typed_buffer_raw(buf, width, n).astype(np.int64)
        words = np.empty((n, target // 8), dtype=np.int64)
        words[:, 0] = src
        words[:, 1:] = (src >> 63)[:, None]
        return words.reshape(-1).view(np.uint8)
    raw = buf[: n * width].reshape(n, width)
    if target < width:
        return np.ascontiguousarray(raw[:, :target]).reshape(-1)
    out = np.empty((n, target), dtype=np.uint8)
    out[:, :width] = raw
    sign = (raw[:, width - 1] >> 7).astype(np.uint8) * np.uint8(0xFF)
    out[:, width:] = sign[:, None]
    return out.reshape(-1)


def typed_buffer_raw(buf: np.ndarray, width: int, n: int) -> np.ndarray:
    from ..array import typed_view

    return typed_view(buf, np.dtype(f"<i{width}"), n, "vortex.decimal")


def decimal_array(dtype: dt.Decimal, data: np.ndarray, width: int, validity: Array | None) -> Array:
    """A ``vortex.decimal`` array over ``data`` (n x width little-endian bytes)."""
    meta = ProtoWriter().varint(1, _TYPE_OF_WIDTH[width]).finish()
    n = data.nbytes // width
    a = Array(DECIMAL, dtype, n, metadata=meta, buffers=[data.reshape(-1).view(np.uint8)],
              children=[validity] if validity is not None else [])
    a._cache["meta"] = width
    return a


