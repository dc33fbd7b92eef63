"""The public API of issue 2 (Build item 7): ``vortex_io.array``, ``Array``, the stream
reader and writer, ``read_ipc`` / ``write_ipc`` and the Arrow PyCapsule interfaces."""

from __future__ import annotations

import io
import os
import pathlib

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io import dtype as dt


class CStream:
    """Only the Arrow C stream interface (as Polars DataFrames and others export it)."""

    def __init__(self, obj) -> None:
        self._obj = obj

    def __arrow_c_stream__(self, requested_schema=None):
        return self._obj.__arrow_c_stream__(requested_schema)


class CArray:
    """Only the Arrow C array interface."""

    def __init__(self, arr: pa.Array) -> None:
        self._arr = arr

    def __arrow_c_array__(self, requested_schema=None):
        return self._arr.__arrow_c_array__(requested_schema)


TABLE = pa.table({
    "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
    "name": pa.array(["a", None, "ccc", "", "eeeee"]),
    "score": pa.array([1.5, None, -2.0, 0.0, 1e300]),
    "ok": pa.array([True, False, None, True, False]),
})


def _roundtrip_table(data, **kw) -> pa.Table:
    buf = io.BytesIO()
    vio.write_ipc(buf, data, compress=False, **kw)
    with vio.StreamReader(buf.getvalue()) as r:
        return r.read_arrow()


# -- vortex_io.array ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj, expect_dtype, expect_values",
    [
        ([1, 2, None], dt.int64(True), [1, 2, None]),
        ([1.5, 2.5], dt.float64(True), [1.5, 2.5]),
        (["x", None], dt.Utf8(True), ["x", None]),
        ([True, False], dt.Bool(True), [True, False]),
        ([b"\x00", b""], dt.Binary(True), [b"\x00", b""]),
        ([[1], [], None], dt.List(dt.int64(True), True), [[1], [], None]),
        ([{"a": 1}], dt.Struct(["a"], [dt.int64(True)], True), [{"a": 1}]),
        ([], dt.Null(), []),
    ],
)
def test_array_from_python_lists(obj, expect_dtype, expect_values):
    a = vio.array(obj)
    assert isinstance(a, vio.Array)
    assert a.dtype == expect_dtype
    assert len(a) == len(obj)
    assert a.to_arrow().to_pylist() == expect_values
    assert a.to_pylist() == expect_values


@pytest.mark.parametrize("np_dtype, ptype", [
    (np.int8, dt.PType.I8), (np.uint16, dt.PType.U16), (np.int32, dt.PType.I32),
    (np.uint64, dt.PType.U64), (np.float16, dt.PType.F16), (np.float32, dt.PType.F32),
    (np.float64, dt.PType.F64),
])
def test_array_from_numpy(np_dtype, ptype):
    values = (np.arange(10) * 3 % 7).astype(np_dtype)
    a = vio.array(values)
    assert a.encoding == "vortex.primitive"
    assert isinstance(a.dtype, dt.Primitive) and a.dtype.ptype == ptype
    out = a.to_numpy()
    assert out.dtype == np.dtype(np_dtype)
    np.testing.assert_array_equal(out, values)


def test_array_from_numpy_bool_and_dtype_override():
    m = np.array([True, False, True])
    a = vio.array(m)
    assert a.encoding == "vortex.bool" and a.to_numpy().tolist() == [True, False, True]
    b = vio.array([1, 2, 3], dtype=dt.int8())
    assert b.dtype == dt.int8() and b.to_numpy().dtype == np.int8
    c = vio.array([1, 2], dtype=pa.int16())
    assert c.dtype == dt.int16(True)


def test_array_from_pyarrow_kinds():
    a = vio.array(pa.array([1, None], pa.int32()))
    assert a.encoding == "vortex.primitive" and a.dtype == dt.int32(True)
    ca = vio.array(pa.chunked_array([[1, 2], [3]], pa.int64()))
    assert ca.encoding == "vortex.chunked"
    out = ca.to_arrow()
    assert isinstance(out, pa.ChunkedArray) and out.num_chunks == 2
    assert out.to_pylist() == [1, 2, 3]
    rb = vio.array(TABLE.to_batches()[0])
    assert rb.encoding == "vortex.struct"
    assert rb.dtype == dt.Struct(["id", "name", "score", "ok"],
                                 [dt.int64(True), dt.Utf8(True), dt.float64(True), dt.Bool(True)])
    assert isinstance(rb.to_arrow(), pa.StructArray)
    t = vio.array(TABLE)
    assert t.dtype == rb.dtype and not t.dtype.nullable
    assert t.to_arrow().to_pylist() == TABLE.to_pylist()


def test_array_from_capsule_objects():
    s = vio.array(CStream(TABLE))
    assert isinstance(s.dtype, dt.Struct) and s.to_arrow().to_pylist() == TABLE.to_pylist()
    a = vio.array(CArray(pa.array(["p", None, "q"])))
    assert a.dtype == dt.Utf8(True) and a.to_pylist() == ["p", None, "q"]


def test_array_from_polars():
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"a": [1, 2, None], "b": ["x", "y", "z"]})
    a = vio.array(df)
    assert isinstance(a.dtype, dt.Struct) and a.dtype.names == ("a", "b")
    assert a.to_arrow().to_pylist() == df.to_arrow().to_pylist()
    buf = io.BytesIO()
    with vio.StreamWriter(buf, df.to_arrow().schema) as w:
        w.write(df)
    with vio.StreamReader(buf.getvalue()) as r:
        assert r.read_arrow().to_pylist() == df.to_dicts()


# -- Array ----------------------------------------------------------------------------


def test_array_properties_and_children():
    a = vio.array(pa.array(["ab", None, "c"]))
    assert a.encoding == "vortex.varbin" and len(a) == 3 and a.dtype == dt.Utf8(True)
    kids = a.children
    assert isinstance(kids, tuple) and all(isinstance(k, vio.Array) for k in kids)
    assert [k.encoding for k in kids] == ["vortex.primitive", "vortex.bool"]
    assert kids[0].to_pylist() == [0, 2, 2, 3]  # offsets
    assert kids[1].to_pylist() == [True, False, True]  # validity
    assert a.is_canonical and a.canonical() is a
    assert a.nbytes == sum(b.nbytes for b in a.buffers) + sum(k.nbytes for k in kids)


def test_to_numpy_where_it_makes_sense():
    np.testing.assert_array_equal(vio.array(np.arange(4, dtype=np.uint32)).to_numpy(),
                                  np.arange(4, dtype=np.uint32))
    f = vio.array(pa.array([1.0, None])).to_numpy()
    assert f[0] == 1.0 and np.isnan(f[1])
    assert vio.array(["a", None]).to_numpy().tolist() == ["a", None]
    ch = vio.array(pa.chunked_array([[1], [2, 3]])).to_numpy()
    assert ch.tolist() == [1, 2, 3]


def test_arrow_c_array_export():
    a = vio.array(pa.array([1, None, 3], pa.int16()))
    caps = a.__arrow_c_array__()
    assert isinstance(caps, tuple) and len(caps) == 2
    back = pa.array(a)  # pyarrow consumes the capsules
    assert back.type == pa.int16() and back.to_pylist() == [1, None, 3]
    # a chunked array exports as one array
    ch = vio.array(pa.chunked_array([[1], [2]]))
    assert pa.array(ch).to_pylist() == [1, 2]
    st = vio.array(TABLE.to_batches()[0])
    assert pa.array(st).to_pylist() == TABLE.to_pylist()
    # and as a stream
    assert pa.table(vio.array(TABLE)).equals(TABLE)


def test_repr_shows_the_encoding_tree_with_sizes():
    a = vio.array(pa.table({"x": pa.array([1, None], pa.int64()), "s": ["ab", "c"]})
                  .to_batches()[0])
    text = repr(a)
    lines = text.splitlines()
    assert lines[0].startswith("<vortex_io.Array vortex.struct(")
    assert "len=2" in lines[0]
    assert any(line.strip().startswith("x: vortex.primitive(i64?, len=2) 16 B own")
               for line in lines)
    assert any("validity: vortex.bool(bool, len=2)" in line for line in lines)
    assert any(line.strip().startswith("s: vortex.varbin(utf8?, len=2") for line in lines)
    assert any("offsets: vortex.primitive(i32, len=3) 12 B own" in line for line in lines)
    # children are indented under their parent
    x_line = next(line for line in lines if "x: vortex.primitive" in line)
    v_line = next(line for line in lines if "validity: vortex.bool" in line)
    assert len(v_line) - len(v_line.lstrip()) > len(x_line) - len(x_line.lstrip())
    assert "vortex_io.Array" in a._repr_html_()


# -- StreamWriter.write inputs ---------------------------------------------------------


def test_stream_writer_accepts_every_kind_of_data():
    schema = TABLE.schema
    batch = TABLE.to_batches()[0]
    buf = io.BytesIO()
    with vio.StreamWriter(buf, schema, metadata={"s": "1"}) as w:
        inputs = [
            ("vortex", vio.array(batch)),
            ("table", TABLE),
            ("batch", batch),
            ("struct_array", pa.StructArray.from_arrays(batch.columns, fields=list(schema))),
            ("chunked", pa.chunked_array([pa.StructArray.from_arrays(batch.columns,
                                                                     fields=list(schema))] * 2)),
            ("c_stream", CStream(TABLE)),
            ("c_array", CArray(pa.StructArray.from_arrays(batch.columns, fields=list(schema)))),
            ("reader", pa.RecordBatchReader.from_batches(schema, [batch, batch])),
        ]
        counts = [w.write(data, metadata={"kind": kind}) for kind, data in inputs]
    assert counts == [1, 1, 1, 1, 2, 1, 1, 2]
    assert w.bytes_written == len(buf.getvalue())
    with vio.StreamReader(buf.getvalue()) as r:
        batches = list(r)
    kinds = [b.metadata["kind"].decode() for b in batches]
    assert kinds == ["vortex", "table", "batch", "struct_array", "chunked", "chunked",
                     "c_stream", "c_array", "reader", "reader"]
    for b in batches:
        assert pa.Table.from_batches([b.to_arrow()]).equals(TABLE)


def test_stream_writer_primitive_stream_inputs():
    buf = io.BytesIO()
    with vio.StreamWriter(buf, dt.int32(True)) as w:
        w.write(vio.array(pa.array([1, None], pa.int32())))
        w.write(pa.array([3], pa.int32()))
        w.write(pa.chunked_array([[4], [5, 6]], pa.int32()))
        w.write(np.array([7, 8], dtype=np.int32))
        w.write(pa.array([], pa.int32()), metadata={"end": "1"})
    arr = vio.read_ipc(buf.getvalue())
    assert arr.to_arrow().to_pylist() == [1, None, 3, 4, 5, 6, 7, 8]
    with vio.StreamReader(buf.getvalue()) as r:
        assert [b.num_rows for b in r] == [2, 1, 1, 2, 2, 0]


def test_stream_writer_rejects_wrong_data():
    buf = io.BytesIO()
    w = vio.StreamWriter(buf, dt.int64())
    with pytest.raises(TypeError):
        w.write(vio.array(pa.array(["x"])))
    with pytest.raises(TypeError):
        w.write(object())
    w.close()
    with pytest.raises(ValueError):
        w.write(pa.array([1]))
    w.close()  # closing twice is fine


def test_stream_writer_sinks(tmp_path):
    p = tmp_path / "out.vortex"
    with vio.StreamWriter(p, TABLE.schema) as w:
        w.write(TABLE)
    with vio.StreamWriter(str(tmp_path / "out2.vortex"), vio.dtype.from_arrow(TABLE.schema)) as w:
        w.write(TABLE)
    assert p.read_bytes() == (tmp_path / "out2.vortex").read_bytes()
    assert vio.read_ipc(p).to_arrow().to_pylist() == TABLE.to_pylist()



@pytest.mark.parametrize("compress", [False, True])
def test_writing_leaves_no_reference_cycles(compress):
    """A message's buffers are freed when it is written, not when the cycle collector next
    runs (a cycle per message kept every batch written since the last collection alive: a
    canonical stream of 20M rows grew the process by 190 MB)."""
    import gc
    import types

    pkg = os.path.dirname(vio.__file__)

    def ours(o):
        """Whether a collected object is the writer's (other threads of the process, a
        Ray or Dask worker say, make garbage of their own meanwhile)."""
        if isinstance(o, types.FunctionType):
            return (o.__module__ or "").startswith("vortex_io")
        if isinstance(o, types.FrameType):
            return o.f_code.co_filename.startswith(pkg)
        return type(o).__module__.startswith("vortex_io")

    t = pa.table({"a": np.arange(5000), "s": pa.array(np.array(["x", "yy"])[np.arange(5000) % 2])})
    with vio.StreamWriter(io.BytesIO(), t.schema, compress=compress) as w:
        w.write(t)  # (first-use caches)
        gc.collect()
        gc.disable()
        try:
            for _ in range(5):
                w.write(t)
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            found = [o for o in gc.garbage if ours(o)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        assert found == []


# -- read_ipc / write_ipc / StreamReader ----------------------------------------------


def test_write_ipc_returns_bytes_written_and_read_ipc_returns_an_array(tmp_path):
    buf = io.BytesIO()
    n = vio.write_ipc(buf, TABLE, compress=False, chunk_rows=2)
    assert isinstance(n, int) and n == len(buf.getvalue())
    arr = vio.read_ipc(buf.getvalue())
    assert isinstance(arr, vio.Array)
    assert arr.encoding == "vortex.chunked" and len(arr) == 5
    assert arr.to_arrow().to_pylist() == TABLE.to_pylist()
    p = tmp_path / "t.vortex"
    assert vio.write_ipc(p, TABLE, compress=False) == p.stat().st_size
    one = vio.read_ipc(p)
    assert one.encoding == "vortex.struct"  # a single chunk is not wrapped
    assert one.to_arrow().to_pylist() == TABLE.to_pylist()
    # compress=True also writes a stream that reads back to the same values
    buf2 = io.BytesIO()
    assert vio.write_ipc(buf2, TABLE) == len(buf2.getvalue())
    assert vio.read_ipc(buf2.getvalue()).to_arrow().to_pylist() == TABLE.to_pylist()


@pytest.mark.parametrize("data, expect", [
    ([1, 2, 3], [1, 2, 3]),
    (np.arange(5, dtype=np.float32), [0.0, 1.0, 2.0, 3.0, 4.0]),
    (pa.array(["a", "b"]), ["a", "b"]),
    (pa.chunked_array([[1], [2]]), [1, 2]),
    (TABLE, TABLE.to_pylist()),
    (TABLE.to_batches()[0], TABLE.to_pylist()),
    (CStream(TABLE), TABLE.to_pylist()),
    (CArray(pa.array([1.5])), [1.5]),
    (vio.array(pa.array([True, None])), [True, None]),
])
def test_write_ipc_inputs(data, expect):
    buf = io.BytesIO()
    vio.write_ipc(buf, data, compress=False)
    assert vio.read_ipc(buf.getvalue()).to_arrow().to_pylist() == expect


def test_write_ipc_chunk_rows():
    t = pa.table({"x": np.arange(10)})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=False, chunk_rows=4)
    with vio.StreamReader(buf.getvalue()) as r:
        assert [b.num_rows for b in r] == [4, 4, 2]
    with pytest.raises(ValueError):
        vio.write_ipc(io.BytesIO(), t, chunk_rows=0)
    buf = io.BytesIO()
    vio.write_ipc(buf, t.slice(0, 0), compress=False)
    with vio.StreamReader(buf.getvalue()) as r:
        assert [b.num_rows for b in r] == [0]


def test_stream_reader_sources(tmp_path):
    buf = io.BytesIO()
    vio.write_ipc(buf, TABLE, compress=False, metadata={"m": "1"})
    data = buf.getvalue()
    p = tmp_path / "s.vortex"
    p.write_bytes(data)
    with open(p, "rb") as f:
        sources = [data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8),
                   io.BytesIO(data), str(p), pathlib.Path(p), f]
        for src in sources:
            with vio.StreamReader(src) as r:
                assert r.metadata == {b"m": b"1"}
                assert isinstance(r.dtype, dt.Struct)
                assert r.read_arrow().equals(TABLE), type(src)
    with pytest.raises(TypeError):
        vio.StreamReader(12345)


def test_stream_reader_iteration_api():
    buf = io.BytesIO()
    vio.write_ipc(buf, TABLE, compress=False, chunk_rows=3)
    r = vio.StreamReader(buf.getvalue())
    b0 = r.read_next_batch()
    assert isinstance(b0, vio.Batch) and b0.num_rows == 3 and b0.index == 1
    assert isinstance(b0.array, vio.Array) and "Batch(index=1, rows=3" in repr(b0)
    rest = r.read_all()
    assert len(rest) == 2
    with pytest.raises(StopIteration):
        r.read_next_batch()
    assert list(r) == []
    r.close()
    assert "StreamReader(dtype=" in repr(r)


def test_stream_reader_arrow_c_stream():
    buf = io.BytesIO()
    vio.write_ipc(buf, TABLE, compress=False, chunk_rows=2, metadata={"app": "x"})
    data = buf.getvalue()
    with vio.StreamReader(data) as r:
        rdr = pa.RecordBatchReader.from_stream(r)
        assert rdr.schema.names == TABLE.schema.names
        batches = list(rdr)
    assert [b.num_rows for b in batches] == [2, 2, 1]
    assert pa.Table.from_batches(batches).equals(TABLE)
    with vio.StreamReader(data) as r:
        t = pa.table(r)
    assert t.equals(TABLE) and t.schema.metadata == {b"app": b"x"}
    # a stream of a non-struct dtype does not export record batches
    buf = io.BytesIO()
    vio.write_ipc(buf, pa.array([1, 2]), compress=False)
    with vio.StreamReader(buf.getvalue()) as r, pytest.raises(TypeError):
        r.__arrow_c_stream__()


def test_read_arrow_for_non_struct_streams():
    buf = io.BytesIO()
    vio.write_ipc(buf, pa.array(["a", None, "b"]), compress=False, chunk_rows=2)
    with vio.StreamReader(buf.getvalue()) as r:
        out = r.read_arrow()
    assert isinstance(out, pa.ChunkedArray) and out.num_chunks == 2
    assert out.to_pylist() == ["a", None, "b"]


def test_zero_column_table_keeps_its_row_count_across_messages() -> None:
    # pyarrow's Table.slice of a zero-column table ignores the end: 5 rows became 2+2+2
    t = pa.table({"x": [1, 2, 3, 4, 5]}).select([])
    buf = io.BytesIO()
    vio.write_ipc(buf, t, chunk_rows=2)
    data = buf.getvalue()
    assert [b.num_rows for b in vio.StreamReader(data)] == [2, 2, 1]
    assert vio.StreamReader(data).read_arrow().num_rows == 5
    assert vio.scan(data).to_arrow().num_rows == 5
