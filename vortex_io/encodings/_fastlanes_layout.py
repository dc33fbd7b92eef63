"""The FastLanes 1024-value layouts shared by ``fastlanes.bitpacked``, ``fastlanes.delta``
and friends, as vectorized numpy kernels.

Bit-packing (see the reference notes, section 4): with T the unsigned integer type of W
bits, LANES = 1024 / W and B the bit width, a chunk of 1024 values is stored in
``1024 * B / W`` words. Lane ``l``'s bit stream is words ``l, l + LANES, l + 2 * LANES, ...``
and its row ``r`` (0 <= r < W) holds bits ``[r * B, (r + 1) * B)`` of that stream, the
value at chunk position ``FL_ORDER[r // 8] * 16 + (r % 8) * 128 + l``.

Seen as an ``(8, 128)`` grid, row ``r`` of every lane is one contiguous run of LANES
positions (always 128 bytes): ``grid[r % 8, FL_ORDER[r // 8] * 16 : ... + LANES]``. So the
kernels never loop over values or chunks: they transpose the words word-major, extract each
row for every chunk and lane with whole-array shifts and masks (one numpy call per row),
then move the 128-byte runs into chunk order as single ``V128`` items. (This is the
readable reference; the native core's kernels are in ``native/src/fastlanes.h``.) Packing runs the same steps backwards.

The delta layout transposes each 1024-value chunk first (``transpose_index``) and then runs
one prefix sum per lane in the same row order as bit-packing.

>>> import numpy as np
>>> v = np.arange(1024, dtype=np.uint32) % 100
>>> w = pack(v, 7)
>>> len(w), bool((unpack(w, 32, 7, 1) == v).all())
(224, True)
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from .. import _memory

__all__ = [
    "FL_ORDER",
    "UNSIGNED",
    "inverse_index",
    "lanes",
    "pack",
    "chunk_rows",
    "row_blocks",
    "row_plan",
    "rows_index",
    "transpose_index",
    "unpack",
    "unpack_at",
    "unpack_index",
    "unpack_rows",
]

FL_ORDER = (0, 4, 2, 6, 1, 5, 3, 7)
#: unsigned numpy type for each bit width of T
UNSIGNED: dict[int, np.dtype[Any]] = {8: np.dtype("<u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4"), 64: np.dtype("<u8")}

_V128 = np.dtype("V128")  # the LANES values of one row of a chunk, for any W


def lanes(w: int) -> int:
    """Lanes of a 1024-bit register for a W-bit type."""
    return 1024 // w


@cache
def unpack_index(w: int) -> np.ndarray:
    """(W, LANES) table: chunk position of row r of lane l (read-only, cached)."""
    r = np.arange(w)[:, None]
    lane = np.arange(lanes(w))[None, :]
    order = np.asarray(FL_ORDER)[r // 8]
    t = (order * 16 + (r % 8) * 128 + lane).astype(np.intp)
    t.flags.writeable = False
    return t


@cache
def inverse_index(w: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, lane) of each of the 1024 chunk positions (read-only, cached)."""
    t = unpack_index(w)
    row = np.empty(1024, dtype=np.intp)
    lane = np.empty(1024, dtype=np.intp)
    row[t.ravel()] = np.repeat(np.arange(w), lanes(w))
    lane[t.ravel()] = np.tile(np.arange(lanes(w)), w)
    row.flags.writeable = False
    lane.flags.writeable = False
    return row, lane


@cache
def row_plan(w: int, b: int) -> tuple[tuple[int, int, bool], ...]:
    """Per row: (word k of the lane stream, bit shift within it, spills into word k + 1)."""
    out = []
    for r in range(w):
        start = r * b
        k, s = divmod(start, w)
        out.append((k, s, s + b > w))
    return tuple(out)


@cache
def transpose_index() -> np.ndarray:
    """The FastLanes transpose: ``transposed[i] = values[transpose_index()[i]]`` within a
    chunk (the same for every type width; read-only, cached)."""
    i = np.arange(1024)
    lane = i % 16
    order = np.asarray(FL_ORDER)[(i // 16) % 8]
    row = i // 128
    t = (lane * 64 + order * 8 + row).astype(np.intp)
    t.flags.writeable = False
    return t


@cache
def _gather_tables(w: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per chunk position: (word index in the chunk, shift, spill word index, spill shift - 1),
    shifts in the W-bit type.

    The spill word is shifted left by ``spill shift - 1`` then by 1 more, so a position that
    does not spill (spill shift W) gets 0 from it without ever shifting by W at once.
    """
    ut = UNSIGNED[w]
    row, lane = inverse_index(w)
    start = row * b
    k = start // w
    s = start % w
    nl = lanes(w)
    word = k * nl + lane
    spills = s + b > w
    spill_word = np.where(spills, word + nl, word)
    spill_shift = np.where(spills, w - s, w)
    tabs = (word.astype(np.intp), s.astype(ut), spill_word.astype(np.intp),
            (spill_shift - 1).astype(ut))
    for t in tabs:
        t.flags.writeable = False
    return tabs


def _mask(w: int, b: int, ut: np.dtype):
    return ut.type((1 << b) - 1)


def unpack(words: np.ndarray, w: int, b: int, nchunks: int) -> np.ndarray:
    """Unpack ``nchunks`` FastLanes chunks of B-bit values of a W-bit unsigned type.

    ``words`` holds ``nchunks * 1024 * B / W`` words of the unsigned W-bit type (checked
    by the caller). Returns ``nchunks * 1024`` values of that type, zero-extended.
    """
    ut = UNSIGNED[w]
    if b == 0 or nchunks == 0:
        return np.zeros(nchunks * 1024, dtype=ut)
    return _unpack_rows(words, w, b, nchunks)


def _lane_words(words: np.ndarray, w: int, b: int, nchunks: int) -> np.ndarray:
    """The words word-major, (B, chunks * LANES): row k is word k of every lane."""
    ut = UNSIGNED[w]
    nl = lanes(w)
    wt = np.empty((b, nchunks * nl), dtype=ut)
    wt.reshape(b, nchunks, nl)[...] = words.reshape(nchunks, b, nl).transpose(1, 0, 2)
    return wt


def _to_chunk_order(rows: np.ndarray, w: int, nchunks: int, split: bool) -> np.ndarray:
    """(block, g, chunk, lane) rows -> the chunks' values. A block's LANES values are always
    128 bytes: they move as single 'V128' items (one grid row g at a time when ``split``:
    fewer concurrent streams, much faster for large u64 arrays)."""
    nblk = w // 8
    out = _memory.empty(nchunks * 1024, UNSIGNED[w])
    src = rows.reshape(-1).view(_V128).reshape(nblk, 8, nchunks)
    dst = out.view(_V128).reshape(nchunks, 8, nblk)
    if split:
        for g in range(8):
            dst[:, g] = src[:, g].T
    else:
        dst[...] = src.transpose(2, 1, 0)
    return out


def _extract_row(wt: np.ndarray, k: int, s: int, spill: bool, w: int, dst: np.ndarray,
                 tmp: np.ndarray) -> None:
    """Row bits of every lane into ``dst``: word ``k`` shifted right by ``s``, plus the low
    bits of word ``k + 1`` when the row spills over (``row_plan``); not yet masked."""
    if s:
        np.right_shift(wt[k], s, out=dst)
    else:
        dst[...] = wt[k]
    if spill:
        np.left_shift(wt[k + 1], w - s, out=tmp)
        np.bitwise_or(dst, tmp, out=dst)


def _unpack_rows(words: np.ndarray, w: int, b: int, nchunks: int) -> np.ndarray:
    """One numpy call per row over every chunk (fewest passes: best for large arrays)."""
    ut = UNSIGNED[w]
    nl = lanes(w)
    nblk = w // 8
    m = nchunks * nl
    wt = _lane_words(words, w, b, nchunks)
    # rows[j, g] holds row r = 8 * o + g, where j is the 128-column block FL_ORDER[o] maps to
    rows = np.empty((nblk, 8, m), dtype=ut)
    tmp = np.empty(m, dtype=ut)
    for r, (k, s, spill) in enumerate(row_plan(w, b)):
        o, g = divmod(r, 8)
        _extract_row(wt, k, s, spill, w, rows[FL_ORDER[o] * 16 // nl, g], tmp)
    if b < w:
        np.bitwise_and(rows, _mask(w, b, ut), out=rows)
    return _to_chunk_order(rows, w, nchunks, split=True)


@cache
def row_blocks(w: int) -> tuple[np.ndarray, np.ndarray]:
    """(block of each row, row of each block): row r of every lane of a chunk is the
    contiguous run of LANES values (128 bytes) that is block ``blocks[r]`` of the chunk's
    W blocks (read-only, cached)."""
    nl = lanes(w)
    blocks = (unpack_index(w)[:, 0] // nl).astype(np.intp)
    rows = np.empty(w, dtype=np.intp)
    rows[blocks] = np.arange(w)
    blocks.flags.writeable = False
    rows.flags.writeable = False
    return blocks, rows


def chunk_rows(values: np.ndarray, w: int, nchunks: int) -> np.ndarray:
    """Chunk-order values (``nchunks * 1024`` of a W-bit type) as a fresh (W, nchunks *
    LANES) array in natural row order: ``[r, c * LANES + l]`` is row r of lane l of chunk
    c (the layout ``unpack_rows`` produces)."""
    blocks, _ = row_blocks(w)
    grid = _memory.empty(nchunks * 1024, UNSIGNED[w])
    np.take(values.view(_V128).reshape(nchunks, w).T, blocks, axis=0, mode="clip",
            out=grid.view(_V128).reshape(w, nchunks))
    return grid.reshape(w, nchunks * lanes(w))


def rows_index(positions: np.ndarray, w: int, nchunks: int) -> np.ndarray:
    """Where chunk-order ``positions`` sit in the flattened ``unpack_rows`` layout."""
    nl = lanes(w)
    _, row_of = row_blocks(w)
    p = np.asarray(positions, dtype=np.intp)
    j = p & 1023
    return row_of[j // nl] * (nchunks * nl) + (p >> 10) * nl + j % nl


def unpack_rows(words: np.ndarray, w: int, b: int, nchunks: int) -> np.ndarray:
    """Unpack like ``unpack`` but leave the values in natural row order: a fresh (W,
    nchunks * LANES) array whose ``[r, c * LANES + l]`` is row r of lane l of chunk c.

    This is the layout the FastLanes delta runs its prefix sums in (row r + 1 of a lane
    adds to row r), so ``fastlanes.delta`` over bit-packed deltas skips the chunk-order
    round trip.
    """
    ut = UNSIGNED[w]
    nl = lanes(w)
    m = nchunks * nl
    if b == 0 or nchunks == 0:
        return np.zeros((w, m), dtype=ut)
    wt = _lane_words(words, w, b, nchunks)
    rows = _memory.empty(w * m, ut).reshape(w, m)
    tmp = np.empty(m, dtype=ut)
    for r, (k, s, spill) in enumerate(row_plan(w, b)):
        _extract_row(wt, k, s, spill, w, rows[r], tmp)
    if b < w:
        np.bitwise_and(rows, _mask(w, b, ut), out=rows)
    return rows


def _extract(words: np.ndarray, word: np.ndarray, s: np.ndarray, spill_word: np.ndarray,
             spill_shift: np.ndarray, w: int, b: int) -> np.ndarray:
    """Values at word/shift coordinates: ``words`` 1-D with flat coordinates, or 2-D
    (chunks, words per chunk) with per-chunk coordinates broadcast over the chunks."""
    ut = UNSIGNED[w]
    one = ut.type(1)
    if words.ndim == 2:
        lo = np.take(words, word, axis=1, mode="clip")
        hi = np.take(words, spill_word, axis=1, mode="clip")
    else:
        lo = words[word]
        hi = words[spill_word]
    np.right_shift(lo, s, out=lo)
    np.left_shift(hi, spill_shift, out=hi)
    np.left_shift(hi, one, out=hi)
    np.bitwise_or(lo, hi, out=lo)
    if b < w:
        np.bitwise_and(lo, _mask(w, b, ut), out=lo)
    return lo


def unpack_at(words: np.ndarray, w: int, b: int, positions: np.ndarray) -> np.ndarray:
    """The values at absolute ``positions`` (chunk * 1024 + index in chunk) of a packed
    buffer, read straight from the words (random access, vectorized)."""
    ut = UNSIGNED[w]
    positions = np.asarray(positions, dtype=np.intp)
    if b == 0 or len(positions) == 0:
        return np.zeros(len(positions), dtype=ut)
    word, s, spill_word, spill_shift = _gather_tables(w, b)
    chunk, j = np.divmod(positions, 1024)
    base = chunk * (1024 * b // w)
    return _extract(words, base + word[j], s[j], base + spill_word[j], spill_shift[j], w, b)


def pack(values: np.ndarray, b: int, *, fits: bool = False) -> np.ndarray:
    """Pack unsigned values (length a multiple of 1024) into B-bit FastLanes words.

    Values are masked to their low B bits (skipped when the caller knows they ``fits``).
    Returns ``len / 1024 * 1024 * B / W`` words of the values' type (empty for B = 0).
    """
    ut = values.dtype
    w = ut.itemsize * 8
    n = len(values)
    if n % 1024:
        raise ValueError("pack needs whole 1024-value chunks")
    nchunks = n // 1024
    nl = lanes(w)
    nblk = w // 8
    m = nchunks * nl
    if b == 0 or nchunks == 0:
        return np.zeros(0, dtype=ut)
    # chunk order -> (block, g, chunk, lane) rows, moving 128-byte runs as 'V128' items
    rows = np.empty(n, dtype=ut)
    src = np.ascontiguousarray(values).view(_V128).reshape(nchunks, 8, nblk)
    dst = rows.view(_V128).reshape(nblk, 8, nchunks)
    for g in range(8):
        dst[:, g] = src[:, g].T
    rows = rows.reshape(nblk, 8, m)
    if b < w and not fits:
        np.bitwise_and(rows, _mask(w, b, ut), out=rows)
    wt = np.zeros((b, m), dtype=ut)
    tmp = np.empty(m, dtype=ut)
    for r, (k, s, spill) in enumerate(row_plan(w, b)):
        o, g = divmod(r, 8)
        row = rows[FL_ORDER[o] * 16 // nl, g]
        if s:
            np.left_shift(row, s, out=tmp)
            np.bitwise_or(wt[k], tmp, out=wt[k])
        else:  # the first row of word k
            wt[k] = row
        if spill:
            np.right_shift(row, w - s, out=wt[k + 1])  # the first bits of word k + 1
    out = np.empty((nchunks, b, nl), dtype=ut)
    out[...] = wt.reshape(b, nchunks, nl).transpose(1, 0, 2)
    return out.reshape(-1)
