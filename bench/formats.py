"""The codecs under test, shared by the groups: encode a pyarrow Table to bytes in memory
and decode those bytes back to a Table, for vortex_io, vortex-data, Arrow IPC and Parquet.
Every stream is cut in 64Ki-row messages / record batches (``CHUNK_ROWS``)."""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

import vortex_io as vio

#: rows per message / record batch in every stream (the protocol's 64Ki-row chunks)
CHUNK_ROWS = 65_536


def vio_encode(table: pa.Table, *, compress: bool) -> bytes:
    """vortex_io: ``write_ipc`` into memory, 64Ki-row messages."""
    buf = io.BytesIO()
    vio.write_ipc(buf, table, compress=compress, chunk_rows=CHUNK_ROWS)
    return buf.getvalue()


def vio_decode(data: bytes, threads: int = 1) -> pa.Table:
    """vortex_io: bytes -> pyarrow Table (one decode thread unless told otherwise, like the
    pinned peers)."""
    return vio.StreamReader(data).read_arrow(threads=threads)


def arrow_encode(table: pa.Table, compression: str | None = None) -> bytes:
    """pyarrow Arrow IPC stream, 64Ki-row record batches, optional buffer compression."""
    buf = io.BytesIO()
    opts = ipc.IpcWriteOptions(compression=compression)
    with ipc.new_stream(buf, table.schema, options=opts) as w:
        w.write_table(table, max_chunksize=CHUNK_ROWS)
    return buf.getvalue()


def arrow_decode(data: bytes) -> pa.Table:
    return ipc.open_stream(data).read_all()


def parquet_encode(table: pa.Table) -> bytes:
    """Parquet, zstd, pyarrow's default row groups (the reference sizes use the default)."""
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def parquet_decode(data: bytes) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(pa.BufferReader(data))


def have_vortex_data() -> bool:
    try:
        import vortex
        import vortex.serde  # noqa: F401
    except ImportError:
        return False
    return True


def vx_encode(table: pa.Table) -> bytes:
    """vortex-data: per 64Ki-row chunk ``vx.compress(vx.array(batch))``, serialized with
    ``vortex.serde.encode_ipc_array_buffers``; the stream is the first DType message then
    every Array message."""
    import vortex as vx
    import vortex.serde as serde

    parts: list[Any] = []
    for i, batch in enumerate(table.to_batches(max_chunksize=CHUNK_ROWS)):
        arr = vx.compress(vx.array(batch.to_struct_array()))
        array_parts, dtype_parts = serde.encode_ipc_array_buffers(arr)
        if i == 0:
            parts.extend(dtype_parts)
        parts.extend(array_parts)
    return b"".join(parts)


def vx_decode_split(dtype_msg: Any, array_msgs: list[Any]) -> pa.Table:
    """vortex-data: each Array message -> ``decode_ipc_array_buffers`` -> Arrow -> Table."""
    import vortex.serde as serde

    batches = [pa.RecordBatch.from_struct_array(
        serde.decode_ipc_array_buffers([m], [dtype_msg]).to_arrow_array()) for m in array_msgs]
    return pa.Table.from_batches(batches)
