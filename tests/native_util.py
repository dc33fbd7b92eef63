"""Differential testing of the native core against the numpy reference implementation.

``outcome(data, native=...)`` reads a stream with one implementation: ``("ok", table)``
or ``("err", error class)``. ``assert_same(data)`` reads it both ways and checks the two
agree (tables identical, floats compared by their bits; or the same error class), with
the native side in ``strict()`` mode by default: a column it handed back to Python fails
the test, so a passing test proves the native path decoded it.
"""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa

import vortex_io as vio
from vortex_io import _native_glue as ng
from vortex_io._arrow import map_arrow_type

NATIVE = ng.enabled()


def stream_of(*arrays: vio.Array, dtype: Any = None, metadata: Any = None) -> bytes:
    """A stream holding each array as it is (one message each, no compression)."""
    buf = io.BytesIO()
    d = dtype if dtype is not None else arrays[0].dtype
    with vio.StreamWriter(buf, d, metadata=metadata) as w:
        for a in arrays:
            w.write_batch(a)
    return buf.getvalue()


def table_stream(table: Any, **kw: Any) -> bytes:
    if kw.get("compress", True) is True:  # every batch compressed, however small
        kw["compress"] = vio.CompressOptions(min_batch_bytes=0)
    buf = io.BytesIO()
    vio.write_ipc(buf, table, **kw)
    return buf.getvalue()


def _bits(t: pa.DataType) -> pa.DataType:
    # (map_arrow_type leaves view lists and maps whole: their floats are viewed here)
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        f = t.value_field
        inner = f.with_type(map_arrow_type(f.type, _bits))
        return pa.list_view(inner) if pa.types.is_list_view(t) else pa.large_list_view(inner)
    if pa.types.is_map(t):
        k, v = t.key_field, t.item_field
        return pa.map_(k.with_type(map_arrow_type(k.type, _bits)),
                       v.with_type(map_arrow_type(v.type, _bits)), t.keys_sorted)
    if pa.types.is_float16(t):
        return pa.int16()
    if pa.types.is_float32(t):
        return pa.int32()
    if pa.types.is_float64(t):
        return pa.int64()
    return t


def as_bits(x: Any) -> Any:
    """``x`` (an Arrow array or table) with floats viewed as integers of their width (NaNs
    compare equal when their bits are)."""
    if isinstance(x, pa.Table):
        return pa.table({n: as_bits(c) for n, c in zip(x.column_names, x.columns)})
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    t = map_arrow_type(x.type, _bits)
    return x if t == x.type else x.view(t)


def identical(a: Any, b: Any) -> bool:
    if isinstance(a, pa.Table):
        if a.schema != b.schema:
            return False
        return all(as_bits(x).equals(as_bits(y)) for x, y in zip(a.columns, b.columns))
    if a.type != b.type:
        return False
    return as_bits(a).equals(as_bits(b))


def outcome(data: bytes, *, native: bool, string_view: bool = False, threads: int | None = None,
            strict: bool = True, limits: Any = None) -> tuple[str, Any]:
    """Read a whole stream with one implementation: ("ok", result) or ("err", class)."""
    import contextlib

    ctx = ng.use_native(native)
    guard = ng.strict() if (native and strict) else contextlib.nullcontext()
    with ctx, guard:
        try:
            with vio.StreamReader(data, limits=limits) as r:
                return "ok", r.read_arrow(string_view=string_view, threads=threads)
        except vio.VortexIPCError as e:
            return "err", type(e)


def assert_same(data: bytes, *, string_view: bool | None = None, strict: bool = True,
                threads: int | None = None, limits: Any = None) -> Any:
    """Native and reference read ``data`` the same (both string modes unless given);
    returns the reference outcome."""
    modes = (False, True) if string_view is None else (string_view,)
    ref = None
    for sv in modes:
        ref = outcome(data, native=False, string_view=sv, limits=limits)
        if not NATIVE:
            continue
        nat = outcome(data, native=True, string_view=sv, threads=threads, strict=strict,
                      limits=limits)
        assert nat[0] == ref[0], f"native {nat} vs reference {ref}"
        if ref[0] == "err":
            assert nat[1] is ref[1], f"native raised {nat[1].__name__}, reference {ref[1].__name__}"
        else:
            assert identical(nat[1], ref[1]), (
                f"native and reference differ (string_view={sv}):\n{nat[1]}\n{ref[1]}")
    return ref
