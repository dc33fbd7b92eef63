"""Stacking (``vortex_io.compute.stack``): the arrays of many messages as one, still encoded.

Every stacked array must decode to the concatenation of its parts, and every kernel a scan
runs on it (compare, is_in, take to numpy and to Arrow, validity) must answer as the parts
do one by one. Parts are compressed chunks of generated columns (the compressor picks the
encodings: bit-packing, FoR, delta, dictionaries, ALP, patches), written and read back
through a stream like the scan sees them; scans with and without grouping must agree with
pyarrow.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io import dtype as dt
from vortex_io.arrow import from_arrow
from vortex_io.compute import kernels
from vortex_io.compute.stack import stack, stack_key, stack_runs
from vortex_io.encodings.bitpacked import bitpack
from vortex_io.encodings.dict_ import dict_array
from vortex_io.encodings.for_ import for_encode
from vortex_io.encodings.primitive import primitive_array
from vortex_io.encodings.segmented_for import SEGMENTED_FOR, segmented_for_array
from vortex_io.errors import UnsupportedError
from vortex_io.expr import col

# stacking is machinery of the numpy reference path
pytestmark = pytest.mark.usefixtures("reference_path")


def _read_parts(table: pa.Table, chunk_rows: int) -> list[vio.Array]:
    """The messages of ``table`` written compressed, read back (lazily built fields)."""
    buf = io.BytesIO()
    vio.write_ipc(buf, table, compress=True, chunk_rows=chunk_rows)
    r = vio.StreamReader(buf.getvalue())
    r._lazy_fields = True
    return [b.array for b in r]


def _concat(parts: list[vio.Array]) -> pa.Array:
    return pa.concat_arrays([p.to_arrow() for p in parts])


def _check_column(parts: list[vio.Array], rng: np.random.Generator) -> list[vio.Array]:
    """Stack ``parts`` and check decoding and the kernels against the parts one by one."""
    runs = stack_runs(parts)
    assert sum(len(r) for r in runs) == sum(len(p) for p in parts)
    assert len(runs) <= len(parts)
    expect = _concat(parts)
    assert _concat(runs).equals(expect)
    n = len(expect)
    starts = np.concatenate(([0], np.cumsum([len(r) for r in runs])))
    idx = np.sort(rng.choice(n, size=min(n, 300), replace=False)).astype(np.int64)
    want = expect.take(pa.array(idx))
    got = []
    for k, r in enumerate(runs):
        lo, hi = np.searchsorted(idx, [starts[k], starts[k + 1]])
        if hi > lo:
            got.append(kernels.take(r, idx[lo:hi] - starts[k]).to_arrow())
            a = kernels.take_arrow(r, idx[lo:hi] - starts[k])
            if a is not None:
                assert a.equals(want.slice(int(lo), int(hi - lo)))
    assert pa.concat_arrays(got).equals(want)
    # compare / is_in against a few values that occur, and validity
    present = [v for v in pc.unique(expect.drop_null()).to_pylist()[:3]]
    for v in present:
        for op in ("eq", "lt", "neq"):
            got_mask = np.concatenate([kernels.mask_true(kernels.compare(r, v, op)) for r in runs])
            fn = {"eq": pc.equal, "lt": pc.less, "neq": pc.not_equal}[op]
            exp_mask = fn(expect, pa.scalar(v, expect.type)).fill_null(False).to_numpy(
                zero_copy_only=False)
            np.testing.assert_array_equal(got_mask, exp_mask)
    if present:
        got_in = np.concatenate([kernels.mask_true(kernels.is_in(r, present)) for r in runs])
        exp_in = pc.is_in(expect, pa.array(present, expect.type)).to_numpy(zero_copy_only=False)
        exp_in &= expect.is_valid().to_numpy(zero_copy_only=False)
        np.testing.assert_array_equal(got_in, exp_in)
    nulls = np.concatenate([kernels.mask_true(kernels.is_null(r)) for r in runs])
    np.testing.assert_array_equal(nulls, expect.is_null().to_numpy(zero_copy_only=False))
    return runs


def _table(n: int, seed: int, null_p: float) -> pa.Table:
    rng = np.random.default_rng(seed)

    def mask(p: float = null_p) -> np.ndarray | None:
        return rng.random(n) < p if p else None

    base = int(rng.integers(-10**12, 10**12))
    return pa.table({
        "ts": pa.array(np.sort(rng.integers(0, 10**9, n)) + base, pa.timestamp("ns")),
        "sym": pa.array(rng.choice(["AAPL", "MSFT", "NVDA", "IBM", "X" * 20],
                                   n, p=[0.4, 0.3, 0.2, 0.09, 0.01]), mask=mask()),
        "price": pa.array(np.round(rng.normal(100, 20 + seed % 7, n), 2), mask=mask()),
        "size": pa.array(np.where(rng.random(n) < 0.01, rng.integers(10**6, 10**7, n),
                                  rng.integers(1, 500 + 100 * (seed % 5), n)), mask=mask()),
        "small": pa.array(rng.integers(0, 1 << int(rng.integers(1, 12)), n).astype(np.int16)),
        "neg": pa.array(rng.integers(-1000, 1000, n) + int(rng.integers(-10**6, 10**6))),
        "s": pa.array([f"v{k}" for k in rng.integers(0, 3000, n)], mask=mask()),
    })


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), chunks=st.integers(2, 6), tail=st.integers(0, 1023),
       null_p=st.sampled_from([0.0, 0.05, 0.5]))
def test_stacked_columns_decode_and_compute_like_their_parts(seed, chunks, tail, null_p) -> None:
    chunk = 1024 * int(np.random.default_rng(seed).integers(1, 4))
    t = _table(chunk * chunks + tail, seed, null_p)
    parts = _read_parts(t, chunk)
    rng = np.random.default_rng(seed + 1)
    for name in t.column_names:
        _check_column([p.field(name) for p in parts], rng)


def test_a_compressed_stream_stacks_into_few_runs() -> None:
    t = _table(16 * 4096, 3, 0.05)
    parts = _read_parts(t, 4096)
    runs = {n: stack_runs([p.field(n) for p in parts]) for n in t.column_names}
    counts = {n: len(r) for n, r in runs.items()}
    # dictionaries, FoR/bit-packing, ALP: one run; timestamps (datetime parts over
    # constants and deltas) break where a part changes width; FSST strings have a symbol
    # table per message: they stay apart
    assert all(counts[n] == 1 for n in ("sym", "price", "size", "small", "neg")), counts
    assert counts["ts"] <= 4 and counts["s"] == 16, counts
    assert runs["sym"][0].encoding == "vortex.dict"
    assert runs["sym"][0].children[0].encoding == "vortex_io.segmented_for"


def test_frame_of_reference_with_different_references_is_segmented() -> None:
    a = for_encode(primitive_array(np.array([1000, 1003] * 512, dtype=np.int64)))
    b = for_encode(primitive_array(np.array([-7, -5] * 512, dtype=np.int64)))
    s = stack([a, b])
    assert s.encoding == SEGMENTED_FOR.id and len(s) == 2048
    assert s.to_pylist() == [1000, 1003] * 512 + [-7, -5] * 512
    vals, valid = kernels.take_values(s, np.array([0, 1023, 1024, 2047]))
    assert vals.tolist() == [1000, 1003, -7, -5] and valid is None
    same = stack([a, for_encode(primitive_array(np.array([1000, 1002] * 512, dtype=np.int64)))])
    assert same.encoding == "fastlanes.for" and same.meta == 1000
    assert same.to_pylist() == [1000, 1003] * 512 + [1000, 1002] * 512


def test_segmented_for_wraps_widens_and_keeps_nulls() -> None:
    child = primitive_array(np.array([0, 255, 1, 2], dtype=np.uint8),
                            vio.array(pa.array([True, True, False, True])).canonical(),
                            nullable=True)
    a = segmented_for_array(child, np.array([0, 2, 4]), [0, 65535], dt.PType.U16)
    assert a.dtype == dt.Primitive(dt.PType.U16, True)
    assert a.to_pylist() == [0, 255, None, 1]  # 2 + 65535 wraps to 1 in u16
    assert kernels.mask_true(kernels.compare(a, 1, "eq")).tolist() == [False, False, False, True]
    assert kernels.mask_true(kernels.is_in(a, [0, 255])).tolist() == [True, True, False, False]
    v, m = kernels.take_values(a, np.array([3, 2]))
    assert v.tolist()[0] == 1 and m.tolist() == [True, False]
    with pytest.raises(UnsupportedError, match="in-memory"):
        SEGMENTED_FOR.parse_metadata(b"", a.dtype, 4)
    with pytest.raises(ValueError):
        segmented_for_array(child, np.array([0, 4]), [1, 2], dt.PType.U16)


def test_dictionaries_join_their_values_and_rebase_codes() -> None:
    def d(values: list[str | None], codes: list[int]) -> vio.Array:
        return dict_array(bitpack(primitive_array(np.array(codes * 512, dtype=np.uint8)), 2),
                          from_arrow(pa.array(values, pa.string()), dtype=dt.Utf8(True)))

    a, b = d(["x", "y"], [1, 0]), d(["z", None, "x"], [2, 1])
    assert stack_key(a) == stack_key(b)
    s = stack([a, b])
    assert s.to_pylist() == ["y", "x"] * 512 + ["x", None] * 512
    eq = kernels.compare(s, "x", "eq")
    assert kernels.mask_true(eq).tolist() == [False, True] * 512 + [True, False] * 512
    assert kernels.mask_true(kernels.is_null(s)).tolist() == [False, False] * 512 + [False, True] * 512
    assert kernels.take_arrow(s, np.array([0, 1025, 1024])).to_pylist() == ["y", None, "x"]


def test_unaligned_or_unstackable_parts_stay_apart() -> None:
    a = bitpack(primitive_array(np.arange(1024, dtype=np.int32) % 8), 3)
    b = bitpack(primitive_array(np.arange(1024, dtype=np.int32) % 16), 4)  # another width
    c = bitpack(primitive_array(np.arange(1000, dtype=np.int32) % 8), 3)  # not whole chunks
    assert stack_key(a) != stack_key(b) and stack_key(c) is None
    runs = stack_runs([a, a, b, c, a])
    assert [len(r) for r in runs] == [2048, 1024, 1000, 1024]
    assert _concat(runs).equals(_concat([a, a, b, c, a]))
    with pytest.raises(ValueError):
        stack([a, b])


F = pc.field
QUERIES = [  # (vortex_io filter, the same as a pyarrow dataset expression)
    (col("sym") == "AAPL", F("sym") == "AAPL"),
    (col("sym").is_in(["MSFT", "IBM"]), F("sym").isin(["MSFT", "IBM"])),
    ((col("price") < 90.0) & (col("sym") != "NVDA"), (F("price") < 90.0) & (F("sym") != "NVDA")),
    (col("size") > 1000, F("size") > 1000),
    (col("s").is_null() | (col("small") == 3), F("s").is_null() | (F("small") == 3)),
    (col("neg") >= 0, F("neg") >= 0),
    (None, None),
]


@pytest.mark.parametrize("q", range(len(QUERIES)))
@pytest.mark.parametrize("string_view", [False, True])
def test_grouped_scans_match_ungrouped_scans_and_pyarrow(q, string_view, monkeypatch) -> None:
    scan_mod = sys.modules["vortex_io.scan"]  # (``vortex_io.scan`` the name is the function)

    t = _table(20 * 2048 + 517, 11, 0.05)
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=True, chunk_rows=2048)
    data = buf.getvalue()
    e, pe = QUERIES[q]
    grouped = vio.scan(data, filter=e, string_view=string_view)
    got = grouped.to_arrow()
    assert grouped.stats.chunks == 21 and grouped.stats.rows_scanned == len(t)
    monkeypatch.setattr(scan_mod, "GROUP_BATCHES", 1)
    single = vio.scan(data, filter=e, string_view=string_view).to_arrow()
    assert got.equals(single)
    if pe is not None:
        t = t.filter(pe)
    if string_view:
        got = got.cast(t.schema)
    assert got.equals(t)


def test_dictionary_hits_past_the_codes_type_match_nothing() -> None:
    # 300 values, u8 codes: values 256.. are never referenced (the mask maps hits through
    # comparisons with the codes: a hit past u8 must not overflow)
    values = from_arrow(pa.array([f"v{k}" for k in range(300)]))
    a = dict_array(primitive_array(np.array([3, 255, 7], dtype=np.uint8)), values)
    assert kernels.mask_true(kernels.compare(a, "v299", "eq")).tolist() == [False] * 3
    assert kernels.mask_true(kernels.is_in(a, ["v299", "v3", "v280"])).tolist() == [True, False, False]


def test_stacked_dictionary_codes_are_checked_against_their_own_dictionary() -> None:
    # code 2 is out of range for the first dictionary (2 values) but would land inside the
    # joined values (2 + 3): stacking must not make a corrupt code silently valid
    from vortex_io.errors import MalformedStreamError

    def d(values: list[str], codes: list[int]) -> vio.Array:
        return dict_array(bitpack(primitive_array(np.array(codes * 512, dtype=np.uint8)), 2),
                          from_arrow(pa.array(values), dtype=dt.Utf8(False)))

    bad, good = d(["a", "b"], [0, 2]), d(["c", "d", "e"], [0, 1])
    with pytest.raises(MalformedStreamError, match="outside the 2 values"):
        bad.to_arrow()
    s = stack([bad, good])
    for use in (lambda: s.to_arrow(),
                lambda: kernels.take_arrow(s, np.array([1, 1024])),
                lambda: kernels.take_values(s.children[0], np.array([1]))):
        with pytest.raises(MalformedStreamError, match="outside the 2 values"):
            use()
    assert kernels.take_arrow(s, np.array([1024, 2047])).to_pylist() == ["c", "d"]


# -- hostile input: grouping must not change what a scan returns or raises ---------------------


def _scan_outcome(data: bytes, e, grouped: bool, monkeypatch):
    """The rows a scan returns, or the error it raises (class, text with its location)."""
    scan_mod = sys.modules["vortex_io.scan"]
    monkeypatch.setattr(scan_mod, "GROUP_BATCHES", scan_mod.GROUP_BATCHES if grouped else 1)
    try:
        return ("ok", vio.scan(data, filter=e).to_arrow())
    except vio.VortexIPCError as err:
        return (type(err).__name__, str(err))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), q=st.sampled_from([0, 1, 2, 6]))
def test_mutated_streams_scan_alike_grouped_or_not(seed, q, monkeypatch) -> None:
    """Structure-aware mutants (fuzz/mutate.py) of a compressed multi-batch stream: a
    grouped scan returns the same rows, or raises the same error at the same message, as
    a scan batch by batch."""
    import random

    from fuzz.mutate import mutate

    data = _MUTANT_SEED()
    _, bad = mutate(data, random.Random(seed), [data])
    e = QUERIES[q][0]
    grouped = _scan_outcome(bad, e, True, monkeypatch)
    single = _scan_outcome(bad, e, False, monkeypatch)
    assert grouped[0] == single[0]
    if grouped[0] == "ok":
        assert _same_rows(grouped[1], single[1])
    else:
        assert grouped[1] == single[1]


def _same_rows(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, compared as stored (a mutant's strings need not be UTF-8, and its
    floats may be NaNs, which ``equals`` never finds equal): floats by their bits."""
    if a.schema != b.schema:
        return False
    for x, y in zip(a.columns, b.columns):
        x, y = x.combine_chunks(), y.combine_chunks()
        if pa.types.is_floating(x.type):
            bits = pa.int64() if x.type.bit_width == 64 else pa.int32()
            if x.type.bit_width == 16:
                bits = pa.int16()
            x, y = x.view(bits), y.view(bits)
        if not x.equals(y):
            return False
    return True


def _mutant_seed() -> bytes:
    cache: dict[str, bytes] = {}

    def get() -> bytes:
        if "s" not in cache:
            buf = io.BytesIO()
            vio.write_ipc(buf, _table(6 * 1024 + 100, 5, 0.1), compress=True, chunk_rows=1024)
            cache["s"] = buf.getvalue()
        return cache["s"]

    return get


_MUTANT_SEED = _mutant_seed()


def test_groups_of_wide_rows_are_smaller(monkeypatch) -> None:
    """A group is decoded at once: wide rows make fewer rows a group (GROUP_BYTES)."""
    scan_mod = sys.modules["vortex_io.scan"]
    t = pa.table({f"c{i}": np.arange(12 * 1024, dtype=np.int64) * i for i in range(50)})
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=True, chunk_rows=1024)
    monkeypatch.setattr(scan_mod, "GROUP_BYTES", 50 * 8 * 3000)
    s = vio.scan(buf.getvalue())
    got = list(s)
    assert s._group_rows() == 3000
    # the first batch alone, then groups that stop once they reach 3000 rows
    assert [b.num_rows for b in got] == [1024, 3072, 3072, 3072, 2048]
    assert pa.Table.from_batches(got).equals(t)


@pytest.mark.parametrize("offset", [0, 5, 2048 + 3, 10**6])
def test_grouped_scans_skip_an_offset_like_ungrouped_ones(offset, monkeypatch) -> None:
    scan_mod = sys.modules["vortex_io.scan"]
    t = _table(8 * 2048, 4, 0.05)
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=True, chunk_rows=2048)
    data = buf.getvalue()
    for e in (None, col("sym") == "AAPL"):
        grouped = vio.scan(data, filter=e, offset=offset).to_arrow()
        monkeypatch.setattr(scan_mod, "GROUP_BATCHES", 1)
        single = vio.scan(data, filter=e, offset=offset).to_arrow()
        monkeypatch.undo()
        assert grouped.equals(single)
        want = t if e is None else t.filter(pc.field("sym") == "AAPL")
        assert grouped.equals(want.slice(min(offset, want.num_rows)))
