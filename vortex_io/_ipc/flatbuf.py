"""A small, bounds-checked FlatBuffers table reader.

The generated Python accessors of the ``flatbuffers`` package trust their input: a bad
offset raises ``IndexError`` or ``struct.error`` deep inside, or loops. Headers come from
another process, so every read here is range-checked and a bad one raises
``MalformedStreamError`` naming the table and field. Reading is also several times faster
than the generated accessors (measured in ``bench/``), which matters because with
zero-copy bodies the headers are all a reader pays for.

Writing uses ``flatbuffers.Builder`` (see ``schema.py``); the schemas are in
``vortex_io/fbs/*.fbs``.
"""

from __future__ import annotations

import struct

from .._errors import MalformedStreamError

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I8 = struct.Struct("<b")

__all__ = ["Table", "root", "vtable_at"]


def vtable_at(buf, size: int, t: int, table: str) -> tuple[int, int]:
    """(vtable position, number of field slots) of the ``table`` table at ``t`` (``size``:
    ``len(buf)``), every position checked before it is read (``Table`` checks the same, with
    the same messages, for readers that want no object per table)."""
    if t < 0 or t + 4 > size:
        raise MalformedStreamError(f"flatbuffer table {table} at {t} is outside the header")
    vt = t - _I32.unpack_from(buf, t)[0]
    if vt < 0 or vt + 4 > size:
        raise MalformedStreamError(f"flatbuffer vtable of {table} at {vt} is outside the header")
    vt_len = _U16.unpack_from(buf, vt)[0]
    if vt_len < 4 or vt_len % 2 or vt + vt_len > size:
        raise MalformedStreamError(f"flatbuffer vtable of {table} has a bad size {vt_len}")
    return vt, (vt_len - 4) >> 1


class Table:
    """A view of one FlatBuffers table inside ``buf`` (any bytes-like object)."""

    __slots__ = ("buf", "name", "pos", "vt", "vt_len")

    def __init__(self, buf: memoryview, pos: int, name: str) -> None:
        n = len(buf)
        self.buf = buf
        self.name = name
        if pos < 0 or pos + 4 > n:
            raise MalformedStreamError(f"flatbuffer table {name} at {pos} is outside the header")
        vt = pos - _I32.unpack_from(buf, pos)[0]
        if vt < 0 or vt + 4 > n:
            raise MalformedStreamError(f"flatbuffer vtable of {name} at {vt} is outside the header")
        vt_len, _tbl_len = struct.unpack_from("<HH", buf, vt)
        if vt_len < 4 or vt_len % 2 or vt + vt_len > n:
            raise MalformedStreamError(f"flatbuffer vtable of {name} has a bad size {vt_len}")
        self.pos = pos
        self.vt = vt
        self.vt_len = vt_len

    # -- field location -------------------------------------------------------------
    def _field(self, slot: int) -> int:
        """Absolute position of a field, or 0 when absent."""
        o = 4 + 2 * slot
        if o >= self.vt_len:
            return 0
        off = _U16.unpack_from(self.buf, self.vt + o)[0]
        return self.pos + off if off else 0

    def has(self, slot: int) -> bool:
        return self._field(slot) != 0

    def _scalar(self, slot: int, fmt: struct.Struct, default, what: str):
        p = self._field(slot)
        if not p:
            return default
        if p + fmt.size > len(self.buf):
            raise MalformedStreamError(f"flatbuffer field {self.name}.{what} is outside the header")
        return fmt.unpack_from(self.buf, p)[0]

    def u8(self, slot: int, default: int = 0, what: str = "?") -> int:
        return self._scalar(slot, _U8, default, what)

    def i8(self, slot: int, default: int = 0, what: str = "?") -> int:
        return self._scalar(slot, _I8, default, what)

    def u16(self, slot: int, default: int = 0, what: str = "?") -> int:
        return self._scalar(slot, _U16, default, what)

    def u32(self, slot: int, default: int = 0, what: str = "?") -> int:
        return self._scalar(slot, _U32, default, what)

    def u64(self, slot: int, default: int = 0, what: str = "?") -> int:
        return self._scalar(slot, _U64, default, what)

    def opt_u64(self, slot: int, what: str = "?") -> int | None:
        return self._scalar(slot, _U64, None, what)

    def boolean(self, slot: int, default: bool = False, what: str = "?") -> bool:
        return bool(self._scalar(slot, _U8, int(default), what))

    def opt_bool(self, slot: int, what: str = "?") -> bool | None:
        v = self._scalar(slot, _U8, None, what)
        return None if v is None else bool(v)

    # -- offsets --------------------------------------------------------------------
    def _deref(self, slot: int, what: str) -> int:
        p = self._field(slot)
        if not p:
            return 0
        buf = self.buf
        if p + 4 > len(buf):
            raise MalformedStreamError(f"flatbuffer field {self.name}.{what} is outside the header")
        target = p + _U32.unpack_from(buf, p)[0]
        if target + 4 > len(buf) or target == p:
            raise MalformedStreamError(
                f"flatbuffer field {self.name}.{what} points outside the header"
            )
        return target

    def table(self, slot: int, name: str) -> Table | None:
        t = self._deref(slot, name)
        return Table(self.buf, t, name) if t else None

    def _vector(self, slot: int, what: str, elem_size: int) -> tuple[int, int] | None:
        t = self._deref(slot, what)
        if not t:
            return None
        n = _U32.unpack_from(self.buf, t)[0]
        start = t + 4
        if start + n * elem_size > len(self.buf):
            raise MalformedStreamError(
                f"flatbuffer vector {self.name}.{what} of {n} elements runs past the header"
            )
        return start, n

    def bytes_(self, slot: int, what: str = "?") -> bytes | None:
        v = self._vector(slot, what, 1)
        if v is None:
            return None
        start, n = v
        return bytes(self.buf[start : start + n])

    def string(self, slot: int, what: str = "?") -> str | None:
        raw = self.bytes_(slot, what)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise MalformedStreamError(f"flatbuffer string {self.name}.{what} is not UTF-8") from e

    def vector_raw(self, slot: int, elem_size: int, what: str = "?") -> tuple[int, int] | None:
        """(absolute start, count) of a vector of fixed-size elements (scalars or structs)."""
        return self._vector(slot, what, elem_size)

    def vector_len(self, slot: int, what: str = "?") -> int:
        v = self._vector(slot, what, 4)
        return 0 if v is None else v[1]

    def tables(self, slot: int, name: str) -> list[Table]:
        v = self._vector(slot, name, 4)
        if v is None:
            return []
        start, n = v
        buf = self.buf
        out = []
        for i in range(n):
            p = start + 4 * i
            out.append(Table(buf, p + _U32.unpack_from(buf, p)[0], name))
        return out

    def strings(self, slot: int, what: str = "?") -> list[str]:
        v = self._vector(slot, what, 4)
        if v is None:
            return []
        start, n = v
        buf = self.buf
        size = len(buf)
        out = []
        for i in range(n):
            p = start + 4 * i
            s = p + _U32.unpack_from(buf, p)[0]
            if s + 4 > size:
                raise MalformedStreamError(f"flatbuffer string in {self.name}.{what} is outside")
            ln = _U32.unpack_from(buf, s)[0]
            if s + 4 + ln > size:
                raise MalformedStreamError(f"flatbuffer string in {self.name}.{what} runs past")
            try:
                out.append(str(buf[s + 4 : s + 4 + ln], "utf-8"))
            except UnicodeDecodeError as e:
                raise MalformedStreamError(f"flatbuffer string in {self.name}.{what} is not UTF-8") from e
        return out


def root(buf, name: str) -> Table:
    """The root table of a size-unprefixed flatbuffer."""
    mv = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    if len(mv) < 8:
        raise MalformedStreamError(f"flatbuffer {name} is only {len(mv)} bytes")
    return Table(mv, _U32.unpack_from(mv, 0)[0], name)
