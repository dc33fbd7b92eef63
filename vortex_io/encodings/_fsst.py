"""``vortex.fsst``: strings compressed with a static table of up to 255 symbols of 1..8 bytes.

Wire layout (vortex-data 0.93, the "current" three-buffer form):

* buffers: ``symbols`` (u64 little-endian each, symbol bytes in little-endian order,
  alignment 2**3), ``symbol_lengths`` (u8 each, 1..8), ``codes`` (all rows' codes back to
  back);
* children: ``uncompressed_lengths`` (integers, n), ``codes_offsets`` (integers, n + 1),
  optional validity;
* metadata: ``FSSTMetadata { 1: uncompressed_lengths_ptype, 2: codes_offsets_ptype }``.

The legacy two-buffer form (codes as a ``vortex.varbin`` binary child followed by the
uncompressed lengths) is read too.

A code ``c < 255`` stands for ``symbol[c][:len[c]]``; code 255 escapes the next byte,
which is emitted literally. Like the reference decoder, the codes of all rows
(``codes[co[0]:co[n]]``) are decoded in one pass and cut into rows by the uncompressed
lengths. Decoding is vectorized: escapes are located with run-parity masks, every token
becomes a (position, 8-byte little-endian word) pair, and the words are combined into the
output words block by block (``decode_tokens`` / ``scatter_words``). Sizes are checked
before anything is allocated or written.

Encoding (:func:`fsst_encode`) trains a table with :func:`fsst_train` unless one is given
and parses greedily (longest symbol first) with a vectorized parse, see ``_parse``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding, typed_view
from .._errors import LimitExceededError, MalformedStreamError
from .._proto import ProtoWriter, parse
from ..compute._kernels import take
from ..compute._numeric import (
    bytes_equal_at,
    decoded_ints,
    gather_ranges,
    needle_bytes,
    with_validity,
)
from ._bool import bool_array
from ._common import (
    array_ptype,
    canonical_ints,
    int_ptype_of,
    narrowest_uint,
    text_sample,
    validity_mask,
    validity_spec,
)
from ._constant import constant_array
from ._primitive import primitive_array
from ._scheme import NODE_COST, Facts, Scheme, Trial, int_cost, register_scheme

__all__ = [
    "FSSTEncoding",
    "SymbolTable",
    "fsst_encode",
    "fsst_train",
    "fsst_compress",
    "fsst_decompress",
    "string_parts",
    "offsets_from_lengths",
    "validity_from_mask",
    "scatter_words",
    "decode_tokens",
]

ESCAPE = 255
_U64 = np.uint64
#: MASKS[L] keeps the low L bytes of a u64
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=_U64)


class FSSTMeta(NamedTuple):
    uncompressed_lengths_ptype: dt.PType
    codes_offsets_ptype: dt.PType


# -- vectorized helpers shared with vortex.onpair -------------------------------------------


#: tokens per block in ``decode_tokens``: small enough for the temporaries to stay in cache
BLOCK = 1 << 16


def scatter_words(out: np.ndarray, pos: np.ndarray, vals: np.ndarray) -> None:
    """OR 8-byte little-endian ``vals`` into the u64 buffer ``out`` at byte positions ``pos``.

    ``pos`` must be strictly increasing, and each value must hold only the bytes that belong
    to it (higher bytes zero) and must not reach the next value's position; ``out`` needs one
    spare word past the last position. The values that land in one output word are then
    adjacent and occupy disjoint bits, so their OR is their (wrapping) sum: one ``cumsum``
    and a difference at the word boundaries combine them, much faster than ``reduceat``.
    """
    if len(pos) == 0:
        return
    w = pos >> 3
    r = ((pos & 7) << 3).view(_U64)
    lo = vals << r
    # vals >> (64 - r), written so that r == 0 gives 0 instead of an undefined shift by 64
    hi = vals >> _U64(1)
    hi >>= _U64(63) - r
    last = np.flatnonzero(w[1:] != w[:-1])
    last = np.append(last, len(w) - 1)
    np.cumsum(lo, out=lo)
    np.cumsum(hi, out=hi)
    a = lo[last]
    a[1:] -= a[:-1]
    b = hi[last]
    b[1:] -= b[:-1]
    w0, k = int(w[0]), len(last)
    if int(w[-1]) - w0 + 1 == k:  # every word starts a value (tokens of <= 8 bytes): slices
        out[w0 : w0 + k] |= a
        out[w0 + 1 : w0 + 1 + k] |= b
    else:
        uw = w[last]
        out[uw] |= a
        uw += 1
        out[uw] |= b


def decode_tokens(out: np.ndarray, tok: np.ndarray, lentab: np.ndarray, valtab: np.ndarray,
                  limit: int, what: str, hi_tab: np.ndarray | None = None) -> int:
    """Write the tokens ``tok`` (indices into ``lentab``/``valtab``) back to back into the
    u64 buffer ``out``, block by block; returns the bytes written.

    ``valtab[t]``: token t's first 8 bytes as a little-endian word (zero beyond its length);
    ``hi_tab[t]``: bytes 8..15 for tokens longer than 8. A token of length 0 is an invalid
    code (``MalformedStreamError``), and so is running past ``limit`` bytes (checked before
    each block is written).
    """
    base = 0
    for i in range(0, len(tok), BLOCK):
        t = tok[i : i + BLOCK]
        ln = lentab[t]
        if int(ln.min()) == 0:
            bad = int(t[np.argmin(ln)])
            raise MalformedStreamError(f"{what}: code {bad} is not in the symbol table")
        ends = np.cumsum(ln, dtype=np.int64)
        ends += base
        end = int(ends[-1])
        if end > limit:
            raise MalformedStreamError(f"{what}: codes decode to more than {limit} bytes")
        pos = ends - ln
        scatter_words(out, pos, valtab[t])
        if hi_tab is not None:
            long_ = np.flatnonzero(ln > 8)
            if len(long_):
                scatter_words(out, pos[long_] + 8, hi_tab[t[long_]])
        base = end
    return base


def offsets_from_lengths(lengths: np.ndarray) -> Array:
    """Row offsets (n + 1, starting at 0) from row lengths: i32 when they fit, else i64."""

    n = len(lengths)
    total = int(lengths.sum(dtype=np.uint64)) if n else 0
    odt = np.int32 if total < 2**31 else np.int64
    offs = _memory.empty(n + 1, odt)
    offs[0] = 0
    np.cumsum(lengths, out=offs[1:], dtype=odt)
    return primitive_array(offs)


def check_lengths(ulen: np.ndarray, what: str) -> int:
    """Uncompressed lengths must be non-negative; returns their sum (which must not
    overflow: a sum past 2**62 bytes is refused before it can wrap around)."""
    if len(ulen) == 0:
        return 0
    if ulen.dtype.kind == "i" and int(ulen.min()) < 0:
        raise MalformedStreamError(f"{what}: negative uncompressed length")
    if float(ulen.sum(dtype=np.float64)) > 2.0**62:
        raise LimitExceededError(f"{what}: uncompressed lengths sum past 2**62 bytes")
    return int(ulen.sum(dtype=np.uint64))


def check_window(co: np.ndarray, limit: int, what: str) -> tuple[int, int]:
    """codes_offsets must be non-decreasing and inside ``[0, limit]``; returns (first, last)."""
    if len(co) == 0:
        raise MalformedStreamError(f"{what}: codes_offsets is empty")
    lo, hi = int(co[0]), int(co[-1])
    if lo < 0 or hi > limit:
        raise MalformedStreamError(
            f"{what}: codes_offsets [{lo}, {hi}] fall outside {limit} codes")
    if len(co) > 1 and bool((co[1:] < co[:-1]).any()):
        raise MalformedStreamError(f"{what}: codes_offsets are not monotonic")
    return lo, hi


def string_parts(array: Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(bytes, int64 offsets (n + 1, from 0), valid mask or None) of a utf8/binary array.

    Null rows are given zero length (their bytes, if any, are dropped).
    """
    import pyarrow as pa

    if not isinstance(array.dtype, (dt.Utf8, dt.Binary)):
        raise TypeError(f"expected a utf8 or binary array, not {array.dtype!r}")
    a = array.to_arrow()
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks() if a.num_chunks else pa.array([], type=a.type)
    if pa.types.is_string_view(a.type) or pa.types.is_string(a.type):
        a = a.cast(pa.large_string())
    elif pa.types.is_binary_view(a.type) or pa.types.is_binary(a.type):
        a = a.cast(pa.large_binary())
    n = len(a)
    bufs = a.buffers()
    if n == 0:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64), None
    offs = np.frombuffer(bufs[1], dtype=np.int64)[a.offset : a.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    valid = None
    if a.null_count:
        valid = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    lens = np.diff(offs)
    if valid is not None:
        lens = np.where(valid, lens, 0)
    start, stop = int(offs[0]), int(offs[-1])
    if valid is None or int(lens.sum()) == stop - start:  # no bytes under nulls
        data = data[start:stop]
        new = offs - start
    else:
        keep = np.repeat(valid, np.diff(offs))
        data = data[start:stop][keep]
        new = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=new[1:])
    return np.ascontiguousarray(data), new.astype(np.int64, copy=False), valid


def validity_from_mask(valid: np.ndarray | None, n: int) -> Array | None:
    if valid is None:
        return None
    if not valid.any():
        return constant_array(False, n, dt.Bool())
    return bool_array(valid)


# -- decoding --------------------------------------------------------------------------------


#: tokens per block in ``fsst_decompress`` (bounds its temporaries: 17 bytes per token)
DECODE_BLOCK = 1 << 16
#: _BYTE_MASK[L]: a u64 whose low L bytes are 0x01 (as bools: "keep the first L bytes")
_BYTE_MASK = np.array([int.from_bytes(b"\x01" * n + b"\x00" * (8 - n), "little") for n in range(9)],
                      dtype=_U64)


def _literal_positions(codes: np.ndarray, what: str) -> np.ndarray:
    """Positions of the bytes that an escape (255) makes literal, sorted (empty when the
    stream has no escape)."""
    p = np.flatnonzero(codes == ESCAPE)
    if len(p) == 0:
        return p
    # a run of 0xFF bytes starts at a code position: escape, literal, escape, ...
    new_run = np.ones(len(p), dtype=np.bool_)
    new_run[1:] = p[1:] != p[:-1] + 1
    run_start = p[np.maximum.accumulate(np.where(new_run, np.arange(len(p)), 0))]
    esc = p[((p - run_start) & 1) == 0]
    if esc[-1] == len(codes) - 1:
        raise MalformedStreamError(f"{what}: the code stream ends with an escape")
    return esc + 1


def fsst_decompress(symbols: np.ndarray, lengths: np.ndarray, codes: np.ndarray,
                    expected: int | None = None, what: str = "vortex.fsst") -> np.ndarray:
    """Decode a whole FSST code stream (vectorized).

    ``symbols``: u64 per symbol (little-endian bytes), ``lengths``: u8 per symbol,
    ``codes``: the u8 code stream. ``expected``: the decoded size it must have.

    Every code becomes a token: a symbol, an escape (which emits nothing) or, for the
    byte after an escape, the literal ``256 + byte``. Tokens are looked up as one 8-byte
    word and one 8-byte keep-mask (the first ``length`` bytes), and ``np.compress`` of
    the words' bytes by the masks' bytes is the output: a few passes over the codes,
    block by block, each block's size checked before it is written.
    """
    nsym = len(symbols)
    m = len(codes)
    if expected is not None and expected > 8 * m:  # checked before allocating the output
        raise MalformedStreamError(
            f"{what}: {m} codes cannot decode to the {expected} uncompressed bytes")
    if m == 0:
        if expected:
            raise MalformedStreamError(
                f"{what}: codes decode to 0 bytes, the uncompressed lengths sum to {expected}")
        return np.zeros(0, np.uint8)
    lits = _literal_positions(codes, what)
    if nsym < ESCAPE:
        # codes nsym..254 name no symbol (literals may be any byte: they are exempt)
        bad = (codes >= nsym) & (codes != ESCAPE)
        if len(lits):
            bad[lits] = False
        if bad.any():
            raise MalformedStreamError(
                f"{what}: code {int(codes[np.argmax(bad)])} is not in the symbol table")
    # token tables: 0..254 symbols, 255 the escape (nothing), 256..511 escaped bytes
    lentab = np.zeros(512, dtype=np.uint8)
    valtab = np.zeros(512, dtype=_U64)
    lentab[:nsym] = np.minimum(lengths, 8)
    valtab[:nsym] = symbols
    lentab[256:] = 1
    valtab[256:] = np.arange(256, dtype=_U64)
    masktab = _BYTE_MASK[lentab]
    limit = 8 * m if expected is None else expected
    out = _memory.empty(limit if expected is not None else 0, np.uint8)
    parts: list[np.ndarray] = []
    base = 0
    for i in range(0, m, DECODE_BLOCK):
        c = codes[i : i + DECODE_BLOCK]
        t = c.astype(np.intp)
        if len(lits):
            lo, hi = np.searchsorted(lits, (i, i + len(t)))
            t[lits[lo:hi] - i] += 256
        ln = np.take(lentab, t, mode="clip")
        nb = int(ln.sum(dtype=np.int64))
        if base + nb > limit:
            raise MalformedStreamError(f"{what}: codes decode to more than {limit} bytes")
        words = np.take(valtab, t, mode="clip").view(np.uint8)
        keep = np.take(masktab, t, mode="clip").view(np.bool_)
        if expected is not None:
            np.compress(keep, words, out=out[base : base + nb])
        else:
            parts.append(np.compress(keep, words))
        base += nb
    if expected is None:
        return np.concatenate(parts) if len(parts) != 1 else parts[0]
    if base != expected:
        raise MalformedStreamError(
            f"{what}: codes decode to {base} bytes, the uncompressed lengths sum to {expected}")
    return out


class FSSTEncoding(Encoding):
    id = "vortex.fsst"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, (dt.Utf8, dt.Binary)):
            raise MalformedStreamError(f"vortex.fsst cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> FSSTMeta:
        f = parse(raw, "FSSTMetadata")
        return FSSTMeta(int_ptype_of(f.get_uint(1, 0), "vortex.fsst uncompressed_lengths"),
                        int_ptype_of(f.get_uint(2, 0), "vortex.fsst codes_offsets"))

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (2, 3)

    def child_specs(self, dtype, length, meta: FSSTMeta, parts: ArrayParts):
        ulen = (dt.Primitive(meta.uncompressed_lengths_ptype, False), length)
        if len(parts.buffers) == 2:  # legacy: codes as a binary varbin child
            if parts.nchildren != 2:
                raise MalformedStreamError(
                    f"vortex.fsst (legacy form) takes 2 children, got {parts.nchildren}")
            return [(dt.Binary(dtype.nullable), length), ulen]
        return [ulen, (dt.Primitive(meta.codes_offsets_ptype, False), length + 1),
                *validity_spec(self.id, dtype, length, parts.nchildren, 2)]

    def validate(self, arr: Array, limits) -> None:
        sym, lens = arr.buffers[0], arr.buffers[1]
        if sym.nbytes % 8:
            raise MalformedStreamError(f"vortex.fsst symbols buffer of {sym.nbytes} bytes is not u64s")
        nsym = sym.nbytes // 8
        if nsym > 255:
            raise MalformedStreamError(f"vortex.fsst has {nsym} symbols, at most 255 allowed")
        if lens.nbytes != nsym:
            raise MalformedStreamError(
                f"vortex.fsst has {nsym} symbols but {lens.nbytes} symbol lengths")
        if nsym and (int(lens.min()) < 1 or int(lens.max()) > 8):
            raise MalformedStreamError("vortex.fsst symbol lengths must be 1..8")

    def buffer_alignments(self, arr: Array) -> list[int]:
        return [3, 0, 0][: len(arr.buffers)]

    def symbol_table(self, arr: Array) -> tuple[np.ndarray, np.ndarray]:
        nsym = arr.buffers[0].nbytes // 8
        return typed_view(arr.buffers[0], np.dtype("<u8"), nsym, self.id), arr.buffers[1]

    def _parts(self, arr: Array) -> tuple[np.ndarray, Array, Array, Array | None]:
        """(codes bytes, codes_offsets array, uncompressed lengths array, validity)."""
        if len(arr.buffers) == 2:
            codes = arr.children[0].canonical()
            if codes.encoding != "vortex.varbin":
                raise MalformedStreamError(
                    f"vortex.fsst (legacy form): codes must be vortex.varbin, not {codes.encoding}")
            v = codes.children[1] if len(codes.children) > 1 else None
            return codes.buffers[0], codes.children[0], arr.children[1], v
        v = arr.children[2] if len(arr.children) > 2 else None
        return arr.buffers[2], arr.children[1], arr.children[0], v

    def _checked_parts(self, arr: Array, ints: Callable[[Array, str], np.ndarray]
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Array | None, int]:
        """(codes bytes, codes_offsets, uncompressed lengths, validity child, total
        uncompressed bytes), the integer children decoded by ``ints`` and their lengths
        checked (the window of the offsets is the caller's to check)."""

        n = len(arr)
        codes, co_arr, ulen_arr, validity = self._parts(arr)
        ulen = ints(ulen_arr, "vortex.fsst uncompressed lengths")
        co = ints(co_arr, "vortex.fsst codes_offsets")
        if len(ulen) != n or len(co) != n + 1:
            raise MalformedStreamError("vortex.fsst children do not match the array length")
        return codes, co, ulen, validity, check_lengths(ulen, self.id)

    def canonicalize(self, arr: Array) -> Array:
        from ._varbin import varbin_array

        codes, co, ulen, validity, total = self._checked_parts(arr, canonical_ints)
        check_decoded_size(total, f"vortex.fsst of {len(arr)} rows", arr.limits)
        lo, hi = check_window(co, codes.nbytes, self.id)
        sym, lens = self.symbol_table(arr)
        data = fsst_decompress(sym, lens, codes[lo:hi], total)
        offsets = offsets_from_lengths(ulen)
        out = varbin_array(arr.dtype, offsets, data, validity)
        # offsets summed from checked lengths: monotonic and ending at len(data) already
        checked = offsets.buffers[0].view(array_ptype(offsets).np_dtype)
        out.memo("offsets", lambda: checked)
        return out

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        if len(arr.buffers) == 2:
            return arr.canonical().slice(start, stop)
        kids = [arr.children[0].slice(start, stop), arr.children[1].slice(start, stop + 1)]
        if len(arr.children) > 2:
            kids.append(arr.children[2].slice(start, stop))
        a = Array(self, arr.dtype, stop - start, metadata=arr.metadata, buffers=arr.buffers,
                  children=kids, meta=arr.meta)
        return a

    # -- compute kernels -------------------------------------------------------------
    def _scratch_parts(self, arr: Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, Array | None]:
        """(codes bytes, codes_offsets, uncompressed lengths, validity child), checked, the
        integer children decoded as kernel scratch (three-buffer form only)."""

        codes, co, ulen, validity, _ = self._checked_parts(arr, decoded_ints)
        check_window(co, codes.nbytes, self.id)
        return codes, co, ulen, validity

    def validity(self, arr: Array) -> Any:
        if len(arr.buffers) == 2:
            return NotImplemented
        return validity_mask(arr.children[2] if len(arr.children) > 2 else None, len(arr))

    def _rows(self, arr: Array, parts: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Decode only ``rows``: (their bytes back to back, their lengths)."""

        codes, co, ulen, _ = parts
        lens = ulen[rows].astype(np.int64)
        total = int(lens.sum())
        check_decoded_size(total, f"vortex.fsst take of {len(rows)} rows",
                           arr.limits)
        starts = co[rows].astype(np.int64)
        pos = gather_ranges(starts, co[rows + 1].astype(np.int64) - starts)
        sym, slen = self.symbol_table(arr)
        return fsst_decompress(sym, slen, codes[pos], total), lens

    def equal_mask(self, arr: Array, needle: bytes, parts: Any = None) -> np.ndarray:
        """Rows equal to ``needle`` (nulls not applied). Only rows of the needle's length
        are candidates; those whose codes equal the needle compressed with the array's
        symbol table match without decoding, and the other candidates (a writer may parse
        differently) are decoded and compared."""

        parts = parts if parts is not None else self._scratch_parts(arr)
        codes, co, ulen, _ = parts
        out = np.zeros(len(arr), dtype=np.bool_)
        cand = np.flatnonzero(ulen == len(needle))
        if len(cand) == 0:
            return out
        if len(needle) == 0:
            out[cand] = True
            return out
        sym, slen = self.symbol_table(arr)
        ncodes, _ = fsst_compress(SymbolTable(np.asarray(sym, dtype=_U64), np.asarray(slen)),
                                  np.frombuffer(needle, dtype=np.uint8),
                                  np.array([0, len(needle)], dtype=np.int64))
        clen = co[cand + 1].astype(np.int64) - co[cand]
        same = clen == len(ncodes)
        quick = cand[same]
        ok = bytes_equal_at(codes, co[quick], ncodes.tobytes())
        out[quick[ok]] = True
        rest = np.concatenate((cand[~same], quick[~ok]))
        if len(rest):
            rest.sort()
            data, _ = self._rows(arr, parts, rest)
            starts = np.arange(len(rest), dtype=np.int64) * len(needle)
            out[rest[bytes_equal_at(data, starts, needle)]] = True
        return out

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        b = needle_bytes(value)
        if op not in ("eq", "neq") or b is None or len(arr.buffers) == 2:
            return NotImplemented
        eq = self.equal_mask(arr, b)
        return with_validity(eq if op == "eq" else ~eq, self.validity(arr))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        bs = [needle_bytes(v) for v in values]
        if len(bs) > 16 or any(b is None for b in bs) or len(arr.buffers) == 2:
            return NotImplemented
        parts = self._scratch_parts(arr)
        out = np.zeros(len(arr), dtype=np.bool_)
        for b in dict.fromkeys(bs):
            out |= self.equal_mask(arr, b, parts)  # type: ignore[arg-type]
        return with_validity(out, self.validity(arr))

    def take(self, arr: Array, indices: Any) -> Any:
        """Decodes only the taken rows (their code ranges are gathered first)."""
        from ._varbin import varbin_array

        if len(arr.buffers) == 2:
            return NotImplemented
        idx = np.asarray(indices, dtype=np.int64)
        parts = self._scratch_parts(arr)
        data, lens = self._rows(arr, parts, idx)
        v = parts[3]
        return varbin_array(arr.dtype, offsets_from_lengths(lens), data,
                            None if v is None else take(v, idx))

    def describe(self, arr: Array) -> str:
        codes = f", codes={arr.buffers[2].nbytes} B" if len(arr.buffers) == 3 else ", legacy"
        return f"symbols={arr.buffers[0].nbytes // 8}{codes}"

    def child_names(self, arr: Array) -> list[str]:
        if len(arr.buffers) == 2:
            return ["codes", "uncompressed_lengths"]
        return ["uncompressed_lengths", "codes_offsets", "validity"]


FSST = register_encoding(FSSTEncoding())


# -- symbol tables and encoding -----------------------------------------------------------------


@dataclass(frozen=True)
class SymbolTable:
    """An FSST symbol table: ``symbols`` (u64, bytes little-endian, zero-padded) and
    ``lengths`` (u8, 1..8), at most 255 entries, ordered as vortex-data requires
    (multi-byte symbols by ascending length, then single bytes)."""

    symbols: np.ndarray
    lengths: np.ndarray

    def __post_init__(self) -> None:
        if len(self.symbols) != len(self.lengths) or len(self.symbols) > 255:
            raise ValueError("an FSST symbol table holds at most 255 symbols, one length each")
        if len(self.lengths) and (self.lengths.min() < 1 or self.lengths.max() > 8):
            raise ValueError("FSST symbol lengths must be 1..8")

    @classmethod
    def from_bytes(cls, symbols: list[bytes]) -> SymbolTable:
        """A table from byte strings (1..8 bytes each), put into vortex-data's order."""
        keys = np.array([int.from_bytes(s, "little") for s in symbols], dtype=_U64)
        lens = np.array([len(s) for s in symbols], dtype=np.uint8)
        return _ordered(keys, lens)

    def to_bytes(self) -> list[bytes]:
        return [int(k).to_bytes(8, "little")[:n] for k, n in zip(self.symbols, self.lengths)]

    def __len__(self) -> int:
        return len(self.symbols)


def _ordered(keys: np.ndarray, lens: np.ndarray) -> SymbolTable:
    """Sort by (length 2..8 ascending, then 1-byte symbols), then by key; deduplicate."""
    keys = keys & _MASKS[lens]
    rank = np.where(lens == 1, 9, lens).astype(np.int64)
    order = np.lexsort((keys, rank))
    keys, lens = keys[order], lens[order]
    if len(keys) > 1:
        dup = np.zeros(len(keys), dtype=np.bool_)
        dup[1:] = (keys[1:] == keys[:-1]) & (lens[1:] == lens[:-1])
        keys, lens = keys[~dup], lens[~dup]
    return SymbolTable(np.ascontiguousarray(keys, dtype=_U64), np.ascontiguousarray(lens, dtype=np.uint8))


_HBITS = 12  # slots of the 3-byte-prefix hash for symbols of 3..8 bytes
_WAYS = 4  # symbols of 3+ bytes per slot


def _rank_in_group(g: np.ndarray) -> np.ndarray:
    """For a sorted group-key array: the index of each element within its group."""
    if len(g) == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.ones(len(g), dtype=np.bool_)
    start[1:] = g[1:] != g[:-1]
    idx = np.arange(len(g))
    return idx - np.maximum.accumulate(np.where(start, idx, 0))
_PREFIX_MULT = _U64(0x9E3779B97F4A7C15)


def _prefix_slot(key: np.ndarray) -> np.ndarray:
    """Hash slot of the first 3 bytes of little-endian keys."""
    with np.errstate(over="ignore"):
        return ((key & _MASKS[3]) * _PREFIX_MULT >> _U64(64 - _HBITS)).astype(np.intp)


class _Matcher:
    """Symbol lookup at every byte position (vectorized), in the manner of FSST: 1-byte and
    2-byte symbols through direct tables, longer ones through a hash of their first 3 bytes
    holding up to ``_WAYS`` symbols per slot (longest first). A match is verified byte for
    byte, so any table encodes correctly; a table with more long symbols per slot
    (``fsst_train`` never makes one) only compresses less."""

    def __init__(self, table: SymbolTable) -> None:
        keys = table.symbols & _MASKS[table.lengths]
        lens = table.lengths.astype(np.int8)
        codes = np.arange(len(keys), dtype=np.int16)
        self.one = np.full(256, -1, dtype=np.int16)
        sel = lens == 1
        self.one[keys[sel].astype(np.intp)] = codes[sel]
        self.two = np.full(1 << 16, -1, dtype=np.int16)
        sel = lens == 2
        self.two[keys[sel].astype(np.intp)] = codes[sel]
        self.slot_code = np.full((_WAYS, 1 << _HBITS), -1, dtype=np.int16)
        self.slot_key = np.zeros((_WAYS, 1 << _HBITS), dtype=_U64)
        self.slot_len = np.zeros((_WAYS, 1 << _HBITS), dtype=np.int8)
        long_ = np.flatnonzero(lens >= 3)
        slots = _prefix_slot(keys[long_])
        # per slot: the longest symbol in way 0, the next in way 1, ...
        order = np.lexsort((long_, -lens[long_].astype(np.int64), slots))
        long_, slots = long_[order], slots[order]
        way = _rank_in_group(slots)
        sel = way < _WAYS
        long_, slots, way = long_[sel], slots[sel], way[sel]
        self.slot_code[way, slots] = codes[long_]
        self.slot_key[way, slots] = keys[long_]
        self.slot_len[way, slots] = lens[long_]
        self.ways = int(way.max()) + 1 if len(way) else 0

    def match(self, data: np.ndarray, key8: np.ndarray, avail: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        """(length (0: none), code) of the symbol matched at each position of a block.

        ``key8``: the 8 bytes from each position (little-endian u64), ``avail``: bytes
        left in the row (capped at 8; matches never cross rows). The ways of a slot are
        filled in order (longest symbol first), so a slot with no symbol in way w has none
        after it: way 0 is tried at every position, later ways only where the earlier
        ones held a symbol that did not match.
        """
        s = _prefix_slot(key8)
        ln = np.zeros(len(key8), dtype=np.int8)
        code = np.zeros(len(key8), dtype=np.int16)
        if self.ways:
            lw = self.slot_len[0][s]
            has = lw > 0
            okw = has & (lw <= avail) & ((key8 & _MASKS[lw]) == self.slot_key[0][s])
            hit = np.flatnonzero(okw)
            ln[hit] = lw[hit]
            code[hit] = self.slot_code[0][s[hit]]
            rest = np.flatnonzero(has & ~okw)
            for w in range(1, self.ways):
                if not len(rest):
                    break
                sr = s[rest]
                lw = self.slot_len[w][sr]
                has = lw > 0
                okw = has & (lw <= avail[rest]) & ((key8[rest] & _MASKS[lw]) == self.slot_key[w][sr])
                hit = rest[okw]
                ln[hit] = lw[okw]
                code[hit] = self.slot_code[w][sr[okw]]
                rest = rest[has & ~okw]
        ok = ln > 0
        c2 = self.two[(key8 & _MASKS[2]).astype(np.intp)]
        ok2 = (c2 >= 0) & (avail >= 2)
        c1 = self.one[data]
        best_len = np.where(ok, ln, np.where(ok2, np.int8(2), (c1 >= 0).astype(np.int8)))
        best_code = np.where(ok, code, np.where(ok2, c2, c1))
        return best_len, best_code


def _avail(data_len: int, offsets: np.ndarray) -> np.ndarray:
    """Bytes left in the row at each position, capped at 8 (uint8)."""
    bnd = np.zeros(data_len + 9, dtype=np.bool_)
    bnd[offsets[1:]] = True
    bnd[data_len:] = True
    out = np.full(data_len, 8, dtype=np.uint8)
    for k in range(8, 0, -1):
        out[bnd[k : k + data_len]] = k
    return out


def _parse_dense(matcher: _Matcher, data: np.ndarray, offsets: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_parse`` for long rows: (token start positions, lengths (0 = escape), codes).

    Every position gets its match (block by block); the tokens are then the chain
    ``p -> p + max(len(p), 1)`` from each row start (matches never cross a row end). The
    chains are followed for all rows at once, one step per iteration; rows still unparsed
    after 64 steps are finished by pointer doubling (log2(row length) whole-array passes).
    """
    t = len(data)
    idt = np.int32 if t < 2**31 - 16 else np.int64
    best_len = np.zeros(t, dtype=np.int8)
    best_code = np.zeros(t, dtype=np.int16)
    nxt = np.empty(t + 1, dtype=idt)
    nxt[t] = t
    if t == 0:
        return np.zeros(0, np.int64), best_len, best_code
    avail = _avail(t, offsets)
    pad = np.zeros(t + 8, dtype=np.uint8)
    pad[:t] = data
    for i in range(0, t, BLOCK):
        j = min(t, i + BLOCK)
        win = np.lib.stride_tricks.as_strided(pad[i:], shape=(j - i, 8), strides=(1, 1))
        key8 = np.ascontiguousarray(win).view("<u8").reshape(j - i)
        ln, cd = matcher.match(data[i:j], key8, avail[i:j])
        best_len[i:j] = ln
        best_code[i:j] = cd
        nxt[i:j] = np.arange(i, j, dtype=idt) + np.maximum(ln, 1)
    lens = np.diff(offsets)
    # (annotated: numpy's stubs type an astype to one of two types as an array of `generic`,
    # which has no `-`)
    cur: np.ndarray = offsets[:-1][lens > 0].astype(idt)
    end: np.ndarray = offsets[1:][lens > 0].astype(idt)
    on = np.zeros(t + 1, dtype=np.bool_)
    steps = 0
    while len(cur) and steps < 64:
        on[cur] = True
        cur = nxt[cur]
        alive = cur < end
        if not alive.all():
            cur, end = cur[alive], end[alive]
        steps += 1
    if len(cur):  # long rows: pointer doubling from where the step-by-step walk stopped
        seed = np.zeros(t + 1, dtype=np.bool_)
        seed[cur] = True
        span = int((end - cur).max())
        jump = nxt
        reach = 1  # chains of fewer than `reach` tokens are marked
        while reach <= span:
            seed[jump[np.flatnonzero(seed)]] = True
            reach *= 2
            if reach <= span:
                jump = jump[jump]
        on |= seed
    pos = np.flatnonzero(on[:t])
    return pos, best_len[pos], best_code[pos]


_WALK_STEPS = 48


def _keys_at(words: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The 8 bytes at each byte position as a little-endian u64, from aligned u64 words
    (two word reads and shifts; ``words`` needs a spare word past the end)."""
    w = pos >> 3
    r = ((pos & 7) << 3).astype(_U64)
    lo = words[w] >> r
    hi = words[w + 1] << _U64(1)
    hi <<= _U64(63) - r  # << (64 - r), and 0 when r == 0
    return lo | hi


def _parse(matcher: _Matcher, data: np.ndarray, offsets: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy parse of every row: (token start positions, lengths (0 = escape), codes).

    All rows are parsed at once, one token per row per step, matching only where a token
    starts; after ``_WALK_STEPS`` steps the rest of the rows still unparsed (long strings)
    goes to ``_parse_dense``, which matches at every position and follows the chains by
    pointer doubling.
    """
    t = len(data)
    if t == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0, np.int16)
    pad = np.zeros(((t + 7) >> 3) * 8 + 16, dtype=np.uint8)
    pad[:t] = data
    words = pad.view("<u8")
    on = np.zeros(t, dtype=np.bool_)
    best_len = np.zeros(t, dtype=np.int8)
    best_code = np.zeros(t, dtype=np.int16)
    lens = np.diff(offsets)
    cur = offsets[:-1][lens > 0].astype(np.int64)
    end = offsets[1:][lens > 0].astype(np.int64)
    steps = 0
    while len(cur) and steps < _WALK_STEPS:
        ln, cd = matcher.match(pad[cur], _keys_at(words, cur), np.minimum(end - cur, 8))
        on[cur] = True
        best_len[cur] = ln
        best_code[cur] = cd
        cur = cur + np.maximum(ln, 1)
        alive = cur < end
        if not alive.all():
            cur, end = cur[alive], end[alive]
        steps += 1
    if len(cur):
        seg = end - cur
        sub = np.zeros(len(seg) + 1, dtype=np.int64)
        np.cumsum(seg, out=sub[1:])
        idx = np.repeat(cur - sub[:-1], seg) + np.arange(int(sub[-1]), dtype=np.int64)
        p2, l2, c2 = _parse_dense(matcher, data[idx], sub)
        orig = idx[p2]
        on[orig] = True
        best_len[orig] = l2
        best_code[orig] = c2
    pos = np.flatnonzero(on)
    return pos, best_len[pos], best_code[pos]


def fsst_compress(table: SymbolTable, data: np.ndarray, offsets: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Compress rows ``data[offsets[i]:offsets[i+1]]``: (codes bytes, codes offsets int64)."""
    pos, lens, codes = _parse(_Matcher(table), data, offsets)
    esc = lens == 0
    width = 1 + esc.astype(np.int64)
    ends = np.cumsum(width)
    total = int(ends[-1]) if len(ends) else 0
    out = np.empty(total, dtype=np.uint8)
    start = ends - width
    out[start] = np.where(esc, ESCAPE, codes).astype(np.uint8)
    out[start[esc] + 1] = data[pos[esc]]
    cum = np.concatenate(([0], ends))
    co = cum[np.searchsorted(pos, offsets[:-1])]
    co = np.concatenate((co, [total])).astype(np.int64)
    return out, co


def _count_tokens(keys: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (key, length) pairs of candidate tokens and their counts (in no
    particular order). A key of fewer than 8 bytes leaves its top byte zero, so its length
    fits there and one fast u64 ``np.unique`` counts them; 8-byte keys are counted apart."""
    short = lens < 8
    packed = keys[short] | (lens[short].astype(_U64) << _U64(61))
    u1, c1 = np.unique(packed, return_counts=True)
    u2, c2 = np.unique(keys[~short], return_counts=True)
    uk = np.concatenate((u1 & _U64((1 << 61) - 1), u2))
    ul = np.concatenate(((u1 >> _U64(61)).astype(np.int64), np.full(len(u2), 8, np.int64)))
    return uk, ul, np.concatenate((c1, c2))


def fsst_train(data: np.ndarray, offsets: np.ndarray, *, rounds: int = 5,
               sample_bytes: int = 1 << 15) -> SymbolTable:
    """Train a symbol table on a deterministic sample of the rows.

    A simplified version of the FSST construction: start empty; each round, parse the
    sample greedily with the current table, count every token and every pair of adjacent
    tokens of one row whose concatenation fits in 8 bytes, score candidates by
    ``count x length`` (single bytes weighted x8, since they replace 2-byte escapes), and keep
    the best 255, at most 4 of 3+ bytes per prefix-hash slot of the matcher. Same input,
    same table.
    """
    sdata, soffs = text_sample(np.asarray(data, dtype=np.uint8), np.asarray(offsets, np.int64),
                           sample_bytes, 512)
    table = SymbolTable(np.zeros(0, _U64), np.zeros(0, np.uint8))
    if len(sdata) == 0:
        return table
    row_of = np.repeat(np.arange(len(soffs) - 1), np.diff(soffs))
    for _ in range(rounds):
        pos, lens, codes = _parse(_Matcher(table), sdata, soffs)
        tl = np.where(lens == 0, 1, lens).astype(np.int64)
        symkeys = table.symbols if len(table) else np.zeros(1, _U64)
        tk = np.where(lens == 0, sdata[pos].astype(_U64), symkeys[np.clip(codes, 0, None)])
        tk &= _MASKS[tl]
        # adjacent pairs inside one row that fit in 8 bytes
        same = row_of[pos[1:]] == row_of[pos[:-1]] if len(pos) > 1 else np.zeros(0, np.bool_)
        fit = same & (tl[:-1] + tl[1:] <= 8)
        a = np.flatnonzero(fit)
        pk = tk[a] | (tk[a + 1] << (tl[a].astype(_U64) * _U64(8)))
        pl = tl[a] + tl[a + 1]
        ck = np.concatenate((tk, pk))
        cl = np.concatenate((tl, pl))
        uk, ul, counts = _count_tokens(ck, cl)
        gain = counts.astype(np.int64) * np.where(ul == 1, 8, ul)
        order = np.lexsort((uk, ul, -gain))
        uk, ul = uk[order], ul[order]
        # at most _WAYS symbols of 3+ bytes per prefix-hash slot (the best), as the matcher
        long_ = np.flatnonzero(ul >= 3)
        slots = _prefix_slot(uk[long_])
        by_slot = np.argsort(slots, kind="stable")  # gain order within a slot
        rank = np.empty(len(long_), dtype=np.int64)
        rank[by_slot] = _rank_in_group(slots[by_slot])
        keep = ul < 3
        keep[long_[rank < _WAYS]] = True
        pick = np.flatnonzero(keep)[:255]
        table = _ordered(uk[pick], ul[pick].astype(np.uint8))
    return table


def fsst_encode(array: Array, symbol_table: SymbolTable | None = None) -> Array:
    """Encode a utf8/binary array as ``vortex.fsst`` (decodable by vortex-data 0.93).

    ``symbol_table``: use this table instead of training one on the data
    (:func:`fsst_train`). Null rows get no codes and zero length.
    """

    data, offsets, valid = string_parts(array)
    n = len(offsets) - 1
    table = symbol_table if symbol_table is not None else fsst_train(data, offsets)
    codes, co = fsst_compress(table, data, offsets)
    ulen = np.diff(offsets)
    up = narrowest_uint(int(ulen.max()) if n else 0)
    cp = narrowest_uint(int(co[-1]))
    meta = ProtoWriter().varint(1, int(up)).varint(2, int(cp)).finish()
    kids = [primitive_array(ulen.astype(up.np_dtype)), primitive_array(co.astype(cp.np_dtype))]
    v = validity_from_mask(valid, n)
    if v is not None:
        kids.append(v)
    a = Array(FSST, array.dtype, n, metadata=meta,
              buffers=[table.symbols.astype("<u8").view(np.uint8), table.lengths.astype(np.uint8),
                       codes],
              children=kids, meta=FSSTMeta(up, cp))
    return a


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_fsst(a: Array, params: Any = None) -> Array | None:
    return fsst_encode(a, params)


def _estimate_fsst(f: Facts, comp: Any) -> Trial | None:
    data, offsets, _ = f.string_parts
    if len(data) < 1024 or len(data) < 2 * f.n:
        return None  # too little text to pay for a symbol table
    # at best: 8 bytes per code, a code per non-empty row, a bit per row for the offsets
    nonempty = int(np.count_nonzero(offsets[1:] != offsets[:-1]))
    if len(data) / 8 + nonempty + f.n / 8 >= f.best_size:
        return None
    if f.sample_idx is None:
        sd, so = data, offsets
    else:
        sd, so, _ = string_parts(f.sample)
    # the estimate trains on the sample; the encoding on the whole array unless the
    # sample holds about as much text as training looks at anyway
    table = fsst_train(sd, so)
    codes, co = fsst_compress(table, sd, so)
    ns = len(so) - 1
    lens = np.diff(so)
    size = (len(codes) + int_cost(lens, ns, compact=f.compact)
            + int_cost(co, ns + 1, dict_=False, compact=f.compact))
    size = size * f.n / max(ns, 1) + 9 * len(table) + f.validity_bytes + 3 * NODE_COST
    trial = Trial(size, lambda: None, table)

    def build() -> Array | None:
        if len(sd) < 16384 and len(data) > len(sd):
            trial.params = fsst_train(data, offsets)
        return _encode_fsst(f.a, trial.params)

    trial.build = build
    return trial


register_scheme(Scheme("vortex.fsst", frozenset({"str"}), _estimate_fsst, _encode_fsst,
                       priority=150))
