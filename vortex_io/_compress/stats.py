"""Statistics computed at write time (min, max, null_count, is_sorted, is_constant).

The reader uses them to prune chunks (``vortex_io.compute.can_skip``) before decoding.
"""

from __future__ import annotations

import decimal

import numpy as np

from .. import dtype as dt
from .._array import Array
from .._stats import ArrayStats

__all__ = ["compute_stats", "with_stats"]

_EXACT = decimal.Context(prec=200)  # decimals have at most 76 digits: no rounding

_MINMAX_KINDS = (dt.Primitive, dt.Decimal, dt.Utf8, dt.Binary, dt.Bool)


def compute_stats(a: Array) -> ArrayStats | None:
    """Exact stats of a (canonical or not) array of a scalar dtype, or None if unsupported."""
    import pyarrow as pa
    import pyarrow.compute as pc

    d = a.dtype
    s = d.storage if isinstance(d, dt.Extension) else d
    if not isinstance(s, _MINMAX_KINDS) or len(a) == 0:
        return None
    arr = a.to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if isinstance(d, dt.Extension):
        arr = arr.view(s.to_arrow())
    if isinstance(s, dt.Primitive) and s.ptype == dt.PType.F16:
        arr = arr.cast(pa.float32())  # exact; Arrow has no half-float kernels
    nulls = arr.null_count
    st = ArrayStats(null_count=nulls)
    if nulls == len(arr):
        return st
    if isinstance(s, dt.Primitive) and s.ptype.is_float:
        vals = arr.to_numpy(zero_copy_only=False)
        nan = int(np.isnan(vals).sum()) if nulls == 0 else int(pc.sum(pc.is_nan(arr)).as_py() or 0)
        st.nan_count = nan
        if nan:
            arr = pc.filter(arr, pc.invert(pc.is_nan(arr)))
            if len(arr) - arr.null_count == 0:
                return st
    mm = pc.min_max(arr)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if isinstance(s, dt.Decimal):
        lo = int(lo.scaleb(s.scale, _EXACT))
        hi = int(hi.scaleb(s.scale, _EXACT))
    elif isinstance(s, dt.Primitive) and s.ptype == dt.PType.F16:
        lo, hi = float(lo), float(hi)
    full = ArrayStats.of(s, min=lo, max=hi, null_count=nulls, nan_count=st.nan_count)
    full.is_constant = bool(nulls == 0 and lo == hi and not st.nan_count)
    if nulls == 0 and isinstance(s, dt.Primitive) and s.ptype.is_int and len(arr) > 1:
        vals = np.asarray(arr.to_numpy(zero_copy_only=False))
        if full.is_constant:
            full.is_sorted, full.is_strict_sorted = True, False
        else:
            steps = vals[1:] >= vals[:-1]
            full.is_sorted = bool(steps.all())
            full.is_strict_sorted = bool(full.is_sorted and (vals[1:] > vals[:-1]).all())
    return full


def with_stats(a: Array) -> Array:
    """The same array with stats attached to it (and to each field of a struct)."""
    if isinstance(a.dtype, dt.Struct) and a.encoding == "vortex.struct":
        nf = len(a.dtype.dtypes)
        fields = a.children[-nf:] if nf else ()
        for f in fields:
            _attach(f)
        return a
    _attach(a)
    return a


def _attach(a: Array) -> None:
    st = compute_stats(a)
    if st is None:
        return
    if a._stats:
        # keep what is already known, fill in the rest
        for k, v in st.__dict__.items():
            if getattr(a._stats, k) in (None, False):
                setattr(a._stats, k, v)
    else:
        a._stats = st
