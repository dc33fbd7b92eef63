"""What the adapters keep of a local file while it is unchanged: a least-recently-used map
keyed by the file's version (path, device, inode, size, modification time), so a query
planned again on the same file does not read its header again, and a rewritten file (in
place or renamed over) is a new version. Imports no engine.

>>> import os, tempfile
>>> p = os.path.join(tempfile.mkdtemp(), "f")
>>> _ = open(p, "wb").write(b"one")
>>> seen = FileVersions(maxsize=8)
>>> k = seen.key(p)
>>> seen.get(k) is None
True
>>> seen.put(k, "header of one")
'header of one'
>>> seen.put(k, "derived again")  # the first value stays: every caller holds one object
'header of one'
>>> seen.get(seen.key(p))
'header of one'
>>> _ = open(p, "wb").write(b"three")  # another size: another version
>>> seen.get(seen.key(p)) is None
True
>>> seen.key(p + ".missing") is None
True
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

__all__ = ["FileVersions"]


class FileVersions:
    """Values derived from local files, one per file version, at most ``maxsize`` (the
    least recently used are dropped). Safe to share between threads."""

    def __init__(self, maxsize: int) -> None:
        self._values: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._max = maxsize

    @staticmethod
    def key(path: str, *extra: Any) -> tuple[Any, ...] | None:
        """The version key of the file at ``path`` as it is now, with ``extra`` (what else
        the value depends on); None when there is no such file or ``extra`` is unhashable."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        k = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, *extra)
        try:
            hash(k)
        except TypeError:
            return None
        return k

    @staticmethod
    def size(key: tuple[Any, ...]) -> int:
        """The file's size in bytes when ``key`` was taken."""
        return key[3]

    def get(self, key: tuple[Any, ...]) -> Any:
        """The value kept for ``key``, or None."""
        with self._lock:
            hit = self._values.get(key)
            if hit is not None:
                self._values.move_to_end(key)
            return hit

    def put(self, key: tuple[Any, ...], value: Any) -> Any:
        """Keep ``value`` for ``key`` unless a value is kept already (another thread derived
        it first); returns the value kept, so every caller holds the same object."""
        with self._lock:
            kept = self._values.setdefault(key, value)
            self._values.move_to_end(key)
            while len(self._values) > self._max:
                self._values.popitem(last=False)
            return kept
