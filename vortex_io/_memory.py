"""Output buffers for decoders, from pyarrow's memory pool.

Decoded columns end up in Arrow arrays, so their buffers may as well come from Arrow's
allocator: it keeps freed pages for reuse (jemalloc/mimalloc), where glibc's ``malloc``
hands large blocks back to the kernel and every new one page-faults on first touch (on the
machines measured here about 3.5 us per 4 KiB page: a 1M-row int64 column costs ~7 ms of
faults before a byte is decoded, more than most decoders take). A service decoding batch
after batch reuses the same pages instead.

Small arrays stay with numpy's allocator (its small-block cache is cheaper than a pool
call). (This is the numpy reference path's allocator; the native core has its own pool.)

>>> a = empty(100_000, "i8")
>>> a.dtype, a.shape, a.flags.writeable
(dtype('int64'), (100000,), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["empty", "take", "POOL_MIN_BYTES"]

#: arrays of at least this many bytes come from pyarrow's default memory pool
POOL_MIN_BYTES = 1 << 16

_allocate: Any = None


def empty(n: int, dtype: Any) -> np.ndarray:
    """An uninitialized writable 1-D array of ``n`` values (64-byte aligned when large)."""
    global _allocate
    dt = np.dtype(dtype)
    nbytes = n * dt.itemsize
    if nbytes < POOL_MIN_BYTES:
        return np.empty(n, dtype=dt)
    if _allocate is None:
        import pyarrow as pa

        _allocate = pa.allocate_buffer
    return np.frombuffer(_allocate(nbytes), dtype=dt)


def take(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``values[indices]`` (1-D, indices already in range) into a fresh ``empty`` array."""
    out = empty(len(indices), values.dtype)
    if indices.dtype != np.intp:
        indices = indices.astype(np.intp)
    return np.take(values, indices, out=out, mode="clip")
