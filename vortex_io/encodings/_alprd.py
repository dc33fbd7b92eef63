"""``vortex.alprd``: ALP for "real doubles", floats split into a dictionary-coded left
part and a raw right part.

Wire layout (0.93): no buffers; ``ALPRDMetadata`` (1 right_bit_width, 2 dict_len, 3 dict
packed u32, 4 left_parts_ptype, 5 patches opt); children ``left_parts`` (unsigned codes
into the dictionary, with the node's nullability), ``right_parts`` (u32 for f32 / u64 for
f64, non-nullable), then with patches ``indices`` and ``values`` (left-part bit patterns,
non-nullable, left_parts_ptype).

Decoding: ``left = dict[code]``; patches replace the left *bit pattern*;
``bits = (left << right_bit_width) | right``, reinterpreted as the float type.

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> v = np.array([1.1, 2.2, 3.3, 1e300, -7.5])
>>> a = alprd_encode(primitive_array(v))
>>> a.encoding, bool((a.to_numpy() == v).all())
('vortex.alprd', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, register_encoding
from .._errors import MalformedStreamError, UnsupportedError
from .._proto import ProtoWriter, parse
from ._alp import FloatPartsEncoding, float_node, sample_trial
from ._common import array_ptype, as_array, canonical_ints, int_ptype_of
from ._patches import PatchesMeta, apply_patches, make_patches
from ._primitive import primitive_array, primitive_values
from ._scheme import (
    NODE_COST,
    Facts,
    Scheme,
    Trial,
    index_width,
    int_cost,
    padded_rows,
    register_scheme,
)
from ._sparse import slice_patches, strict_patch_positions

__all__ = ["ALPRDMeta", "alprd_array", "alprd_encode"]

_BITS = {dt.PType.F32: 32, dt.PType.F64: 64}
_RIGHT = {dt.PType.F32: dt.PType.U32, dt.PType.F64: dt.PType.U64}
_FLOAT_OF_RIGHT = {r: f for f, r in _RIGHT.items()}
MAX_DICT_SIZE = 8
CUT_LIMIT = 16


@dataclass(frozen=True)
class ALPRDMeta:
    """``ALPRDMetadata``: 1 right_bit_width; 2 dict_len; 3 dict (packed u32); 4
    left_parts_ptype; 5 patches opt."""

    right_bit_width: int
    dictionary: tuple[int, ...]
    left_parts_ptype: dt.PType = dt.PType.U16
    patches: PatchesMeta | None = None

    @classmethod
    def decode(cls, raw: bytes) -> ALPRDMeta:
        f = parse(raw, "ALPRDMetadata")
        rbw = f.get_uint(1, 0, bits=32)
        dict_len = f.get_uint(2, 0, bits=32)
        entries = f.get_packed_varints(3)
        if dict_len > len(entries):
            raise MalformedStreamError(
                f"vortex.alprd: dict_len {dict_len} but the dictionary has {len(entries)} entries")
        d = tuple(entries[:dict_len])
        if any(x >= 1 << 16 for x in d):
            raise MalformedStreamError("vortex.alprd: a dictionary entry does not fit in u16")
        lp = int_ptype_of(f.get_uint(4, 0), "vortex.alprd left parts")
        if not lp.is_unsigned:
            raise MalformedStreamError(f"vortex.alprd left parts must be unsigned, not {lp.short}")
        pm = f.get_message(5, "ALPRDMetadata.patches")
        return cls(rbw, d, lp, None if pm is None else PatchesMeta.from_fields(pm, "vortex.alprd"))

    def encode(self) -> bytes:
        w = (ProtoWriter().varint(1, self.right_bit_width).varint(2, len(self.dictionary))
             .packed_varints(3, self.dictionary).varint(4, int(self.left_parts_ptype)))
        if self.patches is not None:
            w.message(5, self.patches.encode())
        return w.finish()


class ALPRDEncoding(FloatPartsEncoding):
    id = "vortex.alprd"

    def decode_meta(self, raw: bytes, dtype: dt.Primitive) -> ALPRDMeta:
        m = ALPRDMeta.decode(raw)
        bits = _BITS[dtype.ptype]
        if m.right_bit_width >= bits:
            raise MalformedStreamError(
                f"vortex.alprd right_bit_width {m.right_bit_width} leaves no left bits in {bits}")
        return m

    def part_specs(self, dtype: dt.Primitive, length: int, meta: ALPRDMeta
                   ) -> tuple[list[tuple[dt.DType, int]], dt.DType]:
        # left codes (carrying the validity), right parts; patches replace left bit patterns
        return ([(dt.Primitive(meta.left_parts_ptype, dtype.nullable), length),
                 (dt.Primitive(_RIGHT[dtype.ptype], False), length)],
                dt.Primitive(meta.left_parts_ptype, False))

    def canonicalize(self, arr: Array) -> Array:
        from ._dict import checked_indices

        m: ALPRDMeta = arr.meta
        n = len(arr)
        p = array_ptype(arr)
        left_c = self.decoded_part(arr, "left parts decode to", lambda lp: lp.is_unsigned)
        codes, valid = primitive_values(left_c)
        vchild = left_c.children[0] if left_c.children else None
        right = canonical_ints(arr.children[1], "vortex.alprd right parts")
        ut = _RIGHT[p].np_dtype
        if right.dtype != ut or len(right) != n:
            raise MalformedStreamError(f"vortex.alprd right parts are {right.dtype}, expected {ut}")
        dictionary = np.array(m.dictionary, dtype=ut)
        if len(dictionary) == 0:
            if n and (valid is None or valid.any()):
                raise MalformedStreamError("vortex.alprd: codes into an empty dictionary")
            dictionary = np.zeros(1, dtype=ut)
        idx = checked_indices(codes, valid, len(dictionary), "vortex.alprd left parts")
        if m.patches is not None and m.patches.len:
            left = dictionary[idx]
            strict_patch_positions(m.patches, arr.children[2], n, "vortex.alprd")
            left, _ = apply_patches(left, None, m.patches, arr.children[2], arr.children[3], n)
            left <<= ut.type(m.right_bit_width)
            out = left
        else:
            out = (dictionary << ut.type(m.right_bit_width))[idx]
        out |= right
        return primitive_array(out.view(p.np_dtype), vchild, nullable=arr.dtype.nullable, ptype=p)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        m: ALPRDMeta = arr.meta
        patches = None
        if m.patches is not None:
            patches = slice_patches(m.patches, arr.children[2:], start, stop)
        return alprd_array(arr.children[0].slice(start, stop), arr.children[1].slice(start, stop),
                           m.right_bit_width, m.dictionary, patches, arr.dtype)

    def describe(self, arr: Array) -> str:
        m: ALPRDMeta = arr.meta
        return (f"right_bits={m.right_bit_width}, dict={list(m.dictionary)}"
                + (f", patches={m.patches.len}" if m.patches else ""))

    def child_names(self, arr: Array) -> list[str]:
        return ["left_parts", "right_parts", "patch_indices", "patch_values", "patch_chunk_offsets"]


ALPRD = register_encoding(ALPRDEncoding())


def alprd_array(left: Array, right: Array, right_bit_width: int, dictionary: Any,
                patches: tuple[PatchesMeta, list[Array]] | None = None,
                dtype: dt.DType | None = None) -> Array:
    """A ``vortex.alprd`` array from left codes, right parts, the left-part dictionary and
    optional left-part patches (meta, [indices, values])."""
    d, pm, kids = float_node(right, _FLOAT_OF_RIGHT, "ALP-RD right parts must be u32 or u64",
                             left.dtype.nullable, dtype, patches)
    meta = ALPRDMeta(int(right_bit_width), tuple(int(x) for x in dictionary), array_ptype(left), pm)
    a = Array(ALPRD, d, len(left), metadata=meta.encode(), children=[left, right, *kids], meta=meta)
    return a


def _bit_width(x: int) -> int:
    return max(int(x).bit_length(), 1)


def find_dictionary(bits: np.ndarray, total_bits: int) -> tuple[int, np.ndarray]:
    """(right_bit_width, left dictionary) minimizing the estimated size on ``bits`` (a
    sample of raw float bits), as ALP-RD does: for each cut of 1..16 left bits, the 8 most
    frequent left parts form the dictionary; the rest are exceptions."""
    best: tuple[float, int, np.ndarray] | None = None
    n = max(len(bits), 1)
    for p in range(1, CUT_LIMIT + 1):
        rbw = total_bits - p
        left = (bits >> bits.dtype.type(rbw)).astype(np.uint16)
        uniq, counts = np.unique(left, return_counts=True)
        order = np.argsort(-counts, kind="stable")
        top = uniq[order[:MAX_DICT_SIZE]]
        exc = int(counts[order[MAX_DICT_SIZE:]].sum())
        lbw = _bit_width(max(len(top) - 1, 0))
        est = rbw + lbw + exc * 32 / n
        if best is None or est < best[0]:
            best = (est, rbw, top)
    assert best is not None
    return best[1], best[2]


def alprd_encode(array: Any) -> Array:
    """ALP-RD-encode an f32/f64 array (``vortex_io.Array`` or Arrow): the dictionary and
    cut are chosen on a sample; left parts not in the dictionary become patches. Null
    rows get code 0 and right part 0. Decodes to the input bit for bit."""

    arr = as_array(array)
    d = arr.dtype
    if not isinstance(d, dt.Primitive) or d.ptype not in _BITS:
        raise UnsupportedError(f"ALP-RD encodes f32 and f64 arrays, not {d!r}")
    p = d.ptype
    nbits = _BITS[p]
    ut = _RIGHT[p].np_dtype
    c = arr.canonical()
    v, valid = primitive_values(c)
    vchild = c.children[0] if c.children else None
    if valid is not None and valid.all():
        valid = None
    bits = v.view(ut)
    if valid is not None:
        bits = np.where(valid, bits, ut.type(0))
    sample = bits if valid is None else bits[valid]
    if len(sample) > 1024:
        sample = sample[:: len(sample) // 1024][:1024]
    if len(sample) == 0:
        rbw, dictionary = nbits - 1, np.zeros(1, dtype=np.uint16)
    else:
        rbw, dictionary = find_dictionary(sample, nbits)
    left = (bits >> ut.type(rbw)).astype(np.uint16)
    right = bits & ut.type((1 << rbw) - 1)
    lut = np.full(1 << 16, -1, dtype=np.int32)
    lut[dictionary] = np.arange(len(dictionary), dtype=np.int32)
    codes = lut[left]
    miss = codes < 0
    if valid is not None:
        miss &= valid
    pos = np.flatnonzero(miss)
    codes = np.where(codes < 0, 0, codes).astype(np.uint16)
    left_arr = primitive_array(codes, vchild, nullable=d.nullable, ptype=dt.PType.U16)
    right_arr = primitive_array(right, ptype=_RIGHT[p])
    patches = None
    if len(pos):
        meta_raw, kids = make_patches(pos, primitive_array(left[pos], ptype=dt.PType.U16))
        patches = (PatchesMeta.decode(meta_raw, "vortex.alprd"), kids)
    return alprd_array(left_arr, right_arr, rbw, dictionary.tolist(), patches, d)


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_alprd(a: Array, params: Any = None) -> Array | None:
    if array_ptype(a) == dt.PType.F16:
        return None
    return alprd_encode(a)


def _size_alprd(f: Facts, r: Array) -> float:
    m: ALPRDMeta = r.meta
    ns = len(r)
    left, _ = primitive_values(r.children[0])
    size = int_cost(left, ns, dict_=False, compact=f.compact) + padded_rows(ns) * m.right_bit_width / 8 + NODE_COST
    if m.patches is not None:
        size += m.patches.len * (2 + index_width(f.n)) + 2 * NODE_COST
    return size * f.n / max(ns, 1) + f.validity_bytes + 2 * NODE_COST


def _estimate_alprd(f: Facts, comp: Any) -> Trial | None:
    return sample_trial(f, _encode_alprd, _size_alprd)


register_scheme(Scheme("vortex.alprd", frozenset({"float"}), _estimate_alprd, _encode_alprd,
                       priority=140))
