"""``vortex.onpair``: strings as sequences of codes into a dictionary of tokens (1..16 bytes).

Wire layout (vortex-data 0.93):

* buffer 0: the dictionary blob (token bytes back to back, then zero padding so that a
  16-byte read from any token offset stays inside; alignment 2**3);
* metadata ``OnPairMetadata { 1: uncompressed_lengths_ptype, 2: bits (9..16, the width the
  codes were made with), 3: dict_size, 4: total_tokens, 5: dict_offsets_ptype,
  6: codes_ptype, 7: codes_offsets_ptype }``;
* children: ``dict_offsets`` (dict_size + 1), ``codes`` (total_tokens), ``codes_offsets``
  (n + 1), ``uncompressed_lengths`` (n), optional validity. All integer children may be
  compressed.

Token ``c`` is ``blob[dict_offsets[c]:dict_offsets[c+1]]``. Like the reference, the codes
``codes[co[0]:co[n]]`` are decoded as one stream and cut into rows by the uncompressed
lengths. Decoding is vectorized: each token becomes two 8-byte words (its bytes 0..7 and
8..15) OR-ed into the output as in ``vortex.fsst`` (see ``fsst.scatter_words``).

:func:`onpair_encode` builds a (simplified) OnPair array: a dictionary grown by merging
frequent adjacent token pairs, parsed greedily by longest match.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter, parse
from ._common import canonical_ints, int_ptype_of, narrowest_uint, text_sample, validity_spec
from ._fsst import check_lengths, check_window, decode_tokens, offsets_from_lengths
from ._primitive import primitive_array
from ._scheme import NODE_COST, Facts, Scheme, Trial, int_cost, register_scheme, valid_values

__all__ = ["OnPairEncoding", "onpair_encode", "onpair_decompress", "MAX_TOKEN_SIZE"]

MAX_TOKEN_SIZE = 16
MAX_DICT_SIZE = 1 << 16  # codes are u16 in the reference decoder
_U64 = np.uint64


class OnPairMeta(NamedTuple):
    uncompressed_lengths_ptype: dt.PType
    bits: int
    dict_size: int
    total_tokens: int
    dict_offsets_ptype: dt.PType
    codes_ptype: dt.PType
    codes_offsets_ptype: dt.PType


def onpair_decompress(blob: np.ndarray, dict_offsets: np.ndarray, codes: np.ndarray,
                      expected: int | None = None, what: str = "vortex.onpair") -> np.ndarray:
    """Decode a stream of OnPair codes against a dictionary (vectorized)."""
    nd = len(dict_offsets) - 1
    if nd < 0:
        raise MalformedStreamError(f"{what}: dict_offsets is empty")
    do = dict_offsets.astype(np.int64, copy=False)
    if nd and (int(do[0]) < 0 or int(do[-1]) > blob.nbytes or bool((do[1:] < do[:-1]).any())):
        raise MalformedStreamError(
            f"{what}: dict_offsets are not monotonic inside the {blob.nbytes}-byte dictionary")
    tlen = np.diff(do)
    if nd and int(tlen.max()) > MAX_TOKEN_SIZE:
        raise MalformedStreamError(f"{what}: a dictionary token is over {MAX_TOKEN_SIZE} bytes")
    if nd and int(tlen.min()) == 0:
        raise MalformedStreamError(f"{what}: the dictionary has an empty token")
    if expected is not None and expected > MAX_TOKEN_SIZE * len(codes):
        raise MalformedStreamError(
            f"{what}: {len(codes)} codes cannot decode to the {expected} uncompressed bytes")
    if len(codes) == 0:
        return np.zeros(0, np.uint8)
    cmin, cmax = int(codes.min()), int(codes.max())
    if cmin < 0 or cmax >= nd:
        raise MalformedStreamError(f"{what}: code {cmax if cmax >= nd else cmin} is outside the "
                                   f"{nd}-token dictionary")
    # the "fat" table: each token as 16 zero-padded bytes = two little-endian words
    padded = np.zeros(blob.nbytes + MAX_TOKEN_SIZE, dtype=np.uint8)
    padded[: blob.nbytes] = blob
    k = np.arange(MAX_TOKEN_SIZE)
    fat = padded[do[:-1, None] + k]
    fat[k >= tlen[:, None]] = 0
    words = np.ascontiguousarray(fat).view("<u8")
    lo_tab, hi_tab = np.ascontiguousarray(words[:, 0]), np.ascontiguousarray(words[:, 1])
    lentab = tlen.astype(np.int32)
    total = int(lentab[codes].sum(dtype=np.int64)) if expected is None else expected
    out = np.zeros((total >> 3) + 4, dtype=_U64)
    written = decode_tokens(out, codes, lentab, lo_tab, total, what,
                            hi_tab if int(tlen.max()) > 8 else None)
    if written != total:
        raise MalformedStreamError(
            f"{what}: codes decode to {written} bytes, the uncompressed lengths sum to {total}")
    return out.view(np.uint8)[:total]


class OnPairEncoding(Encoding):
    id = "vortex.onpair"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, (dt.Utf8, dt.Binary)):
            raise MalformedStreamError(f"vortex.onpair cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> OnPairMeta:
        f = parse(raw, "OnPairMetadata")
        bits, size = f.get_uint(2, 0, bits=32), f.get_uint(3, 0, bits=32)
        if bits > 16 or size > MAX_DICT_SIZE:
            raise MalformedStreamError(
                f"vortex.onpair: {size} tokens of {bits} bits; codes are at most 16 bits "
                f"({MAX_DICT_SIZE} tokens)")
        return OnPairMeta(
            int_ptype_of(f.get_uint(1, 0), "vortex.onpair uncompressed_lengths"),
            f.get_uint(2, 0, bits=32),
            f.get_uint(3, 0, bits=32),
            f.get_uint(4, 0),
            int_ptype_of(f.get_uint(5, 0), "vortex.onpair dict_offsets"),
            int_ptype_of(f.get_uint(6, 0), "vortex.onpair codes"),
            int_ptype_of(f.get_uint(7, 0), "vortex.onpair codes_offsets"),
        )

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 1)

    def child_specs(self, dtype, length, meta: OnPairMeta, parts: ArrayParts):
        return [(dt.Primitive(meta.dict_offsets_ptype, False), meta.dict_size + 1),
                (dt.Primitive(meta.codes_ptype, False), meta.total_tokens),
                (dt.Primitive(meta.codes_offsets_ptype, False), length + 1),
                (dt.Primitive(meta.uncompressed_lengths_ptype, False), length),
                *validity_spec(self.id, dtype, length, parts.nchildren, 4)]

    def buffer_alignments(self, arr: Array) -> list[int]:
        return [3]

    def canonicalize(self, arr: Array) -> Array:
        from ._varbin import varbin_array

        n = len(arr)
        ulen = canonical_ints(arr.children[3], "vortex.onpair uncompressed lengths")
        co = canonical_ints(arr.children[2], "vortex.onpair codes_offsets")
        if len(ulen) != n or len(co) != n + 1:
            raise MalformedStreamError("vortex.onpair children do not match the array length")
        total = check_lengths(ulen, self.id)
        check_decoded_size(total, f"vortex.onpair of {n} rows",
                           arr.limits)
        lo, hi = check_window(co, len(arr.children[1]), self.id)
        codes = canonical_ints(arr.children[1].slice(lo, hi), "vortex.onpair codes")
        do = canonical_ints(arr.children[0], "vortex.onpair dict_offsets")
        data = onpair_decompress(arr.buffers[0], do, codes, total)
        validity = arr.children[4] if len(arr.children) > 4 else None
        return varbin_array(arr.dtype, offsets_from_lengths(ulen), data, validity)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        kids = [arr.children[0], arr.children[1], arr.children[2].slice(start, stop + 1),
                arr.children[3].slice(start, stop)]
        if len(arr.children) > 4:
            kids.append(arr.children[4].slice(start, stop))
        a = Array(self, arr.dtype, stop - start, metadata=arr.metadata, buffers=arr.buffers,
                  children=kids, meta=arr.meta)
        return a

    def describe(self, arr: Array) -> str:
        m = arr.meta
        return f"bits={m.bits}, tokens={m.dict_size}, codes={m.total_tokens}"

    def child_names(self, arr: Array) -> list[str]:
        return ["dict_offsets", "codes", "codes_offsets", "uncompressed_lengths", "validity"]


ONPAIR = register_encoding(OnPairEncoding())


# -- encoding ----------------------------------------------------------------------------------


def _runs_first_of_pairs(p: np.ndarray) -> np.ndarray:
    """From sorted candidate positions ``p`` (a pair starts at each), keep a non-overlapping
    left-to-right choice: in every run of consecutive positions, the 1st, 3rd, 5th, ..."""
    if len(p) == 0:
        return p
    new_run = np.ones(len(p), dtype=np.bool_)
    new_run[1:] = p[1:] != p[:-1] + 1
    run_start = p[np.maximum.accumulate(np.where(new_run, np.arange(len(p)), 0))]
    return p[((p - run_start) & 1) == 0]


class _Merges(NamedTuple):
    """One batch of merges: pair (left, right) becomes new id; ids before it are < size."""

    left: np.ndarray
    right: np.ndarray
    new_ids: np.ndarray
    size: int


def _apply(ids: np.ndarray, starts: np.ndarray, merges: _Merges
           ) -> tuple[np.ndarray, np.ndarray]:
    """One batch of merges over a token stream; ``starts`` flags each row's first token.

    Pairs are looked up in a direct ``size x size`` table (up to 4096 ids), else by binary
    search."""
    if len(ids) < 2 or len(merges.left) == 0:
        return ids, starts
    size = merges.size
    keys = merges.left.astype(np.int64) * size + merges.right
    if size <= 4096:
        table = np.full(size * size, -1, dtype=np.int32)
        table[keys] = merges.new_ids
        found = table[ids[:-1].astype(np.int32) * size + ids[1:]]
    else:  # a table would be too large: binary search (pairs are sorted by (left, right))
        k = ids[:-1].astype(np.int64) * size + ids[1:]
        at = np.minimum(np.searchsorted(keys, k), len(keys) - 1)
        found = np.where(keys[at] == k, merges.new_ids[at].astype(np.int32), -1)
    sel = _runs_first_of_pairs(np.flatnonzero((found >= 0) & ~starts[1:]))
    if len(sel) == 0:
        return ids, starts
    ids = ids.copy()
    ids[sel] = found[sel]
    keep = np.ones(len(ids), dtype=np.bool_)
    keep[sel + 1] = False
    return ids[keep], starts[keep]


def _train(sample: np.ndarray, soffs: np.ndarray, byte_id: np.ndarray, n0: int, cap: int,
           tok_bytes: np.ndarray, tok_len: np.ndarray) -> tuple[list[_Merges], int]:
    """Batched pair merging on the sample; fills ``tok_bytes``/``tok_len`` for new ids."""
    ids = byte_id[sample]
    starts = np.zeros(len(ids), dtype=np.bool_)
    lens = np.diff(soffs)
    starts[soffs[:-1][lens > 0]] = True
    size = n0
    rounds: list[_Merges] = []
    k = np.arange(MAX_TOKEN_SIZE)
    while size < cap and len(ids) > 1:
        a, b = ids[:-1], ids[1:]
        ok = ~starts[1:] & (tok_len[a] + tok_len[b] <= MAX_TOKEN_SIZE)
        keys = (a[ok].astype(np.int64) << 16) | b[ok]
        if len(keys) == 0:
            break
        uk, counts = np.unique(keys, return_counts=True)
        want = min(cap - size, max(32, size // 2))
        order = np.lexsort((uk, -counts))
        order = order[counts[order] >= 2][:want]
        if len(order) == 0:
            break
        chosen = np.sort(uk[order])
        new = np.arange(size, size + len(chosen), dtype=np.int64)
        left, right = (chosen >> 16).astype(np.intp), (chosen & 0xFFFF).astype(np.intp)
        ll = tok_len[left]
        src_right = np.clip(k[None, :] - ll[:, None], 0, MAX_TOKEN_SIZE - 1)
        tok_bytes[new] = np.where(k[None, :] < ll[:, None], tok_bytes[left],
                                  np.take_along_axis(tok_bytes[right], src_right, axis=1))
        tok_len[new] = ll + tok_len[right]
        m = _Merges(left, right, new.astype(np.uint16), size)
        rounds.append(m)
        ids, starts = _apply(ids, starts, m)
        size += len(chosen)
    return rounds, size


def onpair_encode(array: Array, *, dict_bits: int = 12) -> Array:
    """Encode a utf8/binary array as ``vortex.onpair`` (decodable by vortex-data 0.93).

    The dictionary starts with the bytes that occur and grows by merging the most
    frequent adjacent token pairs of a deterministic sample (batches of merges, tokens of
    at most 16 bytes, up to ``2**dict_bits`` tokens); the data is then tokenized by
    replaying the same merge batches, so every row's codes spell it exactly. This is a
    simplified trainer, not the reference's; its output follows the reference layout.
    """
    from ._fsst import string_parts, validity_from_mask

    if not 9 <= dict_bits <= 16:
        raise ValueError("dict_bits must be 9..16")
    data, offsets, valid = string_parts(array)
    n = len(offsets) - 1
    cap = 1 << dict_bits
    present = np.flatnonzero(np.bincount(data, minlength=256))
    if len(present) == 0:
        present = np.zeros(1, dtype=np.intp)  # vortex-data wants at least one token
    n0 = len(present)
    byte_id = np.zeros(256, dtype=np.uint16)
    byte_id[present] = np.arange(n0, dtype=np.uint16)
    tok_bytes = np.zeros((cap, MAX_TOKEN_SIZE), dtype=np.uint8)
    tok_len = np.zeros(cap, dtype=np.int64)
    tok_bytes[:n0, 0] = present
    tok_len[:n0] = 1
    sample, soffs = text_sample(data, offsets, 1 << 17, 512)
    rounds, size = _train(sample, soffs, byte_id, n0, cap, tok_bytes, tok_len)
    # tokenize everything by replaying the merge batches
    ids = byte_id[data]
    lens = np.diff(offsets)
    starts = np.zeros(len(ids), dtype=np.bool_)
    starts[offsets[:-1][lens > 0]] = True
    for m in rounds:
        ids, starts = _apply(ids, starts, m)
    # tokens per row: rows own consecutive tokens; empty rows own none
    row_of_first = np.flatnonzero(starts)
    counts = np.zeros(n, dtype=np.int64)
    counts[lens > 0] = np.diff(np.append(row_of_first, len(ids)))
    co = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=co[1:])
    tl = tok_len[:size]
    do = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(tl, out=do[1:])
    blob = np.zeros(int(do[-1]) + MAX_TOKEN_SIZE, dtype=np.uint8)
    blob[: int(do[-1])] = tok_bytes[:size][np.arange(MAX_TOKEN_SIZE)[None, :] < tl[:, None]]
    bits = min(16, max(9, int(size - 1).bit_length()))
    up = narrowest_uint(int(lens.max()) if n else 0)
    dp = narrowest_uint(int(do[-1]))
    cp = narrowest_uint(max(size - 1, 0))
    op = narrowest_uint(int(co[-1]))
    meta = OnPairMeta(up, bits, size, len(ids), dp, cp, op)
    raw = (ProtoWriter().varint(1, int(up)).varint(2, bits).varint(3, size)
           .varint(4, len(ids)).varint(5, int(dp)).varint(6, int(cp)).varint(7, int(op)).finish())
    kids = [primitive_array(do.astype(dp.np_dtype)), primitive_array(ids.astype(cp.np_dtype)),
            primitive_array(co.astype(op.np_dtype)), primitive_array(lens.astype(up.np_dtype))]
    v = validity_from_mask(valid, n)
    if v is not None:
        kids.append(v)
    a = Array(ONPAIR, array.dtype, n, metadata=raw, buffers=[blob], children=kids, meta=meta)
    return a


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_onpair(a: Array, params: Any = None) -> Array | None:
    return onpair_encode(a)


def _estimate_onpair(f: Facts, comp: Any) -> Trial | None:
    """Compact mode: OnPair (a dictionary of up to 4096 tokens of up to 16 bytes, 12-bit
    codes) beats FSST on long text, but encodes several times slower."""

    if not f.opts.compact:
        return None
    data, offsets, _ = f.string_parts
    if len(data) < 16384 or len(data) < 4 * f.n:
        return None
    # at best: a 9-bit code per 16 bytes, at least one per non-empty row
    nonempty = int(np.count_nonzero(offsets[1:] != offsets[:-1]))
    if max(len(data) / 16, nonempty) * 9 / 8 + f.n / 8 >= f.best_size:
        return None
    s = f.sample
    r = _encode_onpair(s)
    if r is None:
        return None
    ns = len(s)
    kids = [valid_values(c) for c in r.children[:4]]
    fixed = r.buffers[0].nbytes + int_cost(kids[0], compact=f.compact)
    per_row = sum(int_cost(k, compact=f.compact) for k in kids[1:])
    size = fixed + per_row * f.n / max(ns, 1) + f.validity_bytes + 5 * NODE_COST
    return Trial(size, lambda: _encode_onpair(f.a))


register_scheme(Scheme("vortex.onpair", frozenset({"str"}), _estimate_onpair, _encode_onpair,
                       priority=160))
