"""Regressions of the native core: minimized streams of what the sanitizer builds and the
fuzzers found (``make test-asan``, ``make fuzz-native``, the differential mutation sweep),
each read by the native core and by the reference, which must agree
(``tests.native_util.assert_same``). Under ``make test-asan`` these also prove the fixed
code path is clean of the reported undefined behaviour or overrun.

Findings of the kernel harnesses that no stream reaches keep their minimized inputs in
``native/fuzz/regressions/<harness>/`` (every ``make fuzz-native`` run replays them).
"""

from __future__ import annotations

import pytest

from tests.native_util import NATIVE, assert_same
from tests.vx_util import our_array_stream
from vortex_io import dtype as dt
from vortex_io.encodings.constant import constant_array

pytestmark = pytest.mark.skipif(not NATIVE, reason="the native core is off (VORTEX_IO_NATIVE=0)")


def test_constant_empty_string():
    """fuzz_scalar (UBSan): repeat_scalar of an empty string copied n empty strings into the
    null data block (alloc(0)): memcpy to a null pointer. Found through repeat_scalar,
    reached by every vortex.constant of "" (and of b"")."""
    for d, v in [(dt.Utf8(False), ""), (dt.Utf8(True), ""), (dt.Binary(False), b"")]:
        for n in (0, 1, 40):
            assert_same(our_array_stream(constant_array(v, n, d)))
    st = dt.Struct(["s", "i"], [dt.Utf8(), dt.int32()], False)
    assert_same(our_array_stream(constant_array(["", 7], 25, st)))
