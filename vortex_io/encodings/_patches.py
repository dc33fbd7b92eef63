"""Patches: exceptions overlaid on a decoded array (used by bitpacked, alp, alprd, sparse).

On the wire a patched node carries a ``PatchesMetadata`` message and, among its children,
``indices`` (sorted unsigned ints), ``values`` (the parent's dtype) and optionally
``chunk_offsets`` (a per-1024-chunk lookup accelerator, not needed to decode). Position of
patch k in the node is ``indices[k] - offset``.

>>> import numpy as np
>>> from vortex_io import dtype as dt
>>> from vortex_io.encodings._primitive import primitive_array
>>> meta, kids = make_patches(np.array([1, 3]), primitive_array(np.array([10, 30])))
>>> pm = PatchesMeta.decode(meta, "doctest")
>>> out, mask = apply_patches(np.zeros(4, dtype=np.int64), None, pm, kids[0], kids[1], 4)
>>> out.tolist()
[0, 10, 0, 30]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtype as dt
from .._array import Array
from .._errors import MalformedStreamError
from .._proto import Fields, ProtoWriter, parse
from ._common import canonical_ints, int_ptype_of, narrowest_uint
from ._primitive import primitive_array, primitive_values

__all__ = ["PatchesMeta", "apply_patches", "make_patches", "patch_positions"]


@dataclass(frozen=True)
class PatchesMeta:
    len: int
    offset: int
    indices_ptype: dt.PType
    chunk_offsets_len: int | None = None
    chunk_offsets_ptype: dt.PType | None = None
    offset_within_chunk: int | None = None

    @classmethod
    def from_fields(cls, f: Fields, name: str) -> PatchesMeta:
        n = f.get_uint(1, 0)
        if n > 2**32:
            raise MalformedStreamError(f"{name}: {n} patches is more than an array can hold")
        cop = f.get_uint(5, None)
        return cls(
            len=n,
            offset=f.get_uint(2, 0),
            indices_ptype=int_ptype_of(f.get_uint(3, 0), f"{name} patch indices"),
            chunk_offsets_len=f.get_uint(4, None),
            chunk_offsets_ptype=None if cop is None else int_ptype_of(cop, f"{name} chunk offsets"),
            offset_within_chunk=f.get_uint(6, None),
        )

    @classmethod
    def decode(cls, raw: bytes, name: str) -> PatchesMeta:
        return cls.from_fields(parse(raw, f"{name} PatchesMetadata"), name)

    def encode(self) -> bytes:
        w = ProtoWriter().varint(1, self.len).varint(2, self.offset).varint(3, int(self.indices_ptype))
        if self.chunk_offsets_ptype is not None:
            w.varint(4, self.chunk_offsets_len or 0, always=True)
            w.varint(5, int(self.chunk_offsets_ptype), always=True)
            w.varint(6, self.offset_within_chunk or 0, always=True)
        return w.finish()

    def child_specs(self, values_dtype: dt.DType) -> list[tuple[dt.DType, int]]:
        """(dtype, length) of indices, values and (when present) chunk_offsets."""
        specs = [(dt.Primitive(self.indices_ptype), self.len), (values_dtype, self.len)]
        if self.chunk_offsets_ptype is not None:
            if not self.chunk_offsets_ptype.is_int:
                raise MalformedStreamError("patch chunk offsets must be integers")
            specs.append((dt.Primitive(self.chunk_offsets_ptype), self.chunk_offsets_len or 0))
        return specs

    @property
    def nchildren(self) -> int:
        return 3 if self.chunk_offsets_ptype is not None else 2


def patch_positions(meta: PatchesMeta, indices: Array, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions within [0, n), selector of the patches they came from).

    Patches that fall outside the node (left behind by a slice) are dropped.
    """
    idx = canonical_ints(indices, "patch indices").astype(np.int64, copy=False)
    if len(idx) > 1 and bool((idx[1:] < idx[:-1]).any()):
        raise MalformedStreamError("patch indices are not sorted")
    if meta.offset >= 2**63:
        raise MalformedStreamError(f"patch offset {meta.offset} is out of range")
    pos = idx - np.int64(meta.offset)
    keep = (pos >= 0) & (pos < n)
    if keep.all():
        return pos, np.arange(len(pos))
    sel = np.flatnonzero(keep)
    return pos[sel], sel


def patch_hits(positions: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which taken rows are patched: (the places in ``idx`` whose row is one of the sorted
    patch ``positions``, and the patch each one takes), by binary search. A row patched
    twice (a malformed stream) takes its last patch, as the decode's scatter leaves it."""
    if len(positions) == 0 or len(idx) == 0:
        none = np.zeros(0, dtype=np.intp)
        return none, none
    k = np.maximum(np.searchsorted(positions, idx, side="right") - 1, 0)
    hit = positions[k] == idx
    return np.flatnonzero(hit), k[hit]


def apply_patches(values: np.ndarray, mask: np.ndarray | None, meta: PatchesMeta, indices: Array,
                  patch_values: Array, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Overlay patches on ``values`` (modified in place when writable) and on the validity
    ``mask`` (None = all valid). Returns (values, mask)."""

    if meta.len == 0:
        return values, mask
    pos, sel = patch_positions(meta, indices, n)
    pv = patch_values.canonical()
    if not isinstance(pv.dtype, dt.Primitive):
        raise MalformedStreamError(f"patch values must be primitive, not {pv.dtype!r}")
    pvals, pmask = primitive_values(pv)
    if not values.flags.writeable:
        values = values.copy()
    values[pos] = pvals[sel].astype(values.dtype, copy=False)
    if pmask is not None:
        if mask is None:
            mask = np.ones(n, dtype=np.bool_)
        elif not mask.flags.writeable:
            mask = mask.copy()
        mask[pos] = pmask[sel]
    return values, mask


def make_patches(positions: np.ndarray, values: Array, offset: int = 0) -> tuple[bytes, list[Array]]:
    """(PatchesMetadata bytes, [indices, values]) for patches at sorted ``positions``."""

    positions = np.asarray(positions, dtype=np.int64) + offset
    p = narrowest_uint(int(positions[-1]) if len(positions) else 0)
    meta = PatchesMeta(len(positions), offset, p)
    return meta.encode(), [primitive_array(positions.astype(p.np_dtype)), values]
