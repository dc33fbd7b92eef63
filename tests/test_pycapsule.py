"""The Arrow PyCapsule interface of what a user holds: a ``Batch`` (``__arrow_c_schema__``,
``__arrow_c_array__``, ``__arrow_c_stream__``), a ``StreamReader`` and a ``Scan``
(``__arrow_c_schema__``, ``__arrow_c_stream__``). pyarrow, Polars, DuckDB and pandas take
each directly and get what its ``to_arrow()`` / ``read_arrow()`` gives; streams are
exported batch by batch; ``requested_schema`` casts as pyarrow does."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io.expr import col

N, CHUNK = 2000, 300  # 7 messages


def make_table() -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({
        "i": pa.array(rng.integers(-100, 100, N), mask=rng.random(N) < 0.1),
        "s": pa.array(np.array(["apple", "pear", "fig", ""])[rng.integers(0, 4, N)],
                      mask=rng.random(N) < 0.1),
        "f": pa.array(rng.normal(0, 1, N).round(3)),
        "ts": pa.array(np.sort(rng.integers(0, 10**12, N)), pa.timestamp("us", "UTC")),
    })


TABLE = make_table()


def stream(table: pa.Table = TABLE, chunk_rows: int = CHUNK, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, table, chunk_rows=chunk_rows, **kw)
    return buf.getvalue()


DATA = stream(metadata={"app": "test"})


def batches() -> list[vio.Batch]:
    return list(vio.StreamReader(DATA))


def reader() -> vio.StreamReader:
    return vio.StreamReader(DATA)


def scans() -> list[vio.Scan]:
    return [vio.scan(DATA), vio.scan(DATA, columns=["s", "i"], filter=col("i") > 10, limit=500)]


# -- Batch ------------------------------------------------------------------------------------


def test_batch_to_pyarrow():
    for b in batches():
        ref = b.to_arrow()
        assert isinstance(ref, pa.RecordBatch) and ref.num_rows == b.num_rows
        assert pa.record_batch(b).equals(ref)
        assert pa.table(b).equals(pa.Table.from_batches([ref]))
        assert pa.RecordBatchReader.from_stream(b).read_all().equals(pa.table(ref))
        assert pa.schema(b) == ref.schema  # __arrow_c_schema__, with the batch's metadata
        assert pa.array(b).equals(pa.StructArray.from_arrays(ref.columns, fields=list(ref.schema)))
    assert vio.array(batches()[0]).to_arrow().to_pylist() == TABLE.slice(0, CHUNK).to_pylist()


def test_a_batch_exports_the_stream_schema_its_metadata_apart():
    buf = io.BytesIO()
    with vio.StreamWriter(buf, TABLE.schema, metadata={"stream": "s"}) as w:
        w.write(TABLE.slice(0, 5), metadata={"batch": "0"})
    (b,) = vio.StreamReader(buf.getvalue())
    assert pa.schema(b).metadata == {b"stream": b"s"} == pa.record_batch(b).schema.metadata
    assert dict(b.metadata) == {b"batch": b"0"}


def test_batch_of_an_array_stream_exports_an_array():
    data = stream(pa.table({"x": [1, 2, None, 4]}).column("x").combine_chunks(), chunk_rows=2)
    got = list(vio.StreamReader(data))
    assert len(got) == 2
    for b in got:
        ref = b.to_arrow()
        assert pa.array(b).equals(ref)
        assert pa.chunked_array(b).equals(pa.chunked_array([ref]))
        assert pa.DataType._import_from_c_capsule(b.__arrow_c_schema__()) == pa.int64()
    with pytest.raises((TypeError, ValueError)):
        pa.table(got[0])  # not a table: pyarrow refuses a stream of int64


def test_batch_requested_schema_casts_as_pyarrow_does():
    b = batches()[0]
    want = pa.schema([("i", pa.float64()), ("s", pa.large_string()), ("f", pa.float32()),
                      ("ts", pa.timestamp("ns", "UTC"))])
    got = pa.RecordBatch._import_from_c_capsule(*b.__arrow_c_array__(want.__arrow_c_schema__()))
    assert got.schema == want and got.equals(b.to_arrow().cast(want))
    s = pa.RecordBatchReader._import_from_c_capsule(b.__arrow_c_stream__(want.__arrow_c_schema__()))
    assert s.read_all().equals(pa.Table.from_batches([got]))
    bad = pa.schema([("i", pa.int8()), ("s", pa.int32()), ("f", pa.float64()),
                     ("ts", pa.timestamp("us", "UTC"))])
    with pytest.raises(ValueError, match="Could not cast"):
        b.__arrow_c_array__(bad.__arrow_c_schema__())


# -- StreamReader and Scan ------------------------------------------------------------------


def test_reader_and_scan_to_pyarrow():
    with reader() as r:
        ref = r.read_arrow()
    assert ref.schema.metadata == {b"app": b"test"}
    with reader() as r:
        assert pa.schema(r) == ref.schema
        assert pa.table(r).equals(ref)
    with reader() as r:
        assert pa.RecordBatchReader.from_stream(r).read_all().equals(ref)
    for s in scans():
        want = s.to_arrow()
        assert pa.schema(s) == want.schema
        assert pa.RecordBatchReader.from_stream(s).read_all().equals(want)
        assert pa.table(s).equals(want)  # again: a scan re-reads its sources


def test_streams_are_exported_batch_by_batch():
    data = stream(chunk_rows=10)  # 200 messages
    s = vio.scan(data)
    rd = pa.RecordBatchReader.from_stream(s)
    first = rd.read_next_batch()
    assert first.num_rows == 10 and s.stats.rows_scanned < N // 2  # not scanned whole
    assert first.num_rows + rd.read_all().num_rows == N
    r = vio.StreamReader(data)
    rd = pa.RecordBatchReader.from_stream(r)
    assert rd.read_next_batch().num_rows == 10
    assert r._dec.messages_decoded < 200 // 2  # (the native core frames windows of 64)
    assert rd.read_all().num_rows == N - 10


def test_reader_and_scan_requested_schema():
    want = pa.schema([("i", pa.float64()), ("s", pa.large_string()), ("f", pa.float64()),
                      ("ts", pa.timestamp("us", "UTC"))])
    ref = TABLE.cast(want)
    with reader() as r:
        assert pa.RecordBatchReader.from_stream(r, schema=want).read_all().equals(ref)
    got = pa.RecordBatchReader.from_stream(vio.scan(DATA), schema=want).read_all()
    assert got.equals(ref)
    with pytest.raises(ValueError, match="field names"):
        pa.RecordBatchReader.from_stream(vio.scan(DATA), schema=pa.schema([("i", pa.int64())]))
    with reader() as r, pytest.raises(ValueError, match="field names"):
        pa.RecordBatchReader.from_stream(r, schema=pa.schema([("i", pa.int64())]))


def test_a_reader_is_exported_once():
    with reader() as r:
        assert pa.table(r).num_rows == N
        with pytest.raises(ValueError, match="already exported as an Arrow stream"):
            pa.table(r)
    with reader() as r:
        assert sum(b.num_rows for b in r) == N
        with pytest.raises(ValueError, match="already read to its end"):
            pa.table(r)
    r = reader()
    r.close()
    with pytest.raises(ValueError, match="already read to its end"):
        r.__arrow_c_stream__()
    with reader() as r:  # partly read: the remaining batches
        next(iter(r))
        assert pa.table(r).equals(TABLE.slice(CHUNK).replace_schema_metadata({"app": "test"}))
    # (its schema can be asked for any time: DuckDB asks before it scans)
    assert pa.schema(r) == TABLE.schema.with_metadata({"app": "test"})


# -- the engines ------------------------------------------------------------------------------


def _exporters():
    """(name, a fresh object, its pyarrow table) for each kind of object."""
    b = batches()[1]
    yield "batch", lambda: b, pa.Table.from_batches([b.to_arrow()])
    yield "reader", reader, reader().read_arrow()
    for k, s in enumerate(scans()):
        yield f"scan{k}", lambda s=s: s, s.to_arrow()


def test_polars_takes_them():
    pl = pytest.importorskip("polars")
    from polars.testing import assert_frame_equal

    for name, make, ref in _exporters():
        want = pl.from_arrow(ref)
        assert len(want) == ref.num_rows > 0
        assert_frame_equal(pl.DataFrame(make()), want)
        # pl.from_arrow makes a Series of any PyCapsule object that is not pyarrow's (as it
        # does of arro3's and nanoarrow's tables): a struct Series of the same rows
        got = pl.from_arrow(make())
        assert isinstance(got, pl.Series), name
        assert_frame_equal(got.struct.unnest(), want)


def test_duckdb_takes_them():
    duckdb = pytest.importorskip("duckdb")
    for name, make, ref in _exporters():
        want = duckdb.sql("FROM ref").to_arrow_table()
        assert want.num_rows == ref.num_rows > 0
        obj = make()  # noqa: F841  (DuckDB finds it by name)
        assert duckdb.sql("FROM obj").to_arrow_table().equals(want), name
        assert duckdb.from_arrow(make()).to_arrow_table().equals(want), name
    s = vio.scan(DATA, columns=["i"])  # noqa: F841  (a scan as often as DuckDB asks: a self-join)
    n = duckdb.sql("SELECT count(*) FROM s a JOIN s b USING (i)").fetchall()[0][0]
    t = TABLE  # noqa: F841
    assert n == duckdb.sql("SELECT count(*) FROM t a JOIN t b USING (i)").fetchall()[0][0] > N


def test_pandas_takes_them():
    pd = pytest.importorskip("pandas")
    if not hasattr(pd.DataFrame, "from_arrow"):
        pytest.skip(f"pandas {pd.__version__} has no DataFrame.from_arrow (pandas >= 3.0)")
    for name, make, ref in _exporters():
        want = pd.DataFrame.from_arrow(ref)
        assert len(want) == ref.num_rows > 0
        pd.testing.assert_frame_equal(pd.DataFrame.from_arrow(make()), want, obj=name)


def test_a_stream_of_no_columns_exports_its_rows():
    buf = io.BytesIO()
    with vio.StreamWriter(buf, pa.schema([])) as w:
        for n in (2, 2, 1):
            w.write(pa.table({"x": [0] * n}).select([]))
    data = buf.getvalue()
    with vio.StreamReader(data) as r:
        got = pa.table(r)
    assert got.num_columns == 0 and got.num_rows == 5
    assert pa.table(vio.scan(data)).num_rows == 5
    assert [pa.record_batch(b).num_rows for b in vio.StreamReader(data)] == [2, 2, 1]
