"""Exact Arrow round trips: every Arrow type pyarrow builds, written by every write route
and read back by every read route with the same schema (types, nullability, field and
schema metadata) and the same values; Polars and DuckDB see what they see over Arrow IPC;
vortex-data decodes the streams (their values in Vortex types)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io._arrow_schema import same_schema
from vortex_io._metadata import ARROW_SCHEMA_KEY

N = 7


def _nulls(n: int = N, every: int = 3) -> pa.Array:
    return pa.array([i % every == 1 for i in range(n)])


def _nested_nulls() -> pa.Array:
    """A nullable struct whose non-nullable child holds nulls (and other values) under the
    parent's null slots: valid Arrow, as RPC frameworks produce it."""
    child = pa.array([1.5, None, 3.0, 4.0, None, 6.0, 7.0])
    return pa.StructArray.from_arrays(
        [child, pa.array(["a", "b", "c", None, "e", "f", "g"])],
        fields=[pa.field("v", pa.float64(), False), pa.field("s", pa.string())],
        mask=pa.array([False, True, False, False, True, False, False]))


def _nested_list_nulls() -> pa.Array:
    """A nullable list of non-nullable items: a null slot covers null items."""
    values = pa.array([1, 2, None, None, 5, 6])
    offsets = pa.array([0, 2, 4, 4, 6, 6, 6, 6], pa.int32())
    return pa.ListArray.from_arrays(offsets, values, type=pa.list_(pa.field("x", pa.int64(), False)),
                                    mask=pa.array([False, True, False, False, True, False, True]))


def _interval() -> pa.Array:
    return pa.array([pa.MonthDayNano([i, -i, i * 10**9]) if i % 3 else None for i in range(N)],
                    pa.month_day_nano_interval())


def _columns() -> dict[str, pa.Array]:
    ints = pa.array([i if i % 3 else None for i in range(N)], pa.int64())
    strs = pa.array([f"s{i % 3}" if i % 4 else None for i in range(N)])
    return {
        "nested_nulls": _nested_nulls(),
        "list_nested_nulls": _nested_list_nulls(),
        "map": pa.array([[("a", 1), ("b", None)], None, [], [("c", 3)], [("d", 4)], None, []],
                        pa.map_(pa.string(), pa.int64())),
        "map_sorted": pa.array([[(1, "x")]] * N, pa.map_(pa.int32(), pa.string(), keys_sorted=True)),
        "duration_ms": ints.cast(pa.duration("ms")),
        "duration_ns": pa.array(range(N), pa.int64()).cast(pa.duration("ns")),
        "interval": _interval(),
        "fixed_binary": pa.array([bytes([i] * 4) if i % 3 else None for i in range(N)], pa.binary(4)),
        "dictionary": strs.dictionary_encode(),
        "dictionary_i8": pa.DictionaryArray.from_arrays(
            pa.array([2, 0, None, 1, 2, 2, 0], pa.int8()), pa.array(["z", "y", "x"])),
        "dictionary_ordered": pa.DictionaryArray.from_arrays(
            pa.array([0, 1, 0, 1, 0, 1, 0], pa.int16()), pa.array([10, 20]), ordered=True),
        "large_string": strs.cast(pa.large_string()),
        "large_binary": pa.array([b"x" * i for i in range(N)], pa.large_binary()),
        "string_view": strs.cast(pa.string_view()),
        "binary_view": pa.array([b"y" * (i * 5) for i in range(N)], pa.binary_view()),
        "large_list": pa.array([[i] * (i % 3) for i in range(N)], pa.large_list(pa.int16())),
        "list_view": pa.ListViewArray.from_arrays(
            pa.array([0, 2, 1, 0, 3, 0, 0], pa.int32()), pa.array([2, 1, 2, 0, 1, 3, 0], pa.int32()),
            pa.array([1, 2, 3, 4])),
        "large_list_view": pa.LargeListViewArray.from_arrays(
            pa.array([0, 1, 0, 0, 0, 0, 0], pa.int64()), pa.array([1, 1, 0, 0, 2, 0, 1], pa.int64()),
            pa.array(["a", "b"])),
        "uuid": pa.ExtensionArray.from_storage(
            pa.uuid(), pa.array([bytes(range(i, i + 16)) for i in range(N)], pa.binary(16))),
        "json": pa.ExtensionArray.from_storage(
            pa.json_(), pa.array(['{"a": 1}', "[]", None, "1", '"x"', "null", "{}"])),
        "decimal32": pa.array([1, 2, None, 4, 5, 6, 7], pa.decimal128(7, 2)).cast(pa.decimal32(7, 2)),
        "decimal64": pa.array([1, 2, None, 4, 5, 6, 7], pa.decimal128(15, 3)).cast(pa.decimal64(15, 3)),
        "run_end": pc.run_end_encode(pa.array([1, 1, 2, 2, 2, None, 3])),
        "list_of_map": pa.array([[[("k", 1)]], None, [], [None], [[]], [[("a", None)]], None],
                                pa.list_(pa.map_(pa.string(), pa.int8()))),
        "struct_of_mixed": pa.StructArray.from_arrays(
            [ints.cast(pa.duration("s")), strs.dictionary_encode(),
             pa.array([bytes([i]) * 2 for i in range(N)], pa.binary(2))],
            names=["d", "cat", "fb"], mask=_nulls()),
    }


def _table() -> pa.Table:
    cols = _columns()
    fields = [pa.field(n, a.type, True, {"field": n} if i % 2 else None)
              for i, (n, a) in enumerate(cols.items())]
    fields.append(pa.field("required", pa.int32(), False, {"unit": "count"}))
    return pa.Table.from_arrays([*cols.values(), pa.array(range(N), pa.int32())],
                                schema=pa.schema(fields, metadata={"app": "fidelity"}))


TABLE = _table()


def _undict(t: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(t):
        return t.value_type
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_undict(f.type)) for f in t])
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_undict(t.value_type)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_undict(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_undict(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_undict(t.key_type)),
                       t.item_field.with_type(_undict(t.item_type)), t.keys_sorted)
    return t


def _dictionaries_decoded(t: pa.Table) -> pa.Table:
    """``t`` with dictionaries (top-level and in structs) decoded: a stream keeps their
    type and values, each batch's dictionary is built anew from its values."""
    return pa.table([col if _undict(col.type) == col.type else col.cast(_undict(col.type))
                     for col in t.columns], names=t.column_names)


def _assert_exact(got: pa.Table, want: pa.Table) -> None:
    assert got.schema.equals(want.schema, check_metadata=True), (got.schema, want.schema)
    got_d, want_d = _dictionaries_decoded(got), _dictionaries_decoded(want)
    for name in want.column_names:
        assert got_d[name].equals(want_d[name]), name
    assert got.to_pylist() == want.to_pylist()


def _write_ipc(t: pa.Table, compress: bool) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=compress, chunk_rows=4)
    return buf.getvalue()


def _stream_writer(t: pa.Table, compress: bool) -> bytes:
    buf = io.BytesIO()
    with vio.StreamWriter(buf, t.schema, metadata=t.schema.metadata, compress=compress) as w:
        for b in t.to_batches(max_chunksize=3):
            w.write(b)
    return buf.getvalue()


WRITERS = {"write_ipc": _write_ipc, "StreamWriter": _stream_writer}


def _batches(data: bytes) -> pa.Table:
    with vio.StreamReader(data) as r:
        schema = r.schema
        return pa.Table.from_batches([b.to_arrow() for b in r], schema=schema)


READERS = {
    "read_table": lambda d: vio.read_table(d),
    "batches": _batches,
    "read_arrow": lambda d: vio.StreamReader(d).read_arrow(),
    "capsule": lambda d: pa.table(vio.StreamReader(d)),
    "scan": lambda d: vio.scan(d).to_arrow(),
    "scan_batches": lambda d: pa.Table.from_batches(list(vio.scan(d, batch_size=2))),
}


@pytest.mark.parametrize("compress", [False, True], ids=["canonical", "compressed"])
@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("reader", list(READERS))
def test_every_route_round_trips_exactly(writer: str, reader: str, compress: bool) -> None:
    data = WRITERS[writer](TABLE, compress)
    got = READERS[reader](data)
    if reader == "scan_batches":
        got = got.replace_schema_metadata(TABLE.schema.metadata)
    _assert_exact(got, TABLE)


@pytest.mark.parametrize("name", [*_columns(), "required"])
def test_each_column_alone(name: str) -> None:
    """Each class in a stream of its own, and projected out of the whole table."""
    t = TABLE.select([name])
    for compress in (False, True):
        _assert_exact(vio.read_table(_write_ipc(t, compress)), t)
    whole = _write_ipc(TABLE, True)
    _assert_exact(vio.read_table(whole, columns=[name]),
                  TABLE.select([name]).replace_schema_metadata(TABLE.schema.metadata))


def test_filtered_scan_keeps_exact_types() -> None:
    from vortex_io.expr import col

    t = TABLE.select([n for n in TABLE.column_names if "view" not in n and n != "run_end"])
    got = vio.read_table(_write_ipc(t, True), filter=col("required") >= 3)  # (pyarrow filters
    # neither views nor run-end encoded arrays)
    _assert_exact(got, t.filter(pc.field("required") >= 3))


def test_single_array_streams() -> None:
    for name, a in _columns().items():
        buf = io.BytesIO()
        vio.write_ipc(buf, a)
        with vio.StreamReader(buf.getvalue()) as r:
            back = r.read_arrow()
        assert back.type == a.type, name
        want = pa.chunked_array([a])
        assert back.cast(_undict(a.type)).equals(want.cast(_undict(a.type))) \
            if _undict(a.type) != a.type else back.equals(want), name
        assert [b.to_arrow().type for b in vio.StreamReader(buf.getvalue())] == [a.type], name


def test_reserved_key_is_hidden_and_only_written_when_needed() -> None:
    data = _write_ipc(TABLE, False)
    with vio.StreamReader(data) as r:
        assert dict(r.metadata) == {b"app": b"fidelity"}
        assert ARROW_SCHEMA_KEY not in r.metadata
    from vortex_io._ipc.framing import MessageDecoder

    dec = MessageDecoder()
    dec.feed(data)
    first = dec.next_message()
    assert first is not None and first.header.custom_metadata.get_all(ARROW_SCHEMA_KEY)
    plain = pa.table({"x": [1, 2], "s": ["a", None]})  # the dtype gives it back: no key
    dec = MessageDecoder()
    dec.feed(_write_ipc(plain, False))
    first = dec.next_message()
    assert first is not None and not first.header.custom_metadata.get_all(ARROW_SCHEMA_KEY)
    with pytest.raises(ValueError, match="reserved"):
        vio.write_ipc(io.BytesIO(), plain, metadata={"vortex_io.arrow_schema": "x"})


def test_a_stored_schema_that_does_not_match_is_malformed() -> None:
    from vortex_io._ipc.framing import MessageEncoder

    enc = MessageEncoder()
    d = vio.dtype.Struct(["x"], [vio.dtype.Primitive(vio.dtype.PType.I64, True)])
    other = pa.schema([pa.field("y", pa.string())]).serialize().to_pybytes()
    for value in (other, b"not a schema"):
        parts = MessageEncoder().dtype_message(d, None, [(ARROW_SCHEMA_KEY, value)])
        data = b"".join(bytes(p) for p in parts)
        with pytest.raises(vio.MalformedStreamError, match="arrow_schema"):
            vio.StreamReader(data)
    assert enc.position == 0


def test_vortex_data_decodes_every_stream() -> None:
    """vortex-data reads the streams: every column, in its Vortex type, with the values."""
    from .vx_util import vx_decode_to_arrow

    for compress in (False, True):
        data = _write_ipc(TABLE, compress)
        ours = vio.read_table(data)
        theirs = vx_decode_to_arrow(data)
        assert sum(len(c) for c in theirs) == TABLE.num_rows
        from vortex_io._arrow_schema import restore_array

        for name in TABLE.column_names:
            col = pa.chunked_array([c.field(name) if isinstance(c, pa.StructArray)
                                    else c.column(name) for c in theirs])
            if name == "nested_nulls":  # masked values under null parents may differ
                col = pc.if_else(pc.is_null(ours[name]), None, col)
            assert restore_array(col.combine_chunks(), TABLE.schema.field(name).type).equals(
                ours[name].combine_chunks()), name


def test_non_nullable_nulls_where_the_parent_is_valid_name_the_column() -> None:
    bad = pa.StructArray.from_arrays([pa.array([1, None, 3], pa.int8())],
                                     fields=[pa.field("v", pa.int8(), False)])
    t = pa.table({"s": bad})
    with pytest.raises(vio.UnsupportedError, match=r"column 's\.v'.*row 1"):
        vio.write_ipc(io.BytesIO(), t)
    top = pa.Table.from_arrays([pa.array([1, None], pa.int8())],
                               schema=pa.schema([pa.field("x", pa.int8(), False)]))
    with pytest.raises(vio.UnsupportedError, match="column 'x'"):
        vio.write_ipc(io.BytesIO(), top)


# -- engines: what each sees over Arrow IPC ----------------------------------------------------


def _arrow_ipc(path: Path, t: pa.Table) -> Path:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, t.schema) as w:
        w.write_table(t)
    return path


#: what Polars cannot read from an Arrow IPC stream itself (it panics): through the adapter
#: they come as their values (a list, the values, the interval's struct)
POLARS_UNREADABLE = {
    "interval": [None, {"months": 1, "days": -1, "nanoseconds": 10**9}],
    "list_view": [[1, 2], [3]],
    "large_list_view": [["a"], ["b"]],
    "run_end": [1, 1],
}
POLARS_COLUMNS = [n for n in TABLE.column_names if n not in POLARS_UNREADABLE]


def test_polars_sees_what_it_sees_over_arrow_ipc(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    from polars.testing import assert_frame_equal

    vio.register_polars()
    t = TABLE.select(POLARS_COLUMNS)
    (tmp_path / "t.vxipc").write_bytes(_write_ipc(t, True))
    want = pl.read_ipc_stream(_arrow_ipc(tmp_path / "t.arrows", t))
    for engine in ("in-memory", "streaming"):
        got = pl.scan_vortex_ipc(str(tmp_path / "t.vxipc")).collect(engine=engine)
        assert_frame_equal(got, want)
    got = pl.scan_vortex_ipc(str(tmp_path / "t.vxipc")).filter(pl.col("required") > 2).select(
        "map", "duration_ms").collect()
    assert_frame_equal(got, want.filter(pl.col("required") > 2).select("map", "duration_ms"))
    (tmp_path / "all.vxipc").write_bytes(_write_ipc(TABLE, True))
    whole = pl.scan_vortex_ipc(str(tmp_path / "all.vxipc")).head(2).collect()
    assert_frame_equal(whole.select(POLARS_COLUMNS), want.head(2))
    for name, first in POLARS_UNREADABLE.items():
        assert whole[name].to_list() == first, name


def test_duckdb_sees_what_it_sees_over_arrow(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    t = TABLE
    (tmp_path / "t.vxipc").write_bytes(_write_ipc(t, True))
    con = duckdb.connect()
    vio.register_duckdb(con)
    con.register("arrow_t", t)
    want = con.sql("SELECT * FROM arrow_t ORDER BY required").fetchall()
    got = con.sql(f"SELECT * FROM vortex_ipc('{tmp_path / 't.vxipc'}') ORDER BY required").fetchall()
    assert got == want
    assert con.sql(f"DESCRIBE SELECT * FROM vortex_ipc('{tmp_path / 't.vxipc'}')").fetchall() == \
        con.sql("DESCRIBE SELECT * FROM arrow_t").fetchall()


# -- nested schemas with nulls at every level, differential against Arrow IPC -----------------


def _types(depth: int) -> st.SearchStrategy[pa.DataType]:
    leaves = st.sampled_from([pa.int8(), pa.int64(), pa.float64(), pa.string(), pa.bool_(),
                              pa.large_string(), pa.binary(3), pa.duration("us"),
                              pa.timestamp("ms", "UTC"), pa.date32()])
    if depth == 0:
        return leaves
    sub = _types(depth - 1)
    field = st.builds(lambda t, n, i: pa.field(f"f{i}", t, n), sub, st.booleans(),
                      st.integers(0, 99))
    return st.one_of(
        leaves,
        st.lists(field, min_size=1, max_size=3, unique_by=lambda f: f.name).map(pa.struct),
        st.builds(lambda f: pa.list_(f), field),
        st.builds(lambda f: pa.large_list(f), field),
        st.builds(lambda f, k: pa.list_(f, k), field, st.integers(1, 3)),
        st.builds(lambda k, v: pa.map_(k, v), st.sampled_from([pa.string(), pa.int32()]), sub),
        st.builds(lambda t: pa.dictionary(pa.int16(), t),
                  st.sampled_from([pa.string(), pa.int64()])),
    )


def _value(t: pa.DataType, nullable: bool, draw: st.DrawFn) -> object:
    if nullable and draw(st.integers(0, 3)) == 0:
        return None
    if pa.types.is_struct(t):
        return {f.name: _value(f.type, f.nullable, draw) for f in t}
    if pa.types.is_map(t):
        return [(_value(t.key_type, False, draw), _value(t.item_type, t.item_field.nullable, draw))
                for _ in range(draw(st.integers(0, 2)))]
    if pa.types.is_fixed_size_list(t):
        return [_value(t.value_type, t.value_field.nullable, draw) for _ in range(t.list_size)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_value(t.value_type, t.value_field.nullable, draw)
                for _ in range(draw(st.integers(0, 3)))]
    if pa.types.is_dictionary(t):
        return _value(t.value_type, False, draw)
    if pa.types.is_fixed_size_binary(t):
        return draw(st.binary(min_size=t.byte_width, max_size=t.byte_width))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return draw(st.sampled_from(["", "a", "bb", "ccc"]))
    if pa.types.is_boolean(t):
        return draw(st.booleans())
    if pa.types.is_floating(t):
        return draw(st.floats(allow_nan=False, width=64))
    if pa.types.is_integer(t):
        return draw(st.integers(-100, 100))
    if pa.types.is_duration(t):
        return draw(st.integers(-10**9, 10**9))
    if pa.types.is_timestamp(t):
        return draw(st.integers(0, 10**12))
    return draw(st.integers(0, 20000))  # date32


@st.composite
def nested_tables(draw: st.DrawFn) -> pa.Table:
    fields = draw(st.lists(st.builds(lambda t, n, i: pa.field(f"c{i}", t, n), _types(3),
                                     st.booleans(), st.integers(0, 9)),
                           min_size=1, max_size=3, unique_by=lambda f: f.name))
    n = draw(st.integers(0, 12))
    cols = []
    for f in fields:
        vals = [_value(f.type, True, draw) for _ in range(n)]
        if pa.types.is_dictionary(f.type):
            cols.append(pa.array(vals, f.type.value_type).dictionary_encode().cast(f.type))
        elif pa.types.is_timestamp(f.type) or pa.types.is_duration(f.type) \
                or pa.types.is_date(f.type):
            cols.append(pa.array(vals, pa.int64() if not pa.types.is_date32(f.type)
                                 else pa.int32()).cast(f.type))
        else:
            cols.append(pa.array(vals, f.type))
        if not f.nullable and cols[-1].null_count:
            f = f.with_nullable(True)
        fields[fields.index(next(x for x in fields if x.name == f.name))] = f
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nested_tables(), st.booleans())
def test_nested_nulls_round_trip_as_arrow_ipc_does(t: pa.Table, compress: bool) -> None:
    arrow = pa.ipc.open_stream(_arrow_ipc_bytes(t)).read_all()
    data = _write_ipc(t, compress)
    for read in (vio.read_table, _batches):
        got = read(data)
        assert same_schema(got.schema, arrow.schema)
        assert _dictionaries_decoded(got).equals(_dictionaries_decoded(arrow))
        assert got.to_pylist() == arrow.to_pylist()


def _arrow_ipc_bytes(t: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def test_nested_nulls_values_under_null_parents_are_masked() -> None:
    """Whatever a null parent's children hold (nulls in a non-nullable child), the stream
    holds a valid value there and reads back equal."""
    a = _nested_nulls()
    t = pa.table({"s": a})
    got = vio.read_table(_write_ipc(t, False))
    assert got.equals(t)
    child = got["s"].combine_chunks().field(0)
    assert child.null_count == 0  # the non-nullable child holds no null
    assert np.isfinite(child.to_numpy()[[0, 2, 3, 5, 6]]).all()


def test_engine_filters_on_restored_types(tmp_path: Path) -> None:
    """Filters on columns whose types the stream restores give the rows the same engine
    gives over the Arrow data itself."""
    import datetime as dtm

    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "t.vxipc"
    path.write_bytes(_write_ipc(TABLE, True))
    vio.register_polars()
    lf, ref = pl.scan_vortex_ipc(str(path)), pl.from_arrow(TABLE.select(POLARS_COLUMNS))
    for q in [pl.col("duration_ms") > dtm.timedelta(milliseconds=2), pl.col("dictionary") == "s1",
              pl.col("large_string").str.starts_with("s2"),
              pl.col("fixed_binary") == bytes([4] * 4), pl.col("decimal64") > 3,
              pl.col("dictionary_i8").is_in(["x", "y"])]:
        got = lf.filter(q).select("required").collect()["required"].to_list()
        assert got == ref.filter(q)["required"].to_list() and got, q
    con = duckdb.connect()
    vio.register_duckdb(con)
    con.register("arrow_t", TABLE)
    for where in ["duration_ms > INTERVAL 2 MILLISECOND", "dictionary = 's1'",
                  "large_string LIKE 's2%'", "decimal32 > 3", "dictionary_i8 IN ('x', 'y')",
                  "map['a'] = 1", "fixed_binary = '\\x04\\x04\\x04\\x04'::BLOB",
                  "interval > INTERVAL 1 MONTH"]:
        got = con.sql(f"SELECT required FROM vortex_ipc('{path}') WHERE {where} ORDER BY 1")
        want = con.sql(f"SELECT required FROM arrow_t WHERE {where} ORDER BY 1").fetchall()
        assert got.fetchall() == want and want, where
