"""``vortex.varbinview``: 16-byte views (the Arrow string_view layout) over data buffers.

Buffers 0..k-1 hold data; the last buffer holds the views. A view is ``u32 len`` then
either 12 inline bytes (len <= 12) or a 4-byte prefix, ``u32 buffer index``, ``u32 offset``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError
from ..compute._numeric import bytes_equal_at
from ._bool import bool_array
from ._common import arrow_validity, validity_mask, validity_spec
from ._varbin import StringEqualityKernels


class VarBinViewEncoding(StringEqualityKernels, Encoding):
    id = "vortex.varbinview"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, (dt.Utf8, dt.Binary)):
            raise MalformedStreamError(f"vortex.varbinview cannot hold {dtype!r}")

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 65_535)

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        return validity_spec(self.id, dtype, length, parts.nchildren, 0)

    def validate(self, arr: Array, limits) -> None:
        if arr.buffers[-1].nbytes != 16 * len(arr):
            raise MalformedStreamError(
                f"vortex.varbinview views buffer is {arr.buffers[-1].nbytes} bytes for {len(arr)} rows"
            )

    def buffer_alignments(self, arr: Array) -> list[int]:
        return [0] * (len(arr.buffers) - 1) + [4]

    def views(self, arr: Array) -> np.ndarray:
        """The views as an (n, 4) u32 array, checked against the data buffers."""
        return arr.memo("views", lambda: self._checked_views(arr))

    def _checked_views(self, arr: Array) -> np.ndarray:
        from .._array import typed_view

        n = len(arr)
        v = typed_view(arr.buffers[-1], np.dtype("<u4"), 4 * n, self.id).reshape(n, 4)
        lens = v[:, 0].astype(np.int64)
        out = lens > 12
        if out.any():
            data_lens = np.array([b.nbytes for b in arr.buffers[:-1]], dtype=np.int64)
            bi = v[out, 2].astype(np.int64)
            if len(data_lens) == 0 or (bi >= len(data_lens)).any():
                raise MalformedStreamError("vortex.varbinview: a view names a missing data buffer")
            if (v[out, 3].astype(np.int64) + lens[out] > data_lens[bi]).any():
                raise MalformedStreamError("vortex.varbinview: a view runs past its data buffer")
        return v

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        n = len(arr)
        views = self.views(arr)
        binary = isinstance(arr.dtype, dt.Binary)
        validity, nulls = arrow_validity(arr.children[0] if arr.children else None, n)
        view_arr = pa.Array.from_buffers(
            pa.binary_view() if binary else pa.string_view(), n,
            [validity, pa.py_buffer(views), *(pa.py_buffer(b) for b in arr.buffers[:-1])],
            null_count=nulls,
        )
        return view_arr if string_view else view_arr.cast(arr.dtype.to_arrow())

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        v = arr.children[0].slice(start, stop) if arr.children else None
        return Array(self, arr.dtype, stop - start,
                     buffers=[*arr.buffers[:-1], arr.buffers[-1][16 * start : 16 * stop]],
                     children=[v] if v is not None else [])

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[0] if arr.children else None, len(arr))

    def equal_mask(self, arr: Array, needle: bytes) -> np.ndarray:
        """Rows whose bytes equal ``needle`` (nulls not applied), from the views: length,
        then inline bytes or prefix and the referenced data."""

        views = self.views(arr)
        n, m = len(arr), len(needle)
        out = np.zeros(n, dtype=np.bool_)
        cand = np.flatnonzero(views[:, 0] == m)
        if len(cand) == 0:
            return out
        raw = views.view(np.uint8).reshape(n, 16)
        nd = np.frombuffer(needle, dtype=np.uint8)
        if m <= 12:
            out[cand[(raw[cand, 4 : 4 + m] == nd).all(axis=1)]] = True
            return out
        cand = cand[(raw[cand, 4:8] == nd[:4]).all(axis=1)]
        buf = views[cand, 2]
        for b in np.unique(buf):
            sel = cand[buf == b]
            ok = bytes_equal_at(arr.buffers[int(b)], views[sel, 3], needle)
            out[sel[ok]] = True
        return out

    def take(self, arr: Array, indices: Any) -> Any:
        """Gathers the 16-byte views; the data buffers are shared."""

        views = self.views(arr)[indices]
        valid = self.validity(arr)
        v = None if valid is None else bool_array(valid[indices])
        out = varbinview_array(arr.dtype, np.ascontiguousarray(views), list(arr.buffers[:-1]), v)
        out.memo("views", lambda: views)
        return out

    def describe(self, arr: Array) -> str:
        return f"{len(arr.buffers) - 1} data buffers"

    def child_names(self, arr: Array) -> list[str]:
        return ["validity"]


VARBINVIEW = register_encoding(VarBinViewEncoding())


def varbinview_array(dtype: dt.DType, views: np.ndarray, data: list[np.ndarray],
                     validity: Array | None = None) -> Array:
    return Array(VARBINVIEW, dtype, views.nbytes // 16,
                 buffers=[*data, views.reshape(-1).view(np.uint8)],
                 children=[validity] if validity is not None else [])
