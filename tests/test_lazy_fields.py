"""A scan builds a batch's fields from the header on first use (``LazyChildren``): pruned
batches and unprojected columns are never built, and errors in what is used are still
located (message index, offset)."""

from __future__ import annotations

import io
import struct

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from fuzz.wire import parse_stream
from vortex_io._array import ArrayParts, LazyChildren
from vortex_io._errors import MalformedStreamError
from vortex_io.expr import col


def _xy_stream(compress: bool) -> tuple[pa.Table, bytes]:
    """Columns x and y over 4 batches of 1024 rows."""
    t = pa.table({"x": np.arange(4096, dtype=np.int64), "y": np.arange(4096, dtype=np.int64) * 2})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, chunk_rows=1024, compress=compress)
    return t, buf.getvalue()


@pytest.fixture
def root_builds(monkeypatch, reference_path) -> list[str]:
    """Records every field of a batch's root node as it is built (by the numpy reference
    path: the native core builds its own trees, see tests/test_native_scan.py)."""
    built: list[str] = []
    orig = ArrayParts.child

    def spy(self, i, dtype, length):
        if self.depth == 0:
            built.append(self.encoding_id)
        return orig(self, i, dtype, length)

    monkeypatch.setattr(ArrayParts, "child", spy)
    return built


def _bad_y_stream() -> tuple[pa.Table, bytes]:
    """x and y over 4 canonical batches; y's buffer in message 3 is 8 bytes short."""
    t, good = _xy_stream(compress=False)
    data = bytearray(good)
    lengths = [f for f in parse_stream(bytes(data))[3].fields if f.what == "buffer length"]
    struct.pack_into("<I", data, lengths[1].pos, 1024 * 8 - 8)  # buffer 1: y's values
    return t, bytes(data)


def test_unprojected_columns_are_never_built():
    t, data = _bad_y_stream()
    assert vio.scan(data, columns=["x"]).to_arrow().equals(t.select(["x"]))
    with pytest.raises(MalformedStreamError) as ei:
        vio.scan(data).to_arrow()
    assert ei.value.message_index == 3 and "vortex.primitive buffer" in str(ei.value)
    # the plain reader builds every field when it reads a batch
    with pytest.raises(MalformedStreamError):
        list(vio.StreamReader(data))


def test_pruned_batches_are_not_built(root_builds):
    """Four compressed batches, filter x < 1000 (first batch only): the pruned batches
    build x alone (for its statistics), the kept one builds x and y."""
    t, data = _xy_stream(compress=True)
    built = root_builds
    s = vio.scan(data, filter=col("x") < 1000)
    got = s.to_arrow()
    assert got.equals(t.filter(pa.compute.less(t["x"], 1000)))
    assert s.stats.chunks_pruned == 3
    assert len(built) == 3 * 1 + 2
    built.clear()
    list(vio.StreamReader(data))  # the plain reader: every field of every batch
    assert len(built) == 4 * 2


def test_the_reader_seams_a_scan_uses(tmp_path, root_builds):
    """What a scan needs from a reader is public: ``lazy_fields=``, ``bytes_consumed`` and
    ``source_name``."""
    t, data = _xy_stream(compress=False)
    path = tmp_path / "xy.vxipc"
    path.write_bytes(data)
    with vio.StreamReader(str(path), lazy_fields=True) as r:
        assert r.source_name == str(path)
        header = r.bytes_consumed
        assert 0 < header < len(data)
        root_builds.clear()
        batches = list(r)
        assert r.bytes_consumed == len(data)
    assert root_builds == []  # nothing used, nothing built
    assert batches[2].array.field("y").to_pylist() == t.column("y").to_pylist()[2048:3072]
    assert len(root_builds) == 1  # one field of one batch: the one used
    with vio.StreamReader(data) as r:
        assert r.source_name is None
        assert not isinstance(next(iter(r)).array.children, LazyChildren)


def test_lazy_children_behave_like_a_tuple():
    t = pa.table({"a": [1, 2], "b": ["x", "y"], "c": [1.5, None]})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=False)
    r = vio.StreamReader(buf.getvalue(), lazy_fields=True)
    arr = next(iter(r)).array
    kids = arr.children
    assert isinstance(kids, LazyChildren) and len(kids) == 3 and "0/3 built" in repr(kids)
    assert kids[-1] is kids[2] and kids[1:] == (kids[1], kids[2])
    assert [k.dtype for k in kids] == [k.dtype for k in vio.read_ipc(buf.getvalue()).children]
    with pytest.raises(IndexError):
        kids[3]
    assert arr.field("b").to_pylist() == ["x", "y"]
    assert arr.to_arrow().equals(t.to_batches()[0].to_struct_array())


def test_batches_the_filter_rejects_build_only_the_filter_columns(root_builds):
    """Canonical batches carry no statistics (nothing is pruned): a batch where the filter
    selects no row still builds and evaluates x, but never builds y."""
    _, data = _xy_stream(compress=False)
    built = root_builds
    s = vio.scan(data, filter=col("x") == 5)
    got = s.to_arrow()
    assert got.to_pylist() == [{"x": 5, "y": 10}]
    assert s.stats.chunks == 4 and s.stats.chunks_pruned == 0 and s.stats.rows_returned == 1
    assert len(built) == 4 + 1
    # an empty result keeps the schema
    empty = vio.scan(data, filter=col("x") == -1).to_arrow()
    assert empty.num_rows == 0 and empty.schema == got.schema


def test_background_checks_is_a_public_reader_setting():
    """``StreamReader.background_checks`` (what the scan sets for its threads): off by
    default, settable, and the batches are the same with it on."""
    t = pa.table({"x": np.arange(200_000, dtype=np.int64)})
    sink = io.BytesIO()
    vio.write_ipc(sink, t, chunk_rows=50_000, integrity=True)
    r = vio.StreamReader(sink.getvalue())
    assert r.background_checks is False
    r.background_checks = True
    assert r.background_checks is True
    assert pa.Table.from_batches([b.to_arrow() for b in r]).equals(t)
