"""``vortex.chunked``: chunk offsets (u64, nchunks + 1) then the chunks."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._arrow import from_arrow
from .._errors import MalformedStreamError
from ..compute._kernels import compare_storage, is_in_storage, take
from ..compute._numeric import is_sorted, validity
from ._common import canonical_ints
from ._primitive import primitive_array

U64 = dt.Primitive(dt.PType.U64)


class ChunkedEncoding(Encoding):
    id = "vortex.chunked"

    def build(self, parts: ArrayParts, dtype: dt.DType, length: int) -> Array:
        if parts.buffers:
            raise MalformedStreamError("vortex.chunked takes no buffers")
        if parts.nchildren < 1:
            raise MalformedStreamError("vortex.chunked needs a chunk-offsets child")
        nchunks = parts.nchildren - 1
        offsets_arr = parts.child(0, U64, nchunks + 1)
        offs = canonical_ints(offsets_arr, "vortex.chunked offsets").astype(np.uint64)
        if offs[0] != 0 or int(offs[-1]) != length or (nchunks and (offs[1:] < offs[:-1]).any()):
            raise MalformedStreamError(
                f"vortex.chunked offsets must rise from 0 to the length {length}"
            )
        chunks = [parts.child(i + 1, dtype, int(offs[i + 1] - offs[i])) for i in range(nchunks)]
        return Array(self, dtype, length, children=[offsets_arr, *chunks], stats=parts.stats)

    def chunks(self, arr: Array) -> tuple[Array, ...]:
        return arr.children[1:]

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        parts: list[Any] = []
        for c in self.chunks(arr):
            a = c.to_arrow(string_view=string_view)
            parts.extend(a.chunks if isinstance(a, pa.ChunkedArray) else [a])
        return pa.chunked_array(parts, type=arr.dtype.to_arrow(string_view=string_view) if not parts else parts[0].type)

    def canonicalize(self, arr: Array) -> Array:
        return from_arrow(self.to_arrow(arr).combine_chunks(), dtype=arr.dtype)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        out = []
        pos = 0
        for c in self.chunks(arr):
            lo, hi = max(start - pos, 0), min(stop - pos, len(c))
            if lo < hi:
                out.append(c.slice(lo, hi))
            pos += len(c)
        return chunked_array(out, arr.dtype)

    def struct_field(self, arr: Array, name: str) -> Array:
        return chunked_array([c.field(name) for c in self.chunks(arr)], cast(dt.Struct, arr.dtype).field(name))

    # -- compute kernels: chunk by chunk ---------------------------------------------
    def _per_chunk(self, arr: Array, fn: Any) -> Any:
        parts = [fn(c) for c in self.chunks(arr)]
        if not parts:
            return np.zeros(0, dtype=np.bool_), None
        vals = np.concatenate([p[0] for p in parts])
        if all(p[1] is None for p in parts):
            return vals, None
        valid = np.concatenate([np.ones(len(p[0]), dtype=np.bool_) if p[1] is None else p[1]
                                for p in parts])
        return vals, valid

    def validity(self, arr: Array) -> Any:
        masks = [validity(c) for c in self.chunks(arr)]
        if all(m is None for m in masks):
            return None
        return np.concatenate([np.ones(len(c), dtype=np.bool_) if m is None else m
                               for c, m in zip(self.chunks(arr), masks)])

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        return self._per_chunk(arr, lambda c: compare_storage(c, value, op))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        return self._per_chunk(arr, lambda c: is_in_storage(c, values))

    def take(self, arr: Array, indices: Any) -> Any:
        """Each chunk takes its own rows (kept encoded); unsorted indices are put back in
        order by an Arrow take over the gathered rows only."""
        import pyarrow as pa


        chunks = self.chunks(arr)
        lens = np.array([len(c) for c in chunks], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(lens)))
        idx = np.asarray(indices, dtype=np.int64)
        ordered = is_sorted(idx)
        order = None if ordered else np.argsort(idx, kind="stable")
        sidx = idx if ordered else idx[order]
        which = np.searchsorted(starts, sidx, side="right") - 1
        bounds = np.searchsorted(which, np.arange(len(chunks) + 1), side="left")
        out = []
        for k, c in enumerate(chunks):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            if hi > lo:
                out.append(take(c, sidx[lo:hi] - starts[k]))
        res = chunked_array(out, arr.dtype)
        if ordered:
            return res
        inv = np.empty(len(idx), dtype=np.int64)
        inv[order] = np.arange(len(idx))
        a = res.to_arrow()
        a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
        return from_arrow(a.take(pa.array(inv)), dtype=arr.dtype)

    def describe(self, arr: Array) -> str:
        return f"{len(arr.children) - 1} chunks"

    def child_names(self, arr: Array) -> list[str]:
        return ["chunk_offsets"] + [f"chunk{i}" for i in range(len(arr.children) - 1)]


CHUNKED = register_encoding(ChunkedEncoding())


def chunked_array(chunks: list[Array], dtype: dt.DType) -> Array:
    offs = np.zeros(len(chunks) + 1, dtype=np.uint64)
    np.cumsum([len(c) for c in chunks], out=offs[1:])
    return Array(CHUNKED, dtype, int(offs[-1]), children=[primitive_array(offs), *chunks])
