"""Write the golden streams of tests/test_enc_strings_temporal.py with vortex-data 0.93.

Run from the repository root:  .venv/bin/python tests/golden/make_strings_temporal.py

For every case, ``strings_temporal/<name>.vxipc`` is a stream written by vortex-data (one
DType message and one Array message) and ``<name>.arrow`` the values it must decode to (an
zstd-compressed Arrow IPC file with one column ``values``, written by pyarrow from the
source data).
vortex-data's compressor (``vx.compress``) chooses the encodings; the compact file writer
(``VortexWriteOptions.compact()``) makes the ``vortex.zstd`` cases. The ``*_refamed``
cases hold an inner node of a vortex-data tree (an FSST dictionary's values, whose children
are canonical) re-framed by vortex_io's writer without re-encoding, so that they decode
before the other compressed encodings exist; vortex-data is checked to decode them too.

The script checks that vortex-data decodes each stream back to the expected values and
that each stream uses the encodings it is meant to exercise.
"""

from __future__ import annotations

import decimal
import io
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import vortex as vx  # noqa: E402
import vortex.serde as serde  # noqa: E402

import vortex_io as vio  # noqa: E402
from tests.vx_util import our_array_stream, split_messages, vx_decode_to_arrow  # noqa: E402

OUT = Path(__file__).resolve().parent / "strings_temporal"
N = 3000


def _vx_array_stream(a) -> bytes:
    array_parts, dtype_parts = serde.encode_ipc_array_buffers(a)
    return b"".join(bytes(x) for x in dtype_parts) + b"".join(bytes(x) for x in array_parts)


def _compact(arr: pa.Array, tmp: Path):
    """The column as vortex-data's compact file writer encodes it (read back from a file)."""
    vx.io.VortexWriteOptions.compact().write(pa.table({"values": arr}), str(tmp))
    batch = next(iter(vx.open(str(tmp)).scan()))
    return batch.field("values")


def _encodings(stream: bytes) -> list[str]:
    dec = vio.MessageDecoder()
    dec.feed(stream)
    out: set[str] = set()
    for m in dec:
        out.update(getattr(m.header, "encodings", ()) or ())
    return sorted(out)


def cases(rng: np.random.Generator) -> dict[str, pa.Array]:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    vocab = [f"w{i}{'x' * (i % 5)}" for i in range(300)]
    d: dict[str, pa.Array] = {}
    d["utf8_lowcard_nulls"] = pa.array(
        [None if rng.random() < 0.1 else str(rng.choice(words)) for _ in range(N)])
    d["utf8_sentences"] = pa.array([" ".join(rng.choice(vocab, 6)) for _ in range(N)])
    d["utf8_long_nulls"] = pa.array(
        [None if i % 17 == 5 else ("" if i % 23 == 7 else " ".join(rng.choice(vocab, 60)))
         for i in range(300)])
    d["utf8_urls"] = pa.array(
        [f"https://www.example{rng.integers(0, 50)}.com/path/{rng.integers(0, 10**6)}/index.html"
         for _ in range(N)])
    d["utf8_urls_nulls"] = pa.array(
        [None if rng.random() < 0.2 else f"https://e{rng.integers(0, 9)}.org/{rng.integers(0, 10**6)}"
         for _ in range(N)])
    first = ["john", "jane", "alex", "maria", "wei", "olga", "sam", "kim"]
    doms = ["gmail.com", "yahoo.com", "example.org", "corp.net"]
    d["utf8_emails"] = pa.array(
        [f"{rng.choice(first)}.{rng.integers(0, 10**5)}@{rng.choice(doms)}" for _ in range(N)])
    d["binary_lowcard"] = pa.array(
        [("x" * int(rng.integers(1, 5)) + str(rng.choice(vocab))).encode() for _ in range(N)],
        pa.binary())
    day = 86_400_000
    d["ts_ms_whole_days"] = pa.array(
        (rng.integers(0, 20_000, N) * day).astype(np.int64), pa.timestamp("ms"))
    secs = rng.integers(0, 20_000 * 86_400, N).astype(np.int64)
    d["ts_us_seconds_utc"] = pa.array(secs * 1_000_000, pa.timestamp("us", "UTC"))
    mask = rng.random(N) < 0.1
    d["ts_ms_seconds_nulls"] = pa.array(np.where(mask, 0, secs * 1000),
                                        pa.timestamp("ms", "America/New_York"), mask=mask)
    d["ts_ns_days_and_seconds"] = pa.array(
        rng.integers(0, 400, N).astype(np.int64) * 86_400 * 10**9
        + rng.integers(0, 86_400, N).astype(np.int64) * 10**9, pa.timestamp("ns"))
    d["decimal_10_2"] = pa.array(
        [None if rng.random() < 0.05 else decimal.Decimal(int(v)).scaleb(-2)
         for v in rng.integers(-10**9, 10**9, N)], pa.decimal128(10, 2))
    d["decimal_38_4"] = pa.array(
        [decimal.Decimal(int(v)).scaleb(-4) for v in rng.integers(-10**17, 10**17, N)],
        pa.decimal128(38, 4))
    return d


def zstd_cases(rng: np.random.Generator) -> dict[str, pa.Array]:
    d: dict[str, pa.Array] = {}
    d["zstd_utf8_nulls"] = pa.array(
        [None if i % 7 == 0 else f"https://x{rng.integers(0, 10**9)}.example/{i}" for i in range(N)])
    d["zstd_binary_frames"] = pa.array(  # 3 frames of up to 8192 values
        [b"\x00k=" + str(rng.integers(0, 5000)).encode() + b"\xff" for _ in range(20_000)],
        pa.binary())
    return d


#: the encoding each case is meant to exercise (checked at generation)
EXPECT = {
    "utf8_lowcard_nulls": "vortex.fsst",
    "utf8_sentences": "vortex.fsst",
    "utf8_long_nulls": "vortex.fsst",
    "utf8_urls": "vortex.onpair",
    "utf8_urls_nulls": "vortex.onpair",
    "utf8_emails": "vortex.onpair",
    "binary_lowcard": "vortex.fsst",
    "ts_ms_whole_days": "vortex.datetimeparts",
    "ts_us_seconds_utc": "vortex.datetimeparts",
    "ts_ms_seconds_nulls": "vortex.datetimeparts",
    "ts_ns_days_and_seconds": "vortex.datetimeparts",
    "decimal_10_2": "vortex.decimal_byte_parts",
    "decimal_38_4": "vortex.decimal_byte_parts",
    "zstd_utf8_nulls": "vortex.zstd",
    "zstd_binary_frames": "vortex.zstd",
}


def _write(name: str, stream: bytes, expected: pa.Array, manifest: dict) -> None:
    got = vx_decode_to_arrow(stream)[0]
    if not got.cast(expected.type).equals(expected):
        raise SystemExit(f"{name}: vortex-data does not decode its own stream to the data")
    encs = _encodings(stream)
    want = EXPECT.get(name) or EXPECT.get(name.removesuffix("_reframed"))
    if want not in encs:
        raise SystemExit(f"{name}: expected {want} in the stream, got {encs}")
    (OUT / f"{name}.vxipc").write_bytes(stream)
    opts = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_file(str(OUT / f"{name}.arrow"), pa.schema([("values", expected.type)]),
                         options=opts) as w:
        w.write_batch(pa.record_batch([expected], names=["values"]))
    manifest[name] = {"rows": len(expected), "encodings": encs, "bytes": len(stream)}
    print(f"{name:28s} {len(stream):7d} B  {' '.join(encs)}")


def _reframe_dict_values(stream: bytes) -> tuple[bytes, pa.Array] | None:
    """The values child of a vortex.dict root (an FSST array with canonical children),
    re-framed by vortex_io's writer."""
    msgs = split_messages(stream)
    dec = vio.MessageDecoder()
    dec.feed(b"".join(msgs))
    ms = list(dec)
    dtype = ms[0].dtype()
    root = ms[1].array(dtype)
    if root.encoding != "vortex.dict" or root.children[1].encoding != "vortex.fsst":
        return None
    values = root.children[1]
    if any(c.encoding not in ("vortex.primitive", "vortex.bool") for c in values.children):
        return None
    s = our_array_stream(values)
    return s, vx_decode_to_arrow(s)[0]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20240093)
    manifest: dict[str, dict] = {}
    for name, arr in cases(rng).items():
        stream = _vx_array_stream(vx.compress(vx.array(arr)))
        _write(name, stream, arr, manifest)
        if name in ("utf8_lowcard_nulls", "binary_lowcard"):
            r = _reframe_dict_values(stream)
            if r is not None:
                s, values = r
                _write(name + "_reframed", s, values.cast(arr.type), manifest)
    tmp = OUT / "_tmp.vortex"
    try:
        for name, arr in zstd_cases(rng).items():
            _write(name, _vx_array_stream(_compact(arr, tmp)), arr, manifest)
    finally:
        tmp.unlink(missing_ok=True)
    buf = io.StringIO()
    json.dump(manifest, buf, indent=1, sort_keys=True)
    (OUT / "manifest.json").write_text(buf.getvalue() + "\n")


if __name__ == "__main__":
    main()
