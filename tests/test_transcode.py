"""The sans-IO transcoders between Arrow IPC and Vortex IPC (``vortex_io.transcode``): Arrow
IPC streams come back as they were written (schema with metadata, batches with their custom
metadata, zero-row and zero-column batches, dictionaries, streams back to back), whatever the
input's split, and a reader that reads ``bytes_needed`` at a time never reads past a
stream's end."""

from __future__ import annotations

import io

import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io._ipc.framing import MessageEncoder
from vortex_io.transcode import ArrowToVortex, VortexToArrow

from .test_arrow_fidelity import TABLE
from .vx_util import split_messages


def _parts(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


def _stream(t: pa.Table, **kw) -> bytes:
    buf = io.BytesIO()
    with vio.StreamWriter(buf, t.schema, **kw) as w:
        for b in t.to_batches(max_chunksize=3):
            w.write(b, metadata={"rows": str(b.num_rows)})
    return buf.getvalue()


# -- the transcoders -----------------------------------------------------------------------


def _arrow_stream(t: pa.Table, batch_metadata=None, chunk: int = 3) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        for i, b in enumerate(t.to_batches(max_chunksize=chunk)
                             or [pa.RecordBatch.from_pylist([], schema=t.schema)]):
            md = batch_metadata(i) if batch_metadata else None
            w.write_batch(b, custom_metadata=md)
    return sink.getvalue().to_pybytes()


def _read_arrow_streams(data: bytes) -> list[tuple[pa.Schema, list[tuple[pa.RecordBatch, object]]]]:
    f = pa.BufferReader(data)
    out = []
    while f.tell() < len(data):
        r = pa.ipc.open_stream(f)
        batches = []
        while True:
            try:
                batches.append(r.read_next_batch_with_custom_metadata())
            except StopIteration:
                break
        out.append((r.schema, batches))
    return out


def _same_streams(got: bytes, want: bytes) -> None:
    g, w = _read_arrow_streams(got), _read_arrow_streams(want)
    assert len(g) == len(w)
    for (gs, gb), (ws, wb) in zip(g, w):
        assert gs.equals(ws, check_metadata=True), (gs, ws)
        assert len(gb) == len(wb)
        for (gbatch, gmd), (wbatch, wmd) in zip(gb, wb):
            assert gbatch.num_rows == wbatch.num_rows
            assert gbatch.to_pylist() == wbatch.to_pylist()
            assert gbatch.schema.equals(wbatch.schema, check_metadata=True)
            assert (list(gmd.items()) if gmd else []) == (list(wmd.items()) if wmd else [])


def _transcode(arrow: bytes, split: int, **kw) -> tuple[bytes, bytes]:
    fwd = ArrowToVortex(**kw)
    vx = b"".join(fwd.send(arrow[i:i + split]) for i in range(0, len(arrow), split))
    fwd.close()
    back = VortexToArrow()
    out = b"".join(back.send(vx[i:i + split]) for i in range(0, len(vx), split))
    out += back.close()
    assert back.at_boundary and fwd.at_boundary
    return vx, out


CASES = {
    "fidelity": TABLE,
    "plain": pa.table({"x": list(range(10)), "s": [f"v{i % 3}" for i in range(10)]},
                      metadata={"vgi_rpc.protocol": "1"}),
    "zero_rows": pa.table({"x": pa.array([], pa.int64())}),
    "zero_columns": pa.table({"x": [1, 2]}).drop_columns(["x"]),
}


@pytest.mark.parametrize("compress", [False, True], ids=["canonical", "compressed"])
@pytest.mark.parametrize("split", [1, 7, 1 << 20])
@pytest.mark.parametrize("name", list(CASES))
def test_arrow_streams_come_back_as_written(name: str, split: int, compress: bool) -> None:
    if split == 1 and name == "fidelity" and compress:
        pytest.skip("(byte by byte: the canonical run covers the split)")
    t = CASES[name]
    mds = lambda i: [("method", "m"), ("trace", "a"), ("trace", str(i))]  # noqa: E731
    arrow = _arrow_stream(t, mds) + _arrow_stream(t.slice(0, 1)) + _arrow_stream(t, mds, chunk=100)
    vx, out = _transcode(arrow, split, compress=compress)
    _same_streams(out, arrow)
    # the Vortex side is three ordinary streams, each with an end marker
    f = io.BytesIO(vx)
    for want in (t, t.slice(0, 1), t):
        with vio.StreamReader(f) as r:
            assert r.read_arrow().num_rows == want.num_rows


def test_metadata_only_zero_row_batches() -> None:
    schema = pa.schema([("x", pa.int64())], metadata={"k": "v"})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array([], pa.int64())], schema=schema),
                      custom_metadata={"vgi_rpc.log": "hello"})
        w.write_batch(pa.record_batch([pa.array([1], pa.int64())], schema=schema))
    arrow = sink.getvalue().to_pybytes()
    vx, out = _transcode(arrow, 5)
    _same_streams(out, arrow)
    assert [dict(b.metadata) for b in vio.StreamReader(vx)] == [{b"vgi_rpc.log": b"hello"}, {}]


def test_dictionary_batches_and_replacements() -> None:
    schema = pa.schema([("d", pa.dictionary(pa.int32(), pa.string()))])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        for words in (["a", "b", "a"], ["z", None, "y"], ["a"]):
            w.write_batch(pa.record_batch([pa.array(words).dictionary_encode()], schema=schema))
    arrow = sink.getvalue().to_pybytes()
    _, out = _transcode(arrow, 3)
    _same_streams(out, arrow)


def test_a_schema_only_stream() -> None:
    schema = pa.schema([("x", pa.int64())])
    sink = pa.BufferOutputStream()
    pa.ipc.new_stream(sink, schema).close()
    arrow = sink.getvalue().to_pybytes()
    _, out = _transcode(arrow, 4)
    _same_streams(out, arrow)


def test_reading_bytes_needed_never_reads_past_a_stream() -> None:
    t = pa.table({"x": [1, 2, 3]})
    arrow1, arrow2 = _arrow_stream(t), _arrow_stream(t.slice(1))
    fwd = ArrowToVortex()
    vx1 = fwd.send(arrow1)
    vx2 = fwd.send(arrow2)
    src = io.BytesIO(vx1 + vx2)
    back = VortexToArrow()
    out = b""
    while back.streams == 0:
        out += back.send(src.read(back.bytes_needed))
    assert src.tell() == len(vx1) and out == out  # stopped exactly at the first stream's end
    _same_streams(out, arrow1)


def test_vortex_streams_without_an_end_marker_end_at_close() -> None:
    t = pa.table({"x": [1, 2, 3]})
    back = VortexToArrow()
    out = back.send(_stream(t)) + back.close()
    assert pa.ipc.open_stream(out).read_all().equals(t)


@pytest.mark.parametrize("bad, error, match", [
    (b"\xff\xff\xff\xff\xff\xff\xff\x7f", vio.MalformedStreamError, "metadata length"),
    (b"\xff\xff\xff\xff\x10\x00\x00\x00" + b"\x00" * 16, vio.MalformedStreamError, "does not parse"),
    (b"\xff\xff\xff\xff\x00\x00\x00\x00", vio.MalformedStreamError, "before the stream's Schema"),
])
def test_malformed_arrow_input(bad: bytes, error: type, match: str) -> None:
    with pytest.raises(error, match=match) as e:
        ArrowToVortex().send(bad)
    assert e.value.message_index == 0 and e.value.offset == 0


def test_arrow_input_errors_name_the_message() -> None:
    t = pa.table({"x": [1, 2, 3]})
    arrow = _arrow_stream(t)
    batch_at = len(t.schema.serialize())
    fwd = ArrowToVortex()
    # a record batch whose body is cut short in the middle of the stream: its declared body
    # then swallows the next stream; the end of the input reports it cut
    fwd.send(arrow[:-12])
    with pytest.raises(vio.TruncatedStreamError, match="inside a message") as e:
        fwd.close()
    assert e.value.message_index == 1 and e.value.offset == batch_at
    # a second Schema message
    with pytest.raises(vio.MalformedStreamError, match="second Schema") as e2:
        ArrowToVortex().send(t.schema.serialize().to_pybytes() * 2)
    assert e2.value.message_index == 1


def test_non_table_vortex_streams_are_unsupported() -> None:
    data = _parts(MessageEncoder().dtype_message(vio.dtype.int64()))
    with pytest.raises(vio.UnsupportedError, match="not a table") as e:
        VortexToArrow().send(data)
    assert e.value.message_index == 0


def test_vortex_input_errors_are_located() -> None:
    t = pa.table({"x": [1, 2, 3]})
    data = _stream(t, end_marker=True)
    msgs = split_messages(data)
    cut = data[:len(msgs[0]) + 10]
    back = VortexToArrow()
    back.send(cut)
    with pytest.raises(vio.TruncatedStreamError) as e:
        back.close()
    assert e.value.message_index == 1


# -- valid Arrow that Vortex cannot carry ---------------------------------------------------

_UNION = pa.table({"u": pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()),
                                                  [pa.array([1, 2]), pa.array(["a", "b"])])})


def test_an_uncarried_stream_is_dropped_and_the_next_one_goes_through() -> None:
    t = pa.table({"x": [1, 2, 3]})
    fwd = ArrowToVortex()
    with pytest.raises(vio.UnsupportedError, match="sparse_union") as e:
        fwd.send(_arrow_stream(_UNION) + _arrow_stream(t))
    assert e.value.message_index == 0 and e.value.offset == 0
    vx = fwd.send(b"")  # what the input given completed: the second stream, whole
    fwd.close()
    assert fwd.at_boundary and fwd.streams == 2
    assert vio.StreamReader(vx).read_arrow().equals(t)


def test_a_batch_that_cannot_be_carried_mid_stream() -> None:
    # a null in a non-nullable field is valid Arrow IPC for pyarrow but not a Vortex batch
    schema = pa.schema([pa.field("x", pa.int64(), nullable=False)])
    good = pa.record_batch([pa.array([1, 2])], schema=schema)
    bad = pa.record_batch([pa.array([1, None])], schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        w.write_batch(good)
        w.write_batch(bad, custom_metadata={"k": "v"})
        w.write_batch(good)
    seen = []

    def replace(error, stream_schema):
        seen.append((type(error).__name__, stream_schema))
        return [(pa.RecordBatch.from_pylist([], schema=stream_schema), {"error": str(error)})]

    fwd = ArrowToVortex(on_unsupported=replace)
    vx = fwd.send(sink.getvalue().to_pybytes())
    fwd.close()
    assert seen == [("UnsupportedError", schema)]
    batches = list(vio.StreamReader(vx))
    # the good batch, the replacement, and nothing of the rest of the stream
    assert [b.num_rows for b in batches] == [2, 0]
    assert b"column 'x': 1 null(s) in a non-nullable field" in dict(batches[1].metadata)[b"error"]
    back = pa.ipc.open_stream(VortexToArrow().send(vx))
    assert back.schema.equals(schema) and back.read_all().num_rows == 2


def test_a_schema_that_cannot_be_carried_is_replaced() -> None:
    calls = []

    def replace(error, stream_schema):
        calls.append(stream_schema)
        return [(pa.RecordBatch.from_pylist([], schema=pa.schema([])), {"error": "union"})]

    fwd = ArrowToVortex(on_unsupported=replace)
    vx = fwd.send(_arrow_stream(_UNION))
    fwd.close()
    assert calls == [None]
    with vio.StreamReader(vx) as r:
        batches = list(r)
    assert [(b.num_rows, dict(b.metadata)) for b in batches] == [(0, {b"error": b"union"})]
