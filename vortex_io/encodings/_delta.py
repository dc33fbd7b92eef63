"""``fastlanes.delta``: FastLanes transposed delta encoding of integers.

Wire form (vortex-data 0.93): ``DeltaMetadata`` (1 deltas_len, a multiple of 1024; 2 offset
< 1024); no buffers; children ``bases`` (the dtype made non-nullable, ``deltas_len / 1024 *
LANES``), ``deltas`` (the same, deltas_len) and, for a nullable dtype, an optional validity
(non-nullable bool, one per row of the node).

Each 1024-value chunk is transposed (``fastlanes_layout.transpose_index``) and split into
LANES lanes; lane ``l`` of chunk ``c`` is a running sum, starting from ``bases[c * LANES +
l]``, of its deltas taken row by row in the bit-packing row order. The writer pads the
last chunk to 1024 values and the node is rows ``[offset, offset + n)`` of the decoded
values. Arithmetic wraps in the dtype's width (signed types run in their unsigned twin).

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> d = delta_encode(primitive_array(np.arange(0, 3000, 3, dtype=np.uint32)))
>>> d.encoding, len(d.children[0]), d.children[1].encoding, d.children[1].meta.bit_width
('fastlanes.delta', 32, 'fastlanes.bitpacked', 2)
>>> bool((d.to_numpy() == np.arange(0, 3000, 3)).all())
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ..compute._kernels import take
from ..compute._numeric import decoded
from . import _fastlanes_layout as fl
from ._bitpacked import BitPackedEncoding, empty_slice
from ._bool import bool_array
from ._common import array_ptype, is_primitive_of, primitive, validity_mask, validity_spec
from ._primitive import primitive_array, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, delta_bases_cost, int_cost, register_scheme

__all__ = ["DeltaMeta", "DeltaEncoding", "DELTA", "delta_array", "delta_encode"]


@dataclass(frozen=True)
class DeltaMeta:
    """Parsed ``DeltaMetadata``."""

    deltas_len: int
    offset: int = 0

    @classmethod
    def decode(cls, raw: bytes) -> DeltaMeta:
        f = parse(raw, "DeltaMetadata")
        n = f.get_uint(1, 0)
        off = f.get_uint(2, 0, bits=32)
        if off >= 1024:
            raise MalformedStreamError(f"fastlanes.delta: offset {off} is not < 1024")
        return cls(n, off)

    def encode(self) -> bytes:
        return ProtoWriter().varint(1, self.deltas_len).varint(2, self.offset).finish()


@cache
def _lane_tables(w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per chunk, listing the 1024 slots lane by lane in running-sum order (a (LANES, W)
    array once reshaped): (their transposed positions, the inverse of that, their original
    positions, the inverse of that)."""
    tpos = fl.unpack_index(w).T.ravel()  # row r of lane l sits at transposed position [r, l]
    opos = fl.transpose_index()[tpos]  # transposed position i holds original transpose_index[i]
    tabs = [tpos, np.empty(1024, np.intp), opos, np.empty(1024, np.intp)]
    tabs[1][tpos] = np.arange(1024)
    tabs[3][opos] = np.arange(1024)
    for t in tabs:
        t.flags.writeable = False
    return tabs[0], tabs[1], tabs[2], tabs[3]


_V128 = np.dtype("V128")  # one row of a chunk: LANES values of W bits


@cache
def _row_tables(w: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Row r of every lane is the contiguous block ``blocks[r]`` of LANES values in a
    chunk; ``at[i]``: where logical position i sits once the blocks are put in row order
    (row * LANES + lane). None if the layout were not row-contiguous."""
    nl = fl.lanes(w)
    u = fl.unpack_index(w)
    if not (u == u[:, :1] + np.arange(nl)).all() or (u[:, 0] % nl).any():
        return None
    _, _, _, oinv = _lane_tables(w)
    lane, row = np.divmod(oinv, w)
    blocks, at = (u[:, 0] // nl).astype(np.intp), (row * nl + lane).astype(np.intp)
    blocks.flags.writeable = False
    at.flags.writeable = False
    return blocks, at


def _prefix_rows(grid: np.ndarray, bases: np.ndarray) -> np.ndarray:
    """The decoded values of a (W, lanes) grid of deltas, in place: each lane's base added
    to its first row, then each lane's running sum down the rows. Narrow grids (a few
    chunks) take one cumsum; wide ones one add per row over every lane (a cumsum along
    axis 0 measured up to ~6x slower on 64 chunks, the loop's ~W calls ~10x slower on
    one)."""
    np.add(grid[0], bases, out=grid[0])
    if grid.shape[1] <= 128:
        return np.cumsum(grid, axis=0, out=grid)
    for r in range(1, grid.shape[0]):
        np.add(grid[r], grid[r - 1], out=grid[r])
    return grid


def check_chunk_window(enc_id: str, total: int, what: str, offset: int, length: int) -> None:
    """A node of rows ``[offset, offset + length)`` over ``total`` values (``what``: deltas,
    indices...) of whole 1024-value chunks, as ``fastlanes.delta`` and ``fastlanes.rle``
    are: ``MalformedStreamError`` unless the chunks are whole and hold the rows."""
    if total % 1024:
        raise MalformedStreamError(f"{enc_id}: {total} {what} is not a multiple of 1024")
    if offset + length > total:
        raise MalformedStreamError(
            f"{enc_id}: offset {offset} + {length} rows exceed {total} {what}")


def chunk_window(offset: int, start: int, stop: int) -> tuple[int, int, int]:
    """Rows ``[start, stop)`` of a node whose first row is value ``offset`` of its 1024-value
    chunks: (first chunk, end chunk, where the first of those rows sits in the first chunk)."""
    first = offset + start
    return first // 1024, (offset + stop + 1023) // 1024, first % 1024


class DeltaEncoding(Encoding):
    id = "fastlanes.delta"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Primitive) or not dtype.ptype.is_int:
            raise MalformedStreamError(f"fastlanes.delta cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> DeltaMeta:
        m = DeltaMeta.decode(raw)
        check_chunk_window(self.id, m.deltas_len, "deltas", m.offset, length)
        return m

    def child_specs(self, dtype, length, meta: DeltaMeta, parts: ArrayParts):
        if parts.nchildren not in (2, 3):
            raise MalformedStreamError(
                f"fastlanes.delta takes 2 or 3 children, got {parts.nchildren}")
        p = primitive(dtype, self.id).ptype
        w = p.byte_width * 8
        inner = dt.Primitive(p, False)
        specs = [(inner, meta.deltas_len // 1024 * fl.lanes(w)), (inner, meta.deltas_len)]
        return specs + validity_spec(self.id, dtype, length, parts.nchildren, 2)

    def validate(self, arr: Array, limits) -> None:
        check_decoded_size(arr.meta.deltas_len * array_ptype(arr).byte_width,
                           f"fastlanes.delta of {arr.meta.deltas_len} deltas", limits)

    def canonicalize(self, arr: Array) -> Array:
        m: DeltaMeta = arr.meta
        p = array_ptype(arr)
        w = p.byte_width * 8
        ut = fl.UNSIGNED[w]
        # decode only the chunks the node covers, as the (W, k * LANES) row grid
        c0 = m.offset // 1024
        c1 = (m.offset + len(arr) + 1023) // 1024
        k = c1 - c0
        grid = self._range_grid(arr, c0, c1)
        # rows back to chunk-major (128-byte runs), then each chunk's 1024 slots gathered
        # into the original order
        tabs = _row_tables(w)
        assert tabs is not None  # every FastLanes width is row-contiguous
        by_chunk = _memory.empty(k * 1024, ut)
        by_chunk.view(_V128).reshape(k, w)[...] = grid.view(_V128).reshape(w, k).T
        out = _memory.empty(k * 1024, ut)
        np.take(by_chunk.view(ut).reshape(k, 1024), tabs[1], axis=1, out=out.reshape(k, 1024),
                mode="clip")
        start = m.offset - c0 * 1024
        vals = out[start : start + len(arr)].view(p.np_dtype)
        validity = arr.children[2] if len(arr.children) > 2 else None
        return primitive_array(vals, validity, nullable=arr.dtype.nullable)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        if stop == start:
            return empty_slice(arr)
        c0, c1, new_off = chunk_window(arr.meta.offset, start, stop)
        nl = fl.lanes(array_ptype(arr).byte_width * 8)
        bases = arr.children[0].slice(c0 * nl, c1 * nl)
        deltas = arr.children[1].slice(c0 * 1024, c1 * 1024)
        v = arr.children[2].slice(start, stop) if len(arr.children) > 2 else None
        return delta_array(bases, deltas, new_off, stop - start, arr.dtype, v)

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(arr.children[2] if len(arr.children) > 2 else None, len(arr))

    def take(self, arr: Array, indices: Any) -> Any:
        """Decodes only the 1024-row chunks holding selected rows (their deltas read
        straight from the packed buffer when few chunks are needed), as kernel scratch."""

        vals, valid = self.take_values(arr, indices)
        return primitive_array(vals, None if valid is None else bool_array(valid),
                               nullable=arr.dtype.nullable, ptype=array_ptype(arr))

    def take_values(self, arr: Array, indices: Any) -> Any:
        m: DeltaMeta = arr.meta
        p = array_ptype(arr)
        w = p.byte_width * 8
        ut = fl.UNSIGNED[w]
        nl = fl.lanes(w)
        idx = np.asarray(indices, dtype=np.int64)
        rows = idx + m.offset
        valid = self.validity(arr)
        vmask = None if valid is None else valid[idx]
        chunk = rows >> 10
        first, last = m.offset >> 10, (m.offset + len(arr) + 1023) >> 10
        need = np.zeros(last - first, dtype=np.bool_)
        need[chunk - first] = True
        uc = np.flatnonzero(need) + first
        if 2 * len(uc) >= last - first:  # most chunks: the node's range at once
            uc = np.arange(first, last, dtype=np.int64)
            grid = self._range_grid(arr, first, last)
        else:  # the needed chunks' deltas and bases, read straight from their encodings
            k = len(uc)
            pos = (uc[:, None] * 1024 + np.arange(1024, dtype=np.int64)).reshape(-1)
            bpos = (uc[:, None] * nl + np.arange(nl, dtype=np.int64)).reshape(-1)
            deltas = decoded(take(arr.children[1], pos))
            bases = decoded(take(arr.children[0], bpos))
            for what, c in (("bases", bases), ("deltas", deltas)):
                if not is_primitive_of(c, p):
                    raise MalformedStreamError(f"fastlanes.delta: {what} decoded to {c.dtype!r}")
            grid = fl.chunk_rows(primitive_values(deltas)[0].view(ut), w, k)
            _prefix_rows(grid, primitive_values(bases)[0].view(ut))
        return grid.reshape(-1)[self._slots(w, rows, uc)].view(p.np_dtype), vmask

    @staticmethod
    def _slots(w: int, rows: np.ndarray, uc: np.ndarray) -> np.ndarray:
        """Where absolute delta positions ``rows`` sit in the (W, len(uc) * LANES) row grid
        of the sorted chunks ``uc``."""
        nl = fl.lanes(w)
        tabs = _row_tables(w)
        assert tabs is not None
        pos = tabs[1][rows & 1023]
        chunk = rows >> 10
        contiguous = len(uc) and len(uc) == uc[-1] - uc[0] + 1
        ci = chunk - uc[0] if contiguous else np.searchsorted(uc, chunk)
        return (pos // nl) * (len(uc) * nl) + ci * nl + pos % nl

    def _range_grid(self, arr: Array, first: int, last: int) -> np.ndarray:
        """The decoded values of chunks ``[first, last)`` as a fresh (W, k * LANES) row
        grid (prefix sums done): ``[r, c * LANES + l]`` is row r of lane l of chunk c."""
        p = array_ptype(arr)
        w = p.byte_width * 8
        nl = fl.lanes(w)
        ut = fl.UNSIGNED[w]
        k = last - first
        bc = arr.children[0].canonical()
        if not isinstance(bc.dtype, dt.Primitive) or bc.dtype.ptype != p:
            raise MalformedStreamError(f"fastlanes.delta: bases decoded to {bc.dtype!r}")
        # the deltas as a (W, k * LANES) grid in row order: [r, c * LANES + l] is row r of
        # lane l of chunk c (bit-packed deltas unpack straight into it)
        dchild = arr.children[1]
        same = isinstance(dchild.dtype, dt.Primitive) and dchild.dtype.ptype == p
        grid = _row_grid(dchild, w) if same else None
        if grid is not None and k != len(dchild) // 1024:
            grid = np.ascontiguousarray(grid.reshape(w, -1, nl)[:, first:last]).reshape(w, k * nl)
        if grid is None:
            dc = dchild.canonical()
            if not isinstance(dc.dtype, dt.Primitive) or dc.dtype.ptype != p:
                raise MalformedStreamError(f"fastlanes.delta: deltas decoded to {dc.dtype!r}")
            deltas = primitive_values(dc)[0].view(ut)
            grid = fl.chunk_rows(deltas[first * 1024 : last * 1024], w, k)
        bases = primitive_values(bc)[0].view(ut)
        return _prefix_rows(grid, bases[first * nl : last * nl])

    def describe(self, arr: Array) -> str:
        return f"offset={arr.meta.offset}" if arr.meta.offset else ""

    def child_names(self, arr: Array) -> list[str]:
        return ["bases", "deltas", "validity"]


DELTA = register_encoding(DeltaEncoding())


def _row_grid(a: Array, w: int) -> np.ndarray | None:
    """The deltas child as a fresh (W, chunks * LANES) row grid of unsigned values when it
    unpacks straight into one: ``fastlanes.bitpacked``, or ``vortex.zigzag`` /
    ``fastlanes.for`` over it (both are elementwise: they apply to the grid in place).
    None when the child is anything else or was already decoded."""
    if a.cached_canonical is not None or not isinstance(a.dtype, dt.Primitive):
        return None
    if a.encoding == "fastlanes.bitpacked":
        enc = a.vtable
        return enc.unpacked_rows(a) if isinstance(enc, BitPackedEncoding) else None
    if a.encoding not in ("vortex.zigzag", "fastlanes.for") or len(a.children) != 1:
        return None
    inner = a.children[0]
    ienc = inner.vtable
    if (inner.encoding != "fastlanes.bitpacked" or not isinstance(ienc, BitPackedEncoding)
            or inner.cached_canonical is not None
            or not isinstance(inner.dtype, dt.Primitive)
            or inner.dtype.ptype.byte_width * 8 != w):
        return None
    if a.encoding == "vortex.zigzag" and inner.dtype.ptype != a.dtype.ptype.to_unsigned():
        return None
    if a.encoding == "fastlanes.for" and inner.dtype.ptype != a.dtype.ptype:
        return None
    grid = ienc.unpacked_rows(inner)
    if grid is None:
        return None
    if a.encoding == "vortex.zigzag":
        from ._zigzag import zigzag_decode_values

        zigzag_decode_values(grid, out=grid)
    else:
        ut = fl.UNSIGNED[w]
        np.add(grid, ut.type(a.meta & ((1 << w) - 1)), out=grid)
    return grid


def delta_array(bases: Array, deltas: Array, offset: int, length: int,
                dtype: dt.DType | None = None, validity: Array | None = None) -> Array:
    """A ``fastlanes.delta`` node: rows ``[offset, offset + length)`` of the decoded deltas,
    with an optional validity of ``length`` rows (bases and deltas are non-nullable)."""
    d = dtype if dtype is not None else dt.Primitive(array_ptype(deltas), validity is not None)
    meta = DeltaMeta(len(deltas), offset)
    kids = [bases, deltas] + ([validity] if validity is not None else [])
    a = Array(DELTA, d, length, metadata=meta.encode(), children=kids, meta=meta)
    return a


def delta_encode(array: Array, *, bitpack: bool = True) -> Array:
    """Delta-encode an integer array the FastLanes way (padded to whole chunks).

    Nulls are filled forward within their chunk (0 before a chunk's first valid value) so
    their deltas stay small; the validity becomes the node's validity child. The deltas are
    bit-packed unless ``bitpack=False``.
    """
    c = array.canonical()
    if not isinstance(c.dtype, dt.Primitive) or not c.dtype.ptype.is_int:
        raise TypeError(f"delta_encode needs an integer array, not {c.dtype!r}")
    p = c.dtype.ptype
    w = p.byte_width * 8
    ut = fl.UNSIGNED[w]
    nl = fl.lanes(w)
    n = len(c)
    vals, mask = primitive_values(c)
    u = vals.view(ut)
    nchunks = (n + 1023) // 1024
    if mask is not None:
        idx = np.where(mask, np.arange(n), -1)
        np.maximum.accumulate(idx, out=idx)
        chunk_start = np.arange(n) & ~1023
        u = np.where(idx >= chunk_start, u[np.maximum(idx, 0)], ut.type(0))
    padded = np.zeros(nchunks * 1024, dtype=ut)
    padded[:n] = u
    if n:
        padded[n:] = u[n - 1]  # pad with the last value: the tail's deltas are 0, not -last
    _, tinv, opos, _ = _lane_tables(w)
    lanes_ = padded.reshape(nchunks, 1024)[:, opos].reshape(nchunks, nl, w)
    bases = lanes_[:, :, 0].copy()
    d = np.empty_like(lanes_)
    d[:, :, 0] = 0
    np.subtract(lanes_[:, :, 1:], lanes_[:, :, :-1], out=d[:, :, 1:])
    deltas = d.reshape(nchunks, 1024)[:, tinv].ravel()
    enc = primitive_array(deltas.view(p.np_dtype), nullable=False)
    if bitpack and n:  # vortex-data 0.93 panics on some empty bit-packed children
        from ._bitpacked import bitpack as _bitpack

        enc = _bitpack(enc)
    bases_arr = primitive_array(bases.ravel().view(p.np_dtype), nullable=False)
    validity = c.children[0] if c.children else None
    return delta_array(bases_arr, enc, 0, n, c.dtype, validity)


#: bytes a delta must save to be chosen: its decode is ~W numpy calls (one per row of the
#: FastLanes lanes) plus a transpose whatever the length, which on a small child (e.g. the
#: 1024 bases of a 64Ki-row delta) costs more time than its few saved bytes are worth
_DELTA_FIXED = 2048


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_delta(a: Array, params: Any = None) -> Array | None:
    return delta_encode(a, bitpack=False)


def _estimate_delta(f: Facts, comp: Any) -> Trial | None:
    v = f.vkey
    m = len(v)
    if m < 64 or f.down_steps * 50 > m:
        return None  # not (nearly) sorted
    d = np.diff(v)  # wrapping, as the encoding does
    bases = delta_bases_cost(f.n, v.dtype.itemsize, int(f.hi) - int(f.lo))
    size = (int_cost(d, f.n, dict_=f.compact, compact=f.compact) + bases + f.validity_bytes
            + 3 * NODE_COST + _DELTA_FIXED)
    return Trial(size, lambda: _encode_delta(f.a))


register_scheme(Scheme("fastlanes.delta", frozenset({"int"}), _estimate_delta, _encode_delta,
                       priority=90))
