"""``vortex.sparse``: a fill value everywhere except at a few patched positions.

Wire layout (0.93): buffer 0 is the fill value as ``ScalarValue`` bytes; metadata is
``SparseMetadata`` (1: ``PatchesMetadata``, required); children ``indices`` (unsigned,
sorted) and ``values`` (the node's dtype, possibly with nulls). Row ``indices[k] -
offset`` holds ``values[k]``. vortex-data refuses sparse arrays without patches, so the
encoder writes a ``vortex.constant`` then.

Also home of ``slice_patches``, shared with ``vortex.alp`` and ``vortex.alprd``.

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> s = sparse_encode(primitive_array(np.array([0, 0, 5, 0, 0, 7])))
>>> s.encoding, s.to_arrow().to_pylist(), s.slice(3, 6).to_arrow().to_pylist()
('vortex.sparse', [0, 0, 5, 0, 0, 7], [0, 0, 7])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtype as dt
from .._array import (
    Array,
    ArrayParts,
    Encoding,
    LazyChildren,
    check_decoded_size,
    register_encoding,
)
from .._arrow import from_arrow, python_value_to_arrow, without_views
from .._errors import MalformedStreamError, UnsupportedError
from .._proto import ProtoWriter, parse
from .._scalar import value_to_proto
from ..compute._kernels import compare_storage, is_in_storage, take
from ..compute._numeric import validity
from ._bool import bool_array, bool_values
from ._common import as_array, canonical_ints, narrowest_uint, scalar_buffer_value, validity_mask
from ._constant import constant_array
from ._dict import estimate_row_width
from ._patches import PatchesMeta, patch_hits
from ._primitive import primitive_array, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, bit_length, int_cost, register_scheme

__all__ = ["sparse_array", "sparse_encode", "sparse_fill_value", "slice_patches",
           "strict_patch_positions"]


def strict_patch_positions(meta: PatchesMeta, indices: Array, n: int, what: str) -> np.ndarray:
    """Positions ``indices - offset`` of patches, checked sorted and inside ``[0, n)``."""
    if meta.len == 0:
        return np.zeros(0, dtype=np.int64)
    idx = canonical_ints(indices, f"{what} patch indices")
    if idx.dtype == np.uint64 and int(idx.max()) >= 2**63:
        raise MalformedStreamError(f"{what}: a patch index does not fit in 63 bits")
    if meta.offset >= 2**63:  # (np.int64 would raise OverflowError)
        raise MalformedStreamError(f"{what}: patch offset {meta.offset} is out of range")
    pos = idx.astype(np.int64, copy=False) - np.int64(meta.offset)
    if len(pos) > 1 and bool((pos[1:] < pos[:-1]).any()):
        raise MalformedStreamError(f"{what}: patch indices are not sorted")
    if int(pos[0]) < 0 or int(pos[-1]) >= n:
        raise MalformedStreamError(
            f"{what}: patch at position {int(pos[0]) if pos[0] < 0 else int(pos[-1])} "
            f"is outside the {n} rows")
    return pos


def slice_patches(meta: PatchesMeta, children: Sequence[Array] | LazyChildren, start: int,
                  stop: int) -> tuple[PatchesMeta, list[Array]] | None:
    """The patches of rows ``[start, stop)`` of a node (new metadata with the offset moved
    by ``start``, and sliced indices and values), or None when none fall in the range.

    Chunk offsets are dropped (they are only a lookup accelerator).
    """
    if meta.len == 0:
        return None
    indices, values = children[0], children[1]
    idx = canonical_ints(indices, "patch indices")
    lo = int(np.searchsorted(idx, meta.offset + start, side="left"))
    hi = int(np.searchsorted(idx, meta.offset + stop, side="left"))
    if hi <= lo:
        return None
    m = PatchesMeta(hi - lo, meta.offset + start, meta.indices_ptype)
    return m, [indices.slice(lo, hi), values.slice(lo, hi)]


def _encode_meta(patches: PatchesMeta) -> bytes:
    return ProtoWriter().message(1, patches.encode()).finish()


class SparseEncoding(Encoding):
    id = "vortex.sparse"

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> PatchesMeta:
        f = parse(raw, "SparseMetadata")
        pm = f.get_message(1, "SparseMetadata.patches")
        if pm is None:
            raise MalformedStreamError("vortex.sparse: SparseMetadata has no patches")
        meta = PatchesMeta.from_fields(pm, "vortex.sparse")
        if not meta.indices_ptype.is_unsigned:
            raise MalformedStreamError(
                f"vortex.sparse: patch indices must be unsigned, not {meta.indices_ptype.short}")
        if meta.len > length:
            raise MalformedStreamError(f"vortex.sparse: {meta.len} patches for {length} rows")
        return meta

    def nbuffers(self, dtype, meta) -> tuple[int, int]:
        return (1, 1)

    def child_specs(self, dtype: dt.DType, length: int, meta: PatchesMeta, parts: ArrayParts):
        if parts.nchildren != 2:
            raise MalformedStreamError(f"vortex.sparse takes 2 children (indices, values), got {parts.nchildren}")
        return [(dt.Primitive(meta.indices_ptype), meta.len), (dtype, meta.len)]

    def validate(self, arr: Array, limits) -> None:
        fill = sparse_fill_value(arr)
        n = len(arr)
        # the fill is repeated on every row that is not a patch: count its bytes too
        width = estimate_row_width(arr.dtype) + (len(fill) if isinstance(fill, (str, bytes)) else 0)
        check_decoded_size(n * width, f"vortex.sparse of {n} rows", limits)

    def canonicalize(self, arr: Array) -> Array:
        from ._common import validity_child

        n = len(arr)
        meta: PatchesMeta = arr.meta
        fill = sparse_fill_value(arr)
        d = arr.dtype
        pos = strict_patch_positions(meta, arr.children[0], n, "vortex.sparse")
        values = arr.children[1].canonical()
        if isinstance(d, (dt.Primitive, dt.Bool)) and values.encoding in ("vortex.primitive", "vortex.bool"):
            if isinstance(d, dt.Primitive):
                pvals, pmask = primitive_values(values)
                out = np.full(n, 0 if fill is None else fill, dtype=d.ptype.np_dtype)
            else:
                pvals = bool_values(values)
                pmask = validity_mask(values.children[0] if values.children else None, len(values))
                out = np.full(n, bool(fill), dtype=np.bool_)
            out[pos] = pvals
            mask = None
            if fill is None:
                mask = np.zeros(n, dtype=np.bool_)
                mask[pos] = True if pmask is None else pmask
            elif pmask is not None:
                mask = np.ones(n, dtype=np.bool_)
                mask[pos] = pmask
            if isinstance(d, dt.Primitive):
                return primitive_array(out, validity_child(mask), nullable=d.nullable, ptype=d.ptype)
            return bool_array(out, validity_child(mask), nullable=d.nullable)
        return _sparse_generic(d, n, fill, pos, values)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        sl = slice_patches(arr.meta, arr.children, start, stop)
        if sl is None:
            return constant_array(sparse_fill_value(arr), stop - start, arr.dtype)
        m, kids = sl
        a = Array(self, arr.dtype, stop - start, metadata=_encode_meta(m), buffers=arr.buffers,
                  children=kids, meta=m)
        return a

    # -- compute kernels: the fill value once, the patches on their own ------------------
    def _positions(self, arr: Array) -> np.ndarray:
        return strict_patch_positions(arr.meta, arr.children[0], len(arr), "vortex.sparse")

    def _combine(self, arr: Array, fill_res: Any, patch_res: Any) -> Any:
        """Rows get the fill's (one-row) result, patched rows their own."""
        n = len(arr)
        fv, fvalid = fill_res
        pv, pvalid = patch_res
        pos = self._positions(arr)
        fill_ok = fvalid is None or bool(fvalid[0])
        vals = np.full(n, bool(fv[0]) and fill_ok, dtype=np.bool_)
        vals[pos] = pv
        if fill_ok and pvalid is None:
            return vals, None
        valid = np.full(n, fill_ok, dtype=np.bool_)
        valid[pos] = True if pvalid is None else pvalid
        return vals, valid

    def validity(self, arr: Array) -> Any:
        fill_ok = sparse_fill_value(arr) is not None
        pvalid = validity(arr.children[1])
        if fill_ok and pvalid is None:
            return None
        valid = np.full(len(arr), fill_ok, dtype=np.bool_)
        valid[self._positions(arr)] = True if pvalid is None else pvalid
        return valid

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        fill = constant_array(sparse_fill_value(arr), 1, arr.dtype)
        return self._combine(arr, compare_storage(fill, value, op),
                             compare_storage(arr.children[1], value, op))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        fill = constant_array(sparse_fill_value(arr), 1, arr.dtype)
        return self._combine(arr, is_in_storage(fill, values),
                             is_in_storage(arr.children[1], values))

    def take(self, arr: Array, indices: Any) -> Any:
        """Patch lookup by binary search: the result is sparse again (or constant)."""

        idx = np.asarray(indices, dtype=np.int64)
        pos = self._positions(arr)
        fill = sparse_fill_value(arr)
        out_pos, sel = patch_hits(pos, idx)
        if len(out_pos) == 0:
            return constant_array(fill, len(idx), arr.dtype)
        ip = narrowest_uint(int(out_pos[-1]))
        return sparse_array(primitive_array(out_pos.astype(ip.np_dtype)),
                            take(arr.children[1], sel), len(idx), fill, arr.dtype)

    def describe(self, arr: Array) -> str:
        return f"patches={arr.meta.len}, fill={sparse_fill_value(arr)!r}"

    def child_names(self, arr: Array) -> list[str]:
        return ["indices", "values"]


SPARSE = register_encoding(SparseEncoding())


def sparse_fill_value(arr: Array) -> Any:
    """The fill value of a ``vortex.sparse`` array as a Python value (None for null)."""
    return arr.memo("fill", lambda: _parse_fill(arr))


def _parse_fill(arr: Array) -> Any:
    return scalar_buffer_value(arr, "vortex.sparse: empty fill value")


def _sparse_generic(d: dt.DType, n: int, fill: Any, pos: np.ndarray, values: Array) -> Array:
    """Any dtype: gather from [patch values..., fill] through Arrow."""
    import pyarrow as pa


    t = without_views(d.to_arrow())  # (Arrow has no take kernel for view types)
    vals = values.to_arrow()
    if isinstance(vals, pa.ChunkedArray):
        vals = vals.combine_chunks()
    if vals.type != t:
        vals = vals.cast(t)
    fill_arr = pa.array([python_value_to_arrow(d, fill, t) if fill is not None else None], type=t)
    src = pa.concat_arrays([vals, fill_arr])
    idx = np.full(n, len(vals), dtype=np.int64)
    idx[pos] = np.arange(len(vals))
    return from_arrow(src.take(pa.array(idx)), dtype=d)


def sparse_array(indices: Array, values: Array, length: int, fill: Any, dtype: dt.DType | None = None,
                 offset: int = 0) -> Array:
    """A ``vortex.sparse`` array: ``fill`` (a Python value, None for null) everywhere except
    rows ``indices - offset``, which hold ``values``."""
    d = dtype if dtype is not None else values.dtype
    if values.dtype != d:
        raise TypeError(f"sparse values of {values.dtype!r} for a sparse array of {d!r}")
    if not isinstance(indices.dtype, dt.Primitive) or not indices.dtype.ptype.is_unsigned:
        raise TypeError(f"sparse indices must be unsigned integers, not {indices.dtype!r}")
    m = PatchesMeta(len(indices), offset, indices.dtype.ptype)
    fill_raw = value_to_proto(d, fill)
    a = Array(SPARSE, d, length, metadata=_encode_meta(m),
              buffers=[np.frombuffer(fill_raw, dtype=np.uint8)], children=[indices, values], meta=m)
    a.memo("fill", lambda: fill)
    return a


def sparse_encode(array: Any, fill: Any = None) -> Array:
    """Sparse-encode a primitive, bool or utf8/binary array around ``fill`` (default: the
    most frequent value, nulls included; ties go to the smallest). Floats compare by bit
    pattern. Returns a ``vortex.constant`` when every row equals the fill.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from ._common import validity_child
    from ._dict import take_canonical

    arr = as_array(array)
    d = arr.dtype
    n = len(arr)
    c = arr.canonical()
    if isinstance(d, (dt.Primitive, dt.Bool)):
        if isinstance(d, dt.Primitive):
            vals, valid = primitive_values(c)
            key = vals.view(d.ptype.to_unsigned().np_dtype) if d.ptype.is_float else vals
        else:
            vals = bool_values(c)
            valid = validity_mask(c.children[0] if c.children else None, n)
            key = vals.view(np.uint8)
        if valid is not None and valid.all():
            valid = None
        if fill is None:
            fill = _most_frequent(key, vals, valid, d)
            if fill is None and not d.nullable:  # only when empty
                fill = False if isinstance(d, dt.Bool) else 0
        if fill is None:
            differs = np.ones(n, dtype=np.bool_) if valid is None else valid.copy()
        else:
            fkey = np.array([fill], dtype=vals.dtype).view(key.dtype)
            differs = key != fkey[0]
            if valid is not None:
                differs |= ~valid
        pos = np.flatnonzero(differs)
        if len(pos) == 0:
            return constant_array(fill, n, d)
        pv = valid[pos] if valid is not None else None
        if isinstance(d, dt.Primitive):
            values = primitive_array(vals[pos], validity_child(pv), nullable=d.nullable, ptype=d.ptype)
        else:
            values = bool_array(vals[pos], validity_child(pv), nullable=d.nullable)
    elif isinstance(d, (dt.Utf8, dt.Binary)):
        a = c.to_arrow()
        if isinstance(a, pa.ChunkedArray):
            a = a.combine_chunks()
        if fill is None and not n and not d.nullable:
            fill = "" if isinstance(d, dt.Utf8) else b""
        elif fill is None and n:
            vc = pc.value_counts(a)
            counts = np.asarray(vc.field("counts"))
            best = int(np.argmax(counts))
            fill = vc.field("values")[best].as_py()
            if a.null_count > int(counts[best]):
                fill = None
        if fill is None:
            differs = np.asarray(a.is_valid())
        else:
            eq = pc.equal(a, pa.scalar(fill, type=a.type)).fill_null(False)
            differs = ~np.asarray(eq)
        pos = np.flatnonzero(differs)
        if len(pos) == 0:
            return constant_array(fill, n, d)
        values = take_canonical(from_arrow(a, dtype=d), pos, None, d)
    else:
        raise UnsupportedError(f"sparse encoding supports primitive, bool and string arrays, not {d!r}")
    ip = narrowest_uint(int(pos[-1]))
    indices = primitive_array(pos.astype(ip.np_dtype))
    return sparse_array(indices, values, n, fill, d)


def _most_frequent(key: np.ndarray, vals: np.ndarray, valid: np.ndarray | None, d: dt.DType) -> Any:
    """The most frequent value (hash counts; ties go to the first seen), or None when
    nulls are the most frequent."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kv = key if valid is None else key[valid]
    nulls = 0 if valid is None else int(len(key) - len(kv))
    if len(kv) == 0:
        return None
    vc = pc.value_counts(pa.array(kv))
    counts = np.asarray(vc.field("counts"))
    best = int(np.argmax(counts))
    if nulls > int(counts[best]):
        return None
    v = np.asarray(vc.field("values"))[best : best + 1].view(vals.dtype)[0]
    if isinstance(d, dt.Bool):
        return bool(v)
    return v.item()


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_sparse(a: Array, params: Any = None) -> Array | None:
    return sparse_encode(a)


def _estimate_sparse(f: Facts, comp: Any) -> Trial | None:
    top, count = f.top
    fill = max(count, f.nulls)
    e = f.n - fill
    if e * 5 > f.n * 2:
        return None
    idx = e * bit_length(f.n) / 8 + 2 * NODE_COST
    if f.kind == "int" and e:
        vals = f.vkey[f.vkey != top] if count >= f.nulls else f.vkey
        values = int_cost(vals, e, e - len(vals), compact=f.compact)
    else:
        values = e * f.key.dtype.itemsize + NODE_COST
    return Trial(idx + values + 2 * NODE_COST, lambda: _encode_sparse(f.a))


def _estimate_bool_sparse(f: Facts, comp: Any) -> Trial | None:
    if f.nulls:
        return None
    ones = int(np.count_nonzero(f.key))
    e = min(ones, f.n - ones)
    if e * 5 > f.n * 2:
        return None
    size = e * bit_length(f.n) / 8 + 4 * NODE_COST
    return Trial(size, lambda: _encode_sparse(f.a))


register_scheme(Scheme("vortex.sparse", frozenset({"int", "float"}), _estimate_sparse, _encode_sparse,
                       priority=120))
register_scheme(Scheme("vortex.sparse", frozenset({"bool"}), _estimate_bool_sparse, _encode_sparse,
                       priority=180))
