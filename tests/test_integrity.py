"""Integrity (issue 17): CRC-32C records per message, the end marker, IntegrityError,
require_integrity, and vortex-data reading such streams unchanged.

The acceptance sweeps are here at a size that runs in seconds: single bit flips at random
positions of several streams (compressed and canonical, with metadata) are all errors and
never different values; a cut at every message boundary (and at every byte of a small
stream) is a ``TruncatedStreamError``. ``INTEGRITY_FLIPS=N`` sets the flips per stream
(``make integrity-sweep`` runs the large sweep and writes its numbers).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io import _native_glue as ng
from vortex_io import integrity as ig
from vortex_io._ipc.framing import MessageDecoder, MessageEncoder
from vortex_io._ipc.schema import MessageType, encode_dtype, encode_message_header
from vortex_io.datasets import trades

from . import strategies as S
from .vx_util import vx_decode_to_arrow

NATIVE = ng.enabled()
FLIPS = int(os.environ.get("INTEGRITY_FLIPS", "2000" if NATIVE else "400"))
REPORT = os.environ.get("INTEGRITY_REPORT")


def _write(data, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, data, **kw)
    return buf.getvalue()


def _messages(stream: bytes):
    dec = MessageDecoder()
    dec.feed(stream)
    out = list(dec)
    dec.end_of_input()
    return out


def _mixed(n: int = 3000, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.2
    return pa.table({
        "i64": pa.array(rng.integers(-(2**40), 2**40, n), pa.int64()),
        "u16n": pa.array(rng.integers(0, 2**16, n), pa.uint16(), mask=nulls),
        "f64n": pa.array(rng.normal(size=n), mask=~nulls),
        "s": pa.array([f"v{i % 37}" * (i % 4) for i in range(n)], pa.string()),
        "b": pa.array(rng.random(n) < 0.3),
        "dec": pa.array([None if m else i * 17 for i, m in enumerate(nulls)], pa.decimal128(18, 2)),
        "l": pa.array([[i, i + 1][: i % 3] for i in range(n)], pa.list_(pa.int32())),
    })


TRADES = trades(20_000)
MIXED = _mixed()


def _batch_metadata_stream(t: pa.Table, integrity: bool = True) -> bytes:
    buf = io.BytesIO()
    with vio.StreamWriter(buf, t.schema, metadata={"method": "quote"}, integrity=integrity) as w:
        for i, b in enumerate(t.to_batches(max_chunksize=500)):
            w.write(b, metadata={"request_id": str(i)})
        w.write(t.slice(0, 0), metadata={"status": "done"})
    return buf.getvalue()


_MD = {"source": "integrity-test", "run": "1"}
#: name -> (table, how it is written)
_SPECS = {
    "trades-compressed": (TRADES, dict(chunk_rows=4096, metadata=_MD)),
    "trades-canonical": (TRADES.slice(0, 6000), dict(chunk_rows=2048, compress=False, metadata=_MD)),
    "mixed-compressed": (MIXED, dict(chunk_rows=1000, metadata=_MD)),
    "mixed-canonical-batch-metadata": (MIXED.slice(0, 1500), None),
}


def _stream(name: str, integrity: bool) -> bytes:
    table, kw = _SPECS[name]
    if kw is None:
        return _batch_metadata_stream(table, integrity)
    return _write(table, integrity=integrity, **kw)


def _streams() -> dict[str, tuple[bytes, pa.Table]]:
    return {name: (_stream(name, True), table) for name, (table, _) in _SPECS.items()}


STREAMS = _streams()


def _read(stream: bytes, limits: vio.ReaderLimits | None = None) -> pa.Table:
    with vio.StreamReader(stream, limits=limits) as r:
        return r.read_arrow()


#: what a damaged stream without integrity data may make the reader decode (the baseline)
_BASELINE_LIMITS = vio.ReaderLimits(max_decoded_bytes=64 << 20)


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_round_trip_every_reader(name):
    stream, table = STREAMS[name]
    assert _read(stream).equals(table)
    with vio.StreamReader(stream) as r:
        assert r.integrity
        batches = list(r)
    # (each batch carries its own metadata on its schema: compare without it)
    rbs = [b.to_arrow() for b in batches]
    got = pa.Table.from_batches([rb.replace_schema_metadata(None) for rb in rbs if rb.num_rows])
    assert got.equals(table.replace_schema_metadata(None))
    assert vio.scan(stream).to_arrow().equals(table)
    assert len(vio.read_ipc(stream)) == table.num_rows


def test_reserved_keys_are_hidden_and_user_metadata_kept():
    stream, _ = STREAMS["mixed-canonical-batch-metadata"]
    with vio.StreamReader(stream) as r:
        assert list(r.metadata.items()) == [(b"method", b"quote")]
        assert r.schema.metadata == {b"method": b"quote"}
        mds = [list(b.metadata.items()) for b in r]
    assert mds == [[(b"request_id", str(i).encode())] for i in range(3)] + [[(b"status", b"done")]]
    # they are on the wire, though: every message has its record, the last one the marker
    msgs = _messages(stream)
    assert all(m.header.custom_metadata.get_all(ig.CRC_KEY) for m in msgs)
    assert [m.end_marker for m in msgs] == [False] * (len(msgs) - 1) + [True]
    end = msgs[-1].header.custom_metadata[ig.END_KEY]
    assert ig.parse_end_value(end) == (len(msgs) - 1, 1500)


def test_hidden_even_without_integrity():
    # a reserved key some other writer put there is not the user's metadata either
    md = vio.Metadata([("app", "1"), ("vortex_io.future", "x")])
    body = encode_dtype(vio.dtype.int64())
    hdr = encode_message_header(MessageType.DTYPE, len(body), metadata=md)
    stream = struct.pack("<I", len(hdr)) + hdr + body
    with vio.StreamReader(stream) as r:
        assert list(r.metadata.items()) == [(b"app", b"1")]
        assert not r.integrity


def test_reserved_keys_are_refused_from_users():
    with pytest.raises(ValueError, match="reserved"):
        vio.StreamWriter(io.BytesIO(), pa.schema([("x", pa.int64())]),
                         metadata={"vortex_io.crc32c": "x"})
    with vio.StreamWriter(io.BytesIO(), pa.schema([("x", pa.int64())]), integrity=True) as w:
        with pytest.raises(ValueError, match="reserved"):
            w.write(pa.table({"x": [1]}), metadata={"vortex_io.end": b"0" * 16})
    with pytest.raises(ValueError, match="reserved"):
        MessageEncoder().array_message(vio.array([1]), metadata={"vortex_io.": ""})


def test_the_record_ends_every_header():
    stream, _ = STREAMS["trades-compressed"]
    chain = 0
    for m in _messages(stream):
        frame = stream[m.offset: m.offset + 4 + m.header_size]
        assert frame[-12:-8] == ig.RECORD_MAGIC
        body_crc, header_crc = struct.unpack("<II", frame[-8:])
        assert body_crc == ig.crc32c(stream[m.offset + 4 + m.header_size: m.offset + m.size])
        chain = ig.crc32c(frame[:-4], chain)
        assert header_crc == chain
        assert m.verified


def test_buffers_stay_aligned_in_the_stream():
    # no header padding with integrity: Buffer.padding aligns each buffer in the stream
    stream, _ = STREAMS["trades-canonical"]
    src = np.frombuffer(stream, dtype=np.uint8)
    lo, hi = src.ctypes.data, src.ctypes.data + src.nbytes
    with vio.StreamReader(stream) as r:
        for b in r:
            for c in b.array.children:
                for buf in c.buffers:
                    assert lo <= buf.ctypes.data and buf.ctypes.data + buf.nbytes <= hi


def test_empty_and_non_table_streams():
    empty = _write(pa.table({"x": pa.array([], pa.int64())}), integrity=True)
    assert _read(empty).num_rows == 0
    arr = pa.array([1.5, None, 2.5] * 100)
    s = _write(arr, chunk_rows=64, integrity=True)
    with vio.StreamReader(s) as r:
        assert r.integrity
        got = r.read_arrow()
    assert got.combine_chunks().equals(arr)
    assert [len(a) for a in vx_decode_to_arrow(s)] == [64] * 4 + [44, 0]


def test_writer_that_fails_leaves_a_truncated_stream():
    buf = io.BytesIO()
    buf.close = lambda: None  # keep the bytes readable after the writer closes it
    with pytest.raises(RuntimeError):
        with vio.StreamWriter(buf, TRADES.schema, integrity=True) as w:
            w.write(TRADES.slice(0, 100))
            raise RuntimeError("the producer died")
    with pytest.raises(vio.TruncatedStreamError, match="without its end marker"):
        _read(buf.getvalue())
    # close() (and a clean with block) writes it
    buf2 = io.BytesIO()
    w = vio.StreamWriter(buf2, TRADES.schema, integrity=True)
    w.write(TRADES.slice(0, 100))
    data_before_close = buf2.getvalue()
    buf2.close = lambda: None
    w.close()
    assert len(buf2.getvalue()) > len(data_before_close)
    assert _read(buf2.getvalue()).equals(TRADES.slice(0, 100))


def test_python_reference_path_verifies_too(reference_path):
    stream, table = STREAMS["mixed-compressed"]
    assert _read(stream).equals(table)
    bad = bytearray(stream)
    bad[len(bad) // 2] ^= 0x10
    with pytest.raises(vio.IntegrityError):
        _read(bytes(bad))


# -- require_integrity ------------------------------------------------------------------------


def test_require_integrity():
    plain = _write(TRADES.slice(0, 10))
    with pytest.raises(vio.IntegrityError, match="require_integrity") as e:
        vio.StreamReader(plain, require_integrity=True)
    assert e.value.message_index == 0 and e.value.offset == 0
    with vio.StreamReader(plain) as r:
        assert not r.integrity and r.read_arrow().num_rows == 10
    stream, table = STREAMS["trades-compressed"]
    with vio.StreamReader(stream, require_integrity=True) as r:
        assert r.read_arrow().equals(table)
    with pytest.raises(vio.IntegrityError):
        vio.read_ipc(plain, require_integrity=True)


# -- cuts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_cut_at_every_message_boundary_is_detected(name):
    stream, _ = STREAMS[name]
    msgs = _messages(stream)
    cuts = [m.offset for m in msgs[1:]]
    assert len(cuts) == len(msgs) - 1 >= 3
    for cut in cuts:
        with pytest.raises(vio.TruncatedStreamError) as e:
            _read(stream[:cut])
        assert e.value.offset == cut
        with pytest.raises(vio.TruncatedStreamError):
            list(vio.scan(stream[:cut]))
        with pytest.raises(vio.TruncatedStreamError):
            with vio.StreamReader(io.BytesIO(stream[:cut])) as r:  # a file: exact reads
                list(r)


def test_a_cut_at_every_byte_is_detected():
    stream = _write(pa.table({"x": [1, 2, None], "s": ["a", None, "ccc"]}), chunk_rows=1,
                    metadata={"k": "v"}, integrity=True)
    assert _read(stream).num_rows == 3
    for cut in range(1, len(stream)):
        with pytest.raises(vio.TruncatedStreamError):
            _read(stream[:cut])


def test_bytes_after_the_end_marker():
    stream, _ = STREAMS["trades-compressed"]
    for extra in (b"\x00", b"\x00" * 4, stream[:500]):
        with pytest.raises(vio.IntegrityError, match="follow the stream's end marker") as e:
            _read(stream + extra)
        assert e.value.offset == len(stream)
    # a file or pipe is not read past the marker (it may carry more: the next stream)
    f = io.BytesIO(stream + b"next stream")
    with vio.StreamReader(f) as r:
        assert r.read_arrow().num_rows == TRADES.num_rows
    assert f.read() == b"next stream"


# -- whole-message edits: the chain -------------------------------------------------------------


def _frames(stream: bytes) -> list[bytes]:
    return [stream[m.offset: m.offset + m.size] for m in _messages(stream)]


def test_dropped_repeated_reordered_and_spliced_messages_fail():
    stream, _ = STREAMS["trades-compressed"]
    f = _frames(stream)
    cases = {
        "dropped": f[:2] + f[3:],
        "repeated": f[:3] + f[2:],
        "swapped": [*f[:1], f[2], f[1], *f[3:]],
        "end marker moved up": f[:3] + f[-1:],
    }
    other = _frames(_write(TRADES.slice(100, 20_000), chunk_rows=4096, integrity=True))
    cases["spliced"] = f[:2] + other[2:]
    for what, frames in cases.items():
        with pytest.raises(vio.IntegrityError) as e:
            _read(b"".join(frames))
        assert e.value.message_index is not None and e.value.offset is not None, what


def test_mixing_integrity_and_plain_messages_fails():
    stream, _ = STREAMS["trades-compressed"]
    f = _frames(stream)
    plain = _frames(_write(TRADES, chunk_rows=4096))
    with pytest.raises(vio.IntegrityError, match="no integrity record"):
        _read(b"".join(f[:2] + plain[2:3] + f[3:]))
    # (an integrity message after plain ones fails its chain: the chain starts at 0)
    with pytest.raises(vio.IntegrityError, match="header checksum mismatch"):
        _read(b"".join(plain[:2] + f[2:]))
    enc = MessageEncoder(integrity=True)
    enc.dtype_message(vio.dtype.int64())
    enc._chain = 0  # as if the stream had started here
    sealed = b"".join(bytes(memoryview(p).cast("B")) for p in enc.array_message(vio.array([1])))
    plain_dtype = b"".join(bytes(p) for p in MessageEncoder().dtype_message(vio.dtype.int64()))
    with pytest.raises(vio.IntegrityError, match="first message has none") as e:
        _read(plain_dtype + sealed)
    assert (e.value.message_index, e.value.offset) == (1, len(plain_dtype))


def test_end_marker_counts_are_checked():
    def stream_with(rows_shift: int, messages_shift: int) -> bytes:
        enc = MessageEncoder(integrity=True)
        parts = enc.dtype_message(vio.dtype.int64())
        parts += enc.array_message(vio.array([1, 2, 3]))
        enc.rows += rows_shift
        enc.messages += messages_shift
        parts += enc.end_marker()
        return b"".join(bytes(memoryview(p).cast("B")) for p in parts)

    assert _read(stream_with(0, 0)).to_pylist() == [1, 2, 3]
    for shift in ((1, 0), (0, 1), (-1, 0)):
        with pytest.raises(vio.IntegrityError, match="the end marker counts") as e:
            _read(stream_with(*shift))
        assert e.value.message_index == 2


def test_encoder_end_marker_needs_integrity_and_a_dtype():
    with pytest.raises(ValueError):
        MessageEncoder().end_marker()
    with pytest.raises(ValueError):
        MessageEncoder(integrity=True).end_marker()


# -- the acceptance sweep: single bit flips ----------------------------------------------------


def _flip_outcomes(stream: bytes, table: pa.Table, flips: int, seed: int,
                   limits: vio.ReaderLimits | None = None) -> dict[str, int]:
    rng = random.Random(seed)
    nbits = len(stream) * 8
    out = {"flips": 0, "integrity": 0, "truncated": 0, "other_error": 0, "same": 0, "different": 0}
    for _ in range(flips):
        pos = rng.randrange(nbits)
        bad = bytearray(stream)
        bad[pos >> 3] ^= 1 << (pos & 7)
        out["flips"] += 1
        try:
            got = _read(bytes(bad), limits)
        except vio.IntegrityError:
            out["integrity"] += 1
            continue
        except vio.TruncatedStreamError:
            out["truncated"] += 1
            continue
        except vio.VortexIPCError:
            out["other_error"] += 1
            continue
        # (a flip may change the dtype: a struct made nullable reads as a ChunkedArray)
        same = isinstance(got, pa.Table) and got.equals(table)
        out["same" if same else "different"] += 1
    return out


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_single_bit_flips_never_change_values(name):
    stream, table = STREAMS[name]
    out = _flip_outcomes(stream, table, FLIPS, seed=sorted(STREAMS).index(name))
    if REPORT:
        # the same flips in the stream written without integrity data, for contrast
        plain = _stream(name, False)
        base = _flip_outcomes(plain, table, FLIPS, seed=sorted(STREAMS).index(name),
                              limits=_BASELINE_LIMITS)
        with open(REPORT, "a") as f:
            f.write(json.dumps({"stream": name, "bytes": len(stream), "native": NATIVE,
                                "integrity": out, "without_integrity": base}) + "\n")
    assert out["different"] == 0, out
    # every byte of an integrity stream is covered by a checksum (or is the record's own
    # magic or checksum): no flip goes unnoticed, not even one that would decode the same
    assert out["same"] == 0, out
    assert out["integrity"] + out["truncated"] + out["other_error"] == FLIPS


def test_flip_errors_name_the_message_and_its_offset():
    stream, _ = STREAMS["mixed-compressed"]
    msgs = _messages(stream)
    for m in msgs:
        for rel in (0, 4, m.header_size, m.header_size + 3, m.size - 1):
            bad = bytearray(stream)
            bad[m.offset + rel] ^= 0x01
            with pytest.raises(vio.VortexIPCError) as e:
                _read(bytes(bad))
            assert e.value.message_index is not None and e.value.offset is not None
            if rel >= 4 and not isinstance(e.value, vio.TruncatedStreamError):
                assert (e.value.message_index, e.value.offset) == (m.index, m.offset), (m.index, rel)


@settings(max_examples=15)
@given(S.tables(max_batches=2, max_size=6), S.metadata_pairs(), st.data())
def test_generated_tables_flips_and_vortex_data(table, md, data):
    stream = _write(table, chunk_rows=3, metadata=md or None, integrity=True, compress=False)
    with vio.StreamReader(stream) as r:
        assert r.integrity
        got = r.read_arrow()
    assert got.num_rows == table.num_rows
    # vortex-data reads every message, the end marker as an empty chunk
    arrs = vx_decode_to_arrow(stream)
    assert len(arrs[-1]) == 0 and sum(len(a) for a in arrs) == table.num_rows
    pos = data.draw(st.integers(0, len(stream) * 8 - 1))
    bad = bytearray(stream)
    bad[pos >> 3] ^= 1 << (pos & 7)
    with pytest.raises(vio.VortexIPCError):
        _read(bytes(bad))


# -- vortex-data reads integrity streams to the same values ------------------------------------


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_vortex_data_decodes_integrity_streams_identically(name):
    stream, table = STREAMS[name]
    arrs = vx_decode_to_arrow(stream)
    assert len(arrs) == len(_messages(stream)) - 1  # every Array message, the end marker too
    assert len(arrs[-1]) == 0
    # message by message what vortex-data reads from the same stream written without
    # integrity data (the same encodings: the compressor is deterministic)
    plain = vx_decode_to_arrow(_stream(name, False))
    assert len(plain) == len(arrs) - 1
    for a, b in zip(arrs, plain):
        assert a.equals(b)
    # and the source's values
    got = pa.Table.from_batches([pa.RecordBatch.from_struct_array(a) for a in arrs if len(a)])
    assert got.cast(table.schema.remove_metadata()).equals(table.replace_schema_metadata(None))


# -- asyncio ------------------------------------------------------------------------------------


def test_async_reader_and_writer():
    async def main():
        received = {}

        async def handle(reader, writer):
            async with vio.AsyncStreamReader(reader, require_integrity=True) as r:
                received["batches"] = [b async for b in r]
                received["integrity"] = r.integrity
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, w = await asyncio.open_connection("127.0.0.1", port)
        async with vio.AsyncStreamWriter(w, TRADES.schema, metadata={"m": "1"},
                                         integrity=True) as aw:
            await aw.write(TRADES.slice(0, 5000))
            await aw.write(TRADES.slice(5000, 5000), metadata={"b": "2"})
        for _ in range(200):
            if "batches" in received:
                break
            await asyncio.sleep(0.01)
        server.close()
        await server.wait_closed()
        return received

    got = asyncio.run(main())
    assert got["integrity"] is True
    assert [b.num_rows for b in got["batches"]] == [5000, 5000]
    assert dict(got["batches"][1].metadata) == {b"b": b"2"}


def test_async_reader_detects_a_cut():
    stream, _ = STREAMS["trades-compressed"]
    cut = _messages(stream)[-1].offset

    async def main():
        r = asyncio.StreamReader()
        r.feed_data(stream[:cut])
        r.feed_eof()
        async with vio.AsyncStreamReader(r) as ar:
            return [b async for b in ar]

    with pytest.raises(vio.TruncatedStreamError, match="end marker"):
        asyncio.run(main())


def test_decoder_fed_byte_by_byte():
    stream, _ = STREAMS["mixed-canonical-batch-metadata"]
    dec = MessageDecoder(require_integrity=True)
    got = []
    for i in range(0, len(stream), 7):
        dec.feed(stream[i: i + 7])
        got.extend(dec)
    dec.end_of_input()
    assert dec.finished and got[-1].end_marker and all(m.verified for m in got)
    assert [m.offset for m in got] == [m.offset for m in _messages(stream)]


# -- deferred body checks: whoever uses a body first checks it ---------------------------------


def _body_flipped(name: str, index: int) -> tuple[bytes, object]:
    stream, _ = STREAMS[name]
    m = _messages(stream)[index]
    bad = bytearray(stream)
    bad[m.offset + 4 + m.header_size + m.header.body_size // 2] ^= 0x04
    return bytes(bad), m


@pytest.mark.parametrize("threads", [1, 2])
def test_every_read_path_checks_bodies_in_order(threads):
    bad, m = _body_flipped("trades-compressed", 3)  # the third batch's body

    def batches_then_error(it):
        got = []
        with pytest.raises(vio.IntegrityError, match="body checksum mismatch") as e:
            for x in it:
                got.append(x)
        assert (e.value.message_index, e.value.offset) == (3, m.offset)
        return got

    with vio.StreamReader(bad) as r:  # iteration: batch by batch
        assert len(batches_then_error(r)) == 2
    with vio.StreamReader(bad) as r:  # read_arrow (windows of messages)
        batches_then_error(r.read_arrow(threads=threads) for _ in [0])
    with vio.StreamReader(bad) as r:  # the Arrow C stream (errors arrive as ArrowInvalid)
        rd = pa.RecordBatchReader.from_stream(r)
        n = 0
        with pytest.raises(pa.ArrowInvalid, match=r"body checksum mismatch.*\(message 3,"):
            for b in rd:
                n += b.num_rows
        assert n == 2 * 4096
    got = batches_then_error(vio.scan(bad, threads=threads))
    assert sum(b.num_rows for b in got) == 2 * 4096
    flt = vio.expr.col("symbol") == "AAPL"
    batches_then_error(vio.scan(bad, filter=flt, threads=threads))
    batches_then_error(vio.scan(bad, offset=3 * 4096 + 5))  # a skipped body is checked too


def test_python_paths_check_bodies(reference_path):
    bad, m = _body_flipped("mixed-compressed", 2)
    with vio.StreamReader(bad) as r:
        with pytest.raises(vio.IntegrityError) as e:
            for b in r:
                b.array.to_arrow()
    assert (e.value.message_index, e.value.offset) == (2, m.offset)
    with pytest.raises(vio.IntegrityError):
        vio.scan(bad).to_arrow()


def test_message_check_body_and_decoder_modes():
    bad, m = _body_flipped("mixed-compressed", 2)
    # the default decoder checks every body before handing the message out
    dec = MessageDecoder()
    dec.feed(bad)
    assert [x.index for x in itertools_take(dec, 2)] == [0, 1]
    with pytest.raises(vio.IntegrityError, match="body checksum"):
        dec.next_message()
    # a deferring one hands it out with the check pending; array() (or check_body) does it
    for background in (False, True):
        dec = MessageDecoder(defer_body_checks=True)
        dec.background_checks = background
        dec.feed(bad)
        msgs = list(dec)
        assert msgs[2].pending_crc is not None and not msgs[2].verified
        msgs[1].check_body()
        assert msgs[1].verified and msgs[1].pending_crc is None
        with pytest.raises(vio.IntegrityError, match="body checksum") as e:
            msgs[2].array(vio.StreamReader(bad).dtype)
        assert (e.value.message_index, e.value.offset) == (2, m.offset)
        assert msgs[0].verified and msgs[-1].verified  # DType and end marker: at once


def itertools_take(it, n):
    out = []
    for _ in range(n):
        out.append(next(iter(it)))
    return out


def test_integrity_error_is_exported_and_malformed():
    assert issubclass(vio.IntegrityError, vio.MalformedStreamError)
    assert "IntegrityError" in vio.__all__ and vio.IntegrityError.__module__ == "vortex_io"
    e = vio.IntegrityError("x", message_index=3, offset=99)
    assert str(e) == "x (message 3, byte offset 99)"


def test_adapters_read_and_verify(tmp_path):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    stream, table = STREAMS["trades-compressed"]
    good, bad = tmp_path / "good.vxipc", tmp_path / "bad.vxipc"
    good.write_bytes(stream)
    flipped = bytearray(stream)
    flipped[len(flipped) // 2] ^= 0x20
    bad.write_bytes(bytes(flipped))
    vio.register_polars()
    assert pl.scan_vortex_ipc(str(good)).select(pl.len()).collect().item() == table.num_rows
    with pytest.raises(Exception, match="checksum mismatch"):
        pl.scan_vortex_ipc(str(bad)).collect()
    con = duckdb.connect()
    vio.register_duckdb(con)
    assert con.execute(f"SELECT count(*) FROM vortex_ipc('{good}')").fetchall() == [(table.num_rows,)]
    with pytest.raises(Exception, match="checksum mismatch"):
        con.execute(f"SELECT sum(size) FROM vortex_ipc('{bad}')").fetchall()
