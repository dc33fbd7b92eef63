"""The ``vortex-ipc`` command: convert, inspect, head, schema, sql, verify.

    vortex-ipc convert trades.parquet trades.vxipc          # any direction, by extension
    vortex-ipc convert in.arrows out.csv --from arrows --to csv
    vortex-ipc convert trades.parquet - | vortex-ipc head -  # '-': stdout / stdin
    vortex-ipc inspect trades.vxipc [--json]
    vortex-ipc head trades.vxipc -n 5
    vortex-ipc schema trades.vxipc
    vortex-ipc sql trades.vxipc "SELECT symbol, count(*) FROM t GROUP BY 1"
    vortex-ipc verify trades.vxipc                          # checksums, end marker, every message
    vortex-ipc convert trades.parquet trades.vxipc --integrity
    vortex-ipc convert 'logs/*.parquet' logs.vxipc           # a glob or a directory: one table
    vortex-ipc convert trades.parquet trades/ --partition-by date,symbol  # hive directory

Formats: Vortex IPC (``.vxipc``), Arrow IPC stream (``.arrows``), Arrow IPC file
(``.arrow``, ``.feather``), Parquet (``.parquet``), CSV (``.csv``). Conversion streams
batch by batch with bounded memory. Arrow schema metadata becomes the Vortex stream
metadata and each record batch's custom metadata the batch metadata, and back again.

Every command takes ``-`` for standard input (and ``convert`` for standard output), and
reads pipes, FIFOs and character devices named as paths as the streams they are.
``convert`` writes its output atomically: a temporary file beside the target, renamed
over it when the conversion succeeded, removed when it failed (so a failed conversion
leaves no partial file behind, nor changes an existing one).

Every command reports a problem the same way, through ``_run_command``: one line on
stderr, ``vortex-ipc <command>: <path>: <message>`` (the path left out when the problem
is about none; the message of a stream error names the message index and byte offset), and
the exit status says what kind of problem it was (``EXIT_STATUSES``): 0 success, 1 a bad,
cut or unsupported input (a ``VortexIPCError``; a missing file, a directory) or a failed
check, 2 a mistake in how the command was called (argparse's own, an option's value, a
column or query the input does not have; the line ends ``(see vortex-ipc <command>
--help)``), 130 Ctrl-C (quietly). A closed output pipe (``| head -c1``) ends the command
quietly, as it does other Unix tools. ``VORTEX_IPC_TRACEBACK=1`` shows the traceback of an
unexpected error (a bug).

Each command reads what it shows and fails when that is not whole: ``schema`` the DType
message (``--check``: the whole stream), ``head`` about as far as its rows, the others the
whole stream. Nothing is written to standard output before the input's first message
and first batch have been read (``convert`` does not start a CSV or a stream it cannot go
on with); a failure further on leaves what was written and adds the error on stderr.
``inspect`` and ``schema`` shorten long values to fit the terminal (``--full``: whole).

A command is a subparser of ``_parser()`` with help for every argument and
``set_defaults(func=...)``; ``main`` runs it under ``_run_command`` (one-line errors, exit
codes, broken pipes); ``Input`` and ``Output`` give it ``-``, streamed and atomic files.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import errno
import json
import os
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["main", "convert", "inspect_stream", "format_table", "Input", "Output", "UsageError",
           "CommandError"]

FORMATS = ("vxipc", "arrows", "arrow", "parquet", "csv")
FORMAT_NAMES = {"vxipc": "Vortex IPC stream", "arrows": "Arrow IPC stream",
                "arrow": "Arrow IPC file", "parquet": "Parquet file", "csv": "CSV file"}
_EXT = {
    ".vxipc": "vxipc", ".vortex": "vxipc", ".arrows": "arrows", ".arrow": "arrow",
    ".feather": "arrow", ".ipc": "arrow", ".parquet": "parquet", ".pq": "parquet", ".csv": "csv",
}
#: formats whose bytes are not text (not written to a terminal)
_BINARY = ("vxipc", "arrows", "arrow", "parquet")
STDIO = "-"
#: the command's name, first in every error line
PROG = "vortex-ipc"


class _CommandLineError(Exception):
    """An error the command reports itself: a one-line message and, when it is about one,
    the ``path`` of the input or output it concerns (shown before the message)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class UsageError(_CommandLineError):
    """A mistake in how the command was called (exit status 2): an option's value, a
    column or a query the input does not have, a format that cannot be told.

    >>> e = UsageError("cannot tell the format from its extension", path="in.dat")
    >>> e.path, str(e)
    ('in.dat', 'cannot tell the format from its extension')
    """


class CommandError(_CommandLineError):
    """A failure the command explains in one line (exit status 1), about ``path`` when
    given.

    >>> e = CommandError("no such file", path="trades.vxipc")
    >>> e.path, str(e)
    ('trades.vxipc', 'no such file')
    """


# -- inputs and outputs: '-', pipes and FIFOs, atomic files ------------------------------------


class Input:
    """An input named on the command line: ``-`` (standard input), a pipe, FIFO or
    character device (read as a stream, once), or a regular file (read by path: memory
    mapped, seekable)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.stdin = path == STDIO
        self.name = "<stdin>" if self.stdin else path
        self.size: int | None = None
        self._file: Any = None
        if self.stdin:
            self.streamed = True
            return
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise CommandError("no such file", path=path) from None
        except OSError as e:
            raise CommandError(_strerror(e), path=path) from None
        if stat.S_ISDIR(st.st_mode):
            raise CommandError("is a directory", path=path)
        self.streamed = not stat.S_ISREG(st.st_mode)
        if not self.streamed:
            self.size = st.st_size

    def file(self) -> Any:
        """The input as a binary file object (opened once; standard input's buffer)."""
        if self._file is None:
            self._file = sys.stdin.buffer if self.stdin else open(self.path, "rb")
        return self._file

    def peek(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer at end of input), not consumed."""
        if not self.streamed:
            with open(self.path, "rb") as f:
                return f.read(n)
        f = self.file()
        if hasattr(f, "peek"):
            return f.peek(n)[:n]
        return b""

    def source(self) -> Any:
        """What the readers take: the path of a regular file, else the file object."""
        return self.path if not self.streamed else self.file()

    def seekable(self) -> Any:
        """A seekable source for the formats read by random access (Parquet, Arrow IPC
        files): the path, or a stream's bytes read into memory."""
        if not self.streamed:
            return self.path
        import pyarrow as pa

        data = self.file().read()
        self.size = len(data)
        return pa.BufferReader(data)

    def close(self) -> None:
        if self._file is not None and not self.stdin:
            self._file.close()
        self._file = None


class Output:
    """A context manager for an output named on the command line; gives a binary file
    object. ``-``: standard output. A pipe, FIFO or character device: written as it is.
    Anything else: a temporary file in the target's directory, renamed over the target
    when the block succeeds and removed when it raises (an existing target is unchanged)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.stdout = path == STDIO
        self.name = "<stdout>" if self.stdout else path
        self._tmp: str | None = None
        self._file: Any = None
        st = None
        if not self.stdout:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise CommandError(_strerror(e), path=path) from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise CommandError("is a directory", path=path)
        self.streamed = self.stdout or (st is not None and not stat.S_ISREG(st.st_mode))

    @property
    def is_terminal(self) -> bool:
        return self.stdout and sys.stdout.isatty()

    def __enter__(self) -> Any:
        if self.stdout:
            sys.stdout.flush()
            self._file = sys.stdout.buffer
        elif self.streamed:
            self._file = open(self.path, "wb")
        else:
            d = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(d):
                raise CommandError(f"no such directory {d!r}", path=self.path)
            fd, self._tmp = tempfile.mkstemp(prefix=f".{os.path.basename(self.path)}.",
                                             suffix=".partial", dir=d)
            self._file = os.fdopen(fd, "wb")
        return self._file

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        f, self._file = self._file, None
        if self.stdout:
            if exc_type is None:
                f.flush()
            return
        try:
            f.close()
        except OSError:
            if exc_type is None:
                self._discard()
                raise
        if self._tmp is None:
            return
        if exc_type is not None:
            self._discard()
            return
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self._tmp, 0o666 & ~umask)  # as open() would have created it
        os.replace(self._tmp, self.path)
        self._tmp = None

    def _discard(self) -> None:
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)
            self._tmp = None


def _sniff(prefix: bytes) -> str | None:
    """The format of input starting with ``prefix``, by its signature."""
    from ._ipc.framing import looks_like

    if prefix.startswith(b"PAR1"):
        return "parquet"
    if prefix.startswith(b"ARROW1"):
        return "arrow"
    if prefix.startswith(b"\xff\xff\xff\xff"):
        return "arrows"
    what = looks_like(prefix)
    if what is None and len(prefix) >= 4:
        return "vxipc"
    if what is not None and what.startswith("text"):
        return "csv"
    return None


def _input_format(path: str, given: str | None) -> tuple[Input, str]:
    """The input ``path`` opened, and its format: ``given``, else by extension, else by its
    first bytes (a Parquet, Arrow or Vortex IPC signature, or text: CSV)."""
    if given:
        return Input(path), given
    ext = os.path.splitext(path)[1].lower()
    if ext in _EXT:
        return Input(path), _EXT[ext]
    inp = Input(path)  # (a missing file: "no such file", before its format)
    fmt = _sniff(inp.peek(8))
    if fmt is None:
        raise UsageError(f"cannot tell its format from its extension or first bytes; use "
                         f"--from ({', '.join(FORMATS)})", path=inp.name)
    return inp, fmt


def _output_format(path: str, given: str | None) -> str:
    if given:
        return given
    if path == STDIO:
        return "vxipc"
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXT:
        raise UsageError(f"cannot tell its format from its extension; use --to "
                         f"({', '.join(FORMATS)})", path=path)
    return _EXT[ext]


# -- reading: (schema, stream metadata, iterator of (record batch, batch metadata)) -------------

Batches = Iterator[tuple[Any, Any]]


class Source:
    """What ``convert`` reads: the Arrow schema (without metadata), the stream metadata
    pairs, the batches with their metadata, and what progress can know: the input's size,
    the bytes read so far (``tell``) and the total number of rows."""

    def __init__(self, schema: Any, metadata: list[Any], batches: Batches, *,
                 size: int | None = None, tell: Callable[[], int] | None = None,
                 rows: int | None = None) -> None:
        self.schema, self.metadata, self.batches = schema, metadata, batches
        self.size, self.tell, self.rows = size, tell, rows


def _read(inp: Input, fmt: str, batch_rows: int) -> Source:
    """The input read as ``fmt``, batch by batch."""
    import pyarrow as pa

    from ._arrow import schema_metadata_pairs

    size = inp.size
    if fmt == "vxipc":
        from ._ipc.reader import StreamReader

        r = StreamReader(inp.source())
        schema = r.schema

        def gen() -> Batches:
            with r:
                for b in r:
                    rb = b.to_arrow()
                    if not isinstance(rb, pa.RecordBatch):
                        rb = pa.record_batch([rb], names=["values"])
                    yield rb.replace_schema_metadata(None), (b.metadata.to_arrow() if b.metadata else None)

        return Source(schema.remove_metadata(), list(r.metadata.items()), gen(), size=size,
                      tell=lambda: r._dec.position)
    if fmt == "arrows":
        f = pa.OSFile(inp.path, "rb") if not inp.streamed else pa.PythonFile(inp.file(), "r")
        rd = pa.ipc.open_stream(f)
        pos = [0]

        def gen() -> Batches:
            try:
                while True:
                    try:
                        b, md = rd.read_next_batch_with_custom_metadata()
                    except StopIteration:
                        return
                    if not inp.streamed:
                        pos[0] = f.tell()
                    yield b, md
            finally:
                if not inp.streamed:
                    f.close()

        return Source(rd.schema.remove_metadata(), schema_metadata_pairs(rd.schema), gen(),
                      size=size, tell=None if inp.streamed else lambda: pos[0])
    if fmt == "arrow":
        src = inp.seekable()
        f = pa.memory_map(src, "rb") if isinstance(src, str) else src
        rd = pa.ipc.open_file(f)
        n = rd.num_record_batches
        done = [0]

        def gen() -> Batches:
            for i in range(n):
                b, md = rd.get_batch_with_custom_metadata(i)
                done[0] = i + 1
                yield b, md

        return Source(rd.schema.remove_metadata(), schema_metadata_pairs(rd.schema), gen(),
                      size=inp.size, tell=lambda: (inp.size or 0) * done[0] // max(n, 1))
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(inp.seekable())
        schema = pf.schema_arrow
        total = pf.metadata.num_rows
        done = [0]

        def gen() -> Batches:
            for b in pf.iter_batches(batch_size=batch_rows):
                done[0] += b.num_rows
                yield b, None

        # bytes read: estimated from the rows read (the file's size is known)
        return Source(schema.remove_metadata(), schema_metadata_pairs(schema), gen(),
                      size=inp.size, rows=total,
                      tell=lambda: (inp.size or 0) * done[0] // max(total, 1))
    if fmt == "csv":
        import pyarrow.csv as pcsv

        f = pa.OSFile(inp.path, "rb") if not inp.streamed else pa.PythonFile(inp.file(), "r")
        rd = pcsv.open_csv(f, read_options=pcsv.ReadOptions(block_size=1 << 22))
        pos = [0]

        def gen() -> Batches:
            for b in rd:
                if not inp.streamed:
                    pos[0] = f.tell()  # what the reader has read (it reads ahead)
                yield b, None

        return Source(rd.schema, [], gen(), size=size,
                      tell=None if inp.streamed else lambda: pos[0])
    raise UsageError(f"cannot read format {fmt!r}")  # pragma: no cover - argparse checks


def _rechunk(batches: Batches, rows: int) -> Batches:
    """Batches of ``rows`` rows; batches that carry metadata are kept as they are."""
    import pyarrow as pa

    pending: list[Any] = []
    count = 0
    for b, md in batches:
        if md:
            if pending:
                yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0], None
                pending, count = [], 0
            yield b, md
            continue
        pending.append(b)
        count += b.num_rows
        while count >= rows:
            t = pa.Table.from_batches(pending)
            head = t.slice(0, rows).combine_chunks()
            yield (head.to_batches()[0] if head.num_rows else head.to_batches(), None)
            rest = t.slice(rows)
            pending = rest.to_batches() if rest.num_rows else []
            count -= rows
    if pending and count:
        t = pa.Table.from_batches(pending).combine_chunks()
        yield t.to_batches()[0], None


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:,.1f} TB"  # pragma: no cover


class Progress:
    """Progress of a conversion on stderr, when stderr is a terminal: rows, bytes read,
    the percentage done (when the input's size or row count is known) and the rate."""

    #: seconds between updates
    INTERVAL = 0.2

    def __init__(self, enabled: bool, source: Source | None = None,
                 stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self.source = source
        self.rows = 0
        self.start = time.monotonic()
        self._last = 0.0

    def line(self) -> str:
        """The current progress line."""
        src = self.source
        parts = [f"{self.rows:,} rows"]
        read = src.tell() if src is not None and src.tell is not None else None
        pct = None
        if src is not None and src.rows:
            pct = 100.0 * self.rows / src.rows
        elif src is not None and src.size and read is not None:
            pct = 100.0 * read / src.size
        if read is not None:
            parts.append(f"{_size(read)} of {_size(src.size)}" if src is not None and src.size
                         else _size(read))
        if pct is not None:
            parts.append(f"{min(pct, 100.0):.1f}%")
        dt = max(time.monotonic() - self.start, 1e-6)
        rate = f"{self.rows / dt:,.0f} rows/s"
        if read is not None:
            rate += f", {_size(read / dt)}/s"
        parts.append(rate)
        return ", ".join(parts)

    def add(self, n: int) -> None:
        self.rows += n
        if self.enabled:
            now = time.monotonic()
            if now - self._last >= self.INTERVAL:
                self._last = now
                self.stream.write(f"\r{self.line()}\x1b[K")
                self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.stream.write(f"\r{self.line()}, done\x1b[K\n")
            self.stream.flush()

    def clear(self) -> None:
        """End the progress line (before an error message)."""
        if self.enabled and self._last:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


# -- convert ----------------------------------------------------------------------------------


def _check_encodings(encodings: dict[str, str] | None, schema: Any) -> None:
    """Refuse ``--encoding`` for unknown columns or encoding IDs before anything is written."""
    if not encodings:
        return
    from ._compress import encoder_for

    for name, enc in encodings.items():
        if name not in schema.names:
            raise UsageError(f"--encoding {name}={enc}: no column {name!r}; columns are "
                             f"{', '.join(schema.names)}")
        try:
            encoder_for(enc)
        except (KeyError, ValueError) as e:
            raise UsageError(f"--encoding {name}={enc}: {e.args[0] if e.args else e}") from None


def convert(src: str, dst: str, *, src_fmt: str | None = None, dst_fmt: str | None = None,
            chunk_rows: int = 65_536, compress: bool = True,
            encodings: dict[str, str] | None = None, progress: bool = False,
            integrity: bool = False, partition_by: list[str] | None = None,
            existing: str = "error") -> int:
    """Convert ``src`` to ``dst`` (paths, or ``-`` for stdin / stdout) between the formats
    ``FORMATS``, by extension unless given; returns the number of rows written. The output
    is written atomically: on any error no file is left at ``dst`` (an existing one is
    unchanged). ``integrity``: write Vortex IPC with CRC-32C records and an end marker
    (``vortex_io.integrity``).

    ``src`` may be a directory (its Vortex IPC, Parquet and Arrow files, or with
    ``src_fmt`` that format's, in every subdirectory but hidden ones, sorted) or a glob:
    the files are read one after the other as one table (their schemas must be the same;
    hive ``key=value`` directory names are not read as columns).

    ``partition_by``: ``dst`` is a directory written in the hive layout (see
    ``vortex_io.write_ipc``), Vortex IPC only; a new directory is written beside and
    renamed into place, an existing one is written into as ``existing`` says
    (``'error'`` when it is not empty, ``'overwrite_or_ignore'``, ``'delete_matching'``)."""
    for name, f in (("--from", src_fmt), ("--to", dst_fmt)):
        if f is not None and f not in FORMATS:
            raise UsageError(f"{name}: unknown format {f!r}; choose from {', '.join(FORMATS)}")
    if partition_by is not None:
        return _convert_partitioned(src, dst, src_fmt=src_fmt, dst_fmt=dst_fmt,
                                    chunk_rows=chunk_rows, compress=compress,
                                    encodings=encodings, progress=progress,
                                    integrity=integrity, partition_by=partition_by,
                                    existing=existing)
    fo = _output_format(dst, dst_fmt)
    if integrity and fo != "vxipc":
        raise UsageError("--integrity applies to Vortex IPC output only")
    many = _input_files(src, src_fmt)
    if many is not None:
        return _convert_many(many, dst, fo, chunk_rows=chunk_rows, compress=compress,
                             encodings=encodings, progress=progress, integrity=integrity,
                             base=src if os.path.isdir(src) else None)
    inp, fi = _input_format(src, src_fmt)
    try:
        out = Output(dst)
        if out.is_terminal and fo in _BINARY:
            raise UsageError(f"not writing a {FORMAT_NAMES[fo]} to a terminal: redirect the "
                             f"output, or use --to csv")
        if not out.streamed and not inp.streamed and os.path.exists(dst) \
                and os.path.samefile(src, dst):
            raise UsageError("the output is the input", path=dst)
        source = _read_located(inp, fi, chunk_rows)
        source.batches = _batches_located(source.batches, fi, inp.name)
        return _write_out(out, fo, source, progress, chunk_rows=chunk_rows, compress=compress,
                          encodings=encodings, integrity=integrity)
    finally:
        inp.close()


def _write_out(out: Output, fo: str, source: Source, progress: bool, *, chunk_rows: int,
               compress: bool, encodings: dict[str, str] | None, integrity: bool) -> int:
    """``source`` written to ``out`` as ``fo``, its first batch read before anything is
    written, with progress; returns the rows written."""
    _check_encodings(encodings, source.schema)
    source.batches = _read_ahead(source.batches)
    prog = Progress(progress, source)
    try:
        with out as f:
            _write(f, fo, source, prog, chunk_rows=chunk_rows, compress=compress,
                   encodings=encodings, integrity=integrity)
    except BaseException:
        prog.clear()
        raise
    prog.done()
    return prog.rows


#: the formats a directory input is read in without --from
_DIR_FORMATS = ("vxipc", "arrows", "arrow", "parquet")


def _input_files(src: str, given: str | None) -> list[tuple[str, str]] | None:
    """The files a directory or glob input names, sorted, each with its format; None for
    one input. A directory gives its Vortex IPC, Arrow and Parquet files (``given``: the
    files of that format's extensions) in every subdirectory not hidden (``.`` or ``_``
    first, as pyarrow and Polars skip them); a glob the files it matches."""
    if src == STDIO:
        return None
    if os.path.isdir(src):
        from ._scan import directory_files

        wanted = (given,) if given else _DIR_FORMATS
        try:
            paths = directory_files(
                src, lambda f: _EXT.get(os.path.splitext(f)[1].lower()) in wanted)
        except FileNotFoundError:
            kinds = FORMAT_NAMES[given] if given else "Vortex IPC, Arrow or Parquet"
            raise CommandError(f"is a directory without {kinds} files", path=src) from None
    else:
        from . import _fs

        if not _fs.has_glob(src) or os.path.exists(src):
            return None
        from ._scan import expand_sources

        try:
            paths = [os.fspath(p) for p in expand_sources(src) if os.path.isfile(p)]
        except FileNotFoundError:
            paths = []
        if not paths:
            raise CommandError("no files match", path=src)
    out = []
    for p in paths:
        fmt = given or _EXT.get(os.path.splitext(p)[1].lower())
        if fmt is None:
            raise UsageError("cannot tell its format from its extension; use --from "
                             f"({', '.join(FORMATS)})", path=p)
        out.append((p, fmt))
    fmts = sorted({f for _, f in out})
    if len(fmts) > 1:
        raise UsageError(f"holds files of several formats ({', '.join(FORMAT_NAMES[f] for f in fmts)}): "
                         "choose one with --from", path=src)
    return out


def _read_many(files: list[tuple[str, str]], batch_rows: int, base: str | None = None
               ) -> Source:
    """The files read one after the other as one source: the first file's schema and
    stream metadata; a file whose schema differs fails when it is reached. ``base``: the
    directory the files were found in, whose hive partitions (``key=value`` directories
    agreeing over all files) become columns after the data's, as ``vortex_io.scan`` reads
    them."""
    import pyarrow as pa

    from ._errors import VortexIPCError
    from ._hive import partitions

    sizes = []
    for p, _ in files:
        try:
            sizes.append(os.path.getsize(p))
        except OSError as e:
            raise CommandError(_strerror(e), path=p) from None
    first_inp = Input(files[0][0])
    first = _read_located(first_inp, files[0][1], batch_rows)
    try:
        parts = None if base is None else \
            partitions([(p, base) for p, _ in files], None, None, first.schema.names)
    except VortexIPCError as e:
        raise CommandError(e.reason, path=e.source or base) from None
    schema = first.schema if parts is None else \
        pa.schema(list(first.schema) + list(parts.schema), metadata=first.schema.metadata)
    done = [0]  # bytes of the files read to their end
    current: list[Source] = [first]

    def gen() -> Batches:
        for i, (path, fmt) in enumerate(files):
            if i == 0:
                inp, src = first_inp, first
            else:
                inp = Input(path)
                src = _read_located(inp, fmt, batch_rows)
                if not src.schema.equals(first.schema):
                    inp.close()
                    raise CommandError(f"its schema differs from {files[0][0]}'s: "
                                       f"{_schema_line(src.schema)} vs "
                                       f"{_schema_line(first.schema)}", path=path)
            current[0] = src
            try:
                if parts is None:
                    yield from _batches_located(src.batches, fmt, inp.name)
                    continue
                for batch, md in _batches_located(src.batches, fmt, inp.name):
                    cols = parts.columns(parts.names, batch.num_rows, i)
                    yield pa.RecordBatch.from_arrays(list(batch.columns) + cols,
                                                     schema=schema), md
            finally:
                inp.close()
            done[0] += sizes[i]

    def tell() -> int:
        t = current[0].tell
        return done[0] + (t() if t is not None else 0)

    return Source(schema, first.metadata, gen(), size=sum(sizes), tell=tell)


def _schema_line(schema: Any) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def _convert_many(files: list[tuple[str, str]], dst: str, fo: str, *, chunk_rows: int,
                  compress: bool, encodings: dict[str, str] | None, progress: bool,
                  integrity: bool, base: str | None = None) -> int:
    """``convert`` of a directory or glob input to one output (``base``: the directory, whose
    hive partitions are columns)."""
    out = Output(dst)
    if out.is_terminal and fo in _BINARY:
        raise UsageError(f"not writing a {FORMAT_NAMES[fo]} to a terminal: redirect the "
                         f"output, or use --to csv")
    if not out.streamed and os.path.exists(dst) \
            and any(os.path.samefile(p, dst) for p, _ in files):
        raise UsageError("the output is one of the inputs", path=dst)
    return _write_out(out, fo, _read_many(files, chunk_rows, base), progress,
                      chunk_rows=chunk_rows, compress=compress, encodings=encodings,
                      integrity=integrity)


def _convert_partitioned(src: str, dst: str, *, src_fmt: str | None, dst_fmt: str | None,
                         chunk_rows: int, compress: bool, encodings: dict[str, str] | None,
                         progress: bool, integrity: bool, partition_by: list[str],
                         existing: str) -> int:
    """``convert --partition-by``: a hive directory of Vortex IPC files at ``dst``."""
    import shutil

    import pyarrow as pa

    from ._errors import ColumnNotFoundError
    from ._ipc.partitioned import EXISTING, _check_keys
    from ._ipc.writer import write_ipc

    spec = ",".join(partition_by)
    if (dst_fmt or "vxipc") != "vxipc":
        raise UsageError("--partition-by writes Vortex IPC files only (--to vxipc)")
    if dst == STDIO:
        raise UsageError("--partition-by writes a directory, not standard output")
    if existing not in EXISTING:
        raise UsageError(f"--existing: choose from {', '.join(EXISTING)}")
    if not partition_by or not all(partition_by):
        raise UsageError(f"--partition-by {spec!r}: expects COLUMN[,COLUMN...]")
    if os.path.exists(dst) and not os.path.isdir(dst):
        raise CommandError("is not a directory (--partition-by writes a directory)", path=dst)
    if existing == "error" and os.path.isdir(dst) and os.listdir(dst):
        raise CommandError("directory is not empty; use --existing overwrite_or_ignore or "
                           "delete_matching to write into it", path=dst)
    parent = os.path.dirname(os.path.abspath(dst))
    if not os.path.isdir(parent):
        raise CommandError(f"no such directory {parent!r}", path=dst)
    many = _input_files(src, src_fmt)
    inp: Input | None = None
    if many is not None:
        source = _read_many(many, chunk_rows, src if os.path.isdir(src) else None)
    else:
        inp, fi = _input_format(src, src_fmt)
        source = _read_located(inp, fi, chunk_rows)
        source.batches = _batches_located(source.batches, fi, inp.name)
    try:
        try:
            keys = _check_keys(partition_by, source.schema)
        except ColumnNotFoundError as e:
            raise UsageError(f"--partition-by {spec}: no column {e.column!r}; columns are "
                             f"{', '.join(e.choices)}") from None
        except (ValueError, TypeError) as e:
            msg = str(e).replace("write_ipc(): ", "")
            raise UsageError(f"--partition-by {spec}: {msg}") from None
        _check_encodings(encodings, source.schema)
        for k in keys:
            if encodings and k in encodings:
                raise UsageError(f"--encoding {k}=...: {k!r} is a partition column, not in "
                                 "the files")
        source.batches = _read_ahead(source.batches)
        prog = Progress(progress, source)

        def batches() -> Iterator[Any]:
            for b, _md in source.batches:  # (batch metadata is not kept)
                prog.add(b.num_rows)
                yield b

        reader = pa.RecordBatchReader.from_batches(source.schema, batches())
        target = dst
        tmp = None
        if not os.path.exists(dst):  # a new directory: written beside, renamed into place
            tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(dst))}.",
                                   suffix=".partial", dir=parent)
            target, existing = tmp, "overwrite_or_ignore"
        try:
            write_ipc(target, reader, partition_by=keys, metadata=source.metadata or None,
                      compress=compress, chunk_rows=chunk_rows, encodings=encodings,
                      integrity=integrity, existing=existing)
            if tmp is not None:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o777 & ~umask)  # as mkdir would have made it
                os.rename(tmp, dst)
                tmp = None
        except BaseException:
            prog.clear()
            raise
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        prog.done()
        return prog.rows
    finally:
        if inp is not None:
            inp.close()


def _read_located(inp: Input, fmt: str, batch_rows: int) -> Source:
    """``_read``, with errors of the Arrow readers named after the input."""
    try:
        return _read(inp, fmt, batch_rows)
    except _ARROW_ERRORS as e:
        raise CommandError(f"not a readable {FORMAT_NAMES[fmt]}: {_first_line(e)}",
                           path=inp.name) from None


def _batches_located(batches: Batches, fmt: str, name: str) -> Batches:
    """``batches``, with errors of the Arrow readers named after the input."""
    try:
        yield from batches
    except _ARROW_ERRORS as e:
        raise CommandError(f"reading the {FORMAT_NAMES[fmt]} failed: {_first_line(e)}",
                           path=name) from None


def _read_ahead(batches: Batches) -> Batches:
    """``batches`` with the first one read now: an input whose first batch cannot be read
    fails before anything is written (no CSV header, no stream start on standard output).
    A failure further on stops the output where it is (standard output keeps what was
    written; a file output is removed)."""
    it = iter(batches)
    first = next(it, None)

    def gen() -> Batches:
        if first is not None:
            yield first
        yield from it

    return gen()


class _Unclosed:
    """A binary file for Arrow's writers, which close their sink (CSV's does): closing it
    flushes, the file (standard output, or the one ``Output`` renames) stays open."""

    closed = False

    def __init__(self, f: Any) -> None:
        self._f = f

    def write(self, b: Any) -> Any:
        return self._f.write(b)

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.flush()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


def _write(f: Any, fo: str, source: Source, prog: Progress, *, chunk_rows: int,
           compress: bool, encodings: dict[str, str] | None, integrity: bool = False) -> None:
    """Write ``source`` to the binary file object ``f`` as ``fo``."""
    import pyarrow as pa

    schema, stream_md = source.schema, source.metadata
    batches = source.batches
    w: Any  # the writer of the output format
    if fo == "vxipc":
        import vortex_io as vio

        with vio.StreamWriter(f, schema, metadata=stream_md, compress=compress,
                              encodings=encodings, integrity=integrity) as w:
            for b, md in _rechunk(batches, chunk_rows):
                w.write(b, metadata=md)
                prog.add(b.num_rows)
        return
    out_schema = schema.with_metadata(pa.KeyValueMetadata(stream_md)) if stream_md else schema
    sink = pa.PythonFile(_Unclosed(f), mode="w")  # keeps its own position: pipes are fine
    if fo in ("arrows", "arrow"):
        w = (pa.ipc.new_stream if fo == "arrows" else pa.ipc.new_file)(sink, out_schema)

        def put(b: Any, md: Any) -> None:
            w.write_batch(b, custom_metadata=md) if md else w.write_batch(b)
    elif fo == "parquet":
        import pyarrow.parquet as pq

        w = pq.ParquetWriter(sink, out_schema, compression="zstd")

        def put(b: Any, md: Any) -> None:
            w.write_batch(b, row_group_size=chunk_rows)
    elif fo == "csv":
        import pyarrow.csv as pcsv

        w = pcsv.CSVWriter(sink, schema)

        def put(b: Any, md: Any) -> None:
            w.write_batch(b)
    else:  # pragma: no cover - argparse checks
        raise UsageError(f"cannot write format {fo!r}")
    try:
        for b, md in batches:
            put(b, md)
            prog.add(b.num_rows)
    except BaseException:
        with contextlib.suppress(Exception):  # the output is discarded anyway
            w.close()
        raise
    w.close()
    f.flush()


# -- inspect ----------------------------------------------------------------------------------


def _bytes_json(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(b).decode("ascii")


def _md_json(md: Any) -> list[list[str]]:
    return [[_bytes_json(k), _bytes_json(v)] for k, v in md.items()]


def _tree_json(a: Any) -> dict[str, Any]:
    own = sum(b.nbytes for b in a.buffers)
    node: dict[str, Any] = {
        "encoding": a.encoding,
        "dtype": repr(a.dtype),
        "len": len(a),
        "bytes": a.nbytes,
        "own_bytes": own,
    }
    extra = a.vtable.describe(a)
    if extra:
        node["detail"] = extra
    if a._stats:
        try:
            st = a.stats.as_dict(a.dtype)
        except Exception:  # stats are advisory: show what decodes
            st = {}
        node["stats"] = {k: (v if isinstance(v, (int, float, str, bool)) or v is None else repr(v))
                         for k, v in sorted(st.items())}
    if a.children:
        node["children"] = {name: _tree_json(c) for name, c in zip(a.vtable.child_names(a), a.children)}
    return node


def _logical_bytes(a: Any) -> int:
    """Bytes of the column once decoded to Arrow (for ratios)."""
    return int(a.to_arrow().nbytes)


def inspect_stream(path: str | Input) -> dict[str, Any]:
    """Everything ``inspect`` shows, as JSON-ready data (stable key order). ``path``: a
    path, or an ``Input`` (standard input, a pipe)."""
    from . import dtype as dt
    from ._ipc.reader import StreamReader

    inp = path if isinstance(path, Input) else Input(path)
    out: dict[str, Any] = {"file": os.path.basename(inp.path) if not inp.stdin else inp.name,
                           "bytes": inp.size}
    with StreamReader(inp.source()) as r:
        out["dtype"] = repr(r.dtype)
        out["metadata"] = _md_json(r.metadata)
        batches = []
        columns: dict[str, dict[str, Any]] = {}
        names = list(r.dtype.names) if isinstance(r.dtype, dt.Struct) else ["values"]
        for b in r:
            a = b.array
            entry = {"index": b.index, "offset": b.offset, "rows": len(a), "bytes": a.nbytes,
                     "metadata": _md_json(b.metadata), "tree": _tree_json(a)}
            batches.append(entry)
            fields = [a.field(n) for n in names] if isinstance(r.dtype, dt.Struct) else [a]
            for n, f in zip(names, fields):
                c = columns.setdefault(n, {"dtype": repr(f.dtype), "bytes": 0, "decoded_bytes": 0,
                                           "encodings": {}})
                c["bytes"] += f.nbytes
                c["decoded_bytes"] += _logical_bytes(f)
                c["encodings"][f.encoding] = c["encodings"].get(f.encoding, 0) + 1
        if out["bytes"] is None:  # a stream: what was read
            out["bytes"] = r._dec.position
    dec_bytes = 0
    for c in columns.values():
        c["ratio"] = round(c["bytes"] / c["decoded_bytes"], 4) if c["decoded_bytes"] else None
        dec_bytes += c["decoded_bytes"]
    out["rows"] = sum(b["rows"] for b in batches)
    out["chunks"] = len(batches)
    out["messages"] = len(batches) + 1
    out["decoded_bytes"] = dec_bytes
    out["columns"] = columns
    out["batches"] = batches
    return out


class _Fit:
    """Shortens what the text listings (``inspect``, ``schema``) print so each line fits
    ``width`` columns: a long value ends in ``…`` and its full length (``… (3,072
    bytes)``). ``width=None`` (``--full``): nothing is shortened. Control characters are
    shown escaped (``\\n``) either way, so a value is one line and cannot drive the
    terminal. ``cut`` turns true once something was shortened."""

    #: the widest a column name (a table cell, a tree label) is shown
    NAME = 32

    def __init__(self, width: int | None) -> None:
        self.width = width
        self.cut = False

    def text(self, s: str, room: int, total: str | None = None) -> str:
        """``s`` in at most ``room`` columns (its first 4 characters at least);
        ``total`` names its full length after the ``…``."""
        s = _printable(s)
        if self.width is None or len(s) <= room:
            return s
        self.cut = True
        tail = f"… ({total})" if total else "…"
        return s[: max(room - len(tail), 4)] + tail

    def name(self, s: str, room: int = NAME) -> str:
        """A column name, a table cell or a tree label (at most ``room`` columns)."""
        return self.text(s, room)

    def line(self, s: str) -> str:
        """A whole line, cut at the width."""
        return self.text(s, self.width or 0)

    def note(self) -> None:
        """When something was shortened: a last line saying how to see it whole."""
        if self.cut:
            print(self.line(f"(shortened to fit {self.width} columns: --full shows all)"))


def _printable(s: str) -> str:
    """``s`` with control and other non-printable characters escaped."""
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def _terminal_width() -> int:
    """The columns a text listing fits in: the terminal's (``COLUMNS``, else standard
    output's terminal), 100 when it is not a terminal; at least 60."""
    import shutil

    return max(60, shutil.get_terminal_size((100, 24)).columns)


def _stored_bytes(s: str) -> int:
    """The length in bytes of a metadata key or value ``_bytes_json`` gave as ``s``."""
    if s.startswith("base64:"):
        with contextlib.suppress(ValueError):
            return len(base64.b64decode(s[7:], validate=True))
    return len(s.encode("utf-8"))


def _print_metadata(title: str, pairs: list[list[str]], fit: _Fit) -> None:
    """``title:`` and one ``  key: value`` line per metadata pair (``_md_json``)."""
    print(f"{title}:")
    width = fit.width or 0
    for k, v in pairs:
        key = fit.text(k, max(width // 3, 24), f"{_stored_bytes(k):,} bytes")
        value = fit.text(v, width - len(key) - 4, f"{_stored_bytes(v):,} bytes")
        print(f"  {key}: {value}")


def _print_inspect(info: dict[str, Any], fit: _Fit) -> None:
    print(fit.line(f"{info['file']}: {info['bytes']:,} bytes, {info['rows']:,} rows in "
                   f"{info['chunks']} chunk(s), {info['messages']} messages"))
    dtype = info["dtype"]
    print("dtype: " + fit.text(dtype, (fit.width or 0) - 7, f"{len(dtype):,} characters"))
    if info["metadata"]:
        _print_metadata("metadata", info["metadata"], fit)
    # the name column leaves the numbers (36 columns) and some encodings room
    room = min(_Fit.NAME, max(12, (fit.width or 0) - 60))
    names = {name: fit.name(name, room) for name in info["columns"]}
    nw = max([20, *(len(n) + 2 for n in names.values())])
    print()
    print(fit.line(f"{'column':<{nw}}{'encoded':>14}{'decoded':>14}{'ratio':>8}  encodings"))
    for name, c in info["columns"].items():
        encs = ", ".join(f"{k} ({v})" if v > 1 else k for k, v in c["encodings"].items())
        ratio = f"{c['ratio']:.3f}" if c["ratio"] is not None else "-"
        print(fit.line(f"{names[name]:<{nw}}{c['bytes']:>14,}{c['decoded_bytes']:>14,}"
                       f"{ratio:>8}  {encs}"))
    for b in info["batches"][:1]:
        print(f"\nchunk 0 ({b['rows']:,} rows):")
        _print_tree(b["tree"], "  ", fit)
    if len(info["batches"]) > 1:
        print(f"  ... and {len(info['batches']) - 1} more chunk(s) (--json shows all)")
    with_md = [b for b in info["batches"] if b["metadata"]]
    for b in with_md[:10]:
        _print_metadata(f"batch {b['index']} metadata", b["metadata"], fit)
    fit.note()


def _print_tree(node: dict[str, Any], indent: str, fit: _Fit, label: str = "") -> None:
    detail = f", {node['detail']}" if "detail" in node else ""
    stats = ""
    if "stats" in node:
        stats = "  stats: " + ", ".join(f"{k}={fit.name(str(v))}"
                                         for k, v in node["stats"].items())
    dtype = fit.text(node["dtype"], 48)
    print(fit.line(f"{indent}{label}{node['encoding']}({dtype}, len={node['len']}{detail}) "
                   f"{node['bytes']:,} B{stats}"))
    for name, c in node.get("children", {}).items():
        _print_tree(c, indent + "  ", fit, f"{fit.name(name)}: ")


# -- verify ---------------------------------------------------------------------------------------


def _read_through(r: Any) -> tuple[int, int]:
    """Read a ``StreamReader`` to its end, decoding every batch: (batches, rows). Raises
    the first problem (a ``VortexIPCError``)."""
    rows = batches = 0
    for b in r:
        b.to_arrow()
        rows += b.num_rows
        batches += 1
    return batches, rows


def verify_stream(path: str | Input, *, require_integrity: bool = False) -> str:
    """Check a whole stream: frame every message (verifying its checksums and the end
    marker when the stream has integrity data) and decode every batch. Returns the one-line
    summary (``<path>: OK, ...``); raises the first problem (a ``VortexIPCError``, or a
    ``CommandError`` for a missing file or a directory)."""
    from ._ipc.reader import StreamReader

    inp = path if isinstance(path, Input) else Input(path)
    try:
        with StreamReader(inp.source(), require_integrity=require_integrity) as r:
            batches, rows = _read_through(r)
            integrity = r.integrity
            messages = r._dec.messages_decoded
            size = inp.size if inp.size is not None else r._dec.position
    finally:
        if inp is not path:
            inp.close()
    what = ("yes (CRC-32C per message, end marker)" if integrity
            else "no (no checksums: corruption cannot be detected)")
    return (f"{inp.name}: OK, {messages} messages ({batches} batches), {rows:,} rows, "
            f"{size:,} bytes, integrity {what}")


def _verify(paths: list[str], require_integrity: bool) -> int:
    """``verify``: one line per file on stdout, ``<path>: OK, <summary>`` or ``<path>:
    FAILED`` (the reason on stderr, as any command's error); 1 if any failed."""
    status = 0
    for path in paths:
        try:
            line = verify_stream(path, require_integrity=require_integrity)
        except Exception as e:
            status = max(status, _fail(f"{PROG} verify", e))
            print(f"{'<stdin>' if path == STDIO else path}: FAILED")
        else:
            print(line)
    return status


# -- the commands -------------------------------------------------------------------------------


def _cmd_convert(args: argparse.Namespace) -> int:
    enc = {}
    for item in args.encoding:
        if "=" not in item:
            raise UsageError(f"--encoding expects COLUMN=ID, got {item!r}")
        k, v = item.split("=", 1)
        enc[k] = v
    if args.chunk_rows < 1:
        raise UsageError("--chunk-rows must be positive")
    partition_by = None
    if args.partition_by:
        partition_by = [c.strip() for item in args.partition_by for c in item.split(",")]
    convert(args.input, args.output, src_fmt=args.src_fmt, dst_fmt=args.dst_fmt,
            chunk_rows=args.chunk_rows, compress=not args.no_compress,
            encodings=enc or None, progress=not args.quiet, integrity=args.integrity,
            partition_by=partition_by, existing=args.existing)
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    inp = Input(args.file)
    try:
        info = inspect_stream(inp)
    finally:
        inp.close()
    if args.json:
        print(json.dumps(info, indent=2, sort_keys=False))
    else:
        _print_inspect(info, _Fit(None if args.full else _terminal_width()))
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    return _verify(args.files, args.require_integrity)


def _cmd_head(args: argparse.Namespace) -> int:
    from ._scan import scan

    if args.n < 0:
        raise UsageError("-n must be >= 0")
    inp = Input(args.file)
    try:
        print(format_table(scan(inp.source(), limit=args.n).to_arrow()))
    finally:
        inp.close()
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from ._ipc.reader import StreamReader

    inp = Input(args.file)
    try:
        with StreamReader(inp.source()) as r:
            if args.check:
                _read_through(r)
            dtype, schema, metadata = r.dtype, r.schema, _md_json(r.metadata)
    finally:
        inp.close()
    fit = _Fit(None if args.full else _terminal_width())
    print(f"dtype: {dtype!r}")
    print(schema.remove_metadata().to_string(show_schema_metadata=False))
    if metadata:
        _print_metadata("metadata", metadata, fit)
    fit.note()
    return 0


#: DuckDB's errors for a query that is wrong as written (it does not parse, or names a
#: column, table or function there is none of): usage mistakes, exit status 2
_QUERY_MISTAKES = ("Parser Error:", "Binder Error:", "Catalog Error:")


def _cmd_sql(args: argparse.Namespace) -> int:
    try:
        from .integrations.duckdb_ext import QueryError, query_file
    except ImportError:
        raise UsageError("the sql command needs duckdb: pip install 'vortex-io[duckdb]'") from None
    from ._errors import VortexIPCError
    from ._ipc.reader import StreamReader

    inp = Input(args.file)
    with contextlib.ExitStack() as stack:
        stack.callback(inp.close)
        path = inp.path
        if inp.streamed:  # DuckDB reads by path: a stream is spooled to a temporary file
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="vortex-ipc-sql-"))
            path = os.path.join(tmp, "stdin.vxipc")
            with open(path, "wb") as f:
                while chunk := inp.file().read(1 << 20):
                    f.write(chunk)
        try:
            StreamReader(path).close()  # not a Vortex IPC stream: our error, before DuckDB's
        except VortexIPCError as e:
            e.source = inp.name
            raise
        try:
            table = query_file(path, args.query)
        except QueryError as e:
            # our scan's errors name the path DuckDB read: the input's name is shown first
            text = str(e).replace(f"({path}, ", "(").replace(f" ({path})", "")
            if text.startswith(_QUERY_MISTAKES):
                raise UsageError(text) from None
            raise CommandError(text, path=inp.name if text != str(e) else None) from None
        if table is not None:
            print(format_table(table))
    return 0


def format_table(t: Any, width: int = 32) -> str:
    """A plain text table: a header line, then one line per row (cells cut at ``width``)."""
    def cell(v: Any) -> str:
        s = "null" if v is None else str(v)
        return s if len(s) <= width else s[: width - 1] + "…"

    cols = t.column_names
    rows = [[cell(v) for v in r.values()] for r in t.to_pylist()]
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    lines.append(f"({t.num_rows} row{'s' if t.num_rows != 1 else ''})")
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit status 2) in the shape of every error;
    ``commands``: the subparsers by name."""

    commands: Mapping[str, argparse.ArgumentParser]

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse's, but arguments a command does not know are that command's usage
        mistake (``vortex-ipc head: unrecognized arguments: ...``), not the top level's."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            sub = self.commands.get(getattr(ns, "cmd", None) or "", self)
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns

    def error(self, message: str) -> Any:
        self.exit(2, _error_line(self.prog, None, message, usage=True) + "\n")


def _parser() -> _Parser:
    """The command line. A command is a subparser with help for each argument and
    ``set_defaults(func=...)``: a function of the parsed arguments returning the exit
    status, run by ``_run_command`` (one-line errors); ``Input`` / ``Output`` give it
    ``-``, streamed inputs and atomic outputs."""
    from . import __version__

    p = _Parser(prog=PROG, description="Vortex IPC streams: convert, inspect, query. "
                "FILE may be '-' (standard input), a pipe or a FIFO.",
                epilog=f"Errors are one line on stderr: '{PROG} COMMAND: FILE: message'. "
                "Exit status: " + "; ".join(f"{k} {v}" for k, v in EXIT_STATUSES.items())
                + "; a closed output pipe ends a command quietly.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                   help="show the version and exit")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    p.commands = sub.choices
    fmts = ", ".join(FORMATS)
    c = sub.add_parser("convert", help="convert between Vortex IPC, Arrow IPC, Parquet and CSV",
                       description="Convert between formats, batch by batch; the output is "
                       "written atomically (nothing is left behind when it fails).")
    c.add_argument("input", help="the input file, or '-' for standard input (its format "
                   "is then told by its first bytes unless --from is given), or a directory "
                   "or a glob (quoted): their files, sorted, read as one table")
    c.add_argument("output", help="the output file, or '-' for standard output (Vortex IPC "
                   "unless --to is given); with --partition-by, a directory")
    c.add_argument("--from", dest="src_fmt", choices=FORMATS, metavar="FORMAT",
                   help=f"the input's format ({fmts}; default: by its extension)")
    c.add_argument("--to", dest="dst_fmt", choices=FORMATS, metavar="FORMAT",
                   help=f"the output's format ({fmts}; default: by its extension)")
    c.add_argument("--chunk-rows", type=int, default=65_536, metavar="N",
                   help="rows per Vortex IPC message, Parquet row group (default: 65536)")
    c.add_argument("--no-compress", action="store_true",
                   help="write canonical (uncompressed) Vortex arrays")
    c.add_argument("--encoding", action="append", default=[], metavar="COLUMN=ID",
                   help="force an encoding for a column, e.g. symbol=vortex.dict (repeatable)")
    c.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line (shown only when stderr is a terminal)")
    c.add_argument("--integrity", action="store_true",
                   help="Vortex IPC output: a CRC-32C per message and an end marker")
    c.add_argument("--partition-by", action="append", default=[], metavar="COL[,COL]",
                   help="write OUTPUT as a hive-partitioned directory of Vortex IPC files "
                   "(OUTPUT/COL=value/part-0.vxipc), the columns left out of the files")
    c.add_argument("--existing", default="error",
                   choices=("error", "overwrite_or_ignore", "delete_matching"),
                   help="with --partition-by, an OUTPUT directory that is not empty: fail "
                   "(default), write into it, or empty each partition written first")
    c.set_defaults(func=_cmd_convert)
    i = sub.add_parser("inspect", help="messages, chunks, encodings, statistics, metadata",
                       description="Describe a Vortex IPC stream: its dtype and metadata, "
                       "each column's encodings and sizes, the first chunk's encoding tree.")
    i.add_argument("file", help="a Vortex IPC stream, or '-' for standard input")
    i.add_argument("--json", action="store_true",
                   help="machine-readable output (every chunk, values whole)")
    i.add_argument("--full", action="store_true",
                   help="print long values (metadata, names, statistics) whole, not "
                   "shortened to fit the terminal")
    i.set_defaults(func=_cmd_inspect)
    h = sub.add_parser("head", help="the first rows", description="Print the first rows. "
                       "It stops reading soon after the messages they are in: it fails "
                       "(exit 1) when those are cut or damaged, and does not notice what is "
                       "wrong further on (verify checks a whole stream).")
    h.add_argument("file", help="a Vortex IPC stream, or '-' for standard input")
    h.add_argument("-n", type=int, default=10, metavar="N", help="rows to show (default: 10)")
    h.set_defaults(func=_cmd_head)
    s = sub.add_parser("schema", help="the dtype, Arrow schema and stream metadata",
                       description="Print the stream's dtype, Arrow schema and metadata. "
                       "It reads only the stream's first message, the DType message, which "
                       "holds them: it fails (exit 1) when that message is cut, damaged or "
                       "unsupported, and succeeds whatever follows it unless --check is "
                       "given.")
    s.add_argument("file", help="a Vortex IPC stream, or '-' for standard input")
    s.add_argument("--check", action="store_true",
                   help="read and decode the whole stream first: fail (exit 1, nothing "
                   "printed) when any message is cut, damaged or unsupported")
    s.add_argument("--full", action="store_true",
                   help="print long metadata values whole, not shortened to fit the terminal")
    s.set_defaults(func=_cmd_schema)
    q = sub.add_parser("sql", help="run SQL with DuckDB; the stream is the table t",
                       description="Run a SQL query with DuckDB over the stream, which is the "
                       "view t (filters and projections are pushed into the scan).")
    q.add_argument("file", help="a Vortex IPC stream, or '-' for standard input")
    q.add_argument("query", help="the query, e.g. \"SELECT count(*) FROM t\"")
    q.set_defaults(func=_cmd_sql)
    v = sub.add_parser("verify", help="check whole streams: checksums, end marker, every message",
                       description="Frame every message (checking its CRC-32C and the end "
                       "marker when the stream has integrity data) and decode every batch. "
                       "One line per file on stdout, 'FILE: OK, <summary>' or 'FILE: "
                       "FAILED' (the reason on stderr); exit 1 when any failed.")
    v.add_argument("files", nargs="+", metavar="FILE",
                   help="Vortex IPC streams ('-' for standard input)")
    v.add_argument("--require-integrity", action="store_true",
                   help="fail streams written without integrity data")
    v.set_defaults(func=_cmd_verify)
    return p


#: what Arrow's readers raise for input they cannot read
try:
    import pyarrow as _pa

    _ARROW_ERRORS: tuple[type[BaseException], ...] = (_pa.ArrowException,)
except ImportError:  # pragma: no cover - a dependency
    _ARROW_ERRORS = ()


def _first_line(e: BaseException, limit: int = 300) -> str:
    """The first line of an error's message, printable, at most ``limit`` characters."""
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    line = "".join(ch if ch.isprintable() else "?" for ch in line)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _strerror(e: OSError) -> str:
    """An OS error's reason, as the command's own messages are written ("permission
    denied")."""
    text = e.strerror or _first_line(e)
    return text[:1].lower() + text[1:]


def _located(e: BaseException) -> tuple[str | None, str]:
    """What an error is reported as: the path it is about (None when it is about none) and
    the message, one line, without that path."""
    from ._errors import VortexIPCError

    if isinstance(e, _CommandLineError):
        return e.path, _first_line(e)
    if isinstance(e, VortexIPCError):
        source, e.source = e.source, None  # named first, not in the parentheses
        try:
            return source, _first_line(e)
        finally:
            e.source = source
    if isinstance(e, OSError) and e.strerror:
        named = isinstance(e.filename, (str, bytes, os.PathLike))
        return (os.fsdecode(e.filename) if named else None), _strerror(e)
    return None, (f"unexpected error ({type(e).__name__}): {_first_line(e)} "
                  f"(VORTEX_IPC_TRACEBACK=1 shows where)")


def _error_line(prog: str, path: str | None, message: str, *, usage: bool = False) -> str:
    """The one shape of every error line: ``<prog>: [<path>: ]<message>``, and for a usage
    mistake `` (see <prog> --help)``."""
    line = f"{prog}: {path}: {message}" if path else f"{prog}: {message}"
    return f"{line} (see {prog} --help)" if usage else line


def _fail(prog: str, e: Exception) -> int:
    """Report ``e`` as one line on stderr; returns the exit status it means: 2 for a usage
    mistake, else 1. An unexpected error (not the input's, not the command line's: a bug)
    is re-raised when ``VORTEX_IPC_TRACEBACK`` is set."""
    from ._errors import VortexIPCError

    expected = isinstance(e, (_CommandLineError, VortexIPCError, OSError))
    if not expected and os.environ.get("VORTEX_IPC_TRACEBACK"):
        raise e
    path, message = _located(e)
    usage = isinstance(e, UsageError)
    _say(_error_line(prog, path, message, usage=usage))
    return 2 if usage else 1


def _say(line: str) -> None:
    """``line`` on stderr (nothing when stderr is gone too)."""
    try:
        sys.stdout.flush()  # what the command printed before, then its error
    except ValueError:  # stdout closed
        pass
    except OSError as e:
        if _is_broken_pipe(e):  # the command ends quietly (``_run_command``)
            raise
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr)


def _is_broken_pipe(e: BaseException) -> bool:
    return isinstance(e, BrokenPipeError) or (isinstance(e, OSError) and e.errno == errno.EPIPE)


def _silence_stdout() -> None:
    """After a broken pipe: stdout to /dev/null, so the interpreter's last flush is quiet."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


#: the exit status of a command whose output pipe closed (128 + SIGPIPE, as the shell shows
#: a tool SIGPIPE ended)
EXIT_BROKEN_PIPE = 128 + getattr(signal, "SIGPIPE", 13)
#: the exit status of a command interrupted by Ctrl-C (128 + SIGINT)
EXIT_INTERRUPTED = 130
#: what every command's exit status means (``vortex-ipc --help`` shows it)
EXIT_STATUSES = {
    0: "success",
    1: "a bad, cut or unsupported input (or a missing file), or a failed check",
    2: "a mistake in how the command was called",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


def _run_command(args: argparse.Namespace) -> int:
    """Run the parsed command; its exit status. The one place a command's errors become
    exit statuses and lines on stderr (``_fail``): 0 success, 1 a bad or unsupported input
    or a failed check, 2 a usage mistake, 130 Ctrl-C (quietly; an output file being written
    is removed), and a closed output pipe ends quietly (``EXIT_BROKEN_PIPE``)."""
    prog = f"{PROG} {args.cmd}"
    try:
        try:
            status = int(args.func(args))
            sys.stdout.flush()  # a closed pipe is met here, not in the interpreter's last flush
            return status
        except Exception as e:
            if _is_broken_pipe(e):
                raise
            return _fail(prog, e)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as e:
        if not _is_broken_pipe(e):
            raise
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``vortex-ipc`` console script; returns the exit status (see
    ``EXIT_STATUSES``; ``--help`` and argparse's usage errors raise ``SystemExit``). Errors
    are one line on stderr, ``vortex-ipc <command>: <path>: <message>``:

    >>> main(["schema", "no-such-file.vxipc"])  # stderr: ...: no-such-file.vxipc: no such file
    1
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit:
        try:  # --help, --version: into a closed pipe, quietly
            sys.stdout.flush()
        except OSError as e:
            if not _is_broken_pipe(e):
                raise
            _silence_stdout()
            return _end_by_sigpipe(argv)
        raise
    status = _run_command(args)
    if status == EXIT_BROKEN_PIPE:
        return _end_by_sigpipe(argv)
    return status


def _end_by_sigpipe(argv: list[str] | None) -> int:
    """End as a Unix tool does when its output pipe closes: the console script (``argv``
    None) by SIGPIPE, quietly; in process, ``EXIT_BROKEN_PIPE``."""
    if argv is None and hasattr(signal, "SIGPIPE"):
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
