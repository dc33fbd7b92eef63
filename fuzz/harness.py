"""The property every input must satisfy: reading it, fully, ends in success or a
``vortex_io.VortexIPCError``.

``consume(data)`` reads a stream with ``StreamReader`` and canonicalizes everything it
yields: each batch's ``array.to_arrow()`` (validated by Arrow), ``Batch.to_arrow()``, a
slice of each batch, then ``vortex_io.scan(data)`` without and with filters built for the
stream's dtype (so the compute kernels on encoded arrays and chunk pruning by statistics
see hostile input too). Lazy decoding must not defer a crash: everything is forced here.

It returns ``"ok"`` or the name of the ``VortexIPCError`` subclass raised; any other
exception propagates: that is a bug.

``differential(data)`` reads the stream with ``read_arrow`` twice, with the native core and
with the numpy reference (``vortex_io._native_glue.use_native(False)``), and says how the
outcomes differ, if they do: both must give identical tables (floats compared by their
bits: ``tests.native_util.identical``) or raise the same ``VortexIPCError`` subclass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

import vortex_io as vio
from vortex_io import dtype as dt
from vortex_io.expr import col

__all__ = ["consume", "exercise", "differential", "VALUE_LEVEL", "FUZZ_LIMITS", "filters_for",
           "ROUTES", "PUBLIC_ERRORS", "route_outcomes", "outcome_of", "routes_differ"]

#: Arrow's full validation also checks values that reading does not promise to validate
#: (UTF-8 of strings, decimal precision, time-of-day range, date64 whole days; neither
#: does Arrow IPC).
#: Structure (lengths, offsets, buffer sizes, indices) must hold.
VALUE_LEVEL = ("Invalid UTF8 sequence", "does not fit in precision",
               "is not within the acceptable range", "does not represent a whole number of days")


def _check_arrow(a: Any) -> None:
    chunks = a.chunks if isinstance(a, pa.ChunkedArray) else [a]
    for c in chunks:
        c.validate()
        try:
            c.validate(full=True)
        except pa.ArrowInvalid as e:
            if not any(v in str(e) for v in VALUE_LEVEL):
                raise


def filters_for(d: dt.DType) -> list[Any]:
    """A few filters that type-check against ``d`` (struct streams), touching up to three
    columns: comparisons, IN lists and null tests."""
    if not isinstance(d, dt.Struct):
        return []
    out = []
    for name, fd in list(zip(d.names, d.dtypes))[:3]:
        c = col(name)
        s = fd.storage if isinstance(fd, dt.Extension) else fd
        if isinstance(fd, dt.Extension) and fd.is_temporal:
            out.append(~c.is_null())
        elif isinstance(s, dt.Primitive) and s.ptype.is_int:
            out += [c > 3, c.is_in([0, 1, 2, 7]), (c == 5) | c.is_null()]
        elif isinstance(s, dt.Primitive):
            out += [c < 100.5, c.between(-1.0, 1e6)]
        elif isinstance(s, dt.Utf8):
            out += [c == "alpha", c.is_in(["beta", "v23"]), c >= "m"]
        elif isinstance(s, dt.Bool):
            out.append(c == True)  # noqa: E712  (an expression, not a test)
        else:
            out.append(c.is_null())
    return out


#: Limits the fuzzers read with: inputs are at most 64 KiB, so any expansion past 64 MiB
#: (1000x) must be refused; with these, every input decodes in well under 2 s and 2 GiB,
#: and a code path that ignores the limits shows up as a runaway allocation in the sandbox.
FUZZ_LIMITS = vio.ReaderLimits(max_body_bytes=64 << 20, max_decoded_bytes=64 << 20)


def exercise(data: bytes, *, limits: vio.ReaderLimits | None = FUZZ_LIMITS,
             scans: bool = True) -> None:
    """Read and canonicalize everything in ``data``, raising whatever the reader raises
    (``limits=None``: the reader's defaults)."""
    with vio.StreamReader(data, limits=limits) as r:
        d = r.dtype
        for b in r:
            a = b.array
            _check_arrow(a.to_arrow())
            b.to_arrow()
            n = len(a)
            if n > 2:
                _check_arrow(a.slice(1, n - 1).to_arrow())
    if scans:
        vio.scan(data, limits=limits).to_arrow()
        for f in filters_for(d):
            vio.scan(data, filter=f, limits=limits).to_arrow()
        if not isinstance(d, dt.Struct):
            _kernels_on_arrays(data, limits)


def _kernels_on_arrays(data: bytes, limits: vio.ReaderLimits | None) -> None:
    """A stream of plain arrays: the filter kernels and the row gather on its (freshly read,
    still encoded) arrays, as a one-column table would see them in a scan."""
    import numpy as np

    from vortex_io._scan import _select
    from vortex_io.compute._evaluate import evaluate_mask as evaluate
    from vortex_io.compute._kernels import mask_true
    from vortex_io.encodings._struct import struct_array

    with vio.StreamReader(data, limits=limits) as r:
        for b in r:
            a = b.array
            wrapped = struct_array(dt.Struct(["v"], [a.dtype]), len(a), [a])
            for f in filters_for(wrapped.dtype):
                _check_arrow(_select(a, np.flatnonzero(mask_true(evaluate(f, wrapped)))))


def _read_arrow(data: bytes, limits: vio.ReaderLimits | None, string_view: bool,
                threads: int) -> tuple[str, Any]:
    try:
        with vio.StreamReader(data, limits=limits) as r:
            return "ok", r.read_arrow(string_view=string_view, threads=threads)
    except vio.VortexIPCError as e:
        return "err", e
    except Exception as e:  # compared below: the same on both sides is not a mismatch
        return "exc", e


def _scan_arrow(data: bytes, limits: vio.ReaderLimits | None, string_view: bool,
                threads: int, pick: int) -> tuple[str, Any]:
    """A scan of a struct stream (every column, or the columns after the first and one of
    ``filters_for``'s filters, by ``pick``), as ``_read_arrow`` reports it."""
    try:
        with vio.StreamReader(data, limits=limits) as r:
            d = r.dtype
    except vio.VortexIPCError as e:
        return "err", e
    filters = filters_for(d)
    columns, flt = None, None
    if filters and pick % 2:
        flt = filters[(pick >> 1) % len(filters)]
        assert isinstance(d, dt.Struct)
        columns = list(d.names[1:]) or None
    try:
        return "ok", vio.scan(data, columns=columns, filter=flt, limits=limits,
                              string_view=string_view, threads=threads).to_arrow()
    except vio.VortexIPCError as e:
        return "err", e
    except Exception as e:
        return "exc", e


def differential(data: bytes, *, limits: vio.ReaderLimits | None = FUZZ_LIMITS) -> str:
    """"" when the native core and the reference read ``data`` the same, else what differs.
    The output mode (strings as ``string`` or ``string_view``) and the native core's threads
    (1 or 2) are picked from the input's CRC, so a mutant always reads the same way. Without
    the native core (``VORTEX_IO_NATIVE=0``) there is nothing to compare: "". An exception
    other than a ``VortexIPCError`` on one side only is a difference; the same one on both
    sides is not (it comes from Python code both paths ran: the mutation tests' own checks
    are where such bugs are caught)."""
    import zlib

    from vortex_io import _native_glue as ng

    if not ng.enabled():
        return ""
    crc = zlib.crc32(data)
    sv, threads = bool(crc & 1), 1 + ((crc >> 1) & 1)
    how = f"string_view={sv}, threads={threads}"
    read = _read_arrow(data, limits, sv, threads)
    out = _compare(read, lambda: _read_arrow(data, limits, sv, 1), f"(read_arrow, {how})")
    if out:
        return out
    # and a scan (the adapters' path: lazily built fields, the native scan's own checks):
    # every column, or a filter and a projection, picked from the CRC as well. Both build
    # what a scan uses on first use, but the native core builds a used column's whole
    # subtree, and before pruning, where the reference builds some nodes later or never: on
    # a stream that does not read (``read``: an error both ways), the native scan may
    # raise where the reference's scan gives a table; never the other way round
    pick = crc >> 2
    return _compare(_scan_arrow(data, limits, sv, threads, pick),
                    lambda: _scan_arrow(data, limits, sv, 1, pick),
                    f"(scan{' with a filter' if pick % 2 else ''}, {how})",
                    stricter=read[0] == "err")


def _compare(nat: tuple[str, Any], reference: Callable[[], tuple[str, Any]], how: str,
             stricter: bool = False) -> str:
    """"" when the native outcome ``nat`` and the reference's are the same (``stricter``:
    or the native side raised a VortexIPCError where the reference gave a table), else
    what differs."""
    from tests.native_util import identical
    from vortex_io import _native_glue as ng

    with ng.use_native(False):
        ref = reference()
    if stricter and nat[0] == "err" and ref[0] == "ok":
        return ""
    if nat[0] != ref[0]:
        n = nat[1] if nat[0] != "ok" else "a table"
        r = ref[1] if ref[0] != "ok" else "a table"
        return f"native read {n!r}, the reference {r!r} {how}"
    if nat[0] != "ok":
        if type(nat[1]) is not type(ref[1]):
            return f"native raised {nat[1]!r}, the reference {ref[1]!r} {how}"
        # the same exception both ways (a non-VortexIPCError one is a bug of the Python code
        # both paths ran, e.g. a column handed back: reported, not this comparison's)
        return ""
    if not identical(nat[1], ref[1]):
        return f"native and reference tables differ {how}:\n{nat[1]}\n{ref[1]}"
    return ""


#: the public error classes: an input may end in success or in one of these, nothing else
PUBLIC_ERRORS = frozenset({vio.VortexIPCError, vio.MalformedStreamError,
                           vio.TruncatedStreamError, vio.IntegrityError, vio.UnsupportedError,
                           vio.LimitExceededError})


def outcome_of(e: BaseException | None, located: bool = False) -> str:
    """"ok" (None), a public error's class name, or "!" and the qualified name of anything
    else (a bug: a built-in, a private class); ``located``: a public error that names
    neither a message index nor an offset is "!unlocated " and its class name."""
    if e is None:
        return "ok"
    if type(e) in PUBLIC_ERRORS:
        if located and e.message_index is None and e.offset is None:  # type: ignore[attr-defined]
            return f"!unlocated {type(e).__name__}"
        return type(e).__name__
    return f"!{type(e).__module__}.{type(e).__qualname__}"


def _batches(data: bytes, limits: vio.ReaderLimits | None) -> None:
    # only to_arrow(): with the native core a batch whose array was never asked for is
    # decoded natively (exercise() builds the array first, which takes the Python route)
    for b in vio.StreamReader(data, limits=limits):
        b.to_arrow()


def _batches_lazy(data: bytes, limits: vio.ReaderLimits | None) -> None:
    with vio.StreamReader(data, limits=limits, lazy_fields=True) as r:
        for b in r:
            b.to_arrow(string_view=True)
            _ = b.array  # (the Python tree too, built after the native decode)


def _read_next(data: bytes, limits: vio.ReaderLimits | None) -> None:
    r = vio.StreamReader(data, limits=limits)
    while True:
        try:
            b = r.read_next_batch()
        except StopIteration:
            return
        pa.record_batch(b) if isinstance(r.dtype, dt.Struct) and not r.dtype.nullable \
            else b.to_arrow()


def _read_arrow_route(data: bytes, limits: vio.ReaderLimits | None) -> None:
    with vio.StreamReader(data, limits=limits) as r:
        r.read_arrow()


def _read_ipc(data: bytes, limits: vio.ReaderLimits | None) -> None:
    vio.read_ipc(data, limits=limits).to_arrow()


def _scan_batches(data: bytes, limits: vio.ReaderLimits | None) -> None:
    for _ in vio.scan(data, limits=limits, batch_size=7):
        pass


def _scan_projected(data: bytes, limits: vio.ReaderLimits | None) -> None:
    """A scan of the columns after the first with the first of ``filters_for``'s filters
    (a plain scan when the stream has neither)."""
    with vio.StreamReader(data, limits=limits) as r:
        d = r.dtype
    filters = filters_for(d)
    columns = list(d.names[1:]) or None if isinstance(d, dt.Struct) else None
    vio.scan(data, columns=columns, filter=filters[0] if filters else None,
             limits=limits).to_reader().read_all()


def _async(data: bytes, limits: vio.ReaderLimits | None) -> None:
    import asyncio

    async def run() -> None:
        s = asyncio.StreamReader()
        s.feed_data(data)
        s.feed_eof()
        async with vio.AsyncStreamReader(s, limits=limits) as r:
            async for b in r:
                b.to_arrow()

    asyncio.run(run())


#: the ways a user reads a stream, each read to its end (``route_outcomes``)
ROUTES: dict[str, Callable[[bytes, vio.ReaderLimits | None], None]] = {
    "batches": _batches, "batches_lazy": _batches_lazy, "read_next_batch": _read_next,
    "read_arrow": _read_arrow_route, "read_ipc": _read_ipc, "scan_batches": _scan_batches,
    "scan_projected": _scan_projected, "async": _async}


def route_outcomes(data: bytes, *, limits: vio.ReaderLimits | None = FUZZ_LIMITS,
                   routes: Any = None) -> dict[str, tuple[str, BaseException | None]]:
    """Each of ``ROUTES`` (or the names ``routes``) reading ``data``: (``outcome_of``
    its exception, the exception). Errors must say where they are (``read_ipc`` excepted:
    the array it returns is decoded later, when nothing knows its messages)."""
    out: dict[str, tuple[str, BaseException | None]] = {}
    for name in routes or ROUTES:
        try:
            ROUTES[name](data, limits)
            out[name] = ("ok", None)
        except Exception as e:
            out[name] = (outcome_of(e, located=name != "read_ipc"), e)
    return out


def routes_differ(native: dict[str, str], reference: dict[str, str]) -> str:
    """"" when every route's outcome (``route_outcomes``' names) is the same on the native
    core and the reference, else which differ. As in ``differential``, a scan of a stream
    that does not read batch by batch may raise natively where the reference's lazier scan
    gives a table, never the other way round."""
    failed = native.get("batches", "ok") != "ok"
    return "; ".join(
        f"{k}: native {o}, reference {reference[k]}" for k, o in native.items()
        if k in reference and o != reference[k]
        and not (k.startswith("scan") and failed and reference[k] == "ok"))


def consume(data: bytes, *, limits: vio.ReaderLimits | None = FUZZ_LIMITS,
            scans: bool = True) -> str:
    """``exercise(data)``: "ok" or the VortexIPCError class name (anything else raises)."""
    try:
        exercise(data, limits=limits, scans=scans)
    except vio.VortexIPCError as e:
        return type(e).__name__
    return "ok"
