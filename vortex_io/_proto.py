"""A minimal protobuf (proto3) wire codec for the tiny metadata messages of Vortex.

Encoding metadata and scalar values are protobuf messages of a few fields; a hand-written
codec keeps the dependency list short and lets every read be bounds-checked.

>>> enc = ProtoWriter().varint(1, 7).varint(2, 3).finish()
>>> enc
b'\\x08\\x07\\x10\\x03'
>>> fields = parse(enc)
>>> fields.get_int(1), fields.get_int(2), fields.get_int(3, 42)
(7, 3, 42)
"""

from __future__ import annotations

import struct
from typing import Any, cast, overload

from ._errors import MalformedStreamError

__all__ = ["ProtoWriter", "Fields", "parse", "zigzag_decode", "zigzag_encode"]

VARINT, I64, LEN, I32 = 0, 1, 2, 5
_MAX_DEPTH = 32


def zigzag_encode(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1)


def zigzag_decode(u: int) -> int:
    return (u >> 1) ^ -(u & 1)


def _varint_bytes(v: int) -> bytes:
    if v < 0:
        v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class ProtoWriter:
    """Builds one message; fields are written in the order they are added."""

    __slots__ = ("_out",)

    def __init__(self) -> None:
        self._out = bytearray()

    def _key(self, num: int, wt: int) -> None:
        self._out += _varint_bytes((num << 3) | wt)

    def varint(self, num: int, value: int, *, always: bool = False) -> ProtoWriter:
        """A varint field; proto3 omits zero unless ``always`` (explicit ``optional``)."""
        if value or always:
            self._key(num, VARINT)
            self._out += _varint_bytes(int(value))
        return self

    def sint(self, num: int, value: int, *, always: bool = False) -> ProtoWriter:
        if value or always:
            self._key(num, VARINT)
            self._out += _varint_bytes(zigzag_encode(int(value)))
        return self

    def fixed32(self, num: int, raw: bytes) -> ProtoWriter:
        self._key(num, I32)
        self._out += raw
        return self

    def fixed64(self, num: int, raw: bytes) -> ProtoWriter:
        self._key(num, I64)
        self._out += raw
        return self

    def bytes_(self, num: int, value: bytes, *, always: bool = False) -> ProtoWriter:
        if value or always:
            self._key(num, LEN)
            self._out += _varint_bytes(len(value))
            self._out += value
        return self

    def message(self, num: int, value: bytes) -> ProtoWriter:
        """A sub-message field, written even when empty (it is present)."""
        return self.bytes_(num, value, always=True)

    def packed_varints(self, num: int, values) -> ProtoWriter:
        body = b"".join(_varint_bytes(int(v)) for v in values)
        return self.bytes_(num, body)

    def finish(self) -> bytes:
        return bytes(self._out)


class Fields:
    """The decoded fields of one message: number -> list of (wire type, value)."""

    __slots__ = ("_f", "name")

    def __init__(self, f: dict[int, list[tuple[int, object]]], name: str) -> None:
        self._f = f
        self.name = name

    def __contains__(self, num: int) -> bool:
        return num in self._f

    def numbers(self) -> list[int]:
        return list(self._f)

    def last(self, num: int) -> tuple[int, object] | None:
        v = self._f.get(num)
        return v[-1] if v else None

    def _last_of(self, num: int, wire_type: int, kind: str) -> object | None:
        """The last value of field ``num``, which must have ``wire_type``; None if absent."""
        v = self.last(num)
        if v is None:
            return None
        if v[0] != wire_type:
            raise MalformedStreamError(f"{self.name}: field {num} is not {kind}")
        return v[1]

    @overload
    def get_int(self, num: int, default: int = 0) -> int: ...
    @overload
    def get_int(self, num: int, default: None) -> int | None: ...

    def get_int(self, num: int, default: int | None = 0) -> int | None:
        val = self._last_of(num, VARINT, "a varint")
        return default if val is None else cast(int, val)  # varints parse to ints

    @overload
    def get_uint(self, num: int, default: int = 0, *, bits: int = 64) -> int: ...
    @overload
    def get_uint(self, num: int, default: None, *, bits: int = 64) -> int | None: ...

    def get_uint(self, num: int, default: int | None = 0, *, bits: int = 64) -> int | None:
        v = self.get_int(num, default)
        if v is None:
            return None
        v &= (1 << 64) - 1
        if bits < 64 and v >= (1 << bits):
            raise MalformedStreamError(f"{self.name}: field {num} = {v} does not fit in u{bits}")
        return v

    def get_bool(self, num: int, default: bool | None = False) -> bool | None:
        v = self.get_int(num, None)
        if v is None:
            return default
        return bool(v)

    def get_bytes(self, num: int, default: bytes | None = None) -> bytes | None:
        val = self._last_of(num, LEN, "length-delimited")
        return default if val is None else cast(bytes, val)  # LEN fields parse to bytes

    def get_message(self, num: int, name: str) -> Fields | None:
        raw = self.get_bytes(num)
        return None if raw is None else parse(raw, name)

    def get_packed_varints(self, num: int) -> list[int]:
        out: list[int] = []
        for wt, val in self._f.get(num, []):
            if wt == VARINT:
                out.append(val)  # type: ignore[arg-type]
            elif wt == LEN:
                data: Any = val
                pos = 0
                while pos < len(data):
                    x, pos = _read_varint(data, pos, self.name)
                    out.append(x)
            else:
                raise MalformedStreamError(f"{self.name}: field {num} has wire type {wt}")
        return out

    def get_fixed(self, num: int) -> tuple[int, bytes] | None:
        v = self.last(num)
        if v is None:
            return None
        wt, val = v
        if wt not in (I32, I64):
            raise MalformedStreamError(f"{self.name}: field {num} is not fixed-width")
        return wt, val  # type: ignore[return-value]


def _read_varint(data, pos: int, name: str) -> tuple[int, int]:
    result = 0
    shift = 0
    n = len(data)
    while True:
        if pos >= n:
            raise MalformedStreamError(f"{name}: protobuf varint runs past the end")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7
        if shift >= 70:
            raise MalformedStreamError(f"{name}: protobuf varint is too long")


def parse(data: Any, name: str = "protobuf message") -> Fields:
    """Parse one protobuf message into its fields. Raises MalformedStreamError on bad input."""
    data = bytes(data)
    out: dict[int, list[tuple[int, object]]] = {}
    val: int | bytes | memoryview
    pos = 0
    n = len(data)
    while pos < n:
        key, pos = _read_varint(data, pos, name)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise MalformedStreamError(f"{name}: protobuf field number 0")
        if wt == VARINT:
            val, pos = _read_varint(data, pos, name)
        elif wt == I64:
            if pos + 8 > n:
                raise MalformedStreamError(f"{name}: fixed64 field {num} runs past the end")
            val = data[pos : pos + 8]
            pos += 8
        elif wt == I32:
            if pos + 4 > n:
                raise MalformedStreamError(f"{name}: fixed32 field {num} runs past the end")
            val = data[pos : pos + 4]
            pos += 4
        elif wt == LEN:
            ln, pos = _read_varint(data, pos, name)
            if pos + ln > n:
                raise MalformedStreamError(f"{name}: field {num} of {ln} bytes runs past the end")
            val = data[pos : pos + ln]
            pos += ln
        else:
            raise MalformedStreamError(f"{name}: unsupported protobuf wire type {wt}")
        out.setdefault(num, []).append((wt, val))
    return Fields(out, name)


def f32_bytes(v: float) -> bytes:
    return struct.pack("<f", v)


def f64_bytes(v: float) -> bytes:
    return struct.pack("<d", v)
