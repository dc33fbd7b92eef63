"""CRC-32C: the native kernel (SSE4.2 and the portable tables) and the numpy reference
against published check values and against each other."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vortex_io import _native_glue as ng
from vortex_io.integrity import crc32c, crc32c_reference

NATIVE = ng.enabled()
needs_native = pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")

# RFC 3720 (iSCSI), appendix B.4, and the usual check value
VECTORS = [
    (b"", 0x00000000),
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (bytes.fromhex(
        "01c00000000000000000000000000000"
        "14000000000004000000001400000018"
        "28000000000000000200000000000000"), 0xD9963A56),
]


def _impls():
    out = [("reference", crc32c_reference)]
    if NATIVE:
        n = ng.native()
        out += [("native", n.crc32c), ("portable", n.crc32c_portable)]
    return out


@pytest.mark.parametrize("name,f", _impls())
@pytest.mark.parametrize("data,want", VECTORS)
def test_check_values(name, f, data, want):
    assert f(data) == want


@pytest.mark.parametrize("name,f", _impls())
def test_continuation(name, f):
    data = os.urandom(70_000)
    whole = f(data)
    for cut in (0, 1, 7, 8, 255, 256, 769, 24_576, 24_577, 69_999, 70_000):
        assert f(data[cut:], f(data[:cut])) == whole


def test_dispatch_follows_the_switch():
    # crc32c() is the native kernel when the core is on, the reference otherwise
    data = b"vortex" * 1000
    assert crc32c(data) == crc32c_reference(data)


@needs_native
@pytest.mark.parametrize("size", [1, 7, 8, 9, 767, 768, 769, 3 * 256 * 2 + 5, 24_575, 24_576,
                                  24_577, 3 * 8192 * 2 + 3 * 256 + 9, 1 << 20, (1 << 20) + 3])
@pytest.mark.parametrize("shift", [0, 1, 3, 7])
def test_native_paths_agree_on_every_block_boundary(size, shift):
    # the three-stream blocks (3 x 8 KiB, 3 x 256 B), the 8-byte words and the byte tail,
    # from aligned and misaligned starts
    rng = np.random.default_rng(size * 8 + shift)
    raw = rng.integers(0, 256, size + shift, dtype=np.uint8)
    view = raw[shift:]
    n = ng.native()
    want = crc32c_reference(view)
    assert n.crc32c(view) == want
    assert n.crc32c_portable(view) == want


@needs_native
@given(st.binary(max_size=5000), st.integers(0, 2**32 - 1))
def test_native_equals_reference(data, value):
    n = ng.native()
    want = crc32c_reference(data, value)
    assert n.crc32c(data, value) == want
    assert n.crc32c_portable(data, value) == want


@given(st.integers(1 << 10, 1 << 18), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_reference_lanes_equal_the_byte_loop(n, seed, value):
    # the lane-parallel reference (long inputs) against its own plain byte loop
    from vortex_io.integrity import _register_bytes

    data = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    want = (~_register_bytes((~value) & 0xFFFFFFFF, memoryview(data))) & 0xFFFFFFFF
    assert crc32c_reference(data, value) == want


@needs_native
def test_native_takes_any_buffer_and_releases_the_gil():
    n = ng.native()
    data = np.random.default_rng(0).integers(0, 256, 8 << 20, dtype=np.uint8)
    want = n.crc32c(data.tobytes())
    assert n.crc32c(memoryview(data)) == want
    assert n.crc32c(bytearray(data.tobytes())) == want
    with pytest.raises(TypeError):
        n.crc32c("not bytes")
    # threads computing at once get the same answers (the GIL is released meanwhile)
    out: list[int] = []
    ts = [threading.Thread(target=lambda: out.append(n.crc32c(data))) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == [want] * 4


@needs_native
@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 2 << 20, (2 << 20) + 5, (9 << 20) + 13])
def test_parallel_and_combine(size):
    n = ng.native()
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    want = n.crc32c(data)
    for threads in (1, 2, 3, 8):
        assert n.crc32c(data, 0, threads) == want
        assert n.crc32c(data, 0xDEADBEEF, threads) == n.crc32c(data, 0xDEADBEEF)
    assert n.crc32c_start(data).result() == want
    for cut in (0, 1, size // 3, size):
        cut = min(cut, size)
        assert n.crc32c_combine(n.crc32c(data[:cut]), n.crc32c(data[cut:]), size - cut) == want


@needs_native
def test_background_jobs_keep_their_buffer():
    n = ng.native()
    jobs = []
    for i in range(20):
        b = bytes([i]) * 300_000
        jobs.append((n.crc32c_start(b), n.crc32c(b)))
        del b  # the job holds its own view of the bytes
    assert all(j.result() == want for j, want in jobs)
    j = n.crc32c_start(bytearray(5 << 20))
    del j  # dropped before it is done: waits for the job, then lets the buffer go
