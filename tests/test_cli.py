"""The vortex-ipc command: conversions in every direction keep values and metadata (schema
and batch level, duplicates included); inspect --json is stable; mistakes are one line."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import vortex_io as vio
from vortex_io._arrow import schema_metadata_pairs
from vortex_io.cli import convert, inspect_stream, main

STREAM_MD = [(b"app", b"test"), (b"dup", b"1"), (b"dup", b"2"), (b"bin", b"\xff\x00")]


def table(n: int = 2500) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({
        "i": pa.array(rng.integers(-9, 9, n), mask=rng.random(n) < 0.1),
        "f": rng.normal(size=n).round(3),
        "s": pa.array(np.array(["a", "bb", "ccc"])[rng.integers(0, 3, n)]),
        "ts": pa.array(np.arange(n) * 1000, pa.timestamp("us", "UTC")),
    })


def write_arrows(path, t: pa.Table, batch_md: bool = True) -> list:
    mds = []
    schema = t.schema.with_metadata(pa.KeyValueMetadata(STREAM_MD))
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, schema) as w:
        for k, b in enumerate(t.to_batches(max_chunksize=1000)):
            md = pa.KeyValueMetadata([(b"batch", str(k).encode()), (b"x", b"1"), (b"x", b"2")])
            mds.append(md)
            w.write_batch(b, custom_metadata=md if batch_md else None)
    return mds


def read_arrows(path):
    with pa.OSFile(str(path), "rb") as f:
        r = pa.ipc.open_stream(f)
        out = []
        while True:
            try:
                out.append(r.read_next_batch_with_custom_metadata())
            except StopIteration:
                break
        return r.schema, out


def md_pairs(md) -> list:
    if isinstance(md, pa.Schema):
        return schema_metadata_pairs(md)
    return [(md.key(i), md.value(i)) for i in range(len(md))] if md is not None else []


def test_arrow_stream_to_vortex_and_back_keeps_values_and_metadata(tmp_path):
    t = table()
    src = tmp_path / "in.arrows"
    mds = write_arrows(src, t)
    vx = tmp_path / "mid.vxipc"
    assert convert(str(src), str(vx)) == t.num_rows
    with vio.StreamReader(str(vx)) as r:
        assert list(r.metadata.items()) == STREAM_MD
        batches = list(r)
    assert [list(b.metadata.items()) for b in batches] == [md_pairs(m) for m in mds]
    assert pa.Table.from_batches([b.to_arrow() for b in batches]).equals(t)
    back = tmp_path / "out.arrows"
    convert(str(vx), str(back))
    schema, got = read_arrows(back)
    assert md_pairs(schema) == STREAM_MD
    assert [md_pairs(m) for _, m in got] == [md_pairs(m) for m in mds]
    assert pa.Table.from_batches([b for b, _ in got]).equals(t)


def test_arrow_file_round_trip(tmp_path):
    t = table()
    src = tmp_path / "in.arrows"
    mds = write_arrows(src, t)
    f1 = tmp_path / "a.arrow"
    convert(str(src), str(f1))
    vx = tmp_path / "b.vxipc"
    convert(str(f1), str(vx))
    f2 = tmp_path / "c.feather"
    convert(str(vx), str(f2))
    with pa.memory_map(str(f2)) as m:
        r = pa.ipc.open_file(m)
        assert md_pairs(r.schema) == STREAM_MD
        got = [r.get_batch_with_custom_metadata(i) for i in range(r.num_record_batches)]
    assert [md_pairs(md) for _, md in got] == [md_pairs(m) for m in mds]
    assert pa.Table.from_batches([b for b, _ in got]).equals(t)


def test_parquet_and_csv_round_trips(tmp_path):
    t = table()
    pq.write_table(t.replace_schema_metadata({"k": "v"}), tmp_path / "in.parquet", row_group_size=700)
    vx = tmp_path / "p.vxipc"
    convert(str(tmp_path / "in.parquet"), str(vx), chunk_rows=1000)
    with vio.StreamReader(str(vx)) as r:
        assert r.metadata[b"k"] == b"v"
        rows = [len(b.array) for b in r]
    assert rows == [1000, 1000, 500]  # re-chunked to --chunk-rows
    assert pa.table(vio.scan(str(vx))).equals(t)
    assert vio.StreamReader(str(vx)).read_arrow().equals(t)
    convert(str(vx), str(tmp_path / "out.parquet"))
    assert pq.read_table(tmp_path / "out.parquet").equals(t.replace_schema_metadata({"k": "v"}))
    convert(str(vx), str(tmp_path / "out.csv"))
    csv_t = pcsv.read_csv(tmp_path / "out.csv")
    assert csv_t["s"].to_pylist() == t["s"].to_pylist()
    assert csv_t["i"].to_pylist() == t["i"].to_pylist()
    vx2 = tmp_path / "from_csv.vxipc"
    convert(str(tmp_path / "out.csv"), str(vx2), chunk_rows=999)
    assert pa.table(vio.scan(str(vx2))).equals(csv_t)


def test_no_compress_and_forced_encoding(tmp_path):
    t = table()
    src = tmp_path / "in.arrows"
    write_arrows(src, t, batch_md=False)
    out = tmp_path / "o.vxipc"
    assert main(["convert", str(src), str(out), "--no-compress", "-q",
                 "--encoding", "s=vortex_io.inverted_index"]) == 0
    with vio.StreamReader(str(out)) as r:
        encs = {b.array.field("s").encoding for b in r}
    assert encs == {"vortex_io.inverted_index"}


def test_inspect_json_is_stable_and_complete(tmp_path):
    t = table()
    src = tmp_path / "in.arrows"
    write_arrows(src, t)
    vx = tmp_path / "x.vxipc"
    convert(str(src), str(vx))
    info = inspect_stream(str(vx))
    again = inspect_stream(str(vx))
    assert json.dumps(info) == json.dumps(again)
    assert info["rows"] == t.num_rows and info["chunks"] == 3 and info["messages"] == 4
    assert info["metadata"] == [[_s(k), _s(v)] for k, v in STREAM_MD]
    assert set(info["columns"]) == {"i", "f", "s", "ts"}
    assert info["batches"][0]["metadata"][0] == ["batch", "0"]
    assert info["batches"][0]["tree"]["encoding"] == "vortex.struct"
    for key in ("file", "bytes", "dtype", "decoded_bytes"):
        assert key in info
    proc = subprocess.run([sys.executable, "-m", "vortex_io.cli", "inspect", str(vx), "--json"],
                          capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout)["rows"] == t.num_rows


def _s(b: bytes) -> str:
    try:
        return b.decode()
    except UnicodeDecodeError:
        import base64

        return "base64:" + base64.b64encode(b).decode()


@pytest.mark.parametrize("argv, status, line", [
    (["inspect", "/nonexistent/file.vxipc"], 1,
     "vortex-ipc inspect: /nonexistent/file.vxipc: no such file"),
    (["head", "/nonexistent/file.vxipc"], 1, "vortex-ipc head: /nonexistent/file.vxipc: no such file"),
    (["convert", "/nonexistent/in.parquet", "out.vxipc"], 1,
     "vortex-ipc convert: /nonexistent/in.parquet: no such file"),
    # a missing file is that, whatever its extension says
    (["convert", "in.unknown", "out.vxipc"], 1, "vortex-ipc convert: in.unknown: no such file"),
    (["convert", "junk.unknown", "out.vxipc"], 2,
     "vortex-ipc convert: junk.unknown: cannot tell its format from its extension or first "
     "bytes; use --from (vxipc, arrows, arrow, parquet, csv) (see vortex-ipc convert --help)"),
])
def test_user_mistakes_are_one_line(tmp_path, argv, status, line):
    (tmp_path / "junk.unknown").write_bytes(b"\x00\x01")
    proc = subprocess.run([sys.executable, "-m", "vortex_io.cli", *argv], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == status
    assert proc.stderr == line + "\n" and proc.stdout == ""


def test_corrupt_stream_is_one_line(tmp_path):
    bad = tmp_path / "bad.vxipc"
    bad.write_bytes(b"\x10\x00\x00\x00garbage-garbage-garbage")
    proc = subprocess.run([sys.executable, "-m", "vortex_io.cli", "head", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "bad.vxipc" in proc.stderr and "Traceback" not in proc.stderr


def test_head_and_schema(tmp_path, capsys):
    vx = tmp_path / "x.vxipc"
    vio.write_ipc(str(vx), table(50), metadata={"who": "me"})
    assert main(["head", str(vx), "-n", "3"]) == 0
    out = capsys.readouterr().out
    assert "(3 rows)" in out and out.splitlines()[0].split() == ["i", "f", "s", "ts"]
    assert main(["schema", str(vx)]) == 0
    out = capsys.readouterr().out
    assert "ts: timestamp[us, tz=UTC]" in out and "who: me" in out


# -- inspect and schema shorten long values to the terminal; --full and --json keep them whole --


@pytest.fixture
def long_values(tmp_path):
    """A stream whose metadata, column names and statistics are long (and one value holds
    control characters)."""
    name = "c" * 150
    t = pa.table({name: pa.array(range(3000), pa.int64()),
                  "s": pa.array(["z" * 300 + str(i % 7) for i in range(3000)])})
    md = {"note": "line1\nline2\x1b[31m" + "y" * 3000, "big": "x" * 3072, "k" * 200: "v",
          "bin": b"\xff" * 500}
    path = tmp_path / "long.vxipc"
    with vio.StreamWriter(str(path), t.schema, metadata=md, compress=True) as w:
        w.write(t.to_batches()[0], metadata={"batch": "b" * 4000})
    return path, name, md


@pytest.mark.parametrize("columns", [100, 60, 150])
def test_inspect_fits_each_line_to_the_terminal(long_values, capsys, monkeypatch, columns):
    path, _, _ = long_values
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= columns, [ln for ln in lines if len(ln) > columns]
    big = next(ln for ln in lines if ln.startswith("  big: "))
    assert big.endswith("… (3,072 bytes)") and len(big) == columns
    assert big == "  big: " + "x" * (columns - len("  big: … (3,072 bytes)")) + "… (3,072 bytes)"
    # per-message metadata, a long key, a binary value, control characters shown escaped
    assert any(ln.startswith("  batch: bbb") and ln.endswith("… (4,000 bytes)") for ln in lines)
    assert any(ln.startswith("  kkkk") and "… (200 bytes): v" in ln for ln in lines)
    assert any(ln.startswith("  bin: base64:") and ln.endswith("… (500 bytes)") for ln in lines)
    note = next(ln for ln in lines if ln.startswith("  note: "))
    assert note.startswith("  note: line1\\nline2\\x1b[31myyy") and "\x1b" not in note
    # the dtype (it holds the long name) and the columns table
    assert lines[1].startswith("dtype: Struct({ccc") and lines[1].endswith(" characters)")
    assert any(ln.startswith("c" * 8) and ln.split()[0].endswith("…") for ln in lines)
    assert lines[-1] == f"(shortened to fit {columns} columns: --full shows all)"


def test_inspect_full_prints_every_value_whole(long_values, capsys, monkeypatch):
    path, name, _ = long_values
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["inspect", str(path), "--full"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "  big: " + "x" * 3072 in lines
    assert "  batch: " + "b" * 4000 in lines
    assert "  " + "k" * 200 + ": v" in lines
    assert f"  note: line1\\nline2\\x1b[31m{'y' * 3000}" in lines
    assert any(ln.startswith(name + " ") for ln in lines)  # the columns table
    assert any(f"    {name}: " in ln for ln in lines)  # the encoding tree
    assert any("max=" + "z" * 300 + "6" in ln for ln in lines)  # statistics
    assert "…" not in out and "--full" not in out


def test_inspect_json_stays_whole_and_machine_readable(long_values, capsys, monkeypatch):
    path, name, md = long_values
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["inspect", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert dict(info["metadata"])["big"] == "x" * 3072
    assert dict(info["metadata"])["note"] == md["note"]
    assert info["batches"][0]["metadata"] == [["batch", "b" * 4000]]
    assert name in info["columns"]


def test_schema_shortens_its_metadata_as_inspect_does(long_values, capsys, monkeypatch):
    path, _, _ = long_values
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["schema", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  big: " + "x" * (100 - len("  big: … (3,072 bytes)")) + "… (3,072 bytes)" in lines
    assert main(["schema", str(path), "--full"]) == 0
    assert "  big: " + "x" * 3072 in capsys.readouterr().out.splitlines()
