"""Input that is not a Vortex IPC stream says so (and what it looks like instead), rather
than "message header of 827474256 bytes exceeds the limit"; paths naming pipes and FIFOs
are read as the streams they are."""

from __future__ import annotations

import io
import os
import struct
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vortex_io as vio

TABLE = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})


def parquet_bytes() -> bytes:
    buf = io.BytesIO()
    pq.write_table(TABLE, buf)
    return buf.getvalue()


def arrow_file_bytes() -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, TABLE.schema) as w:
        w.write_table(TABLE)
    return sink.getvalue().to_pybytes()


def arrow_stream_bytes() -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, TABLE.schema) as w:
        w.write_table(TABLE)
    return sink.getvalue().to_pybytes()


class Dribble(io.RawIOBase):
    """A file object that hands out at most 4 bytes per read (a slow pipe)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = min(4, len(self.data) - self.pos if n < 0 else n)
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out


CASES = {
    "parquet": (parquet_bytes, "looks like a Parquet file (it starts with the magic PAR1)"),
    "arrow file": (arrow_file_bytes, "looks like an Arrow IPC file (it starts with the magic ARROW1)"),
    "arrow stream": (arrow_stream_bytes, "looks like an Arrow IPC stream (it starts with the "
                                         "continuation marker 0xFFFFFFFF)"),
    "csv": (lambda: b"a,b\n1,x\n2,y\n", "looks like text"),
    "gzip": (lambda: b"\x1f\x8b\x08\x00" + bytes(40), "looks like gzip-compressed data"),
    "implausible header": (lambda: struct.pack("<I", 0x7A00_0000) + bytes(64),
                           "its first 4 bytes would announce a message header of 2046820352 bytes"),
    "garbage header": (lambda: struct.pack("<I", 16) + b"\xee" * 40,
                       "its first message header does not parse"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("how", ["bytes", "file", "dribble"])
def test_not_a_vortex_ipc_stream(name, how):
    make, text = CASES[name]
    data = make()
    src = {"bytes": data, "file": io.BytesIO(data), "dribble": Dribble(data)}[how]
    with pytest.raises(vio.MalformedStreamError) as ei:
        vio.StreamReader(src)
    e = ei.value
    assert type(e) is vio.MalformedStreamError
    assert "not a Vortex IPC stream" in str(e) and text in str(e), str(e)
    assert e.message_index == 0 and e.offset == 0


def test_the_scan_and_read_table_report_it_with_the_path(tmp_path):
    p = tmp_path / "t.parquet"
    p.write_bytes(parquet_bytes())
    for fn in (lambda: vio.scan(str(p)), lambda: vio.read_table(str(p)), lambda: vio.read_ipc(str(p))):
        with pytest.raises(vio.MalformedStreamError, match="not a Vortex IPC stream: it looks like a "
                                                            "Parquet file") as ei:
            fn()
        assert str(p) in str(ei.value)


def test_real_streams_and_limits_are_unchanged():
    """Small headers, big metadata (within the limit) and the reader's own limit errors read
    as before: only what no Vortex stream can start with is "not a stream"."""
    buf = io.BytesIO()
    vio.write_ipc(buf, TABLE, metadata={"big": "x" * 100_000})
    with vio.StreamReader(buf.getvalue()) as r:
        assert r.metadata["big"] == b"x" * 100_000
    with pytest.raises(vio.LimitExceededError, match="exceeds the limit of 1000"):
        vio.StreamReader(buf.getvalue(), limits=vio.ReaderLimits(max_header_bytes=1000))
    # a stream cut in its first header is truncated, not "not a stream"
    with pytest.raises(vio.TruncatedStreamError):
        vio.StreamReader(buf.getvalue()[:40])


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_fifo_paths_are_read_as_streams(tmp_path):
    buf = io.BytesIO()
    t = pa.table({"x": np.arange(100_000)})
    vio.write_ipc(buf, t, chunk_rows=10_000)
    fifo = tmp_path / "s.vxipc"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(buf.getvalue())

    for read in (lambda: vio.StreamReader(str(fifo)).read_arrow(),
                 lambda: vio.read_table(fifo),
                 lambda: vio.scan(str(fifo)).to_reader().read_all(),
                 lambda: pa.table(vio.read_ipc(str(fifo)).to_arrow().flatten(),
                                  names=["x"])):
        th = threading.Thread(target=feed, daemon=True)
        th.start()
        got = read()
        th.join(10)
        assert got.column("x").to_pylist() == t.column("x").to_pylist()


def test_a_file_object_scan_reads_its_dtype_once():
    """A one-shot source (a file object): asking for the schema first does not lose the
    batches (the reader that read the DType message is the one the scan continues with)."""
    buf = io.BytesIO()
    vio.write_ipc(buf, TABLE)
    s = vio.scan(io.BytesIO(buf.getvalue()))
    assert s.schema.names == ["a", "b"]
    assert s.to_reader().read_all().equals(TABLE)


def test_text_mode_files_are_refused_by_name():
    with pytest.raises(TypeError, match="text file: open it in binary mode"):
        vio.StreamReader(io.StringIO("abc"))
    with pytest.raises(TypeError, match="sink is a text file"):
        vio.write_ipc(io.StringIO(), TABLE)
