"""The vortex-ipc commands agree with each other: the same problem gives every command the
same exit status and the same one-line shape on stderr, ``vortex-ipc <command>: <path>:
<message>`` (no class names, no tracebacks); nothing reaches stdout before the input's first
batch was read; a closed stdout pipe and Ctrl-C end every command quietly.

The problems x commands matrix runs in process (``main``); the pipes and signals in
subprocesses. Exit statuses: 0 success, 1 a bad, cut or unsupported input or a failed
check, 2 a usage mistake, 130 Ctrl-C; a closed stdout pipe: SIGPIPE, as other tools."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

import vortex_io as vio
from vortex_io import dtype as dt
from vortex_io._ipc.flatbuf import root
from vortex_io._ipc.framing import MessageDecoder
from vortex_io._ipc.schema import MessageType, encode_dtype, encode_message_header
from vortex_io.cli import main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix pipes and signals")

CLI = [sys.executable, "-m", "vortex_io.cli"]
T = pa.table({"x": pa.array(range(40), pa.int64()), "s": [f"v{i}" for i in range(40)]})

#: every command, as it reads the file ``{}`` (convert: to CSV on stdout)
COMMANDS = {
    "convert": ["convert", "{}", "-", "--to", "csv", "-q"],
    "inspect": ["inspect", "{}"],
    "inspect --json": ["inspect", "{}", "--json"],
    "head": ["head", "{}"],
    "schema": ["schema", "{}"],
    "schema --check": ["schema", "{}", "--check"],
    "verify": ["verify", "{}"],
    "sql": ["sql", "{}", "SELECT count(*) AS n FROM t"],
}


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    """Good and broken streams: 4 batches of 10 rows after the DType message."""
    d = tmp_path_factory.mktemp("streams")
    vio.write_ipc(d / "good.vxipc", T, chunk_rows=10, compress=False, metadata={"who": "me"})
    data = (d / "good.vxipc").read_bytes()
    dec = MessageDecoder()
    dec.feed(data)
    msgs = list(dec)
    assert len(msgs) == 5
    (d / "empty.vxipc").write_bytes(b"")
    (d / "bad_magic.vxipc").write_bytes(b"\xff\xff\xff\x7fgarbage-garbage-garbage")
    bad = bytearray(data)
    bad[8:40] = b"\xab" * 32
    (d / "corrupt_header.vxipc").write_bytes(bytes(bad))
    # a DType message naming a type this library does not read (Variant)
    body = encode_dtype(dt.Bool())
    pos = root(memoryview(body), "DType")._field(0)
    body = body[:pos] + bytes([11]) + body[pos + 1:]
    hdr = encode_message_header(MessageType.DTYPE, len(body))
    (d / "unsupported_dtype.vxipc").write_bytes(len(hdr).to_bytes(4, "little") + hdr + body)
    (d / "cut_in_dtype.vxipc").write_bytes(data[: msgs[0].size // 2])
    (d / "cut_after_dtype.vxipc").write_bytes(data[: msgs[1].offset + 10])
    (d / "cut_after_3_batches.vxipc").write_bytes(data[: msgs[4].offset + 10])
    (d / "unsupported_encoding.vxipc").write_bytes(
        data.replace(b"vortex.primitive", b"vortex.primitivX"))
    (d / "a_directory").mkdir()
    return d, msgs


def run_inproc(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as e:  # argparse
        status = int(e.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def argv_for(command: str, path) -> list[str]:
    return [a.replace("{}", str(path)) for a in COMMANDS[command]]


def error_line(err: str, command: str) -> str:
    """The one line on stderr, checked for the shape every command uses; without the prefix."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    prog = f"vortex-ipc {command.split()[0]}: "
    assert lines[0].startswith(prog), lines[0]
    assert "Traceback" not in err and "Error:" not in lines[0], lines[0]  # no class names
    return lines[0][len(prog):]


def expect_failure(capsys, command: str, path, status: int = 1) -> str:
    """Run ``command`` on ``path``: it fails with ``status``, stdout empty (verify: its
    ``FAILED`` line), one error line naming ``path`` first; returns the message."""
    got, out, err = run_inproc(capsys, argv_for(command, path))
    assert got == status, (command, got, out, err)
    assert out == (f"{path}: FAILED\n" if command == "verify" else ""), out
    rest = error_line(err, command)
    assert rest.startswith(f"{path}: "), rest
    return rest[len(f"{path}: "):]


# what every command says, problem by problem: (file, what the message starts with, where)
BROKEN_FROM_THE_START = {
    "missing file": ("missing.vxipc", "no such file", ""),
    "a directory": ("a_directory", "is a directory", ""),
    "an empty file": ("empty.vxipc", "the stream is empty", "(byte offset 0)"),
    "bad magic": ("bad_magic.vxipc", "not a Vortex IPC stream", "(message 0, byte offset 0)"),
    "a corrupt header": ("corrupt_header.vxipc", "not a Vortex IPC stream: its first message "
                         "header does not parse", "(message 0, byte offset 0)"),
    "an unsupported dtype": ("unsupported_dtype.vxipc", "DType Variant is not supported",
                             "(message 0, byte offset 0)"),
    "cut inside the dtype message": ("cut_in_dtype.vxipc", "stream ends inside",
                                     "(message 0, byte offset "),
}


@pytest.mark.parametrize("problem, command", [
    (p, c) for p in BROKEN_FROM_THE_START for c in COMMANDS
    if (p, c) != ("a directory", "convert")])  # (convert's input handling decides that one)
def test_an_input_without_a_whole_dtype_message_fails_every_command_alike(
        streams, capsys, problem, command):
    d, _ = streams
    name, start, where = BROKEN_FROM_THE_START[problem]
    if command == "sql":
        pytest.importorskip("duckdb")
    message = expect_failure(capsys, command, d / name)
    assert message.startswith(start), message
    assert where in message, message


BROKEN_AFTER_THE_DTYPE = {
    "cut inside batch 1": ("cut_after_dtype.vxipc", "stream ends inside", "(message 1, byte offset"),
    "an unsupported encoding in batch 1": ("unsupported_encoding.vxipc",
                                           "unsupported encoding 'vortex.primitivX'",
                                           "(message 1, byte offset"),
}


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "schema"])
@pytest.mark.parametrize("problem", list(BROKEN_AFTER_THE_DTYPE))
def test_a_stream_broken_in_its_first_batch_fails_every_command_that_reads_it(
        streams, capsys, problem, command):
    d, _ = streams
    name, text, where = BROKEN_AFTER_THE_DTYPE[problem]
    if command == "sql":
        pytest.importorskip("duckdb")
    message = expect_failure(capsys, command, d / name)
    assert text in message and where in message, message
    assert message.endswith(")")


@pytest.mark.parametrize("name", ["cut_after_dtype.vxipc", "unsupported_encoding.vxipc",
                                  "cut_after_3_batches.vxipc"])
def test_schema_reads_only_the_dtype_message_so_a_whole_one_gives_the_schema_and_check_fails(
        streams, capsys, name):
    d, _ = streams
    status, out, err = run_inproc(capsys, ["schema", str(d / name)])
    assert (status, err) == (0, "")
    assert out.splitlines()[:3] == ["dtype: Struct({x: i64?, s: utf8?})", "x: int64", "s: string"]
    # --check reads the rest first, and fails as inspect and verify do, printing nothing
    msg = expect_failure(capsys, "schema --check", d / name)
    _, _, inspect_err = run_inproc(capsys, ["inspect", str(d / name)])
    assert msg.split(" (message ")[1] == inspect_err.strip().split(" (message ")[1]
    status, out, err = run_inproc(capsys, ["schema", str(d / "good.vxipc"), "--check"])
    assert status == 0 and err == "" and "who: me" in out


def test_head_reads_about_as_far_as_its_rows_so_a_cut_further_on_is_not_noticed(streams, capsys):
    d, msgs = streams
    cut = d / "cut_after_3_batches.vxipc"
    status, out, err = run_inproc(capsys, ["head", str(cut), "-n", "10"])
    assert (status, err) == (0, "") and "(10 rows)" in out
    status, out, err = run_inproc(capsys, ["head", str(cut), "-n", "40"])
    assert status == 1 and out == ""
    assert error_line(err, "head") == (
        f"{cut}: stream ends inside the header of a message (6 of 144 bytes of that part "
        f"present) (message 4, byte offset {msgs[4].offset + 10})")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_good_stream_succeeds_in_every_command(streams, capsys, command):
    d, _ = streams
    if command == "sql":
        pytest.importorskip("duckdb")
    status, out, err = run_inproc(capsys, argv_for(command, d / "good.vxipc"))
    assert (status, err) == (0, "") and out


# -- nothing on stdout before the first batch is read ---------------------------------------------


@pytest.mark.parametrize("to", ["csv", "arrows", "vxipc"])
@pytest.mark.parametrize("name", ["cut_after_dtype.vxipc", "unsupported_encoding.vxipc"])
def test_convert_to_stdout_writes_nothing_when_the_first_batch_fails(streams, capsys, to, name):
    d, _ = streams
    status, out, err = run_inproc(capsys, ["convert", str(d / name), "-", "--to", to, "-q"])
    assert status == 1 and out == "", out  # no CSV header, no schema, no DType message
    assert error_line(err, "convert").startswith(f"{d / name}: ")


def test_a_stream_cut_after_three_batches_keeps_their_rows_on_stdout_and_exits_1(streams):
    d, msgs = streams
    cut = d / "cut_after_3_batches.vxipc"
    p = subprocess.run([*CLI, "convert", str(cut), "-", "--to", "csv"], capture_output=True,
                       timeout=120)
    assert p.returncode == 1
    got = pcsv.read_csv(io.BytesIO(p.stdout))
    assert got.column_names == ["x", "s"] and got["x"].to_pylist() == list(range(30))
    assert p.stderr.decode() == (
        f"vortex-ipc convert: {cut}: stream ends inside the header of a message (6 of 144 "
        f"bytes of that part present) (message 4, byte offset {msgs[4].offset + 10})\n")
    # a file output is not left behind
    out = d / "partial.csv"
    p = subprocess.run([*CLI, "convert", str(cut), str(out)], capture_output=True, timeout=120)
    assert p.returncode == 1 and not out.exists()


# -- usage mistakes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, text", [
    (["convert", "{}", "o.vxipc", "--encoding", "nope=vortex.dict"], "no column 'nope'"),
    (["convert", "{}", "o.vxipc", "--encoding", "x=vortex.nope"], "vortex.nope"),
    (["convert", "{}", "o.vxipc", "--chunk-rows", "0"], "--chunk-rows must be positive"),
    (["convert", "{}", "o.vxipc", "--to", "zip"], "argument --to: invalid choice: 'zip'"),
    (["convert", "{}", "o.unknown"], "o.unknown: cannot tell its format from its extension"),
    (["head", "{}", "-n", "-1"], "-n must be >= 0"),
    (["head", "{}", "-n", "ten"], "argument -n: invalid int value: 'ten'"),
    (["inspect", "{}", "--colour"], "unrecognized arguments: --colour"),
    (["schema", "{}", "--colour"], "unrecognized arguments: --colour"),
    (["verify", "--colour", "{}"], "unrecognized arguments: --colour"),
    (["sql", "{}", "SELECT nope FROM t"], 'Referenced column "nope" not found'),
    (["sql", "{}", "SELEC 1"], "syntax error"),
    (["sql", "{}", "SELECT * FROM nope"], "Table with name nope does not exist"),
])
def test_a_usage_mistake_exits_2_with_the_commands_help_named(streams, capsys, tmp_path,
                                                               monkeypatch, argv, text):
    d, _ = streams
    if argv[0] == "sql":
        pytest.importorskip("duckdb")
    monkeypatch.chdir(tmp_path)
    status, out, err = run_inproc(capsys, [a.replace("{}", str(d / "good.vxipc")) for a in argv])
    assert status == 2 and out == ""
    line = error_line(err.replace("Parser Error:", "").replace("Binder Error:", "")
                      .replace("Catalog Error:", ""), argv[0])
    assert text in line and line.endswith(f" (see vortex-ipc {argv[0]} --help)"), line
    assert os.listdir(tmp_path) == []


def test_a_query_that_fails_on_the_data_is_not_a_usage_mistake(streams, capsys):
    pytest.importorskip("duckdb")
    d, _ = streams
    status, out, err = run_inproc(capsys, ["sql", str(d / "good.vxipc"),
                                           "SELECT CAST(s AS INTEGER) FROM t"])
    assert status == 1 and out == "" and "Could not convert string 'v0'" in err


def test_stdin_is_named_as_stdin_in_every_error(streams, capsys, monkeypatch):
    d, msgs = streams
    for command in ("head", "inspect", "schema --check", "verify", "sql"):
        if command == "sql":
            pytest.importorskip("duckdb")
        argv = argv_for(command, "-")
        monkeypatch.setattr(sys, "stdin", _Stdin((d / "cut_after_dtype.vxipc").read_bytes()))
        status, out, err = run_inproc(capsys, argv)
        assert status == 1 and out == ("<stdin>: FAILED\n" if command == "verify" else "")
        line = error_line(err, command)
        assert line.startswith("<stdin>: stream ends inside"), line
        assert line.endswith(f"(message 1, byte offset {msgs[1].offset + 10})"), line
        assert "/tmp" not in line  # (sql reads a spooled copy; its path is not shown)


class _Stdin:
    """A stand-in for ``sys.stdin`` whose ``buffer`` holds ``data`` (or raises ``exc``)."""

    def __init__(self, data: bytes = b"", exc: BaseException | None = None) -> None:
        self.buffer = _Raising(exc) if exc is not None else _Buffer(io.BytesIO(data))


class _Buffer(io.BufferedReader):
    name = "<stdin>"  # as sys.stdin.buffer's


class _Raising(io.RawIOBase):
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        raise self.exc

    def read(self, n: int = -1) -> bytes:
        raise self.exc

    def peek(self, n: int = 0) -> bytes:
        raise self.exc


def test_an_unexpected_error_is_one_line_unless_a_traceback_is_asked_for(streams, capsys,
                                                                          monkeypatch):
    d, _ = streams

    def boom(*a, **k):
        raise TypeError("a bug")

    monkeypatch.setattr("vortex_io.cli.inspect_stream", boom)
    status, out, err = run_inproc(capsys, ["inspect", str(d / "good.vxipc")])
    assert status == 1 and out == ""
    assert error_line(err.replace("(TypeError)", "(T)"), "inspect") == \
        "unexpected error (T): a bug (VORTEX_IPC_TRACEBACK=1 shows where)"
    monkeypatch.setenv("VORTEX_IPC_TRACEBACK", "1")
    with pytest.raises(TypeError, match="a bug"):
        main(["inspect", str(d / "good.vxipc")])


# -- Ctrl-C -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", list(COMMANDS))
def test_ctrl_c_ends_every_command_with_130_quietly(capsys, monkeypatch, command):
    if command == "sql":
        pytest.importorskip("duckdb")
    argv = argv_for(command, "-")
    if command == "convert":
        argv += ["--from", "vxipc"]
    monkeypatch.setattr(sys, "stdin", _Stdin(exc=KeyboardInterrupt()))
    assert run_inproc(capsys, argv) == (130, "", "")


def _open_fifo_for_writing(path, deadline: float) -> int:
    while True:  # (a command that failed before opening it would leave open() blocked)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
            continue
        os.set_blocking(fd, True)
        return fd


@pytest.mark.parametrize("argv", [["convert", "{}", "{out}/o.parquet", "--from", "vxipc"],
                                  ["head", "{}", "-n", "40"]])
def test_ctrl_c_mid_stream_exits_130_and_leaves_no_partial_output(streams, tmp_path, argv):
    d, msgs = streams
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    out.mkdir()
    args = [a.replace("{}", str(fifo)).replace("{out}", str(out)) for a in argv]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    p = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    fd = _open_fifo_for_writing(fifo, time.monotonic() + 60)
    try:
        os.write(fd, (d / "good.vxipc").read_bytes()[: msgs[3].offset])  # 2 of 4 batches
        deadline = time.monotonic() + 30
        if argv[0] == "convert":  # the output (a temporary file beside it) is being written
            while not os.listdir(out) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert os.listdir(out)
        else:
            time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        os.close(fd)
        if p.poll() is None:
            p.kill()
    assert (p.returncode, stdout, stderr) == (130, b"", b"")
    assert os.listdir(out) == []


# -- a closed stdout pipe ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [*COMMANDS, "--help", "head --help"])
def test_a_closed_stdout_pipe_ends_every_command_quietly(streams, command):
    """As ``| head -c1`` that has exited: no 'Exception ignored', no traceback, ended by
    SIGPIPE (also without PYTHONUNBUFFERED, which buffers stdout)."""
    d, _ = streams
    if command == "sql":
        pytest.importorskip("duckdb")
    argv = command.split() if "--help" in command else argv_for(command, d / "good.vxipc")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    p = subprocess.Popen([*CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    err = p.stderr.read()
    p.wait(60)
    assert (p.returncode, err) == (-signal.SIGPIPE, b"")


def test_python_dash_m_vortex_io_is_the_command(streams):
    d, _ = streams
    p = subprocess.run([sys.executable, "-m", "vortex_io", "head", str(d / "missing.vxipc")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert p.stderr == f"vortex-ipc head: {d / 'missing.vxipc'}: no such file\n"
