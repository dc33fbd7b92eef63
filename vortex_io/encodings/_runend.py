"""``vortex.runend``: runs of equal values, stored as run ends and one value per run.

Wire layout (0.93): no buffers; ``RunEndMetadata`` (1 ends_ptype, 2 num_runs, 3 offset);
children ``ends`` (non-nullable unsigned ints, num_runs) and ``values`` (the node's dtype,
num_runs). Run j covers logical rows ``[ends[j-1], ends[j])`` (``ends[-1]`` = 0); the node
is rows ``[offset, offset + n)`` of that. Slicing only moves the offset.

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> r = runend_encode(primitive_array(np.array([7, 7, 7, 2, 2, 9])))
>>> r.encoding, len(r.children[0]), r.slice(1, 5).to_arrow().to_pylist()
('vortex.runend', 3, [7, 7, 2, 2])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding
from .._errors import MalformedStreamError, UnsupportedError
from .._proto import ProtoWriter, parse
from ..compute._kernels import compare_storage, is_in_storage, take
from ..compute._numeric import int_bounds, is_sorted, validity
from ._bool import bool_array, bool_values
from ._common import as_array, canonical_ints, int_ptype_of, narrowest_uint, validity_mask
from ._dict import estimate_row_width, repeat_canonical
from ._primitive import primitive_array, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, bit_length, int_cost, register_scheme

__all__ = ["RunEndMeta", "runend_array", "runend_encode", "runend_ends_values"]

_MAX_RUNS = 2**32


@dataclass(frozen=True)
class RunEndMeta:
    """``RunEndMetadata``: 1 ends_ptype; 2 num_runs u64; 3 offset u64."""

    ends_ptype: dt.PType
    num_runs: int
    offset: int

    @classmethod
    def decode(cls, raw: bytes) -> RunEndMeta:
        f = parse(raw, "RunEndMetadata")
        p = int_ptype_of(f.get_uint(1, 0), "vortex.runend ends")
        if not p.is_unsigned:
            raise MalformedStreamError(f"vortex.runend ends must be unsigned, not {p.short}")
        runs = f.get_uint(2, 0)
        if runs > _MAX_RUNS:
            raise MalformedStreamError(f"vortex.runend: {runs} runs is more than an array can hold")
        return cls(p, runs, f.get_uint(3, 0))

    def encode(self) -> bytes:
        return (ProtoWriter().varint(1, int(self.ends_ptype)).varint(2, self.num_runs)
                .varint(3, self.offset).finish())


class RunEndEncoding(Encoding):
    id = "vortex.runend"

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> RunEndMeta:
        return RunEndMeta.decode(raw)

    def child_specs(self, dtype: dt.DType, length: int, meta: RunEndMeta, parts: ArrayParts):
        if parts.nchildren != 2:
            raise MalformedStreamError(f"vortex.runend takes 2 children (ends, values), got {parts.nchildren}")
        return [(dt.Primitive(meta.ends_ptype, False), meta.num_runs), (dtype, meta.num_runs)]

    def validate(self, arr: Array, limits) -> None:
        m: RunEndMeta = arr.meta
        n = len(arr)
        if m.num_runs == 0 and (n or m.offset):
            raise MalformedStreamError(
                f"vortex.runend with no runs cannot hold {n} rows at offset {m.offset}")
        if m.offset + n > 2**64:
            raise MalformedStreamError("vortex.runend: offset + length overflows")
        check_decoded_size(n * estimate_row_width(arr.dtype), f"vortex.runend of {n} rows", limits)

    def run_counts(self, arr: Array) -> tuple[int, int, np.ndarray]:
        """(first run, last run + 1, rows each of those runs contributes to this node)."""
        m: RunEndMeta = arr.meta
        n = len(arr)
        if n == 0:
            return 0, 0, np.zeros(0, dtype=np.int64)
        ends = canonical_ints(arr.children[0], "vortex.runend ends")
        if ends.dtype == np.uint64 and int(ends.max()) >= 2**63:
            raise MalformedStreamError("vortex.runend: a run end does not fit in 63 bits")
        ends = ends.astype(np.int64, copy=False)
        if len(ends) > 1 and bool((ends[1:] <= ends[:-1]).any()):
            raise MalformedStreamError("vortex.runend: run ends are not strictly increasing")
        start, stop = m.offset, m.offset + n
        if int(ends[-1]) < stop:
            raise MalformedStreamError(
                f"vortex.runend: runs end at {int(ends[-1])}, before row {stop} (offset {start} + {n})")
        lo = int(np.searchsorted(ends, start, side="right"))
        hi = int(np.searchsorted(ends, stop - 1, side="right")) + 1
        sel = ends[lo:hi]
        counts = np.minimum(sel, stop)
        prev = np.empty_like(sel)
        prev[0] = start
        prev[1:] = sel[:-1]
        counts -= prev
        return lo, hi, counts

    def canonicalize(self, arr: Array) -> Array:
        lo, hi, counts = self.run_counts(arr)
        values = arr.children[1]
        if hi - lo == 0:
            return values.slice(0, 0).canonical()
        return repeat_canonical(values.slice(lo, hi).canonical(), counts, arr.dtype,
                                limits=arr.limits)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        """Moves the offset and drops the runs outside the range (vortex-data requires the
        first run to reach the offset); only the ends are decoded."""
        m: RunEndMeta = arr.meta
        if stop == start:
            return arr.children[1].slice(0, 0).canonical()
        ends = canonical_ints(arr.children[0], "vortex.runend ends")
        lo = int(np.searchsorted(ends, m.offset + start, side="right"))
        hi = min(int(np.searchsorted(ends, m.offset + stop - 1, side="right")) + 1, len(ends))
        lo = min(lo, hi)
        meta = RunEndMeta(m.ends_ptype, hi - lo, m.offset + start)
        kids = [c.slice(lo, hi) for c in arr.children]
        a = Array(self, arr.dtype, stop - start, metadata=meta.encode(), children=kids, meta=meta)
        return a

    # -- compute kernels: evaluate per run, then expand -----------------------------------
    def _expand(self, arr: Array, fn: Any) -> Any:
        lo, hi, counts = self.run_counts(arr)
        if hi == lo:
            return np.zeros(0, dtype=np.bool_), None
        vals, valid = fn(arr.children[1].slice(lo, hi))
        return np.repeat(vals, counts), None if valid is None else np.repeat(valid, counts)

    def validity(self, arr: Array) -> Any:
        lo, hi, counts = self.run_counts(arr)
        if hi == lo:
            return None
        v = validity(arr.children[1].slice(lo, hi))
        return None if v is None else np.repeat(v, counts)

    def int_bounds(self, arr: Array) -> tuple[int, int] | None:
        return int_bounds(arr.children[1])

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        return self._expand(arr, lambda v: compare_storage(v, value, op))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        return self._expand(arr, lambda v: is_in_storage(v, values))

    def take(self, arr: Array, indices: Any) -> Any:
        """The run of each index by binary search on the ends; sorted indices give a
        run-end array again (one run per distinct run hit), others the taken values."""

        self.run_counts(arr)  # validates the ends against the node
        m: RunEndMeta = arr.meta
        idx = np.asarray(indices, dtype=np.int64)
        ends = canonical_ints(arr.children[0], "vortex.runend ends").astype(np.int64, copy=False)
        runs = np.searchsorted(ends, idx + m.offset, side="right")
        if not is_sorted(idx) or len(idx) == 0:
            return take(arr.children[1], runs)
        change = np.flatnonzero(runs[1:] != runs[:-1]) + 1
        first = np.concatenate(([0], change))
        new_ends = np.append(change, len(idx))
        ep = narrowest_uint(len(idx))
        return runend_array(primitive_array(new_ends.astype(ep.np_dtype)),
                            take(arr.children[1], runs[first]), len(idx))

    def describe(self, arr: Array) -> str:
        m: RunEndMeta = arr.meta
        return f"runs={m.num_runs}, ends={m.ends_ptype.short}" + (f", offset={m.offset}" if m.offset else "")

    def child_names(self, arr: Array) -> list[str]:
        return ["ends", "values"]


RUNEND = register_encoding(RunEndEncoding())


def runend_array(ends: Array, values: Array, length: int | None = None, offset: int = 0) -> Array:
    """A ``vortex.runend`` array from unsigned ``ends`` and one value per run."""
    if not isinstance(ends.dtype, dt.Primitive) or not ends.dtype.ptype.is_unsigned:
        raise TypeError(f"run ends must be unsigned integers, not {ends.dtype!r}")
    if len(ends) != len(values):
        raise ValueError(f"{len(ends)} run ends for {len(values)} values")
    if length is None:
        e = canonical_ints(ends, "run ends")
        length = (int(e[-1]) if len(e) else 0) - offset
    meta = RunEndMeta(ends.dtype.ptype, len(ends), offset)
    a = Array(RUNEND, values.dtype, length, metadata=meta.encode(), children=[ends, values],
              meta=meta)
    return a


def runend_ends_values(array: Array) -> tuple[Array, Array, int]:
    """(ends, values, offset) of a ``vortex.runend`` array, without decoding (for kernels).

    Logical row i of the array is in the run j with ``ends[j-1] <= offset + i < ends[j]``.
    """
    if array.encoding != RUNEND.id:
        raise TypeError(f"not a vortex.runend array: {array.encoding}")
    return array.children[0], array.children[1], array.meta.offset


def runend_encode(array: Any) -> Array:
    """Run-end encode a primitive or bool array (``vortex_io.Array`` or Arrow).

    Floats compare by bit pattern; nulls form runs of their own. Ends use the narrowest
    unsigned type that holds the length.
    """
    from ._common import validity_child

    arr = as_array(array)
    c = arr.canonical()
    d = arr.dtype
    n = len(arr)
    if isinstance(d, dt.Primitive):
        vals, valid = primitive_values(c)
        key = vals.view(d.ptype.to_unsigned().np_dtype) if d.ptype.is_float else vals
    elif isinstance(d, dt.Bool):
        vals = bool_values(c)
        valid = validity_mask(c.children[0] if c.children else None, n)
        key = vals
    else:
        raise UnsupportedError(f"run-end encoding supports primitive and bool arrays, not {d!r}")
    if valid is not None:
        key = np.where(valid, key, key.dtype.type(0))
    change = key[1:] != key[:-1]
    if valid is not None:
        change |= valid[1:] != valid[:-1]
    starts = np.flatnonzero(change) + 1
    ends = np.append(starts, n).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    firsts = np.concatenate([[0], starts]).astype(np.intp) if n else np.zeros(0, dtype=np.intp)
    vmask = None if valid is None else valid[firsts]
    if isinstance(d, dt.Primitive):
        values = primitive_array(vals[firsts], validity_child(vmask), nullable=d.nullable, ptype=d.ptype)
    else:
        values = bool_array(vals[firsts], validity_child(vmask), nullable=d.nullable)
    ep = narrowest_uint(n)
    return runend_array(primitive_array(ends.astype(ep.np_dtype)), values, n)


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_runend(a: Array, params: Any = None) -> Array | None:
    return runend_encode(a)


def _estimate_runend(f: Facts, comp: Any) -> Trial | None:
    r = f.runs
    if r * 4 > f.n:
        return None
    starts = np.concatenate(([0], f.run_starts))
    ends = r * bit_length(f.n) / 8 + 2 * NODE_COST
    if f.kind == "int":
        rv = f.key[starts]
        rmask = None if f.mask is None else f.mask[starts]
        values = int_cost(rv if rmask is None else rv[rmask], r, 0 if rmask is None else r - int(rmask.sum()),
                           compact=f.compact)
    else:
        values = r * f.key.dtype.itemsize + (r + 7) // 8 * (f.nulls > 0) + NODE_COST
    return Trial(ends + values + NODE_COST, lambda: _encode_runend(f.a))


def _estimate_bool_runend(f: Facts, comp: Any) -> Trial | None:
    if f.nulls or f.runs * 4 > f.n:
        return None
    size = f.runs * (bit_length(f.n) + 1) / 8 + 3 * NODE_COST
    return Trial(size, lambda: _encode_runend(f.a))


register_scheme(Scheme("vortex.runend", frozenset({"int", "float"}), _estimate_runend, _encode_runend,
                       priority=110))
register_scheme(Scheme("vortex.runend", frozenset({"bool"}), _estimate_bool_runend, _encode_runend,
                       priority=190))
