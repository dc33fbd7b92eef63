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
>>> from vortex_io._compress import compress_array
>>> a = compress_array(vio.array(np.arange(100_000, dtype=np.int64) * 3 + 7))
>>> a.encoding, a.nbytes < 100
('vortex.sequence', True)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from .. import dtype as dt
from .._array import Array
from .._errors import UnsupportedError, VortexIPCError
from ..encodings._scheme import (
    NODE_COST,
    Facts,
    Scheme,
    Trial,
    int_cost,
    registered_schemes,
    scheme_for,
    scheme_names,
    value_kind,
)

__all__ = ["CompressOptions", "CompressSession", "compress_array", "scheme_names"]

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
        min_batch_bytes: a writer (``StreamWriter``, ``write_ipc``) sends a batch whose
            canonical buffers hold fewer bytes than this as it is: the encodings' own
            metadata outweighs what they save on a few rows (10 trades rows compressed:
            1.39x their canonical bytes; 100 rows about even), and the search costs about
            a millisecond a batch. 0 compresses every batch. ``compress()`` itself and
            forced ``encodings=`` ignore it.
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
    min_batch_bytes: int = 4096

    def allows(self, encoding_id: str) -> bool:
        if encoding_id in self.exclude:
            return False
        return self.allow is None or encoding_id in self.allow


# The schemes (what each encoding costs and how it encodes) live in the encodings' modules,
# registered with ``vortex_io.encodings.register_scheme``; ``Facts`` and the cost models are
# in ``vortex_io/encodings/_scheme.py``.



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
        s = scheme_for(plan.id, value_kind(a.dtype))
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
        s = scheme_for(encoding_id, value_kind(a.dtype)) or scheme_for(encoding_id)
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
        from ..encodings._struct import StructEncoding, struct_array

        d = cast(dt.Struct, a.dtype)  # (compress() checked it)
        validity, fields = StructEncoding.split(a)
        out = []
        for name, f in zip(d.names, fields):
            stats = f._stats
            if depth == 0:
                with _column_errors(name, f):
                    c = self.compress_column(name, f)
            else:
                c = self.compress(f, depth)
            if c._stats is None and stats is not None:
                c._stats = stats
            out.append(c)
        return struct_array(d, len(a), out, validity)

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

    def evaluate(self, a: Array, excl: frozenset[str]) -> tuple[Trial, Scheme] | None:
        """The best trial for canonical ``a`` (None: keep it canonical); memoized per array."""
        key = (id(a), excl)
        hit = self._memo.get(key)
        if hit is not None and hit[1] is a:
            return hit[0]
        f = Facts(a, self.opts)
        opts = self.opts
        best: tuple[Trial, Scheme] | None = None
        for s in registered_schemes(f.kind):
            if s.id in excl or not opts.allows(s.id) or (
                    s.opt_in and (opts.allow is None or s.id not in opts.allow)):
                continue
            f.best_size = best[0].size if best is not None else float("inf")
            try:
                t = s.estimate(f, self)
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


def _kept_cost(f: Facts) -> float:
    """Estimated bytes of ``f.a`` left canonical: its own buffers, with string offsets and
    validity compressed (see ``_Compressor._leave``)."""
    a = f.a
    if a.encoding == "vortex.varbin" and a.children:
        from ..encodings._primitive import primitive_values

        offsets, _ = primitive_values(a.children[0])
        return (sum(b.nbytes for b in a.buffers) + int_cost(offsets, compact=f.compact)
                + f.validity_bytes + 2 * NODE_COST)
    if a.encoding in ("vortex.primitive", "vortex.bool") and f.nulls:
        return sum(b.nbytes for b in a.buffers) + f.validity_bytes + 2 * NODE_COST
    return a.nbytes + NODE_COST


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
        from ..encodings._struct import StructEncoding, struct_array

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
