"""Write the golden canonical streams in tests/golden/canonical/ with vortex-data 0.93.

For each case: ``<name>.vortex`` is a Vortex IPC stream written by vortex-data
(uncompressed: ``vx.Array.from_arrow`` then ``vortex.serde.encode_ipc_array_buffers``),
``<name>.arrow`` is the source data as an Arrow IPC file written by pyarrow (one record
batch per source chunk; arrays are stored as the column ``values``), and
``manifest.json`` records, per case: ``kind`` (``array`` or ``table``), ``layout``
(``per_chunk``: one Array message per Arrow batch; ``one_message``: the whole table in one
Array message, a ``vortex.chunked`` array), the number of Array ``messages`` and the
``encodings`` vortex-data reports for the arrays it wrote (from its ``display_tree``).

Run from the repository root (needs the dev extra: vortex-data==0.93.0):

    .venv/bin/python tests/golden/make_canonical.py

The data is fixed, so the output is reproducible; tests/test_interop.py reads it.
"""

from __future__ import annotations

import decimal
import json
import re
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import vortex as vx
import vortex.serde as serde

OUT = Path(__file__).resolve().parent / "canonical"


def _dec(values: list[str | None], t: pa.DataType) -> pa.Array:
    return pa.array([None if v is None else decimal.Decimal(v) for v in values], type=t)


def cases() -> dict[str, dict]:
    """name -> {"chunks": [pa.Array | pa.Table], "layout": ...}."""
    nan32 = np.array([np.nan], dtype=np.float32)[0]
    prim = pa.table({
        "i8": pa.array([-128, 0, None, 127, 5], pa.int8()),
        "i16": pa.array([-32768, 1, 2, None, 32767], pa.int16()),
        "i32": pa.array([None, -(2**31), 0, 2**31 - 1, 7], pa.int32()),
        "i64": pa.array([-(2**63), None, 0, 2**63 - 1, -1], pa.int64()),
        "u8": pa.array([0, 255, None, 1, 2], pa.uint8()),
        "u16": pa.array([0, 65535, 3, None, 4], pa.uint16()),
        "u32": pa.array([2**32 - 1, 0, 1, 2, None], pa.uint32()),
        "u64": pa.array([2**64 - 1, None, 0, 1, 2**63], pa.uint64()),
        "f16": pa.array(np.array([1.5, -0.0, np.inf, np.nan, 65504], dtype=np.float16),
                        mask=np.array([0, 0, 0, 0, 1], dtype=bool)),
        "f32": pa.array(np.array([nan32, -0.0, -np.inf, 3.25, 1e-40], dtype=np.float32)),
        "f64": pa.array([float("nan"), -0.0, float("inf"), None, 2.5e-308]),
    })
    return {
        "primitives": {"chunks": [prim.slice(0, 3), prim.slice(3)]},
        "bool_sliced": {"chunks": [
            pa.array([True, False, None, True, True, False, None, False, True, True, False])
            .slice(3, 7)]},
        "utf8": {"chunks": [pa.array(["", "a", None, "héllo wörld", "a string longer than 12",
                                      "z"]).slice(1, 4)]},
        "large_utf8": {"chunks": [pa.array(["x", None, "yy" * 10, ""], pa.large_string())]},
        "utf8_view": {"chunks": [pa.array(["short", None, "inline12byte", "out of line: 13+ bytes",
                                           "", "another long string value"], pa.string_view())]},
        "binary": {"chunks": [pa.array([b"\x00\xff", None, b"", b"\x80" * 20], pa.binary())]},
        "binary_view": {"chunks": [pa.array([b"\x00\x01", b"\xfe" * 30, None], pa.binary_view())]},
        "decimal128": {"chunks": [_dec(["12.34", None, "-99999999.99", "0.01"],
                                       pa.decimal128(10, 2))]},
        "decimal256": {"chunks": [_dec(["1" + "0" * 44 + ".12345", None, "-0.00001", "0"],
                                       pa.decimal256(50, 5))]},
        "list_i32": {"chunks": [pa.array([[1, 2], None, [], [3, None, 5], [6]],
                                         pa.list_(pa.int32())).slice(1, 4)]},
        "large_list_utf8": {"chunks": [pa.array([["a", None], [], None, ["long string value here"]],
                                                pa.large_list(pa.string()))]},
        "list_view_i64": {"chunks": [pa.ListViewArray.from_arrays(
            pa.array([3, 0, 1, 0], pa.int32()), pa.array([2, 3, 0, 1], pa.int32()),
            pa.array([10, 11, None, 13, 14], pa.int64()),
            mask=pa.array([False, False, False, True]))]},
        "fixed_size_list_f32": {"chunks": [pa.array(
            [[1.0, 2.0, 3.0], None, [float("nan"), -0.0, None]], pa.list_(pa.float32(), 3))]},
        "list_of_struct": {"chunks": [pa.array(
            [[{"k": "a", "v": 1}], [], None, [{"k": None, "v": 2}, {"k": "c", "v": None}]],
            pa.list_(pa.struct([("k", pa.string()), ("v", pa.int16())])))]},
        "struct_nested": {"chunks": [pa.array(
            [{"id": 1, "inner": {"x": 1.5, "tag": "a"}}, None,
             {"id": 3, "inner": None}, {"id": 4, "inner": {"x": None, "tag": "d"}}],
            pa.struct([pa.field("id", pa.int32(), nullable=False),
                       ("inner", pa.struct([("x", pa.float64()), ("tag", pa.string())]))]))]},
        "temporal": {"chunks": [pa.table({
            "ts_s": pa.array([0, None, -1], pa.timestamp("s")),
            "ts_ms_utc": pa.array([1_700_000_000_000, 1, None], pa.timestamp("ms", "UTC")),
            "ts_us": pa.array([None, 2, 3], pa.timestamp("us")),
            "ts_ns_ny": pa.array([1, 2**62, None], pa.timestamp("ns", "America/New_York")),
            "date32": pa.array([0, -719162, None], pa.date32()),
            "date64": pa.array([86_400_000, None, 0], pa.date64()),
            "time32_s": pa.array([0, 86399, None], pa.time32("s")),
            "time32_ms": pa.array([None, 1, 86_399_999], pa.time32("ms")),
            "time64_us": pa.array([5, None, 86_399_999_999], pa.time64("us")),
            "time64_ns": pa.array([86_399_999_999_999, 0, None], pa.time64("ns")),
        })]},
        "null": {"chunks": [pa.nulls(5)]},
        "all_null_i32": {"chunks": [pa.array([None, None, None], pa.int32())]},
        "empty_i64": {"chunks": [pa.array([], pa.int64())]},
        "dtype_only": {"chunks": [], "type": pa.utf8()},
        "multi_chunk_utf8": {"chunks": [pa.array(["a", None]), pa.array([], pa.string()),
                                        pa.array(["ccc" * 7, "d"])]},
        "chunked_table": {"chunks": [pa.Table.from_batches([
            pa.record_batch({"a": [1, 2], "b": ["x", None]}),
            pa.record_batch({"a": [3], "b": ["a longer string value"]})])],
            "layout": "one_message"},
    }


def _vx_encodings(a) -> list[str]:
    return re.findall(r"^\s*[\w\[\]]+: ([a-z_]+(?:\.[a-z_]+)+)\(", a.display_tree(), re.M)


def _message(array_or_parts) -> bytes:
    return b"".join(bytes(x) for x in array_or_parts)


def write_case(name: str, spec: dict) -> dict:
    chunks = spec["chunks"]
    layout = spec.get("layout", "per_chunk")
    is_table = bool(chunks) and isinstance(chunks[0], pa.Table)
    if is_table:
        table = pa.concat_tables(chunks)
        batches = table.to_batches()
        source = vx.Array.from_arrow(table)
    else:
        t = chunks[0].type if chunks else spec["type"]
        batches = [pa.record_batch([c], names=["values"]) for c in chunks]
        table = pa.Table.from_batches(batches, schema=pa.schema([pa.field("values", t)]))
        source = vx.Array.from_arrow(pa.chunked_array(chunks, type=t))
    _, dtype_parts = serde.encode_ipc_array_buffers(source)
    if layout == "one_message":
        arrays = [source]
    else:
        arrays = list(source.chunks()) if hasattr(source, "chunks") else [source]
        assert [len(a) for a in arrays] == [b.num_rows for b in batches]
    stream = _message(dtype_parts) + b"".join(
        _message(serde.encode_ipc_array_buffers(a)[0]) for a in arrays)
    (OUT / f"{name}.vortex").write_bytes(stream)
    with pa.ipc.new_file(OUT / f"{name}.arrow", table.schema) as w:
        for b in batches:  # empty batches included: one per source chunk
            w.write_batch(b)
    encodings = sorted({e for a in arrays for e in _vx_encodings(a)})
    return {"kind": "table" if is_table else "array", "layout": layout,
            "messages": len(arrays), "encodings": encodings}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    manifest = {name: write_case(name, spec) for name, spec in cases().items()}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    for name, m in manifest.items():
        size = (OUT / f"{name}.vortex").stat().st_size
        print(f"{name:22s} {m['messages']} message(s) {size:6d} B  {', '.join(m['encodings'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
