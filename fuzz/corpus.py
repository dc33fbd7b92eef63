"""Seed streams for fuzzing: every golden stream plus streams written by our encoders.

The golden streams (``tests/golden/**``, written by vortex-data 0.93) cover what the
reference writes; the generated ones cover every encoding vortex_io registers, including
those vortex-data never emits by default (``fastlanes.delta``, ``fastlanes.rle``,
``vortex.bytebool``, ``vortex.masked``, ``vortex.zstd``, ``vortex.onpair``,
``vortex_io.inverted_index``) and multi-message compressed tables. All seeds are small
(a few KiB) so a mutant reads in milliseconds.

>>> seeds = seed_streams()
>>> len(seeds) > 100 and all(isinstance(v, bytes) for v in seeds.values())
True
"""

from __future__ import annotations

import functools
import io
import pathlib

import numpy as np
import pyarrow as pa

import vortex_io as vio
from vortex_io import dtype as dt

__all__ = ["seed_streams", "golden_streams", "generated_streams", "encodings_of", "GOLDEN_DIR"]

GOLDEN_DIR = pathlib.Path(__file__).resolve().parent.parent / "tests" / "golden"


def golden_streams() -> dict[str, bytes]:
    """Every stream under tests/golden (``<group>/<name>`` -> bytes)."""
    out = {}
    for p in sorted(GOLDEN_DIR.glob("*/*")):
        if p.suffix in (".vortex", ".vxipc"):
            out[f"{p.parent.name}/{p.stem}"] = p.read_bytes()
    return out


def _stream_of(array: vio.Array, chunks: int = 1) -> bytes:
    buf = io.BytesIO()
    with vio.StreamWriter(buf, array.dtype) as w:
        n = len(array)
        step = max(1, -(-n // chunks))
        for s in range(0, max(n, 1), step):
            w.write_batch(array.slice(s, min(n, s + step)) if chunks > 1 else array)
            if chunks == 1:
                break
    return buf.getvalue()


def _table_stream(table: pa.Table, **kw) -> bytes:
    if kw.get("compress", True) is True:  # every batch compressed, however small
        kw["compress"] = vio.CompressOptions(min_batch_bytes=0)
    buf = io.BytesIO()
    vio.write_ipc(buf, table, **kw)
    return buf.getvalue()


def _generated() -> dict[str, bytes]:
    from vortex_io.encodings._bytebool import bytebool_encode
    from vortex_io.encodings._constant import constant_array
    from vortex_io.encodings._delta import delta_encode
    from vortex_io.encodings._dict import dict_encode
    from vortex_io.encodings._for import for_encode
    from vortex_io.encodings._fsst import fsst_encode
    from vortex_io.encodings._masked import MASKED  # noqa: F401  (registered)
    from vortex_io.encodings._onpair import onpair_encode
    from vortex_io.encodings._rle import rle_encode
    from vortex_io.encodings._runend import runend_encode
    from vortex_io.encodings._sparse import sparse_encode
    from vortex_io.encodings._zigzag import zigzag_encode
    from vortex_io.encodings._zstd import zstd_encode
    from vortex_io.encodings.inverted_index import InvertedIndex

    rng = np.random.default_rng(8)
    n = 1500
    ints = rng.integers(-50, 1000, n)
    runs = np.repeat(rng.integers(0, 9, 60), 25)
    words = ["alpha", "beta", "gamma", "delta", "epsilon-longer-than-twelve", ""]
    strs = pa.array([words[i] for i in rng.integers(0, len(words), 400)], pa.utf8())
    strs_nulls = pa.array([None if i % 7 == 0 else f"user{i % 31}@example.com" for i in range(400)])
    f64 = np.round(rng.normal(100, 5, n), 2)
    out: dict[str, bytes] = {}

    def add(name: str, make, chunks: int = 1) -> None:
        a = make()
        out[f"gen/{name}"] = _stream_of(a, chunks)

    add("bytebool", lambda: bytebool_encode(pa.array([True, None, False, True] * 50)))
    add("delta_u32", lambda: delta_encode(vio.array(np.cumsum(rng.integers(0, 5, n)).astype(np.uint32))))
    add("rle_i32", lambda: rle_encode(vio.array(runs.astype(np.int32))))
    add("runend_i64", lambda: runend_encode(vio.array(runs.astype(np.int64))))
    add("for_bitpacked_i64", lambda: for_encode(vio.array(ints)))
    add("for_i16_nulls", lambda: for_encode(vio.array(pa.array(
        [None if i % 5 == 0 else int(v) for i, v in enumerate(ints[:300])], pa.int16()))))
    add("zigzag_bitpacked", lambda: zigzag_encode(vio.array(ints.astype(np.int32)), bitpack=True))
    add("sparse_i64", lambda: sparse_encode(vio.array(np.where(ints % 17 == 0, ints, 0)), fill=0))
    add("sparse_utf8_null", lambda: sparse_encode(vio.array(pa.array(
        [f"v{i}" if i % 23 == 0 else None for i in range(500)]))))
    add("dict_utf8", lambda: dict_encode(vio.array(strs)))
    add("dict_i64_nulls", lambda: dict_encode(vio.array(pa.array(
        [None if i % 9 == 0 else int(i % 5) for i in range(300)], pa.int64()))))
    add("fsst_utf8", lambda: fsst_encode(vio.array(strs_nulls)))
    add("onpair_utf8", lambda: onpair_encode(vio.array(strs_nulls)))
    add("zstd_i64", lambda: zstd_encode(vio.array(ints), values_per_frame=256))
    add("zstd_utf8", lambda: zstd_encode(vio.array(strs_nulls)))
    add("inverted_index", lambda: InvertedIndex.encode(vio.array(strs_nulls)))
    add("masked_i32", lambda: vio.Array(
        "vortex.masked", dt.int32(True), 6,
        children=[vio.array(np.arange(6, dtype=np.int32)),
                  vio.array(np.array([True, False, True, True, False, True]))]))
    add("constant_utf8", lambda: constant_array("hello", 40, dt.Utf8()))
    add("constant_struct", lambda: constant_array([3, None], 25, dt.Struct(
        ["a", "b"], [dt.int16(), dt.float64(True)])))
    add("chunked_struct", lambda: vio.array(pa.table({"a": ints[:200], "s": strs[:200]})), chunks=3)

    # the compressor on tables of every kind of column, several messages each
    t = pa.table({
        "i": ints,
        "runs": runs.astype(np.int64),
        "f": f64,
        "s": pa.array([words[i] for i in rng.integers(0, len(words), n)]),
        "ts": pa.array(np.int64(1_700_000_000_000_000) + np.arange(n) * 1_000_000,
                       pa.timestamp("us", "UTC")),
        "d": pa.array([v * 100 for v in range(n)], pa.decimal128(12, 2)),
        "b": pa.array(ints % 3 == 0),
        "n": pa.array([None if v % 4 else float(v) for v in ints]),
        "seq": np.arange(n, dtype=np.int64) * 3 + 7,
        "const": np.full(n, 42, dtype=np.int32),
    })
    out["gen/compressed_table"] = _table_stream(t, chunk_rows=500)
    out["gen/canonical_table"] = _table_stream(t.slice(0, 300), chunk_rows=100, compress=False)
    nested = pa.table({
        "l": pa.array([[1, 2], None, [], [3]] * 25, pa.list_(pa.int32())),
        "lv": pa.array([[1], None, [2, 3], []] * 25, pa.list_view(pa.int16())),
        "fl": pa.array([[1, 2], None, [3, 4], [5, 6]] * 25, pa.list_(pa.uint8(), 2)),
        "st": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": None}, {"a": 4, "b": "y"}] * 25),
        "nul": pa.nulls(100),
        "bin": pa.array([b"\x00\x01", None, b"", b"abc" * 10] * 25, pa.binary_view()),
    })
    out["gen/nested_table"] = _table_stream(nested, chunk_rows=40, compress=False)
    out["gen/nested_compressed"] = _table_stream(nested, chunk_rows=40)
    out["gen/strings_compressed"] = _table_stream(
        pa.table({"e": strs_nulls, "w": strs}), chunk_rows=200)
    out["gen/inverted_index_table"] = _table_stream(
        pa.table({"city": strs_nulls}), chunk_rows=200,
        encodings={"city": "vortex_io.inverted_index"})
    # integrity data: records on every message and the end marker
    out["gen/integrity_compressed"] = _table_stream(t, chunk_rows=500, metadata={"k": "v"},
                                                    integrity=True)
    out["gen/integrity_small"] = _table_stream(pa.table({"x": [1, None, 3]}), chunk_rows=2,
                                               integrity=True)
    return out


@functools.cache
def generated_streams() -> dict[str, bytes]:
    """Streams written by vortex_io's own encoders (``gen/<name>`` -> bytes)."""
    out = {}
    for k, v in _generated().items():
        try:
            vio.read_ipc(v).to_arrow()
        except Exception as e:  # pragma: no cover - a seed must be valid
            raise AssertionError(f"seed {k} does not read back: {e!r}") from e
        out[k] = v
    return out


@functools.cache
def seed_streams() -> dict[str, bytes]:
    """Golden and generated seeds (name -> stream bytes)."""
    return {**golden_streams(), **generated_streams()}


def encodings_of(stream: bytes) -> set[str]:
    """Every encoding ID used by the Array messages of a stream."""
    from .wire import parse_stream

    out: set[str] = set()
    for m in parse_stream(stream):
        if m.array is not None:
            out.update(n.encoding for n in m.array.root.walk())
    return out
