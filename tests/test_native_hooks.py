"""The native core's compute hooks (compare, is_in, is_null, take, validity) on the nested
and temporal encodings' nodes (chunked, masked, bytebool, datetimeparts,
decimal_byte_parts, list, listview, fixed_size_list) against the numpy reference's kernels
(vortex_io.compute): each array is written as a one-message stream, its root node run
through the extension's test-only ``_native.kernel_probe`` (native/src/probe.cpp) and
compared with the reference's kernels on the same message as Python reads it back."""

from __future__ import annotations

import decimal
import itertools

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio
from tests.native_util import NATIVE, as_bits, stream_of
from vortex_io import _native_glue as ng
from vortex_io import dtype as dt
from vortex_io._array import Array
from vortex_io._arrow import dtype_to_arrow
from vortex_io._ipc.framing import MessageDecoder
from vortex_io._limits import ReaderLimits
from vortex_io._proto import ProtoWriter
from vortex_io.compute._kernels import compare_storage, is_in_storage, is_null_result, take
from vortex_io.compute._numeric import validity
from vortex_io.encodings._bool import bool_array
from vortex_io.encodings._bytebool import bytebool_array
from vortex_io.encodings._chunked import chunked_array
from vortex_io.encodings._constant import constant_array
from vortex_io.encodings._datetimeparts import DATETIMEPARTS, datetimeparts_encode
from vortex_io.encodings._decimal_byte_parts import decimal_byte_parts_encode
from vortex_io.encodings._masked import MASKED
from vortex_io.encodings._primitive import primitive_array

pytestmark = pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")

OPS = ["eq", "neq", "lt", "lte", "gt", "gte"]


@pytest.fixture(scope="module")
def lib():
    """The extension (kernel_probe is test-only: it is not on any reading path)."""
    return ng.native()


def _lit(v):
    """A literal as kernel_probe takes it."""
    if isinstance(v, bool):
        return ("o", v)
    if isinstance(v, int):
        v %= 1 << 128  # (two's complement i128, as the native core holds it)
        hi = v >> 64
        return ("i", hi - (1 << 64) if hi >> 63 else hi, v & ((1 << 64) - 1))
    if isinstance(v, float):
        return ("f", v)
    return ("b", v)


def _bits(b: bytes, n: int) -> np.ndarray | None:
    if not b:
        return None
    return np.unpackbits(np.frombuffer(b, np.uint8), bitorder="little")[:n].astype(bool)


class Native:
    """One array written as a one-message stream, and the native kernels on its root."""

    def __init__(self, lib, arr: Array) -> None:
        dec = MessageDecoder()
        dec.feed(stream_of(arr))
        msgs = list(dec)
        self.dtype = msgs[0].dtype()
        m = msgs[1]
        encs = tuple(m.header.encodings)
        self.args = (ng.dtype_program(self.dtype), list(ng.limits_values(ReaderLimits())), bytes(m.body),
                     m.header.row_count, list(encs), list(ng.known_flags(encs)), [])
        self.lib = lib
        self.array = m.array(self.dtype)  # the reference's node, as read back
        self.handled: dict[str, int] = {}  # kernel: calls the node's own hook answered

    def run(self, kind: str, op: int = 0, lits=(), idx=()):
        r = self.lib.kernel_probe(*self.args, kind, op, [_lit(v) for v in lits], list(idx))
        if r[0] == "err":
            raise ng.error_of(r[1], r[2])
        assert r[0] != "python", f"{kind}: the native core handed the node back to Python"
        assert r[0] == {"take": "col", "validity": "bits"}.get(kind, "mask"), (kind, r)
        if r[-1]:
            self.handled[kind] = self.handled.get(kind, 0) + 1
        return r

    def _mask(self, r) -> pa.Array:
        n = len(self.array)
        vals = r[1] or bytes((n + 7) // 8)
        valid = pa.py_buffer(r[2]) if r[2] else None
        return pa.Array.from_buffers(pa.bool_(), n, [valid, pa.py_buffer(vals)])

    def compare(self, v, op: str) -> pa.Array:
        return self._mask(self.run("compare", OPS.index(op), [v]))

    def is_in(self, vals) -> pa.Array:
        return self._mask(self.run("is_in", 0, vals))

    def is_null(self, negated: bool) -> pa.Array:
        return self._mask(self.run("is_null", int(negated)))

    def take(self, idx) -> pa.Array:
        r = self.run("take", idx=np.asarray(idx, dtype=np.uint32).tolist())
        return pa.Array._import_from_c_capsule(dtype_to_arrow(self.dtype).__arrow_c_schema__(), r[1])

    def validity(self) -> pa.Array:
        n = len(self.array)
        got = _bits(self.run("validity")[1], n)
        return pa.array(np.ones(n, bool) if got is None else got)


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
    for neg in (False, True):
        assert nat.is_null(neg).equals(_mask_arrow(is_null_result(nat.array, negated=neg))), f"is_null {neg}"


def _answered(nat: Native, *kinds: str) -> None:
    """The node's own hooks answered (at least once each) these kernels, not the decode
    fallback."""
    missing = [k for k in kinds if not nat.handled.get(k)]
    assert not missing, f"{nat.array.encoding}: no hook answered {missing} ({nat.handled})"


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
    _answered(nat, "compare", "take", "validity")


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
    _answered(nat, "compare", "take", "validity")
    # parts that could wrap i64: the bounds refuse the shortcut, the fallback decodes
    big = dtp(primitive_array(rng.integers(-(2**40), 2**40, n)),
              primitive_array(np.full(n, 2**63, dtype=np.uint64)),
              primitive_array(rng.integers(0, 1000, n).astype(np.uint16)))
    nat = Native(lib, big)
    _check_compare(nat, [0, 12345, -(2**62)])
    _check_take_validity(nat, rng)
    assert "compare" not in nat.handled


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
    _answered(nat, "compare", "is_in", "take", "validity")


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
    _answered(nat, "compare", "is_in", "take", "validity")
    strs = vio.array(pa.array([None if i % 5 == 0 else f"s{i % 13}" for i in range(300)]))
    sv = vio.array(pa.array([f"a view string {i}" for i in range(40)], type=pa.string_view()))
    ch = chunked_array([strs.slice(0, 100), sv, strs.slice(100, 300)], strs.dtype)
    nat = Native(lib, ch)
    _check_compare(nat, ["s3", "a view string 7", ""])
    _check_is_in(nat, [["s1", "s2"], ["a view string 39"]])
    _check_take_validity(nat, rng)
    _answered(nat, "compare", "is_in", "take", "validity")
    lists = vio.array(pa.array([[i] * (i % 4) if i % 7 else None for i in range(200)]))
    ch = chunked_array([lists.slice(0, 50), lists.slice(50, 200)], lists.dtype)
    nat = Native(lib, ch)
    _check_take_validity(nat, rng)
    _answered(nat, "take", "validity")


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
        _answered(nat, "compare", "is_in", "take", "validity")


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
        for a in (vio.array(arr), vio.array(arr.slice(7, 300))):
            nat = Native(lib, a)
            _check_take_validity(nat, rng)
            # (vortex.listview takes by decoding: it has no take hook)
            _answered(nat, *(["validity"] if nat.array.encoding == "vortex.listview" else ["take", "validity"]))
    b = bytebool_array(rng.integers(0, 3, 300).astype(np.uint8), bool_array(rng.random(300) > 0.2),
                       nullable=True)
    nat = Native(lib, b)
    _check_compare(nat, [True, False])
    _check_take_validity(nat, rng)
    _answered(nat, "validity")


# -- kernel_probe itself -----------------------------------------------------------------------

def test_kernel_probe_refuses_malformed_requests(lib):
    nat = Native(lib, primitive_array(np.arange(10, dtype=np.int32)))
    args = nat.args
    for lits in ([("i", 1)], [("o",)], [("x", 1)], [1], [("f", 1.0, 2.0)]):
        with pytest.raises((ValueError, TypeError)):
            lib.kernel_probe(*args, "compare", 0, lits, [])
    for idx in ([10], [3, 2]):
        with pytest.raises(ValueError):
            lib.kernel_probe(*args, "take", 0, [], idx)
    with pytest.raises(IndexError):
        lib.kernel_probe(*args[:-1], [0], "validity", 0, [], [])
    with pytest.raises(ValueError):
        lib.kernel_probe(*args, "decode", 0, [], [])
    assert lib.kernel_probe(*args, "compare", 0, [("i", 0, 3)], [])[0] == "mask"
