"""``vortex.zstd``: the valid values of a primitive or string array in zstd frames.

Wire layout (vortex-data 0.93, from the Rust sources of ``vortex-zstd``):

* metadata ``ZstdMetadata { 1: dictionary_size u32 (0: none), 2: repeated
  ZstdFrameMetadata { 1: uncompressed_size u64, 2: n_values u64 } }``;
* buffers: the dictionary (when ``dictionary_size > 0``), then one buffer per frame;
* children: optional validity (n rows).

Only the valid (non-null) values are stored, in row order. Primitive frames hold the raw
little-endian values; string frames hold each value as ``[u32 LE length][bytes]``. A frame
is decompressed with the shared dictionary when there is one.

Decoding needs the optional ``zstandard`` package (``pip install vortex_io[zstd]``); without
it, decoding raises ``UnsupportedError``. Length prefixes are located without a per-value
loop (see ``_frame_starts``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding
from .._errors import MalformedStreamError, UnsupportedError
from .._proto import LEN, ProtoWriter, parse
from ._common import validity_mask, validity_spec
from ._primitive import primitive_array, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, register_scheme, zstd_cost

__all__ = ["ZstdEncoding", "zstd_encode"]

_MIN_FRAMES_FOR_DICTIONARY = 8


class ZstdFrame(NamedTuple):
    uncompressed_size: int
    n_values: int


class ZstdMeta(NamedTuple):
    dictionary_size: int
    frames: tuple[ZstdFrame, ...]


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError:  # pragma: no cover - depends on the environment
        raise UnsupportedError("vortex.zstd needs the zstandard package "
                               "(pip install vortex_io[zstd])") from None
    return zstandard


def _frame_starts(data: np.ndarray, count: int, what: str) -> np.ndarray:
    """Start offsets of the first ``count`` length-prefixed values of ``data``, plus the
    end of the last one (``count + 1`` offsets), without a per-value loop.

    Every byte position p gets its jump ``p + 4 + u32(p)`` (past the end: a sink). Only
    positions some jump lands on can follow a value, so the domain shrinks to
    ``{0} + jumps(domain)`` a few times (in text almost every misaligned read is a huge
    length, so this leaves about the true starts), and the chain from 0 is followed by
    pointer doubling over what is left.
    """
    t = len(data)
    if count == 0:
        return np.zeros(1, dtype=np.int64)
    if t < 4:
        raise MalformedStreamError(f"{what}: {t} bytes cannot hold {count} length-prefixed values")
    m = t - 3
    lens = data[:m].astype(np.int64)
    for k in (1, 2, 3):
        lens |= data[k : k + m].astype(np.int64) << (8 * k)
    sink = t + 1  # jumps past the end go here
    jump = np.empty(t + 2, dtype=np.int64)
    np.add(lens, np.arange(4, t + 1, dtype=np.int64), out=jump[:m])
    jump[m:t] = sink
    jump[t] = t
    jump[sink] = sink
    np.minimum(jump, sink, out=jump)
    mark = np.zeros(t + 2, dtype=np.bool_)
    mark[jump] = True
    mark[0] = True
    dom = np.flatnonzero(mark)
    for _ in range(8):
        mark[dom] = False
        mark[jump[dom]] = True
        mark[0] = True
        nxt = np.flatnonzero(mark)
        if len(nxt) == len(dom):
            break
        dom = nxt
    # dom is closed under jump: follow the chain from 0 by doubling over its indices
    jd = np.searchsorted(dom, jump[dom])
    on = np.zeros(len(dom), dtype=np.bool_)
    on[0] = True
    reach = 1  # indices reached in fewer than `reach` steps are marked
    while reach <= count:
        on[jd[np.flatnonzero(on)]] = True
        reach *= 2
        if reach <= count:
            jd = jd[jd]
    pos = dom[np.flatnonzero(on)][: count + 1]
    if len(pos) < count + 1 or pos[-1] > t:
        raise MalformedStreamError(
            f"{what}: the length prefixes do not delimit {count} values in {t} bytes")
    return pos


class ZstdEncoding(Encoding):
    id = "vortex.zstd"

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, (dt.Primitive, dt.Utf8, dt.Binary)):
            raise MalformedStreamError(f"vortex.zstd cannot hold {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype, length) -> ZstdMeta:
        f = parse(raw, "ZstdMetadata")
        frames = []
        for wt, val in f._f.get(2, []):  # repeated message field
            if wt != LEN:
                raise MalformedStreamError("ZstdMetadata: frame field is not a message")
            fm = parse(val, "ZstdFrameMetadata")
            frames.append(ZstdFrame(fm.get_uint(1, 0), fm.get_uint(2, 0)))
        return ZstdMeta(f.get_uint(1, 0, bits=32), tuple(frames))

    def nbuffers(self, dtype, meta: ZstdMeta) -> tuple[int, int]:
        k = (meta.dictionary_size > 0) + len(meta.frames)
        return (k, k)

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        return validity_spec(self.id, dtype, length, parts.nchildren, 0)

    def validate(self, arr: Array, limits) -> None:
        m = arr.meta
        if m.dictionary_size and arr.buffers[0].nbytes != m.dictionary_size:
            raise MalformedStreamError(
                f"vortex.zstd dictionary is {arr.buffers[0].nbytes} bytes, metadata says "
                f"{m.dictionary_size}")
        check_decoded_size(sum(f.uncompressed_size for f in m.frames),
                           f"vortex.zstd of {len(arr)} rows", limits)

    def _decompress(self, arr: Array) -> np.ndarray:
        zstd = _zstandard()
        m = arr.meta
        frames = arr.buffers[1:] if m.dictionary_size else arr.buffers
        total = sum(f.uncompressed_size for f in m.frames)
        check_decoded_size(total, "vortex.zstd", arr.limits)
        try:
            if m.dictionary_size:
                d = zstd.ZstdCompressionDict(arr.buffers[0].tobytes())
                dctx = zstd.ZstdDecompressor(dict_data=d)
            else:
                dctx = zstd.ZstdDecompressor()
            out = np.empty(total, dtype=np.uint8)
            pos = 0
            for buf, fm in zip(frames, m.frames):  # one call per frame, not per value
                raw = dctx.decompress(buf.tobytes(), max_output_size=fm.uncompressed_size)
                if len(raw) != fm.uncompressed_size:
                    raise MalformedStreamError(
                        f"vortex.zstd frame decompressed to {len(raw)} bytes, metadata says "
                        f"{fm.uncompressed_size}")
                out[pos : pos + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
                pos += len(raw)
        except zstd.ZstdError as e:
            raise MalformedStreamError(f"vortex.zstd: corrupt frame ({e})") from None
        return out

    def canonicalize(self, arr: Array) -> Array:
        from ._varbin import varbin_array

        n = len(arr)
        v = arr.children[0] if arr.children else None
        mask = validity_mask(v, n)
        nvalid = n if mask is None else int(mask.sum())
        data = self._decompress(arr)
        if isinstance(arr.dtype, dt.Primitive):
            p = arr.dtype.ptype
            need = nvalid * p.byte_width
            if data.nbytes < need:
                raise MalformedStreamError(
                    f"vortex.zstd holds {data.nbytes} bytes, {nvalid} x {p.short} needs {need}")
            vals = data[:need].view(p.np_dtype)
            if mask is not None:
                full = np.zeros(n, dtype=p.np_dtype)
                full[mask] = vals
                vals = full
            return primitive_array(vals, v, nullable=arr.dtype.nullable, ptype=p)
        starts = _frame_starts(data, nvalid, self.id)
        lens = np.diff(starts) - 4
        keep = np.ones(int(starts[-1]), dtype=np.bool_)
        for k in range(4):
            keep[starts[:-1] + k] = False
        values = data[: int(starts[-1])][keep]
        if mask is not None:
            full = np.zeros(n, dtype=np.int64)
            full[mask] = lens
            lens = full
        odt = np.int32 if values.nbytes < 2**31 else np.int64
        offs = np.zeros(n + 1, dtype=odt)
        np.cumsum(lens, out=offs[1:])
        return varbin_array(arr.dtype, primitive_array(offs), values, v)

    def describe(self, arr: Array) -> str:
        m = arr.meta
        return f"frames={len(m.frames)}" + (f", dictionary={m.dictionary_size} B" if m.dictionary_size else "")

    def child_names(self, arr: Array) -> list[str]:
        return ["validity"]


ZSTD = register_encoding(ZstdEncoding())


def zstd_encode(array: Array, *, level: int = 3, values_per_frame: int = 0,
                use_dictionary: bool = True) -> Array:
    """Encode a primitive, utf8 or binary array as ``vortex.zstd`` (decodable by
    vortex-data 0.93). Needs the ``zstandard`` package.

    ``values_per_frame``: valid values per frame (0: one frame). With
    ``use_dictionary`` and at least 8 frames, a dictionary is trained on the frames (as the
    reference does) and shared by all of them.
    """
    from ._fsst import string_parts, validity_from_mask

    zstd = _zstandard()
    n = len(array)
    if isinstance(array.dtype, dt.Primitive):
        vals, valid = primitive_values(array.canonical())
        if valid is not None:
            vals = vals[valid]
        w = array.dtype.ptype.byte_width
        raw = np.ascontiguousarray(vals).view(np.uint8)
        nv = len(vals)
        per = values_per_frame or max(nv, 1)
        cuts = np.arange(0, nv, per, dtype=np.int64) * w
    elif isinstance(array.dtype, (dt.Utf8, dt.Binary)):
        data, offsets, valid = string_parts(array)
        lens = np.diff(offsets)
        if valid is not None:
            lens = lens[valid]
        nv = len(lens)
        ends = np.cumsum(lens + 4)
        starts = ends - lens - 4
        raw = np.empty(int(ends[-1]) if nv else 0, dtype=np.uint8)
        pref = lens.astype("<u4").view(np.uint8).reshape(nv, 4)
        body = np.ones(len(raw), dtype=np.bool_)
        for k in range(4):
            raw[starts + k] = pref[:, k]
            body[starts + k] = False
        raw[body] = data
        per = values_per_frame or max(nv, 1)
        cuts = starts[::per]
    else:
        raise TypeError(f"vortex.zstd holds primitive, utf8 or binary arrays, not {array.dtype!r}")
    bounds = np.append(cuts, len(raw)).astype(np.int64)
    pieces = [raw[bounds[i] : bounds[i + 1]].tobytes() for i in range(len(cuts))]
    counts = [min(per, nv - i * per) for i in range(len(cuts))]
    dictionary = b""
    if use_dictionary and len(pieces) >= _MIN_FRAMES_FOR_DICTIONARY:
        size = min(max(len(raw) // 100, 256), 100 * 1024)
        try:
            dictionary = zstd.train_dictionary(size, pieces).as_bytes()
        except zstd.ZstdError:
            dictionary = b""  # too little data to train on: no dictionary
    cctx = (zstd.ZstdCompressor(level=level, dict_data=zstd.ZstdCompressionDict(dictionary))
            if dictionary else zstd.ZstdCompressor(level=level))
    frames = [np.frombuffer(cctx.compress(p), dtype=np.uint8) for p in pieces]
    mw = ProtoWriter().varint(1, len(dictionary))
    for p, c in zip(pieces, counts):
        mw.message(2, ProtoWriter().varint(1, len(p)).varint(2, c).finish())
    bufs = ([np.frombuffer(dictionary, dtype=np.uint8)] if dictionary else []) + frames
    v = validity_from_mask(valid, n)
    a = Array(ZSTD, array.dtype, n, metadata=mw.finish(), buffers=bufs,
              children=[v] if v is not None else [])
    return a


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_zstd(a: Array, params: Any = None) -> Array | None:
    return zstd_encode(a, use_dictionary=False)


def _estimate_zstd(f: Facts, comp: Any) -> Trial | None:
    """Compact mode: zstd over narrow integers (dictionary codes, small parts) or strings."""
    if not f.compact or f.n < 4096:
        return None
    if f.kind == "int":
        if f.key.dtype.itemsize > 2:
            return None  # wide values: FoR / bit-packing first, which narrows nothing
        size = zstd_cost(f.vkey)
    elif f.kind == "str":
        enc = f.string_dict
        if enc is not None and len(enc.dictionary) * 2 <= f.n:
            return None  # repeated values: a dictionary with zstd codes, which decodes faster
        # length-prefixed values: compress them for real (fast), the size is exact
        r = _encode_zstd(f.a)
        return None if r is None else Trial(r.nbytes + f.validity_bytes + 2 * NODE_COST, lambda: r)
    else:
        return None
    return Trial(size + f.validity_bytes + 2 * NODE_COST, lambda: _encode_zstd(f.a))


register_scheme(Scheme("vortex.zstd", frozenset({"int", "str"}), _estimate_zstd, _encode_zstd,
                       priority=170))
