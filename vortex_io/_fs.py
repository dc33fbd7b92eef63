"""Sources named by URL (``s3://``, ``gs://``, ``https://``, ``memory://``, any scheme fsspec
knows), read through fsspec, which is imported only when a URL is given
(``pip install 'vortex-io[fsspec]'``). ``file://`` URLs are local paths (read as paths
are), and need no fsspec.

A URL is a string that starts with a scheme of two or more characters and ``://``:

>>> is_url("s3://bucket/x.vxipc"), is_url("x.vxipc"), is_url("C:\\\\data\\\\x.vxipc")
(True, False, False)
>>> file_url_path("file:///tmp/a%20b.vxipc")
'/tmp/a b.vxipc'

Remote files are read with ranged reads: a reader asks for what the decoder needs, read
ahead in blocks that grow from ``FIRST_READ`` to ``MAX_READ`` bytes (reading a schema
costs one small request; a whole scan, a few large ones), and the header-only pass of
``message_spans`` reads ``SPAN_READ`` bytes at each message's start.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["is_url", "is_file_url", "is_remote", "local_path", "file_url_path", "check_storage_options", "open_url",
           "has_glob", "glob_url", "list_url_directory", "RangedReads", "FIRST_READ", "MAX_READ", "SPAN_READ"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")

#: the first read of a remote stream (its DType message, and more when it is small)
FIRST_READ = 64 << 10
#: reads of a remote stream double up to this size
MAX_READ = 16 << 20
#: what the header-only pass reads at each message's start (its length prefix and header)
SPAN_READ = 64 << 10

INSTALL = "pip install 'vortex-io[fsspec]'"


def is_url(source: Any) -> bool:
    """Whether ``source`` is a URL: a str starting with ``scheme://``."""
    return isinstance(source, str) and "://" in source and _URL.match(source) is not None


def is_file_url(source: Any) -> bool:
    """Whether ``source`` is a ``file://`` URL (read as the local path it names)."""
    return is_url(source) and source[:7].lower() == "file://"


def is_remote(source: Any) -> bool:
    """Whether ``source`` is a URL read through fsspec (any but ``file://``)."""
    return is_url(source) and not is_file_url(source)


def local_path(path: str) -> str:
    """``path``, or the local path a ``file://`` URL names."""
    return file_url_path(path) if is_file_url(path) else path


def file_url_path(url: str) -> str:
    """The local path of a ``file://`` URL (``file:///abs``, ``file://localhost/abs``;
    percent-escapes decoded, as ``pathlib.Path.as_uri`` writes them)."""
    from urllib.request import url2pathname

    rest = url[7:]
    if rest[:10].lower() == "localhost/":
        rest = rest[9:]
    return url2pathname(rest)


def check_storage_options(func: str, value: Any) -> dict[str, Any] | None:
    """``storage_options`` as a dict (None passes); a ``TypeError`` naming ``func`` else."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        from ._check import describe

        raise TypeError(f"{func}(): storage_options must be a dict of options for the fsspec "
                        f"file system, or None, not {describe(value)}")
    return dict(value)


def no_url_options(func: str, storage_options: Mapping[str, Any] | None) -> None:
    """Raise ``ValueError`` when ``storage_options`` are given for sources none of which is
    a URL (as pandas does): they would be silently ignored."""
    if storage_options:
        raise ValueError(f"{func}(): storage_options are for sources given as URLs "
                         "('s3://...', 'https://...'); no source is one")


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError as e:
        raise ImportError(f"reading a URL needs fsspec, which is not installed: {INSTALL}"
                          ) from e
    return fsspec


def _filesystem(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    """(fsspec file system, path in it) of ``url``."""
    fsspec = _fsspec()
    try:
        return fsspec.core.url_to_fs(url, **(storage_options or {}))
    except ImportError as e:  # the scheme's implementation (s3fs, gcsfs, aiohttp...) is missing
        scheme = url.split("://", 1)[0]
        raise ImportError(f"reading {url!r}: fsspec's file system for {scheme}:// could not be "
                          f"loaded: {e}") from e
    except ValueError as e:  # "Protocol not known"
        raise ValueError(f"reading {url!r}: {e}") from e


def _not_found(url: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), url)


def open_url(url: str, storage_options: Mapping[str, Any] | None = None) -> Any:
    """A binary file object reading ``url``, each ``read`` one ranged request of the bytes
    asked for (no cache: the callers read ahead themselves). A missing file raises
    ``FileNotFoundError`` naming the URL."""
    fs, path = _filesystem(url, storage_options)
    try:
        return fs.open(path, "rb", block_size=MAX_READ, cache_type="none")
    except FileNotFoundError:
        raise _not_found(url) from None
    except IsADirectoryError:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), url) from None


def size_of(f: Any, url: str) -> int:
    """The size in bytes of the open file ``f`` of ``url``."""
    size = getattr(f, "size", None)
    if callable(size):
        size = size()
    if size is None:
        try:
            size = f.seek(0, 2)
            f.seek(0)
        except (OSError, ValueError):
            size = None
    if not isinstance(size, int):
        raise OSError(f"{url!r}: the file system does not tell the file's size (a header-only "
                      "pass needs it)")
    return size


def has_glob(url: str) -> bool:
    """Whether the path or URL is a glob pattern: ``*``, ``?`` or ``[`` in it (for
    ``http(s)://`` only ``*`` before the query string: ``?`` starts the query, ``[`` an
    IPv6 host)."""
    if url[:5].lower() == "http:" or url[:6].lower() == "https:":
        return "*" in url.split("?", 1)[0]
    return any(ch in url for ch in "*?[")


def glob_url(pattern: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """The URLs matching ``pattern`` (the file system's glob), sorted, with the pattern's
    scheme; none raises ``FileNotFoundError``."""
    fs, path = _filesystem(pattern, storage_options)
    scheme = pattern.split("://", 1)[0]
    out = []
    for m in fs.glob(path):
        if fs.isdir(m):
            continue
        out.append(m if is_url(m) else f"{scheme}://{m}")
    if not out:
        raise FileNotFoundError(f"no files match {pattern!r}")
    return sorted(out)


def list_url_directory(url: str, storage_options: Mapping[str, Any] | None = None, *,
                       suffix: str, hidden: Any) -> list[str]:
    """The files below the directory URL ``url`` whose names end with ``suffix``, at any
    depth, sorted, with the URL's scheme; a path component for which ``hidden(name)`` is
    true is skipped. None raises ``FileNotFoundError``."""
    fs, path = _filesystem(url, storage_options)
    scheme = url.split("://", 1)[0]
    root = path.rstrip("/")
    out = []
    for m in fs.find(root):
        rel = m[len(root):].lstrip("/") if m.startswith(root) else m
        if not m.endswith(suffix) or any(hidden(c) for c in rel.split("/")):
            continue
        out.append(m if is_url(m) else f"{scheme}://{m}")
    if not out:
        raise FileNotFoundError(f"no {suffix} files in the directory {url!r}")
    return sorted(out)


class RangedReads:
    """``read(pos, n)`` over a seekable file: a miss reads ``n`` bytes and ``block`` more
    (one request), and later reads inside what was read cost nothing."""

    def __init__(self, f: Any, size: int, block: int = SPAN_READ) -> None:
        self._f = f
        self._size = size
        self._block = block
        self._start = 0
        self._data = b""
        self.requests = 0

    def read(self, pos: int, n: int) -> bytes:
        end = pos + n
        if self._start <= pos and end <= self._start + len(self._data):
            return self._data[pos - self._start:end - self._start]
        self._f.seek(pos)
        self._data = self._f.read(min(self._size, end + self._block) - pos)
        self._start = pos
        self.requests += 1
        return self._data[:n]
