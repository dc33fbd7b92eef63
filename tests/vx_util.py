"""Helpers for differential tests against vortex-data 0.93 (the reference implementation).

vortex-data exposes single-message IPC only: ``encode_ipc_array_buffers(array)`` returns
the Array message and the DType message; ``decode_ipc_array_buffers`` decodes one pair.
A stream is the DType message followed by the Array messages.
"""

from __future__ import annotations

import io

import pyarrow as pa

import vortex_io as vio
from vortex_io._ipc.framing import MessageDecoder

vx = __import__("vortex")
serde = __import__("vortex.serde", fromlist=["serde"])


def vx_messages(arr, *, compress: bool = False) -> tuple[bytes, bytes]:
    """(dtype message, array message) written by vortex-data for Arrow data ``arr``."""
    a = vx.array(arr)
    if compress:
        a = vx.compress(a)
    array_parts, dtype_parts = serde.encode_ipc_array_buffers(a)
    return b"".join(bytes(x) for x in dtype_parts), b"".join(bytes(x) for x in array_parts)


def vx_stream(chunks, *, compress: bool = False) -> bytes:
    """A stream written by vortex-data: one DType message, one Array message per chunk."""
    if isinstance(chunks, (pa.Array, pa.Table, pa.RecordBatch)):
        chunks = [chunks]
    out = []
    for i, c in enumerate(chunks):
        d, a = vx_messages(c, compress=compress)
        if i == 0:
            out.append(d)
        out.append(a)
    return b"".join(out)


def split_messages(stream: bytes) -> list[bytes]:
    """The raw bytes of each message of a stream (framing included)."""
    dec = MessageDecoder()
    dec.feed(stream)
    msgs = list(dec)
    dec.end_of_input()
    return [bytes(stream[m.offset : m.offset + m.size]) for m in msgs]


def vx_decode_stream(stream: bytes) -> list:
    """Decode every Array message of a stream with vortex-data; returns vortex arrays."""
    parts = split_messages(stream)
    return [serde.decode_ipc_array_buffers([p], [parts[0]]) for p in parts[1:]]


def vx_decode_to_arrow(stream: bytes) -> list:
    """Every Array message decoded by vortex-data, as pyarrow arrays (struct arrays for tables)."""
    return [a.to_arrow_array() for a in vx_decode_stream(stream)]


def our_stream(data, **kw) -> bytes:
    if kw.get("compress", True) is True:  # every batch compressed, however small
        kw["compress"] = vio.CompressOptions(min_batch_bytes=0)
    buf = io.BytesIO()
    vio.write_ipc(buf, data, **kw)
    return buf.getvalue()


def our_array_stream(array: vio.Array, metadata=None) -> bytes:
    """A one-message stream holding ``array`` exactly as built (no re-encoding)."""
    buf = io.BytesIO()
    with vio.StreamWriter(buf, array.dtype) as w:
        w.write_batch(array, metadata=metadata)
    return buf.getvalue()
