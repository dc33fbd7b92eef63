"""The errors a user catches by name: ``vortex_io.ColumnNotFoundError`` (also a KeyError) and
``vortex_io.TypeMismatchError`` (also a TypeError), raised wherever a column is named or a
literal compared, with plain messages naming the column and the choices."""

from __future__ import annotations

import io
import pickle

import pyarrow as pa
import pytest

import vortex_io as vio
from vortex_io.expr import col

T = pa.table({"s": ["a", "b"], "x": [1, 2]})


@pytest.fixture(scope="module")
def data() -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, T)
    return buf.getvalue()


NOT_FOUND = {
    "scan columns": lambda d: vio.scan(d, columns=["x", "nope"]),
    "read_table columns": lambda d: vio.read_table(d, columns=["nope"]),
    "scan filter": lambda d: vio.scan(d, filter=(col("x") > 0) & (col("nope") == 1)),
    "read_dictionary": lambda d: vio.scan(d, read_dictionary=["nope"]),
    "Array.field": lambda d: vio.read_ipc(d).field("nope"),
    "Struct.field": lambda d: vio.read_ipc(d).dtype.field("nope"),
    "write encodings": lambda d: vio.write_ipc(io.BytesIO(), T, encodings={"nope": "vortex.dict"}),
}


@pytest.mark.parametrize("where", list(NOT_FOUND))
def test_a_missing_column_is_a_column_not_found_error_everywhere(data, where):
    with pytest.raises(vio.ColumnNotFoundError) as e:
        NOT_FOUND[where](data)
    err = e.value
    assert isinstance(err, KeyError) and isinstance(err, LookupError)
    assert isinstance(err, vio.VortexIPCError)
    assert err.column == "nope" and err.choices == ["s", "x"]
    # plain text: no KeyError quotes around the message
    assert str(err).endswith("no column 'nope'; columns are ['s', 'x']")
    assert not str(err).startswith(('"', "'"))


def test_the_class_is_caught_as_the_built_in_a_user_tries(data):
    try:
        vio.read_table(data, columns=["nope"])
    except KeyError as e:  # what a dict-like lookup raises: the natural first guess
        assert "nope" in str(e)
    else:
        pytest.fail("no error")


MISMATCH = {
    "string column, int literal": (col("s") == 3, "cannot compare column 's' (utf8?) with 3 (int)"),
    "int column, str literal": (col("x") < "2", "cannot compare column 'x' (i64?) with '2' (str)"),
    "is_in": (col("x").is_in([1, "b"]), "cannot compare column 'x' (i64?) with 'b' (str)"),
    "inside a connective": ((col("x") > 0) | ~(col("s") == 1.5),
                            "cannot compare column 's' (utf8?) with 1.5 (float)"),
}


@pytest.mark.parametrize("where", list(MISMATCH))
def test_a_literal_a_column_cannot_hold_is_a_type_mismatch_error_naming_it(data, where):
    f, msg = MISMATCH[where]
    with pytest.raises(vio.TypeMismatchError) as e:
        vio.scan(data, filter=f)
    assert isinstance(e.value, TypeError) and isinstance(e.value, vio.VortexIPCError)
    assert str(e.value) == msg
    assert e.value.column == msg.split("'")[1]


def test_compute_functions_raise_the_same_class():
    from vortex_io.compute import compare

    with pytest.raises(vio.TypeMismatchError, match=r"cannot compare utf8\?? with 3 \(int\)"):
        compare(vio.array(["a", None]), 3, "eq")


@pytest.mark.parametrize("err", [vio.ColumnNotFoundError("c", ["a", "b"], context="columns"),
                                 vio.TypeMismatchError("s", vio.dtype.Utf8(), 3)])
def test_both_pickle_and_show_their_public_name(err):
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err)
    assert type(err).__module__ == "vortex_io"
    assert repr(err).startswith(type(err).__name__ + "(")


def test_distributed_readers_raise_it_for_columns(tmp_path):
    p = tmp_path / "t.vxipc"
    vio.write_ipc(p, T)
    dd = pytest.importorskip("vortex_io.integrations.dask_dataframe")
    pytest.importorskip("dask.dataframe")
    with pytest.raises(vio.ColumnNotFoundError, match="no column 'nope'"):
        dd.read_vortex_ipc(str(p), columns=["nope"])


def test_polars_filters_on_a_missing_column_are_polars_errors(tmp_path):
    """Polars resolves names against the schema itself, before the scan: its own error."""
    pl = pytest.importorskip("polars")
    p = tmp_path / "t.vxipc"
    vio.write_ipc(p, T)
    vio.register_polars()
    with pytest.raises(pl.exceptions.ColumnNotFoundError):
        pl.scan_vortex_ipc(str(p)).filter(pl.col("nope") == 1).collect()
