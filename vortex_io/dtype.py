"""The logical type model: ``DType`` and its kinds, and the mapping to and from Arrow.

A Vortex dtype says what values mean, never how they are stored (that is the encoding's
job). Every dtype carries its nullability.

>>> from vortex_io import dtype as dt
>>> t = dt.Struct(["id", "name"], [dt.int64(), dt.Utf8(nullable=True)])
>>> t
Struct({id: i64, name: utf8?})
>>> t.to_arrow()
StructType(struct<id: int64 not null, name: string>)
>>> dt.from_arrow(t.to_arrow()) == t.with_nullable(True)
True
>>> dt.timestamp("us", "UTC")
Extension(vortex.timestamp, i64, unit=us, tz=UTC)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

from ._errors import ColumnNotFoundError, MalformedStreamError, UnsupportedError

__all__ = [
    "PType",
    "TimeUnit",
    "DType",
    "Null",
    "Bool",
    "Primitive",
    "Decimal",
    "Utf8",
    "Binary",
    "Struct",
    "List",
    "FixedSizeList",
    "Extension",
    "timestamp",
    "date",
    "time",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "from_arrow",
    "TIMESTAMP_ID",
    "DATE_ID",
    "TIME_ID",
]


class PType(IntEnum):
    """Primitive physical types, numbered as on the wire."""

    U8 = 0
    U16 = 1
    U32 = 2
    U64 = 3
    I8 = 4
    I16 = 5
    I32 = 6
    I64 = 7
    F16 = 8
    F32 = 9
    F64 = 10

    # (the values 0..10 compared as ints: these run for every node decoded)
    @property
    def np_dtype(self) -> np.dtype:
        return _PTYPE_NP[self]

    @property
    def byte_width(self) -> int:
        return _PTYPE_WIDTH[self]

    @property
    def is_int(self) -> bool:
        return self <= 7

    @property
    def is_unsigned(self) -> bool:
        return self <= 3

    @property
    def is_signed_int(self) -> bool:
        return 4 <= self <= 7

    @property
    def is_float(self) -> bool:
        return self >= 8

    @property
    def short(self) -> str:
        return _PTYPE_SHORT[self]

    @classmethod
    def from_numpy(cls, d: Any) -> PType:
        try:
            return _NP_TO_PTYPE[d]  # a numpy dtype (dtypes hash and compare by layout)
        except (KeyError, TypeError):
            pass
        d = np.dtype(d)
        for p, nd in _PTYPE_NP.items():
            if nd == d:
                return p
        raise UnsupportedError(f"numpy dtype {d} has no Vortex primitive type")

    def to_unsigned(self) -> PType:
        return {1: PType.U8, 2: PType.U16, 4: PType.U32, 8: PType.U64}[self.byte_width]

    def to_signed(self) -> PType:
        return {1: PType.I8, 2: PType.I16, 4: PType.I32, 8: PType.I64}[self.byte_width]


_PTYPE_NP: dict[PType, np.dtype[Any]] = {
    PType.U8: np.dtype("<u1"),
    PType.U16: np.dtype("<u2"),
    PType.U32: np.dtype("<u4"),
    PType.U64: np.dtype("<u8"),
    PType.I8: np.dtype("<i1"),
    PType.I16: np.dtype("<i2"),
    PType.I32: np.dtype("<i4"),
    PType.I64: np.dtype("<i8"),
    PType.F16: np.dtype("<f2"),
    PType.F32: np.dtype("<f4"),
    PType.F64: np.dtype("<f8"),
}
_NP_TO_PTYPE = {v: k for k, v in _PTYPE_NP.items()}
_PTYPE_WIDTH = {k: v.itemsize for k, v in _PTYPE_NP.items()}
_PTYPE_SHORT = {
    PType.U8: "u8",
    PType.U16: "u16",
    PType.U32: "u32",
    PType.U64: "u64",
    PType.I8: "i8",
    PType.I16: "i16",
    PType.I32: "i32",
    PType.I64: "i64",
    PType.F16: "f16",
    PType.F32: "f32",
    PType.F64: "f64",
}


class TimeUnit(IntEnum):
    """Time units of the datetime extension types, numbered as on the wire."""

    NS = 0
    US = 1
    MS = 2
    S = 3
    D = 4

    @property
    def arrow(self) -> str:
        return _UNIT_ARROW[self]

    @classmethod
    def parse(cls, unit: str | int | TimeUnit) -> TimeUnit:
        if isinstance(unit, str):
            try:
                return _UNIT_FROM_STR[unit]
            except KeyError:
                raise ValueError(f"unknown time unit {unit!r}") from None
        return cls(unit)


_UNIT_ARROW = {TimeUnit.NS: "ns", TimeUnit.US: "us", TimeUnit.MS: "ms", TimeUnit.S: "s", TimeUnit.D: "D"}
_UNIT_FROM_STR = {v: k for k, v in _UNIT_ARROW.items()} | {"d": TimeUnit.D, "days": TimeUnit.D}

TIMESTAMP_ID = "vortex.timestamp"
DATE_ID = "vortex.date"
TIME_ID = "vortex.time"


_dtype_to_arrow: Any = None


@dataclass(frozen=True)
class DType:
    """Base of all logical types. Subclasses are frozen dataclasses, hashable and comparable."""

    nullable: bool = False

    def with_nullable(self, nullable: bool) -> DType:
        """The same type with another nullability (recursively untouched)."""
        from dataclasses import replace

        return replace(self, nullable=nullable)

    def to_arrow(self, *, string_view: bool = False) -> Any:
        """The Arrow type values of this dtype convert to (see ``Array.to_arrow``);
        ``string_view``: strings and binary as Arrow's view types."""
        global _dtype_to_arrow
        if _dtype_to_arrow is None:  # (arrow.py imports this module)
            from ._arrow import dtype_to_arrow as _dtype_to_arrow
        return _dtype_to_arrow(self, string_view)

    @property
    def _q(self) -> str:
        return "?" if self.nullable else ""

    def __repr__(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


@dataclass(frozen=True, repr=False)
class Null(DType):
    """The type of a column of nulls (always nullable)."""

    nullable: bool = True

    def __post_init__(self) -> None:
        if not self.nullable:
            raise ValueError("the Null dtype is always nullable")

    def __repr__(self) -> str:
        return "null"


@dataclass(frozen=True, repr=False)
class Bool(DType):
    def __repr__(self) -> str:
        return "bool" + self._q


@dataclass(frozen=True, repr=False)
class Primitive(DType):
    ptype: PType = PType.I64

    def __init__(self, ptype: PType | int, nullable: bool = False) -> None:
        object.__setattr__(self, "nullable", nullable)
        object.__setattr__(self, "ptype", ptype if type(ptype) is PType else PType(ptype))

    def __repr__(self) -> str:
        return self.ptype.short + self._q


@dataclass(frozen=True, repr=False)
class Decimal(DType):
    precision: int = 38
    scale: int = 0

    def __init__(self, precision: int, scale: int = 0, nullable: bool = False) -> None:
        if not 1 <= precision <= 76:
            raise ValueError(f"decimal precision {precision} is outside 1..76")
        if not -128 <= scale <= 127 or scale > precision:
            raise ValueError(f"decimal scale {scale} is invalid for precision {precision}")
        object.__setattr__(self, "nullable", nullable)
        object.__setattr__(self, "precision", precision)
        object.__setattr__(self, "scale", scale)

    def __repr__(self) -> str:
        return f"decimal({self.precision},{self.scale}){self._q}"


@dataclass(frozen=True, repr=False)
class Utf8(DType):
    def __repr__(self) -> str:
        return "utf8" + self._q


@dataclass(frozen=True, repr=False)
class Binary(DType):
    def __repr__(self) -> str:
        return "binary" + self._q


@dataclass(frozen=True, repr=False)
class Struct(DType):
    names: tuple[str, ...] = ()
    dtypes: tuple[DType, ...] = ()

    def __init__(self, names, dtypes, nullable: bool = False) -> None:
        names = tuple(names)
        dtypes = tuple(dtypes)
        if len(names) != len(dtypes):
            raise ValueError("a struct needs as many names as dtypes")
        object.__setattr__(self, "nullable", nullable)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "dtypes", dtypes)

    def field(self, name: str) -> DType:
        """The dtype of the field ``name`` (``vortex_io.ColumnNotFoundError``, a
        ``KeyError``, for a name the struct does not have)."""
        try:
            return self.dtypes[self.names.index(name)]
        except ValueError:
            raise ColumnNotFoundError(name, self.names) from None

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}: {d!r}" for n, d in zip(self.names, self.dtypes))
        return f"Struct({{{inner}}}){self._q}"


@dataclass(frozen=True, repr=False)
class List(DType):
    element: DType = field(default_factory=lambda: Null())

    def __init__(self, element: DType, nullable: bool = False) -> None:
        object.__setattr__(self, "nullable", nullable)
        object.__setattr__(self, "element", element)

    def __repr__(self) -> str:
        return f"list({self.element!r}){self._q}"


@dataclass(frozen=True, repr=False)
class FixedSizeList(DType):
    element: DType = field(default_factory=lambda: Null())
    size: int = 0

    def __init__(self, element: DType, size: int, nullable: bool = False) -> None:
        if not 0 <= size < 2**32:
            raise ValueError(f"fixed-size list size {size} is out of range")
        object.__setattr__(self, "nullable", nullable)
        object.__setattr__(self, "element", element)
        object.__setattr__(self, "size", size)

    def __repr__(self) -> str:
        return f"fixed_size_list({self.element!r}, {self.size}){self._q}"


@dataclass(frozen=True, repr=False)
class Extension(DType):
    """An extension type: ``id`` names it, ``storage`` holds its values, ``metadata`` is
    opaque bytes owned by the extension. Nullability is the storage dtype's."""

    id: str = ""
    storage: DType = field(default_factory=lambda: Null())
    metadata: bytes = b""

    def __init__(self, id: str, storage: DType, metadata: bytes = b"", nullable: bool | None = None) -> None:
        if nullable is not None and nullable != storage.nullable:
            storage = storage.with_nullable(nullable)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "storage", storage)
        object.__setattr__(self, "metadata", bytes(metadata))
        object.__setattr__(self, "nullable", storage.nullable)

    def with_nullable(self, nullable: bool) -> Extension:
        return Extension(self.id, self.storage.with_nullable(nullable), self.metadata)

    # -- datetime extensions -----------------------------------------------------------
    @property
    def is_temporal(self) -> bool:
        return self.id in (TIMESTAMP_ID, DATE_ID, TIME_ID)

    @property
    def unit(self) -> TimeUnit:
        """The time unit of a datetime extension."""
        if not self.is_temporal or not self.metadata:
            raise UnsupportedError(f"extension {self.id} has no time unit")
        try:
            return TimeUnit(self.metadata[0])
        except ValueError:
            raise MalformedStreamError(
                f"extension {self.id} has an unknown time unit {self.metadata[0]}"
            ) from None

    @property
    def tz(self) -> str | None:
        """The time zone of a ``vortex.timestamp`` (None when naive)."""
        if self.id != TIMESTAMP_ID:
            return None
        m = self.metadata
        if len(m) < 3:
            raise MalformedStreamError(f"vortex.timestamp metadata is {len(m)} bytes, needs 3")
        (n,) = struct.unpack_from("<H", m, 1)
        if 3 + n != len(m):
            raise MalformedStreamError("vortex.timestamp time-zone length disagrees with metadata")
        if n == 0:
            return None
        try:
            return m[3:].decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedStreamError("vortex.timestamp time zone is not UTF-8") from None

    def __repr__(self) -> str:
        if self.is_temporal and self.metadata:
            try:
                extra = f", unit={self.unit.arrow}"
                if self.id == TIMESTAMP_ID and self.tz:
                    extra += f", tz={self.tz}"
            except Exception:
                extra = f", metadata={self.metadata!r}"
        else:
            extra = f", metadata={self.metadata!r}" if self.metadata else ""
        return f"Extension({self.id}, {self.storage!r}{extra})"


# -- constructors --------------------------------------------------------------------


def _prim(p: PType):
    def make(nullable: bool = False) -> Primitive:
        return Primitive(p, nullable)

    make.__name__ = p.short
    make.__doc__ = f"A ``{p.short}`` primitive dtype."
    return make


int8, int16, int32, int64 = (_prim(p) for p in (PType.I8, PType.I16, PType.I32, PType.I64))
uint8, uint16, uint32, uint64 = (_prim(p) for p in (PType.U8, PType.U16, PType.U32, PType.U64))
float16, float32, float64 = (_prim(p) for p in (PType.F16, PType.F32, PType.F64))


def timestamp(unit: str | TimeUnit = "us", tz: str | None = None, nullable: bool = False) -> Extension:
    """A ``vortex.timestamp`` extension over i64 epoch values."""
    u = TimeUnit.parse(unit)
    if u == TimeUnit.D:
        raise ValueError("timestamps cannot have a day unit")
    tzb = (tz or "").encode("utf-8")
    meta = bytes([u]) + struct.pack("<H", len(tzb)) + tzb
    return Extension(TIMESTAMP_ID, int64(nullable), meta)


def date(unit: str | TimeUnit = "D", nullable: bool = False) -> Extension:
    """A ``vortex.date`` extension: days in i32 or milliseconds in i64 since the epoch."""
    u = TimeUnit.parse(unit)
    if u == TimeUnit.D:
        return Extension(DATE_ID, int32(nullable), bytes([u]))
    if u == TimeUnit.MS:
        return Extension(DATE_ID, int64(nullable), bytes([u]))
    raise ValueError("a date unit is days or milliseconds")


def time(unit: str | TimeUnit = "us", nullable: bool = False) -> Extension:
    """A ``vortex.time`` extension: time of day in i32 (s, ms) or i64 (us, ns)."""
    u = TimeUnit.parse(unit)
    if u in (TimeUnit.S, TimeUnit.MS):
        return Extension(TIME_ID, int32(nullable), bytes([u]))
    if u in (TimeUnit.US, TimeUnit.NS):
        return Extension(TIME_ID, int64(nullable), bytes([u]))
    raise ValueError("a time unit is s, ms, us or ns")


def from_arrow(arrow_type: Any, nullable: bool = True) -> DType:
    """The Vortex dtype of an Arrow type (or field, or schema)."""
    from ._arrow import dtype_from_arrow

    return dtype_from_arrow(arrow_type, nullable)
