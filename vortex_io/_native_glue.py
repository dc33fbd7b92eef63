"""The bridge to the native core (``vortex_io._native``, C++): whether it is on, and the
translations between Python objects and what it takes.

The native core decodes and filters whole messages with the GIL released (see
ARCHITECTURE.md, "The native core"). It is on unless the environment variable
``VORTEX_IO_NATIVE`` is ``0`` (or the extension failed to import, which warns once); the
numpy implementation is then used everywhere. Both give the same values and raise the
same error classes: the test suite runs both ways.

>>> import vortex_io, vortex_io._native_glue as ng
>>> ng.dtype_program(vortex_io.dtype.int64(True))
b'\\x03\\x01\\x07'
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import struct
import warnings
from typing import Any

from . import _array
from . import dtype as dt
from ._errors import (
    LimitExceededError,
    MalformedStreamError,
    TruncatedStreamError,
    UnsupportedError,
    VortexIPCError,
)
from ._limits import ReaderLimits

__all__ = ["enabled", "native", "dtype_program", "stream", "error_of", "known_flags",
           "decode_threads"]

_native: Any = None
_reason = ""


def _load() -> Any:
    global _native, _reason
    if os.environ.get("VORTEX_IO_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        _reason = "disabled by VORTEX_IO_NATIVE=0"
        return None
    try:
        from . import _native as mod  # type: ignore[attr-defined]  # compiled, no stubs
    except ImportError as e:  # pragma: no cover - a broken build
        _reason = f"the native extension did not import: {e}"
        warnings.warn(f"vortex_io: {_reason}; using the (slower) numpy implementation",
                      RuntimeWarning, stacklevel=3)
        return None
    return mod


_native = _load()
_off = 0  # use_native(False) depth
_strict = 0  # strict() depth
#: columns the native core handed back to the Python implementation (for tests and benchmarks)
counters = {"python_columns": 0}


def enabled() -> bool:
    """True when the native core is in use."""
    return _native is not None and not _off


@contextlib.contextmanager
def use_native(on: bool) -> Any:
    """Within this block the numpy implementation is used (``on=False``), as with
    ``VORTEX_IO_NATIVE=0``: for tests and benchmarks comparing the two (process-wide)."""
    global _off
    if on:
        yield
        return
    _off += 1
    try:
        yield
    finally:
        _off -= 1


def native() -> Any:
    """The extension module (None when the native core is off)."""
    return _native


def reason() -> str:
    """Why the native core is off ("" when it is on)."""
    return _reason


@contextlib.contextmanager
def strict() -> Any:
    """Within this block a column the native core hands back to Python raises
    ``AssertionError`` (tests use it to prove a path is native end to end)."""
    global _strict
    _strict += 1
    try:
        yield
    finally:
        _strict -= 1


def handed_back(what: str) -> None:
    """Count a column the native core handed back (and refuse it in ``strict()``)."""
    counters["python_columns"] += 1
    if _strict:
        raise AssertionError(f"the native core handed {what} back to Python")


# -- dtypes ------------------------------------------------------------------------------------

_KIND = {dt.Null: 1, dt.Bool: 2, dt.Primitive: 3, dt.Decimal: 4, dt.Utf8: 5, dt.Binary: 6,
         dt.Struct: 7, dt.List: 8, dt.Extension: 9, dt.FixedSizeList: 10}
_U32 = struct.Struct("<I")


def _str(s: str | bytes) -> bytes:
    b = s.encode("utf-8") if isinstance(s, str) else s
    return _U32.pack(len(b)) + b


def _program(d: dt.DType, out: list[bytes]) -> None:
    out.append(bytes([_KIND[type(d)], 1 if d.nullable else 0]))
    if isinstance(d, dt.Primitive):
        out.append(bytes([int(d.ptype)]))
    elif isinstance(d, dt.Decimal):
        out.append(struct.pack("<Bb", d.precision, d.scale))
    elif isinstance(d, dt.Struct):
        out.append(_U32.pack(len(d.names)))
        out.extend(_str(n) for n in d.names)
        for c in d.dtypes:
            _program(c, out)
    elif isinstance(d, dt.List):
        _program(d.element, out)
    elif isinstance(d, dt.FixedSizeList):
        out.append(_U32.pack(d.size))
        _program(d.element, out)
    elif isinstance(d, dt.Extension):
        out.append(_str(d.id))
        out.append(_str(d.metadata))
        _program(d.storage, out)


@functools.lru_cache(maxsize=256)
def dtype_program(d: dt.DType) -> bytes:
    """The serialization of a dtype the native core parses (pre-order: kind, nullable,
    then the kind's fields)."""
    out: list[bytes] = []
    _program(d, out)
    return b"".join(out)


def limits_values(limits: ReaderLimits) -> tuple[int, ...]:
    cap = (1 << 64) - 1
    return tuple(min(int(v), cap) for v in (
        limits.max_header_bytes, limits.max_body_bytes, limits.max_buffers, limits.max_depth,
        limits.max_nodes, limits.max_rows_per_message, limits.max_decoded_bytes))


@functools.lru_cache(maxsize=64)
def stream(d: dt.DType, limits: ReaderLimits) -> Any:
    """The native decoder of a stream of dtype ``d`` read under ``limits``."""
    return _native.Stream(dtype_program(d), list(limits_values(limits)))


atexit.register(stream.cache_clear)  # (native objects freed before the interpreter goes)


# -- messages ------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1024)
def _known(encodings: tuple[str, ...], registry_size: int) -> tuple[bool, ...]:
    return tuple(e in _array._REGISTRY for e in encodings)


def known_flags(encodings: tuple[str, ...]) -> tuple[bool, ...]:
    """Which of a message's encoding IDs Python knows (the native core decodes the rest of
    its tree and hands those subtrees back); an installed plugin of an ID nobody
    registered is loaded first (``vortex_io.get_encoding``)."""
    _array._ensure_builtins()
    flags = _known(encodings, len(_array._REGISTRY))
    if all(flags):
        return flags
    if any([_array.load_plugin(e) for e, known in zip(encodings, flags) if not known]):
        flags = _known(encodings, len(_array._REGISTRY))
    return flags


_KINDS = {1: MalformedStreamError, 2: TruncatedStreamError, 3: UnsupportedError,
          4: LimitExceededError}


def error_of(kind: int, message: str) -> VortexIPCError:
    """The exception a native error result stands for."""
    return _KINDS.get(kind, MalformedStreamError)(message)


_CORES: int | None = None


def decode_threads(threads: int | None) -> int:
    """Threads the native core decodes on: ``threads``, or every core when None (asked of
    the system once: every read asks)."""
    global _CORES
    if threads is None:
        if _CORES is None:
            _CORES = max(1, _native.hardware_threads()) if _native is not None else 1
        return _CORES
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer or None, not {threads!r}")
    return threads
