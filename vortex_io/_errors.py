"""The error hierarchy: every malformed or unsupported stream raises a ``VortexIPCError``.

Errors name what is wrong and where: ``message_index`` (0 = the DType message) and
``offset`` (the byte offset of the message in the stream, or of the fault when known).

>>> from vortex_io import MalformedStreamError
>>> e = MalformedStreamError("bad thing", message_index=2, offset=120)
>>> str(e)
'bad thing (message 2, byte offset 120)'
>>> isinstance(e, ValueError)
True

A column a call names that the data does not have raises ``ColumnNotFoundError``, a
literal a column cannot be compared with ``TypeMismatchError``; each is also the built-in
error code written before them caught (``KeyError``, ``TypeError``):

>>> import io, pyarrow as pa, vortex_io as vio
>>> buf = io.BytesIO()
>>> _ = vio.write_ipc(buf, pa.table({"x": [1], "y": ["a"]}))
>>> data = buf.getvalue()
>>> try:
...     vio.read_table(data, columns=["nope"])
... except KeyError as e:
...     print(e, "|", e.column, e.choices)
no column 'nope'; columns are ['x', 'y'] | nope ['x', 'y']
>>> from vortex_io.expr import col
>>> try:
...     vio.read_table(data, filter=col("y") == 3)
... except TypeError as e:
...     print(e, "|", e.column, e.dtype, e.value)
cannot compare column 'y' (utf8?) with 3 (int) | y utf8? 3
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "VortexIPCError",
    "MalformedStreamError",
    "TruncatedStreamError",
    "IntegrityError",
    "UnsupportedError",
    "LimitExceededError",
    "ColumnNotFoundError",
    "TypeMismatchError",
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


class ColumnNotFoundError(VortexIPCError, KeyError):
    """A column name the data does not have: in ``columns=``, a filter or expression,
    ``read_dictionary=``, an adapter's column list. ``column`` is the name asked for,
    ``choices`` the columns there are. Also a ``KeyError`` (what a missing name raised
    before), but its message is plain text, as every ``VortexIPCError``'s:

    >>> e = ColumnNotFoundError("nope", ["x", "y"])
    >>> str(e), e.column, e.choices
    ("no column 'nope'; columns are ['x', 'y']", 'nope', ['x', 'y'])
    >>> isinstance(e, KeyError) and isinstance(e, LookupError) and isinstance(e, ValueError)
    True
    >>> str(ColumnNotFoundError("k", ["s"], context="read_dictionary"))
    "read_dictionary: no column 'k'; columns are ['s']"
    """

    def __init__(self, column: str, choices: Sequence[str] = (), *, context: str | None = None,
                 source: str | None = None) -> None:
        self.column = column
        self.choices = list(choices)
        self.context = context
        message = f"no column {column!r}; columns are {self.choices}"
        super().__init__(f"{context}: {message}" if context else message, source=source)
        self.args = (column, tuple(self.choices))  # (pickles by its arguments)


class TypeMismatchError(VortexIPCError, TypeError):
    """A literal that cannot be compared with a column of its dtype (``col("name") == 3``
    on a string column). ``column`` is the column's name (None when the comparison was not
    made on a named column), ``dtype`` its dtype, ``value`` the literal, ``detail`` what
    more is known (None, or why a conversion failed). Also a ``TypeError``.

    >>> from vortex_io import dtype
    >>> e = TypeMismatchError("name", dtype.Utf8(), 3)
    >>> str(e)
    "cannot compare column 'name' (utf8) with 3 (int)"
    >>> isinstance(e, TypeError), isinstance(e, VortexIPCError)
    (True, True)
    >>> str(TypeMismatchError(None, dtype.int64(), "x", detail="not a number"))
    "cannot compare i64 with 'x' (str): not a number"
    """

    def __init__(self, column: str | None, dtype: Any, value: Any, *,
                 detail: str | None = None, source: str | None = None) -> None:
        self.column = column
        self.dtype = dtype
        self.value = value
        self.detail = detail
        super().__init__(self._message(), source=source)
        self.args = (column, dtype, value)  # (pickles by its arguments)

    def _message(self) -> str:
        what = f"{self.dtype!r}" if self.column is None else \
            f"column {self.column!r} ({self.dtype!r})"
        literal = "null" if self.value is None else f"{self.value!r} ({type(self.value).__name__})"
        out = f"cannot compare {what} with {literal}"
        return f"{out}: {self.detail}" if self.detail else out

    def name_column(self, column: str) -> TypeMismatchError:
        """Name the column compared, if not named yet; returns ``self`` (the expression
        layer, which knows the name, calls it on what the kernels raise)."""
        if self.column is None:
            self.column = column
            self.args = (column, self.dtype, self.value)
            self.reason = self._message()
        return self


# shown (tracebacks, reprs) and pickled under the name users import them by
for _cls in (VortexIPCError, MalformedStreamError, TruncatedStreamError, IntegrityError,
             UnsupportedError, LimitExceededError, ColumnNotFoundError, TypeMismatchError):
    _cls.__module__ = "vortex_io"
del _cls
