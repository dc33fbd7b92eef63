"""Array statistics as carried in ``ArrayNode.stats``.

``min``/``max``/``sum`` are ``ScalarValue`` protobuf bytes on the wire; they are decoded
on demand with the array's dtype (``min_value(dtype)``).

>>> from vortex_io import dtype as dt
>>> s = ArrayStats.of(dt.int64(), min=1, max=9, null_count=0)
>>> s.min_value(dt.int64()), s.max_value(dt.int64()), s.null_count
(1, 9, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from . import dtype as dt
from ._errors import MalformedStreamError
from ._scalar import value_from_proto, value_to_proto

__all__ = ["ArrayStats"]


@dataclass
class ArrayStats:
    min: bytes | None = None
    min_exact: bool = False
    max: bytes | None = None
    max_exact: bool = False
    sum: bytes | None = None
    is_sorted: bool | None = None
    is_strict_sorted: bool | None = None
    is_constant: bool | None = None
    null_count: int | None = None
    uncompressed_size_in_bytes: int | None = None
    nan_count: int | None = None

    @classmethod
    def of(cls, dtype: dt.DType, *, min: Any = None, max: Any = None, exact: bool = True,
           **kw: Any) -> ArrayStats:
        """Stats from Python values (min/max encoded with ``dtype``'s scalar codec)."""
        s = cls(**kw)
        d = dtype.with_nullable(False) if not isinstance(dtype, dt.Null) else dtype
        if min is not None:
            s.min, s.min_exact = value_to_proto(d, min), exact
        if max is not None:
            s.max, s.max_exact = value_to_proto(d, max), exact
        return s

    def _decode(self, raw: bytes | None, dtype: dt.DType, what: str) -> Any:
        if not raw:
            return None
        try:
            return value_from_proto(dtype.with_nullable(True) if not isinstance(dtype, dt.Null)
                                    else dtype, raw)
        except MalformedStreamError as e:
            raise MalformedStreamError(f"bad {what} statistic: {e.reason}") from None

    def min_value(self, dtype: dt.DType) -> Any:
        return self._decode(self.min, dtype, "min")

    def max_value(self, dtype: dt.DType) -> Any:
        return self._decode(self.max, dtype, "max")

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) not in (None, False) for f in fields(self))

    def as_dict(self, dtype: dt.DType | None = None) -> dict[str, Any]:
        """The stats that are present; min/max decoded when ``dtype`` is given."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is None or f.name in ("min_exact", "max_exact"):
                continue
            if f.name in ("min", "max", "sum") and dtype is not None:
                try:
                    v = self._decode(v, dtype, f.name)
                except Exception:
                    continue
            out[f.name] = v
        return out
