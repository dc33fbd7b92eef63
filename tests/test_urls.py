"""Sources given as URLs: fsspec's ``memory://`` file system, a recording file system (to see
``storage_options`` arrive), ``file://`` URLs, and a local HTTP server started here that
serves Range requests and counts the bytes it sends (reading a schema, or the header-only
pass, of a multi-MB file must transfer a small part of it).

Without aiohttp, fsspec's HTTP file system cannot load; the HTTP tests then use fsspec's
blocking HTTP file system (``fsspec.implementations.http_sync``, on ``requests``) for
``http://``, registered for the test only: the library's code path is the same (it opens
``http://`` URLs through fsspec, with ranged reads).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pyarrow as pa
import pytest

fsspec = pytest.importorskip("fsspec")

from fsspec.implementations.memory import MemoryFileSystem  # noqa: E402

import vortex_io as vio  # noqa: E402
from vortex_io import _fs  # noqa: E402
from vortex_io._scan import expand_sources, message_ranges, message_spans  # noqa: E402
from vortex_io.expr import col  # noqa: E402

from .test_scan import TABLE, same  # noqa: E402

CHUNK = 300  # TABLE's 3000 rows in 10 messages


def stream(table: pa.Table = TABLE, chunk_rows: int = CHUNK, **kw) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, table, chunk_rows=chunk_rows, **kw)
    return buf.getvalue()


DATA = stream(metadata={"k": "v"})


@pytest.fixture
def mem():
    """A fresh memory:// folder; ``put(name, data)`` writes a file, returns its URL."""
    root = f"memory://vx-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")

    def put(name: str, data: bytes) -> str:
        url = f"{root}/{name}"
        with fsspec.open(url, "wb") as f:
            f.write(data)
        return url

    put.root = root
    yield put
    fs.rm(fs._strip_protocol(root), recursive=True)


# -- what a URL is ----------------------------------------------------------------------------


def test_what_is_a_url():
    for s in ["s3://b/k.vxipc", "gs://b/k", "https://h/x?sig=1", "memory://x", "file:///tmp/x",
              "simplecache+s3://x", "a1.b-c://x"]:
        assert _fs.is_url(s), s
    for s in ["x.vxipc", "/tmp/x", "C:\\x\\y.vxipc", "C://x", "1s://x", "://x", b"s3://x", None]:
        assert not _fs.is_url(s), s
    assert _fs.has_glob("s3://b/*.vxipc") and _fs.has_glob("memory://b/x?.vxipc")
    assert not _fs.has_glob("https://h/x.vxipc?X-Signature=abc")  # a query, not a glob
    assert not _fs.has_glob("http://[::1]:80/x.vxipc")  # an IPv6 host
    assert _fs.has_glob("https://h/*.vxipc?sig=1")


# -- memory:// --------------------------------------------------------------------------------


def test_scan_over_memory_urls(mem):
    url = mem("t.vxipc", DATA)
    flt = (col("i") > 0) & (col("s") == "fig")
    for kw in [{}, {"columns": ["s", "i"]}, {"filter": flt}, {"limit": 17, "offset": 5},
               {"columns": ["f"], "filter": flt, "limit": 40}]:
        got = vio.scan(url, **kw).to_arrow()
        assert same(got, vio.scan(DATA, **kw).to_arrow()), kw
    s = vio.scan(url, filter=flt)
    assert s.sources == [url] and s.schema == vio.scan(DATA, filter=flt).schema
    assert sum(b.num_rows for b in s) == vio.scan(DATA, filter=flt).to_arrow().num_rows
    assert s.stats.bytes_read == len(DATA)
    assert same(vio.read_table(url, columns=["i"]), TABLE.select(["i"]))


def test_stream_reader_and_read_ipc_over_memory_urls(mem):
    url = mem("t.vxipc", DATA)
    with vio.StreamReader(url) as r, vio.StreamReader(DATA) as ref:
        assert r.schema == ref.schema and dict(r.metadata) == {b"k": b"v"}
        got = [(b.index, b.offset, b.num_rows) for b in r]
        assert got == [(b.index, b.offset, b.num_rows) for b in ref]
    with vio.StreamReader(url) as r:
        assert same(r.read_arrow(), TABLE)
    assert same(pa.Table.from_struct_array(vio.read_ipc(url).to_arrow()), TABLE)


def test_message_spans_and_ranges_over_memory_urls(mem):
    url = mem("t.vxipc", DATA)
    spans = message_spans(url)
    assert spans == message_spans(DATA) and len(spans) == 10
    for r in message_ranges(spans, parts=3):
        got = vio.scan(url, messages=r)
        assert same(got.to_arrow(), vio.scan(DATA, messages=r).to_arrow())
    # a range entered by its byte offset reads the DType message and the range only
    r = message_ranges(spans, parts=2)[1]
    s = vio.scan(url, messages=r)
    t = s.to_arrow()
    assert t.num_rows == r.rows and s.stats.bytes_read == spans[0].offset + r.size


def test_globs_over_memory_urls(mem):
    for name in ["b.vxipc", "a.vxipc", "c.txt", "sub/d.vxipc"]:
        mem(name, DATA)
    got = expand_sources(f"{mem.root}/*.vxipc")
    root = mem.root.replace("memory://", "memory:///")
    assert got == [f"{root}/a.vxipc", f"{root}/b.vxipc"]
    assert expand_sources(f"{mem.root}/**/*.vxipc")[-1] == f"{root}/sub/d.vxipc"
    s = vio.scan(f"{mem.root}/[ab].vxipc", columns=["i"])
    assert s.sources == got and s.to_arrow().num_rows == 2 * TABLE.num_rows
    assert expand_sources([f"{mem.root}/a.vxipc", f"{mem.root}/b*"]) == \
        [f"{mem.root}/a.vxipc", f"{root}/b.vxipc"]
    with pytest.raises(FileNotFoundError, match=r"no files match.*nothing"):
        vio.scan(f"{mem.root}/nothing*.vxipc")


def test_errors_name_the_url(mem):
    cut = mem("cut.vxipc", DATA[: len(DATA) - 100])
    with pytest.raises(vio.TruncatedStreamError) as e:
        vio.scan(cut).to_arrow()
    assert e.value.source == cut and cut in str(e.value) and e.value.message_index == 10
    with pytest.raises(vio.TruncatedStreamError) as e:
        message_spans(cut)
    assert e.value.source == cut and e.value.message_index == 10
    with pytest.raises(vio.TruncatedStreamError) as e, vio.StreamReader(cut) as r:
        r.read_arrow()
    assert e.value.source == cut
    junk = mem("junk.vxipc", b"\x10\x00\x00\x00" + b"\xff" * 60)
    for call in (vio.StreamReader, vio.scan, message_spans):
        with pytest.raises(vio.VortexIPCError) as e:
            call(junk)
        assert e.value.source == junk and junk in str(e.value), call
    missing = f"{mem.root}/missing.vxipc"
    for call in (vio.StreamReader, vio.scan, message_spans, vio.read_ipc):
        with pytest.raises(FileNotFoundError, match=re.escape(repr(missing))):
            call(missing)
    with pytest.raises(ValueError, match=re.escape("nosuchscheme://x.vxipc")):
        vio.scan("nosuchscheme://x.vxipc")


# -- storage_options ------------------------------------------------------------------------


class Recording(MemoryFileSystem):
    """memory:// under another scheme, recording the options each instance was made with."""

    protocol = ("vxrec",)
    store: dict = {}  # noqa: RUF012  (its own files)
    pseudo_dirs = [""]  # noqa: RUF012
    made: list = []  # noqa: RUF012

    def __init__(self, *args, **options):
        Recording.made.append(dict(options))
        super().__init__(*args, **options)

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(path.removeprefix("vxrec://"))


@pytest.fixture
def recording(monkeypatch):
    fsspec.register_implementation("vxrec", Recording, clobber=True)
    Recording.made.clear()
    Recording.store.clear()
    fs = Recording(skip_instance_cache=True)
    for name in ["a.vxipc", "b.vxipc"]:
        with fs.open(f"/{name}", "wb") as f:
            f.write(DATA)
    yield
    sys.modules["fsspec.registry"]._registry.pop("vxrec", None)


def test_storage_options_reach_the_file_system(recording):
    def options(call):
        Recording.made.clear()
        token = uuid.uuid4().hex  # a new instance (fsspec caches them per options)
        call({"token": token})
        assert {"token": token} in Recording.made, call

    options(lambda o: vio.scan("vxrec://a.vxipc", storage_options=o).to_arrow())
    options(lambda o: vio.scan(["vxrec://a.vxipc", DATA], storage_options=o).to_arrow())
    options(lambda o: vio.StreamReader("vxrec://a.vxipc", storage_options=o).close())
    options(lambda o: vio.read_ipc("vxrec://a.vxipc", storage_options=o))
    options(lambda o: vio.read_table("vxrec://a.vxipc", storage_options=o))
    options(lambda o: message_spans("vxrec://a.vxipc", storage_options=o))
    options(lambda o: expand_sources("vxrec://*.vxipc", storage_options=o))
    s = vio.scan("vxrec://*.vxipc", storage_options={"token": "x"})
    assert s.sources == ["vxrec:///a.vxipc", "vxrec:///b.vxipc"]
    assert s.to_arrow().num_rows == 2 * TABLE.num_rows


def test_storage_options_need_a_url_and_a_dict(tmp_path):
    p = tmp_path / "t.vxipc"
    p.write_bytes(DATA)
    for call in (lambda: vio.scan(str(p), storage_options={"anon": True}),
                 lambda: vio.StreamReader(DATA, storage_options={"anon": True}),
                 lambda: message_spans(str(p), storage_options={"anon": True})):
        with pytest.raises(ValueError, match="storage_options are for sources given as URLs"):
            call()
    assert vio.scan(str(p), storage_options={}).to_arrow().num_rows == TABLE.num_rows
    with pytest.raises(TypeError, match=r"scan\(\): storage_options must be a dict"):
        vio.scan(str(p), storage_options="anon")
    with pytest.raises(TypeError, match=r"StreamReader\(\): storage_options must be a dict"):
        vio.StreamReader(DATA, storage_options=[("a", 1)])


# -- file:// ------------------------------------------------------------------------------


def test_file_urls_are_local_paths(tmp_path):
    p = tmp_path / "a b[1].vxipc"
    p.write_bytes(DATA)
    url = p.as_uri()  # file:///.../a%20b%5B1%5D.vxipc
    with vio.StreamReader(url) as r:
        assert r._src.seekable and not r._src.remote  # read as the path is
        assert same(r.read_arrow(), TABLE)
    assert message_spans(url) == message_spans(DATA)
    assert same(vio.scan(url, columns=["i"]).to_arrow(), TABLE.select(["i"]))
    (tmp_path / "c.vxipc").write_bytes(DATA)
    assert expand_sources((tmp_path / "*.vxipc").as_uri().replace("%2A", "*")) == \
        sorted([str(p), str(tmp_path / "c.vxipc")])
    cut = tmp_path / "cut.vxipc"
    cut.write_bytes(DATA[:-10])
    with pytest.raises(vio.TruncatedStreamError) as e:
        vio.scan(cut.as_uri()).to_arrow()
    assert e.value.source == cut.as_uri()


# -- fsspec is imported only for URLs ---------------------------------------------------------


def test_fsspec_is_imported_only_for_urls(tmp_path):
    p = tmp_path / "t.vxipc"
    p.write_bytes(DATA)
    code = ("import sys, vortex_io as vio\n"
            f"vio.scan({str(p)!r}).to_arrow(); vio.StreamReader({p.as_uri()!r}).close()\n"
            "from vortex_io import message_spans, expand_sources\n"
            f"message_spans({str(p)!r}); expand_sources({str(tmp_path / '*')!r})\n"
            "assert 'fsspec' not in sys.modules, 'fsspec imported'\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_url_without_fsspec_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "fsspec", None)  # import fsspec raises ImportError
    for call in (vio.scan, vio.StreamReader, message_spans, expand_sources):
        with pytest.raises(ImportError, match=re.escape("pip install 'vortex-io[fsspec]'")):
            call("memory://x*.vxipc" if call is expand_sources else "memory://x.vxipc")


# -- http:// from a local server ----------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    """Files of ``server.root`` with HEAD and Range GETs (206, ``Content-Range``); counts
    the body bytes it sends in ``server.sent`` and the requests in ``server.requests``."""

    def log_message(self, *args):  # quiet
        pass

    def _file(self):
        path = os.path.join(self.server.root, self.path.split("?", 1)[0].lstrip("/"))
        if not os.path.isfile(path):
            self.send_error(404)
            return None, 0
        return path, os.path.getsize(path)

    def do_HEAD(self):
        path, size = self._file()
        if path is None:
            return
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self):
        path, size = self._file()
        if path is None:
            return
        start, end = 0, size  # [start, end)
        rng = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng or "")
        if m and (m[1] or m[2]):
            if m[1]:
                start = int(m[1])
                end = min(size, int(m[2]) + 1) if m[2] else size
            else:
                start = max(0, size - int(m[2]))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        with self.server.lock:
            self.server.sent += len(data)
            self.server.requests += 1
        self.wfile.write(data)


@pytest.fixture
def http_fs():
    """fsspec's http:// file system: its own (aiohttp) or, without aiohttp, its blocking one."""
    try:
        fsspec.get_filesystem_class("http")
        yield "aiohttp"
        return
    except ImportError:
        pytest.importorskip("requests", reason="neither aiohttp nor requests: no fsspec HTTP")
    registry = sys.modules["fsspec.registry"]._registry  # (fsspec.registry: a read-only view)
    names = ["http", "https", "sync-http", "sync-https"]
    before = {n: registry[n] for n in names if n in registry}
    from fsspec.implementations import http_sync

    http_sync.register()
    yield "http_sync"
    for n in names:  # as it was
        registry.pop(n, None)
    registry.update(before)


@pytest.fixture
def server(tmp_path, http_fs):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.root = str(tmp_path)
    srv.sent = srv.requests = 0
    srv.lock = threading.Lock()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"

    def put(name: str, data: bytes) -> str:
        (tmp_path / name).write_bytes(data)
        return f"{base}/{name}"

    def reset() -> None:
        with srv.lock:
            srv.sent = srv.requests = 0

    srv.put, srv.reset = put, reset
    yield srv
    srv.shutdown()
    srv.server_close()
    t.join(10)


def test_the_test_server_serves_ranges(server):
    url = server.put("x.bin", bytes(range(256)) * 4)
    with fsspec.open(url, "rb", block_size=16, cache_type="none") as f:
        f.seek(1000)
        assert f.read(10) == (bytes(range(256)) * 4)[1000:1010]
    assert server.sent < 64  # not the whole file


def test_scan_over_http_is_the_local_scan(server, tmp_path):
    url = server.put("t.vxipc", DATA)
    flt = (col("i") > 0) | col("s").is_null()
    for kw in [{}, {"columns": ["s", "ts"], "filter": flt}, {"limit": 10}]:
        assert same(vio.scan(url, **kw).to_arrow(), vio.scan(str(tmp_path / "t.vxipc"),
                                                            **kw).to_arrow()), kw
    with vio.StreamReader(url) as r:
        assert same(r.read_arrow(), TABLE)
    with pytest.raises(FileNotFoundError, match=re.escape("nope.vxipc")):
        vio.scan(url.replace("t.vxipc", "nope.vxipc"))


@pytest.fixture(scope="module")
def big() -> tuple[pa.Table, bytes]:
    """About 8 MB in 16 messages of random (incompressible) integers."""
    rng = np.random.default_rng(7)
    t = pa.table({"x": rng.integers(-(2**62), 2**62, 1 << 20), "y": rng.random(1 << 20)})
    data = stream(t, chunk_rows=1 << 16)
    assert len(data) > 8 << 20
    return t, data


def test_reading_a_schema_over_http_transfers_a_small_part(server, big):
    t, data = big
    url = server.put("big.vxipc", data)
    server.reset()
    with vio.StreamReader(url) as r:
        assert r.schema == t.schema
    assert server.sent <= _fs.FIRST_READ and server.requests == 1
    server.reset()
    assert vio.scan(url).schema == t.schema
    assert server.sent <= _fs.FIRST_READ and server.requests == 1  # the first source's header
    # the header-only pass: one small ranged read per message
    server.reset()
    spans = message_spans(url)
    assert spans == message_spans(data) and len(spans) == 16
    assert server.requests == 16 and server.sent <= 16 * (_fs.SPAN_READ + 4096)
    assert server.sent < len(data) / 8
    # one message range: its bytes and the DType message's read ahead, not the file
    last = message_ranges(spans, parts=4)[-1]
    server.reset()
    got = vio.scan(url, messages=last).to_arrow()
    assert got.num_rows == last.rows and same(got, t.slice(t.num_rows - last.rows))
    assert server.sent < last.size + 2 * _fs.FIRST_READ + _fs.MAX_READ
    assert server.sent < len(data) / 2
    # a whole read: the file once, in a few large ranged reads
    server.reset()
    assert vio.scan(url).to_arrow().equals(vio.scan(data).to_arrow())
    assert len(data) <= server.sent <= len(data) + _fs.FIRST_READ
    assert server.requests < 20
    # a scan opens its source once: a small file is one request
    small = server.put("small.vxipc", stream(t.slice(0, 100)))
    server.reset()
    assert vio.scan(small).to_arrow().equals(t.slice(0, 100))
    assert server.requests == 1
