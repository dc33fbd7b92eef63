"""The native core's compute dispatch (compare, is_in, take, validity) on the nested
encodings' nodes against the numpy reference's kernels (vortex_io.compute), before the
bindings expose a scan: tests/native_hooks.cpp is built with native/src into a small shared
library (cached in build/hooks by the sources' hash) and called through ctypes; results
come back as Arrow C data arrays."""

from __future__ import annotations

import ctypes
import decimal
import fcntl
import glob
import hashlib
import itertools
import os
import shutil
import struct
import subprocess
import tempfile

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from tests.native_util import NATIVE, as_bits, stream_of
from vortex_io import _native_glue as ng
from vortex_io import dtype as dt
from vortex_io.array import Array
from vortex_io.arrow import dtype_to_arrow
from vortex_io.compute.kernels import compare_storage, is_in_storage, take
from vortex_io.compute.numeric import validity
from vortex_io.encodings.bool_ import bool_array
from vortex_io.encodings.bytebool import bytebool_array
from vortex_io.encodings.chunked import chunked_array
from vortex_io.encodings.constant import constant_array
from vortex_io.encodings.datetimeparts import DATETIMEPARTS, datetimeparts_encode
from vortex_io.encodings.decimal_byte_parts import decimal_byte_parts_encode
from vortex_io.encodings.masked import MASKED
from vortex_io.encodings.primitive import primitive_array
from vortex_io.ipc.framing import MessageDecoder
from vortex_io.proto import ProtoWriter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CXX = shutil.which("g++") or shutil.which("c++")

pytestmark = [
    pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)"),
    pytest.mark.skipif(CXX is None, reason="no C++ compiler"),
]

OPS = ["eq", "neq", "lt", "lte", "gt", "gte"]
ERR = {1: vio.MalformedStreamError, 2: vio.TruncatedStreamError, 3: vio.UnsupportedError,
       4: vio.LimitExceededError}


def _build(srcs: list[str], out_dir: str, so: str) -> None:
    if os.path.exists(so):
        return
    from concurrent.futures import ThreadPoolExecutor

    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        def compile_one(src: str) -> str:
            obj = os.path.join(tmp, os.path.basename(src) + ".o")
            subprocess.run([CXX, "-std=c++17", "-O1", "-g0", "-fPIC", "-pthread", "-c",
                            "-I", os.path.join(ROOT, "native", "src"), src, "-o", obj],
                           check=True)
            return obj

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as ex:
            objs = list(ex.map(compile_one, srcs))
        lib_tmp = os.path.join(tmp, "lib.so")
        subprocess.run([CXX, "-shared", "-pthread", *objs, "-o", lib_tmp], check=True)
        for old in glob.glob(os.path.join(out_dir, "libvxhooks-*.so")):
            os.remove(old)
        os.replace(lib_tmp, so)


@pytest.fixture(scope="module")
def lib():
    srcs = sorted(p for p in glob.glob(os.path.join(ROOT, "native", "src", "*.cpp"))
                  if not p.endswith("module.cpp"))
    srcs.append(os.path.join(ROOT, "tests", "native_hooks.cpp"))
    h = hashlib.sha256()
    for p in sorted(srcs + glob.glob(os.path.join(ROOT, "native", "src", "*.h"))):
        with open(p, "rb") as f:
            h.update(f.read())
    out_dir = os.path.join(ROOT, "build", "hooks")
    os.makedirs(out_dir, exist_ok=True)
    so = os.path.join(out_dir, f"libvxhooks-{h.hexdigest()[:16]}.so")
    with open(os.path.join(out_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (one build for every test worker)
        _build(srcs, out_dir, so)
    dll = ctypes.CDLL(so)
    dll.vxh_run.restype = ctypes.c_int
    dll.vxh_run.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p,
                            ctypes.c_size_t]
    return dll


def _str(b: bytes) -> bytes:
    return struct.pack("<I", len(b)) + b


def _lit(v) -> bytes:
    if isinstance(v, bool):
        return b"\x03" + bytes([v])
    if isinstance(v, int):
        return b"\x00" + (v % (1 << 128)).to_bytes(16, "little")
    if isinstance(v, float):
        return b"\x01" + struct.pack("<d", v)
    return b"\x02" + _str(v.encode() if isinstance(v, str) else v)


class Native:
    """One array written as a one-message stream, and the native kernels on its root."""

    def __init__(self, lib, arr: Array) -> None:
        dec = MessageDecoder()
        dec.feed(stream_of(arr))
        msgs = list(dec)
        self.dtype = msgs[0].dtype()
        m = msgs[1]
        self.head = (_str(ng.dtype_program(self.dtype)) + _str(bytes(m.body))
                     + struct.pack("<QI", m.header.row_count, len(m.header.encodings))
                     + b"".join(_str(e.encode()) for e in m.header.encodings)
                     + struct.pack("<i", -1))
        self.lib = lib
        self.array = m.array(self.dtype)  # the reference's node, as read back

    def run(self, op: bytes, *, arrow_type=None):
        req = self.head + op
        out = ctypes.create_string_buffer(80)  # struct ArrowArray
        err = ctypes.create_string_buffer(512)
        rc = self.lib.vxh_run(req, len(req), ctypes.addressof(out), err, 512)
        if rc in ERR:
            raise ERR[rc](err.value.decode())
        assert rc == 0, f"native hook failed ({rc}): {err.value.decode()}"
        return pa.Array._import_from_c(ctypes.addressof(out), arrow_type or pa.bool_())

    def compare(self, v, op: str):
        return self.run(b"C" + bytes([OPS.index(op)]) + _lit(v))

    def is_in(self, vals):
        return self.run(b"I" + struct.pack("<I", len(vals)) + b"".join(_lit(v) for v in vals))

    def take(self, idx):
        idx = np.asarray(idx, dtype=np.uint32)
        return self.run(b"T" + struct.pack("<I", len(idx)) + idx.tobytes(),
                        arrow_type=dtype_to_arrow(self.dtype))

    def validity(self):
        return self.run(b"V")


def _mask_arrow(m) -> pa.Array:
    vals, valid = m
    return pa.array(vals, type=pa.bool_(), mask=None if valid is None else ~valid)


def _check_compare(nat: Native, lits, *, ref_lit=lambda v: v):
    for v in lits:
        for op in OPS:
            got = nat.compare(v, op)
            want = _mask_arrow(compare_storage(nat.array, ref_lit(v), op))
            assert got.equals(want), f"{op} {v}: {got} vs {want}"


def _check_is_in(nat: Native, sets, *, ref_lit=lambda v: v):
    for vals in sets:
        got = nat.is_in(vals)
        want = _mask_arrow(is_in_storage(nat.array, [ref_lit(v) for v in vals]))
        assert got.equals(want), f"IN {vals}"


def _check_take_validity(nat: Native, rng):
    n = len(nat.array)
    for k in (0, 1, n // 3, n):
        idx = np.sort(rng.choice(n, size=min(k, n), replace=False)) if n else np.zeros(0, np.int64)
        got = nat.take(idx)
        ref = take(nat.array, idx.astype(np.int64)).to_arrow()
        if isinstance(ref, pa.ChunkedArray):
            ref = ref.combine_chunks()
        if ref.type != got.type:
            ref = ref.cast(got.type)
        assert as_bits(got).equals(as_bits(ref)), f"take {len(idx)}"
    v = validity(nat.array)
    want = pa.array(np.ones(n, bool) if v is None else v)
    assert nat.validity().equals(want)


# -- vortex.datetimeparts ----------------------------------------------------------------------

@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_datetimeparts_kernels(lib, unit):
    rng = np.random.default_rng(1)
    per_sec = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    day = 86_400 * per_sec
    n = 3000
    vals = rng.integers(-2000, 2000, n) * day + rng.integers(0, day, n)
    ts = pa.array(vals, type=pa.timestamp(unit, "UTC"), mask=rng.random(n) < 0.1)
    a = datetimeparts_encode(vio.array(ts))
    nat = Native(lib, a)
    v0 = int(vals[5])
    lits = [v0, v0 + 1, v0 - 1, int(vals.min()) - 1, int(vals.max()) + 1, 0, -day, 2**63 - 1,
            -(2**63), (int(vals[9]) // day) * day]
    _check_compare(nat, lits)
    _check_is_in(nat, [[v0], [v0, int(vals[7]), 12345], []])
    _check_take_validity(nat, rng)


def test_datetimeparts_kernels_constant_parts_and_wrapping(lib):
    rng = np.random.default_rng(2)
    n = 2000
    d = vio.array(pa.array([0], type=pa.timestamp("ms"))).dtype.with_nullable(True)

    def dtp(days, secs, subs):
        meta = (ProtoWriter().varint(1, int(days.dtype.ptype)).varint(2, int(secs.dtype.ptype))
                .varint(3, int(subs.dtype.ptype)).finish())
        return Array(DATETIMEPARTS, d, n, metadata=meta, children=[days, secs, subs])

    days = primitive_array(rng.integers(-300, 300, n).astype(np.int16), bool_array(rng.random(n) > 0.2),
                           nullable=True)
    whole = dtp(days, constant_array(0, n, dt.uint8()), constant_array(0, n, dt.uint8()))
    nat = Native(lib, whole)
    _check_compare(nat, [0, 86_400_000, 86_400_000 * 7 + 1, -86_400_000 * 299, 10**18])
    _check_take_validity(nat, rng)
    # parts that could wrap i64: the bounds refuse the shortcut, the fallback decodes
    big = dtp(primitive_array(rng.integers(-(2**40), 2**40, n)),
              primitive_array(np.full(n, 2**63, dtype=np.uint64)),
              primitive_array(rng.integers(0, 1000, n).astype(np.uint16)))
    nat = Native(lib, big)
    _check_compare(nat, [0, 12345, -(2**62)])
    _check_take_validity(nat, rng)


# -- vortex.decimal_byte_parts ---------------------------------------------------------------

@pytest.mark.parametrize("precision,scale,ptype", [(5, 2, dt.PType.I16), (10, 2, dt.PType.I32),
                                                   (18, 0, dt.PType.I64), (40, 3, dt.PType.I64)])
def test_decimal_byte_parts_kernels(lib, precision, scale, ptype):
    rng = np.random.default_rng(precision)
    bound = min(10**precision - 1, 2**(8 * dt.PType(ptype).byte_width - 1) - 1, 10**6)
    ints = rng.integers(-bound, bound, 1500)
    typ = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    vals = [None if i % 6 == 0 else decimal.Decimal(int(x)).scaleb(-scale) for i, x in enumerate(ints)]
    a = decimal_byte_parts_encode(vio.array(pa.array(vals, type=typ)), ptype)
    nat = Native(lib, a)

    def ref(v):
        return decimal.Decimal(v).scaleb(-scale)

    lits = [int(ints[1]), int(ints[1]) + 1, 0, -bound - 1, bound + 1, 2**70, -(2**70)]
    _check_compare(nat, lits, ref_lit=ref)
    _check_is_in(nat, [[int(ints[1]), int(ints[2])], [2**70], [0]], ref_lit=ref)
    _check_take_validity(nat, rng)


# -- vortex.chunked ----------------------------------------------------------------------------

def test_chunked_kernels(lib):
    rng = np.random.default_rng(3)
    ints = vio.array(pa.array(rng.integers(-20, 20, 500), mask=rng.random(500) < 0.1))
    cuts = [0, 0, 70, 71, 300, 500]
    chunks = [ints.slice(a, b) for a, b in itertools.pairwise(cuts)]
    chunks[2] = constant_array(None, 1, ints.dtype)
    ch = chunked_array(chunks, ints.dtype)
    nat = Native(lib, ch)
    _check_compare(nat, [0, 5, -21, 20, 2**40])
    _check_is_in(nat, [[1, 2, 3], [100], []])
    _check_take_validity(nat, rng)
    strs = vio.array(pa.array([None if i % 5 == 0 else f"s{i % 13}" for i in range(300)]))
    sv = vio.array(pa.array([f"a view string {i}" for i in range(40)], type=pa.string_view()))
    ch = chunked_array([strs.slice(0, 100), sv, strs.slice(100, 300)], strs.dtype)
    nat = Native(lib, ch)
    _check_compare(nat, ["s3", "a view string 7", ""])
    _check_is_in(nat, [["s1", "s2"], ["a view string 39"]])
    _check_take_validity(nat, rng)
    lists = vio.array(pa.array([[i] * (i % 4) if i % 7 else None for i in range(200)]))
    ch = chunked_array([lists.slice(0, 50), lists.slice(50, 200)], lists.dtype)
    _check_take_validity(Native(lib, ch), rng)


# -- vortex.masked -----------------------------------------------------------------------------

def test_masked_kernels(lib):
    rng = np.random.default_rng(4)
    n = 700
    child = primitive_array(rng.integers(0, 50, n).astype(np.int32))
    for v in (bool_array(rng.random(n) > 0.3), constant_array(False, n, dt.Bool()), None):
        a = Array(MASKED, dt.int32(True), n, children=[child, *([v] if v is not None else [])])
        nat = Native(lib, a)
        _check_compare(nat, [10, 0, 49, -1, 2**40])
        _check_is_in(nat, [[1, 2], [60]])
        _check_take_validity(nat, rng)


# -- lists, bytebool ---------------------------------------------------------------------------

def test_list_kernels(lib):
    rng = np.random.default_rng(5)
    data = [
        pa.array([[f"w{j}" for j in range(i % 4)] if i % 6 else None for i in range(400)]),
        pa.array([[{"a": j} for j in range(i % 3)] for i in range(400)]),
        pa.array([[i, i + 1] if i % 5 else None for i in range(400)], type=pa.list_(pa.int64(), 2)),
        pa.array([[[i % 100]] * 3 for i in range(400)], type=pa.list_(pa.list_(pa.int8()), 3)),
        pa.array([[1, 2], None, [], [3]] * 100, type=pa.list_view(pa.int64())),
        pa.array([[] for _ in range(400)], type=pa.list_(pa.int32(), 0)),
    ]
    for arr in data:
        a = vio.array(arr)
        _check_take_validity(Native(lib, a), rng)
        _check_take_validity(Native(lib, vio.array(arr.slice(7, 300))), rng)
    b = bytebool_array(rng.integers(0, 3, 300).astype(np.uint8), bool_array(rng.random(300) > 0.2),
                       nullable=True)
    nat = Native(lib, b)
    _check_compare(nat, [True, False])
    _check_take_validity(nat, rng)
