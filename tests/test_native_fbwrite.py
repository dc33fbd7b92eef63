"""The native flatbuffer builders of the writer (``_native.array_fb``, ``_native.message_fb``)
against the Python references (``ipc.schema.encode_array_fb_py``,
``encode_message_header_py``): the same bytes, byte for byte, for generated trees and
headers (every field present or absent, nesting, shared vtables, buffers that must grow)
and for whole streams written with the native core on and off."""

from __future__ import annotations

import decimal
import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io import _native_glue as ng
from vortex_io._ipc.schema import (
    FlatNode,
    MessageType,
    decode_message_header_py,
    encode_array_fb_py,
    encode_message_header_py,
)
from vortex_io._metadata import Metadata
from vortex_io._stats import ArrayStats
from vortex_io.integrity import CRC_KEY, RECORD_PLACEHOLDER

from .native_util import NATIVE

pytestmark = pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")

u64 = st.integers(0, 2**64 - 1)
opt_bool = st.none() | st.booleans()
stats = st.builds(
    ArrayStats,
    min=st.none() | st.binary(max_size=24), min_exact=st.booleans(),
    max=st.none() | st.binary(max_size=24), max_exact=st.booleans(),
    sum=st.none() | st.binary(max_size=24),
    is_sorted=opt_bool, is_strict_sorted=opt_bool, is_constant=opt_bool,
    null_count=st.none() | u64, uncompressed_size_in_bytes=st.none() | u64,
    nan_count=st.none() | u64)


def _node(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(FlatNode, encoding=st.integers(0, 40), metadata=st.binary(max_size=40),
                     buffers=st.lists(st.integers(0, 2**16 - 1), max_size=5),
                     children=children, stats=st.none() | stats)


nodes = st.recursive(_node(st.just([])), lambda kids: _node(st.lists(kids, max_size=4)),
                     max_leaves=24)
specs = st.lists(st.tuples(st.integers(0, 2**16 - 1), st.integers(0, 16), st.integers(0, 2**32 - 1)),
                 max_size=12)


@settings(max_examples=400, deadline=None)
@given(nodes, specs)
def test_array_flatbuffer_is_the_reference_bytes(root: FlatNode, buffers: list) -> None:
    assert ng.native().array_fb(root, buffers) == encode_array_fb_py(root, buffers)


def test_a_large_tree_grows_the_buffer_the_same_way() -> None:
    # far past the builders' 1 KiB start: every growth step of both builders is taken
    leaf = FlatNode(3, b"m" * 300, [1, 2], [], ArrayStats(min=b"\x01" * 20, max=b"\x02",
                                                         null_count=0, is_sorted=True))
    root = FlatNode(1, b"", [], [FlatNode(2, bytes(range(256)) * 3, [i], [leaf] * 5, None)
                                 for i in range(60)], ArrayStats(nan_count=7))
    buffers = [(i % 8, i % 17, i * 1000) for i in range(500)]
    out = ng.native().array_fb(root, buffers)
    assert len(out) > 100_000
    assert out == encode_array_fb_py(root, buffers)


text = st.text(max_size=12)
metadata = st.none() | st.lists(st.tuples(text, st.binary(max_size=20)), max_size=5)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(list(MessageType)), u64, st.integers(0, 2**32 - 1),
       st.lists(text, max_size=6), st.integers(0, 16), metadata,
       st.none() | st.binary(min_size=len(RECORD_PLACEHOLDER), max_size=len(RECORD_PLACEHOLDER)))
def test_message_header_is_the_reference_bytes(mtype, body_size, rows, encodings, align,
                                               pairs, record) -> None:
    md = Metadata(dict(pairs)) if pairs else None
    ref = encode_message_header_py(mtype, body_size, row_count=rows, encodings=encodings,
                                   alignment_exponent=align, metadata=md, record=record)
    out = ng.native().message_fb(int(mtype), body_size, rows, encodings, align,
                                 list(md.items()) if md else None, record, CRC_KEY)
    assert out == ref
    h = decode_message_header_py(memoryview(out))
    assert (h.type, h.body_size) == (mtype, body_size)


def test_bad_input_is_an_error_not_truncated() -> None:
    nat = ng.native()
    with pytest.raises(TypeError, match="row_count"):
        nat.message_fb(1, 0, 2**32, [], 0, None, None, CRC_KEY)  # past u32
    with pytest.raises(TypeError):  # the reference refuses it too
        encode_message_header_py(MessageType.ARRAY, 0, row_count=2**32)
    with pytest.raises(ValueError, match="message type"):
        nat.message_fb(7, 0, 0, [], 0, None, None, CRC_KEY)
    with pytest.raises(TypeError, match=r"FlatNode\.encoding"):
        nat.array_fb(FlatNode(2**16, b"", [], [], None), [])  # past u16
    with pytest.raises(TypeError, match="buffer length"):
        nat.array_fb(FlatNode(1, b"", [], [], None), [(0, 0, 2**32)])
    deep = FlatNode(1, b"", [], [], None)
    for _ in range(1100):
        deep = FlatNode(1, b"", [], [deep], None)
    with pytest.raises(ValueError, match="deeper than 1024"):
        nat.array_fb(deep, [])


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(5)
    return pa.table({
        "i": pa.array(rng.integers(0, 1000, n)), "f": pa.array(rng.random(n)),
        "s": pa.array(rng.choice(["a", "bb", "ccc", None], n)), "b": pa.array(rng.random(n) > 0.5),
        "l": pa.array([[1, 2]] * n), "t": pa.array(rng.integers(0, 10**6, n)).cast(pa.timestamp("us")),
        "d": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(0, 10**5, n)], pa.decimal128(12, 2)),
    })


@pytest.mark.parametrize("kw", [{}, {"compress": False}, {"integrity": True},
                                {"metadata": {"k": "v", "empty": b""}, "chunk_rows": 3000},
                                {"chunk_rows": 1000, "integrity": True, "compress": False}])
def test_streams_written_with_either_core_are_identical(kw: dict) -> None:
    t = _table(20_000)

    def write() -> bytes:
        buf = io.BytesIO()
        vio.write_ipc(buf, t, **kw)
        return buf.getvalue()

    native = write()
    with ng.use_native(False):
        reference = write()
    assert native == reference
    assert vio.read_table(native).equals(t)
