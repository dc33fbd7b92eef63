"""Header parsing: vortex_io's bounds-checked FlatBuffers reader against the access pattern of
``flatc``-generated Python accessors (``flatbuffers.table.Table``), on the same messages.

    .venv/bin/python bench/bench_flatbuffers.py [--rows 1000000]

Both walk every Array message of the compressed trades stream the same way: the Message
header (version, header type, body size, row count, encoding IDs), then the Array
flatbuffer at the end of the body (buffer descriptors, and every ArrayNode's encoding,
metadata bytes, buffer indices and children). The generated-style reader is written here
the way ``flatc --python`` writes accessors (``Table.Offset`` / ``Table.Get`` /
``Table.Vector``), without bounds checks; vortex_io's reader checks every offset.
"""

from __future__ import annotations

import argparse
import io
import struct
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import flatbuffers
from flatbuffers import number_types as N
from flatbuffers.table import Table as FbTable

import vortex_io as vio
from vortex_io._ipc.flatbuf import root
from vortex_io._ipc.framing import MessageDecoder
from vortex_io.datasets import trades

# -- flatc-style accessors ------------------------------------------------------------------------


def _fb_root(buf: bytes) -> FbTable:
    n = flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0)
    return FbTable(buf, n)


def _fb_scalar(t: FbTable, slot: int, flags, default=0):
    o = N.UOffsetTFlags.py_type(t.Offset(4 + 2 * slot))
    return t.Get(flags, o + t.Pos) if o else default


def _fb_table(t: FbTable, slot: int) -> FbTable | None:
    o = N.UOffsetTFlags.py_type(t.Offset(4 + 2 * slot))
    return FbTable(t.Bytes, t.Indirect(o + t.Pos)) if o else None


def _fb_vector_tables(t: FbTable, slot: int) -> list[FbTable]:
    o = N.UOffsetTFlags.py_type(t.Offset(4 + 2 * slot))
    if not o:
        return []
    start = t.Vector(o)
    return [FbTable(t.Bytes, t.Indirect(start + 4 * i)) for i in range(t.VectorLen(o))]


def _fb_bytes(t: FbTable, slot: int) -> bytes:
    o = N.UOffsetTFlags.py_type(t.Offset(4 + 2 * slot))
    if not o:
        return b""
    start = t.Vector(o)
    return bytes(t.Bytes[start : start + t.VectorLen(o)])


def _fb_strings(t: FbTable, slot: int) -> list[str]:
    o = N.UOffsetTFlags.py_type(t.Offset(4 + 2 * slot))
    if not o:
        return []
    start = t.Vector(o)
    return [t.String(start + 4 * i).decode() for i in range(t.VectorLen(o))]


def _fb_u16s(t: FbTable, slot: int) -> list[int]:
    o = N.UOffsetTFlags.py_type(t.Offset(4 + 2 * slot))
    if not o:
        return []
    start = t.Vector(o)
    return [t.Get(N.Uint16Flags, start + 2 * i) for i in range(t.VectorLen(o))]


def walk_generated(header: bytes, array_fb: bytes) -> int:
    m = _fb_root(header)
    nodes = 0
    _fb_scalar(m, 0, N.Uint8Flags)
    _fb_scalar(m, 1, N.Uint8Flags)
    _fb_scalar(m, 3, N.Uint64Flags)
    h = _fb_table(m, 2)
    _fb_scalar(h, 0, N.Uint32Flags)
    _fb_strings(h, 1)
    a = _fb_root(array_fb)
    o = N.UOffsetTFlags.py_type(a.Offset(6))
    if o:
        start = a.Vector(o)
        for i in range(a.VectorLen(o)):
            struct.unpack_from("<HBBI", a.Bytes, start + 8 * i)
    stack = [_fb_table(a, 0)]
    while stack:
        node = stack.pop()
        nodes += 1
        _fb_scalar(node, 0, N.Uint16Flags)
        _fb_bytes(node, 1)
        _fb_u16s(node, 3)
        stack.extend(_fb_vector_tables(node, 2))
    return nodes


def walk_vortex_io(header: bytes, array_fb: bytes) -> int:
    m = root(header, "Message")
    nodes = 0
    m.u8(0)
    m.u8(1)
    m.u64(3)
    h = m.table(2, "ArrayMessage")
    h.u32(0)
    h.strings(1)
    a = root(array_fb, "Array")
    v = a.vector_raw(1, 8)
    if v:
        start, n = v
        for i in range(n):
            struct.unpack_from("<HBBI", a.buf, start + 8 * i)
    stack = [a.table(0, "ArrayNode")]
    while stack:
        node = stack.pop()
        nodes += 1
        node.u16(0)
        node.bytes_(1)
        idx = node.vector_raw(3, 2)
        if idx:
            start, n = idx
            struct.unpack_from(f"<{n}H", node.buf, start)
        stack.extend(node.tables(2, "ArrayNode"))
    return nodes


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    buf = io.BytesIO()
    vio.write_ipc(buf, trades(args.rows))
    data = buf.getvalue()
    dec = MessageDecoder()
    dec.feed(data)
    pairs = []
    for m in dec:
        if m.type.name != "ARRAY":
            continue
        header = data[m.offset + 4 : m.offset + 4 + m.header_size]
        body = m.body.tobytes()
        n = struct.unpack_from("<I", body, len(body) - 4)[0]
        pairs.append((header, body[len(body) - 4 - n : len(body) - 4]))
    counts = {walk_generated(*p) == walk_vortex_io(*p) for p in pairs}
    assert counts == {True}, "the two readers disagree on the node count"
    nodes = sum(walk_vortex_io(*p) for p in pairs)
    results: dict[str, list[float]] = {"flatc-style accessors": [], "vortex_io reader": []}
    fns = {"flatc-style accessors": walk_generated, "vortex_io reader": walk_vortex_io}
    for _ in range(args.rounds + 1):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for p in pairs:
                fn(*p)
            results[name].append(time.perf_counter() - t0)
    print(f"{len(pairs)} Array messages, {nodes} array nodes (trades, {args.rows:,} rows, compressed)")
    base = sorted(results["flatc-style accessors"][1:])[len(results["flatc-style accessors"][1:]) // 2]
    for name, ts in results.items():
        med = sorted(ts[1:])[len(ts[1:]) // 2]
        print(f"  {name:<24} median {med * 1e3:7.2f} ms  ({med / nodes * 1e6:5.1f} us/node)  "
              f"{med / base:.2f}x")


if __name__ == "__main__":
    main()
