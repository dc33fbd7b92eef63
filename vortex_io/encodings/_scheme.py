"""The compression-scheme contract: how an encoding takes part in the compressor's search.

A ``Scheme`` says how to estimate an array's encoded size (``estimate(facts, compressor)``
-> ``Trial`` or None) and how to encode it (``encode(array, params)``); each encoding module
registers its own with ``register_scheme``, exactly as a user's encoding does. The search
(``vortex_io.compress``) computes the ``Facts`` of a chunk once, asks every registered
scheme that applies to its value kind, and encodes with the smallest estimate. The cost
models below (``int_cost``, ``packed_cost``, ``codes_cost``...) estimate the children a
scheme produces without encoding them, so the search stays linear in the tree size.

>>> import numpy as np, vortex_io as vio
>>> from vortex_io.encodings import Facts
>>> f = Facts(vio.array(np.array([5, 5, 7, 5], dtype=np.int64)), vio.CompressOptions())
>>> f.kind, f.distinct, f.top, f.runs
('int', 2, (np.int64(5), 3), 3)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import dtype as dt
from .._array import Array, load_plugin

if TYPE_CHECKING:  # pragma: no cover
    from .._compress.compressor import CompressOptions

__all__ = ["Facts", "Scheme", "Trial", "register_scheme", "unregister_scheme",
           "registered_schemes", "scheme_for", "named_scheme",
           "scheme_names", "NODE_COST", "bit_length", "padded_rows", "index_width", "as_unsigned",
           "packed_cost", "delta_bases_cost", "zstd_cost", "narrow_codes", "codes_cost", "int_cost",
           "child_int_cost", "valid_values", "value_kind", "sample_rows"]

#: rough wire cost of one array node (flatbuffer node, buffer descriptors, padding)
NODE_COST = 24


# -- cost models: estimated encoded bytes ------------------------------------------------


def bit_length(x: int) -> int:
    return int(x).bit_length()


def padded_rows(n: int) -> int:
    """Rows bit-packing stores: whole 1024-value chunks."""
    return -(-n // 1024) * 1024


def index_width(n: int) -> int:
    return 1 if n <= 1 << 8 else 2 if n <= 1 << 16 else 4


def as_unsigned(v: np.ndarray) -> np.ndarray:
    return v.view(np.dtype(f"<u{v.dtype.itemsize}"))


def packed_cost(u: np.ndarray, n_rows: int) -> float:
    """Bytes of bit-packing unsigned ``u`` (the valid values of ``n_rows`` slots) at the
    width vortex-data's cost model picks; the values that do not fit become patches, whose
    indices (sorted) and values get compressed in turn."""
    from ._bitpacked import best_bit_width, bit_length_histogram

    if len(u) == 0:
        return 0.0
    w = u.dtype.itemsize
    hist = bit_length_histogram(u)
    bw = best_bit_width(hist, w)
    exc = int(hist[bw + 1:].sum())
    size = padded_rows(n_rows) * bw / 8
    if exc:
        vbits = int(np.flatnonzero(hist)[-1])
        ibits = min(bit_length(n_rows), bit_length(n_rows // exc) + 2)
        raw = exc * (w + index_width(n_rows))
        size += min(raw, padded_rows(exc) * (vbits + ibits) / 8 + 2 * NODE_COST) + 2 * NODE_COST
    return size


def delta_bases_cost(n: int, width: int, span: int) -> float:
    """Bytes of the bases of a delta encoding: one per lane per 1024 rows."""
    nb = (padded_rows(n) // 1024) * (1024 // (8 * width))
    return min(nb * width, padded_rows(nb) * max(bit_length(span), 1) / 8 + NODE_COST)


def zstd_cost(v: np.ndarray) -> int:
    """Bytes of ``v``'s raw little-endian values in one zstd frame (level 3)."""
    import zstandard

    return len(zstandard.ZstdCompressor(level=3).compress(np.ascontiguousarray(v).tobytes()))


def narrow_codes(codes: np.ndarray, distinct: int) -> np.ndarray:
    return codes.astype(np.uint8 if distinct <= 1 << 8 else np.uint16 if distinct <= 1 << 16
                        else np.uint32)


def codes_cost(distinct: int, n: int, runs: int) -> float:
    """Dictionary codes: bit-packed at the width of ``distinct - 1``, or run-end encoded
    when the codes come in long runs."""
    cw = bit_length(max(distinct - 1, 0))
    best = padded_rows(n) * cw / 8 + NODE_COST
    if runs * 4 <= n:
        best = min(best, runs * (bit_length(n) + cw) / 8 + 4 * NODE_COST)
    return best


def int_cost(v: np.ndarray, n_rows: int | None = None, nulls: int = 0, *,
              dict_: bool = True, compact: bool = False) -> float:
    """Estimated bytes of an integer child holding the valid values ``v`` in ``n_rows``
    slots: the cheapest of constant, FoR / bit-packing (with patches), zigzag, run-end,
    delta (sorted values) and dictionary codes, from histograms and counts (``compact``:
    zstd of narrow values and of dictionary codes too)."""
    m = len(v)
    n_rows = m + nulls if n_rows is None else n_rows
    validity = (n_rows + 7) // 8 if nulls else 0
    if m == 0:
        return NODE_COST
    lo, hi = v.min(), v.max()
    if lo == hi:
        return NODE_COST + validity
    span = int(hi) - int(lo)
    best = min(float(n_rows * v.dtype.itemsize), packed_cost(as_unsigned(v - lo), n_rows) + 2 * NODE_COST)
    if v.dtype.kind == "i" and lo < 0:
        from ._zigzag import zigzag_encode_values

        best = min(best, packed_cost(zigzag_encode_values(v), n_rows) + 2 * NODE_COST)
    if m >= 16:
        step = v[1:] != v[:-1]
        runs = 1 + int(np.count_nonzero(step))
        if runs * 4 <= m:
            best = min(best, runs * (bit_length(n_rows) + bit_length(span)) / 8 + 4 * NODE_COST)
        if bool((v[1:] >= v[:-1]).all()):
            d = as_unsigned(np.diff(v))
            best = min(best, packed_cost(d, n_rows) + delta_bases_cost(n_rows, v.dtype.itemsize, span) + 4 * NODE_COST)
        if dict_ and m >= 512 and bit_length(span) > 4:
            s = np.sort(v)
            first = np.concatenate(([True], s[1:] != s[:-1]))
            distinct = int(np.count_nonzero(first))
            if distinct * 2 <= m:
                codes = codes_cost(distinct, n_rows, runs)
                if compact and m >= 4096:
                    idx = np.searchsorted(s[first], v)
                    codes = min(codes, zstd_cost(narrow_codes(idx, distinct)) + 2 * NODE_COST)
                best = min(best, codes + distinct * bit_length(span) / 8 + 4 * NODE_COST)
    if compact and m >= 4096 and v.dtype.itemsize <= 2:
        best = min(best, zstd_cost(v) + 2 * NODE_COST)
    return best + validity


# -- facts about one array ----------------------------------------------------------------------


def value_kind(d: dt.DType) -> str:
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


def sample_rows(n: int, opts: CompressOptions) -> np.ndarray | None:
    """Row indices of the sample (``None``: the whole array is the sample)."""
    k = opts.slice_rows
    if n <= opts.sample_slices * k:
        return None
    starts = np.linspace(0, n - k, opts.sample_slices).astype(np.int64)
    return (starts[:, None] + np.arange(k, dtype=np.int64)).ravel()


class Facts:
    """Facts about a canonical array (the whole chunk), each computed once when first used:
    what a scheme's ``estimate`` reads instead of scanning the values itself.

    ``a`` the array, ``n`` its rows, ``kind`` its value kind (``value_kind``), ``opts`` the
    ``CompressOptions``, ``compact`` whether children may use zstd, ``best_size`` the best
    estimate so far in this search (a scheme that cannot beat it may return None early).
    Numbers and booleans: ``mask`` (validity, None: all valid), ``key`` (values as
    comparable integers, floats by bit pattern), ``vkey`` (the valid keys), ``nulls``,
    ``lo`` / ``hi``, ``runs`` / ``run_starts``, ``groups`` / ``distinct`` / ``top``,
    ``down_steps``; strings: ``arrow``, ``string_parts`` (data, offsets, validity),
    ``string_dict``; every kind: ``sample`` (the deterministic sample as an array),
    ``sample_idx``, ``sample_distinct_frac``, ``validity_bytes``.
    """

    def __init__(self, a: Array, opts: CompressOptions) -> None:
        self.a = a
        self.n = len(a)
        self.opts = opts
        self.kind = value_kind(a.dtype)
        self.best_size = float("inf")  # the best estimate so far (set by the search)
        self.compact = opts.compact and opts.allows("vortex.zstd")  # may zstd children

    # -- primitive and bool values ------------------------------------------------------
    @cached_property
    def _values(self) -> tuple[np.ndarray, np.ndarray | None]:
        if self.kind == "bool":
            from ._bool import bool_values
            from ._common import validity_mask

            c = self.a
            return bool_values(c).view(np.uint8), validity_mask(c.children[0] if c.children else None, self.n)
        from ._primitive import primitive_values

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
        k = as_unsigned(vals) if self.kind == "float" else vals
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
        best = min(best, e * bit_length(n) / 8 + 4 * NODE_COST)
        runs = 1 + int(np.count_nonzero(mask[1:] != mask[:-1]))
        return min(best, runs * (bit_length(n) + 1) / 8 + 3 * NODE_COST)

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
    def groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(the distinct valid keys, ascending; the count of each). Integers of a small
        range are counted with ``bincount``, anything else is sorted."""
        v = self.vkey
        if len(v) == 0:
            return v[:0], np.zeros(0, np.int64)
        if self.kind in ("int", "bool") and int(self.hi) - int(self.lo) <= max(4 * len(v), 1 << 12):
            counts = np.bincount(as_unsigned(v - self.lo).astype(np.intp, copy=False))
            nz = np.flatnonzero(counts)
            return (nz.astype(v.dtype) + self.lo).astype(v.dtype, copy=False), counts[nz]
        s = np.sort(v)
        firsts = np.concatenate(([0], np.flatnonzero(s[1:] != s[:-1]) + 1))
        return s[firsts], np.diff(np.append(firsts, len(s)))

    @property
    def distinct(self) -> int:
        return len(self.groups[0])

    @cached_property
    def top(self) -> tuple[Any, int]:
        """(most frequent valid key, its count)."""
        uniq, counts = self.groups
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
        from ._fsst import string_parts

        return string_parts(self.a)

    @cached_property
    def sample_idx(self) -> np.ndarray | None:
        return sample_rows(self.n, self.opts)

    @cached_property
    def sample(self) -> Array:
        """The sample as an array of the same dtype (the array itself when small)."""
        idx = self.sample_idx
        if idx is None:
            return self.a
        if self.kind in ("int", "float"):
            from ._common import validity_child
            from ._primitive import primitive_array

            vals, mask = self._values
            sm = None if mask is None else mask[idx]
            return primitive_array(vals[idx], validity_child(sm), nullable=self.a.dtype.nullable,
                                   ptype=cast(dt.Primitive, self.a.dtype).ptype)
        import pyarrow as pa

        from .._arrow import from_arrow

        return from_arrow(self.arrow.take(pa.array(idx)), dtype=self.a.dtype)

    @cached_property
    def sample_distinct_frac(self) -> float:
        import pyarrow.compute as pc

        s = self.arrow if self.sample_idx is None else self.sample.to_arrow()
        return int(pc.count_distinct(s, mode="all").as_py()) / max(len(s), 1)

    @property
    def float_sample(self) -> Array | None:
        """What a float scheme's estimate encodes: the sample, or the whole array when the
        sample is all null (it says nothing); None for f16 or an all-null array."""
        from ._primitive import primitive_values

        if cast(dt.Primitive, self.a.dtype).ptype == dt.PType.F16 or self.nulls == self.n:
            return None
        s = self.sample
        if s is not self.a and s.children:
            mask = primitive_values(s)[1]
            if mask is not None and not mask.any():
                return self.a
        return s

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


def child_int_cost(a: Array, *, compact: bool = False) -> float:
    """``int_cost`` of a canonical primitive integer array (a child a scheme produced): its
    valid values in ``len(a)`` slots, its nulls counted."""
    from ._primitive import primitive_values

    vals, mask = primitive_values(a)
    if mask is None:
        return int_cost(vals, len(a), 0, compact=compact)
    return int_cost(vals[mask], len(a), len(a) - int(mask.sum()), compact=compact)


def valid_values(a: Array) -> np.ndarray:
    """The valid values of a canonical primitive array."""
    from ._primitive import primitive_values

    vals, mask = primitive_values(a)
    return vals if mask is None else vals[mask]


# -- schemes and their registry -----------------------------------------------------------


@dataclass
class Trial:
    """A scheme's estimated bytes for the whole array and how to build it: ``build()``
    encodes (None: it turned out not to apply); ``params`` are what a stream's later chunks
    may reuse (an FSST symbol table, ALP exponents), handed back to ``Scheme.encode``."""

    size: float
    build: Callable[[], Array | None]
    params: Any = None


@dataclass(frozen=True)
class Scheme:
    """One way to encode an array, registered by its encoding with ``register_scheme``.

    ``id`` is the encoding ID it produces; ``kinds`` the value kinds it applies to (``int``,
    ``float``, ``str``, ``bool``, ``decimal``, ``ext``: see ``value_kind``);
    ``estimate(facts, compressor)`` estimates the whole array's bytes (None: does not apply;
    ``compressor.evaluate(child, frozenset())`` gives the best ``(Trial, Scheme)`` for
    another array, or None); ``encode(array, params)`` encodes the top level with the
    parameters a trial found (None: find them) or returns None. Its children are compressed
    in turn unless ``cascade`` is False; ``exact`` schemes are taken as soon as they apply
    (constant, sequence). ``priority`` orders the search (lower first; equal estimates go
    to the earlier scheme): the built-ins use 10..190, a user's scheme defaults to 1000.
    An ``opt_in`` scheme is only searched where the caller names it (``CompressOptions
    (allow=...)`` or a column's list in ``write_ipc(encodings=...)``) and is always used
    when a column is forced to its encoding: for encodings other readers lack.
    """

    id: str
    kinds: frozenset[str]
    estimate: Callable[[Facts, Any], Trial | None]
    encode: Callable[[Array, Any], Array | None]
    cascade: bool = True
    exact: bool = False
    children_skip: tuple[int, ...] = field(default=())
    priority: int = 1000
    opt_in: bool = False


_SCHEMES: list[Scheme] = []
_BY_KIND: dict[str, tuple[Scheme, ...]] = {}


def register_scheme(scheme: Scheme, *, replace: bool = False) -> Scheme:
    """Make ``scheme`` part of the compressor's search (and of forcing its encoding).

    One scheme per (encoding ID, value kind): registering another for a kind it already
    covers is an error unless ``replace=True``. Returns the scheme.
    """
    if not isinstance(scheme, Scheme):
        raise TypeError(f"register_scheme takes a Scheme, not {type(scheme).__name__}")
    if not scheme.id or not scheme.kinds:
        raise ValueError("a scheme needs an encoding id and at least one value kind")
    clash = [s for s in _SCHEMES if s.id == scheme.id and s.kinds & scheme.kinds]
    if clash and not replace:
        raise ValueError(f"a scheme for {scheme.id!r} on {sorted(clash[0].kinds & scheme.kinds)} "
                         "is already registered")
    for s in clash:
        _SCHEMES.remove(s)
    _SCHEMES.append(scheme)
    _SCHEMES.sort(key=lambda s: s.priority)  # stable: equal priorities keep their order
    _BY_KIND.clear()
    return scheme


def unregister_scheme(scheme: Scheme) -> None:
    """Take ``scheme`` out of the search again (a no-op if it is not registered)."""
    if scheme in _SCHEMES:
        _SCHEMES.remove(scheme)
        _BY_KIND.clear()


def _ensure_builtins() -> None:
    from .. import encodings  # noqa: F401  (each built-in module registers its schemes)


def registered_schemes(kind: str | None = None) -> tuple[Scheme, ...]:
    """The registered schemes in search order (those applying to ``kind`` if given)."""
    _ensure_builtins()
    if kind is None:
        return tuple(_SCHEMES)
    hit = _BY_KIND.get(kind)
    if hit is None:
        hit = _BY_KIND[kind] = tuple(s for s in _SCHEMES if kind in s.kinds)
    return hit


def scheme_for(encoding_id: str, kind: str | None = None) -> Scheme | None:
    """The registered scheme producing ``encoding_id`` (for ``kind`` when given; else the
    first), or None."""
    for s in registered_schemes(kind):
        if s.id == encoding_id:
            return s
    return None


def named_scheme(encoding_id: str) -> Scheme | None:
    """``scheme_for`` an ID a caller named (a forced or allowed encoding): an installed
    plugin of that ID is loaded first when no scheme is registered for it. The search
    itself never loads plugins."""
    s = scheme_for(encoding_id)
    if s is None and load_plugin(encoding_id):
        s = scheme_for(encoding_id)
    return s


def scheme_names() -> list[str]:
    """The encoding IDs the compressor can produce, in search order."""
    return list(dict.fromkeys(s.id for s in registered_schemes()))
