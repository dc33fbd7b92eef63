"""The native message-header reader (``_native.message_header``) against the Python
reference (``ipc.schema.decode_message_header_py``): the same header or the same error
(class and message) for every header of real streams, with and without metadata, and for
thousands of mutations of them (flipped bytes, cuts, overwritten offsets)."""

from __future__ import annotations

import io
import pathlib
import struct

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io import _native_glue as ng
from vortex_io._errors import VortexIPCError
from vortex_io._ipc.schema import MessageType, decode_message_header, decode_message_header_py

from .native_util import NATIVE

pytestmark = pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _headers(data: bytes) -> list[bytes]:
    """The raw header flatbuffers of a well-formed stream."""
    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        raw = data[pos + 4 : pos + 4 + n]
        out.append(raw)
        body = decode_message_header_py(memoryview(raw)).body_size
        pos += 4 + n + body
    return out


def _streams() -> list[bytes]:
    t = pa.table({"a": pa.array(np.arange(5000, dtype=np.int64)),
                  "s": pa.array([f"v{i % 7}" for i in range(5000)]),
                  "f": pa.array(np.linspace(0, 1, 5000))})
    out = []
    for kw in ({}, {"compress": False}, {"metadata": {"k": "v", "empty": ""}}):
        buf = io.BytesIO()
        vio.write_ipc(buf, t, chunk_rows=1024, **kw)
        out.append(buf.getvalue())
    buf = io.BytesIO()  # per-message metadata (the metadata extension)
    with vio.StreamWriter(buf, t.schema, metadata={"stream": "1"}) as w:
        for i, b in enumerate(t.to_batches(max_chunksize=2000)):
            w.write(b, metadata={"batch": str(i), "x": b"\x00\xff"})
    out.append(buf.getvalue())
    out += [p.read_bytes() for p in sorted(GOLDEN.glob("*/*.vortex"))[:40]]
    return out


def _outcome(fn, raw: bytes) -> tuple:
    try:
        h = fn(memoryview(raw))
    except VortexIPCError as e:
        return ("err", type(e).__name__, str(e))
    return ("ok", h.version, h.type, h.body_size, h.row_count, tuple(h.encodings),
            h.alignment_exponent, tuple(h.custom_metadata.items()))


def _native(raw: memoryview):
    assert ng.enabled()
    return decode_message_header(raw)


HEADERS = [h for s in _streams() for h in _headers(s)]


def test_the_streams_have_every_kind_of_header() -> None:
    kinds = {decode_message_header_py(memoryview(h)).type for h in HEADERS}
    assert kinds >= {MessageType.ARRAY, MessageType.DTYPE}
    assert any(decode_message_header_py(memoryview(h)).custom_metadata for h in HEADERS)
    assert len(HEADERS) > 100


def test_real_headers_read_the_same() -> None:
    for raw in HEADERS:
        want = _outcome(decode_message_header_py, raw)
        assert want[0] == "ok"
        assert _outcome(_native, raw) == want


@pytest.mark.parametrize("seed", range(4))
def test_mutated_headers_read_the_same_or_fail_the_same(seed: int) -> None:
    rng = np.random.default_rng(seed)
    outcomes = {"ok": 0, "err": 0}
    for _ in range(2500):
        raw = bytearray(HEADERS[int(rng.integers(len(HEADERS)))])
        kind = int(rng.integers(4))
        if kind == 0:  # a flipped byte
            raw[int(rng.integers(len(raw)))] ^= int(rng.integers(1, 256))
        elif kind == 1:  # cut
            raw = raw[: int(rng.integers(len(raw) + 1))]
        elif kind == 2 and len(raw) >= 4:  # an offset-sized word overwritten
            p = int(rng.integers(len(raw) - 3))
            raw[p : p + 4] = struct.pack("<I", int(rng.choice([0, 1, 4, 0xFFFF, 0xFFFFFFFF,
                                                               int(rng.integers(1 << 32))])))
        else:  # several bytes
            for _ in range(int(rng.integers(1, 6))):
                raw[int(rng.integers(len(raw)))] = int(rng.integers(256))
        want = _outcome(decode_message_header_py, bytes(raw))
        assert _outcome(_native, bytes(raw)) == want, bytes(raw).hex()
        outcomes[want[0]] += 1
    assert outcomes["ok"] > 100 and outcomes["err"] > 100  # both sides of the checks ran


def test_non_utf8_encoding_id_and_bad_version() -> None:
    raw = next(h for h in HEADERS if decode_message_header_py(memoryview(h)).encodings)
    name = decode_message_header_py(memoryview(raw)).encodings[0].encode()
    bad = bytearray(raw)
    i = bytes(bad).index(name)
    bad[i] = 0xFF  # not UTF-8
    want = _outcome(decode_message_header_py, bytes(bad))
    assert want[:2] == ("err", "MalformedStreamError") and "not UTF-8" in want[2]
    assert _outcome(_native, bytes(bad)) == want
