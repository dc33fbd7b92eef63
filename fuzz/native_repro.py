#!/usr/bin/env python3
"""Turn an input of the ``fuzz_message`` harness (a finding) back into a Vortex IPC stream:
the DType message of its dtype program and one Array message of its row count, encodings
table and body, so it can be read by both implementations (``tests.native_util``) and kept
as a regression in ``tests/test_native_regressions.py``.

Usage: ``python fuzz/native_repro.py INPUT [OUT.vortex]`` prints what the reader and the
native core make of it (and writes the stream).

>>> import vortex_io as vio, vortex_io._native_glue as ng
>>> d = vio.dtype.Struct(["a"], [vio.dtype.int32(True)], False)
>>> dtype_of_program(ng.dtype_program(d)) == d
True
"""

from __future__ import annotations

import io
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import vortex_io as vio
from vortex_io import dtype as dt

__all__ = ["dtype_of_program", "parse_input", "stream_of_input"]

_KINDS = {1: "null", 2: "bool", 3: "prim", 4: "dec", 5: "utf8", 6: "bin", 7: "struct", 8: "list",
          9: "ext", 10: "fsl"}


class _R:
    def __init__(self, b: bytes) -> None:
        self.b, self.p = b, 0

    def u8(self) -> int:
        self.p += 1
        return self.b[self.p - 1]

    def u32(self) -> int:
        (v,) = struct.unpack_from("<I", self.b, self.p)
        self.p += 4
        return v

    def raw(self) -> bytes:
        n = self.u32()
        self.p += n
        return self.b[self.p - n : self.p]


def _node(r: _R) -> dt.DType:
    kind, nullable = _KINDS[r.u8()], bool(r.u8())
    if kind == "null":
        return dt.Null()
    if kind == "bool":
        return dt.Bool(nullable)
    if kind == "prim":
        return dt.Primitive(dt.PType(r.u8()), nullable)
    if kind == "dec":
        p = r.u8()
        (s,) = struct.unpack("<b", bytes([r.u8()]))
        return dt.Decimal(p, s, nullable)
    if kind == "utf8":
        return dt.Utf8(nullable)
    if kind == "bin":
        return dt.Binary(nullable)
    if kind == "struct":
        n = r.u32()
        names = [r.raw().decode() for _ in range(n)]
        return dt.Struct(names, [_node(r) for _ in range(n)], nullable)
    if kind == "list":
        return dt.List(_node(r), nullable)
    if kind == "fsl":
        size = r.u32()
        return dt.FixedSizeList(_node(r), size, nullable)
    ext_id, meta = r.raw().decode(), r.raw()
    return dt.Extension(ext_id, _node(r), meta)


def dtype_of_program(program: bytes) -> dt.DType:
    """The dtype a dtype program (``_native_glue.dtype_program``) describes."""
    return _node(_R(program))


def parse_input(data: bytes) -> tuple[int, bytes, int, list[str], list[bool], bytes]:
    """(flags, program, rows, encodings, known, body) of a fuzz_message input."""
    p = 0
    flags = data[p]
    (plen,) = struct.unpack_from("<H", data, 1)
    p = 3
    program = data[p : p + plen]
    p += plen
    (rows,) = struct.unpack_from("<Q", data, p)
    p += 8
    ne = data[p]
    p += 1
    encs, known = [], []
    for _ in range(ne):
        ln = data[p]
        p += 1
        encs.append(data[p : p + (ln & 0x7F)].decode("utf-8", "replace"))
        known.append(bool(ln & 0x80))
        p += ln & 0x7F
    return flags, program, rows, encs, known, data[p:]


def stream_of_input(data: bytes) -> bytes:
    """The stream a fuzz_message input stands for."""
    from vortex_io._ipc.schema import MessageType, encode_message_header

    _flags, program, rows, encs, _known, body = parse_input(data)
    d = dtype_of_program(program)
    buf = io.BytesIO()
    with vio.StreamWriter(buf, d):
        pass
    hdr = encode_message_header(MessageType.ARRAY, len(body), row_count=rows, encodings=encs)
    return buf.getvalue() + struct.pack("<I", len(hdr)) + hdr + body


def main() -> None:
    data = open(sys.argv[1], "rb").read()
    flags, program, rows, encs, known, body = parse_input(data)
    print(f"flags={flags} dtype={dtype_of_program(program)!r} rows={rows} encodings={encs} known={known} "
          f"body={len(body)} bytes")
    stream = stream_of_input(data)
    if len(sys.argv) > 2:
        open(sys.argv[2], "wb").write(stream)
    from tests.native_util import outcome

    for native in (False, True):
        for sv in (False, True):
            try:
                print(f"native={native} string_view={sv}:",
                      outcome(stream, native=native, string_view=sv, strict=False))
            except Exception as e:  # a bug on one side: show it
                print(f"native={native} string_view={sv}: raised {e!r}")


if __name__ == "__main__":
    main()
