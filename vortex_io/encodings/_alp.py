"""``vortex.alp``: Adaptive Lossless floating-Point, floats stored as scaled integers.

Wire layout (0.93): no buffers; ``ALPMetadata`` (1 exp_e, 2 exp_f, 3 patches opt);
children ``encoded`` (i32 for f32 / i64 for f64, with the node's nullability: validity
lives here), then, with patches, ``indices``, ``values`` (the node's dtype) and optional
``chunk_offsets``.

Decoding is bit-exact with the reference: ``float(enc) * F10[f] * IF10[e]``, evaluated
left to right in the target float type, where ``F10[i]`` is ``10^i`` and ``IF10[i]`` the
float literal ``1e-i`` of that type (correctly rounded, as Rust parses it); then patches
overwrite the exceptions. Encoding picks (e, f) on a sample, as ALP does, and patches
every value that does not round-trip bit for bit (NaN, inf, -0.0, ...).

>>> import numpy as np
>>> from vortex_io.encodings._primitive import primitive_array
>>> a = alp_encode(primitive_array(np.array([1.25, 3.5, -0.0, 10.75])))
>>> a.encoding, a.meta.e - a.meta.f, a.meta.patches.len
('vortex.alp', 2, 1)
>>> a.to_arrow().to_pylist()
[1.25, 3.5, -0.0, 10.75]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding
from .._errors import MalformedStreamError, UnsupportedError
from .._proto import ProtoWriter, parse
from ..compute._kernels import compare_storage, is_in_storage, take, take_values
from ..compute._numeric import OPS, broadcast, decoded, isin_values, np_literal, validity
from ._bool import bool_array
from ._common import array_ptype, as_array, is_primitive_of, primitive, validity_mask
from ._patches import PatchesMeta, apply_patches, make_patches, patch_hits
from ._primitive import primitive_array, primitive_raw, primitive_values
from ._scheme import (
    NODE_COST,
    Facts,
    Scheme,
    Trial,
    child_int_cost,
    index_width,
    register_scheme,
)
from ._sparse import slice_patches, strict_patch_positions

__all__ = ["ALPMeta", "alp_array", "alp_encode", "alp_decode_values", "F10", "IF10", "MAX_EXPONENT"]


def _nearest_f32(x: Fraction) -> np.float32:
    """The float32 nearest to ``x`` (ties to even), as a Rust f32 literal is parsed."""
    c = np.float32(float(x))
    best = c
    for cand in (np.nextafter(c, np.float32(-np.inf)), np.nextafter(c, np.float32(np.inf))):
        db, dc = abs(Fraction(float(best)) - x), abs(Fraction(float(cand)) - x)
        if dc < db or (dc == db and int(cand.view(np.uint32)) % 2 == 0):
            best = cand
    return np.float32(best)


F10: dict[dt.PType, list[np.floating[Any]]] = {
    dt.PType.F64: [np.float64(float(10**i)) for i in range(24)],
    dt.PType.F32: [np.float32(10**i) for i in range(11)],
}
IF10: dict[dt.PType, list[np.floating[Any]]] = {
    dt.PType.F64: [np.float64(float(f"1e-{i}")) for i in range(24)],
    dt.PType.F32: [_nearest_f32(Fraction(1, 10**i)) for i in range(11)],
}
#: largest exponent vortex-data accepts (e and f), per float type
MAX_EXPONENT = {dt.PType.F64: 18, dt.PType.F32: 10}
_INT = {dt.PType.F64: dt.PType.I64, dt.PType.F32: dt.PType.I32}
_FLOAT_OF_INT = {i: f for f, i in _INT.items()}
_UINT = {dt.PType.F64: np.uint64, dt.PType.F32: np.uint32}
_SWEET = {dt.PType.F64: np.float64(2.0**52 + 2.0**51), dt.PType.F32: np.float32(2.0**23 + 2.0**22)}


@dataclass(frozen=True)
class ALPMeta:
    """``ALPMetadata``: 1 exp_e u32; 2 exp_f u32; 3 patches PatchesMetadata opt."""

    e: int
    f: int
    patches: PatchesMeta | None = None

    @classmethod
    def decode(cls, raw: bytes) -> ALPMeta:
        fl = parse(raw, "ALPMetadata")
        pm = fl.get_message(3, "ALPMetadata.patches")
        return cls(fl.get_uint(1, 0, bits=32), fl.get_uint(2, 0, bits=32),
                   None if pm is None else PatchesMeta.from_fields(pm, "vortex.alp"))

    def encode(self) -> bytes:
        w = ProtoWriter().varint(1, self.e).varint(2, self.f)
        if self.patches is not None:
            w.message(3, self.patches.encode())
        return w.finish()


def alp_decode_values(enc: np.ndarray, ptype: dt.PType, e: int, f: int) -> np.ndarray:
    """``float(enc) * F10[f] * IF10[e]`` in the float type (a new, writable array)."""
    ft = ptype.np_dtype
    out = _memory.empty(len(enc), ft)
    # the first multiply converts as it goes (the loop runs in the float type: the same
    # rounding as a conversion followed by a multiply); x * 1.0 is x, so f = 0 copies
    if f:
        np.multiply(enc, F10[ptype][f], out=out, dtype=ft)
    else:
        np.copyto(out, enc, casting="unsafe")
    if e:
        np.multiply(out, IF10[ptype][e], out=out)
    return out


class FloatPartsEncoding(Encoding):
    """What ``vortex.alp`` and ``vortex.alprd`` share: f32/f64 nodes without buffers whose
    children are the encoded parts, then the optional patches (``meta.patches``)."""

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Primitive) or dtype.ptype not in (dt.PType.F32, dt.PType.F64):
            raise MalformedStreamError(f"{self.id} holds f32 or f64, not {dtype!r}")

    def decode_meta(self, raw: bytes, dtype: dt.Primitive) -> Any:
        """The metadata, its own fields checked (``parse_metadata`` checks the patches)."""
        raise NotImplementedError

    def part_specs(self, dtype: dt.Primitive, length: int, meta: Any
                   ) -> tuple[list[tuple[dt.DType, int]], dt.DType]:
        """((dtype, length) of each part, the dtype of the patch values)."""
        raise NotImplementedError

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> Any:
        m = self.decode_meta(raw, primitive(dtype, self.id))
        if m.patches is not None:
            if not m.patches.indices_ptype.is_unsigned:
                raise MalformedStreamError(f"{self.id}: patch indices must be unsigned")
            if m.patches.len > length:
                raise MalformedStreamError(f"{self.id}: {m.patches.len} patches for {length} rows")
        return m

    def child_specs(self, dtype: dt.DType, length: int, meta: Any, parts: ArrayParts
                    ) -> list[tuple[dt.DType, int]]:
        specs, patch_dtype = self.part_specs(primitive(dtype, self.id), length, meta)
        if meta.patches is not None:
            specs += meta.patches.child_specs(patch_dtype)
        if parts.nchildren != len(specs):
            raise MalformedStreamError(f"{self.id} has {parts.nchildren} children, expected {len(specs)}")
        return specs

    def validate(self, arr: Array, limits) -> None:
        n = len(arr)
        check_decoded_size(n * array_ptype(arr).byte_width, f"{self.id} of {n} rows", limits)

    def decoded_part(self, arr: Array, what: str, ok: Callable[[dt.PType], bool]) -> Array:
        """The first child decoded: a ``vortex.primitive`` whose type passes ``ok``, else
        ``MalformedStreamError`` (``what``: the part, as the message names it)."""
        c = arr.children[0].canonical()
        d = c.dtype
        if c.encoding != "vortex.primitive" or not isinstance(d, dt.Primitive) or not ok(d.ptype):
            raise MalformedStreamError(f"{self.id} {what} {d!r}")
        return c


class ALPEncoding(FloatPartsEncoding):
    id = "vortex.alp"

    def decode_meta(self, raw: bytes, dtype: dt.Primitive) -> ALPMeta:
        m = ALPMeta.decode(raw)
        mx = MAX_EXPONENT[dtype.ptype]
        if m.e > mx or m.f > mx:
            raise MalformedStreamError(
                f"vortex.alp exponents e={m.e}, f={m.f} out of range for {dtype!r} (at most {mx})")
        return m

    def part_specs(self, dtype: dt.Primitive, length: int, meta: ALPMeta
                   ) -> tuple[list[tuple[dt.DType, int]], dt.DType]:
        return [(dt.Primitive(_INT[dtype.ptype], dtype.nullable), length)], dtype

    def canonicalize(self, arr: Array) -> Array:
        m: ALPMeta = arr.meta
        n = len(arr)
        p = array_ptype(arr)
        enc_c = self.decoded_part(arr, "encoded child decodes to", lambda ip: ip == _INT[p])
        vchild = enc_c.children[0] if enc_c.children else None
        out = alp_decode_values(primitive_raw(enc_c), p, m.e, m.f)
        if m.patches is not None and m.patches.len:
            strict_patch_positions(m.patches, arr.children[1], n, "vortex.alp")
            out, pmask = apply_patches(out, None, m.patches, arr.children[1], arr.children[2], n)
            if pmask is not None:  # patch values carry nulls: a row is valid if both say so
                base = validity_mask(vchild, n)
                vchild = bool_array(pmask if base is None else base & pmask)
        return primitive_array(out, vchild, nullable=arr.dtype.nullable, ptype=p)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        m: ALPMeta = arr.meta
        enc = arr.children[0].slice(start, stop)
        patches = None
        if m.patches is not None:
            sl = slice_patches(m.patches, arr.children[1:], start, stop)
            if sl is not None:
                patches = sl
        return alp_array(enc, m.e, m.f, patches, arr.dtype)

    # -- compute kernels: compare in the encoded integer domain --------------------------
    def _patch_rows(self, arr: Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """(positions, values, validity or None) of the patches, or None without any."""

        m: ALPMeta = arr.meta
        if m.patches is None or not m.patches.len:
            return None
        pos = strict_patch_positions(m.patches, arr.children[1], len(arr), "vortex.alp")
        pv = decoded(arr.children[2])
        if not is_primitive_of(pv, array_ptype(arr)):
            raise MalformedStreamError(f"vortex.alp patch values decode to {pv.dtype!r}")
        return pos, primitive_values(pv)[0], validity(pv)

    def validity(self, arr: Array) -> Any:
        base = validity(arr.children[0])
        pr = self._patch_rows(arr)
        if pr is None or pr[2] is None:
            return base
        out = np.ones(len(arr), dtype=np.bool_) if base is None else base.copy()
        out[pr[0]] &= pr[2]
        return out

    def _thresholds(self, arr: Array, lit: Any) -> tuple[int, int] | None:
        """(t1, t2): an encoded integer k decodes below ``lit`` iff ``k < t1``, and to at
        most ``lit`` iff ``k < t2`` (decoding is monotonic); None when the search window
        around the estimate does not settle it (the caller then falls back)."""
        m: ALPMeta = arr.meta
        p = array_ptype(arr)
        ip = _INT[p]
        est = float(lit) * 10.0 ** (m.e - m.f)
        lim = 2.0 ** (8 * ip.byte_width - 2)
        if not -lim < est < lim:
            return None
        k = np.arange(round(est) - 4, round(est) + 5, dtype=ip.np_dtype)
        d = alp_decode_values(k, p, m.e, m.f)
        ge, gt = d >= lit, d > lit
        if ge[0] or gt[0] or not ge[-1] or not gt[-1]:
            return None
        return int(k[int(np.argmax(ge))]), int(k[int(np.argmax(gt))])

    def _encoded_compare(self, arr: Array, lit: Any, op: str) -> Any:
        """The Mask of ``op`` on the non-patched rows, from the encoded child."""

        child = arr.children[0]
        x = float(lit)
        if x != x:  # decoded values are finite: only != holds
            return broadcast(len(arr), op == "neq", validity(child))
        if x in (float("inf"), float("-inf")):
            below = x > 0  # every value is below +inf
            ans = {"eq": False, "neq": True, "lt": below, "lte": below, "gt": not below,
                   "gte": not below}[op]
            return broadcast(len(arr), ans, validity(child))
        th = self._thresholds(arr, lit)
        if th is None:
            return None
        t1, t2 = th
        if op in ("lt", "gte"):
            return compare_storage(child, t1, op if op == "lt" else "gte")
        if op in ("lte", "gt"):
            return compare_storage(child, t2, "lt" if op == "lte" else "gte")
        if t2 == t1:
            eq = broadcast(len(arr), False, validity(child))
        elif t2 == t1 + 1:
            eq = compare_storage(child, t1, "eq")
        else:
            a, va = compare_storage(child, t1, "gte")
            b, _ = compare_storage(child, t2, "lt")
            eq = a & b, va
        if op == "eq":
            return eq
        v, valid = eq
        return (~v if valid is None else ~v & valid), valid

    def _with_patches(self, arr: Array, res: Any, patch_fn: Any) -> Any:
        vals, valid = res
        pr = self._patch_rows(arr)
        if pr is None:
            return vals, valid
        pos, pvals, pvalid = pr
        if not vals.flags.writeable:
            vals = vals.copy()
        pres = patch_fn(pvals)
        if pvalid is not None:
            valid = np.ones(len(arr), dtype=np.bool_) if valid is None else valid.copy()
            valid[pos] &= pvalid
        vals[pos] = pres if valid is None else pres & valid[pos]
        return vals, valid

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        lit = np_literal(array_ptype(arr), value)
        if lit is None:
            return NotImplemented
        res = self._encoded_compare(arr, lit, op)
        if res is None:
            return NotImplemented
        return self._with_patches(arr, res, lambda pv: OPS[op](pv, lit))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        """Exactly encodable literals become encoded integers (matched bit for bit, as
        Arrow's is_in does); the patches are matched on their own."""

        p = array_ptype(arr)
        m: ALPMeta = arr.meta
        ut = _UINT[p]
        ints: list[int] = []
        for v in values:
            lit = np_literal(p, v)
            if lit is None:
                return NotImplemented
            if lit != lit or lit in (np.inf, -np.inf):
                continue  # decoded values are finite: only patches can match
            th = self._thresholds(arr, lit)
            if th is None or th[1] - th[0] > 16:
                return NotImplemented
            ks = np.arange(th[0], th[1], dtype=_INT[p].np_dtype)
            bits = alp_decode_values(ks, p, m.e, m.f).view(ut)
            ints.extend(int(k) for k in ks[bits == np.array([lit]).view(ut)[0]])
        res = is_in_storage(arr.children[0], ints)
        return self._with_patches(arr, res, lambda pv: isin_values(pv, p, values))

    def take(self, arr: Array, indices: Any) -> Any:
        """Takes the encoded child and the patches that fall on the taken rows."""

        m: ALPMeta = arr.meta
        idx = np.asarray(indices, dtype=np.int64)
        enc = take(arr.children[0], idx)
        patches = None
        hits = self._patch_hits(arr, idx)
        if hits is not None:
            out_pos, sel = hits
            raw, kids = make_patches(out_pos, take(arr.children[2], sel))
            patches = (PatchesMeta.decode(raw, "vortex.alp"), kids)
        return alp_array(enc, m.e, m.f, patches, arr.dtype)

    def _patch_hits(self, arr: Array, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(positions in ``idx`` that are patched, the patch each takes), or None."""
        m: ALPMeta = arr.meta
        if m.patches is None or not m.patches.len or not len(idx):
            return None
        pos = strict_patch_positions(m.patches, arr.children[1], len(arr), "vortex.alp")
        out_pos, sel = patch_hits(pos, idx)
        return (out_pos, sel) if len(out_pos) else None

    def take_values(self, arr: Array, indices: np.ndarray) -> Any:
        m: ALPMeta = arr.meta
        p = array_ptype(arr)
        idx = np.asarray(indices, dtype=np.int64)
        enc, valid = take_values(arr.children[0], idx)
        if enc.dtype != _INT[p].np_dtype:
            raise MalformedStreamError(f"vortex.alp encoded child decodes to {enc.dtype}")
        out = alp_decode_values(enc, p, m.e, m.f)
        hits = self._patch_hits(arr, idx)
        if hits is not None:
            out_pos, sel = hits
            pv, pvalid = take_values(arr.children[2], sel)
            if not out.flags.writeable:
                out = out.copy()
            out[out_pos] = pv.astype(out.dtype, copy=False)
            if pvalid is not None:  # a row is valid if both the encoded value and the patch say so
                valid = (np.ones(len(idx), np.bool_) if valid is None else valid.copy())
                valid[out_pos] &= pvalid
        return out, valid

    def describe(self, arr: Array) -> str:
        m: ALPMeta = arr.meta
        return f"e={m.e}, f={m.f}" + (f", patches={m.patches.len}" if m.patches else "")

    def child_names(self, arr: Array) -> list[str]:
        return ["encoded", "patch_indices", "patch_values", "patch_chunk_offsets"]


ALP = register_encoding(ALPEncoding())


def float_node(part: Array, floats: dict[dt.PType, dt.PType], what: str, nullable: bool,
               dtype: dt.DType | None, patches: tuple[PatchesMeta, list[Array]] | None
               ) -> tuple[dt.DType, PatchesMeta | None, list[Array]]:
    """(dtype, patches meta, patch children) of a ``FloatPartsEncoding`` node: ``dtype``,
    else the float type ``floats`` maps ``part``'s type to, with ``nullable`` (``TypeError``
    saying ``what`` when it maps none)."""
    d = part.dtype
    fp = floats.get(d.ptype) if isinstance(d, dt.Primitive) else None
    if fp is None:
        raise TypeError(f"{what}, not {d!r}")
    pm, kids = (None, []) if patches is None else (patches[0], list(patches[1]))
    return (dtype if dtype is not None else dt.Primitive(fp, nullable)), pm, kids


def alp_array(encoded: Array, e: int, f: int,
              patches: tuple[PatchesMeta, list[Array]] | None = None,
              dtype: dt.DType | None = None) -> Array:
    """A ``vortex.alp`` array over i32/i64 ``encoded`` with optional (meta, [indices, values])."""
    d, pm, kids = float_node(encoded, _FLOAT_OF_INT, "ALP encoded values must be i32 or i64",
                             encoded.dtype.nullable, dtype, patches)
    meta = ALPMeta(e, f, pm)
    a = Array(ALP, d, len(encoded), metadata=meta.encode(), children=[encoded, *kids], meta=meta)
    return a


# -- encoding -----------------------------------------------------------------------------


def _as_int(x: np.ndarray, ip: dt.PType) -> np.ndarray:
    """Rust's saturating float -> int ``as`` cast (NaN -> 0), vectorized."""
    info = np.iinfo(ip.np_dtype)
    hi = x.dtype.type(2.0 ** (8 * ip.byte_width - 1))
    lo = -hi
    with np.errstate(invalid="ignore"):
        inrange = (x >= lo) & (x < hi)
        out = np.where(inrange, x, 0).astype(ip.np_dtype)
        out[x >= hi] = info.max
        out[x < lo] = info.min
    return out


def _encode_with(v: np.ndarray, p: dt.PType, e: int | np.ndarray, f: int | np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(encoded ints, round-trips bit-exactly) for exponents (broadcastable arrays ok)."""
    f10 = np.asarray(F10[p], dtype=p.np_dtype)
    if10 = np.asarray(IF10[p], dtype=p.np_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        x = v * f10[e] * if10[f]
        x = (x + _SWEET[p]) - _SWEET[p]
    enc = _as_int(x, _INT[p])
    with np.errstate(over="ignore", invalid="ignore"):
        dec = enc.astype(p.np_dtype) * f10[f] * if10[e]
    ok = dec.view(_UINT[p]) == np.broadcast_to(v, dec.shape).view(_UINT[p])
    return enc, ok


def find_exponents(sample: np.ndarray, p: dt.PType) -> tuple[int, int]:
    """The (e, f) minimizing the estimated encoded size of ``sample`` (as ALP does: e from
    high to low, f below e; ties go to the smaller e - f)."""
    mx = MAX_EXPONENT[p]
    pairs = [(e, f) for e in range(mx - 1, -1, -1) for f in range(e)]
    if len(sample) == 0 or not pairs:
        return 0, 0
    es = np.array([e for e, _ in pairs])[:, None]
    fs = np.array([f for _, f in pairs])[:, None]
    enc, ok = _encode_with(sample[None, :], p, es, fs)
    nok = ok.sum(axis=1)
    npatch = len(sample) - nok
    ii = np.iinfo(enc.dtype)
    use = np.where((nok == 0)[:, None], True, ok)
    mn = np.where(use, enc, ii.max).min(axis=1)
    mxv = np.where(use, enc, ii.min).max(axis=1)
    rng = mxv.astype(np.uint64) - mn.astype(np.uint64)
    with np.errstate(divide="ignore"):
        bits = np.where(rng == 0, 0, np.floor(np.log2(np.maximum(rng, 1).astype(np.float64))) + 1)
    size = (len(sample) * bits.astype(np.int64) + 7) // 8 + npatch * (p.byte_width + 2)
    best, best_size = pairs[0], None
    for k, (e, f) in enumerate(pairs):
        s = int(size[k])
        if best_size is None or s < best_size or (s == best_size and e - f < best[0] - best[1]):
            best, best_size = (e, f), s
    return best


def _sample(v: np.ndarray, k: int = 1024) -> np.ndarray:
    if len(v) <= k:
        return v
    return v[:: len(v) // k][:k]


def alp_encode(array: Any, exponents: tuple[int, int] | None = None) -> Array:
    """ALP-encode an f32/f64 array (``vortex_io.Array`` or Arrow). Exceptions (values that
    do not round-trip bit-exactly) become patches; their slots, and null slots, hold the
    first encodable value. The result always decodes to the input bit for bit."""

    arr = as_array(array)
    d = arr.dtype
    if not isinstance(d, dt.Primitive) or d.ptype not in (dt.PType.F32, dt.PType.F64):
        raise UnsupportedError(f"ALP encodes f32 and f64 arrays, not {d!r}")
    p = d.ptype
    c = arr.canonical()
    v, valid = primitive_values(c)
    vchild = c.children[0] if c.children else None
    if valid is not None and valid.all():
        valid = None
    vv = v if valid is None else v[valid]
    e, f = exponents if exponents is not None else find_exponents(_sample(vv), p)
    enc, ok = _encode_with(v, p, e, f)
    bad = ~ok if valid is None else (~ok & valid)
    good = ok if valid is None else (ok & valid)
    pos = np.flatnonzero(bad)
    fill = enc[int(np.argmax(good))] if good.any() else enc.dtype.type(0)
    if valid is None:
        if len(pos):
            enc[pos] = fill
    else:
        enc[~good] = fill
    encoded = primitive_array(enc, vchild, nullable=d.nullable, ptype=_INT[p])
    patches = None
    if len(pos):
        meta_raw, kids = make_patches(pos, primitive_array(v[pos], nullable=d.nullable, ptype=p))
        patches = (PatchesMeta.decode(meta_raw, "vortex.alp"), kids)
    return alp_array(encoded, e, f, patches, d)


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_alp(a: Array, params: Any = None) -> Array | None:
    if array_ptype(a) == dt.PType.F16:
        return None
    return alp_encode(a, params)


def sample_trial(f: Facts, encode: Callable[[Array, Any], Array | None],
                 size: Callable[[Facts, Array], float],
                 params: Callable[[Any], Any] | None = None) -> Trial | None:
    """A float scheme's estimate: ``encode`` (a ``Scheme.encode``) run on the float sample
    of ``f`` and priced by ``size(f, encoded sample)`` (bytes for the whole array); the
    trial encodes the whole array with ``params(the sample's metadata)``, if given."""
    s = f.float_sample
    if s is None:
        return None
    r = encode(s, None)
    if r is None:
        return None
    p = None if params is None else params(r.meta)
    return Trial(size(f, r), lambda: encode(f.a, p), p)


def _size_alp(f: Facts, r: Array) -> float:
    m: ALPMeta = r.meta
    size = child_int_cost(r.children[0], compact=f.compact)
    if m.patches is not None:
        size += m.patches.len * (f.key.dtype.itemsize + index_width(f.n)) + 2 * NODE_COST
    return size * f.n / max(len(r), 1) + NODE_COST


def _estimate_alp(f: Facts, comp: Any) -> Trial | None:
    return sample_trial(f, _encode_alp, _size_alp, lambda m: (m.e, m.f))


register_scheme(Scheme("vortex.alp", frozenset({"float"}), _estimate_alp, _encode_alp,
                       priority=130))
