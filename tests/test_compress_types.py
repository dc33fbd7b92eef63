"""The compressor raises nothing but VortexIPCError: statistics and trials work for every
dtype the writer accepts (float16 included), and an Arrow type the writer cannot map is an
UnsupportedError naming the column and the type."""

from __future__ import annotations

import datetime
import decimal
import io

import numpy as np
import pyarrow as pa
import pytest

import vortex_io as vio

N = 3000
rng = np.random.default_rng(16)
MASK = rng.random(N) < 0.2
INTS = rng.integers(-50, 50, N)


def _arrays() -> dict[str, pa.Array]:
    """A column of every Arrow type the writer maps, with nulls."""
    strs = np.array(["alpha", "beta", "gamma", "delta"])[rng.integers(0, 4, N)]
    out = {}
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
              pa.uint32(), pa.uint64()):
        vals = np.abs(INTS) if pa.types.is_unsigned_integer(t) else INTS
        out[str(t)] = pa.array(vals, mask=MASK).cast(t)
    for t in (pa.float16(), pa.float32(), pa.float64()):
        f = (INTS / 4).astype(t.to_pandas_dtype())
        f[::97] = np.nan
        out[str(t)] = pa.array(f, type=t, mask=MASK)
    out["bool"] = pa.array(INTS > 0, mask=MASK)
    out["decimal128"] = pa.array([None if m else decimal.Decimal(int(v)) / 100
                                  for v, m in zip(INTS, MASK)], pa.decimal128(9, 2))
    out["decimal256"] = pa.array([None if m else decimal.Decimal(int(v)) / 100
                                  for v, m in zip(INTS, MASK)], pa.decimal256(40, 2))
    for t in (pa.string(), pa.large_string(), pa.string_view()):
        out[str(t)] = pa.array(strs, mask=MASK).cast(t)
    for t in (pa.binary(), pa.large_binary(), pa.binary_view()):
        out[str(t)] = pa.array(np.char.encode(strs), mask=MASK).cast(t)
    for unit in ("s", "ms", "us", "ns"):
        out[f"ts_{unit}"] = pa.array(np.arange(N) * 1000 + 10**9, mask=MASK).cast(pa.timestamp(unit, "UTC"))
    out["date32"] = pa.array(np.arange(N), mask=MASK).cast(pa.int32()).cast(pa.date32())
    out["date64"] = pa.array([None if m else datetime.datetime(2024, 1, 1 + i % 28)
                              for i, m in enumerate(MASK)], pa.date64())
    out["time32"] = pa.array(np.arange(N, dtype=np.int32), mask=MASK).cast(pa.time32("ms"))
    out["time64"] = pa.array(np.arange(N), mask=MASK).cast(pa.time64("us"))
    out["dictionary"] = pa.array(strs).dictionary_encode()
    out["list"] = pa.array([None if m else [int(v), 1] for v, m in zip(INTS, MASK)])
    out["large_list"] = out["list"].cast(pa.large_list(pa.int64()))
    out["fixed_size_list"] = out["list"].cast(pa.list_(pa.int64(), 2))
    out["struct"] = pa.StructArray.from_arrays([out["int64"], out["string"]], names=["i", "s"])
    out["null"] = pa.nulls(N)
    out["float16_constant"] = pa.array(np.full(N, 1.5, dtype=np.float16))
    out["float16_all_null"] = pa.nulls(N, pa.float16())
    return out


ARRAYS = _arrays()


def _arrow_equivalent(a: pa.Array) -> pa.Array:
    """What reading a column back gives (dictionaries decoded, views as plain strings, the
    large offsets as they were read)."""
    if pa.types.is_dictionary(a.type):
        return a.dictionary_decode()
    return a


@pytest.mark.parametrize("compress", [True, vio.CompressOptions(compact=True)],
                         ids=["default", "compact"])
def test_every_type_the_writer_maps_compresses(compress):
    pytest.importorskip("zstandard")
    t = pa.table(ARRAYS)
    buf = io.BytesIO()
    vio.write_ipc(buf, t, compress=compress, chunk_rows=1024)
    back = vio.read_table(buf.getvalue())
    for name, a in ARRAYS.items():
        got = back.column(name).combine_chunks()
        want = _arrow_equivalent(a)
        if got.type != want.type:
            got = got.cast(want.type)
        assert _same(got, want), name


def _same(got: pa.Array, want: pa.Array) -> bool:
    """Equal values and nulls (NaN equal to NaN)."""
    if pa.types.is_floating(want.type):
        g, w = got.cast(pa.float64()), want.cast(pa.float64())
        return (g.is_valid().equals(w.is_valid()) and np.array_equal(
            g.fill_null(0).to_numpy(), w.fill_null(0).to_numpy(), equal_nan=True))
    return got.equals(want)


def test_float16_statistics_are_written():
    buf = io.BytesIO()
    vio.write_ipc(buf, pa.table({"h": ARRAYS["halffloat"]}))
    with vio.StreamReader(buf.getvalue()) as r:
        b = next(iter(r))
    st = b.array.field("h").stats.as_dict(b.array.field("h").dtype)
    vals = ARRAYS["halffloat"].to_numpy(zero_copy_only=False)
    finite = vals[~np.isnan(vals)]
    assert st["min"] == float(finite.min()) and st["max"] == float(finite.max())
    assert st["null_count"] == int(MASK.sum())


UNSUPPORTED = {
    "union": pa.UnionArray.from_sparse(pa.array([0, 0], pa.int8()), [pa.array([1, 2])]),
    "dense_union": pa.UnionArray.from_dense(pa.array([0, 0], pa.int8()),
                                            pa.array([0, 1], pa.int32()), [pa.array([1, 2])]),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unmappable_types_name_the_column_and_the_type(name):
    a = UNSUPPORTED[name]
    t = pa.table({"ok": [1, 2], name: a})
    for compress in (True, False):
        with pytest.raises(vio.UnsupportedError) as ei:
            vio.write_ipc(io.BytesIO(), t, compress=compress)
        assert f"column {name!r}" in str(ei.value) and str(a.type) in str(ei.value)
    nested = pa.table({"outer": pa.StructArray.from_arrays([a], names=["inner"])})
    with pytest.raises(vio.UnsupportedError, match=r"column 'outer\.inner': Arrow type"):
        vio.write_ipc(io.BytesIO(), nested)


def test_a_forced_encoding_that_cannot_hold_the_column_is_unsupported():
    t = pa.table({"n": [1, 2, 3]})
    with pytest.raises(vio.UnsupportedError, match=r"column 'n': vortex\.fsst cannot encode"):
        vio.write_ipc(io.BytesIO(), t, encodings={"n": "vortex.fsst"})
    with pytest.raises(vio.UnsupportedError, match=r"no encoder for 'vortex\.nope'"):
        vio.write_ipc(io.BytesIO(), t, encodings={"n": "vortex.nope"})


def test_an_unexpected_failure_inside_the_compressor_names_the_column(monkeypatch):
    """The safety net: whatever escapes a scheme's statistics or trial is an UnsupportedError
    naming the column (here a statistics kernel made to fail)."""
    from vortex_io._compress import compressor

    def broken(*a, **k):
        raise pa.ArrowNotImplementedError("no kernel")

    monkeypatch.setattr(compressor._Compressor, "_choose", broken)
    with pytest.raises(vio.UnsupportedError, match=r"cannot compress column 'x' \(i64\?\): "
                                                   "ArrowNotImplementedError: no kernel"):
        vio.write_ipc(io.BytesIO(), pa.table({"x": np.arange(5000)}))
