"""The vortex-ipc command as a new user meets it, through subprocesses: atomic outputs,
``-`` for stdin/stdout, pipes, FIFOs and character devices, a quiet SIGPIPE, one-line errors
with exit status 1 (usage 2), ``--version``, help for every argument, progress on a TTY."""

from __future__ import annotations

import argparse
import io
import os
import pty
import signal
import subprocess
import sys
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vortex_io as vio
from vortex_io.cli import _parser, main
from vortex_io.datasets import trades

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix pipes, FIFOs and signals")

CLI = [sys.executable, "-m", "vortex_io.cli"]
OUT_FORMATS = ["vxipc", "arrows", "arrow", "parquet", "csv"]


def run(*args: str, input: bytes | None = None, cwd=None, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], input=input, stdin=stdin, capture_output=True, cwd=cwd,
                          timeout=120)


def inproc(capsys, *args: str) -> subprocess.CompletedProcess:
    """The command run in this process (``main``), as a CompletedProcess (cheaper than a
    subprocess: for what does not need real stdin, stdout or signals)."""
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse: usage errors, --help
        code = e.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.encode(), err.encode())


def one_line_error(p: subprocess.CompletedProcess, code: int, *texts: str) -> str:
    err = p.stderr.decode()
    assert p.returncode == code, (p.returncode, err)
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vortex-ipc"), err
    for t in texts:
        assert t in lines[0], (t, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    t = trades(20_000)
    vio.write_ipc(d / "t.vxipc", t, chunk_rows=4096, metadata={"who": "test"})
    pq.write_table(t, d / "t.parquet")
    whole = (d / "t.vxipc").read_bytes()
    (d / "cut.vxipc").write_bytes(whole[: len(whole) * 2 // 3])
    return d, t


def listing(d) -> set[str]:
    return set(os.listdir(d))


def test_version():
    p = run("--version")
    assert p.returncode == 0 and p.stdout.decode().strip() == f"vortex-ipc {vio.__version__}"


def test_every_argument_has_help(capsys):
    parser = _parser()
    seen = 0
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, sub in [("vortex-ipc", parser), *subs[0].choices.items()]:
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help and action.help.strip(), (name, action.dest)
            seen += 1
    assert seen >= 15
    for cmd in subs[0].choices:
        p = inproc(capsys, cmd, "--help")
        assert p.returncode == 0 and b"usage: vortex-ipc " + cmd.encode() in p.stdout
    p = run("convert", "--help")
    assert p.returncode == 0 and b"'-' for standard input" in p.stdout


@pytest.mark.parametrize("argv", [[], ["nope"], ["convert"], ["head", "x.vxipc", "-n", "ten"],
                                  ["convert", "a.parquet", "b.vxipc", "--to", "zip"]])
def test_usage_mistakes_are_one_line_exit_2(argv, capsys):
    line = one_line_error(inproc(capsys, *argv), 2, "(see vortex-ipc")
    assert line.endswith(" --help)") and "Traceback" not in line


def test_a_usage_mistake_in_a_subprocess():
    one_line_error(run("head", "x.vxipc", "-n", "ten"), 2, "invalid int value", "--help")


def test_convert_of_a_truncated_input_leaves_nothing(data, tmp_path):
    d, _ = data
    out = tmp_path / "out.parquet"
    one_line_error(run("convert", str(d / "cut.vxipc"), str(out), "-q"), 1,
                   "stream ends inside", "cut.vxipc")
    assert listing(tmp_path) == set(), "no output and no temporary file are left"
    # an existing output is left as it was
    out.write_bytes(b"precious")
    one_line_error(run("convert", str(d / "cut.vxipc"), str(out), "-q"), 1)
    assert out.read_bytes() == b"precious" and listing(tmp_path) == {out.name}


@pytest.mark.parametrize("fmt", OUT_FORMATS)
def test_no_format_leaves_a_partial_output(data, tmp_path, capsys, fmt):
    d, _ = data
    out = tmp_path / f"out.{fmt}"
    one_line_error(inproc(capsys, "convert", str(d / "cut.vxipc"), str(out)), 1,
                   "stream ends inside")
    assert listing(tmp_path) == set()


def test_convert_with_a_bad_encoding_leaves_nothing(data, tmp_path, capsys):
    d, _ = data
    out = tmp_path / "o.vxipc"
    src = str(d / "t.parquet")
    one_line_error(inproc(capsys, "convert", src, str(out), "--encoding", "symbol=vortex.nope"),
                   2, "vortex.nope")
    one_line_error(inproc(capsys, "convert", src, str(out), "--encoding", "nope=vortex.dict"),
                   2, "no column 'nope'")
    # an encoding that cannot hold the column fails while writing: nothing is left either
    one_line_error(inproc(capsys, "convert", src, str(out), "--encoding", "size=vortex.fsst"),
                   1, "column 'size'", "vortex.fsst")
    assert listing(tmp_path) == set()


def test_atomic_output_gets_ordinary_permissions(data, tmp_path, capsys):
    d, t = data
    out = tmp_path / "o.parquet"
    assert inproc(capsys, "convert", str(d / "t.vxipc"), str(out)).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert (out.stat().st_mode & 0o777) == 0o666 & ~umask
    assert pq.read_table(out).equals(t) and listing(tmp_path) == {"o.parquet"}


def test_dash_is_stdin_and_stdout_for_every_command(data, tmp_path):
    d, t = data
    stream = (d / "t.vxipc").read_bytes()
    # convert: '-' out (Vortex IPC unless --to), '-' in (format told by its first bytes)
    p = run("convert", str(d / "t.parquet"), "-", "-q")
    assert p.returncode == 0 and vio.read_table(p.stdout).equals(t)
    arrows = run("convert", str(d / "t.vxipc"), "-", "--to", "arrows", "-q")
    assert arrows.returncode == 0
    assert pa.ipc.open_stream(arrows.stdout).read_all().equals(t)
    p = run("convert", "-", str(tmp_path / "back.parquet"), "-q", input=arrows.stdout)
    assert p.returncode == 0, p.stderr
    assert pq.read_table(tmp_path / "back.parquet").equals(t)
    # the readers: head, schema, inspect, sql
    p = run("head", "-", "-n", "2", input=stream)
    assert p.returncode == 0 and b"(2 rows)" in p.stdout
    with open(d / "t.vxipc", "rb") as f:  # stdin a regular file
        p = run("schema", "-", stdin=f)
    assert p.returncode == 0 and b"who: test" in p.stdout
    p = run("inspect", "-", "--json", input=stream)
    assert p.returncode == 0 and b'"rows": 20000' in p.stdout and b'"file": "<stdin>"' in p.stdout
    pytest.importorskip("duckdb")
    p = run("sql", "-", "SELECT count(*) AS n FROM t", input=stream)
    assert p.returncode == 0 and b"20000" in p.stdout, p.stderr


def test_a_binary_output_is_not_written_to_a_terminal(data):
    d, _ = data
    main, child = pty.openpty()
    try:
        p = subprocess.run([*CLI, "convert", str(d / "t.vxipc"), "-"], stdout=child,
                           stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(child)
        os.close(main)
    one_line_error(p, 2, "terminal")


def _feed_fifo(path, data: bytes) -> threading.Thread:
    def writer():
        with open(path, "wb") as f:
            try:
                f.write(data)
            except BrokenPipeError:
                pass

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    return th


def test_fifos_are_streamed(data, tmp_path):
    d, t = data
    stream = (d / "t.vxipc").read_bytes()
    fifo = tmp_path / "in.vxipc"
    os.mkfifo(fifo)
    for argv, check in [(["inspect", str(fifo)], b"20,000 rows")]:
        th = _feed_fifo(fifo, stream)
        p = run(*argv)
        th.join(10)
        assert p.returncode == 0 and check in p.stdout, (argv, p.stderr)
    th = _feed_fifo(fifo, stream)
    p = run("convert", str(fifo), str(tmp_path / "o.parquet"), "-q")
    th.join(10)
    assert p.returncode == 0 and pq.read_table(tmp_path / "o.parquet").equals(t)
    # a FIFO as the output: written in place (not replaced by a renamed file)
    out = tmp_path / "out.fifo"
    os.mkfifo(out)
    got = {}

    def reader():
        with open(out, "rb") as f:
            got["bytes"] = f.read()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    p = run("convert", str(d / "t.parquet"), str(out), "--to", "vxipc", "-q")
    th.join(30)
    assert p.returncode == 0 and vio.read_table(got["bytes"]).equals(t)
    assert out.is_fifo()
    # the library itself reads a FIFO named by path as a stream (once)
    th = _feed_fifo(fifo, stream)
    assert vio.read_table(str(fifo), columns=["price"]).num_rows == t.num_rows
    th.join(10)


def test_character_devices_and_dev_stdin(data, capsys):
    d, _ = data
    # /dev/null as the output: written to, not replaced
    p = inproc(capsys, "convert", str(d / "t.vxipc"), "/dev/null", "--to", "arrows", "-q")
    assert p.returncode == 0 and os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    # /dev/null as the input: an empty stream, one line
    one_line_error(inproc(capsys, "head", "/dev/null"), 1, "the stream is empty")
    # /dev/stdin on a pipe
    p = run("head", "/dev/stdin", "-n", "1", input=(d / "t.vxipc").read_bytes())
    assert p.returncode == 0 and b"(1 row)" in p.stdout, p.stderr


@pytest.mark.parametrize("argv", [["head", "{}", "-n", "20000"],
                                  ["convert", "{}", "-", "--to", "csv", "-q"]])
def test_a_closed_output_pipe_ends_quietly(data, argv):
    d, _ = data
    args = [a.replace("{}", str(d / "t.vxipc")) for a in argv]
    p = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline()  # like `| head -1`
    p.stdout.close()
    err = p.stderr.read()
    p.wait(60)
    assert err == b"", err
    assert p.returncode == -signal.SIGPIPE  # as a Unix tool ends


def test_errors_are_one_line_exit_1(data, tmp_path, capsys):
    d, _ = data
    (tmp_path / "empty.vxipc").write_bytes(b"")
    (tmp_path / "notes.vxipc").write_text("a,b\n1,2\n")
    one_line_error(run("head", str(d / "t.parquet")), 1, "not a Vortex IPC stream", "Parquet")

    def err(*args: str) -> str:
        return one_line_error(inproc(capsys, *args), 1)

    assert "the stream is empty" in err("schema", str(tmp_path / "empty.vxipc"))
    assert "looks like text" in err("inspect", str(tmp_path / "notes.vxipc"))
    assert "stream ends inside" in err("head", str(d / "cut.vxipc"), "-n", "20000")
    assert "is a directory" in err("head", str(tmp_path))
    assert "no such directory" in err("convert", str(d / "t.vxipc"),
                                      str(tmp_path / "no" / "such" / "o.csv"))
    assert "not a readable Parquet file" in err("convert", str(d / "cut.vxipc"),
                                                str(tmp_path / "o.csv"), "--from", "parquet")
    pytest.importorskip("duckdb")
    # a query that is wrong as written is a usage mistake (2); one that fails on the data, 1
    one_line_error(inproc(capsys, "sql", str(d / "t.vxipc"), "SELEC 1"), 2, "syntax error")
    one_line_error(inproc(capsys, "sql", str(d / "t.vxipc"), "SELECT nope FROM t"), 2, "nope")
    assert "Could not convert" in err("sql", str(d / "t.vxipc"),
                                      "SELECT CAST(symbol AS INTEGER) FROM t")
    assert "stream ends inside" in err("sql", str(d / "cut.vxipc"), "SELECT count(*) FROM t")
    assert "not a Vortex IPC stream" in err("sql", str(d / "t.parquet"), "SELECT 1")


def test_progress_on_a_terminal_shows_rows_bytes_percentage_and_rate(data, tmp_path):
    d, _ = data
    for src in ("t.vxipc",):
        main, child = pty.openpty()
        try:
            p = subprocess.run([*CLI, "convert", str(d / src), str(tmp_path / "o.arrows")],
                               stderr=child, stdout=subprocess.DEVNULL, timeout=60)
            os.close(child)
            child = -1
            out = io.BytesIO()
            while True:
                try:
                    chunk = os.read(main, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out.write(chunk)
        finally:
            if child != -1:
                os.close(child)
            os.close(main)
        assert p.returncode == 0
        last = out.getvalue().decode().split("\r")[-2]  # the final line, before its newline
        assert last.startswith("20,000 rows, ") and "100.0%" in last, last
        assert " of " in last and "B" in last and "rows/s" in last and last.endswith("done\x1b[K"), last
    # not a terminal: nothing on stderr
    p = run("convert", str(d / "t.vxipc"), str(tmp_path / "o2.arrows"))
    assert p.returncode == 0 and p.stderr == b""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("src", ["t.parquet", "t.vxipc"])
def test_progress_line_knows_the_total(data, tmp_path, src):
    d, _ = data
    from vortex_io.cli import Input, Progress, _read

    inp = Input(str(d / src))
    source = _read(inp, src.split(".")[1], 4096)
    term = _Terminal()
    prog = Progress(True, source, stream=term)
    for b, _ in source.batches:
        prog.add(b.num_rows)
    prog.done()
    last = term.getvalue().split("\r")[-1]
    assert last.startswith("20,000 rows, ") and "100.0%" in last and "rows/s" in last, last
    assert " of " in last and "B/s" in last, last
    assert not Progress(True, source, stream=io.StringIO()).enabled  # not a terminal
