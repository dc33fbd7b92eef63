"""``fastlanes.rle``: run-length encoding within 1024-value chunks.

Wire form (vortex-data 0.93): ``RLEMetadata`` (1 values_len, 2 indices_len, 3 indices_ptype,
4 values_idx_offsets_len, 5 values_idx_offsets_ptype, 6 offset < 1024); no buffers; children
``values`` (the dtype made non-nullable, values_len: the run values of every chunk, chunk by
chunk), ``indices`` (unsigned ``indices_ptype`` with the node's nullability, indices_len =
whole chunks: each position's run number within its chunk; carries the validity) and
``values_idx_offsets`` (unsigned, non-nullable: where each chunk's runs start in
``values``, relative to the first entry).

Chunk c of the decoded values is ``values[o[c] - o[0] + indices[c * 1024 : (c + 1) * 1024]]``
and the node is rows ``[offset, offset + n)``. A chunk with a single run ignores its indices.

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> r = rle_encode(primitive_array(np.repeat(np.array([5, 7, 5], dtype=np.int16), 400)))
>>> r.encoding, r.children[0].to_pylist(), r.children[2].to_pylist()
('fastlanes.rle', [5, 7, 5, 5], [0, 3])
>>> bool((r.to_numpy() == np.repeat([5, 7, 5], 400)).all())
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ._bitpacked import empty_slice
from ._bool import bool_array
from ._common import array_ptype, canonical_ints, int_ptype_of, primitive, validity_mask
from ._delta import check_chunk_window, chunk_window
from ._primitive import primitive_array, primitive_values

__all__ = ["RLEMeta", "RLEEncoding", "RLE", "rle_array", "rle_encode"]


@dataclass(frozen=True)
class RLEMeta:
    """Parsed ``RLEMetadata``."""

    values_len: int
    indices_len: int
    indices_ptype: dt.PType
    offsets_len: int
    offsets_ptype: dt.PType
    offset: int = 0

    @classmethod
    def decode(cls, raw: bytes) -> RLEMeta:
        f = parse(raw, "RLEMetadata")
        ip = int_ptype_of(f.get_uint(3, 0), "fastlanes.rle indices")
        op = int_ptype_of(f.get_uint(5, 0), "fastlanes.rle values_idx_offsets")
        if not ip.is_unsigned or not op.is_unsigned:
            raise MalformedStreamError("fastlanes.rle: indices and offsets must be unsigned")
        off = f.get_uint(6, 0)
        if off >= 1024:
            raise MalformedStreamError(f"fastlanes.rle: offset {off} is not < 1024")
        return cls(f.get_uint(1, 0), f.get_uint(2, 0), ip, f.get_uint(4, 0), op, off)

    def encode(self) -> bytes:
        return (ProtoWriter().varint(1, self.values_len).varint(2, self.indices_len)
                .varint(3, int(self.indices_ptype)).varint(4, self.offsets_len)
                .varint(5, int(self.offsets_ptype)).varint(6, self.offset).finish())


class RLEEncoding(Encoding):
    id = "fastlanes.rle"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Primitive):
            raise MalformedStreamError(f"fastlanes.rle cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> RLEMeta:
        m = RLEMeta.decode(raw)
        check_chunk_window(self.id, m.indices_len, "indices", m.offset, length)
        nchunks = (m.offset + length + 1023) // 1024
        if m.offsets_len < nchunks:
            raise MalformedStreamError(
                f"fastlanes.rle: {m.offsets_len} chunk offsets for {nchunks} chunks")
        return m

    def child_specs(self, dtype, length, meta: RLEMeta, parts: ArrayParts):
        if parts.nchildren != 3:
            raise MalformedStreamError(f"fastlanes.rle takes 3 children, got {parts.nchildren}")
        return [(dt.Primitive(primitive(dtype, self.id).ptype, False), meta.values_len),
                (dt.Primitive(meta.indices_ptype, dtype.nullable), meta.indices_len),
                (dt.Primitive(meta.offsets_ptype, False), meta.offsets_len)]

    def validate(self, arr: Array, limits) -> None:
        nchunks = (arr.meta.offset + len(arr) + 1023) // 1024
        check_decoded_size(nchunks * 1024 * array_ptype(arr).byte_width,
                           f"fastlanes.rle of {len(arr)} rows", limits)

    def canonicalize(self, arr: Array) -> Array:
        m: RLEMeta = arr.meta
        n = len(arr)
        p = array_ptype(arr)
        nchunks = (m.offset + n + 1023) // 1024
        vc = arr.children[0].canonical()
        if not isinstance(vc.dtype, dt.Primitive) or vc.dtype.ptype != p:
            raise MalformedStreamError(f"fastlanes.rle: values decoded to {vc.dtype!r}")
        values = primitive_values(vc)[0]
        offs = canonical_ints(arr.children[2], "fastlanes.rle values_idx_offsets")
        ic = arr.children[1].canonical()
        if not isinstance(ic.dtype, dt.Primitive) or not ic.dtype.ptype.is_unsigned:
            raise MalformedStreamError(f"fastlanes.rle: indices decoded to {ic.dtype!r}")
        idx, imask = primitive_values(ic)
        if nchunks == 0:
            vals = np.zeros(0, dtype=p.np_dtype)
        else:
            starts = offs[:nchunks].astype(np.int64) - np.int64(offs[0])
            ends = np.empty(nchunks, dtype=np.int64)
            ends[:-1] = starts[1:]
            ends[-1] = len(values)
            counts = ends - starts
            if (starts < 0).any() or (counts < 1).any() or ends[-1] > len(values):
                raise MalformedStreamError("fastlanes.rle: chunk offsets do not fit the values")
            # (u64 indices >= 2**63 read negative as int64: outside the runs too)
            ix = idx[: nchunks * 1024].reshape(nchunks, 1024).astype(np.int64)
            top = (counts - 1)[:, None]
            if imask is not None:
                # null positions may hold anything: clamp them into [0, top]
                null = ~imask[: nchunks * 1024].reshape(nchunks, 1024)
                np.minimum(ix, top, out=ix, where=null)
                np.maximum(ix, 0, out=ix, where=null)
            single = counts == 1
            if single.any():
                ix[single] = 0
            if (ix > top).any() or (ix < 0).any():
                raise MalformedStreamError("fastlanes.rle: an index is past its chunk's runs")
            ix += starts[:, None]
            vals = values[ix.reshape(-1)[m.offset : m.offset + n]]
        validity = None
        if ic.children:
            mask = validity_mask(ic.children[0], len(ic))

            validity = bool_array(np.ones(n, np.bool_) if mask is None
                                  else mask[m.offset : m.offset + n])
        return primitive_array(vals, validity, nullable=arr.dtype.nullable)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        m: RLEMeta = arr.meta
        if stop == start:
            return empty_slice(arr)
        c0, c1, new_off = chunk_window(m.offset, start, stop)
        c1 = min(max(c1, c0 + 1), m.indices_len // 1024)
        if c1 <= c0:
            return arr.canonical().slice(start, stop)
        offs = canonical_ints(arr.children[2], "fastlanes.rle values_idx_offsets")
        if c1 > len(offs):
            raise MalformedStreamError("fastlanes.rle: too few chunk offsets")
        v0 = int(offs[c0]) - int(offs[0])
        v1 = int(offs[c1]) - int(offs[0]) if c1 < len(offs) else m.values_len
        if not 0 <= v0 <= v1 <= m.values_len:
            raise MalformedStreamError("fastlanes.rle: chunk offsets do not fit the values")
        indices = arr.children[1].slice(c0 * 1024, c1 * 1024)
        offsets = arr.children[2].slice(c0, c1)
        # offsets are read relative to their first entry: the values start at chunk c0's runs
        values = arr.children[0].slice(v0, v1)
        return rle_array(values, indices, offsets, new_off, stop - start, arr.dtype)

    def describe(self, arr: Array) -> str:
        return f"runs={arr.meta.values_len}" + (f", offset={arr.meta.offset}" if arr.meta.offset else "")

    def child_names(self, arr: Array) -> list[str]:
        return ["values", "indices", "values_idx_offsets"]


RLE = register_encoding(RLEEncoding())


def rle_array(values: Array, indices: Array, offsets: Array, offset: int, length: int,
              dtype: dt.DType | None = None) -> Array:
    """A ``fastlanes.rle`` node: rows ``[offset, offset + length)`` of the decoded chunks."""
    d = dtype if dtype is not None else dt.Primitive(array_ptype(values), indices.dtype.nullable)
    meta = RLEMeta(len(values), len(indices), array_ptype(indices), len(offsets),
                   array_ptype(offsets), offset)
    a = Array(RLE, d, length, metadata=meta.encode(), children=[values, indices, offsets],
              meta=meta)
    return a


def rle_encode(array: Array) -> Array:
    """Run-length encode a primitive array chunk by chunk (1024 values; runs restart at each
    chunk). Nulls take the previous valid value of their chunk (0 before the first) so they
    do not break runs; the last chunk is padded with the last value. Floats compare by bits.
    Indices are u16 (u8 when every chunk has at most 256 runs); offsets are u64."""
    c = array.canonical()
    if not isinstance(c.dtype, dt.Primitive):
        raise TypeError(f"rle_encode needs a primitive array, not {c.dtype!r}")
    p = c.dtype.ptype
    vals, mask = primitive_values(c)
    n = len(vals)
    bits = vals.view(f"<u{p.byte_width}")
    if mask is not None:
        idx = np.where(mask, np.arange(n), -1)
        np.maximum.accumulate(idx, out=idx)
        chunk_start = np.arange(n) & ~1023
        bits = np.where(idx >= chunk_start, bits[np.maximum(idx, 0)], bits.dtype.type(0))
    nchunks = (n + 1023) // 1024
    padded = np.empty(nchunks * 1024, dtype=bits.dtype)
    padded[:n] = bits
    if n:
        padded[n:] = bits[-1]
    new_run = np.ones(nchunks * 1024, dtype=np.bool_)
    if len(padded) > 1:
        np.not_equal(padded[1:], padded[:-1], out=new_run[1:])
    new_run[::1024] = True
    run_id = np.cumsum(new_run) - 1
    run_vals = padded[new_run].view(p.np_dtype)
    chunk_first_run = run_id[::1024]
    local = (run_id.reshape(nchunks, 1024) - chunk_first_run[:, None]).reshape(-1)
    ip = dt.PType.U8 if nchunks == 0 or int(local.max(initial=0)) < 256 else dt.PType.U16
    validity = None
    if mask is not None:
        pm = np.zeros(nchunks * 1024, dtype=np.bool_)
        pm[:n] = mask
        validity = bool_array(pm)
    elif c.dtype.nullable:
        pm = np.zeros(nchunks * 1024, dtype=np.bool_)
        pm[:n] = True
        validity = bool_array(pm)
    indices = primitive_array(local.astype(ip.np_dtype), validity, nullable=c.dtype.nullable)
    values = primitive_array(np.ascontiguousarray(run_vals), nullable=False)
    offsets = primitive_array(chunk_first_run.astype(np.uint64), nullable=False)
    return rle_array(values, indices, offsets, 0, n, c.dtype)
