"""Zero-copy reads (issue 2, Build item 5 "beyond the anchor").

The writer pads headers and buffers so that a reader holding the stream in aligned memory
(``bytes``, a memory map given as bytes, the aligned blocks a path is read into) builds
canonical arrays as views of that memory: every decoded
buffer, and every buffer of the Arrow arrays made from them, must lie inside the input's
address range. Streams with unpadded, misaligned buffers (as vortex-data writes them)
must still decode correctly; copies are allowed there.
"""

from __future__ import annotations

import io
import os
import sys

import numpy as np
import pyarrow as pa

import vortex_io as vio
from tests.vx_util import vx_decode_to_arrow, vx_stream

N = 1000


def _table(n: int = N, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.25
    return pa.table({
        "i64": pa.array(rng.integers(-(2**62), 2**62, n), pa.int64()),
        "i64n": pa.array(rng.integers(-1000, 1000, n), pa.int64(), mask=nulls),
        "i8": pa.array(rng.integers(-128, 128, n), pa.int8()),
        "u16n": pa.array(rng.integers(0, 2**16, n), pa.uint16(), mask=~nulls),
        "f32": pa.array(rng.normal(size=n).astype(np.float32)),
        "f64n": pa.array(rng.normal(size=n), mask=nulls),
        "s": pa.array([f"s{i}" * (i % 5) for i in range(n)], pa.string()),
        "sn": pa.array([None if m else "x" * (i % 17) for i, m in enumerate(nulls)], pa.string()),
        "b": pa.array(rng.random(n) < 0.5),
        "bn": pa.array(rng.random(n) < 0.5, mask=nulls),
        "dec": pa.array([None if m else i * 37 for i, m in enumerate(nulls)], pa.decimal128(20, 3)),
    })


TABLE = _table()


def _write(table: pa.Table, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, table, compress=False, **kw)
    return buf.getvalue()


def _all_buffers(a: vio.Array):
    """(encoding, numpy buffer) for every buffer of an encoding tree."""
    for b in a.buffers:
        if b.nbytes:
            yield a.encoding, b
    for c in a.children:
        yield from _all_buffers(c)


def _arrow_buffers(arr: pa.Array):
    """Every non-empty buffer of an Arrow array, children and dictionaries included."""
    for b in arr.buffers():
        if b is not None and b.size:
            yield b


def _inside(addr: int, size: int, lo: int, hi: int) -> bool:
    return lo <= addr and addr + size <= hi


def _check_zero_copy(batches, lo: int, hi: int) -> int:
    """Every canonical buffer and every Arrow buffer lies inside [lo, hi); returns how many
    buffers were checked."""
    checked = 0
    for b in batches:
        assert b.array.encoding == "vortex.struct"
        for enc, buf in _all_buffers(b.array):
            assert enc.startswith("vortex.")
            assert _inside(buf.ctypes.data, buf.nbytes, lo, hi), f"{enc} buffer was copied"
            checked += 1
        # the documented accessor of the issue
        x = b.array.field("i64").buffers[0]
        assert _inside(x.ctypes.data, x.nbytes, lo, hi)
        rb = b.to_arrow()
        for name, col in zip(rb.schema.names, rb.columns):
            for ab in _arrow_buffers(col):
                assert _inside(ab.address, ab.size, lo, hi), f"Arrow buffer of {name} was copied"
                checked += 1
    return checked


def test_zero_copy_from_bytes():
    data = _write(TABLE, chunk_rows=300)
    src = np.frombuffer(data, dtype=np.uint8)
    lo, hi = src.ctypes.data, src.ctypes.data + src.nbytes
    with vio.StreamReader(data) as r:
        batches = list(r)
    assert [b.num_rows for b in batches] == [300, 300, 300, 100]
    n = _check_zero_copy(batches, lo, hi)
    assert n > 4 * 20  # values, validity, offsets, bits ... of every column, in every batch
    # and the data is right
    t = pa.Table.from_batches([b.to_arrow() for b in batches])
    assert t.equals(TABLE)


def test_zero_copy_from_bytes_through_read_arrow():
    data = _write(TABLE)
    src = np.frombuffer(data, dtype=np.uint8)
    lo, hi = src.ctypes.data, src.ctypes.data + src.nbytes
    with vio.StreamReader(data) as r:
        t = r.read_arrow()
    assert t.equals(TABLE)
    for col in t.columns:
        for chunk in col.chunks:
            for ab in _arrow_buffers(chunk):
                assert _inside(ab.address, ab.size, lo, hi)


def _mapping_of(path: str) -> list[tuple[int, int]]:
    """Address ranges at which ``path`` is mapped into this process (Linux)."""
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].strip() == real:
                a, b = parts[0].split("-")
                out.append((int(a, 16), int(b, 16)))
    return out


def test_zero_copy_from_a_memory_map_given_as_bytes(tmp_path):
    """A path is read, never mapped; a memory map passed as a bytes-like object is viewed
    in place (the caller then keeps the file unchanged while the arrays are in use)."""
    import mmap

    p = tmp_path / "table.vortex"
    p.write_bytes(_write(TABLE, chunk_rows=400))
    with vio.StreamReader(p) as r:
        batches = list(r)
    if sys.platform.startswith("linux"):
        assert _mapping_of(str(p)) == []  # the reader mapped nothing
    assert pa.Table.from_batches([b.to_arrow() for b in batches]).equals(TABLE)
    with open(p, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mm)
    src = np.frombuffer(view, dtype=np.uint8)
    with vio.StreamReader(view) as r:
        batches = list(r)
    assert _check_zero_copy(batches, src.ctypes.data, src.ctypes.data + src.nbytes) > 0
    assert pa.Table.from_batches([b.to_arrow() for b in batches]).equals(TABLE)
    del batches, src, view


def test_a_path_is_read_into_aligned_blocks_without_copying_again(tmp_path):
    """Buffers of a file read by path are views of the blocks read (aligned as the writer
    planned): each lies in one of the few large allocations, none is copied per buffer."""
    p = tmp_path / "table.vortex"
    p.write_bytes(_write(TABLE, chunk_rows=400))
    with vio.StreamReader(p) as r:
        batches = list(r)
    bases = set()
    for b in batches:
        for _, buf in _all_buffers(b.array):
            base = buf
            while isinstance(base, np.ndarray) and base.base is not None:
                base = base.base
            bases.add(id(base))
    assert 0 < len(bases) <= 3  # the blocks read (the file is < 128 KiB: one or two reads)


_REWRITE = """
import sys, numpy as np, pyarrow as pa, vortex_io as vio
path = sys.argv[1]
t = pa.table({"x": np.arange(200_000), "s": [str(i) for i in range(200_000)]})
vio.write_ipc(path, t, compress=False)
back = vio.read_table(path)                # canonical: the arrays view what was read
vio.write_ipc(path, back.slice(0, 10), compress=False)  # truncates the file, then reads `back`
assert vio.read_table(path).equals(t.slice(0, 10))
assert back.equals(t)                      # still readable: nothing viewed the file itself
vio.write_ipc(path, t, compress=False)
with vio.StreamReader(path) as r:          # a reader open while the file is truncated
    vio.write_ipc(path, t.slice(0, 3), compress=False)
    try:
        sum(b.num_rows for b in r)
    except vio.TruncatedStreamError as e:  # what it read ends inside a message: said so
        print("ok", e.offset)
"""


def test_rewriting_a_file_that_was_read_is_safe(tmp_path):
    """Reading a file and writing its data back to the same path (or truncating it under a
    reader) must not crash the process: a memory-mapped file would (SIGBUS)."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _REWRITE, str(tmp_path / "f.vxipc")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.startswith("ok ")


def test_buffers_are_aligned_relative_to_the_stream_start():
    """What makes zero-copy possible: each buffer's stream offset is a multiple of the
    alignment it declares (up to the 64-byte stream alignment)."""
    t = pa.table({
        "i8": pa.array([1, 2, 3], pa.int8()),
        "s": pa.array(["a", "bb", "ccc"]),
        "i16": pa.array([1, 2, 3], pa.int16()),
        "v": pa.array(["x" * 20, "y", None], pa.string_view()),
        "f64": pa.array([1.0, 2.0, None]),
        "d": pa.array([1, 2, 3], pa.decimal256(60, 0)),
    })
    data = _write(t)
    dec = vio.MessageDecoder()
    dec.feed(data)
    msgs = list(dec)
    start = np.frombuffer(data, dtype=np.uint8).ctypes.data
    _, arr_msg = msgs
    a = arr_msg.array(msgs[0].dtype())

    def walk(node):
        for b, exp in zip(node.buffers, node.vtable.buffer_alignments(node)):
            if b.nbytes:
                off = b.ctypes.data - start
                assert 0 <= off < len(data)
                assert off % min(1 << exp, 64) == 0, (node.encoding, off, exp)
        for c in node.children:
            walk(c)

    walk(a)
    with vio.StreamReader(data) as r:
        assert r.read_arrow().to_pylist() == t.to_pylist()  # string_view reads back as string


def test_vortex_data_reads_the_padded_streams():
    data = _write(TABLE, chunk_rows=500)
    got = vx_decode_to_arrow(data)
    assert [len(g) for g in got] == [500, 500]
    expect = TABLE.to_batches(max_chunksize=500)
    for g, e in zip(got, expect):
        assert g.to_pylist() == pa.StructArray.from_arrays(e.columns, names=e.schema.names).to_pylist()


def test_misaligned_stream_from_vortex_data_decodes():
    """vortex-data packs buffers without padding: they are misaligned, get copied, and
    decode to the same values."""
    small = TABLE.slice(0, 333)
    data = vx_stream(small)
    with vio.StreamReader(data) as r:
        got = r.read_arrow()
    assert got.to_pylist() == small.to_pylist()


def test_misaligned_input_memory_decodes():
    """Our aligned stream placed at an odd address: buffers are copied, values identical."""
    data = _write(TABLE, chunk_rows=250)
    backing = bytearray(len(data) + 1)
    backing[1:] = data
    view = memoryview(backing)[1:]
    src = np.frombuffer(view, dtype=np.uint8)
    lo, hi = src.ctypes.data, src.ctypes.data + src.nbytes
    assert lo % 2 == 1
    with vio.StreamReader(view) as r:
        batches = list(r)
    copied = [enc for b in batches for enc, buf in _all_buffers(b.array)
              if not _inside(buf.ctypes.data, buf.nbytes, lo, hi)]
    assert copied, "multi-byte values at an odd address must have been copied"
    for b in batches:
        for name, width in (("i64", 8), ("u16n", 2), ("f32", 4), ("f64n", 8)):
            assert b.array.field(name).buffers[0].ctypes.data % width == 0
    t = pa.Table.from_batches([b.to_arrow() for b in batches])
    assert t.equals(TABLE)


def test_chunked_feeding_keeps_alignment():
    """A stream arriving in small pieces is reassembled into aligned memory: decoded
    values are right and typed views are aligned for their width."""
    data = _write(TABLE, chunk_rows=500)
    dec = vio.MessageDecoder()
    for i in range(0, len(data), 97):
        dec.feed(data[i : i + 97])
    msgs = list(dec)
    dec.end_of_input()
    d = msgs[0].dtype()
    arrays = [m.array(d) for m in msgs[1:]]
    for a in arrays:
        x = a.field("i64").buffers[0]
        assert x.ctypes.data % 8 == 0
    got = pa.Table.from_batches([pa.RecordBatch.from_struct_array(a.to_arrow()) for a in arrays])
    assert got.equals(TABLE)


def test_read_ahead_of_a_large_file(tmp_path):
    """A path read to the end reads its next block in the background: the same batches as
    from bytes, whether read whole, by message range, stopped early or closed mid-way."""
    t = pa.table({"x": np.arange(3_000_000), "y": np.arange(3_000_000) * 0.5})
    p = tmp_path / "big.vxipc"
    vio.write_ipc(p, t, compress=False, chunk_rows=100_000)  # 48 MB: blocks of 64 KiB, 4 and 64 MiB
    data = p.read_bytes()
    with vio.StreamReader(p) as r:
        assert r.read_arrow().equals(vio.StreamReader(data).read_arrow())
    assert vio.scan(p, columns=["y"]).to_arrow().equals(vio.scan(data, columns=["y"]).to_arrow())
    spans = vio.message_spans(p)
    got = vio.scan(p, messages=range(spans[20].index, spans[25].index)).to_arrow()
    assert got.equals(t.slice(2_000_000, 500_000))
    with vio.StreamReader(p) as r:
        r.read_ahead = True
        first = next(iter(r))  # the next block is being read: close while it is
        assert first.num_rows == 100_000
    assert r._src.file is None or r._src.file.closed
    assert vio.scan(p, limit=5).to_arrow().equals(t.slice(0, 5))
