"""The ``vortex-ipc`` command: convert, inspect, head, schema, sql, verify.

    vortex-ipc convert trades.parquet trades.vxipc          # any direction, by extension
    vortex-ipc convert in.arrows out.csv --from arrows --to csv
    vortex-ipc inspect trades.vxipc [--json]
    vortex-ipc head trades.vxipc -n 5
    vortex-ipc schema trades.vxipc
    vortex-ipc sql trades.vxipc "SELECT symbol, count(*) FROM t GROUP BY 1"
    vortex-ipc verify trades.vxipc                          # checksums, end marker, every message
    vortex-ipc convert trades.parquet trades.vxipc --integrity

Formats: Vortex IPC (``.vxipc``), Arrow IPC stream (``.arrows``), Arrow IPC file
(``.arrow``, ``.feather``), Parquet (``.parquet``), CSV (``.csv``). Conversion streams
batch by batch with bounded memory. Arrow schema metadata becomes the Vortex stream
metadata and each record batch's custom metadata the batch metadata, and back again.

Errors are one line on stderr and a non-zero exit status (2 for usage, 1 for bad input).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["main"]

FORMATS = ("vxipc", "arrows", "arrow", "parquet", "csv")
_EXT = {
    ".vxipc": "vxipc", ".vortex": "vxipc", ".arrows": "arrows", ".arrow": "arrow",
    ".feather": "arrow", ".ipc": "arrow", ".parquet": "parquet", ".pq": "parquet", ".csv": "csv",
}


class UsageError(Exception):
    """A mistake in how the command was called."""


def _format_of(path: str, given: str | None) -> str:
    if given:
        if given not in FORMATS:
            raise UsageError(f"unknown format {given!r}; choose from {', '.join(FORMATS)}")
        return given
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXT:
        raise UsageError(
            f"cannot tell the format of {path!r} from its extension; use --from/--to "
            f"({', '.join(FORMATS)})")
    return _EXT[ext]


# -- reading: (schema, stream metadata, iterator of (record batch, batch metadata)) -------------

Batches = Iterator[tuple[Any, Any]]


def _read(path: str, fmt: str, batch_rows: int) -> tuple[Any, Any, Batches]:
    """(Arrow schema without metadata, stream metadata pairs, batches with their metadata)."""
    import pyarrow as pa

    from .arrow import schema_metadata_pairs

    if fmt == "vxipc":
        import vortex_io as vio

        r = vio.StreamReader(path)
        schema = r.schema

        def gen() -> Batches:
            with r:
                for b in r:
                    rb = b.to_arrow()
                    if not isinstance(rb, pa.RecordBatch):
                        rb = pa.record_batch([rb], names=["values"])
                    yield rb.replace_schema_metadata(None), (b.metadata.to_arrow() if b.metadata else None)

        return schema.remove_metadata(), list(r.metadata.items()), gen()
    if fmt == "arrows":
        f = pa.OSFile(path, "rb")
        rd = pa.ipc.open_stream(f)

        def gen() -> Batches:
            try:
                while True:
                    try:
                        b, md = rd.read_next_batch_with_custom_metadata()
                    except StopIteration:
                        return
                    yield b, md
            finally:
                f.close()

        return rd.schema.remove_metadata(), schema_metadata_pairs(rd.schema), gen()
    if fmt == "arrow":
        f = pa.memory_map(path, "rb")
        rd = pa.ipc.open_file(f)

        def gen() -> Batches:
            for i in range(rd.num_record_batches):
                b, md = rd.get_batch_with_custom_metadata(i)
                yield b, md

        return rd.schema.remove_metadata(), schema_metadata_pairs(rd.schema), gen()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow

        def gen() -> Batches:
            for b in pf.iter_batches(batch_size=batch_rows):
                yield b, None

        return schema.remove_metadata(), schema_metadata_pairs(schema), gen()
    if fmt == "csv":
        import pyarrow.csv as pcsv

        rd = pcsv.open_csv(path, read_options=pcsv.ReadOptions(block_size=1 << 22))

        def gen() -> Batches:
            for b in rd:
                yield b, None

        return rd.schema, [], gen()
    raise UsageError(f"cannot read format {fmt!r}")


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


class _Progress:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.rows = 0

    def add(self, n: int) -> None:
        self.rows += n
        if self.enabled:
            sys.stderr.write(f"\r{self.rows:,} rows")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write(f"\r{self.rows:,} rows, done\n")


def convert(src: str, dst: str, *, src_fmt: str | None = None, dst_fmt: str | None = None,
            chunk_rows: int = 65_536, compress: bool = True,
            encodings: dict[str, str] | None = None, progress: bool = False,
            integrity: bool = False) -> int:
    """Convert between formats; returns the number of rows written. ``integrity``: write
    Vortex IPC with CRC-32C records and an end marker (``vortex_io.integrity``)."""
    import pyarrow as pa

    fi, fo = _format_of(src, src_fmt), _format_of(dst, dst_fmt)
    if integrity and fo != "vxipc":
        raise UsageError("--integrity applies to Vortex IPC output only")
    if not os.path.exists(src):
        raise FileNotFoundError(f"{src}: no such file")
    schema, stream_md, batches = _read(src, fi, chunk_rows)
    prog = _Progress(progress)
    if fo == "vxipc":
        import vortex_io as vio

        with vio.StreamWriter(dst, schema, metadata=stream_md, compress=compress,
                              encodings=encodings, integrity=integrity) as w:
            for b, md in _rechunk(batches, chunk_rows):
                w.write(b, metadata=md)
                prog.add(b.num_rows)
    elif fo in ("arrows", "arrow"):
        out_schema = schema.with_metadata(pa.KeyValueMetadata(stream_md)) if stream_md else schema
        sink = pa.OSFile(dst, "wb")
        w = (pa.ipc.new_stream if fo == "arrows" else pa.ipc.new_file)(sink, out_schema)
        try:
            for b, md in batches:
                w.write_batch(b, custom_metadata=md) if md else w.write_batch(b)
                prog.add(b.num_rows)
        finally:
            w.close()
            sink.close()
    elif fo == "parquet":
        import pyarrow.parquet as pq

        out_schema = schema.with_metadata(pa.KeyValueMetadata(stream_md)) if stream_md else schema
        with pq.ParquetWriter(dst, out_schema, compression="zstd") as w:
            for b, _ in batches:
                w.write_batch(b, row_group_size=chunk_rows)
                prog.add(b.num_rows)
    elif fo == "csv":
        import pyarrow.csv as pcsv

        with pcsv.CSVWriter(dst, schema) as w:
            for b, _ in batches:
                w.write_batch(b)
                prog.add(b.num_rows)
    else:  # pragma: no cover - _format_of guards this
        raise UsageError(f"cannot write format {fo!r}")
    prog.done()
    return prog.rows


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


def inspect_stream(path: str) -> dict[str, Any]:
    """Everything ``inspect`` shows, as JSON-ready data (stable key order)."""
    from . import dtype as dt
    from .ipc.reader import StreamReader

    size = os.path.getsize(path)
    out: dict[str, Any] = {"file": os.path.basename(path), "bytes": size}
    with StreamReader(path) as r:
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


def _print_inspect(info: dict[str, Any]) -> None:
    print(f"{info['file']}: {info['bytes']:,} bytes, {info['rows']:,} rows in {info['chunks']} "
          f"chunk(s), {info['messages']} messages")
    print(f"dtype: {info['dtype']}")
    if info["metadata"]:
        print("metadata: " + ", ".join(f"{k}={v}" for k, v in info["metadata"]))
    print(f"\n{'column':<20}{'encoded':>14}{'decoded':>14}{'ratio':>8}  encodings")
    for name, c in info["columns"].items():
        encs = ", ".join(f"{k} ({v})" if v > 1 else k for k, v in c["encodings"].items())
        ratio = f"{c['ratio']:.3f}" if c["ratio"] is not None else "-"
        print(f"{name:<20}{c['bytes']:>14,}{c['decoded_bytes']:>14,}{ratio:>8}  {encs}")
    for b in info["batches"][:1]:
        print(f"\nchunk 0 ({b['rows']:,} rows):")
        _print_tree(b["tree"], "  ")
    if len(info["batches"]) > 1:
        print(f"  ... and {len(info['batches']) - 1} more chunk(s) (--json shows all)")
    with_md = [b for b in info["batches"] if b["metadata"]]
    for b in with_md[:10]:
        print(f"batch {b['index']} metadata: " + ", ".join(f"{k}={v}" for k, v in b["metadata"]))


def _print_tree(node: dict[str, Any], indent: str, label: str = "") -> None:
    detail = f", {node['detail']}" if "detail" in node else ""
    stats = ""
    if "stats" in node:
        stats = "  stats: " + ", ".join(f"{k}={v}" for k, v in node["stats"].items())
    print(f"{indent}{label}{node['encoding']}({node['dtype']}, len={node['len']}{detail}) "
          f"{node['bytes']:,} B{stats}")
    for name, c in node.get("children", {}).items():
        _print_tree(c, indent + "  ", f"{name}: ")


# -- verify ---------------------------------------------------------------------------------------


def verify_stream(path: str, *, require_integrity: bool = False) -> str:
    """Check a whole stream: frame every message (verifying its checksums and the end
    marker when the stream has integrity data) and decode every batch. Returns the one-line
    summary; raises the first problem (a ``VortexIPCError``)."""
    from .ipc.reader import StreamReader

    size = os.path.getsize(path)
    rows = batches = 0
    with StreamReader(path, require_integrity=require_integrity) as r:
        for b in r:
            b.to_arrow()
            rows += b.num_rows
            batches += 1
        integrity = r.integrity
        messages = r._dec.messages_decoded
    what = ("yes (CRC-32C per message, end marker)" if integrity
            else "no (no checksums: corruption cannot be detected)")
    return (f"{path}: ok, {messages} messages ({batches} batches), {rows:,} rows, "
            f"{size:,} bytes, integrity {what}")


def _verify(paths: list[str], require_integrity: bool) -> int:
    """``verify``: one line per file on stdout; 1 if any failed."""
    from .errors import VortexIPCError

    status = 0
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file")
        try:
            print(verify_stream(path, require_integrity=require_integrity))
        except VortexIPCError as e:
            e.source = None  # (the line names the file first)
            print(f"{path}: FAILED: {type(e).__name__}: {e}")
            status = 1
    return status


# -- main -----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vortex-ipc", description="Vortex IPC streams: convert, inspect, query.")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="convert between Vortex IPC, Arrow IPC, Parquet and CSV")
    c.add_argument("input")
    c.add_argument("output")
    c.add_argument("--from", dest="src_fmt", choices=FORMATS)
    c.add_argument("--to", dest="dst_fmt", choices=FORMATS)
    c.add_argument("--chunk-rows", type=int, default=65_536)
    c.add_argument("--no-compress", action="store_true", help="write canonical (uncompressed) arrays")
    c.add_argument("--encoding", action="append", default=[], metavar="COLUMN=ID",
                   help="force an encoding for a column (repeatable)")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    c.add_argument("--integrity", action="store_true",
                   help="Vortex IPC output: a CRC-32C per message and an end marker")
    i = sub.add_parser("inspect", help="messages, chunks, encodings, statistics, metadata")
    i.add_argument("file")
    i.add_argument("--json", action="store_true", help="machine-readable output")
    h = sub.add_parser("head", help="the first rows")
    h.add_argument("file")
    h.add_argument("-n", type=int, default=10)
    s = sub.add_parser("schema", help="the dtype, Arrow schema and stream metadata")
    s.add_argument("file")
    q = sub.add_parser("sql", help="run SQL with DuckDB; the stream is the table t")
    q.add_argument("file")
    q.add_argument("query")
    v = sub.add_parser("verify", help="check whole streams: checksums, end marker, every message")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("--require-integrity", action="store_true",
                   help="fail streams written without integrity data")
    return p


def _run(args: argparse.Namespace) -> int:
    if args.cmd == "convert":
        enc = {}
        for item in args.encoding:
            if "=" not in item:
                raise UsageError(f"--encoding expects COLUMN=ID, got {item!r}")
            k, v = item.split("=", 1)
            enc[k] = v
        if args.chunk_rows < 1:
            raise UsageError("--chunk-rows must be positive")
        n = convert(args.input, args.output, src_fmt=args.src_fmt, dst_fmt=args.dst_fmt,
                    chunk_rows=args.chunk_rows, compress=not args.no_compress,
                    encodings=enc or None, progress=not args.quiet, integrity=args.integrity)
        return 0 if n >= 0 else 1
    if args.cmd == "verify":
        return _verify(args.files, args.require_integrity)
    if args.cmd in ("inspect", "head", "schema", "sql") and not os.path.exists(args.file):
        raise FileNotFoundError(f"{args.file}: no such file")
    if args.cmd == "inspect":
        info = inspect_stream(args.file)
        if args.json:
            print(json.dumps(info, indent=2, sort_keys=False))
        else:
            _print_inspect(info)
        return 0
    if args.cmd == "head":
        from .scan import scan

        if args.n < 0:
            raise UsageError("-n must be >= 0")
        print(format_table(scan(args.file, limit=args.n).to_arrow()))
        return 0
    if args.cmd == "schema":
        from .ipc.reader import StreamReader

        with StreamReader(args.file) as r:
            print(f"dtype: {r.dtype!r}")
            print(r.schema.remove_metadata().to_string(show_schema_metadata=False))
            if r.metadata:
                print("metadata:")
                for k, v in r.metadata.items():
                    print(f"  {_bytes_json(k)}: {_bytes_json(v)}")
        return 0
    if args.cmd == "sql":
        try:
            import duckdb
        except ImportError:
            raise UsageError("the sql command needs duckdb: pip install 'vortex-io[duckdb]'") from None
        from . import register_duckdb  # type: ignore[attr-defined]

        con = duckdb.connect()
        register_duckdb(con)
        path = args.file.replace("'", "''")
        con.execute(f"CREATE VIEW t AS SELECT * FROM vortex_ipc('{path}')")
        res = con.sql(args.query)
        if res is None:
            return 0
        print(format_table(res.to_arrow_table()))
        return 0
    raise UsageError(f"unknown command {args.cmd}")  # pragma: no cover


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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``vortex-ipc`` console script."""
    from .errors import VortexIPCError

    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except UsageError as e:
        print(f"vortex-ipc: error: {e}", file=sys.stderr)
        return 2
    except (VortexIPCError, FileNotFoundError, IsADirectoryError, PermissionError) as e:
        print(f"vortex-ipc: error: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError, TypeError, KeyError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"vortex-ipc: error: {type(e).__name__}: {msg}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":
    sys.exit(main())
