"""Stacking: the arrays of many messages as one, so kernels run once over all their rows.

A stream's messages each hold up to 64Ki rows; a scan that runs its kernels message by
message pays the same Python and numpy call overhead for every message (~1.5 ms for a
five-column table here, most of a selective scan's time). Consecutive messages usually
repeat their encodings, so ``stack`` joins them **still encoded**: bit-packed words are
concatenated, frame-of-reference nodes with different references become one
``vortex_io.segmented_for`` node, dictionaries join their (small) values and re-base their
codes the same way, patches are re-positioned. Each encoding opts in with
``Encoding.stack_key`` (arrays with equal keys stack) and ``Encoding.stack``; anything
else, or a change of bit width between messages, starts a new run (``stack_runs``).

Stacked arrays live in memory only: nothing writes them to a stream.

>>> import numpy as np
>>> from vortex_io.encodings.for_ import for_encode
>>> from vortex_io.encodings.primitive import primitive_array
>>> parts = [for_encode(primitive_array(np.array(v, dtype=np.int64)))
...          for v in ([1000, 1003] * 512, [5, 7] * 512)]
>>> s = stack(parts)
>>> s.encoding, len(s), s.to_pylist()[1022:1026]
('vortex_io.segmented_for', 2048, [1000, 1003, 5, 7])
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from .. import _memory
from .. import dtype as dt
from ..array import Array

__all__ = ["concat", "join_masks", "row_starts", "stack", "stack_any", "stack_canonical",
           "stack_equal", "stack_key", "stack_runs", "stack_validity"]


def stack_key(a: Array) -> Hashable | None:
    """The array's stacking key (``Encoding.stack_key``): None if it does not stack."""
    return a.vtable.stack_key(a)


def stack(arrays: Sequence[Array]) -> Array:
    """One array with the rows of ``arrays`` in order; they must have equal, non-None
    ``stack_key``s (one array is returned as is)."""
    if len(arrays) == 1:
        return arrays[0]
    if not arrays:
        raise ValueError("stack() needs at least one array")
    k = stack_key(arrays[0])
    if k is None or any(stack_key(a) != k for a in arrays[1:]):
        raise ValueError("stack() needs arrays of one stack key")
    return stack_equal(arrays)


def stack_equal(arrays: Sequence[Array]) -> Array:
    """``stack`` for arrays whose keys are already known equal (by ``stack_runs``, or in an
    ``Encoding.stack``: a key covers its children's keys), without computing them again."""
    if len(arrays) == 1:
        return arrays[0]
    return _with_limits(arrays[0].vtable.stack(arrays), arrays[0])


def _with_limits(out: Array, like: Array) -> Array:
    """``out`` decodes under the reader limits ``like`` was read with (a group of messages
    stays under the limits each message is checked against, or the scan goes message by
    message)."""
    lim = like._cache.get("limits")
    if lim is not None:
        out._cache.setdefault("limits", lim)
    return out


def stack_runs(arrays: Sequence[Array]) -> list[Array]:
    """``arrays`` as few arrays as stacking allows: each maximal run of consecutive arrays
    with one (non-None) key is stacked; the others stay as they are."""
    out: list[Array] = []
    run: list[Array] = []
    key: Hashable | None = None
    for a in arrays:
        k = stack_key(a)
        if run and (k is None or k != key):
            out.append(stack_equal(run))
            run = []
        if k is None:
            out.append(a)
        else:
            run.append(a)
            key = k
    if run:
        out.append(stack_equal(run))
    return out


def concat(parts: Sequence[np.ndarray]) -> np.ndarray:
    """``np.concatenate`` of 1-D arrays of one dtype into pooled memory (``_memory.empty``:
    a fresh block costs twice the copy in page faults)."""
    out = _memory.empty(sum(len(p) for p in parts), parts[0].dtype)
    return np.concatenate(parts, out=out)


def row_starts(arrays: Sequence[Array]) -> np.ndarray:
    """int64 ``[0, len0, len0 + len1, ...]``: where each array's rows start, then the total."""
    starts = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in arrays], out=starts[1:])
    return starts


def stack_validity(validities: Sequence[Array | None], lengths: Sequence[int]) -> Array | None:
    """The concatenated validity (a bool array) of nodes with optional validity children;
    None when none has one."""
    from ..encodings._common import validity_mask

    if all(v is None for v in validities):
        return None
    return join_masks([validity_mask(v, n) for v, n in zip(validities, lengths)], lengths)


def join_masks(masks: Sequence[np.ndarray | None], lengths: Sequence[int]) -> Array | None:
    """Validity masks (None: all valid) of consecutive parts as one bool array; None when
    every part is all valid."""
    from ..encodings.bool_ import bool_array

    if all(m is None for m in masks):
        return None
    return bool_array(concat([np.ones(n, dtype=np.bool_) if m is None else m
                              for m, n in zip(masks, lengths)]))


def stack_any(arrays: Sequence[Array], dtype: dt.DType) -> Array:
    """The arrays as one: stacked when their keys allow, else ``stack_canonical``."""
    k = stack_key(arrays[0])
    if k is not None and all(stack_key(a) == k for a in arrays[1:]):
        return stack_equal(arrays)
    return stack_canonical(arrays, dtype)


def stack_canonical(arrays: Sequence[Array], dtype: dt.DType) -> Array:
    """The arrays decoded and concatenated into one canonical array of ``dtype`` (for the
    small children that stacking does not keep encoded: dictionary values, delta bases,
    patch values)."""
    import pyarrow as pa

    from ..arrow import from_arrow, string_view_output
    from ..encodings.primitive import primitive_array, primitive_values

    if isinstance(dtype, dt.Primitive):
        vals, masks = [], []
        for a in arrays:
            c = a.canonical()
            if c.encoding != "vortex.primitive" or c.dtype.ptype != dtype.ptype:
                from ..errors import MalformedStreamError

                raise MalformedStreamError(f"{a.encoding} decoded to {c.dtype!r}, not {dtype!r}")
            v, m = primitive_values(c)
            vals.append(v)
            masks.append(m)
        validity = join_masks(masks, [len(v) for v in vals])
        return _with_limits(primitive_array(concat(vals), validity, nullable=dtype.nullable,
                                            ptype=dtype.ptype), arrays[0])
    with string_view_output(False):
        parts = [a.to_arrow() for a in arrays]
    chunks = [c for p in parts for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])]
    joined = pa.concat_arrays(chunks) if chunks else pa.array([], type=dtype.to_arrow())
    return _with_limits(from_arrow(joined, dtype=dtype), arrays[0])
