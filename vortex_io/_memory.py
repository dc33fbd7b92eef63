"""Output buffers for decoders, from pyarrow's memory pool.

Decoded columns end up in Arrow arrays, so their buffers may as well come from Arrow's
allocator: it keeps freed pages for reuse (jemalloc/mimalloc), where glibc's ``malloc``
hands large blocks back to the kernel and every new one page-faults on first touch (on the
machines measured here about 3.5 us per 4 KiB page: a 1M-row int64 column costs ~7 ms of
faults before a byte is decoded, more than most decoders take). A service decoding batch
after batch reuses the same pages instead.

Small arrays stay with numpy's allocator (its small-block cache is cheaper than a pool
call). Temporaries that never leave a decoder come from ``scratch`` (per-thread buffers
reused call after call), and ``take`` gathers through a scratch index buffer: numpy's
``take`` with non-``intp`` indices converts them into a fresh array first.

>>> a = empty(100_000, "i8")
>>> a.dtype, a.shape, a.flags.writeable
(dtype('int64'), (100000,), True)
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["empty", "scratch", "take", "POOL_MIN_BYTES", "SCRATCH_MAX_BYTES"]

#: arrays of at least this many bytes come from pyarrow's default memory pool
POOL_MIN_BYTES = 1 << 16

#: per-thread scratch buffers larger than this are not kept
SCRATCH_MAX_BYTES = 16 << 20

_allocate: Any = None
_LOCAL = threading.local()
#: scratch sets of threads that ended, for the next new thread (a query engine may run each
#: query's callbacks on fresh threads: fresh buffers would page-fault again every query)
_SPARE: list[dict[str, np.ndarray]] = []
_SPARE_MAX = 4


class _ScratchSet:
    """One thread's scratch buffers, handed on when the thread ends."""

    __slots__ = ("bufs",)

    def __init__(self) -> None:
        try:
            self.bufs = _SPARE.pop()
        except IndexError:
            self.bufs = {}

    def __del__(self) -> None:  # the thread's locals are dropped: its buffers are free
        spare = _SPARE
        if spare is not None and len(spare) < _SPARE_MAX:
            spare.append(self.bufs)


def _scratch_bufs() -> dict[str, np.ndarray]:
    s = getattr(_LOCAL, "scratch", None)
    if s is None:
        s = _LOCAL.scratch = _ScratchSet()
    return s.bufs


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


def scratch(slot: str, n: int, dtype: Any) -> np.ndarray:
    """A per-thread reusable buffer of ``n`` values for temporaries (its content is
    garbage, and the next ``scratch`` call for the same slot on this thread reuses it)."""
    dt = np.dtype(dtype)
    nbytes = n * dt.itemsize
    bufs = _scratch_bufs()
    buf = bufs.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = np.empty(max(nbytes, 4096), dtype=np.uint8)
        if nbytes <= SCRATCH_MAX_BYTES:
            bufs[slot] = buf
    return buf[:nbytes].view(dt)


def take(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``values[indices]`` (1-D, indices already in range) into a fresh ``empty`` array."""
    out = empty(len(indices), values.dtype)
    if indices.dtype != np.intp:
        idx = scratch("take_index", len(indices), np.intp)
        np.copyto(idx, indices, casting="unsafe")
        indices = idx
    return np.take(values, indices, out=out, mode="clip")
