"""Integrity: CRC-32C checksums per message and an end marker (the layout, and CRC-32C).

A stream written with ``integrity=True`` detects any corruption and any cut: every message
carries a checksum of its framing and of its body, the checksums are chained from message
to message, and the stream ends with an end marker that counts what came before it. It
stays a plain Vortex IPC stream: the checksums and the marker's counts are values of
``Message.custom_metadata`` (the metadata extension) under reserved ``vortex_io.`` keys,
which readers that do not know them ignore (vortex-data 0.93 reads the end marker as one
more, empty, chunk). The README's "Integrity" section is the specification.

**The record.** Every message's header (the ``Message`` flatbuffer, ``N`` bytes) ends with
the 12-byte value of the key ``vortex_io.crc32c``::

    b"VXI1" | body_crc: u32 LE | header_crc: u32 LE

- ``body_crc`` is the CRC-32C of the message's ``body_size`` body bytes;
- ``header_crc`` is the CRC-32C of the frame's first ``4 + N - 4`` bytes (its length prefix
  and its header up to ``header_crc``, ``body_crc`` included) *continued* from the previous
  message's ``header_crc`` (the first message starts from 0): ``header_crc`` of message
  ``i`` is the CRC-32C of those byte ranges of messages 0..i laid end to end.

A reader checks ``header_crc`` knowing only the length prefix: it reads ``N`` bytes, finds
the record in their last 12 (``b"VXI1"`` first), and compares, before it interprets any
byte of the flatbuffer. The flatbuffer's own structure around the record (the key, the
value's length, the metadata vector, ``body_size``, ``row_count``, the encodings) lies in
the covered range, and so does ``body_crc``; ``header_crc`` is compared, not covered. Only
then is the header parsed (``body_size`` trusted), the body read and ``body_crc`` compared,
before any of the body is decoded. The chain makes dropped, repeated or reordered messages
and splices of two streams fail too.

**The end marker.** The last message is an Array message of zero rows (an empty array of
the stream's dtype) whose metadata has ``vortex_io.end`` = ``messages: u64 LE | rows: u64
LE``: how many messages precede it (the DType message included) and how many rows their
Array messages hold. A stream with integrity data that ends without it was cut.

>>> hex(crc32c(b"123456789"))
'0xe3069283'
>>> crc32c(b"6789", crc32c(b"12345")) == crc32c(b"123456789")
True
>>> crc32c_reference(b"123456789") == crc32c(b"123456789")
True
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _native_glue as ng
from ._metadata import Metadata

__all__ = [
    "crc32c",
    "crc32c_reference",
    "RESERVED_PREFIX",
    "CRC_KEY",
    "END_KEY",
    "RECORD_MAGIC",
    "RECORD_SIZE",
    "user_metadata",
    "check_user_metadata",
]

#: metadata keys under this prefix belong to vortex_io (hidden from users, refused from them)
RESERVED_PREFIX = b"vortex_io."
#: every message's integrity record
CRC_KEY = b"vortex_io.crc32c"
#: the end marker's counts
END_KEY = b"vortex_io.end"
#: the first bytes of the record (the layout's version)
RECORD_MAGIC = b"VXI1"
RECORD_SIZE = 12
#: the record with its checksums not yet filled in
RECORD_PLACEHOLDER = RECORD_MAGIC + bytes(8)

_U32 = struct.Struct("<I")
_RECORD = struct.Struct("<4sII")
_END = struct.Struct("<QQ")

# -- CRC-32C ------------------------------------------------------------------------------------

_POLY = 0x82F63B78  # Castagnoli, reflected


def _byte_table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = (t >> np.uint32(1)) ^ (np.uint32(_POLY) * (t & np.uint32(1)))
    return t


_T0 = _byte_table()
_T0_LIST = [int(x) for x in _T0]
#: the shortest input the lane-parallel reference runs on (shorter ones: a byte loop)
_LANE_MIN = 1 << 10


def _zeros_operator(k: int) -> list[list[int]]:
    """Tables of Z_k, the register map "feed k zero bytes" (linear over GF(2)): Z_k(x) is the
    XOR of ``tables[j][(x >> 8j) & 0xFF]`` for j = 0..3."""
    basis = []
    for j in range(32):
        c = 1 << j
        for _ in range(k):
            c = _T0_LIST[c & 0xFF] ^ (c >> 8)
        basis.append(c)
    tables = []
    for j in range(4):
        row = []
        for b in range(256):
            v = 0
            for bit in range(8):
                if b >> bit & 1:
                    v ^= basis[8 * j + bit]
            row.append(v)
        tables.append(row)
    return tables


_ZEROS: dict[int, list[list[int]]] = {}


def _register_bytes(c: int, data: memoryview) -> int:
    """The CRC register after feeding ``data`` to ``c``, a byte at a time."""
    t = _T0_LIST
    for b in data.tobytes():
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c


def crc32c_reference(data: Any, value: int = 0) -> int:
    """CRC-32C of ``data`` (any bytes-like object) continuing ``value``, in numpy: the
    readable reference of the native kernel, and what runs with ``VORTEX_IO_NATIVE=0``.

    Long inputs are cut into ``K`` lanes of ``L`` bytes fed to ``K`` registers at once (one
    vectorized table step per byte position), then joined in order: feeding lane ``k`` after
    the bytes before it is ``Z_L(register so far) ^ register of lane k alone``. ``L`` is
    about ``sqrt(n / 8)``: the ``L`` numpy steps and the ``K`` joins (Python) cost alike.
    """
    buf = memoryview(data).cast("B")
    n = len(buf)
    c = (~value) & 0xFFFFFFFF
    if n < _LANE_MIN:
        return (~_register_bytes(c, buf)) & 0xFFFFFFFF
    lane = 1 << max(4, (n.bit_length() - 3) // 2)
    k = n // lane
    lanes = np.frombuffer(buf, dtype=np.uint8, count=k * lane).reshape(k, lane).T.copy()
    regs = np.zeros(k, dtype=np.uint32)
    regs[0] = c
    ff = np.uint32(0xFF)
    eight = np.uint32(8)
    idx = np.empty(k, dtype=np.uint32)
    for row in lanes:
        np.bitwise_xor(regs, row, out=idx)
        np.bitwise_and(idx, ff, out=idx)
        regs >>= eight
        regs ^= _T0.take(idx)
    z = _ZEROS.get(lane)
    if z is None:
        z = _ZEROS[lane] = _zeros_operator(lane)
    z0, z1, z2, z3 = z
    c = int(regs[0])
    for r in regs[1:].tolist():
        c = z0[c & 0xFF] ^ z1[(c >> 8) & 0xFF] ^ z2[(c >> 16) & 0xFF] ^ z3[c >> 24] ^ r
    c = _register_bytes(c, buf[k * lane:])
    return (~c) & 0xFFFFFFFF


def crc32c(data: Any, value: int = 0, threads: int = 1) -> int:
    """CRC-32C (Castagnoli) of ``data`` (any contiguous bytes-like object), continuing
    ``value``: ``crc32c(b, crc32c(a)) == crc32c(a + b)``, as ``zlib.crc32``. The native core
    computes it (the SSE4.2 instruction where the CPU has it, with the GIL released for large
    buffers, which from 2 MiB on are cut into pieces for up to ``threads`` threads); with
    ``VORTEX_IO_NATIVE=0``, ``crc32c_reference``."""
    if ng.enabled():
        return ng.native().crc32c(data, value, threads)
    return crc32c_reference(data, value)


#: bodies from this size on are checksummed on the native core's background thread
#: (``crc32c_start``); smaller ones are not worth the hand-over
BACKGROUND_MIN = 64 << 10


def crc32c_start(data: Any) -> Callable[[], int]:
    """Start the CRC-32C of ``data`` (from 0) and return a function giving it: with the
    native core and a large buffer, computed on its background thread meanwhile (``data``
    must not change until then); else when asked."""
    if ng.enabled() and memoryview(data).nbytes >= BACKGROUND_MIN:
        return ng.native().crc32c_start(data).result
    return lambda: crc32c(data)


# -- the layout ---------------------------------------------------------------------------------


def tail_record(header: Any) -> tuple[int, int] | None:
    """(body_crc, header_crc) of the record at the end of a header's bytes, or None when its
    last 12 bytes do not start with the record's magic."""
    n = len(header)
    if n < RECORD_SIZE:
        return None
    magic, body_crc, header_crc = _RECORD.unpack_from(header, n - RECORD_SIZE)
    if magic != RECORD_MAGIC:
        return None
    return body_crc, header_crc


def header_crc(length_prefix: bytes, header: Any, chain: int) -> int:
    """The ``header_crc`` a header must carry: its frame's length prefix and its bytes up
    to the last four, continued from the previous message's ``header_crc``."""
    return crc32c(memoryview(header)[:-4], crc32c(length_prefix, chain))


def end_value(messages: int, rows: int) -> bytes:
    """The value of ``vortex_io.end``."""
    return _END.pack(messages, rows)


def parse_end_value(value: bytes) -> tuple[int, int] | None:
    """(messages, rows) of a ``vortex_io.end`` value, None when it is not 16 bytes."""
    if len(value) != _END.size:
        return None
    return _END.unpack(value)


def has_reserved(md: Metadata) -> bool:
    """True when some key of ``md`` is under the reserved ``vortex_io.`` prefix."""
    return any(k.startswith(RESERVED_PREFIX) for k in md)


def user_metadata(md: Metadata) -> Metadata:
    """``md`` without its reserved ``vortex_io.`` keys (what ``Batch.metadata`` and the
    stream's metadata show)."""
    if not md or not has_reserved(md):
        return md
    return Metadata([(k, v) for k, v in md.items() if not k.startswith(RESERVED_PREFIX)])


def check_user_metadata(md: Metadata) -> None:
    """Refuse metadata that uses the reserved ``vortex_io.`` prefix (``ValueError``)."""
    if md and has_reserved(md):
        bad = next(k for k in md if k.startswith(RESERVED_PREFIX))
        raise ValueError(f"metadata key {bad!r}: keys starting with 'vortex_io.' are reserved")
