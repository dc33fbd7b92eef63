"""``fastlanes.bitpacked``: integers packed to B bits in the FastLanes 1024-value layout.

Wire form (vortex-data 0.93): metadata ``BitPackedMetadata`` (1 bit_width, 2 offset < 1024,
3 optional ``PatchesMetadata``); buffer 0 holds ``ceil((offset + n) / 1024)`` chunks of
``128 * B`` bytes; children are the patches (indices, values, [chunk_offsets]) and then the
optional validity. Values are zero-extended on unpack, then patched, then masked by the
validity. The layout itself lives in ``fastlanes_layout``.

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> a = bitpack(primitive_array(np.array([1, 2, 3, 1000], dtype=np.int32)), 2)
>>> a.encoding, a.meta.bit_width, a.meta.patches.len
('fastlanes.bitpacked', 2, 1)
>>> a.to_pylist()
[1, 2, 3, 1000]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ..compute._numeric import OPS, bound_answer, decoded, isin_values, np_literal, with_validity
from . import _fastlanes_layout as fl
from ._bool import bool_array
from ._common import (
    array_ptype,
    is_primitive_of,
    log2_width,
    primitive,
    typed_buffer,
    validity_mask,
    validity_spec,
)
from ._patches import (
    PatchesMeta,
    apply_patches,
    make_patches,
    patch_hits,
    patch_positions,
)
from ._primitive import primitive_array, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, as_unsigned, packed_cost, register_scheme

__all__ = [
    "BitPackedMeta",
    "BitPackedEncoding",
    "BITPACKED",
    "best_bit_width",
    "bit_length_histogram",
    "bitpack",
    "bitpacked_take",
    "bitpacked_array",
]


@dataclass(frozen=True)
class BitPackedMeta:
    """Parsed ``BitPackedMetadata``."""

    bit_width: int
    offset: int = 0
    patches: PatchesMeta | None = None

    @classmethod
    def decode(cls, raw: bytes, dtype: dt.DType) -> BitPackedMeta:
        f = parse(raw, "BitPackedMetadata")
        b = f.get_uint(1, 0, bits=32)
        off = f.get_uint(2, 0, bits=32)
        w = primitive(dtype, "fastlanes.bitpacked").ptype.byte_width * 8
        if b > w:
            raise MalformedStreamError(
                f"fastlanes.bitpacked: bit width {b} is wider than {dtype!r}")
        if off >= 1024:
            raise MalformedStreamError(f"fastlanes.bitpacked: offset {off} is not < 1024")
        pf = f.get_message(3, "fastlanes.bitpacked PatchesMetadata")
        p = None if pf is None else PatchesMeta.from_fields(pf, "fastlanes.bitpacked")
        return cls(b, off, p)

    def encode(self) -> bytes:
        w = ProtoWriter().varint(1, self.bit_width).varint(2, self.offset)
        if self.patches is not None:
            w.message(3, self.patches.encode())
        return w.finish()


def _packed_bytes(n: int, offset: int, b: int) -> int:
    return (offset + n + 1023) // 1024 * 128 * b


class BitPackedEncoding(Encoding):
    id = "fastlanes.bitpacked"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Primitive) or not dtype.ptype.is_int:
            raise MalformedStreamError(f"fastlanes.bitpacked cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> BitPackedMeta:
        self.check_dtype(dtype)
        return BitPackedMeta.decode(raw, dtype)

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 1)

    def child_specs(self, dtype, length, meta: BitPackedMeta, parts: ArrayParts):
        specs = meta.patches.child_specs(dtype) if meta.patches is not None else []
        return specs + validity_spec(self.id, dtype, length, parts.nchildren, len(specs))

    def validate(self, arr: Array, limits) -> None:
        m: BitPackedMeta = arr.meta
        need = _packed_bytes(len(arr), m.offset, m.bit_width)
        if arr.buffers[0].nbytes != need:
            raise MalformedStreamError(
                f"fastlanes.bitpacked: packed buffer is {arr.buffers[0].nbytes} bytes, "
                f"{len(arr)} values at offset {m.offset} and {m.bit_width} bits need {need}")
        check_decoded_size((len(arr) + m.offset + 1023) // 1024 * 1024 * array_ptype(arr).byte_width,
                           f"fastlanes.bitpacked of {len(arr)} rows", limits)

    def buffer_alignments(self, arr: Array) -> list[int]:
        return [log2_width(array_ptype(arr))]

    # -- decoding ------------------------------------------------------------------------
    def _validity_child(self, arr: Array) -> Array | None:
        np_ = arr.meta.patches.nchildren if arr.meta.patches is not None else 0
        return arr.children[np_] if len(arr.children) > np_ else None

    def unpacked(self, arr: Array) -> np.ndarray:
        """The packed values of the node (zero-extended, not patched), in the dtype."""
        m: BitPackedMeta = arr.meta
        p = array_ptype(arr)
        w = p.byte_width * 8
        n = len(arr)
        nchunks = (m.offset + n + 1023) // 1024
        words = typed_buffer(arr, 0, fl.UNSIGNED[w], nchunks * 128 * m.bit_width * 8 // w)
        vals = fl.unpack(words, w, m.bit_width, nchunks)[m.offset : m.offset + n]
        return vals.view(p.np_dtype)

    def unpacked_rows(self, arr: Array) -> np.ndarray | None:
        """The node's values, patched, in ``fastlanes_layout.unpack_rows`` natural row
        order (unsigned, a fresh array), for a node of whole chunks at offset 0 without
        validity (``fastlanes.delta``'s deltas); None for any other node."""
        m: BitPackedMeta = arr.meta
        n = len(arr)
        if m.offset or n % 1024 or self._validity_child(arr) is not None:
            return None
        p = array_ptype(arr)
        w = p.byte_width * 8
        nchunks = n // 1024
        words = typed_buffer(arr, 0, fl.UNSIGNED[w], nchunks * 128 * m.bit_width * 8 // w)
        rows = fl.unpack_rows(words, w, m.bit_width, nchunks)
        if m.patches is not None and m.patches.len:
            pv = arr.children[1].canonical()
            if not is_primitive_of(pv, p):
                return None
            pvals, pmask = primitive_values(pv)
            if pmask is not None and not pmask.all():
                raise MalformedStreamError("fastlanes.bitpacked: patch values contain nulls")
            pos, sel = patch_positions(m.patches, arr.children[0], n)
            rows.reshape(-1)[fl.rows_index(pos, w, nchunks)] = pvals[sel].view(rows.dtype)
        return rows

    def canonicalize(self, arr: Array) -> Array:
        m: BitPackedMeta = arr.meta
        n = len(arr)
        vals = self.unpacked(arr)
        if m.patches is not None and m.patches.len:
            vals, pmask = apply_patches(vals, None, m.patches, arr.children[0], arr.children[1], n)
            if pmask is not None and not pmask.all():
                raise MalformedStreamError("fastlanes.bitpacked: patch values contain nulls")
        return primitive_array(vals, self._validity_child(arr), nullable=arr.dtype.nullable)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        m: BitPackedMeta = arr.meta
        if stop == start:
            return empty_slice(arr)
        b = m.bit_width
        first = m.offset + start
        block = first // 1024
        new_off = first % 1024
        nblocks = (m.offset + stop + 1023) // 1024 - block
        packed = arr.buffers[0][block * 128 * b : (block + nblocks) * 128 * b]
        kids: list[Array] = []
        pm = None
        if m.patches is not None and m.patches.len:
            pos, _ = patch_positions(m.patches, arr.children[0], len(arr))
            lo, hi = np.searchsorted(pos, [start, stop])
            if hi > lo:
                pm = PatchesMeta(int(hi - lo), m.patches.offset + start, m.patches.indices_ptype)
                kids = [arr.children[0].slice(int(lo), int(hi)), arr.children[1].slice(int(lo), int(hi))]
        v = self._validity_child(arr)
        if v is not None:
            kids.append(v.slice(start, stop))
        meta = BitPackedMeta(b, new_off, pm)
        out = Array(self, arr.dtype, stop - start, metadata=meta.encode(), buffers=[packed],
                    children=kids, meta=meta)
        return out

    # -- compute kernels: the bit width bounds the packed values -------------------------
    def validity(self, arr: Array) -> Any:
        return validity_mask(self._validity_child(arr), len(arr))

    def _packed_max(self, arr: Array) -> int | None:
        """Largest packed value (they are zero-extended), or None when a full-width signed
        value may read negative."""
        m: BitPackedMeta = arr.meta
        p = array_ptype(arr)
        if m.bit_width < p.byte_width * 8 or p.is_unsigned:
            return (1 << m.bit_width) - 1
        return None

    def _patches(self, arr: Array) -> tuple[np.ndarray, np.ndarray] | None:
        """(positions in the node, their values) of the patches inside the node."""

        m: BitPackedMeta = arr.meta
        if m.patches is None or not m.patches.len:
            return None
        pos, sel = patch_positions(m.patches, arr.children[0], len(arr))
        if not len(pos):
            return None
        pv = decoded(arr.children[1])
        if not is_primitive_of(pv, array_ptype(arr)):
            raise MalformedStreamError(f"fastlanes.bitpacked: patch values decode to {pv.dtype!r}")
        return pos, primitive_values(pv)[0][sel]

    def int_bounds(self, arr: Array) -> tuple[int, int] | None:
        hi = self._packed_max(arr)
        if hi is None:
            return None
        lo = 0
        pt = self._patches(arr)
        if pt is not None:
            lo, hi = min(lo, int(pt[1].min())), max(hi, int(pt[1].max()))
        return lo, hi

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        """Literals outside ``[0, 2**bits)`` are answered without unpacking; otherwise the
        values are unpacked once and compared; patches are compared on their own."""

        lit = np_literal(array_ptype(arr), value)
        if lit is None:
            return NotImplemented
        hi = self._packed_max(arr)
        ans = None if hi is None else bound_answer(op, value, 0, hi)
        n = len(arr)
        vals = np.full(n, ans, dtype=np.bool_) if ans is not None else OPS[op](self.unpacked(arr), lit)
        pt = self._patches(arr)
        if pt is not None:
            vals[pt[0]] = OPS[op](pt[1], lit)
        return with_validity(vals, self.validity(arr))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        p = array_ptype(arr)
        hi = self._packed_max(arr)
        inside = [v for v in values if isinstance(v, int) and not isinstance(v, bool)
                  and (hi is None or 0 <= v <= hi)]
        n = len(arr)
        vals = isin_values(self.unpacked(arr), p, inside) if inside else np.zeros(n, dtype=np.bool_)
        pt = self._patches(arr)
        if pt is not None:
            vals[pt[0]] = isin_values(pt[1], p, values)
        return with_validity(vals, self.validity(arr))

    def take(self, arr: Array, indices: Any) -> Any:
        return bitpacked_take(arr, indices)

    def take_values(self, arr: Array, indices: np.ndarray) -> Any:
        return _take_values(arr, np.asarray(indices, dtype=np.intp))

    def describe(self, arr: Array) -> str:
        m: BitPackedMeta = arr.meta
        s = f"bits={m.bit_width}"
        if m.offset:
            s += f", offset={m.offset}"
        if m.patches is not None:
            s += f", patches={m.patches.len}"
        return s

    def child_names(self, arr: Array) -> list[str]:
        names = []
        if arr.meta.patches is not None:
            names = ["patch_indices", "patch_values", "patch_chunk_offsets"][: arr.meta.patches.nchildren]
        return [*names, "validity"]


BITPACKED = BitPackedEncoding()  # typed as the class: the functions below call its helpers
register_encoding(BITPACKED)


def empty_slice(arr: Array) -> Array:
    """An empty ``vortex.primitive`` of ``arr``'s dtype: what the FastLanes encodings
    (and zigzag) slice to nothing, as vortex-data 0.93 panics on some empty encoded nodes."""
    return primitive_array(np.zeros(0, array_ptype(arr).np_dtype), nullable=arr.dtype.nullable)


# -- random access ----------------------------------------------------------------------


def bitpacked_take(arr: Array, indices: Any) -> Array:
    """Rows ``indices`` of a ``fastlanes.bitpacked`` array, read straight from the packed
    buffer (no full unpack), as a ``vortex.primitive`` array. Vectorized over ``indices``.

    Out-of-range indices raise ``IndexError``.
    """
    if arr.encoding != BITPACKED.id:
        raise TypeError(f"bitpacked_take needs a fastlanes.bitpacked array, not {arr.encoding}")
    n = len(arr)
    idx = np.asarray(indices)
    if idx.dtype == np.bool_:
        idx = np.flatnonzero(idx)
    idx = idx.astype(np.intp, copy=False).ravel()
    if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise IndexError(f"take index out of range for an array of {n} rows")
    vals, valid = _take_values(arr, idx)
    validity = None
    if BITPACKED._validity_child(arr) is not None:
        validity = bool_array(np.ones(len(idx), np.bool_) if valid is None else valid)
    return primitive_array(vals, validity, nullable=arr.dtype.nullable)


def _take_values(arr: Array, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, validity) at in-range ``idx``: each value read from its packed word(s),
    patches overlaid."""
    m: BitPackedMeta = arr.meta
    n = len(arr)
    p = array_ptype(arr)
    w = p.byte_width * 8
    nchunks = (m.offset + n + 1023) // 1024
    words = typed_buffer(arr, 0, fl.UNSIGNED[w], nchunks * 128 * m.bit_width * 8 // w)
    vals = fl.unpack_at(words, w, m.bit_width, idx + m.offset).view(p.np_dtype)
    if m.patches is not None and m.patches.len:
        pos, sel = patch_positions(m.patches, arr.children[0], n)
        if len(pos):
            pvals, _ = primitive_values(arr.children[1].canonical())
            out, k = patch_hits(pos, idx)
            vals[out] = pvals[sel[k]].astype(vals.dtype, copy=False)
    v = BITPACKED._validity_child(arr)
    if v is None:
        return vals, None
    mask = validity_mask(v, n)
    return vals, None if mask is None else mask[idx]


# -- encoding ---------------------------------------------------------------------------


def bit_length_histogram(u: np.ndarray) -> np.ndarray:
    """Counts of bit lengths 0..W of unsigned values (length W + 1), exact."""
    w = u.dtype.itemsize * 8
    if w <= 16:
        # count each value, then sum the counts of [2**(k-1), 2**k)
        counts = np.bincount(u, minlength=1 << w)
        return np.add.reduceat(counts, [0] + [1 << k for k in range(w)])
    if w == 64 and len(u) and int(u.max()) >= 1 << 53:
        # float64 rounds values this large: split into exact 32-bit halves
        hi = (u >> np.uint64(32)).astype(np.uint32)
        h_hi = bit_length_histogram(hi)
        h_lo = bit_length_histogram(u[hi == 0].astype(np.uint32))
        out = np.zeros(65, dtype=np.int64)
        out[:33] = h_lo
        out[33:] += h_hi[1:]
        return out
    # the biased float64 exponent of x >= 1 is 1022 + bit_length(x); of 0 it is 0
    e = u.astype(np.float64).view(np.int64)
    np.right_shift(e, 52, out=e)
    counts = np.bincount(e, minlength=1023 + w)
    out = counts[1022 : 1023 + w].copy()
    out[0] = counts[0]
    return out


def best_bit_width(hist: np.ndarray, byte_width: int) -> int:
    """The bit width vortex-data picks: minimize packed bytes + (byte_width + 4) per exception."""
    hist = np.asarray(hist, dtype=np.int64)
    n = int(hist.sum())
    per_exc = byte_width + 4
    widths = np.arange(len(hist), dtype=np.int64)
    packed = (widths * n + 7) // 8
    exceptions = (n - np.cumsum(hist)) * per_exc
    cost = packed + exceptions
    best_cost = n * per_exc
    # first width strictly cheaper than all-exceptions and than every narrower width
    best = 0
    for bw in range(len(hist)):
        if cost[bw] < best_cost:
            best_cost = int(cost[bw])
            best = bw
    return best


def bitpacked_array(words: np.ndarray, dtype: dt.Primitive, length: int, bit_width: int,
                    offset: int = 0, patches: tuple[bytes, list[Array]] | None = None,
                    validity: Array | None = None) -> Array:
    """A ``fastlanes.bitpacked`` node from packed words (any dtype; taken as raw bytes)."""
    pmeta = None
    kids: list[Array] = []
    if patches is not None:
        pmeta = PatchesMeta.decode(patches[0], "fastlanes.bitpacked")
        kids = list(patches[1])
    if validity is not None:
        kids.append(validity)
    meta = BitPackedMeta(bit_width, offset, pmeta)
    a = Array(BITPACKED, dtype, length, metadata=meta.encode(),
              buffers=[np.ascontiguousarray(words).reshape(-1).view(np.uint8)], children=kids,
              meta=meta)
    return a


def bitpack(array: Array, bit_width: int | None = None, *, patches: bool = True) -> Array:
    """Bit-pack an integer array.

    ``bit_width`` defaults to vortex-data's choice (from the histogram of bit lengths, with
    exceptions costed at the value width + 4 bytes). Values wider than the bit width (and
    negative values, whose unsigned view is full width) become patches; with
    ``patches=False`` they raise ``ValueError``. Nulls are packed as 0 and the validity is
    kept as a child.
    """
    c = array.canonical()
    if not isinstance(c.dtype, dt.Primitive) or not c.dtype.ptype.is_int:
        raise TypeError(f"bitpack needs an integer array, not {c.dtype!r}")
    p = c.dtype.ptype
    w = p.byte_width * 8
    n = len(c)
    vals, mask = primitive_values(c)
    ut = fl.UNSIGNED[w]
    u = vals.view(ut)
    if mask is not None:
        u = np.where(mask, u, ut.type(0))
    if bit_width is None:
        bit_width = best_bit_width(bit_length_histogram(u), p.byte_width)
    if not 0 <= bit_width <= w:
        raise ValueError(f"bit width {bit_width} is outside 0..{w} for {p.short}")
    exc = np.flatnonzero(u > ut.type((1 << bit_width) - 1)) if bit_width < w else np.zeros(0, np.intp)
    pt = None
    if len(exc):
        if not patches:
            raise ValueError(f"{len(exc)} values do not fit in {bit_width} bits")
        pv = primitive_array(vals[exc], nullable=c.dtype.nullable, ptype=p)
        pt = make_patches(exc, pv)
    nchunks = (n + 1023) // 1024
    if n % 1024:
        padded = np.zeros(nchunks * 1024, dtype=ut)
        padded[:n] = u
    else:
        padded = u
    words = fl.pack(padded, bit_width, fits=not len(exc))
    validity = c.children[0] if c.children else None
    return bitpacked_array(words, c.dtype, n, bit_width, 0, pt, validity)


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_bitpack(a: Array, params: Any = None) -> Array | None:
    if array_ptype(a).is_signed_int:
        vals, mask = primitive_values(a)
        v = vals if mask is None else vals[mask]
        if len(v) and v.min() < 0:
            return None
    return bitpack(a)


def _estimate_bitpack(f: Facts, comp: Any) -> Trial | None:
    if f.lo is None or f.lo < 0:
        return None
    size = packed_cost(as_unsigned(f.vkey), f.n) + f.validity_bytes + NODE_COST
    return Trial(size, lambda: _encode_bitpack(f.a))


register_scheme(Scheme("fastlanes.bitpacked", frozenset({"int"}), _estimate_bitpack, _encode_bitpack,
                       priority=60))
