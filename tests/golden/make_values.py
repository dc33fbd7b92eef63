"""Write the golden streams for the value encodings (dict, runend, sequence, sparse, alp,
alprd) with vortex-data's compressor, plus the expected values as Arrow IPC files.

Run from the repository root (needs the test dependency ``vortex-data`` 0.93):

    .venv/bin/python -m tests.golden.make_values

For each case ``NAME`` it writes ``tests/golden/values/NAME.vortex`` (a stream written by
vortex-data: one DType message and one Array message per chunk, ``vx.compress`` applied
to each chunk) and ``NAME.arrow`` (the input data, an Arrow IPC file with one column
``values``), and lists every case in ``manifest.json`` with the encoding IDs of its
stream and the encodings the case is meant to exercise. The data are seeded: re-running
rewrites identical inputs (the compressed bytes depend only on vortex-data's version).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

OUT = Path(__file__).parent / "values"
N = 5000


def cases() -> dict[str, tuple[list[pa.Array], list[str]]]:
    """name -> (chunks, encodings the case is meant to exercise)."""
    rng = np.random.default_rng(20240611)
    n = N
    words = [f"w{i:02d}-{'x' * (i % 13)}" for i in range(50)]
    out: dict[str, tuple[list[pa.Array], list[str]]] = {}
    out["f64_prices_2dp"] = ([pa.array(np.round(rng.uniform(1, 1000, n), 2))], ["vortex.alp"])
    out["f64_random_normal"] = ([pa.array(rng.normal(size=n))], ["vortex.alprd"])
    vals = np.round(rng.uniform(0, 100, n), 1)
    out["f64_1dp_nulls"] = ([pa.array(vals, mask=rng.random(n) < 0.1)], ["vortex.alp"])
    out["f32_prices"] = ([pa.array(np.round(rng.uniform(1, 1000, n), 2).astype(np.float32))],
                         ["vortex.alprd"])
    out["f32_2dp_small"] = ([pa.array(np.round(rng.uniform(0, 10, n), 2).astype(np.float32))],
                            ["vortex.alp"])
    out["f64_prices_specials"] = (
        [pa.array(np.concatenate([np.round(rng.uniform(1, 100, n - 6), 2),
                                  [np.nan, -0.0, np.inf, -np.inf, 1e300, 5e-324]]))],
        ["vortex.alp"])
    out["i64_runs_100"] = ([pa.array(np.repeat(rng.integers(0, 1000, n // 100), 100))],
                           ["vortex.dict", "vortex.runend"])
    out["f64_runs_200"] = ([pa.array(np.repeat(rng.normal(size=n // 200), 200))],
                           ["vortex.dict", "vortex.runend"])
    out["i64_98pct_zeros"] = ([pa.array(np.where(rng.random(n) < 0.98, 0, rng.integers(1, 1000, n)))],
                              ["vortex.sparse"])
    out["i64_low_card_nulls"] = (
        [pa.array([None if rng.random() < 0.15 else int(rng.integers(0, 5)) * 1000003 for _ in range(n)],
                  pa.int64())], ["vortex.dict"])
    out["utf8_low_card"] = ([pa.array([words[i] for i in rng.integers(0, 8, n)])], ["vortex.dict"])
    out["utf8_low_card_nulls"] = (
        [pa.array([None if rng.random() < 0.1 else words[int(i)] for i in rng.integers(0, 50, n)])],
        ["vortex.dict"])
    out["binary_low_card"] = (
        [pa.array([words[i].encode() for i in rng.integers(0, 8, n)], pa.binary())], ["vortex.dict"])
    out["i64_arange"] = ([pa.array(np.arange(n, dtype=np.int64) * 3 + 1000)], ["vortex.sequence"])
    out["u32_arange"] = ([pa.array(np.arange(n, dtype=np.uint32) * 7 + 3)], ["vortex.sequence"])
    out["i16_arange_desc"] = ([pa.array((30000 - 3 * np.arange(n)).astype(np.int16))], ["vortex.sequence"])
    out["ts_us_sequential"] = (
        [pa.array(np.arange(n, dtype=np.int64) * 1_000_000 + 1_700_000_000_000_000, pa.timestamp("us"))],
        ["vortex.sequence"])
    out["bool_random"] = ([pa.array(rng.random(n) < 0.5)], [])
    out["bool_nulls"] = ([pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.2)], [])
    out["i64_two_chunks"] = (
        [pa.array(np.repeat(rng.integers(0, 50, n // 50), 50)), pa.array(np.arange(n, dtype=np.int64))],
        ["vortex.dict", "vortex.sequence"])
    out["utf8_mostly_null"] = (
        [pa.array([None if rng.random() < 0.99 else f"s{int(rng.integers(0, 10**6))}" for _ in range(n)])],
        ["vortex.sparse"])
    out["f64_mostly_null"] = ([pa.array(rng.normal(size=n), mask=rng.random(n) < 0.99)], ["vortex.sparse"])
    return out


def stream_encodings(stream: bytes) -> list[str]:
    """Every encoding ID named by the Array messages of a stream (sorted)."""
    from vortex_io._ipc.framing import MessageDecoder
    from vortex_io._ipc.schema import MessageType

    dec = MessageDecoder()
    dec.feed(stream)
    ids: set[str] = set()
    for m in dec:
        if m.type == MessageType.ARRAY:
            ids.update(m.header.encodings)
    return sorted(ids)


def main() -> None:
    from tests.vx_util import vx_stream

    OUT.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name, (chunks, exercises) in cases().items():
        stream = vx_stream(chunks, compress=True)
        (OUT / f"{name}.vortex").write_bytes(stream)
        table = pa.table({"values": pa.chunked_array(chunks)})
        with pa.OSFile(str(OUT / f"{name}.arrow"), "wb") as f, pa.ipc.new_file(
                f, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
            w.write_table(table)
        encs = stream_encodings(stream)
        missing = [e for e in exercises if e not in encs]
        if missing:
            raise SystemExit(f"{name}: vortex-data did not use {missing} (used {encs})")
        manifest[name] = {"encodings": encs, "exercises": exercises, "rows": table.num_rows,
                          "chunks": len(chunks)}
        print(f"{name:24s} {len(stream):7d} B  {', '.join(encs)}")
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
