"""``vortex.varbin``: one bytes buffer and an offsets child (n + 1 integers)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ..compute._numeric import bytes_equal_at, needle_bytes, with_validity
from ._common import (
    array_ptype,
    arrow_validity,
    canonical_ints,
    int_ptype_of,
    validity_mask,
    validity_spec,
)


def check_offsets(offsets: np.ndarray, data_len: int, what: str) -> None:
    """Offsets must be non-decreasing and inside the data (vectorized)."""
    if len(offsets) == 0:
        raise MalformedStreamError(f"{what}: no offsets")
    if offsets[0] < 0 or offsets[-1] > data_len:
        raise MalformedStreamError(
            f"{what}: offsets [{offsets[0]}, {offsets[-1]}] fall outside {data_len} bytes of data"
        )
    if len(offsets) > 1 and bool((offsets[1:] < offsets[:-1]).any()):
        raise MalformedStreamError(f"{what}: offsets are not monotonic")


def _view_type_ids() -> frozenset[int]:
    import pyarrow as pa

    return frozenset({pa.string_view().id, pa.binary_view().id})


_VIEW_TYPE_IDS = _view_type_ids()


def arrow_offsets(offsets: np.ndarray) -> tuple[np.ndarray, bool]:
    """Offsets as int32 when they fit (zero-copy when already int32), else int64; and is_large."""
    if offsets.dtype == np.int32:
        return offsets, False
    if len(offsets) == 0 or int(offsets[-1]) < 2**31:
        return offsets.astype(np.int32), False
    return offsets.astype(np.int64), True


class StringEqualityKernels(ABC):
    """``==``, ``!=`` and ``IN`` for canonical string encodings, from the encoding's
    ``equal_mask(arr, needle_bytes)`` and ``validity(arr)`` (varbin and varbinview)."""

    @abstractmethod
    def equal_mask(self, arr: Array, needle: bytes) -> np.ndarray:
        """Rows whose bytes equal ``needle`` (nulls not applied)."""

    @abstractmethod
    def validity(self, arr: Array) -> Any:
        """As ``Encoding.validity``."""

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        b = needle_bytes(value)
        if op not in ("eq", "neq") or b is None:
            return NotImplemented
        eq = self.equal_mask(arr, b)
        return with_validity(eq if op == "eq" else ~eq, self.validity(arr))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        bs = [needle_bytes(v) for v in values]
        needles = [b for b in bs if b is not None]
        if len(bs) > 16 or len(needles) != len(bs):
            return NotImplemented
        out = np.zeros(len(arr), dtype=np.bool_)
        for b in dict.fromkeys(needles):
            out |= self.equal_mask(arr, b)
        return with_validity(out, self.validity(arr))


class VarBinEncoding(StringEqualityKernels, Encoding):
    id = "vortex.varbin"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, (dt.Utf8, dt.Binary)):
            raise MalformedStreamError(f"vortex.varbin cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> dt.PType:
        return int_ptype_of(parse(raw, "VarBinMetadata").get_uint(1, 0), "vortex.varbin offsets")

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 1)

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        return [(dt.Primitive(meta, False), length + 1),
                *validity_spec(self.id, dtype, length, parts.nchildren, 1)]

    def offsets(self, arr: Array) -> np.ndarray:
        return arr.memo("offsets", lambda: _checked_offsets(arr))

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        n = len(arr)
        offs, large = arrow_offsets(self.offsets(arr))
        t = arr.dtype.to_arrow(string_view=string_view)
        if large:
            t = pa.large_string() if isinstance(arr.dtype, dt.Utf8) else pa.large_binary()
        view = t.id in _VIEW_TYPE_IDS
        if view:
            t = pa.string() if isinstance(arr.dtype, dt.Utf8) else pa.binary()
            if large:
                t = pa.large_string() if isinstance(arr.dtype, dt.Utf8) else pa.large_binary()
        validity, nulls = arrow_validity(arr.children[1] if len(arr.children) > 1 else None, n)
        out = pa.Array.from_buffers(
            t, n, [validity, pa.py_buffer(offs), pa.py_buffer(arr.buffers[0])], null_count=nulls)
        return out.cast(arr.dtype.to_arrow(string_view=True)) if view else out

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        v = arr.children[1].slice(start, stop) if len(arr.children) > 1 else None
        return Array(self, arr.dtype, stop - start, metadata=arr.metadata, buffers=arr.buffers,
                     children=[arr.children[0].slice(start, stop + 1), *([v] if v else [])])

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[1] if len(arr.children) > 1 else None, len(arr))

    def equal_mask(self, arr: Array, needle: bytes) -> np.ndarray:
        """Rows whose bytes equal ``needle`` (nulls not applied): a length filter, then the
        bytes of the rows of the right length."""

        offs = self.offsets(arr)
        out = np.zeros(len(arr), dtype=np.bool_)
        cand = np.flatnonzero((offs[1:] - offs[:-1]) == len(needle))
        if len(cand):
            out[cand[bytes_equal_at(arr.buffers[0], offs[:-1][cand], needle)]] = True
        return out

    def take(self, arr: Array, indices: Any) -> Any:
        from ._dict import take_canonical

        return take_canonical(arr, np.asarray(indices, dtype=np.int64))

    def describe(self, arr: Array) -> str:
        return f"offsets={arr.meta.short}"

    def child_names(self, arr: Array) -> list[str]:
        return ["offsets", "validity"]


def _checked_offsets(arr: Array) -> np.ndarray:
    o = canonical_ints(arr.children[0], "vortex.varbin offsets")
    check_offsets(o, arr.buffers[0].nbytes, "vortex.varbin")
    return o


VARBIN = register_encoding(VarBinEncoding())


def varbin_array(dtype: dt.DType, offsets: Array, data: np.ndarray, validity: Array | None = None
                 ) -> Array:
    """A ``vortex.varbin`` array; ``offsets`` is an integer array of n + 1 values."""
    p = array_ptype(offsets)
    meta = ProtoWriter().varint(1, int(p)).finish()
    a = Array(VARBIN, dtype, len(offsets) - 1, metadata=meta, buffers=[data],
              children=[offsets, *([validity] if validity is not None else [])], meta=p)
    return a
