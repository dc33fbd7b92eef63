"""Write the golden FastLanes streams in tests/golden/fastlanes/ with vortex-data 0.93.

For each case: ``<name>.vortex`` is a Vortex IPC stream (one DType message, one Array
message per chunk) written by vortex-data from ``vx.compress(vx.array(data))`` (or, where
noted, from an array vortex-data built another way: ``ZigZagArray.encode``, a slice of a
compressed array); ``<name>.arrow`` holds the expected values as an Arrow IPC file written
by pyarrow (column ``values``, one record batch per Array message); ``manifest.json``
records per case the encoding IDs vortex-data's ``display_tree`` reports for what it wrote
and the number of Array messages.

The cases are the section-5 rows of vortex-ipc-0.93.md that produce ``fastlanes.*`` or
``vortex.zigzag`` nodes, plus every integer width, nulls, patches, sliced arrays (offset
!= 0) and chunk tails. The data is seeded, so the output is reproducible. Arrow files are zstd-compressed.

Run from the repository root (needs the dev extra: vortex-data==0.93.0):

    .venv/bin/python tests/golden/make_fastlanes.py

tests/test_enc_fastlanes.py reads it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import vortex as vx
import vortex.serde as serde

OUT = Path(__file__).resolve().parent / "fastlanes"
N = 2100  # rows per case: 2 full FastLanes chunks and a tail


def _compressed(a: pa.Array):
    return vx.compress(vx.array(a))


def cases() -> dict[str, tuple[list, list[pa.Array]]]:
    """name -> (vortex arrays to write, expected Arrow arrays)."""
    rng = np.random.default_rng(20240613)
    out: dict[str, tuple[list, list[pa.Array]]] = {}

    def add(name: str, a: pa.Array) -> None:
        out[name] = ([_compressed(a)], [a])

    add("i64_sorted_gaps", pa.array(np.cumsum(rng.integers(1, 100_000, N))))
    add("i64_0_99", pa.array(rng.integers(0, 100, N)))
    add("i64_for_1e6", pa.array(rng.integers(1_000_000, 1_000_501, N)))
    outl = rng.integers(0, 64, N)
    pos = rng.random(N) < 0.01
    outl[pos] = rng.integers(1 << 20, 1 << 40, int(pos.sum()))
    add("i64_outliers", pa.array(outl))
    add("i32_for_neg", pa.array(rng.integers(-50, 51, N).astype(np.int32)))
    add("i32_nulls", pa.array(rng.integers(0, 1000, N).astype(np.int32), mask=rng.random(N) < 0.1))
    base = 1_700_000_000_000_000
    add("ts_us_random", pa.array(rng.integers(base, base + 10**11, N), pa.timestamp("us")))
    add("time64_us", pa.array(rng.integers(0, 86_400 * 10**6, N), pa.time64("us")))
    add("date32", pa.array(rng.integers(18_000, 20_000, N).astype(np.int32), pa.date32()))
    for t, bits in ((np.uint8, 5), (np.uint16, 7), (np.uint32, 13), (np.uint64, 29),
                    (np.int8, 4), (np.int16, 9), (np.int32, 17), (np.int64, 33)):
        v = rng.integers(0, 1 << bits, N).astype(t)
        add(f"{np.dtype(t).name}_{bits}b", pa.array(v, mask=rng.random(N) < 0.05))
    # patches with nulls, and a FoR whose encoded child carries patches
    pv = rng.integers(0, 16, N).astype(np.int32)
    pp = rng.random(N) < 0.02
    pv[pp] = rng.integers(1 << 20, 1 << 30, int(pp.sum()))
    add("i32_patches_nulls", pa.array(pv, mask=rng.random(N) < 0.1))
    # negative values with outliers: vortex-data picks zigzag(bitpacked with patches)
    fv = rng.integers(-100_000, -99_000, N)
    fp = rng.random(N) < 0.01
    fv[fp] = rng.integers(1 << 30, 1 << 40, int(fp.sum()))
    add("i64_zigzag_patches", pa.array(fv))
    # sliced: vortex-data keeps bit-packed slices as an offset into the first chunk
    src = pa.array(rng.integers(0, 300, 4096).astype(np.uint16), mask=rng.random(4096) < 0.1)
    out["u16_sliced"] = ([_compressed(src).slice(1500, 3333)], [src.slice(1500, 3333 - 1500)])
    src = pa.array(rng.integers(5_000, 5_200, 3000))
    out["i64_for_sliced"] = ([_compressed(src).slice(1030, 2901)], [src.slice(1030, 2901 - 1030)])
    # zigzag, as vortex-data builds it (the compressor never picks it), raw and compressed
    z = pa.array(rng.integers(-200, 200, N).astype(np.int32), mask=rng.random(N) < 0.05)
    out["zigzag_i32"] = ([vx.ZigZagArray.encode(vx.array(z))], [z])
    z64 = pa.array(rng.integers(-(2**40), 2**40, N))
    out["zigzag_i64_sliced"] = ([vx.ZigZagArray.encode(vx.array(z64)).slice(100, 1900)],
                                [z64.slice(100, 1800)])
    # several messages, short tails, a single row, an empty chunk
    chunks = [pa.array(rng.integers(0, 1000, n).astype(np.int32)) for n in (1024, 1, 0, 1500)]
    out["i32_chunks"] = ([_compressed(c) for c in chunks], chunks)
    # the section-5 sizes once: 20 000 rows of 0..99
    add("i64_0_99_20k", pa.array(rng.integers(0, 100, 20_000)))
    return out


_ENC = re.compile(r"([a-z_]+\.[a-z_.0-9]+)\(")


def encodings_of(a) -> list[str]:
    """Encoding IDs in vortex-data's display tree (a `.v2` suffix is display only)."""
    return sorted({m.removesuffix(".v2") for m in _ENC.findall(a.display_tree())})


def write_case(name: str, arrays: list, expected: list[pa.Array]) -> dict:
    parts = []
    for i, a in enumerate(arrays):
        array_parts, dtype_parts = serde.encode_ipc_array_buffers(a)
        if i == 0:
            parts.append(b"".join(bytes(x) for x in dtype_parts))
        parts.append(b"".join(bytes(x) for x in array_parts))
    (OUT / f"{name}.vortex").write_bytes(b"".join(parts))
    schema = pa.schema([pa.field("values", expected[0].type)])
    opts = ipc.IpcWriteOptions(compression="zstd")
    with ipc.new_file(OUT / f"{name}.arrow", schema, options=opts) as w:
        for e in expected:
            w.write_batch(pa.record_batch([e], schema=schema))
    encs = sorted({e for a in arrays for e in encodings_of(a)})
    return {"messages": len(arrays), "encodings": encs}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    manifest = {name: write_case(name, arrays, exp) for name, (arrays, exp) in cases().items()}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"wrote {len(manifest)} cases, {total} bytes, to {OUT}")


if __name__ == "__main__":
    main()
