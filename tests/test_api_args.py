"""The public functions check their arguments (a TypeError naming the parameter and what
it accepts, before any work), ``write_ipc`` takes what ``pa.table`` takes, ``read_table`` is
the one-call read, and scans keep the stream's schema metadata."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io.expr import col

TABLE = pa.table({"a": [1, 2, 3], "s": ["x", "y", None]})


def stream(data=TABLE, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, data, **kw)
    return buf.getvalue()


DATA = stream()


@pytest.mark.parametrize("call, text", [
    (lambda: vio.scan(DATA, filter="a == 1"),
     "scan(): filter must be a vortex_io.expr expression such as col('x') == 1"),
    (lambda: vio.scan(DATA, columns="a"), "scan(): columns must be a list of column names"),
    (lambda: vio.scan(DATA, columns=[1]), "scan(): columns must be a list of column names"),
    (lambda: vio.scan(DATA, limit="10"), "scan(): limit must be an int >= 0 or None, not str"),
    (lambda: vio.scan(DATA, offset=1.5), "scan(): offset must be an int >= 0, not float"),
    (lambda: vio.scan(DATA, batch_size=True), "scan(): batch_size must be an int >= 1"),
    (lambda: vio.scan(DATA, threads="4"), "scan(): threads must be an int >= 1 or None"),
    (lambda: vio.scan(DATA, limits={"max_body_bytes": 1}),
     "scan(): limits must be a vortex_io.ReaderLimits or None"),
    (lambda: vio.scan(DATA, string_view="yes"), "scan(): string_view must be a bool"),
    (lambda: vio.scan(DATA, read_dictionary="s"), "scan(): read_dictionary takes a sequence"),
    (lambda: vio.scan(42), "scan(): source must be a path, a bytes-like object"),
    (lambda: vio.read_table(DATA, filter=lambda r: r), "read_table(): filter must be"),
    (lambda: vio.read_table(DATA, columns=("a", 2)), "read_table(): columns must be"),
    (lambda: vio.StreamReader(42), "source must be a path, a bytes-like object, a binary file"),
    (lambda: vio.write_ipc(io.BytesIO(), 42), "write_ipc(): data must be a vortex_io.Array"),
    (lambda: vio.write_ipc(io.BytesIO(), object()), "a mapping of column names to columns"),
    (lambda: vio.write_ipc(42, TABLE), "write_ipc(): sink must be a path, a binary file object"),
    (lambda: vio.write_ipc(io.BytesIO(), TABLE, metadata=5), "write_ipc(): metadata must be None"),
    (lambda: vio.write_ipc(io.BytesIO(), TABLE, metadata="k=v"), "write_ipc(): metadata must be"),
    (lambda: vio.write_ipc(io.BytesIO(), TABLE, metadata={"k": 1}), "metadata value must be str"),
    (lambda: vio.write_ipc(io.BytesIO(), TABLE, compress="zstd"),
     "write_ipc(): compress must be a bool or a vortex_io.CompressOptions"),
    (lambda: vio.write_ipc(io.BytesIO(), TABLE, encodings=["a"]), "write_ipc(): encodings must be"),
    (lambda: vio.write_ipc(io.BytesIO(), TABLE, chunk_rows="1000"),
     "write_ipc(): chunk_rows must be an int >= 1"),
    (lambda: vio.write_ipc(io.BytesIO(), TABLE, dtype="int64"),
     "write_ipc(): dtype must be a vortex_io DType or an Arrow schema"),
    (lambda: vio.StreamWriter(io.BytesIO(), {"a": "int64"}), "StreamWriter(): dtype must be"),
    (lambda: vio.StreamWriter(io.BytesIO(), TABLE.schema).write_batch(TABLE),
     "write_batch(): array must be a vortex_io.Array"),
])
def test_wrong_argument_types_are_type_errors_naming_the_parameter(call, text):
    with pytest.raises(TypeError) as ei:
        call()
    assert text in str(ei.value), str(ei.value)


def test_bad_values_are_value_errors():
    with pytest.raises(ValueError, match="limit must be >= 0, not -1"):
        vio.scan(DATA, limit=-1)
    with pytest.raises(ValueError, match="chunk_rows must be >= 1, not 0"):
        vio.write_ipc(io.BytesIO(), TABLE, chunk_rows=0)


def test_write_ipc_accepts_a_mapping_of_columns():
    got = vio.read_table(stream({"a": [1, 2, 3], "s": np.array(["x", "y", "z"])}))
    assert got.to_pydict() == {"a": [1, 2, 3], "s": ["x", "y", "z"]}


def test_write_ipc_accepts_pandas_and_keeps_its_dtypes():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "s": ["a", "b", None],
                       "f": [0.5, 1.5, np.nan]})
    data = stream(df)
    for back in (vio.read_table(data), vio.scan(data).to_arrow(),
                 vio.StreamReader(data).read_arrow()):
        out = back.to_pandas()
        assert str(out["n"].dtype) == "Int64", back.schema
        pd.testing.assert_frame_equal(out, df)
    # a projection keeps the metadata too (pandas restores the dtypes of what is there)
    proj = vio.read_table(data, columns=["n"]).to_pandas()
    assert str(proj["n"].dtype) == "Int64" and list(proj.columns) == ["n"]
    assert str(pa.Table.from_batches(list(vio.scan(data, filter=col("f") > 1))).to_pandas()["n"].dtype) \
        == "Int64"
    series = vio.read_table(stream(pd.Series([1.0, 2.0], name="x")))
    assert series.column(0).to_pylist() == [1.0, 2.0]


def test_write_ipc_accepts_polars_frames_and_series():
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"a": [1, 2, 3], "s": ["x", "y", None]})
    assert vio.read_table(stream(df)).equals(TABLE.cast(vio.read_table(stream(df)).schema))
    got = vio.read_ipc(stream(pl.Series("v", [1.5, None])))
    assert got.to_pylist() == [1.5, None]


class Producer:
    """Only the Arrow PyCapsule interface (as nanoarrow, ADBC, ... hand out)."""

    def __init__(self, t: pa.Table) -> None:
        self.t = t

    def __arrow_c_stream__(self, requested_schema=None):
        return self.t.__arrow_c_stream__(requested_schema)


class ArrayProducer:
    def __init__(self, a: pa.Array) -> None:
        self.a = a

    def __arrow_c_array__(self, requested_schema=None):
        return self.a.__arrow_c_array__(requested_schema)


def test_write_ipc_accepts_arrow_pycapsule_producers():
    assert vio.read_table(stream(Producer(TABLE))).equals(TABLE)
    assert vio.read_ipc(stream(ArrayProducer(pa.array([1, None])))).to_pylist() == [1, None]
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.connect().sql("SELECT 1 AS a UNION ALL SELECT 2 ORDER BY a")
    assert vio.read_table(stream(rel)).to_pydict() == {"a": [1, 2]}


def test_read_table_is_the_one_call_read(tmp_path):
    p = tmp_path / "t.vxipc"
    vio.write_ipc(p, TABLE, metadata={"origin": "test"})
    t = vio.read_table(p)
    assert isinstance(t, pa.Table) and t.equals(TABLE)
    assert t.schema.metadata == {b"origin": b"test"}
    assert vio.read_table(str(p), columns=["s"], filter=col("a") >= 2).to_pydict() == {"s": ["y", None]}
    assert vio.read_table([p, p]).num_rows == 6
    assert "read_table" in vio.__all__
    # read_ipc is the other read: a vortex_io.Array, whose to_arrow() is an Arrow array
    assert isinstance(vio.read_ipc(p), vio.Array)


def test_scans_keep_the_stream_metadata_in_their_schema():
    from vortex_io._arrow import schema_metadata_pairs

    data = stream(metadata=[("k", "v"), ("k", "w"), ("z", "1")])
    s = vio.scan(data, columns=["a"])
    assert schema_metadata_pairs(s.schema) == [(b"k", b"v"), (b"k", b"w"), (b"z", b"1")]
    assert schema_metadata_pairs(vio.StreamReader(data).schema) == schema_metadata_pairs(s.schema)
    batches = list(vio.scan(data, filter=col("a") > 1))
    assert batches and all(b.schema.metadata == s.schema.metadata for b in batches)
    assert vio.scan(data).to_arrow().schema.metadata == s.schema.metadata
    assert vio.scan(data, read_dictionary=["s"]).to_arrow().schema.metadata == s.schema.metadata
