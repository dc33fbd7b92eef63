"""Reader limits: bounds on what a stream may make the reader allocate.

Every length read off the wire is checked against these *before* anything is allocated.
The defaults suit a service reading from peers it does not trust: one batch never makes
the reader materialize more than 512 MiB, whatever its headers claim. Raise them (or use
``ReaderLimits.unlimited()``) for trusted bulk data.

Arrays read from a stream carry the limits they were read with (``Array.limits``), so the
checks made while they are decoded lazily (``to_arrow()`` long after reading) use them.

>>> from vortex_io import ReaderLimits
>>> ReaderLimits().max_header_bytes
16777216
>>> ReaderLimits(max_body_bytes=1 << 20).max_body_bytes
1048576
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from . import dtype as _dt

__all__ = ["ReaderLimits", "DEFAULT_LIMITS", "decoded_width"]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class ReaderLimits:
    """Bounds a reader enforces on untrusted input.

    Attributes:
        max_header_bytes: size of one Message flatbuffer (custom metadata included).
        max_body_bytes: size of one message body.
        max_buffers: data buffers in one Array message.
        max_depth: nesting depth of an array's encoding tree (and of a DType).
        max_nodes: nodes in one array's encoding tree.
        max_rows_per_message: rows of one Array message (the format's own cap is 2**32-1).
        max_decoded_bytes: bytes one batch may expand to when it is decoded: checked for
            the whole batch (rows x fixed width of the dtype) and for every node that
            expands (constant, sequence, run-end, dictionary, sparse, FSST/OnPair,
            bit-packing, zstd, string gathers). A constant claiming billions of rows is
            refused, not allocated.
    """

    max_header_bytes: int = 16 * MiB
    max_body_bytes: int = 512 * MiB
    max_buffers: int = 65_536
    max_depth: int = 64
    max_nodes: int = 100_000
    max_rows_per_message: int = 2**32 - 1
    max_decoded_bytes: int = 512 * MiB

    @classmethod
    def unlimited(cls) -> ReaderLimits:
        """The format's own bounds only, for trusted input."""
        return cls(
            max_header_bytes=2**32 - 1,
            max_body_bytes=2**63,
            max_buffers=65_536,
            max_depth=1_000,
            max_nodes=2**31,
            max_rows_per_message=2**32 - 1,
            max_decoded_bytes=2**63,
        )


DEFAULT_LIMITS = ReaderLimits()


@functools.lru_cache(maxsize=1024)
def decoded_width(d: _dt.DType) -> int:
    """Rough decoded bytes per row, for the expansion limit (dtypes are immutable: cached,
    it runs for every message)."""
    if isinstance(d, _dt.Extension):
        return decoded_width(d.storage)
    if isinstance(d, _dt.Primitive):
        return d.ptype.byte_width
    if isinstance(d, _dt.Decimal):
        return 16
    if isinstance(d, _dt.Struct):
        return sum(decoded_width(x) for x in d.dtypes) + 1
    if isinstance(d, _dt.FixedSizeList):
        return d.size * decoded_width(d.element) + 1
    if isinstance(d, (_dt.Utf8, _dt.Binary, _dt.List)):
        return 4
    return 1
