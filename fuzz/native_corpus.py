#!/usr/bin/env python3
"""Seed corpora of the native libFuzzer harnesses (``native/fuzz/fuzz_*.cpp``): real Array
messages written in the message harness's input format, and inputs of the kernel harnesses.

Messages come from every seed stream of ``fuzz.corpus`` (the golden streams of
``tests/golden``, written by vortex-data 0.93, and streams vortex_io's encoders write for
every encoding, canonical and compressed), from the trades table (compressed and
canonical) and from a stream vortex-data itself writes now (when it is installed). Each
Array message becomes one input: its stream's dtype program, the header's row count and
encodings table, and the body, with the flags ``read_arrow`` would use (fields of a
non-nullable struct decoded as columns) and, for a second copy of string-bearing messages,
``string_view`` output. A new encoding is covered once a seed stream uses it.

Usage: ``python fuzz/native_corpus.py OUT_DIR`` (``make fuzz-native`` runs it) writes
``OUT_DIR/<harness>/seed-*`` for each harness; inputs libFuzzer added are kept.

>>> data = message_input(b"\\x03\\x00\\x07", 3, ["vortex.primitive"], [True], b"body", flags=0)
>>> data[:6].hex(), data[-4:]
('000300030007', b'body')
"""

from __future__ import annotations

import hashlib
import io
import os
import pathlib
import struct
import sys
from collections.abc import Iterator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import vortex_io as vio
from vortex_io import _native_glue as ng
from vortex_io import dtype as dt
from vortex_io._ipc.schema import decode_message_header_py

__all__ = ["message_input", "message_inputs", "stream_seeds", "write_corpora", "HARNESSES"]

#: flags of the message harness's first input byte
STRING_VIEW, BY_FIELD, TWO_THREADS = 1, 2, 4
MAX_MESSAGES = 6  # per stream
MAX_INPUT = 1 << 16  # the harness runs with -max_len=65536


def message_input(program: bytes, rows: int, encodings: list[str], known: list[bool],
                  body: bytes, *, flags: int) -> bytes:
    """One input of ``fuzz_message`` (the format is described in native/fuzz/fuzz_message.cpp)."""
    out = [bytes([flags]), struct.pack("<H", len(program)), program, struct.pack("<Q", rows),
           bytes([len(encodings)])]
    for e, k in zip(encodings, known):
        b = e.encode()
        if len(b) > 0x7F:
            raise ValueError(f"encoding ID too long: {e!r}")
        out.append(bytes([len(b) | (0x80 if k else 0)]) + b)
    out.append(body)
    return b"".join(out)


def _has_strings(d: dt.DType) -> bool:
    if isinstance(d, (dt.Utf8, dt.Binary)):
        return True
    if isinstance(d, dt.Extension):
        return _has_strings(d.storage)
    kids = getattr(d, "dtypes", None) or [getattr(d, "element", None)]
    return any(k is not None and _has_strings(k) for k in kids)


def message_inputs(stream: bytes, max_messages: int = MAX_MESSAGES) -> Iterator[bytes]:
    """The harness inputs of a stream's first Array messages (what read_arrow hands the
    native core: Stream.decode's message tuples)."""
    from vortex_io._ipc.schema import MessageType

    with vio.StreamReader(stream, limits=vio.ReaderLimits.unlimited()) as r:
        d = r.dtype
        program = ng.dtype_program(d)
        table = isinstance(d, dt.Struct) and not d.nullable and bool(d.names)
        base = BY_FIELD if table else 0
        done = 0
        while done < max_messages:
            m = r._next_message()
            if m is None:
                break
            if m.type != MessageType.ARRAY:
                continue
            encs = list(m.header.encodings)
            known = list(ng.known_flags(tuple(encs)))
            body = bytes(m.body)
            flag_sets = [base | (TWO_THREADS if done % 3 == 2 else 0)]
            if _has_strings(d):
                flag_sets.append(base | STRING_VIEW)
            for f in flag_sets:
                data = message_input(program, m.header.row_count, encs, known, body, flags=f)
                if len(data) <= MAX_INPUT:
                    yield data
            done += 1


def _trades_streams() -> dict[str, bytes]:
    from vortex_io.datasets import trades

    t = trades(6000)
    out = {}
    for name, kw in (("trades", {"chunk_rows": 2048}),
                     ("trades_canonical", {"chunk_rows": 512, "compress": False})):
        buf = io.BytesIO()
        vio.write_ipc(buf, t, **kw)
        out[name] = buf.getvalue()
    return out


def _vortex_data_streams() -> dict[str, bytes]:
    """Streams vortex-data writes now (its compressor on trades), when it is installed."""
    try:
        from tests.vx_util import vx_stream
    except ImportError:  # pragma: no cover - no vortex-data
        return {}
    from vortex_io.datasets import trades

    t = trades(4000)
    return {"vortex_data_trades": vx_stream([t.slice(0, 2000), t.slice(2000)], compress=True),
            "vortex_data_trades_canonical": vx_stream(t.slice(0, 500))}


def stream_seeds() -> dict[str, bytes]:
    """Every stream the message corpus is made from (name -> stream)."""
    from fuzz.corpus import seed_streams

    return {**seed_streams(), **_trades_streams(), **_vortex_data_streams()}


def _fastlanes_inputs() -> Iterator[bytes]:
    """``fuzz_fastlanes``: (type, width, offset, length, ref) headers over packed words."""
    import random

    rng = random.Random(5)
    for t in range(4):
        w = 8 << t
        for b in sorted({0, 1, 3, w // 2, w - 1, w}):
            words = rng.randbytes(128 * b)
            yield bytes([t, b]) + struct.pack("<HHQ", rng.randrange(1024), 1024, rng.getrandbits(64)) + words


def _bitmap_inputs() -> Iterator[bytes]:
    import random

    rng = random.Random(6)
    for n in (0, 1, 7, 64, 65, 200, 1000):
        yield struct.pack("<HB", n, rng.randrange(8)) + rng.randbytes(3 * (n // 8 + 2))


def _scalar_inputs() -> Iterator[bytes]:
    """``fuzz_scalar``: a dtype program, a row count and ScalarValue bytes (statistics and FoR references)."""
    from vortex_io._scalar import Scalar

    cases = [(dt.int64(True), 5), (dt.uint8(False), 200), (dt.float64(True), 2.5),
             (dt.Utf8(True), "hello"), (dt.Binary(False), b"\x00\x01"),
             (dt.Bool(True), True), (dt.Decimal(12, 2, True), 12345),
             (dt.Struct(["a", "b"], [dt.int16(), dt.Utf8(True)], True), [1, "x"]),
             (dt.List(dt.int32(), True), [1, 2, 3]), (dt.int32(True), None)]
    for d, v in cases:
        program = ng.dtype_program(d)
        yield struct.pack("<H", len(program)) + program + bytes([5]) + Scalar(d, v).to_proto()


def _header_inputs() -> Iterator[bytes]:
    """``fuzz_header``: the raw header flatbuffer of every message of the seed streams."""
    seen = set()
    for data in stream_seeds().values():
        pos = 0
        while pos + 4 <= len(data):
            (n,) = struct.unpack_from("<I", data, pos)
            raw = data[pos + 4 : pos + 4 + n]
            if raw not in seen:
                seen.add(raw)
                yield raw
            pos += 4 + n + decode_message_header_py(memoryview(raw)).body_size


#: harness -> its seed inputs
HARNESSES = {
    "fuzz_message": lambda: (x for s in stream_seeds().values() for x in message_inputs(s)),
    # the take harness reads fuzz_message's input format
    "fuzz_take": lambda: (x for s in stream_seeds().values() for x in message_inputs(s)),
    "fuzz_fastlanes": _fastlanes_inputs,
    "fuzz_bitmap": _bitmap_inputs,
    "fuzz_scalar": _scalar_inputs,
    "fuzz_header": _header_inputs,
}


def write_corpora(out: pathlib.Path, harnesses: list[str] | None = None) -> dict[str, int]:
    """Write each harness's seeds into ``out/<harness>/``; returns how many each."""
    counts = {}
    for name in harnesses or list(HARNESSES):
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        n = 0
        for data in HARNESSES[name]():
            (d / ("seed-" + hashlib.sha1(data).hexdigest()[:16])).write_bytes(data)
            n += 1
        counts[name] = n
    return counts


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                       pathlib.Path(__file__).resolve().parent / "native-corpus")
    names = sys.argv[2:] or None
    for name, n in write_corpora(out, names).items():
        print(f"{name}: {n} seeds in {out / name}")


if __name__ == "__main__":
    main()
