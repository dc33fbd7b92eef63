"""Custom key/value metadata of a stream or a batch (``Message.custom_metadata``).

Keys and values are bytes. Order and duplicate keys are preserved, as in Arrow's
``KeyValueMetadata``: lookups return the first value for a key, ``get_all`` every value,
and ``items()`` every pair in order.

>>> m = Metadata([("method", "add"), ("trace", "a"), ("trace", "b")])
>>> m[b"method"], m["trace"]
(b'add', b'a')
>>> m.get_all("trace")
[b'a', b'b']
>>> list(m.items())
[(b'method', b'add'), (b'trace', b'a'), (b'trace', b'b')]
>>> len(m), "method" in m
(3, True)
>>> Metadata({"k": "v"}) == {b"k": b"v"}
True
>>> Metadata([("a", "1"), ("b", "2")]) == {"b": "2", "a": "1"}  # order across keys: free
True
>>> Metadata([("t", "1"), ("t", "2")]) == Metadata([("t", "2"), ("t", "1")])  # within: kept
False
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Union

__all__ = ["ARROW_SCHEMA_KEY", "Metadata", "MetadataLike"]

MetadataLike = Union["Metadata", Mapping[Any, Any], Iterable[tuple[Any, Any]], None]

#: the reserved stream metadata key under which a writer keeps the exact Arrow schema
#: (``vortex_io._arrow_schema``)
ARROW_SCHEMA_KEY = b"vortex_io.arrow_schema"


def _b(x: Any, what: str) -> bytes:
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, (bytearray, memoryview)):
        return bytes(x)
    raise TypeError(f"metadata {what} must be str or bytes, not {type(x).__name__}")


class _Items(ItemsView):
    def __init__(self, pairs: tuple[tuple[bytes, bytes], ...]) -> None:
        self._pairs = pairs

    def __len__(self) -> int:
        return len(self._pairs)

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        return iter(self._pairs)

    def __contains__(self, item: object) -> bool:
        return item in self._pairs

    def __repr__(self) -> str:
        return f"items({list(self._pairs)!r})"


class _Values(ValuesView):
    def __init__(self, pairs: tuple[tuple[bytes, bytes], ...]) -> None:
        self._pairs = pairs

    def __len__(self) -> int:
        return len(self._pairs)

    def __iter__(self) -> Iterator[bytes]:
        return (v for _, v in self._pairs)

    def __contains__(self, value: object) -> bool:
        return any(v == value for _, v in self._pairs)

    def __repr__(self) -> str:
        return f"values({[v for _, v in self._pairs]!r})"


class Metadata(Mapping[bytes, bytes]):
    """A read-only, ordered multimap of bytes to bytes.

    Build it from a dict (str or bytes keys and values), a list of pairs, a
    ``pyarrow.KeyValueMetadata``, or another ``Metadata``. ``len()`` counts pairs, so a
    key given twice counts twice.
    """

    __slots__ = ("_pairs",)
    _pairs: tuple[tuple[bytes, bytes], ...]

    def __init__(self, source: MetadataLike = None) -> None:
        pairs: list[tuple[bytes, bytes]] = []
        if source is None:
            pass
        elif isinstance(source, Metadata):
            pairs = list(source._pairs)
        elif hasattr(source, "key") and hasattr(source, "value") and hasattr(source, "__len__") \
                and type(source).__name__ == "KeyValueMetadata":
            kv: Any = source  # (pyarrow.KeyValueMetadata, without importing pyarrow)
            pairs = [(_b(kv.key(i), "key"), _b(kv.value(i), "value")) for i in range(len(kv))]
        elif isinstance(source, Mapping):
            pairs = [(_b(k, "key"), _b(v, "value")) for k, v in source.items()]
        else:
            for kv in source:
                if isinstance(kv, (str, bytes, bytearray, memoryview)):
                    raise TypeError("metadata pairs must be (key, value) tuples")
                try:
                    k, v = kv
                except (TypeError, ValueError):
                    raise TypeError("metadata pairs must be (key, value) tuples") from None
                pairs.append((_b(k, "key"), _b(v, "value")))
        self._pairs = tuple(pairs)

    @classmethod
    def _of_pairs(cls, pairs: tuple[tuple[bytes, bytes], ...]) -> Metadata:
        """A Metadata of (bytes, bytes) pairs as they are (a decoder's: no conversion)."""
        m = cls.__new__(cls)
        m._pairs = pairs
        return m

    # Mapping interface (first value wins for lookups)
    def __getitem__(self, key: str | bytes) -> bytes:
        k = _b(key, "key")
        for kk, v in self._pairs:
            if kk == k:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[bytes]:
        return (k for k, _ in self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def __contains__(self, key: object) -> bool:
        try:
            k = _b(key, "key")
        except TypeError:
            return False
        return any(kk == k for kk, _ in self._pairs)

    def keys(self) -> KeysView[bytes]:
        return KeysView(self)

    def values(self) -> ValuesView[bytes]:
        """Every value, in order (one per pair, duplicates' values included)."""
        return _Values(self._pairs)

    def items(self) -> ItemsView[bytes, bytes]:
        """Every (key, value) pair, in order, duplicates included."""
        return _Items(self._pairs)

    def get_all(self, key: str | bytes) -> list[bytes]:
        """Every value stored under ``key``, in order."""
        k = _b(key, "key")
        return [v for kk, v in self._pairs if kk == k]

    def to_dict(self) -> dict[bytes, bytes]:
        """A plain dict (the first value of each key)."""
        out: dict[bytes, bytes] = {}
        for k, v in self._pairs:
            out.setdefault(k, v)
        return out

    def to_arrow(self) -> Any:
        """A ``pyarrow.KeyValueMetadata`` with every pair (duplicates kept)."""
        import pyarrow as pa

        return pa.KeyValueMetadata(list(self._pairs))

    def _canonical(self) -> tuple[tuple[bytes, bytes], ...]:
        """Pairs grouped by key (stable: each key's values keep their order)."""
        return tuple(sorted(self._pairs, key=lambda kv: kv[0]))

    def __eq__(self, other: object) -> bool:
        """Equal when every key has the same values in the same order; the order between
        different keys does not matter (as for ``pyarrow.KeyValueMetadata`` and dicts).
        Compare ``list(m.items())`` to compare the exact order."""
        if isinstance(other, Metadata):
            return self._canonical() == other._canonical()
        if isinstance(other, Mapping):
            try:
                return self._canonical() == Metadata(other)._canonical()
            except TypeError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._canonical())

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def __repr__(self) -> str:
        return f"Metadata({list(self._pairs)!r})"

    @classmethod
    def coerce(cls, source: MetadataLike) -> Metadata:
        return source if isinstance(source, Metadata) else cls(source)
