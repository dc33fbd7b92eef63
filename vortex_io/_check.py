"""Argument checks for the public API: a wrong type is a ``TypeError`` naming the function,
the parameter and what it accepts, raised before any work (not an ``AttributeError`` from
deep inside).

>>> check_int("scan", "limit", "10", minimum=0, optional=True)
Traceback (most recent call last):
...
TypeError: scan(): limit must be an int >= 0 or None, not str ('10')
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["describe", "check_int", "check_names", "check_type", "check_source",
           "check_metadata"]


def describe(value: Any) -> str:
    """A short description of ``value`` for an error message: its type, and a short repr."""
    r = repr(value)
    if len(r) > 40:
        r = r[:37] + "..."
    return f"{type(value).__name__} ({r})"


def check_type(func: str, name: str, value: Any, types: Any, accepts: str) -> None:
    """Raise ``TypeError`` unless ``isinstance(value, types)``."""
    if not isinstance(value, types):
        raise TypeError(f"{func}(): {name} must be {accepts}, not {describe(value)}")


def check_int(func: str, name: str, value: Any, *, minimum: int | None = None,
              optional: bool = False) -> None:
    """Raise ``TypeError`` unless ``value`` is an int (None too when ``optional``), and
    ``ValueError`` when it is below ``minimum``."""
    if value is None and optional:
        return
    bound = f" >= {minimum}" if minimum is not None else ""
    what = f"an int{bound}" + (" or None" if optional else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{func}(): {name} must be {what}, not {describe(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{func}(): {name} must be{bound}, not {value}")


def check_names(func: str, name: str, value: Any, *, optional: bool = True) -> list[str] | None:
    """A list of column names from a sequence of str (None passes when ``optional``)."""
    if value is None and optional:
        return None
    what = "a list of column names (str)" + (" or None" if optional else "")
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__") or isinstance(value, Mapping):
        raise TypeError(f"{func}(): {name} must be {what}, not {describe(value)}")
    out = list(value)
    for v in out:
        if not isinstance(v, str):
            raise TypeError(f"{func}(): {name} must be {what}; it holds {describe(v)}")
    return out


def check_source(func: str, name: str, value: Any) -> None:
    """Raise ``TypeError`` unless ``value`` can be read as a stream: a path, a bytes-like
    object, a binary file object or a socket."""
    import socket

    if isinstance(value, (str, os.PathLike, bytes, bytearray, memoryview, socket.socket)):
        return
    if hasattr(value, "read") or hasattr(value, "__buffer__"):
        return
    try:
        memoryview(value)
        return
    except TypeError:
        pass
    raise TypeError(f"{func}(): {name} must be a path, a bytes-like object, a binary file "
                    f"object or a socket, not {describe(value)}")


def check_metadata(func: str, name: str, value: Any) -> Any:
    """``value`` as a ``vortex_io.Metadata``; ``TypeError`` naming the parameter unless it
    is custom metadata: None, a mapping or a sequence of (key, value) pairs of str or bytes,
    a ``vortex_io.Metadata``, or Arrow ``KeyValueMetadata``."""
    from ._metadata import Metadata

    accepts = ("None, a mapping or a list of (key, value) pairs of str or bytes, or a "
               "vortex_io.Metadata")
    if isinstance(value, (str, bytes, bytearray)) or (
            value is not None and not hasattr(value, "__iter__") and not hasattr(value, "key")):
        raise TypeError(f"{func}(): {name} must be {accepts}, not {describe(value)}")
    try:
        return Metadata.coerce(value)
    except TypeError as e:
        raise TypeError(f"{func}(): {name} must be {accepts} ({e})") from None
