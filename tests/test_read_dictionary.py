"""scan(read_dictionary=...): string and binary columns as Arrow dictionaries, on the native
core and on the reference path, for dictionary-encoded messages (codes and values handed
over) and messages encoded otherwise (dictionary-encoded on the way out)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io.expr import col

DICT = pa.dictionary(pa.int32(), pa.string())


def _stream(compress: bool = True) -> bytes:
    rng = np.random.default_rng(7)
    n = 3000
    low = rng.choice(["AAPL", "MSFT", "GOOG", None, "IBM"], size=n).tolist()
    unique = [None if i % 97 == 0 else f"s{i:05d}-{rng.integers(1 << 40)}" for i in range(n)]
    # message 1: few distinct values (dictionary-encoded); message 2: all distinct (not)
    t = pa.table({
        "k": pa.array(np.arange(2 * n)),
        "s": pa.array(low + unique, pa.string()),
        "b": pa.array([None if v is None else v.encode() for v in low + low], pa.binary()),
    })
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=compress, chunk_rows=n)
    return buf.getvalue()


def _plain(t: pa.Table) -> pa.Table:
    return pa.table({n: (c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c)
                     for n, c in zip(t.column_names, t.columns)})


def _encodings(data: bytes, name: str) -> list[str]:
    with vio.StreamReader(data) as r:
        return [b.array.field(name).encoding for b in r]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("filt", [None, col("k") > 2500, col("s") == "MSFT",
                                  col("s").is_in(["IBM", "s03001"]), col("k") < 0])
def test_values_and_types(native: bool, compress: bool, filt, monkeypatch) -> None:
    if not native:
        monkeypatch.setattr("vortex_io._native_glue._off", 1)
    data = _stream(compress)
    if compress:
        assert _encodings(data, "s")[0] == "vortex.dict" != _encodings(data, "s")[1]
    want = vio.scan(data, filter=filt).to_arrow()
    s = vio.scan(data, filter=filt, read_dictionary=["s", "b"])
    got = s.to_arrow()
    assert s.schema.field("s").type == DICT
    assert s.schema.field("b").type == pa.dictionary(pa.int32(), pa.binary())
    assert got.schema == s.schema
    assert got.num_rows == want.num_rows
    assert _plain(got).equals(want)
    for c in got["s"].chunks:
        c.validate(full=True)
        # a row is null exactly when its code is: the dictionary is never indexed past its end
        assert c.indices.null_count == c.null_count


def test_projection_and_string_view() -> None:
    data = _stream()
    got = vio.scan(data, columns=["s", "k"], string_view=True, read_dictionary=["s"]).to_arrow()
    assert got.schema.types == [DICT, pa.int64()]
    assert got["s"].cast(pa.string()).equals(vio.scan(data, columns=["s"]).to_arrow()["s"])
    # a column not projected is simply not read
    assert vio.scan(data, columns=["k"], read_dictionary=["s"]).to_arrow().schema.types == [pa.int64()]


def test_dictionary_codes_cross_undecoded() -> None:
    """A dictionary-encoded message hands over its own values (the distinct strings), not a
    dictionary of the selected rows."""
    data = _stream()
    first = next(iter(vio.scan(data, read_dictionary=["s"])))
    d = first.column(first.schema.get_field_index("s")).dictionary
    assert len(d) <= 5 and set(d.to_pylist()) <= {"AAPL", "MSFT", "GOOG", "IBM", None}


def test_bad_arguments() -> None:
    data = _stream()
    with pytest.raises(TypeError, match="'k'"):
        vio.scan(data, read_dictionary=["k"])
    with pytest.raises(KeyError, match="nope"):
        vio.scan(data, read_dictionary=["nope"])
    with pytest.raises(TypeError, match="sequence"):
        vio.scan(data, read_dictionary="s")


def test_duckdb_reads_dictionaries() -> None:
    duckdb = pytest.importorskip("duckdb")
    import tempfile
    from pathlib import Path

    data = _stream()
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.vxipc"
        p.write_bytes(data)
        con = duckdb.connect()
        vio.register_duckdb(con)
        con.register("t", vio.scan(data).to_arrow())
        q = "SELECT s, count(*) AS n FROM {} GROUP BY s ORDER BY s NULLS FIRST"
        got = con.sql(q.format(f"vortex_ipc('{p}')")).to_arrow_table()
        want = con.sql(q.format("t")).to_arrow_table()
        assert _plain(got).equals(want)
        q = "SELECT count(*) FROM {} WHERE s LIKE 'M%' OR s LIKE 's03%'"
        assert (con.sql(q.format(f"vortex_ipc('{p}')")).fetchall()
                == con.sql(q.format("t")).fetchall())
