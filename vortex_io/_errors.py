"""The error hierarchy: every malformed or unsupported stream raises a ``VortexIPCError``.

Errors name what is wrong and where: ``message_index`` (0 = the DType message) and
``offset`` (the byte offset of the message in the stream, or of the fault when known).

>>> from vortex_io import MalformedStreamError
>>> e = MalformedStreamError("bad thing", message_index=2, offset=120)
>>> str(e)
'bad thing (message 2, byte offset 120)'
>>> isinstance(e, ValueError)
True
"""

from __future__ import annotations

__all__ = [
    "VortexIPCError",
    "MalformedStreamError",
    "TruncatedStreamError",
    "IntegrityError",
    "UnsupportedError",
    "LimitExceededError",
]


class VortexIPCError(ValueError):
    """Base class of every error vortex_io raises for bad or unsupported input.

    It subclasses ``ValueError`` so that code written against "bad value" errors keeps
    working; catch ``VortexIPCError`` to catch everything this library reports.
    """

    def __init__(
        self,
        message: str,
        *,
        message_index: int | None = None,
        offset: int | None = None,
        source: str | None = None,
    ) -> None:
        self.reason = message
        self.message_index = message_index
        self.offset = offset
        self.source = source
        super().__init__(message)

    def __str__(self) -> str:
        where = []
        if self.source is not None:
            where.append(str(self.source))
        if self.message_index is not None:
            where.append(f"message {self.message_index}")
        if self.offset is not None:
            where.append(f"byte offset {self.offset}")
        if where:
            return f"{self.reason} ({', '.join(where)})"
        return self.reason

    def locate(
        self,
        *,
        message_index: int | None = None,
        offset: int | None = None,
        source: str | None = None,
    ) -> VortexIPCError:
        """Fill in location fields that are not yet known; returns ``self``."""
        if self.message_index is None and message_index is not None:
            self.message_index = message_index
        if self.offset is None and offset is not None:
            self.offset = offset
        if self.source is None and source is not None:
            self.source = source
        return self


class MalformedStreamError(VortexIPCError):
    """The input is corrupt or internally inconsistent."""


class TruncatedStreamError(MalformedStreamError):
    """The input ended inside a message. ``offset`` is where the input ended."""


class IntegrityError(MalformedStreamError):
    """A stream written with integrity data fails its checks: a checksum does not match, a
    message lacks its integrity record, or the end marker disagrees with the stream
    (``vortex_io.integrity``); or a reader with ``require_integrity=True`` met a stream
    without integrity data. ``offset`` is where the failing message starts."""


class UnsupportedError(VortexIPCError):
    """A version, encoding, compression or type this library does not handle."""


class LimitExceededError(VortexIPCError):
    """A size read off the wire exceeds the reader's ``ReaderLimits``."""


# shown (tracebacks, reprs) and pickled under the name users import them by
for _cls in (VortexIPCError, MalformedStreamError, TruncatedStreamError, IntegrityError,
             UnsupportedError, LimitExceededError):
    _cls.__module__ = "vortex_io"
del _cls
