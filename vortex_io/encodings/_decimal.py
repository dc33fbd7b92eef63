"""``vortex.decimal``: unscaled integers (i8..i256) whose scale and precision are the dtype's."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding, typed_view
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ..compute._kernels import int_range_shortcut
from ..compute._numeric import (
    OPS,
    bound_answer,
    broadcast,
    decimal_unscaled,
    isin_values,
    with_validity,
)
from ._bool import bool_array
from ._common import arrow_validity, validity_mask, validity_spec

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

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
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

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[0] if arr.children else None, len(arr))

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        """On the unscaled integers (widths up to 8 bytes; wider ones fall back)."""

        w = arr.meta
        if w > 16:
            return NotImplemented
        r = decimal_unscaled(cast(dt.Decimal, arr.dtype), value, op)
        if r is None:
            return NotImplemented
        n = len(arr)
        valid = self.validity(arr)
        if isinstance(r, bool):
            return broadcast(n, r, valid)
        if w == 16:
            return with_validity(_compare_i128(arr.buffers[0], n, r[1], r[0]), valid)
        p = _INT_PTYPE[w]
        r2 = int_range_shortcut(p, r[1], r[0])
        if isinstance(r2, bool):
            return broadcast(n, r2, valid)
        op2, iv = r2
        vals = typed_buffer_raw(arr.buffers[0], w, n)
        return with_validity(OPS[op2](vals, p.np_dtype.type(iv)), valid)

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        w = arr.meta
        if w > 16:
            return NotImplemented  # (Arrow's is_in on i256 decimals)
        ints = []
        for v in values:
            r = decimal_unscaled(cast(dt.Decimal, arr.dtype), v, "eq")
            if isinstance(r, tuple):
                ints.append(r[1])
        if w == 16:
            if len(ints) > 16:
                return NotImplemented
            out = np.zeros(len(arr), dtype=np.bool_)
            for x in dict.fromkeys(ints):
                out |= _compare_i128(arr.buffers[0], len(arr), x, "eq")
            return with_validity(out, self.validity(arr))
        vals = typed_buffer_raw(arr.buffers[0], w, len(arr))
        return with_validity(isin_values(vals, _INT_PTYPE[w], ints), self.validity(arr))

    def take(self, arr: Array, indices: Any) -> Any:
        w = arr.meta
        n = len(arr)
        raw = arr.buffers[0][: n * w].reshape(n, w)[indices]
        valid = self.validity(arr)
        v = None if valid is None else bool_array(valid[indices])
        return decimal_array(cast(dt.Decimal, arr.dtype), np.ascontiguousarray(raw).reshape(-1), w, v)

    def describe(self, arr: Array) -> str:
        return f"i{8 * arr.meta}"

    def child_names(self, arr: Array) -> list[str]:
        return ["validity"]


DECIMAL = register_encoding(DecimalEncoding())


_INT_PTYPE = {1: dt.PType.I8, 2: dt.PType.I16, 4: dt.PType.I32, 8: dt.PType.I64}


def _compare_i128(buf: np.ndarray, n: int, value: int, op: str) -> np.ndarray:
    """``x op value`` on n little-endian two's-complement 128-bit integers, as (signed
    high word, unsigned low word) pairs."""

    ans = bound_answer(op, value, -(2**127), 2**127 - 1)
    if ans is not None and not -(2**127) <= value < 2**127:
        return np.full(n, ans, dtype=np.bool_)
    words = typed_view(buf, np.dtype("<u8"), 2 * n, "vortex.decimal").reshape(n, 2)
    lo, hi = words[:, 0], words[:, 1].view(np.int64)
    h, lw = np.int64(value >> 64), np.uint64(value & (2**64 - 1))
    if op in ("eq", "neq"):
        eq = (hi == h) & (lo == lw)
        return eq if op == "eq" else ~eq
    strict = {"lt": "lt", "lte": "lt", "gt": "gt", "gte": "gt"}[op]
    return OPS[strict](hi, h) | ((hi == h) & OPS[op](lo, lw))


def resize_decimal_words(buf: np.ndarray, n: int, width: int, target: int) -> np.ndarray:
    """Sign-extend or truncate little-endian two's-complement integers to ``target`` bytes."""
    if width <= 8:
        # (written in place into a pool buffer: no full-size temporaries)
        words = _memory.empty(n * (target // 8), np.int64).reshape(n, target // 8)
        words[:, 0] = typed_buffer_raw(buf, width, n)
        if target > 8:
            np.right_shift(words[:, 0], 63, out=words[:, 1])
            words[:, 2:] = words[:, 1:2]
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
    from .._array import typed_view

    return typed_view(buf, np.dtype(f"<i{width}"), n, "vortex.decimal")


def decimal_array(dtype: dt.Decimal, data: np.ndarray, width: int, validity: Array | None) -> Array:
    """A ``vortex.decimal`` array over ``data`` (n x width little-endian bytes)."""
    meta = ProtoWriter().varint(1, _TYPE_OF_WIDTH[width]).finish()
    n = data.nbytes // width
    a = Array(DECIMAL, dtype, n, metadata=meta, buffers=[data.reshape(-1).view(np.uint8)],
              children=[validity] if validity is not None else [], meta=width)
    return a


