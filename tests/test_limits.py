"""Bounded resources, truncation and transport (issue 8).

* ``ReaderLimits`` defaults are what README documents, and every expansion an encoding can
  claim (a constant, sequence, run-end, dictionary, sparse fill, FSST/OnPair lengths,
  bit-packed length, a struct of many columns) is refused with ``LimitExceededError``
  before it is allocated. Hostile inputs run in a ``fuzz.sandbox.Sandbox`` whose address
  space is bounded, so an attempt to allocate shows up as a ``"memory"`` outcome instead
  of passing unnoticed.
* Arrays carry the limits they were read with: decoding them later (``to_arrow()``)
  checks against those limits, not the defaults.
* A stream cut at any byte is either a prefix of whole messages (read without error) or a
  ``TruncatedStreamError`` whose offset is the cut; a pipe delivering one byte at a time or
  stalling yields the same batches; a writer that dies or raises leaves whole messages.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from fuzz.sandbox import Sandbox
from tests.vx_util import our_array_stream, split_messages
from vortex_io import dtype as dt
from vortex_io._proto import ProtoWriter
from vortex_io.encodings._bitpacked import bitpacked_array
from vortex_io.encodings._constant import constant_array
from vortex_io.encodings._dict import dict_array
from vortex_io.encodings._for import for_array
from vortex_io.encodings._fsst import fsst_encode
from vortex_io.encodings._onpair import onpair_encode
from vortex_io.encodings._runend import runend_array
from vortex_io.encodings._sequence import sequence_array
from vortex_io.encodings._sparse import sparse_array
from vortex_io.encodings._struct import struct_array

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOUR_BILLION = 4_000_000_000
MiB = 1 << 20


# -- defaults ------------------------------------------------------------------------------


def _readme_limits() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Errors and limits", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `(max_\w+)` \| ([^|]+?) \|", section, flags=re.M))


def _parse_size(s: str) -> int:
    s = s.replace(",", "").replace("\u00a0", " ").strip()
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB|GiB)?", s)
    if m:
        return int(m.group(1)) << {None: 0, "KiB": 10, "MiB": 20, "GiB": 30}[m.group(2)]
    m = re.fullmatch(r"2\*\*(\d+)\s*-\s*1", s.replace(" ", ""))
    assert m, f"README limit value {s!r} is not a size"
    return 2 ** int(m.group(1)) - 1


def test_readme_documents_the_default_limits():
    documented = _readme_limits()
    fields = {f.name for f in dataclasses.fields(vio.ReaderLimits)}
    assert set(documented) == fields
    d = vio.ReaderLimits()
    for name, text in documented.items():
        assert _parse_size(text) == getattr(d, name), name


def test_defaults_bound_one_batch_to_half_a_gib():
    d = vio.ReaderLimits()
    assert d.max_decoded_bytes <= 512 * MiB
    assert d.max_body_bytes <= 512 * MiB
    assert d.max_header_bytes <= 16 * MiB
    u = vio.ReaderLimits.unlimited()
    assert u.max_decoded_bytes > d.max_decoded_bytes and u.max_body_bytes > d.max_body_bytes


def _nested(depth: int) -> pa.Array:
    a = pa.array([1, 2, 3])
    for i in range(depth):
        a = pa.StructArray.from_arrays([a], names=[f"l{i}"])
    return a


# (limit, a value the stream exceeds, a value it fits, the stream)
EACH_LIMIT = {
    "max_header_bytes": (200, 4096, lambda: _plain(pa.array([1, 2, 3]), {"k": "v" * 300})),
    "max_body_bytes": (1000, 4096, lambda: _plain(pa.array(np.arange(300)))),
    "max_buffers": (2, 4, lambda: _plain(pa.table({"a": [1], "b": [2], "c": [3]}))),
    "max_depth": (2, 5, lambda: _plain(_nested(4))),
    "max_nodes": (3, 10, lambda: _plain(pa.table({f"c{i}": [i] for i in range(5)}))),
    "max_rows_per_message": (10, 11, lambda: _plain(pa.array(np.arange(11)))),
    "max_decoded_bytes": (80, 88, lambda: _plain(pa.array(np.arange(11)))),
}


def _plain(data, metadata=None) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, data, compress=False, metadata=metadata)
    return buf.getvalue()


@pytest.mark.parametrize("field", sorted(EACH_LIMIT))
def test_each_limit_is_enforced(field):
    over, fits, make = EACH_LIMIT[field]
    data = make()
    with pytest.raises(vio.LimitExceededError):
        with vio.StreamReader(data, limits=vio.ReaderLimits(**{field: over})) as r:
            for b in r:
                b.array.to_arrow()
    with vio.StreamReader(data, limits=vio.ReaderLimits(**{field: fits})) as r:
        assert sum(len(b.array.to_arrow()) for b in r) > 0
    assert set(EACH_LIMIT) == {f.name for f in dataclasses.fields(vio.ReaderLimits)}


def test_a_remembered_dtype_still_obeys_a_stricter_depth_limit():
    """Dtypes are parsed once per process per flatbuffer and depth limit: reading a stream
    with a permissive limit does not let a stricter one through later, nor the reverse."""
    over, fits, make = EACH_LIMIT["max_depth"]
    data = make()
    for _ in range(2):
        with vio.StreamReader(data, limits=vio.ReaderLimits(max_depth=fits)) as r:
            assert r.dtype == vio.StreamReader(data).dtype
        with pytest.raises(vio.LimitExceededError, match="DType nesting deeper than 2"):
            vio.StreamReader(data, limits=vio.ReaderLimits(max_depth=over))


# -- expansions are refused before allocation ------------------------------------------------


def _long_string_values(n_bytes: int) -> vio.Array:
    return vio.array(pa.array(["x" * n_bytes]))


def _with_huge_lengths(arr: vio.Array, child: int) -> vio.Array:
    """An FSST/OnPair array whose uncompressed-lengths child claims 2**31 bytes a row."""
    n = len(arr)
    kids = list(arr.children)
    kids[child] = constant_array(2**31, n, dt.uint32())
    if arr.encoding == "vortex.fsst":
        meta = ProtoWriter().varint(1, int(dt.PType.U32)).varint(
            2, int(arr.meta.codes_offsets_ptype)).finish()
    else:
        from vortex_io._proto import parse

        f = parse(arr.metadata)
        w = ProtoWriter().varint(1, int(dt.PType.U32))
        for num in range(2, 8):
            w.varint(num, f.get_int(num), always=num in (2, 3, 4))
        meta = w.finish()
    return vio.Array(arr.encoding, arr.dtype, n, metadata=meta, buffers=arr.buffers,
                     children=kids)


STRS = pa.array([f"user{i % 17}@example.com" for i in range(300)])

HOSTILE = {
    "constant_i64": lambda: constant_array(7, FOUR_BILLION, dt.int64()),
    "constant_long_string": lambda: constant_array("x" * MiB, 2000, dt.Utf8()),
    "sequence_i64": lambda: sequence_array(0, 3, FOUR_BILLION, dt.int64()),
    "runend_i64": lambda: runend_array(vio.array(np.array([FOUR_BILLION], np.uint64)),
                                       vio.array(np.array([1], np.int64))),
    "runend_long_string": lambda: runend_array(vio.array(np.array([2000], np.uint32)),
                                               _long_string_values(MiB)),
    "dict_i64": lambda: dict_array(constant_array(0, FOUR_BILLION, dt.uint8()),
                                   vio.array(np.array([5], np.int64))),
    "dict_long_string": lambda: dict_array(vio.array(np.zeros(2000, np.uint8)),
                                           _long_string_values(MiB)),
    "sparse_i64": lambda: sparse_array(vio.array(np.array([3], np.uint64)),
                                       vio.array(np.array([9], np.int64)), FOUR_BILLION, 0,
                                       dt.int64(True)),
    "sparse_long_fill": lambda: sparse_array(vio.array(np.array([3], np.uint16)),
                                             vio.array(pa.array(["a"])), 2000, "x" * MiB,
                                             dt.Utf8(True)),
    "for_over_constant": lambda: for_array(constant_array(1, FOUR_BILLION, dt.int64()), 10),
    "bitpacked_length": lambda: bitpacked_array(np.zeros(1024 // 8 * 3, np.uint8), dt.uint16(),
                                                FOUR_BILLION, 3),
    "fsst_lengths": lambda: _with_huge_lengths(fsst_encode(vio.array(STRS)), 0),
    "onpair_lengths": lambda: _with_huge_lengths(onpair_encode(vio.array(STRS)), 3),
    "struct_of_many_columns": lambda: struct_array(
        dt.Struct([f"c{i}" for i in range(200)], [dt.int64()] * 200), 1_000_000,
        [constant_array(i, 1_000_000, dt.int64()) for i in range(200)]),
}


@pytest.fixture(scope="module")
def sandbox():
    # 768 MiB of address space beyond start-up: any attempt to materialize a hostile
    # expansion (>= 1 GiB) fails inside the worker and is reported as "memory"
    with Sandbox(memory_limit=768 * MiB, time_limit=5.0, limits="default") as sb:
        yield sb


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_expansion_is_refused_before_allocation(sandbox, name):
    stream = our_array_stream(HOSTILE[name]())
    assert len(stream) < 2 * MiB + 4096  # the input itself is small
    res = sandbox.run(stream)
    assert res.outcome == "LimitExceededError", (name, res)


@pytest.mark.parametrize("name", ["constant_i64", "sequence_i64", "dict_i64", "sparse_i64",
                                  "runend_i64", "struct_of_many_columns"])
def test_expansion_error_names_the_limit(name):
    with pytest.raises(vio.LimitExceededError, match="over the limit of 536870912") as ei:
        with vio.StreamReader(our_array_stream(HOSTILE[name]())) as r:
            for b in r:
                b.array.to_arrow()
    assert ei.value.message_index == 1


def test_bitpacked_length_beyond_its_buffer_is_malformed():
    # within the decoded-size limit, but the packed words cover only 1024 rows
    a = bitpacked_array(np.zeros(1024 // 8 * 3, np.uint8), dt.uint16(), 5000, 3)
    with pytest.raises(vio.MalformedStreamError):
        vio.read_ipc(our_array_stream(a)).to_arrow()


def test_the_same_inputs_decode_when_small():
    """The hostile builders are ordinary arrays: at a sane size they decode exactly."""
    a = vio.read_ipc(our_array_stream(constant_array(7, 1000, dt.int64())))
    assert a.to_pylist() == [7] * 1000
    d = vio.read_ipc(our_array_stream(dict_array(vio.array(np.zeros(20, np.uint8)),
                                                 _long_string_values(1000))))
    assert d.to_pylist() == ["x" * 1000] * 20
    s = vio.read_ipc(our_array_stream(sparse_array(vio.array(np.array([3], np.uint16)),
                                                   vio.array(pa.array(["a"])), 6, "zz",
                                                   dt.Utf8(True))))
    assert s.to_pylist() == ["zz", "zz", "zz", "a", "zz", "zz"]


# -- the reader's limits travel with its arrays ------------------------------------------------


def _dict_of_long_strings(n_codes: int, n_bytes: int) -> bytes:
    return our_array_stream(dict_array(vio.array(np.zeros(n_codes, np.uint8)),
                                       _long_string_values(n_bytes)))


def test_arrays_carry_the_limits_they_were_read_with():
    lim = vio.ReaderLimits(max_decoded_bytes=100_000)
    with vio.StreamReader(_dict_of_long_strings(50, 10_000), limits=lim) as r:
        (b,) = list(r)
    assert b.array.limits is lim
    assert all(c.limits is lim for c in b.array.children)
    # reading is lazy and cheap; decoding 50 x 10 KB = 500 KB is over this reader's limit
    with pytest.raises(vio.LimitExceededError, match="over the limit of 100000"):
        b.array.to_arrow()
    # slices keep them (scan slices batches for offset/limit)
    assert b.array.slice(0, 40).limits is lim
    with pytest.raises(vio.LimitExceededError, match="over the limit of 100000"):
        b.array.slice(0, 40).to_arrow()
    assert b.array.slice(0, 5).to_arrow().to_pylist() == ["x" * 10_000] * 5
    # the same stream under the default limits decodes
    assert vio.read_ipc(_dict_of_long_strings(50, 10_000)).to_pylist() == ["x" * 10_000] * 50
    assert vio.array([1, 2]).limits == vio.ReaderLimits()  # built in memory: defaults


@pytest.mark.parametrize("enc", [fsst_encode, onpair_encode])
def test_string_decompression_uses_the_reader_limits(enc):
    data = our_array_stream(enc(vio.array(STRS)))
    total = sum(len(s) for s in STRS.to_pylist())
    with vio.StreamReader(data, limits=vio.ReaderLimits(max_decoded_bytes=total - 1)) as r:
        (b,) = list(r)
    with pytest.raises(vio.LimitExceededError):
        b.array.to_arrow()
    with vio.StreamReader(data, limits=vio.ReaderLimits(max_decoded_bytes=total + 4096)) as r:
        assert r.read_all().to_pylist() == STRS.to_pylist()


def test_scan_passes_its_limits_to_decoding():
    data = _dict_of_long_strings(50, 10_000)
    with pytest.raises(vio.LimitExceededError):
        vio.scan(data, limits=vio.ReaderLimits(max_decoded_bytes=100_000)).to_arrow()
    with pytest.raises(vio.LimitExceededError):
        vio.scan(data, limit=40, limits=vio.ReaderLimits(max_decoded_bytes=100_000)).to_arrow()
    assert vio.scan(data).to_arrow().num_rows == 50


# -- truncation ----------------------------------------------------------------------------------


def _multi_message_stream(rows: int = 600, chunk: int = 150, wide: bool = True) -> bytes:
    rng = np.random.default_rng(3)
    cols = {
        "i": rng.integers(0, 1000, rows),
        "s": pa.array([["alpha", "beta", None, "gamma-long-string"][k]
                       for k in rng.integers(0, 4, rows)]),
    }
    if wide:
        cols["f"] = np.round(rng.normal(10, 2, rows), 2)
        cols["r"] = np.repeat(np.arange(rows // 50), 50)
    t = pa.table(cols)
    buf = io.BytesIO()
    vio.write_ipc(buf, t, chunk_rows=chunk, metadata={"k": "v"})
    return buf.getvalue()


def test_every_cut_offset_is_detected_with_its_offset():
    data = _multi_message_stream(90, 30, wide=False)  # small: every offset of it is cut
    parts = split_messages(data)
    assert len(parts) == 4
    assert {e for m in parts[1:] for e in _encodings(m, parts[0])} - {
        "vortex.struct", "vortex.primitive"}, "the stream should be compressed"
    bounds = np.cumsum([0] + [len(p) for p in parts])
    full = [b.to_arrow() for b in vio.StreamReader(data)]
    for cut in range(len(data)):
        prefix = data[:cut]
        k = int(np.searchsorted(bounds, cut, side="right")) - 1  # whole messages before cut
        if cut == bounds[k]:  # exactly between messages: a shorter, complete stream
            if k == 0:
                with pytest.raises(vio.MalformedStreamError, match="empty"):
                    vio.StreamReader(prefix)
                continue
            got = [b.to_arrow() for b in vio.StreamReader(prefix)]
            assert got == full[: k - 1]
            continue
        with pytest.raises(vio.TruncatedStreamError) as ei:
            with vio.StreamReader(prefix) as r:
                for _b in r:
                    pass
        assert ei.value.offset == cut, cut
        assert ei.value.message_index == k, cut


def _encodings(msg: bytes, dtype_msg: bytes) -> set[str]:
    from fuzz.corpus import encodings_of

    return encodings_of(dtype_msg + msg)


# -- transport: trickling, stalling, and writers that stop -----------------------------------------


class _Trickle(io.RawIOBase):
    """A file object that returns at most ``chunk`` bytes a read and stalls now and then."""

    def __init__(self, data: bytes, chunk: int = 1, stall_every: int = 0) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._chunk = chunk
        self._stall_every = stall_every
        self.reads = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        self.reads += 1
        if self._stall_every and self.reads % self._stall_every == 0:
            time.sleep(0.002)
        n = min(len(b), self._chunk, len(self._data) - self._pos)
        b[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


def _batches(src) -> list:
    with vio.StreamReader(src) as r:
        return [(b.index, b.offset, dict(b.metadata), b.to_arrow()) for b in r]


def test_one_byte_at_a_time_yields_the_same_batches():
    data = _multi_message_stream()
    want = _batches(data)
    src = _Trickle(data, chunk=1)
    assert _batches(src) == want
    assert src.reads >= len(data)


def test_os_pipe_with_stalls_yields_the_same_batches():
    data = _multi_message_stream()
    want = _batches(data)
    r_fd, w_fd = os.pipe()

    def feed() -> None:
        with os.fdopen(w_fd, "wb", buffering=0) as w:
            pos = 0
            rng = np.random.default_rng(0)
            while pos < len(data):
                k = int(rng.choice([1, 1, 3, 7, 64, 700]))
                w.write(data[pos : pos + k])
                pos += k
                if rng.random() < 0.02:
                    time.sleep(0.01)  # the reader sees a stall, then more bytes

    t = threading.Thread(target=feed)
    t.start()
    with os.fdopen(r_fd, "rb", buffering=0) as r:
        got = _batches(r)
    t.join()
    assert got == want


def test_exception_inside_the_writer_leaves_whole_messages():
    t = pa.table({"x": np.arange(100), "s": [str(i) for i in range(100)]})
    buf = io.BytesIO()
    with pytest.raises(RuntimeError, match="producer failed"):
        with vio.StreamWriter(buf, t.schema, compress=True) as w:
            w.write(t.slice(0, 40))
            w.write(t.slice(40, 40))
            raise RuntimeError("producer failed")
    got = vio.StreamReader(buf.getvalue()).read_arrow()
    assert got.equals(t.slice(0, 80))


_WRITER = r"""
import sys, numpy as np, pyarrow as pa, vortex_io as vio
t = pa.table({"x": np.arange(1000), "s": [f"v{i % 13}" for i in range(1000)]})
out = open(sys.argv[1], "wb", buffering=0)
with vio.StreamWriter(out, t.schema, compress=True) as w:
    for i in range(10):
        w.write(t.slice(100 * i, 100))
        print(i, flush=True)
        sys.stdin.readline()  # wait for the parent before the next message
"""


def test_writer_process_killed_between_messages_leaves_a_readable_prefix(tmp_path):
    path = tmp_path / "s.vortex"
    p = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert p.stdout is not None and p.stdin is not None
    for i in range(3):
        assert p.stdout.readline().strip() == str(i)
        if i < 2:
            p.stdin.write("\n")
            p.stdin.flush()
    p.send_signal(signal.SIGKILL)
    p.wait()
    got = vio.StreamReader(str(path)).read_arrow()
    assert got.num_rows == 300
    assert got.column("x").to_pylist() == list(range(300))
    # and a cut inside the next message is reported where the bytes end
    data = path.read_bytes()
    with pytest.raises(vio.TruncatedStreamError) as ei:
        vio.read_ipc(data + data[-37:-20]).to_arrow()
    assert ei.value.offset == len(data) + 17
