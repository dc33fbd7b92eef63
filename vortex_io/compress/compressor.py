"""The sampling compressor: per chunk and per column, estimate candidate encodings, pick the
smallest, encode the whole column with it, and cascade into its children.

How a column is compressed (``_Compressor._choose``):

1. **Facts** (``_Facts``) about the whole chunk, computed lazily and once: validity, min /
   max, the number of runs, the sorted values (distinct count, most frequent value), how
   often the values step down, a deterministic sample (``sample_slices`` evenly spaced runs
   of ``slice_rows`` rows) and, for strings, the dictionary when the sample says it may pay.
2. **Exact schemes** first: constant and sequence are taken as soon as they apply.
3. **Trials**: every other scheme that applies estimates the bytes of the whole chunk
   (headers included, roughly). Cheap schemes estimate from the facts of the whole chunk
   (bit-length histograms for bit-packing / FoR / zigzag / delta, the distinct count and
   runs for dictionary / run-end / sparse), expensive ones (ALP, ALP-RD, FSST) encode the
   sample and scale. The children a scheme produces are estimated with ``_int_cost`` (the
   cheapest of FoR / bit-packing / zigzag / run-end / dictionary / delta from histograms and
   counts; nothing is packed), not searched: the search stays linear.
4. The smallest estimate wins (ties: the earlier scheme); the chunk is encoded with it and
   its children are compressed the same way (bounded depth; a child never uses its
   parent's scheme, and nothing below a dictionary is dictionary-encoded again). Validity
   children are compressed too (constant, sparse or run-end booleans).

A ``CompressSession`` keeps the encoding tree chosen for each column (with the parameters
worth reusing: FSST symbol tables, ALP exponents) and replays it on the stream's later
chunks, searching again only when the replay compresses noticeably worse.

Selection is deterministic: no randomness, the sample is fixed, ties go to the earlier
candidate. Every scheme produces arrays vortex-data 0.93 decodes.

>>> import numpy as np, vortex_io as vio
>>> from vortex_io.compress import compress_array
>>> a = compress_array(vio.array(np.arange(100_000, dtype=np.int64) * 3 + 7))
>>> a.encoding, a.nbytes < 100
('vortex.sequence', True)
"""

from __future__ import annotations

import contextlib
import decimal
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .. import dtype as dt
from ..array import Array
from ..errors import UnsupportedError, VortexIPCError

_EXACT = decimal.Context(prec=200)  # decimals have at most 76 digits: no rounding

__all__ = ["CompressOptions", "CompressSession", "Scheme", "SCHEMES", "compress_array",
           "scheme_names"]

#: rough wire cost of one array node (flatbuffer node, buffer descriptors, padding)
_NODE = 24
#: bytes a delta must save to be chosen: its decode is ~W numpy calls (one per row of the
#: FastLanes lanes) plus a transpose whatever the length, which on a small child (e.g. the
#: 1024 bases of a 64Ki-row delta) costs more time than its few saved bytes are worth
_DELTA_FIXED = 2048

_DICT = "vortex.dict"


@dataclass(frozen=True)
class CompressOptions:
    """How the compressor searches.

    Attributes:
        max_depth: how many levels of cascading below a column (children of children...).
        sample_slices, slice_rows: the sample is ``sample_slices`` evenly spaced runs of
            ``slice_rows`` rows (the whole column when it is no larger).
        min_gain: a scheme must make the column at most this fraction of the canonical size.
        allow: when set, only these encoding IDs may be chosen (canonical ones always may).
        exclude: encoding IDs never chosen.
        strict: raise when a scheme fails instead of skipping it (for tests).
        min_child_rows: children shorter than this that are side structures of a much
            longer column (dictionary values, patch values: at most 1/16 of its rows) stay
            canonical: every encoded node costs a fixed decode overhead (tens of
            microseconds of numpy calls) that a few hundred values do not repay. Columns,
            and the main child of a short column, are compressed whatever their length.
        compact: also use ``vortex.zstd`` where it wins (dictionary codes, narrow integers,
            strings without a useful dictionary) and try ``vortex.onpair`` for long text:
            smaller streams, slower encoding (OnPair encodes ~4x slower than FSST), and
            vortex_io reads the zstd parts only with the optional ``zstandard`` package.
            Off by default (like vortex-data's ``with_compact``).
    """

    max_depth: int = 4
    sample_slices: int = 16
    slice_rows: int = 64
    min_gain: float = 0.98
    allow: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    strict: bool = False
    compact: bool = False
    min_child_rows: int = 512

    def allows(self, encoding_id: str) -> bool:
        if encoding_id in self.exclude:
            return False
        return self.allow is None or encoding_id in self.allow


# -- size estimates ---------------------------------------------------------------------------


def _bits(x: int) -> int:
    return int(x).bit_length()


def _padded(n: int) -> int:
    """Rows bit-packing stores: whole 1024-value chunks."""
    return -(-n // 1024) * 1024


def _index_width(n: int) -> int:
    return 1 if n <= 1 << 8 else 2 if n <= 1 << 16 else 4


def _unsigned(v: np.ndarray) -> np.ndarray:
    return v.view(np.dtype(f"<u{v.dtype.itemsize}"))


def _packed(u: np.ndarray, n_rows: int) -> float:
    """Bytes of bit-packing unsigned ``u`` (the valid values of ``n_rows`` slots) at the
    width vortex-data's cost model picks; the values that do not fit become patches, whose
    indices (sorted) and values get compressed in turn."""
    from ..encodings.bitpacked import best_bit_width, bit_length_histogram

    if len(u) == 0:
        return 0.0
    w = u.dtype.itemsize
    hist = bit_length_histogram(u)
    bw = best_bit_width(hist, w)
    exc = int(hist[bw + 1:].sum())
    size = _padded(n_rows) * bw / 8
    if exc:
        vbits = int(np.flatnonzero(hist)[-1])
        ibits = min(_bits(n_rows), _bits(n_rows // exc) + 2)
        raw = exc * (w + _index_width(n_rows))
        size += min(raw, _padded(exc) * (vbits + ibits) / 8 + 2 * _NODE) + 2 * _NODE
    return size


def _delta_bases(n: int, width: int, span: int) -> float:
    """Bytes of the bases of a delta encoding: one per lane per 1024 rows."""
    nb = (_padded(n) // 1024) * (1024 // (8 * width))
    return min(nb * width, _padded(nb) * max(_bits(span), 1) / 8 + _NODE)


def _zstd_bytes(v: np.ndarray) -> int:
    """Bytes of ``v``'s raw little-endian values in one zstd frame (level 3)."""
    import zstandard

    return len(zstandard.ZstdCompressor(level=3).compress(np.ascontiguousarray(v).tobytes()))


def _narrow_codes(codes: np.ndarray, distinct: int) -> np.ndarray:
    return codes.astype(np.uint8 if distinct <= 1 << 8 else np.uint16 if distinct <= 1 << 16
                        else np.uint32)


def _codes_cost(distinct: int, n: int, runs: int) -> float:
    """Dictionary codes: bit-packed at the width of ``distinct - 1``, or run-end encoded
    when the codes come in long runs."""
    cw = _bits(max(distinct - 1, 0))
    best = _padded(n) * cw / 8 + _NODE
    if runs * 4 <= n:
        best = min(best, runs * (_bits(n) + cw) / 8 + 4 * _NODE)
    return best


def _int_cost(v: np.ndarray, n_rows: int | None = None, nulls: int = 0, *,
              dict_: bool = True, compact: bool = False) -> float:
    """Estimated bytes of an integer child holding the valid values ``v`` in ``n_rows``
    slots: the cheapest of constant, FoR / bit-packing (with patches), zigzag, run-end,
    delta (sorted values) and dictionary codes, from histograms and counts (``compact``:
    zstd of narrow values and of dictionary codes too)."""
    m = len(v)
    n_rows = m + nulls if n_rows is None else n_rows
    validity = (n_rows + 7) // 8 if nulls else 0
    if m == 0:
        return _NODE
    lo, hi = v.min(), v.max()
    if lo == hi:
        return _NODE + validity
    span = int(hi) - int(lo)
    best = min(float(n_rows * v.dtype.itemsize), _packed(_unsigned(v - lo), n_rows) + 2 * _NODE)
    if v.dtype.kind == "i" and lo < 0:
        from ..encodings.zigzag import zigzag_encode_values

        best = min(best, _packed(zigzag_encode_values(v), n_rows) + 2 * _NODE)
    if m >= 16:
        step = v[1:] != v[:-1]
        runs = 1 + int(np.count_nonzero(step))
        if runs * 4 <= m:
            best = min(best, runs * (_bits(n_rows) + _bits(span)) / 8 + 4 * _NODE)
        if bool((v[1:] >= v[:-1]).all()):
            d = _unsigned(np.diff(v))
            best = min(best, _packed(d, n_rows) + _delta_bases(n_rows, v.dtype.itemsize, span) + 4 * _NODE)
        if dict_ and m >= 512 and _bits(span) > 4:
            s = np.sort(v)
            first = np.concatenate(([True], s[1:] != s[:-1]))
            distinct = int(np.count_nonzero(first))
            if distinct * 2 <= m:
                codes = _codes_cost(distinct, n_rows, runs)
                if compact and m >= 4096:
                    idx = np.searchsorted(s[first], v)
                    codes = min(codes, _zstd_bytes(_narrow_codes(idx, distinct)) + 2 * _NODE)
                best = min(best, codes + distinct * _bits(span) / 8 + 4 * _NODE)
    if compact and m >= 4096 and v.dtype.itemsize <= 2:
        best = min(best, _zstd_bytes(v) + 2 * _NODE)
    return best + validity


# -- facts about one array ----------------------------------------------------------------------


def _kind(d: dt.DType) -> str:
    if isinstance(d, dt.Primitive):
        return "int" if d.ptype.is_int else "float"
    if isinstance(d, (dt.Utf8, dt.Binary)):
        return "str"
    if isinstance(d, dt.Bool):
        return "bool"
    if isinstance(d, dt.Decimal):
        return "decimal"
    if isinstance(d, dt.Extension):
        return "ext"
    return "other"


def _sample_rows(n: int, opts: CompressOptions) -> np.ndarray | None:
    """Row indices of the sample (``None``: the whole array is the sample)."""
    k = opts.slice_rows
    if n <= opts.sample_slices * k:
        return None
    starts = np.linspace(0, n - k, opts.sample_slices).astype(np.int64)
    return (starts[:, None] + np.arange(k, dtype=np.int64)).ravel()


class _Facts:
    """Facts about a canonical array (the whole chunk), each computed once when first used."""

    def __init__(self, a: Array, opts: CompressOptions) -> None:
        self.a = a
        self.n = len(a)
        self.opts = opts
        self.kind = _kind(a.dtype)
        self.best_size = float("inf")  # the best estimate so far (set by the search)
        self.compact = opts.compact and opts.allows("vortex.zstd")  # may zstd children

    # -- primitive and bool values ------------------------------------------------------
    @cached_property
    def _values(self) -> tuple[np.ndarray, np.ndarray | None]:
        if self.kind == "bool":
            from ..encodings._common import validity_mask
            from ..encodings.bool_ import bool_values

            c = self.a
            return bool_values(c).view(np.uint8), validity_mask(c.children[0] if c.children else None, self.n)
        from ..encodings.primitive import primitive_values

        vals, mask = primitive_values(self.a)
        if mask is not None and mask.all():
            mask = None
        return vals, mask

    @property
    def mask(self) -> np.ndarray | None:
        return self._values[1]

    @cached_property
    def key(self) -> np.ndarray:
        """The values as comparable integers (floats by bit pattern), nulls as 0."""
        vals, mask = self._values
        k = _unsigned(vals) if self.kind == "float" else vals
        if mask is not None:
            k = np.where(mask, k, k.dtype.type(0))
        return k

    @cached_property
    def vkey(self) -> np.ndarray:
        """The keys of the valid rows."""
        mask = self.mask
        return self.key if mask is None else self.key[mask]

    @cached_property
    def nulls(self) -> int:
        if self.kind in ("int", "float", "bool"):
            mask = self.mask
            return 0 if mask is None else int(self.n - np.count_nonzero(mask))
        if self.kind == "str":
            return int(self.arrow.null_count)
        return 0

    @cached_property
    def validity_bytes(self) -> float:
        """Estimated bytes of the validity: a bitmap, or sparse / run-end booleans."""
        if not self.nulls:
            return 0
        n = self.n
        best = float((n + 7) // 8)
        mask = self.mask if self.kind in ("int", "float", "bool") else self.string_parts[2]
        if mask is None:
            return best
        e = min(self.nulls, n - self.nulls)
        best = min(best, e * _bits(n) / 8 + 4 * _NODE)
        runs = 1 + int(np.count_nonzero(mask[1:] != mask[:-1]))
        return min(best, runs * (_bits(n) + 1) / 8 + 3 * _NODE)

    @cached_property
    def lo(self) -> Any:
        return self.vkey.min() if len(self.vkey) else None

    @cached_property
    def hi(self) -> Any:
        return self.vkey.max() if len(self.vkey) else None

    @cached_property
    def run_starts(self) -> np.ndarray:
        """Rows where a run of equal values (or of nulls) starts, row 0 excluded."""
        k = self.key
        change = k[1:] != k[:-1]
        if self.mask is not None:
            change |= self.mask[1:] != self.mask[:-1]
        return np.flatnonzero(change) + 1

    @property
    def runs(self) -> int:
        return len(self.run_starts) + 1 if self.n else 0

    @cached_property
    def _groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(the distinct valid keys, ascending; the count of each). Integers of a small
        range are counted with ``bincount``, anything else is sorted."""
        v = self.vkey
        if len(v) == 0:
            return v[:0], np.zeros(0, np.int64)
        if self.kind in ("int", "bool") and int(self.hi) - int(self.lo) <= max(4 * len(v), 1 << 12):
            counts = np.bincount(_unsigned(v - self.lo).astype(np.intp, copy=False))
            nz = np.flatnonzero(counts)
            return (nz.astype(v.dtype) + self.lo).astype(v.dtype, copy=False), counts[nz]
        s = np.sort(v)
        firsts = np.concatenate(([0], np.flatnonzero(s[1:] != s[:-1]) + 1))
        return s[firsts], np.diff(np.append(firsts, len(s)))

    @property
    def distinct(self) -> int:
        return len(self._groups[0])

    @cached_property
    def top(self) -> tuple[Any, int]:
        """(most frequent valid key, its count)."""
        uniq, counts = self._groups
        if len(counts) == 0:
            return None, 0
        j = int(np.argmax(counts))
        return uniq[j], int(counts[j])

    @cached_property
    def down_steps(self) -> int:
        """How many times the valid values step down (0: sorted ascending)."""
        v = self.vkey
        return int(np.count_nonzero(v[1:] < v[:-1])) if len(v) > 1 else 0

    # -- strings --------------------------------------------------------------------------
    @cached_property
    def arrow(self) -> Any:
        import pyarrow as pa

        arr = self.a.to_arrow()
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        return arr

    @cached_property
    def string_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        from ..encodings.fsst import string_parts

        return string_parts(self.a)

    @cached_property
    def sample_idx(self) -> np.ndarray | None:
        return _sample_rows(self.n, self.opts)

    @cached_property
    def sample(self) -> Array:
        """The sample as an array of the same dtype (the array itself when small)."""
        idx = self.sample_idx
        if idx is None:
            return self.a
        if self.kind in ("int", "float"):
            from ..encodings.dict_ import _with_validity
            from ..encodings.primitive import primitive_array

            vals, mask = self._values
            sm = None if mask is None else mask[idx]
            return primitive_array(vals[idx], _with_validity(sm), nullable=self.a.dtype.nullable,
                                   ptype=self.a.dtype.ptype)
        import pyarrow as pa

        from ..arrow import from_arrow

        return from_arrow(self.arrow.take(pa.array(idx)), dtype=self.a.dtype)

    @cached_property
    def sample_distinct_frac(self) -> float:
        import pyarrow.compute as pc

        s = self.arrow if self.sample_idx is None else self.sample.to_arrow()
        return int(pc.count_distinct(s, mode="all").as_py()) / max(len(s), 1)

    @cached_property
    def string_dict(self) -> Any:
        """The whole chunk dictionary-encoded by Arrow (nulls as a value), or None when the
        sample shows almost no repetition."""
        import pyarrow as pa

        if self.sample_idx is not None and self.sample_distinct_frac > 0.95:
            return None
        arr = self.arrow
        if pa.types.is_string_view(arr.type) or pa.types.is_binary_view(arr.type):
            arr = arr.cast(pa.large_string() if pa.types.is_string_view(arr.type) else pa.large_binary())
        return arr.dictionary_encode(null_encoding="encode")


# -- schemes ------------------------------------------------------------------------------------


@dataclass
class _Trial:
    """A scheme's estimated bytes for the whole array and how to build it."""

    size: float
    build: Callable[[], Array | None]
    params: Any = None


@dataclass(frozen=True)
class Scheme:
    """One way to encode an array.

    ``kinds`` are the value kinds it applies to (int, float, str, bool, decimal, ext);
    ``trial(facts, compressor)`` estimates the whole array's bytes (None: does not apply);
    ``encode(array, params)`` encodes the top level (its children get compressed by the
    cascade), with the parameters a trial found (or None: find them), or returns None.
    ``exact`` schemes are taken as soon as they apply (constant, sequence)."""

    id: str
    kinds: frozenset[str]
    trial: Callable[[_Facts, Any], _Trial | None]
    encode: Callable[[Array, Any], Array | None]
    cascade: bool = True
    exact: bool = False
    children_skip: tuple[int, ...] = field(default=())


def _constant(a: Array, params: Any = None) -> Array | None:
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..encodings.constant import constant_array
    from ..scalar import value_from_proto, value_to_proto

    n = len(a)
    if n == 0:
        return None
    known = a._stats.is_constant if a._stats is not None else None
    if known is False and a._stats.null_count != n:
        return None
    if a.encoding == "vortex.primitive":
        from ..encodings.primitive import primitive_values

        vals, mask = primitive_values(a)
        if mask is not None:
            if mask.any():
                return None
            return constant_array(None, n, a.dtype) if a.dtype.nullable else None
        raw = vals.view(a.dtype.ptype.to_unsigned().np_dtype)
        if not (raw == raw[0]).all():
            return None
        v = vals[0].item()
    else:
        arr = a.to_arrow()
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if arr.null_count == n:
            return constant_array(None, n, a.dtype) if a.dtype.nullable else None
        try:
            if arr.null_count or not pc.all(pc.equal(arr, arr[0])).as_py():
                return None
        except pa.ArrowNotImplementedError:  # e.g. decimals of a negative scale
            return None
        v = arr[0].as_py()
        if isinstance(a.dtype, dt.Decimal):
            v = int(v.scaleb(a.dtype.scale, _EXACT))
        elif isinstance(a.dtype, dt.Extension):
            return None  # temporal constants: left to the storage path
    try:
        value_from_proto(a.dtype, value_to_proto(a.dtype, v))
    except Exception:
        return None
    return constant_array(v, n, a.dtype)


def _t_constant(f: _Facts, comp: Any) -> _Trial | None:
    if f.kind in ("int", "float", "bool"):
        if f.nulls == f.n:
            pass
        elif f.nulls or not (f.key == f.key[0]).all():
            return None
    elif f.kind == "str":
        if f.nulls != f.n and f.sample_distinct_frac * max(len(f.sample), 1) > 1:
            return None
    r = _constant(f.a)
    return None if r is None else _Trial(0, lambda: r)


def _sequence(a: Array, params: Any = None) -> Array | None:
    from ..encodings.sequence import sequence_encode

    if not _is_int(a):
        return None
    return sequence_encode(a)


def _t_sequence(f: _Facts, comp: Any) -> _Trial | None:
    if f.nulls or f.n < 2:
        return None
    k = f.key
    step = int(k[1]) - int(k[0])
    if step == 0 or int(k[-1]) - int(k[0]) != step * (f.n - 1):
        return None
    r = _sequence(f.a)
    return None if r is None else _Trial(0, lambda: r)


def _is_int(a: Array) -> bool:
    return isinstance(a.dtype, dt.Primitive) and a.dtype.ptype.is_int


def _bitpack(a: Array, params: Any = None) -> Array | None:
    from ..encodings.bitpacked import bitpack
    from ..encodings.primitive import primitive_values

    if a.dtype.ptype.is_signed_int:
        vals, mask = primitive_values(a)
        v = vals if mask is None else vals[mask]
        if len(v) and v.min() < 0:
            return None
    return bitpack(a)


def _t_bitpack(f: _Facts, comp: Any) -> _Trial | None:
    if f.lo is None or f.lo < 0:
        return None
    size = _packed(_unsigned(f.vkey), f.n) + f.validity_bytes + _NODE
    return _Trial(size, lambda: _bitpack(f.a))


def _for(a: Array, params: Any = None) -> Array | None:
    from ..encodings.for_ import for_encode

    return for_encode(a, bitpack=False)


def _t_for(f: _Facts, comp: Any) -> _Trial | None:
    if f.lo is None or f.lo == 0:
        return None  # reference 0: plain bit-packing is the same thing
    size = _packed(_unsigned(f.vkey - f.lo), f.n) + f.validity_bytes + 2 * _NODE
    return _Trial(size, lambda: _for(f.a))


def _zigzag(a: Array, params: Any = None) -> Array | None:
    from ..encodings.zigzag import zigzag_encode

    if not a.dtype.ptype.is_signed_int:
        return None
    return zigzag_encode(a)


def _t_zigzag(f: _Facts, comp: Any) -> _Trial | None:
    from ..encodings.zigzag import zigzag_encode_values

    if f.lo is None or f.vkey.dtype.kind != "i" or f.lo >= 0:
        return None
    size = _packed(zigzag_encode_values(f.vkey), f.n) + f.validity_bytes + 2 * _NODE
    return _Trial(size, lambda: _zigzag(f.a))


def _delta(a: Array, params: Any = None) -> Array | None:
    from ..encodings.delta import delta_encode

    return delta_encode(a, bitpack=False)


def _t_delta(f: _Facts, comp: Any) -> _Trial | None:
    v = f.vkey
    m = len(v)
    if m < 64 or f.down_steps * 50 > m:
        return None  # not (nearly) sorted
    d = np.diff(v)  # wrapping, as the encoding does
    bases = _delta_bases(f.n, v.dtype.itemsize, int(f.hi) - int(f.lo))
    size = (_int_cost(d, f.n, dict_=f.compact, compact=f.compact) + bases + f.validity_bytes
            + 3 * _NODE + _DELTA_FIXED)
    return _Trial(size, lambda: _delta(f.a))


def _dict(a: Array, params: Any = None) -> Array | None:
    from ..encodings.dict_ import dict_encode

    return dict_encode(a)


def _t_dict(f: _Facts, comp: Any) -> _Trial | None:
    if f.kind == "str":
        return _t_dict_str(f, comp)
    m = len(f.vkey)
    if m == 0 or f.distinct * 2 > m:
        return None
    d = f.distinct
    if f.kind == "int":
        values = _int_cost(f._groups[0], d, dict_=False, compact=f.compact)
    else:
        values = d * f.vkey.dtype.itemsize + _NODE
    codes = _codes_cost(d, f.n, f.runs)
    if f.compact and f.n >= 4096:
        idx = np.searchsorted(f._groups[0], f.vkey)
        codes = min(codes, _zstd_bytes(_narrow_codes(idx, d)) + 2 * _NODE)
    size = codes + values + f.validity_bytes + 2 * _NODE
    return _Trial(size, lambda: _dict(f.a))


def _t_dict_str(f: _Facts, comp: Any) -> _Trial | None:
    enc = f.string_dict
    if enc is None:
        return None
    d = len(enc.dictionary)
    if d * 2 > f.n:
        return None
    idx = np.asarray(enc.indices)
    runs = 1 + int(np.count_nonzero(idx[1:] != idx[:-1])) if len(idx) else 0
    vals = enc.dictionary
    data_bytes = vals.buffers()[2].size if vals.buffers()[2] is not None else 0
    values = data_bytes + d * 1.5 + 3 * _NODE
    codes = _codes_cost(d, f.n, runs)
    if f.compact and f.n >= 4096:
        codes = min(codes, _zstd_bytes(_narrow_codes(idx, d)) + 2 * _NODE)
    size = codes + values + 2 * _NODE
    return _Trial(size, lambda: _dict(f.a))


def _runend(a: Array, params: Any = None) -> Array | None:
    from ..encodings.runend import runend_encode

    return runend_encode(a)


def _t_runend(f: _Facts, comp: Any) -> _Trial | None:
    r = f.runs
    if r * 4 > f.n:
        return None
    starts = np.concatenate(([0], f.run_starts))
    ends = r * _bits(f.n) / 8 + 2 * _NODE
    if f.kind == "int":
        rv = f.key[starts]
        rmask = None if f.mask is None else f.mask[starts]
        values = _int_cost(rv if rmask is None else rv[rmask], r, 0 if rmask is None else r - int(rmask.sum()),
                           compact=f.compact)
    else:
        values = r * f.key.dtype.itemsize + (r + 7) // 8 * (f.nulls > 0) + _NODE
    return _Trial(ends + values + _NODE, lambda: _runend(f.a))


def _sparse(a: Array, params: Any = None) -> Array | None:
    from ..encodings.sparse import sparse_encode

    return sparse_encode(a)


def _t_sparse(f: _Facts, comp: Any) -> _Trial | None:
    top, count = f.top
    fill = max(count, f.nulls)
    e = f.n - fill
    if e * 5 > f.n * 2:
        return None
    idx = e * _bits(f.n) / 8 + 2 * _NODE
    if f.kind == "int" and e:
        vals = f.vkey[f.vkey != top] if count >= f.nulls else f.vkey
        values = _int_cost(vals, e, e - len(vals), compact=f.compact)
    else:
        values = e * f.key.dtype.itemsize + _NODE
    return _Trial(idx + values + 2 * _NODE, lambda: _sparse(f.a))


def _alp(a: Array, params: Any = None) -> Array | None:
    from ..encodings.alp import alp_encode

    if a.dtype.ptype == dt.PType.F16:
        return None
    return alp_encode(a, params)


def _float_trial_input(f: _Facts) -> Array | None:
    """What an ALP / ALP-RD trial encodes: the sample, or the whole array when the sample is
    all null (it says nothing); None when the trial cannot apply (f16, all null)."""
    from ..encodings.primitive import primitive_values

    if f.a.dtype.ptype == dt.PType.F16 or f.nulls == f.n:
        return None
    s = f.sample
    if s is not f.a and s.children and not primitive_values(s)[1].any():
        return f.a
    return s


def _t_alp(f: _Facts, comp: Any) -> _Trial | None:
    from ..encodings.primitive import primitive_values

    s = _float_trial_input(f)
    if s is None:
        return None
    r = _alp(s)
    if r is None:
        return None
    m = r.meta
    vals, mask = primitive_values(r.children[0])
    ns = len(s)
    size = _int_cost(vals if mask is None else vals[mask], ns, 0 if mask is None else ns - int(mask.sum()),
                     compact=f.compact)
    if m.patches is not None:
        size += m.patches.len * (f.key.dtype.itemsize + _index_width(f.n)) + 2 * _NODE
    size = size * f.n / max(ns, 1) + _NODE
    exps = (m.e, m.f)
    return _Trial(size, lambda: _alp(f.a, exps), exps)


def _alprd(a: Array, params: Any = None) -> Array | None:
    from ..encodings.alprd import alprd_encode

    if a.dtype.ptype == dt.PType.F16:
        return None
    return alprd_encode(a)


def _t_alprd(f: _Facts, comp: Any) -> _Trial | None:
    from ..encodings.primitive import primitive_values

    s = _float_trial_input(f)
    if s is None:
        return None
    r = _alprd(s)
    if r is None:
        return None
    m = r.meta
    ns = len(s)
    left, _ = primitive_values(r.children[0])
    size = _int_cost(left, ns, dict_=False, compact=f.compact) + _padded(ns) * m.right_bit_width / 8 + _NODE
    if m.patches is not None:
        size += m.patches.len * (2 + _index_width(f.n)) + 2 * _NODE
    size = size * f.n / max(ns, 1) + f.validity_bytes + 2 * _NODE
    return _Trial(size, lambda: _alprd(f.a))


def _fsst(a: Array, params: Any = None) -> Array | None:
    from ..encodings.fsst import fsst_encode

    return fsst_encode(a, params)


def _t_fsst(f: _Facts, comp: Any) -> _Trial | None:
    from ..encodings.fsst import fsst_compress, fsst_train, string_parts

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
    size = (len(codes) + _int_cost(lens, ns, compact=f.compact)
            + _int_cost(co, ns + 1, dict_=False, compact=f.compact))
    size = size * f.n / max(ns, 1) + 9 * len(table) + f.validity_bytes + 3 * _NODE
    trial = _Trial(size, lambda: None, table)

    def build() -> Array | None:
        if len(sd) < 16384 and len(data) > len(sd):
            trial.params = fsst_train(data, offsets)
        return _fsst(f.a, trial.params)

    trial.build = build
    return trial


def _onpair(a: Array, params: Any = None) -> Array | None:
    from ..encodings.onpair import onpair_encode

    return onpair_encode(a)


def _t_onpair(f: _Facts, comp: Any) -> _Trial | None:
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
    r = _onpair(s)
    if r is None:
        return None
    ns = len(s)
    kids = [primitive_values_valid(c) for c in r.children[:4]]
    fixed = r.buffers[0].nbytes + _int_cost(kids[0], compact=f.compact)
    per_row = sum(_int_cost(k, compact=f.compact) for k in kids[1:])
    size = fixed + per_row * f.n / max(ns, 1) + f.validity_bytes + 5 * _NODE
    return _Trial(size, lambda: _onpair(f.a))


def primitive_values_valid(a: Array) -> np.ndarray:
    """The valid values of a canonical primitive array."""
    from ..encodings.primitive import primitive_values

    vals, mask = primitive_values(a)
    return vals if mask is None else vals[mask]


def _datetimeparts(a: Array, params: Any = None) -> Array | None:
    from ..encodings.datetimeparts import datetimeparts_encode

    return datetimeparts_encode(a)


def _t_datetimeparts(f: _Facts, comp: Any) -> _Trial | None:
    from ..encodings.primitive import primitive_values

    if f.a.dtype.id != dt.TIMESTAMP_ID:
        return None
    r = _datetimeparts(f.a)
    if r is None:
        return None
    size = 4 * _NODE
    for c in r.children:
        vals, mask = primitive_values(c)
        size += _int_cost(vals if mask is None else vals[mask], len(c),
                          0 if mask is None else len(c) - int(mask.sum()), compact=f.compact)
    return _Trial(size, lambda: r)


def _ext_storage(a: Array, params: Any = None) -> Array | None:
    from ..encodings.ext import ext_array

    c = a.canonical()
    if c.encoding != "vortex.ext":
        return None
    return ext_array(a.dtype, c.children[0])


def _t_ext(f: _Facts, comp: Any) -> _Trial | None:
    r = _ext_storage(f.a)
    if r is None:
        return None
    storage = r.children[0]
    best = comp.evaluate(storage, frozenset())
    size = (best[0].size if best is not None else storage.nbytes) + _NODE
    return _Trial(size, lambda: r)


def _decimal_byte_parts(a: Array, params: Any = None) -> Array | None:
    from ..encodings.decimal_byte_parts import decimal_byte_parts_encode

    try:
        return decimal_byte_parts_encode(a)
    except ValueError:  # unscaled values wider than 64 bits
        return None


def _t_decimal_byte_parts(f: _Facts, comp: Any) -> _Trial | None:
    from ..encodings.primitive import primitive_values

    r = _decimal_byte_parts(f.a)
    if r is None:
        return None
    vals, mask = primitive_values(r.children[0])
    size = _int_cost(vals if mask is None else vals[mask], f.n, 0 if mask is None else f.n - int(mask.sum()),
                     compact=f.compact)
    return _Trial(size + _NODE, lambda: r)


def _t_bool_sparse(f: _Facts, comp: Any) -> _Trial | None:
    if f.nulls:
        return None
    ones = int(np.count_nonzero(f.key))
    e = min(ones, f.n - ones)
    if e * 5 > f.n * 2:
        return None
    size = e * _bits(f.n) / 8 + 4 * _NODE
    return _Trial(size, lambda: _sparse(f.a))


def _t_bool_runend(f: _Facts, comp: Any) -> _Trial | None:
    if f.nulls or f.runs * 4 > f.n:
        return None
    size = f.runs * (_bits(f.n) + 1) / 8 + 3 * _NODE
    return _Trial(size, lambda: _runend(f.a))


def _zstd(a: Array, params: Any = None) -> Array | None:
    from ..encodings.zstd import zstd_encode

    return zstd_encode(a, use_dictionary=False)


def _t_zstd(f: _Facts, comp: Any) -> _Trial | None:
    """Compact mode: zstd over narrow integers (dictionary codes, small parts) or strings."""
    if not f.compact or f.n < 4096:
        return None
    if f.kind == "int":
        if f.key.dtype.itemsize > 2:
            return None  # wide values: FoR / bit-packing first, which narrows nothing
        size = _zstd_bytes(f.vkey)
    elif f.kind == "str":
        enc = f.string_dict
        if enc is not None and len(enc.dictionary) * 2 <= f.n:
            return None  # repeated values: a dictionary with zstd codes, which decodes faster
        # length-prefixed values: compress them for real (fast), the size is exact
        r = _zstd(f.a)
        return None if r is None else _Trial(r.nbytes + f.validity_bytes + 2 * _NODE, lambda: r)
    else:
        return None
    return _Trial(size + f.validity_bytes + 2 * _NODE, lambda: _zstd(f.a))


def _k(*kinds: str) -> frozenset[str]:
    return frozenset(kinds)


_NUM = _k("int", "float")

SCHEMES: list[Scheme] = [
    Scheme("vortex.constant", _k("int", "float", "bool", "str", "decimal"), _t_constant,
           _constant, cascade=False, exact=True),
    Scheme("vortex.sequence", _k("int"), _t_sequence, _sequence, cascade=False, exact=True),
    Scheme("vortex.decimal_byte_parts", _k("decimal"), _t_decimal_byte_parts, _decimal_byte_parts),
    Scheme("vortex.datetimeparts", _k("ext"), _t_datetimeparts, _datetimeparts),
    Scheme("vortex.ext", _k("ext"), _t_ext, _ext_storage),
    Scheme("fastlanes.bitpacked", _k("int"), _t_bitpack, _bitpack),
    Scheme("fastlanes.for", _k("int"), _t_for, _for),
    Scheme("vortex.zigzag", _k("int"), _t_zigzag, _zigzag),
    Scheme("fastlanes.delta", _k("int"), _t_delta, _delta),
    Scheme(_DICT, _k("int", "float", "str"), _t_dict, _dict),
    Scheme("vortex.runend", _NUM, _t_runend, _runend),
    Scheme("vortex.sparse", _NUM, _t_sparse, _sparse),
    Scheme("vortex.alp", _k("float"), _t_alp, _alp),
    Scheme("vortex.alprd", _k("float"), _t_alprd, _alprd),
    Scheme("vortex.fsst", _k("str"), _t_fsst, _fsst),
    Scheme("vortex.onpair", _k("str"), _t_onpair, _onpair),
    Scheme("vortex.zstd", _k("int", "str"), _t_zstd, _zstd),
]

#: schemes for boolean arrays (validity children included); same IDs as above
_BOOL_SCHEMES: list[Scheme] = [
    Scheme("vortex.sparse", _k("bool"), _t_bool_sparse, _sparse),
    Scheme("vortex.runend", _k("bool"), _t_bool_runend, _runend),
]


def scheme_names() -> list[str]:
    return [s.id for s in SCHEMES]


_BY_ID = {s.id: s for s in SCHEMES}


# -- plans: the encoding tree of a column, replayed on later chunks ------------------------------


@dataclass
class _Plan:
    """The encoding tree chosen for a column, replayed on later chunks of the stream."""

    id: str
    children: list[_Plan | None]
    ratio: float
    params: Any = None

    @classmethod
    def of(cls, a: Array, base_bytes: int, params: Mapping[int, Any]) -> _Plan:
        return cls(a.encoding, [cls.of(c, c.nbytes, params) for c in a.children],
                   a.nbytes / max(base_bytes, 1), params.get(id(a)))


class CompressSession:
    """State kept across the chunks of one stream: the plan chosen per column.

    The first chunk of a column searches; later chunks replay its plan (with the FSST
    symbol table and ALP exponents found for it) and search again only when the replay
    compresses noticeably worse (ratio 20% above the plan's) or fails.
    """

    def __init__(self) -> None:
        self.plans: dict[str, _Plan] = {}
        self.searches = 0
        self.replays = 0


# -- the search -----------------------------------------------------------------------------


class _Compressor:
    def __init__(self, opts: CompressOptions, session: CompressSession | None = None) -> None:
        self.opts = opts
        self.session = session
        self._params: dict[int, Any] = {}  # id(encoded node) -> parameters (for plans)
        self._keep: list[Array] = []  # keeps the nodes of _params alive (ids stay unique)
        self._memo: dict[tuple[int, frozenset[str]], tuple[Any, Array]] = {}  # evaluations
        self._rows = 0  # rows of the column (the depth-0 array) being compressed

    # -- plans ------------------------------------------------------------------------
    def _small_child(self, a: Array, depth: int) -> bool:
        """A canonical child too short to be worth encoding (``min_child_rows``): a side
        structure (dictionary values, patches, bases) at most 1/16 of its column's rows."""
        n = len(a)
        return (depth > 0 and n < self.opts.min_child_rows and 16 * n <= self._rows
                and a.is_canonical)

    def _replay(self, a: Array, plan: _Plan, depth: int, excl: frozenset[str]) -> Array | None:
        """Encode ``a`` with the encoding tree of ``plan``; None when it does not fit."""
        if self._small_child(a, depth):
            return a
        if isinstance(a.dtype, dt.Bool) and plan.id in ("vortex.sparse", "vortex.runend"):
            s: Scheme | None = next(b for b in _BOOL_SCHEMES if b.id == plan.id)
        else:
            s = _BY_ID.get(plan.id)
        if s is None:  # a canonical node: replay what its children became
            if a.encoding != plan.id:
                return None
            if not a.children or depth + 1 > self.opts.max_depth or a.encoding not in _KEEP_CASCADE:
                return a
            kids = []
            for i, c in enumerate(a.children):
                cp = plan.children[i] if i < len(plan.children) else None
                k = self._replay(c, cp, depth + 1, frozenset({a.encoding})) if cp is not None else None
                kids.append(k if k is not None else self.compress(c, depth + 1, frozenset({a.encoding})))
            return _with_children(a, kids)
        if not self.opts.allows(s.id) or not a.is_canonical:
            return None
        r = self._encode(s, a, plan.params)
        if r is None or r.encoding != s.id:
            return None
        self._note(r, plan.params)
        if not s.cascade or depth + 1 > self.opts.max_depth:
            return r
        kids = []
        cexcl = self._child_excl(s.id, excl)
        for i, c in enumerate(r.children):
            cp = plan.children[i] if i < len(plan.children) else None
            k = self._replay(c, cp, depth + 1, cexcl) if cp is not None else None
            kids.append(k if k is not None else self.compress(c, depth + 1, cexcl))
        return _with_children(r, kids)

    def compress_column(self, key: str, a: Array) -> Array:
        """Compress one column chunk, replaying the stream's plan for it when possible."""
        sess = self.session
        self._params.clear()
        self._keep.clear()
        self._memo.clear()
        self._rows = len(a)
        if sess is not None and key in sess.plans and a.is_canonical:
            plan = sess.plans[key]
            r = self._replay(a, plan, 0, frozenset())
            if r is not None and r.nbytes <= max(a.nbytes, 1) * plan.ratio * 1.2 + 64:
                sess.replays += 1
                return r
            self._params.clear()
            self._keep.clear()
        r = self.compress(a, 0)
        if sess is not None:
            sess.searches += 1
            sess.plans[key] = _Plan.of(r, a.nbytes, self._params)
        self._params.clear()
        self._keep.clear()
        self._memo.clear()
        return r

    def _note(self, r: Array, params: Any) -> None:
        if params is not None:
            self._params[id(r)] = params
            self._keep.append(r)

    # -- forcing ----------------------------------------------------------------------
    def force(self, a: Array, encoding_id: str) -> Array:
        """Encode with a given scheme (children still cascade)."""
        s = _BY_ID.get(encoding_id)
        if s is None:
            raise KeyError(encoding_id)
        src = a.canonical() if not a.is_canonical else a
        r = s.encode(src, None)
        if r is None:
            raise ValueError(f"{encoding_id} cannot encode this {a.dtype!r} column")
        return self._cascade(r, 0, s.id, frozenset()) if s.cascade else r

    # -- the recursive search -----------------------------------------------------------
    def compress(self, a: Array, depth: int, excl: frozenset[str] = frozenset()) -> Array:
        """The smallest encoding found for ``a`` (canonical input or not)."""
        opts = self.opts
        if depth == 0:
            self._rows = len(a)
        if depth > opts.max_depth or len(a) == 0 or self._small_child(a, depth):
            return a
        d = a.dtype
        if isinstance(d, dt.Struct) and a.encoding == "vortex.struct":
            return self._struct(a, depth)
        if isinstance(d, (dt.List, dt.FixedSizeList)) and a.is_canonical:
            return self._cascade(a, depth, a.encoding, excl)
        if not a.is_canonical or isinstance(d, dt.Null):
            return a  # already encoded by its producer
        return self._choose(a, depth, excl)

    def _struct(self, a: Array, depth: int) -> Array:
        from ..encodings.struct_ import StructEncoding, struct_array

        validity, fields = StructEncoding.split(a)
        out = []
        for name, f in zip(a.dtype.names, fields):
            stats = f._stats
            if depth == 0:
                with _column_errors(name, f):
                    c = self.compress_column(name, f)
            else:
                c = self.compress(f, depth)
            if c._stats is None and stats is not None:
                c._stats = stats
            out.append(c)
        return struct_array(a.dtype, len(a), out, validity)

    def _encode(self, s: Scheme, a: Array, params: Any) -> Array | None:
        try:
            return s.encode(a, params)
        except Exception:
            if self.opts.strict:
                raise
            return None

    @staticmethod
    def _child_excl(parent: str, excl: frozenset[str]) -> frozenset[str]:
        """Schemes a child may not use: its parent's, and the dictionary below a dictionary."""
        out = {parent}
        if parent == _DICT or _DICT in excl:
            out.add(_DICT)
        return frozenset(out)

    def _cascade(self, r: Array, depth: int, parent: str, excl: frozenset[str]) -> Array:
        """Compress the children of an encoded array."""
        if depth + 1 > self.opts.max_depth:
            return r
        cexcl = self._child_excl(parent, excl)
        kids = []
        changed = False
        for c in r.children:
            k = self.compress(c, depth + 1, cexcl)
            changed |= k is not c
            kids.append(k)
        return _with_children(r, kids) if changed else r

    def evaluate(self, a: Array, excl: frozenset[str]) -> tuple[_Trial, Scheme] | None:
        """The best trial for canonical ``a`` (None: keep it canonical); memoized per array."""
        key = (id(a), excl)
        hit = self._memo.get(key)
        if hit is not None and hit[1] is a:
            return hit[0]
        f = _Facts(a, self.opts)
        schemes = _BOOL_SCHEMES if f.kind == "bool" else SCHEMES
        best: tuple[_Trial, Scheme] | None = None
        for s in ([SCHEMES[0]] if f.kind == "bool" else []) + schemes:
            if f.kind not in s.kinds or s.id in excl or not self.opts.allows(s.id):
                continue
            f.best_size = best[0].size if best is not None else float("inf")
            try:
                t = s.trial(f, self)
            except Exception:
                if self.opts.strict:
                    raise
                t = None
            if t is None:
                continue
            if s.exact:
                best = (t, s)
                break
            if best is None or t.size < best[0].size:
                best = (t, s)
        if best is not None and not best[1].exact and best[0].size > self.opts.min_gain * _kept_cost(f):
            best = None
        self._memo[key] = (best, a)
        return best

    def _choose(self, a: Array, depth: int, excl: frozenset[str]) -> Array:
        best = self.evaluate(a, excl)
        if best is None:
            return self._leave(a, depth, excl)
        trial, scheme = best
        try:
            r = trial.build()
        except Exception:
            if self.opts.strict:
                raise
            r = None
        if r is None:
            return self._leave(a, depth, excl)
        self._note(r, trial.params)
        if scheme.cascade and r.children:
            r = self._cascade(r, depth, scheme.id, excl)
            self._note(r, trial.params)
        return r if r.nbytes < a.nbytes or scheme.exact else self._leave(a, depth, excl)

    def _leave(self, a: Array, depth: int, excl: frozenset[str]) -> Array:
        """``a`` left canonical, its children (string offsets, validity) compressed."""
        if a.children and a.encoding in _KEEP_CASCADE:
            return self._cascade(a, depth, a.encoding, excl)
        return a


def _kept_cost(f: _Facts) -> float:
    """Estimated bytes of ``f.a`` left canonical: its own buffers, with string offsets and
    validity compressed (see ``_Compressor._leave``)."""
    a = f.a
    if a.encoding == "vortex.varbin" and a.children:
        from ..encodings.primitive import primitive_values

        offsets, _ = primitive_values(a.children[0])
        return (sum(b.nbytes for b in a.buffers) + _int_cost(offsets, compact=f.compact)
                + f.validity_bytes + 2 * _NODE)
    if a.encoding in ("vortex.primitive", "vortex.bool") and f.nulls:
        return sum(b.nbytes for b in a.buffers) + f.validity_bytes + 2 * _NODE
    return a.nbytes + _NODE


#: canonical encodings whose children (offsets, validity) are compressed when they are kept
_KEEP_CASCADE = frozenset({"vortex.primitive", "vortex.bool", "vortex.varbin", "vortex.varbinview",
                           "vortex.decimal"})


def _with_children(r: Array, kids: list[Array]) -> Array:
    return Array(r.vtable, r.dtype, len(r), metadata=r.metadata, buffers=r.buffers,
                 children=kids, stats=r._stats, meta=r.meta)


def compress_array(array: Array, options: CompressOptions | None = None, *,
                   per_column: Mapping[str, CompressOptions] | None = None,
                   session: CompressSession | None = None) -> Array:
    """Compress one chunk (any dtype; structs column by column). Pass the same ``session``
    for every chunk of a stream to reuse the encodings chosen for earlier chunks."""
    opts = options or CompressOptions()
    comp = _Compressor(opts, session)
    if isinstance(array.dtype, dt.Struct) and array.encoding == "vortex.struct":
        from ..encodings.struct_ import StructEncoding, struct_array

        if not per_column:
            return comp.compress(array, 0)  # column by column (_struct)
        validity, fields = StructEncoding.split(array)
        out = []
        for name, f in zip(array.dtype.names, fields):
            with _column_errors(name, f):
                c = _Compressor(per_column[name], session).compress_column(name, f) \
                    if name in per_column else comp.compress_column(name, f)
            if c._stats is None:
                c._stats = f._stats
            out.append(c)
        return struct_array(array.dtype, len(array), out, validity)
    with _column_errors(None, array):
        return comp.compress_column("", array)


@contextlib.contextmanager
def _column_errors(name: str | None, a: Array) -> Iterator[None]:
    """The compressor raises nothing but ``VortexIPCError``: anything else escaping it (a
    kernel an Arrow type lacks, say) is an ``UnsupportedError`` naming the column."""
    try:
        yield
    except (VortexIPCError, MemoryError, RecursionError):
        raise
    except Exception as e:
        what = f"column {name!r} ({a.dtype!r})" if name is not None else f"an array of {a.dtype!r}"
        raise UnsupportedError(f"cannot compress {what}: {type(e).__name__}: {e}") from e
