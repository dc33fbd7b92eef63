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

from fuzz.wire import rewrite_arrays
from tests.native_util import NATIVE, assert_same
from tests.vx_util import our_array_stream, our_stream
from vortex_io import dtype as dt
from vortex_io.encodings._constant import constant_array

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


def _shifted(stream: bytes, shift: int) -> bytes:
    """``stream`` with every buffer of its Array messages declared unaligned (exponent 0)
    and moved ``shift`` bytes on by an unused buffer in front."""
    from fuzz.wire import parse_stream

    out = []
    for m in parse_stream(stream):
        am = m.array
        if am is None:
            out.append(m.data)
            continue
        am.buffers = [(b"\x00" * shift, 0)] + [(data, 0) for data, _exp in am.buffers]
        for n in am.root.walk():
            n.buffers = [i + 1 for i in n.buffers]
        out.append(am.encode())
    return b"".join(out)


def test_misaligned_typed_buffers():
    """fuzz_message (UBSan): a vortex.primitive buffer whose alignment exponent is below its
    type's width is left where it is by the reader (as the reference reader does), and the
    kernels read it as T* (varbin offsets: a misaligned int32 load). Primitive values
    (decode, take, int_bounds) and decimal values are now copied to aligned memory when
    misaligned."""
    import decimal

    import numpy as np
    import pyarrow as pa

    from tests.native_util import table_stream

    t = pa.table({
        "i16": pa.array(np.arange(-50, 150, dtype=np.int16)),
        "i32": pa.array([None if i % 7 == 0 else i * 1000 for i in range(200)], pa.int32()),
        "u64": pa.array(np.arange(200, dtype=np.uint64) << np.uint64(40)),
        "f64": pa.array(np.linspace(-1, 1, 200)),
        "d": pa.array([decimal.Decimal(i).scaleb(-2) for i in range(200)], pa.decimal128(12, 2)),
        "s": pa.array([f"v{i % 13}" * (i % 5) for i in range(200)]),
    })
    canonical = table_stream(t, compress=False, chunk_rows=120)
    compressed = table_stream(t, chunk_rows=120)
    for shift in (1, 2, 3, 4, 8):
        assert_same(_shifted(canonical, shift))
        assert_same(_shifted(compressed, shift), strict=False)


def test_views_of_empty_strings_to_strings():
    """fuzz_message (UBSan): string_view columns of only empty strings (and nulls) converted
    to Arrow string (to_strings) copied zero bytes into the null block of an empty data
    buffer: memcpy to a null pointer."""
    import pyarrow as pa

    from tests.native_util import table_stream

    for vals in ([""] * 5, ["", None, ""], [None, None], []):
        for typ in (pa.string_view(), pa.binary_view()):
            arr = pa.array([v if v is None or typ == pa.string_view() else v.encode()
                            for v in vals], typ)
            assert_same(table_stream(pa.table({"v": arr}), compress=False))


# -- found by the differential mutation sweep (make fuzz-mutations FUZZ_MUTATIONS=10000) ----------


def test_foreign_node_the_native_decode_never_reaches():
    """Sweep mutants #5692 and #7468 of fastlanes/i64_outliers: the chunk_offsets child of
    bit-packed patches re-labelled ``vortex.onpair`` (an encoding only Python knows). The
    native build skips a foreign subtree's checks and its decode never reads chunk offsets,
    so it read a table where the reference raises MalformedStreamError ("vortex.onpair
    cannot hold u8"). A column with a foreign node now goes to Python whole."""
    from fuzz.corpus import seed_streams
    from fuzz.wire import parse_stream

    seed = seed_streams()["fastlanes/i64_outliers"]
    out, changed = [], 0
    for m in parse_stream(seed):
        am = m.array
        if am is not None:
            for n in am.root.walk():
                if n.encoding == "fastlanes.bitpacked" and len(n.children) == 3:
                    n.children[2].encoding = "vortex.onpair"
                    changed += 1
            out.append(am.encode())
        else:
            out.append(m.data)
    assert changed
    for sv in (False, True):
        ref = assert_same(b"".join(out), string_view=sv, strict=False)
        assert ref[0] == "err"


def test_lazily_built_field_failing_a_python_check():
    """Sweep mutant #4280 of gen/nested_compressed (the null column's node re-labelled
    ``vortex.masked``, which derives a non-nullable Null child dtype): the native core hands that field back and Python builds it
    lazily, where ``ValueError`` ("the Null dtype is always nullable") escaped instead of
    the MalformedStreamError the eager (reference) build raises."""
    from fuzz.corpus import seed_streams
    from fuzz.wire import parse_stream

    out = []
    for m in parse_stream(seed_streams()["gen/nested_compressed"]):
        am = m.array
        if am is not None:
            (null,) = [c for c in am.root.children if c.encoding == "vortex.null"]
            null.encoding = "vortex.masked"
            out.append(am.encode())
        else:
            out.append(m.data)
    data = b"".join(out)
    for sv in (False, True):
        ref = assert_same(data, string_view=sv, strict=False)
        assert ref[0] == "err"


def test_nested_constant_lists_are_bounded_before_gathering():
    """fuzz_scalar (out of memory, 2 GiB malloc): repeat_scalar of a null fixed-size list of
    fixed-size lists gathered n x size x size element pointers before any limit was checked
    (the sizes are read off the wire). The element count of a constant is now checked
    against ``max_decoded_bytes`` first, in repeat_scalar and in the nested scalars_col.
    (The minimized harness input: native/fuzz/regressions/fuzz_scalar/.)"""
    import vortex_io as vio
    from tests.native_util import outcome

    inner = dt.FixedSizeList(dt.int8(True), 1 << 12, True)
    d = dt.FixedSizeList(inner, 1 << 10, True)
    data = our_array_stream(constant_array(None, 8, d))
    lim = vio.ReaderLimits(max_decoded_bytes=1 << 20)
    assert outcome(data, native=True, limits=lim) == outcome(data, native=False, limits=lim) \
        == ("err", vio.LimitExceededError)
    small = our_array_stream(constant_array(None, 3, dt.FixedSizeList(dt.FixedSizeList(
        dt.int8(True), 4, True), 5, True)))
    assert_same(small)


def test_sparse_string_patch_with_dirty_inline_padding():
    """Differential mutation sweep (#9378, a bit flipped in a view's length): a patch value
    of vortex.sparse whose inline view has non-zero bytes past its length. The native
    overlay copied the view as it was, an invalid Arrow string_view (pyarrow's full
    validation refuses it) unequal to the reference's, which rebuilds its views."""
    import numpy as np
    import pyarrow as pa

    from vortex_io.encodings._primitive import primitive_array
    from vortex_io.encodings._sparse import sparse_array
    from vortex_io.encodings._varbinview import varbinview_array

    views = np.zeros((3, 16), np.uint8)
    for i, s in enumerate([b"ab", b"s718773", b"xyz"]):
        views[i, 0] = len(s)
        views[i, 4:4 + len(s)] = list(s)
    views[1, 0] = 5  # "s7187", with "73" left in its padding
    values = varbinview_array(dt.Utf8(True), views.view("<u4").reshape(-1), [])
    arr = sparse_array(primitive_array(np.array([1, 4, 6], np.uint16)), values, 8, None)
    ref = assert_same(our_array_stream(arr), string_view=True)
    col = ref[1].column(0) if isinstance(ref[1], pa.Table) else ref[1]
    col.validate(full=True)
    assert col.to_pylist() == [None, "ab", None, None, "s7187", None, "xyz", None]


# -- scans check what the reference scan checks (the sweep, extended to scans) ---------------


def _scans(stream: bytes, **kw):
    """A scan's outcome with the native core and with the reference (both asserted equal):
    the table, or the error class."""
    import vortex_io as vio
    from tests.native_util import identical
    from vortex_io import _native_glue as ng

    def run():
        try:
            return vio.scan(stream, **kw).to_arrow()
        except vio.VortexIPCError as e:
            return type(e)

    nat = run()
    with ng.use_native(False):
        ref = run()
    assert (nat is ref) if isinstance(nat, type) else identical(nat, ref), (nat, ref)
    return nat


def test_a_scan_builds_neither_the_root_validity_nor_other_fields():
    """A nullable root struct's validity child, malformed (a bool of no bytes for its rows):
    a scan uses no top-level validity, so neither side builds it; the reference's
    ``field()`` built it, and every other field with it, where the native scan did not."""
    import pyarrow as pa

    import vortex_io as vio

    sa = pa.StructArray.from_arrays([pa.array([1, 2, 3, 4], pa.int32()),
                                     pa.array(["a", "b", None, "d"])], names=["id", "s"],
                                    mask=pa.array([False, False, True, False]))
    good = our_array_stream(vio.array(sa))

    def empty_validity(am) -> None:
        v = am.root.children[0]
        assert v.encoding == "vortex.bool" and len(am.root.children) == 3
        am.buffers[v.buffers[0]] = (b"", 0)

    bad = rewrite_arrays(good, empty_validity)
    with pytest.raises(vio.MalformedStreamError, match=r"vortex\.bool"):
        vio.read_ipc(bad).to_arrow()
    t = _scans(bad)
    assert t.column_names == ["id", "s"] and t.num_rows == 4
    assert _scans(bad, columns=["s"]).column("s").to_pylist() == ["a", "b", None, "d"]


def test_output_columns_of_a_message_the_filter_rejects_are_not_built():
    """A malformed output column in a message where the filter selects no row: the
    reference never builds it (nothing selected, nothing decoded); the native scan built
    every output field before the predicate ran, and raised."""
    import pyarrow as pa

    import vortex_io as vio
    from vortex_io.expr import col

    t = pa.table({"i": pa.array(range(100), pa.int64()), "b": pa.array([True] * 100)})
    good = our_stream(t, chunk_rows=50, compress=False)

    def empty_b(am) -> None:
        b = am.root.children[1]
        am.buffers[b.buffers[0]] = (b"", 0)

    bad = rewrite_arrays(good, empty_b)
    with pytest.raises(vio.MalformedStreamError):
        vio.read_ipc(bad).to_arrow()
    assert _scans(bad, filter=col("i") > 1000).num_rows == 0  # every message rejected
    assert _scans(bad, columns=["i"], filter=col("i") > 10).num_rows == 89  # b not output
    assert _scans(bad, filter=col("i") > 10) is vio.MalformedStreamError  # b taken: checked
    assert _scans(bad, filter=col("i") < 0).num_rows == 0


def test_a_column_handed_back_is_checked_in_a_message_of_no_row():
    """A message of 0 rows whose column only Python decodes (the inverted index): the
    reference builds every output column without a filter, so a malformed one raises; the
    native scan returned the empty batch before handing the column back."""
    import pyarrow as pa

    import vortex_io as vio

    t = pa.table({"city": pa.array(["oslo", "rome", None, "oslo"] * 10)})
    good = our_stream(t, encodings={"city": "vortex_io.inverted_index"}, chunk_rows=40)

    def no_rows(am) -> None:
        am.row_count = 0

    bad = rewrite_arrays(good, no_rows)
    assert _scans(bad) is vio.MalformedStreamError
    assert _scans(bad, columns=[]).num_rows == 0  # a count builds no column
