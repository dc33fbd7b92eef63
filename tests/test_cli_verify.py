"""``vortex-ipc verify`` and ``convert --integrity``: per file one line on stdout, ``FILE: OK,
<summary>`` (exit 0) or ``FILE: FAILED`` with the first problem on stderr in the shape of
every command's errors, ``vortex-ipc verify: FILE: <message>`` (exit 1)."""

from __future__ import annotations

import struct
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vortex_io as vio
from vortex_io._ipc.framing import MessageDecoder
from vortex_io.cli import main
from vortex_io.datasets import trades

T = trades(30_000)


@pytest.fixture
def files(tmp_path):
    pq.write_table(T, tmp_path / "t.parquet")
    vio.write_ipc(tmp_path / "plain.vxipc", T, chunk_rows=8192)
    assert main(["convert", str(tmp_path / "t.parquet"), str(tmp_path / "i.vxipc"),
                 "--integrity", "--chunk-rows", "8192", "-q"]) == 0
    return tmp_path


def _one_line(capsys) -> str:
    """The one stdout line of a verify that passed (nothing on stderr)."""
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert len(lines) == 1 and out.err == "", out
    return lines[0]


def _failed(capsys, path) -> str:
    """The one stderr line of a verify of ``path`` that failed, checking its stdout line is
    ``path: FAILED``."""
    out = capsys.readouterr()
    assert out.out == f"{path}: FAILED\n", out
    lines = out.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"vortex-ipc verify: {path}: "), out
    assert "Error" not in lines[0], lines[0]  # no exception class names
    return lines[0].removeprefix(f"vortex-ipc verify: {path}: ")


def test_convert_integrity_writes_a_verified_stream(files):
    with vio.StreamReader(files / "i.vxipc", require_integrity=True) as r:
        assert r.integrity
        assert r.read_arrow().equals(T)
    with vio.StreamReader(files / "plain.vxipc") as r:
        assert not r.integrity


def test_verify_ok(files, capsys):
    assert main(["verify", str(files / "i.vxipc")]) == 0
    line = _one_line(capsys)
    # DType + 4 batches + the end marker
    assert line == (f"{files / 'i.vxipc'}: OK, 6 messages (4 batches), 30,000 rows, "
                    f"{(files / 'i.vxipc').stat().st_size:,} bytes, integrity yes "
                    "(CRC-32C per message, end marker)")
    assert main(["verify", str(files / "plain.vxipc")]) == 0
    assert "5 messages (4 batches), 30,000 rows" in (line := _one_line(capsys))
    assert line.endswith("integrity no (no checksums: corruption cannot be detected)")


def test_verify_names_the_first_problem(files, capsys):
    data = (files / "i.vxipc").read_bytes()
    dec = MessageDecoder()
    dec.feed(data)
    msgs = list(dec)
    m = msgs[2]
    bad = bytearray(data)
    bad[m.offset + m.size - 100] ^= 0x80  # in message 2's body
    (files / "bad.vxipc").write_bytes(bytes(bad))
    assert main(["verify", str(files / "bad.vxipc")]) == 1
    (want,) = struct.unpack("<I", m.header.custom_metadata[b"vortex_io.crc32c"][4:8])
    got = vio.integrity.crc32c(bytes(bad[m.offset + 4 + m.header_size: m.offset + m.size]))
    assert _failed(capsys, files / "bad.vxipc") == (
        f"body checksum mismatch: the record says "
        f"{want:#010x}, the {m.header.body_size}-byte body gives {got:#010x} "
        f"(message 2, byte offset {m.offset})")
    # a cut at a message boundary
    (files / "cut.vxipc").write_bytes(data[: msgs[-1].offset])
    assert main(["verify", str(files / "cut.vxipc")]) == 1
    assert _failed(capsys, files / "cut.vxipc") == (
        "the stream carries integrity data but ends after message 4 without its end marker "
        f"(message 5, byte offset {msgs[-1].offset})")
    # require_integrity
    assert main(["verify", "--require-integrity", str(files / "plain.vxipc")]) == 1
    assert _failed(capsys, files / "plain.vxipc").startswith(
        "the stream carries no integrity data")


def test_verify_several_files_and_exit_status(files, capsys):
    data = (files / "i.vxipc").read_bytes()
    (files / "trail.vxipc").write_bytes(data + b"\x00")
    # every file is verified, a missing one too, each with its line on stdout
    assert main(["verify", str(files / "missing.vxipc"), str(files / "i.vxipc"),
                 str(files / "trail.vxipc"), str(files)]) == 1
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[0] == f"{files / 'missing.vxipc'}: FAILED"
    assert lines[1].startswith(f"{files / 'i.vxipc'}: OK, 6 messages")
    assert lines[2:] == [f"{files / 'trail.vxipc'}: FAILED", f"{files}: FAILED"]
    assert out.err.splitlines() == [
        f"vortex-ipc verify: {files / 'missing.vxipc'}: no such file",
        f"vortex-ipc verify: {files / 'trail.vxipc'}: 1 byte(s) follow the stream's end marker "
        f"(message 6, byte offset {len(data)})",
        f"vortex-ipc verify: {files}: is a directory"]


def test_verify_usage_errors(files, capsys):
    assert main(["verify", str(files / "missing.vxipc")]) == 1
    assert _failed(capsys, files / "missing.vxipc") == "no such file"
    assert main(["convert", str(files / "t.parquet"), str(files / "x.csv"), "--integrity"]) == 2
    assert "--integrity applies to Vortex IPC output only" in capsys.readouterr().err


def test_verify_console_script(files):
    # the installed command, as a user runs it: one line, no traceback
    bad = bytearray((files / "i.vxipc").read_bytes())
    bad[200] ^= 1
    (files / "bad.vxipc").write_bytes(bytes(bad))
    p = subprocess.run([sys.executable, "-m", "vortex_io.cli", "verify", str(files / "bad.vxipc")],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stdout == f"{files / 'bad.vxipc'}: FAILED\n"
    assert p.stderr.startswith(f"vortex-ipc verify: {files / 'bad.vxipc'}: body checksum mismatch")
    assert p.stderr.count("\n") == 1
    p = subprocess.run([sys.executable, "-m", "vortex_io.cli", "verify", str(files / "i.vxipc")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.count("\n") == 1


def test_verify_decodes_every_batch(tmp_path, capsys):
    # a stream without integrity data whose second batch is malformed but framed correctly:
    # verify decodes it (framing alone would pass)
    t = pa.table({"x": pa.array(range(100), pa.int64())})
    buf = vio.write_ipc(tmp_path / "a.vxipc", t, chunk_rows=50, compress=False)
    data = bytearray((tmp_path / "a.vxipc").read_bytes())
    assert buf == len(data)
    dec = MessageDecoder()
    dec.feed(bytes(data))
    m = list(dec)[2]
    body = m.offset + 4 + m.header_size
    fb_len = int.from_bytes(data[m.offset + m.size - 4: m.offset + m.size], "little")
    fb = m.offset + m.size - 4 - fb_len
    # the buffer descriptor's length (u32 at +4 of the 8-byte Buffer struct): too long
    spec = data.find(b"\x00\x00\x03\x00\x90\x01\x00\x00", fb)  # padding 0, exp 3, 400 bytes
    assert body < fb <= spec
    data[spec + 4: spec + 8] = (10_000).to_bytes(4, "little")
    (tmp_path / "b.vxipc").write_bytes(bytes(data))
    assert main(["verify", str(tmp_path / "b.vxipc")]) == 1
    assert "(message 2, byte offset" in _failed(capsys, tmp_path / "b.vxipc")
