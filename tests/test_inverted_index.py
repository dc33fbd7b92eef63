"""The InvertedIndex encoding (``vortex_io.inverted_index``): round trips, kernels with SQL
null semantics against pyarrow.compute, validation of malformed indexes, and the opt-in
through ``write_ipc(encodings=...)``."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io import compute
from vortex_io._array import Array
from vortex_io._proto import ProtoWriter
from vortex_io.encodings._bool import bool_array
from vortex_io.encodings._primitive import primitive_array
from vortex_io.encodings.inverted_index import InvertedIndex
from vortex_io.expr import col

from .vx_util import our_array_stream

words = st.sampled_from(["London", "Paris", "Tokyo", "", "Zürich", "a" * 30])
columns = st.lists(st.one_of(words, st.none()), max_size=60)


def as_mask(res: pa.Array) -> tuple[list[bool], list[bool]]:
    return (res.fill_null(False).to_pylist(), res.is_valid().to_pylist())


def ours(m: compute.Mask, n: int) -> tuple[list[bool], list[bool]]:
    vals, valid = m
    return vals.tolist(), (valid.tolist() if valid is not None else [True] * n)


@given(columns)
def test_round_trip_through_a_stream(values):
    src = pa.array(values, pa.string())
    a = InvertedIndex.encode(vio.array(src))
    assert a.encoding == "vortex_io.inverted_index"
    assert a.to_arrow().equals(src)
    back = vio.read_ipc(our_array_stream(a))
    assert back.encoding == "vortex_io.inverted_index"
    assert back.to_arrow().equals(src)


@given(columns, words, st.sampled_from(["eq", "neq"]))
def test_compare_matches_pyarrow(values, needle, op):
    src = pa.array(values, pa.string())
    a = vio.read_ipc(our_array_stream(InvertedIndex.encode(vio.array(src))))
    exp = (pc.equal if op == "eq" else pc.not_equal)(src, needle)
    res = a.vtable.compare(a, needle, op)
    assert res is not NotImplemented
    assert ours(res, len(src)) == as_mask(exp)
    assert as_mask(compute.compare(a, needle, op).to_arrow()) == as_mask(exp)


@given(columns, st.lists(words, min_size=1, max_size=4))
def test_is_in_matches_pyarrow(values, needles):
    src = pa.array(values, pa.string())
    a = InvertedIndex.encode(vio.array(src))
    exp = pc.if_else(src.is_valid(), pc.is_in(src, value_set=pa.array(needles)), None)
    assert as_mask(compute.is_in(a, needles).to_arrow()) == as_mask(exp)


def test_rows_equal_to_reads_only_the_postings():
    a = InvertedIndex.encode(["b", "a", None, "b", "c", "b"])
    assert InvertedIndex.rows_equal_to(a, "b").tolist() == [0, 3, 5]
    assert InvertedIndex.rows_equal_to(a, "zzz").tolist() == []
    assert a.to_pylist() == ["b", "a", None, "b", "c", "b"]  # nothing above decoded it
    with pytest.raises(TypeError):
        InvertedIndex.rows_equal_to(vio.array(["x"]), "x")


def test_non_nullable_column_has_no_validity_child():
    a = InvertedIndex.encode(vio.array(pa.array(["x", "y", "x"]), dtype=vio.dtype.Utf8(False)))
    assert len(a.children) == 3
    assert vio.read_ipc(our_array_stream(a)).to_pylist() == ["x", "y", "x"]


def test_registered_through_the_public_registry():
    assert "vortex_io.inverted_index" in vio.registered_encodings()
    assert isinstance(vio.get_encoding("vortex_io.inverted_index"), InvertedIndex)


def test_write_ipc_opt_in_and_scan():
    rng = np.random.default_rng(1)
    cities = np.array(["London", "Paris", "Tokyo", "Lima"])[rng.integers(0, 4, 5000)]
    t = pa.table({"city": pa.array(cities, mask=rng.random(5000) < 0.1), "n": np.arange(5000)})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, encodings={"city": "vortex_io.inverted_index"}, chunk_rows=1024)
    with vio.StreamReader(buf.getvalue()) as r:
        for b in r:
            assert b.array.field("city").encoding == "vortex_io.inverted_index"
    e = col("city").is_in(["Paris", "Lima"]) & (col("n") > 100)
    got = vio.scan(buf.getvalue(), filter=e).to_arrow()
    exp = t.filter(pc.field("city").isin(["Paris", "Lima"]) & (pc.field("n") > 100))
    assert got.equals(exp)
    with pytest.raises(KeyError):
        vio.write_ipc(io.BytesIO(), t, encodings={"nope": "vortex_io.inverted_index"})
    with pytest.raises(ValueError, match="no encoder"):
        vio.write_ipc(io.BytesIO(), t, encodings={"city": "vortex.nonexistent"})


# -- malformed indexes are rejected when read ------------------------------------------------


def build(dictionary, offsets, rows, n, validity=None, card=None, npost=None) -> bytes:
    children = [vio.array(pa.array(dictionary, pa.string()), dtype=vio.dtype.Utf8(False)),
                primitive_array(np.array(offsets, dtype=np.uint32)),
                primitive_array(np.array(rows, dtype=np.uint32))]
    if validity is not None:
        children.append(bool_array(np.array(validity)))
    meta = (ProtoWriter().varint(1, len(dictionary) if card is None else card)
            .varint(2, len(rows) if npost is None else npost).finish())
    arr = Array("vortex_io.inverted_index", vio.dtype.Utf8(validity is not None), n,
                metadata=meta, children=children)
    return our_array_stream(arr)


def test_a_valid_handmade_index_reads():
    assert vio.read_ipc(build(["a", "b"], [0, 2, 3], [0, 2, 1], 3)).to_pylist() == ["a", "b", "a"]
    got = vio.read_ipc(build(["a"], [0, 1], [1], 2, validity=[False, True])).to_pylist()
    assert got == [None, "a"]


@pytest.mark.parametrize(
    "args, message",
    [
        ((["a", "b"], [1, 2, 3], [0, 2, 1], 3), "offsets must rise from 0"),
        ((["a", "b"], [0, 2, 2], [0, 2], 3), "has no rows|cover every"),
        ((["a", "b"], [0, 2, 3], [2, 0, 1], 3), "not sorted"),
        ((["a", "b"], [0, 2, 3], [0, 0, 1], 3), "not sorted|exactly once"),
        ((["a", "a"], [0, 2, 3], [0, 2, 1], 3), "not unique"),
        ((["a", "b"], [0, 2, 3], [0, 2, 7], 3), "outside"),
        ((["a"], [0, 2], [0, 1], 2, [True, False]), "exactly once"),
    ],
)
def test_malformed_indexes_raise(args, message):
    with pytest.raises(vio.MalformedStreamError, match=message):
        vio.read_ipc(build(*args))


def test_metadata_counts_are_checked_before_use():
    with pytest.raises(vio.MalformedStreamError, match="postings for"):
        vio.read_ipc(build(["a"], [0, 1], [0], 1, npost=5))
