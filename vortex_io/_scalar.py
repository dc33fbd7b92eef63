"""Scalars: one typed value, and its ``ScalarValue`` protobuf codec.

Scalars appear on the wire as the value of ``vortex.constant`` arrays, as the reference of
``fastlanes.for``, as fill values and as statistics (min, max).

Python values by dtype: ``None`` for null; ``bool``; ``int`` for integers, decimals (the
unscaled value) and datetime extensions (the storage integer); ``float``; ``str``;
``bytes``; ``list`` for lists; ``tuple`` for structs.

>>> from vortex_io import dtype as dt
>>> s = Scalar(dt.int64(), -3)
>>> s.to_proto()
b'\\x18\\x05'
>>> Scalar.from_proto(dt.int64(), b'\\x18\\x05')
Scalar(i64, -3)
>>> Scalar.from_proto(dt.Decimal(10, 2), b'B\\x08\\xd2\\x04\\x00\\x00\\x00\\x00\\x00\\x00').as_py()
Decimal('12.34')
"""

from __future__ import annotations

import decimal as _decimal
import struct
from typing import Any

import numpy as np

from . import dtype as dt
from ._errors import MalformedStreamError, UnsupportedError
from ._proto import LEN, Fields, ProtoWriter, parse, zigzag_decode

__all__ = ["Scalar", "decimal_value_bytes", "decimal_from_unscaled"]

# exact for every Vortex decimal (at most 76 digits); the default context rounds to 28
_EXACT = _decimal.Context(prec=100)


def decimal_from_unscaled(value: int, scale: int) -> _decimal.Decimal:
    """``value * 10**-scale`` as an exact ``decimal.Decimal`` (no context rounding)."""
    return _decimal.Decimal(value).scaleb(-scale, _EXACT)


def decimal_value_bytes(precision: int) -> int:
    """Byte width of the smallest Vortex decimal value type for ``precision``."""
    if precision <= 2:
        return 1
    if precision <= 4:
        return 2
    if precision <= 9:
        return 4
    if precision <= 18:
        return 8
    if precision <= 38:
        return 16
    return 32


class Scalar:
    """A value with its dtype."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype: dt.DType, value: Any) -> None:
        self.dtype = dtype
        self.value = value
        if value is None and not dtype.nullable:
            raise ValueError(f"a null scalar needs a nullable dtype, got {dtype!r}")

    @property
    def is_null(self) -> bool:
        return self.value is None

    def as_py(self) -> Any:
        """The value as Python would show it (decimals as ``decimal.Decimal``)."""
        if self.value is None:
            return None
        if isinstance(self.dtype, dt.Decimal):
            return decimal_from_unscaled(self.value, self.dtype.scale)
        return self.value

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Scalar)
            and self.dtype == other.dtype
            and (self.value == other.value or _both_nan(self.value, other.value))
        )

    def __hash__(self) -> int:
        return hash((self.dtype, self.value if not isinstance(self.value, list) else None))

    def __repr__(self) -> str:
        return f"Scalar({self.dtype!r}, {self.value!r})"

    # -- protobuf ----------------------------------------------------------------------
    def to_proto(self) -> bytes:
        return value_to_proto(self.dtype, self.value)

    @classmethod
    def from_proto(cls, dtype: dt.DType, data: bytes | memoryview) -> Scalar:
        return cls(dtype, value_from_proto(dtype, data)) if len(data) else cls._null(dtype)

    @classmethod
    def _null(cls, dtype: dt.DType) -> Scalar:
        if not dtype.nullable:
            raise MalformedStreamError(f"empty scalar for a non-nullable {dtype!r}")
        return cls(dtype, None)


def _both_nan(a: Any, b: Any) -> bool:
    return isinstance(a, float) and isinstance(b, float) and a != a and b != b


def _storage(d: dt.DType) -> dt.DType:
    while isinstance(d, dt.Extension):
        d = d.storage
    return d


def _value_msg(d: dt.DType, v: Any) -> ProtoWriter:
    w = ProtoWriter()
    if v is None:
        return w.varint(1, 0, always=True)
    d = _storage(d)
    if isinstance(d, dt.Bool):
        return w.varint(2, int(bool(v)), always=True)
    if isinstance(d, dt.Primitive):
        p = d.ptype
        if p.is_signed_int:
            return w.sint(3, int(v), always=True)
        if p.is_unsigned:
            return w.varint(4, int(v), always=True)
        if p == dt.PType.F16:
            return w.varint(10, int(np.array(v, dtype="<f2").view("<u2")), always=True)
        if p == dt.PType.F32:
            return w.fixed32(5, struct.pack("<f", v))
        return w.fixed64(6, struct.pack("<d", v))
    if isinstance(d, dt.Decimal):
        n = decimal_value_bytes(d.precision)
        return w.bytes_(8, int(v).to_bytes(n, "little", signed=True), always=True)
    if isinstance(d, dt.Utf8):
        return w.bytes_(7, str(v).encode("utf-8"), always=True)
    if isinstance(d, dt.Binary):
        return w.bytes_(8, bytes(v), always=True)
    if isinstance(d, (dt.List, dt.FixedSizeList, dt.Struct)):
        if isinstance(d, dt.Struct):
            elems = list(zip(d.dtypes, v))
        else:
            elems = [(d.element, x) for x in v]
        inner = ProtoWriter()
        for ed, ev in elems:
            inner.message(1, _value_msg(ed, ev).finish())
        return w.message(9, inner.finish())
    if isinstance(d, dt.Null):
        return w.varint(1, 0, always=True)
    raise UnsupportedError(f"cannot write a scalar of dtype {d!r}")


def value_to_proto(d: dt.DType, v: Any) -> bytes:
    """The ``ScalarValue`` protobuf bytes of a Python value of dtype ``d``."""
    return _value_msg(d, v).finish()


def int_field(f: Fields, name: str) -> int:
    """The integer of a parsed ``ScalarValue``: field 3 (sint64) or 4 (uint64), which
    readers accept for any integer dtype."""
    if 3 in f:
        return zigzag_decode(f.get_uint(3))
    if 4 in f:
        return f.get_uint(4)
    raise MalformedStreamError(f"{name}: integer scalar has no integer value")


def _bytes_field(f: Fields, nums: tuple[int, int], kind: str, name: str) -> bytes:
    """The first of fields ``nums`` present: a string is field 7 and binary field 8, and
    readers accept either for both."""
    for num in nums:
        raw = f.get_bytes(num)
        if raw is not None:
            return raw
    raise MalformedStreamError(f"{name}: missing {kind} value")


def value_from_proto(d: dt.DType, data: bytes | memoryview | np.ndarray, _depth: int = 0) -> Any:
    """Decode ``ScalarValue`` bytes (bytes-like, or a uint8 buffer) into a Python value of
    dtype ``d``."""
    if _depth > 32:
        raise MalformedStreamError("scalar nesting is too deep")
    name = f"scalar of {d!r}"
    f = parse(data, name)
    if 1 in f:
        if not d.nullable and not isinstance(d, dt.Null):
            raise MalformedStreamError(f"{name}: null value for a non-nullable dtype")
        return None
    s = _storage(d)
    if isinstance(s, dt.Null):
        raise MalformedStreamError(f"{name}: a null dtype holds only nulls")
    if isinstance(s, dt.Bool):
        if 2 not in f:
            raise MalformedStreamError(f"{name}: missing bool value")
        return bool(f.get_int(2))
    if isinstance(s, dt.Primitive):
        p = s.ptype
        if p.is_int:
            v = int_field(f, name)
            info = np.iinfo(p.np_dtype)
            if not info.min <= v <= info.max:
                # a sint64 field may carry a u64 bit pattern and vice versa
                v &= (1 << (8 * p.byte_width)) - 1
                if p.is_signed_int and v >= 1 << (8 * p.byte_width - 1):
                    v -= 1 << (8 * p.byte_width)
            return v
        if p == dt.PType.F16:
            if 10 not in f:
                raise MalformedStreamError(f"{name}: missing f16 value")
            bits = f.get_uint(10, bits=16)
            return float(np.array(bits, dtype="<u2").view("<f2"))
        if p == dt.PType.F32:
            fx = f.get_fixed(5) or f.get_fixed(6)
            if fx is None:
                raise MalformedStreamError(f"{name}: missing f32 value")
            return float(np.float32(struct.unpack("<f" if len(fx[1]) == 4 else "<d", fx[1])[0]))
        fx = f.get_fixed(6) or f.get_fixed(5)
        if fx is None:
            raise MalformedStreamError(f"{name}: missing f64 value")
        return struct.unpack("<d" if len(fx[1]) == 8 else "<f", fx[1])[0]
    if isinstance(s, dt.Decimal):
        raw = f.get_bytes(8)
        if raw is None:
            if 3 in f or 4 in f:
                return int_field(f, name)
            raise MalformedStreamError(f"{name}: missing decimal value")
        if len(raw) not in (1, 2, 4, 8, 16, 32):
            raise MalformedStreamError(f"{name}: decimal value of {len(raw)} bytes")
        return int.from_bytes(raw, "little", signed=True)
    if isinstance(s, dt.Utf8):
        try:
            return _bytes_field(f, (7, 8), "string", name).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedStreamError(f"{name}: string value is not UTF-8") from None
    if isinstance(s, dt.Binary):
        return _bytes_field(f, (8, 7), "binary", name)
    if isinstance(s, (dt.List, dt.FixedSizeList, dt.Struct)):
        lst = f.get_message(9, name)
        items: list[Any] = [] if lst is None else [v for wt, v in lst._f.get(1, []) if wt == LEN]
        if lst is not None and any(wt != LEN for wt, _ in lst._f.get(1, [])):
            raise MalformedStreamError(f"{name}: list element is not a message")
        if isinstance(s, dt.Struct):
            if len(items) != len(s.dtypes):
                raise MalformedStreamError(f"{name}: {len(items)} values for {len(s.dtypes)} fields")
            return tuple(value_from_proto(fd, it, _depth + 1) for fd, it in zip(s.dtypes, items))
        if isinstance(s, dt.FixedSizeList) and len(items) != s.size:
            raise MalformedStreamError(f"{name}: {len(items)} values for a list of size {s.size}")
        return [value_from_proto(s.element, it, _depth + 1) for it in items]
    raise UnsupportedError(f"cannot read a scalar of dtype {d!r}")

