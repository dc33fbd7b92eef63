"""``vortex_io.Metadata`` and per-message custom metadata (issue 2, Build item 4).

A stream written with metadata on every message reads back with identical metadata
(order, duplicates, zero-row batches), and vortex-data 0.93 still decodes those messages.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from tests.vx_util import vx_decode_to_arrow

# -- construction --------------------------------------------------------------------------


def test_from_dict_with_str_and_bytes():
    m = vio.Metadata({"method": "add", b"id": b"\x00\x01", "ünï": "cödé"})
    assert list(m.items()) == [(b"method", b"add"), (b"id", b"\x00\x01"),
                               ("ünï".encode(), "cödé".encode())]
    assert m["method"] == m[b"method"] == b"add"
    assert m["ünï"] == "cödé".encode()


def test_from_pairs_keeps_order_and_duplicates():
    pairs = [("z", "1"), ("a", "2"), ("z", "3"), (b"", b""), ("a", "4")]
    m = vio.Metadata(pairs)
    assert list(m.items()) == [(k.encode() if isinstance(k, str) else k,
                                v.encode() if isinstance(v, str) else v) for k, v in pairs]
    assert len(m) == 5
    assert list(m) == [b"z", b"a", b"z", b"", b"a"]
    assert list(m.keys()) == [b"z", b"a", b"z", b"", b"a"]
    assert list(m.values()) == [b"1", b"2", b"3", b"", b"4"]
    assert b"3" in m.values() and b"9" not in m.values() and len(m.values()) == 5
    assert m.get_all("z") == [b"1", b"3"] and m.get_all(b"a") == [b"2", b"4"]
    assert m.get_all("missing") == []
    assert m["z"] == b"1"  # lookups give the first value
    assert m.to_dict() == {b"z": b"1", b"a": b"2", b"": b""}
    assert vio.Metadata(iter(pairs)) == m  # any iterable of pairs
    assert vio.Metadata(m) is not m and list(vio.Metadata(m).items()) == list(m.items())


def test_from_pyarrow_key_value_metadata():
    kv = pa.KeyValueMetadata([(b"k", b"1"), (b"j", b"x"), (b"k", b"2")])
    m = vio.Metadata(kv)
    assert list(m.items()) == [(b"k", b"1"), (b"j", b"x"), (b"k", b"2")]
    back = m.to_arrow()
    assert isinstance(back, pa.KeyValueMetadata)
    assert list(back.items()) == list(m.items())
    assert back.get_all(b"k") == [b"1", b"2"]
    assert vio.Metadata(pa.KeyValueMetadata({"a": "b"})) == {b"a": b"b"}


def test_bad_construction():
    with pytest.raises(TypeError):
        vio.Metadata({1: "x"})
    with pytest.raises(TypeError):
        vio.Metadata({"x": 1.5})
    with pytest.raises(TypeError):
        vio.Metadata([("a", "b", "c")])
    with pytest.raises(TypeError):
        vio.Metadata(["ab"])


def test_mapping_behaviour():
    m = vio.Metadata([("a", "1"), ("b", "2"), ("a", "3")])
    assert "a" in m and b"b" in m and "c" not in m and 5 not in m
    with pytest.raises(KeyError):
        m["c"]
    assert m.get("c") is None and m.get("c", b"d") == b"d" and m.get("b") == b"2"
    assert (b"a", b"3") in m.items() and (b"a", b"2") not in m.items()
    assert bool(m) and not vio.Metadata() and not vio.Metadata(None) and len(vio.Metadata()) == 0
    with pytest.raises(TypeError):
        m["a"] = b"x"  # read-only
    with pytest.raises(TypeError):
        del m["a"]
    assert "b'a'" in repr(m) and "b'3'" in repr(m)


def test_equality_and_hash():
    a = vio.Metadata([("a", "1"), ("b", "2")])
    # the order between different keys does not matter (like pyarrow.KeyValueMetadata)
    b = vio.Metadata([("b", "2"), ("a", "1")])
    assert a == b and hash(a) == hash(b)
    assert a == {"b": "2", "a": "1"}
    assert a == {b"a": b"1", b"b": b"2"}
    assert pa.KeyValueMetadata(list(a.items())) == pa.KeyValueMetadata(list(b.items()))
    # ... the order of one key's values does, and so do duplicates
    d1 = vio.Metadata([("t", "1"), ("t", "2")])
    d2 = vio.Metadata([("t", "2"), ("t", "1")])
    assert d1 != d2
    assert (pa.KeyValueMetadata(list(d1.items())) == pa.KeyValueMetadata(list(d2.items()))) is False
    assert d1 != {"t": "1"}
    assert a != vio.Metadata([("a", "1")]) and a != {"a": "1", "b": "3"}
    assert a != {1: 2} and a != 5 and a != "ab"
    assert len({a, b, d1, d2}) == 3


# -- streams ---------------------------------------------------------------------------

SCHEMA = pa.schema([("x", pa.int64()), ("s", pa.string())])


def _write(stream_md, batches) -> bytes:
    buf = io.BytesIO()
    with vio.StreamWriter(buf, SCHEMA, metadata=stream_md) as w:
        for t, md in batches:
            assert w.write(t, metadata=md) == 1
    return buf.getvalue()


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"x": pa.array(range(start, start + n), pa.int64()),
                     "s": pa.array([str(i) for i in range(start, start + n)], pa.string())},
                    schema=SCHEMA)


def test_stream_and_batch_metadata_round_trip():
    stream_md = [("app", "demo"), ("tag", "1"), ("tag", "2")]
    batches = [
        (_rows(3), {"request_id": "1", "method": "add"}),
        (_rows(0), [("status", "ok"), ("status", "again"), ("empty", "")]),  # metadata only
        (_rows(2, 3), None),
        (_rows(0), {b"\xff\xfe": b"\x00binary\x00"}),
    ]
    data = _write(stream_md, batches)
    with vio.StreamReader(data) as r:
        assert list(r.metadata.items()) == list(vio.Metadata(stream_md).items())
        got = list(r)
    assert len(got) == 4
    for b, (t, md) in zip(got, batches):
        assert list(b.metadata.items()) == list(vio.Metadata(md).items())
        assert b.num_rows == t.num_rows
        assert pa.Table.from_batches([b.to_arrow()]).equals(t)
    # the decoder sees the same metadata on the raw messages
    dec = vio.MessageDecoder()
    dec.feed(data)
    msgs = list(dec)
    assert [list(m.metadata.items()) for m in msgs] == (
        [list(vio.Metadata(stream_md).items())]
        + [list(vio.Metadata(md).items()) for _, md in batches])


def test_vortex_data_decodes_messages_that_carry_metadata():
    batches = [(_rows(4), {"k": "v", "k2": "v2"}), (_rows(0), {"only": "metadata"}),
               (_rows(3, 10), [("d", "1"), ("d", "2")])]
    data = _write({"stream": "level"}, batches)
    decoded = vx_decode_to_arrow(data)
    assert len(decoded) == 3
    for got, (t, _) in zip(decoded, batches):
        assert got.to_pylist() == t.to_pylist()


def test_batch_to_arrow_has_the_stream_schema_and_its_own_metadata_apart():
    """As a pyarrow.ipc reader gives them: a batch's schema is the stream's (metadata
    included, what read_table keeps); the batch's own metadata is Batch.metadata."""
    data = _write({"s": "1"}, [(_rows(2), {"batch": "b0", "n": "2"}), (_rows(1), None)])
    with vio.StreamReader(data) as r:
        b0, b1 = list(r)
        assert b0.to_arrow().schema == r.schema
    rb = b0.to_arrow()
    assert isinstance(rb, pa.RecordBatch)
    assert rb.schema.metadata == {b"s": b"1"} == b1.to_arrow().schema.metadata
    assert dict(b0.metadata) == {b"batch": b"b0", b"n": b"2"} and not b1.metadata
    assert pa.table(b0).schema.metadata == {b"s": b"1"}


def test_reader_schema_carries_stream_metadata():
    data = _write([("owner", "me"), ("v", "3")], [(_rows(2), {"batch": "x"})])
    with vio.StreamReader(data) as r:
        assert r.schema.metadata == {b"owner": b"me", b"v": b"3"}
        assert r.schema.names == ["x", "s"]
        t = r.read_arrow()
    assert t.schema.metadata == {b"owner": b"me", b"v": b"3"}
    with vio.StreamReader(_write(None, [(_rows(1), None)])) as r:
        assert not r.schema.metadata and not r.metadata


def test_write_ipc_stream_metadata_and_header_limit():
    buf = io.BytesIO()
    vio.write_ipc(buf, _rows(10), metadata={"big": "x" * 5000}, compress=False)
    with vio.StreamReader(buf.getvalue()) as r:
        assert r.metadata["big"] == b"x" * 5000
    # metadata counts towards the header size the reader accepts
    with pytest.raises(vio.LimitExceededError, match="message header of"):
        vio.StreamReader(buf.getvalue(), limits=vio.ReaderLimits(max_header_bytes=1000))


def test_write_metadata_applies_to_every_chunk_of_a_call():
    t = pa.Table.from_batches([_rows(2).to_batches()[0], _rows(3, 2).to_batches()[0]])
    buf = io.BytesIO()
    with vio.StreamWriter(buf, SCHEMA) as w:
        assert w.write(t, metadata={"call": "1"}) == 2
    with vio.StreamReader(buf.getvalue()) as r:
        assert [(b.num_rows, dict(b.metadata)) for b in r] == [(2, {b"call": b"1"}),
                                                               (3, {b"call": b"1"})]


keys = st.one_of(st.text(max_size=8), st.binary(max_size=8))
values = st.one_of(st.text(max_size=20), st.binary(max_size=40))
md_lists = st.lists(st.tuples(keys, values), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(md_lists, st.lists(st.tuples(st.integers(0, 5), md_lists), min_size=0, max_size=5))
def test_metadata_round_trip_property(stream_md, batch_specs):
    batches = [(_rows(n), md) for n, md in batch_specs]
    data = _write(stream_md, batches)
    with vio.StreamReader(data) as r:
        assert list(r.metadata.items()) == list(vio.Metadata(stream_md).items())
        got = [(b.num_rows, list(b.metadata.items())) for b in r]
    assert got == [(t.num_rows, list(vio.Metadata(md).items())) for t, md in batches]
