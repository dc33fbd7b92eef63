"""``vortex.dict``: integer codes into a dictionary of values of any dtype.

Wire layout (0.93): no buffers; children ``codes`` (primitive of ``codes_ptype``, n) and
``values`` (the node's dtype, ``values_len``). The codes are nullable when
``DictMetadata.is_nullable_codes`` says so (else: when the dtype is); a null code is a
null row. vortex-data's compressor writes nullable codes for numbers, and for strings a
null *value* in the dictionary with non-nullable codes.

Decoding gathers the canonical values with the codes (vectorized; see ``take_canonical``,
also used by ``vortex.runend`` and ``sparse_encode``).

>>> import pyarrow as pa
>>> d = dict_encode(pa.array(["a", "b", None, "a"]))
>>> d.encoding, len(d.children[1]), d.to_arrow().to_pylist()
('vortex.dict', 3, ['a', 'b', None, 'a'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _memory
from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, check_decoded_size, register_encoding
from .._arrow import from_arrow
from .._errors import MalformedStreamError, UnsupportedError
from .._limits import DEFAULT_LIMITS, ReaderLimits, decoded_width
from .._proto import ProtoWriter, parse
from ..compute._kernels import compare_storage, is_in_storage, take, take_values
from ..compute._numeric import broadcast, decoded, int_bounds, validity, with_validity
from . import _scheme  # (the cost models)
from ._bool import bool_array, bool_values
from ._common import (
    array_ptype,
    as_array,
    int_ptype_of,
    narrowest_uint,
    primitive,
    validity_child,
    validity_mask,
)
from ._ext import ext_array
from ._null import null_array
from ._primitive import primitive_array, primitive_raw, primitive_values
from ._scheme import NODE_COST, Facts, Scheme, Trial, register_scheme

__all__ = [
    "DictMeta",
    "dict_array",
    "dict_codes_and_values",
    "dict_encode",
    "narrowest_uint",
    "take_canonical",
    "repeat_canonical",
    "estimate_row_width",
]


@dataclass(frozen=True)
class DictMeta:
    """``DictMetadata``: 1 values_len u32; 2 codes_ptype; 3 is_nullable_codes opt; 4
    all_values_referenced opt."""

    values_len: int
    codes_ptype: dt.PType
    is_nullable_codes: bool | None = None
    all_values_referenced: bool | None = None

    @classmethod
    def decode(cls, raw: bytes) -> DictMeta:
        f = parse(raw, "DictMetadata")
        return cls(
            values_len=f.get_uint(1, 0, bits=32),
            codes_ptype=int_ptype_of(f.get_uint(2, 0), "vortex.dict codes"),
            is_nullable_codes=f.get_bool(3, None),
            all_values_referenced=f.get_bool(4, None),
        )

    def encode(self) -> bytes:
        w = ProtoWriter().varint(1, self.values_len).varint(2, int(self.codes_ptype))
        if self.is_nullable_codes is not None:
            w.varint(3, int(self.is_nullable_codes), always=True)
        if self.all_values_referenced is not None:
            w.varint(4, int(self.all_values_referenced), always=True)
        return w.finish()


def estimate_row_width(d: dt.DType) -> int:
    """Rough decoded bytes per row of dtype ``d`` (used to bound expansions)."""
    return decoded_width(d)


class DictEncoding(Encoding):
    id = "vortex.dict"

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> DictMeta:
        return DictMeta.decode(raw)

    def child_specs(self, dtype: dt.DType, length: int, meta: DictMeta, parts: ArrayParts):
        if parts.nchildren != 2:
            raise MalformedStreamError(f"vortex.dict takes 2 children (codes, values), got {parts.nchildren}")
        nullable_codes = dtype.nullable if meta.is_nullable_codes is None else meta.is_nullable_codes
        if nullable_codes and not dtype.nullable:
            raise MalformedStreamError(f"vortex.dict: nullable codes for a non-nullable {dtype!r}")
        return [(dt.Primitive(meta.codes_ptype, nullable_codes), length), (dtype, meta.values_len)]

    def validate(self, arr: Array, limits) -> None:
        n = len(arr)
        meta: DictMeta = arr.meta
        if meta.values_len == 0 and n and not arr.children[0].dtype.nullable:
            raise MalformedStreamError(f"vortex.dict: {n} non-null codes into an empty dictionary")
        check_decoded_size(n * estimate_row_width(arr.dtype), f"vortex.dict of {n} rows", limits)

    def canonicalize(self, arr: Array) -> Array:
        n = len(arr)
        codes_arr, values = arr.children
        c = codes_arr.canonical()
        if not isinstance(c.dtype, dt.Primitive) or not c.dtype.ptype.is_int:
            raise MalformedStreamError(f"vortex.dict codes must be integers, not {c.dtype!r}")
        codes, valid = primitive_values(c)
        nvals = len(values)
        idx = checked_indices(codes, valid, nvals, "vortex.dict codes")
        if valid is not None and not valid.any():
            return _all_null(arr.dtype, n)
        return take_canonical(values.canonical(), idx, valid, arr.dtype, limits=arr.limits)

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        if string_view and isinstance(arr.dtype, (dt.Utf8, dt.Binary)):
            return _gather_views(arr)
        if arr.cached_canonical is None and isinstance(arr.dtype, (dt.Utf8, dt.Binary)):
            return self._strings_to_arrow(arr)
        return arr.canonical().to_arrow(string_view=string_view)

    def _strings_to_arrow(self, arr: Array) -> Any:
        """Strings straight to Arrow: one Arrow ``take`` of the dictionary by the codes (no
        canonical array built in between; a selective ``take`` then decodes only its rows)."""

        c = decoded(arr.children[0])
        if c.encoding != "vortex.primitive" or not array_ptype(c).is_int:
            raise MalformedStreamError(f"vortex.dict codes must be integers, not {c.dtype!r}")
        codes, valid = primitive_values(c)
        return _strings_from_codes(arr, codes, valid)

    def take_arrow(self, arr: Array, indices: np.ndarray, *, string_view: bool = False) -> Any:
        """Rows at in-range ``indices`` of a dictionary of strings as Arrow: only the
        taken codes are read (``take_values``), then the values gathered by them."""

        if not isinstance(arr.dtype, (dt.Utf8, dt.Binary)):
            return None
        codes, valid = take_values(arr.children[0], indices)
        if codes.dtype.kind not in "iu":
            raise MalformedStreamError(f"vortex.dict codes must be integers, not {codes.dtype}")
        if string_view:
            return _gather_views(arr, codes, valid)
        return _strings_from_codes(arr, codes, valid)

    def take_values(self, arr: Array, indices: np.ndarray) -> Any:
        """A dictionary of primitive values: the taken codes index the decoded values."""

        if not isinstance(arr.dtype, dt.Primitive):
            return NotImplemented
        codes_arr, values = arr.children
        codes, cvalid = take_values(codes_arr, indices)
        if codes.dtype.kind not in "iu":
            raise MalformedStreamError(f"vortex.dict codes must be integers, not {codes.dtype}")
        idx = checked_indices(codes, cvalid, len(values), "vortex.dict codes")
        p = arr.dtype.ptype
        if cvalid is not None and not cvalid.any():  # (the values may be empty)
            return np.zeros(len(idx), p.np_dtype), cvalid
        vc = values.canonical()
        if vc.encoding != "vortex.primitive" or array_ptype(vc) != p:
            raise MalformedStreamError(f"vortex.dict values decoded to {vc.dtype!r}")
        vals, vvalid = primitive_values(vc)
        valid = cvalid
        if vvalid is not None:
            vv = vvalid[idx]
            valid = vv if valid is None else valid & vv
        return vals[idx], valid

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        codes, values = arr.children
        meta: DictMeta = arr.meta
        return dict_array(codes.slice(start, stop), values, all_values_referenced=False,
                          dtype=arr.dtype, is_nullable_codes=meta.is_nullable_codes)

    # -- compute kernels: evaluate on the values, map through the codes -----------------
    def _codes(self, arr: Array) -> tuple[np.ndarray, np.ndarray | None]:
        """(codes as in-range indices, codes validity or None), decoded as kernel scratch
        (bit-packed codes are unpacked once; nothing is cached or counted)."""

        c = decoded(arr.children[0])
        if c.encoding != "vortex.primitive" or not array_ptype(c).is_int:
            raise MalformedStreamError(f"vortex.dict codes must be integers, not {c.dtype!r}")
        codes, valid = primitive_values(c)
        return checked_indices(codes, valid, len(arr.children[1]), "vortex.dict codes"), valid

    def _map(self, arr: Array, hit: np.ndarray, hit_valid: np.ndarray | None) -> Any:
        """A per-value Mask mapped to the rows."""

        n = len(arr)
        if hit_valid is None or hit_valid.all():
            if not hit.any():
                return broadcast(n, False, validity(arr.children[0]))
            if hit.all():
                return broadcast(n, True, validity(arr.children[0]))
        if hit_valid is not None and hit_valid.all():
            hit_valid = None
        codes, cvalid = self._codes(arr)
        vals = _lookup(hit, codes)
        valid = cvalid
        if hit_valid is not None:
            hv = hit_valid[codes]
            valid = hv if valid is None else valid & hv
        return with_validity(vals, valid)

    def validity(self, arr: Array) -> Any:
        codes_arr, values = arr.children
        vv = validity(values) if values.dtype.nullable else None
        if vv is None:
            return validity(codes_arr) if codes_arr.dtype.nullable else None
        codes, cvalid = self._codes(arr)
        out = vv[codes]
        return out if cvalid is None else out & cvalid

    def int_bounds(self, arr: Array) -> tuple[int, int] | None:
        return int_bounds(arr.children[1])

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        return self._map(arr, *compare_storage(arr.children[1], value, op))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        return self._map(arr, *is_in_storage(arr.children[1], values))

    def take(self, arr: Array, indices: Any) -> Any:
        """Takes the codes only: still a dictionary over the same values."""

        m: DictMeta = arr.meta
        return dict_array(take(arr.children[0], indices), arr.children[1],
                          all_values_referenced=False, dtype=arr.dtype,
                          is_nullable_codes=m.is_nullable_codes)

    def describe(self, arr: Array) -> str:
        m: DictMeta = arr.meta
        return f"values={m.values_len}, codes={m.codes_ptype.short}"

    def child_names(self, arr: Array) -> list[str]:
        return ["codes", "values"]


DICT = register_encoding(DictEncoding())


def dict_array(codes: Array, values: Array, *, all_values_referenced: bool | None = None,
               dtype: dt.DType | None = None, is_nullable_codes: bool | None = None) -> Array:
    """A ``vortex.dict`` array; ``codes`` are integers (nullable codes make null rows)."""
    if not isinstance(codes.dtype, dt.Primitive) or not codes.dtype.ptype.is_int:
        raise TypeError(f"dictionary codes must be integers, not {codes.dtype!r}")
    if dtype is None:
        dtype = values.dtype.with_nullable(values.dtype.nullable or codes.dtype.nullable)
    if codes.dtype.nullable and not dtype.nullable:
        raise TypeError("nullable codes need a nullable dtype")
    meta = DictMeta(len(values), codes.dtype.ptype,
                    codes.dtype.nullable if is_nullable_codes is None else is_nullable_codes,
                    all_values_referenced)
    if values.dtype != dtype:
        raise TypeError(f"dictionary values of {values.dtype!r} for a dict of {dtype!r}")
    a = Array(DICT, dtype, len(codes), metadata=meta.encode(), children=[codes, values], meta=meta)
    return a


def dict_codes_and_values(array: Array) -> tuple[Array, Array]:
    """(codes, values) of a ``vortex.dict`` array, without decoding either (for kernels)."""
    if array.encoding != DICT.id:
        raise TypeError(f"not a vortex.dict array: {array.encoding}")
    return array.children[0], array.children[1]


# -- gathers shared by dict, runend, sparse ----------------------------------------------


def _lookup(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]`` for a bool per-value table: constant tables by a fill, tables of up
    to 8 hits by comparisons (a gather costs ~2 ns a row, a comparison a tenth of that)."""
    k = int(np.count_nonzero(table))
    if k == 0 or k == len(table):
        return np.full(len(codes), k != 0, dtype=np.bool_)
    if k > 8:
        return table[codes]
    out = np.zeros(len(codes), dtype=np.bool_)
    top = int(np.iinfo(codes.dtype).max)
    for h in np.flatnonzero(table).tolist():
        if h <= top:  # (a value past the codes' type is never referenced)
            out |= codes == codes.dtype.type(h)
    return out


def checked_indices(codes: np.ndarray, valid: np.ndarray | None, bound: int, what: str) -> np.ndarray:
    """``codes`` as indices in ``[0, bound)`` (any integer dtype: numpy indexes with it
    directly). Codes under null positions may be anything: out-of-range ones are zeroed.
    Raises ``MalformedStreamError`` on an out-of-range code at a valid position."""
    if len(codes) == 0:
        return np.zeros(0, dtype=np.intp)
    if int(codes.max()) < bound and (codes.dtype.kind == "u" or int(codes.min()) >= 0):
        return codes
    bad = codes >= bound
    if codes.dtype.kind == "i":
        bad |= codes < 0
    if valid is None or (bad & valid).any():
        raise MalformedStreamError(f"{what}: a code falls outside the {bound} values")
    return np.where(bad, 0, codes)


def _all_null(d: dt.DType, n: int) -> Array:
    import pyarrow as pa


    return from_arrow(pa.nulls(n, type=d.to_arrow()), dtype=d)


def _combine(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _strings_from_codes(arr: Array, codes: np.ndarray, valid: np.ndarray | None) -> Any:
    """The strings of a dictionary at ``codes`` (validity ``valid``) as Arrow ``string``."""
    import pyarrow as pa

    values = arr.children[1]
    idx = checked_indices(codes, valid, len(values), "vortex.dict codes")
    if valid is not None and not valid.any():
        return pa.nulls(len(codes), type=arr.dtype.to_arrow())
    out = _arrow_gather(values.canonical(), idx, valid, arr.limits)
    t = arr.dtype.to_arrow()
    return out if out.type == t else out.cast(t)


def _gather_views(arr: Array, codes: np.ndarray | None = None,
                  valid: np.ndarray | None = None) -> Any:
    """A dictionary of strings as Arrow ``string_view``: the dictionary's 16-byte views are
    gathered by code (no string bytes are copied; the data buffers are shared). ``codes``
    (with ``valid``): only those rows; default all."""
    import pyarrow as pa


    codes_arr, values = arr.children
    if codes is None:
        codes, valid = primitive_values(codes_arr.canonical())
    n = len(codes)
    idx = checked_indices(codes, valid, len(values), "vortex.dict codes")
    v = values.to_arrow(string_view=True)
    if isinstance(v, pa.ChunkedArray):
        v = v.combine_chunks()
    t = arr.dtype.to_arrow(string_view=True)
    if v.type != t:
        v = v.cast(t)
    bufs = v.buffers()
    # 16-byte views as one 16-byte numpy scalar each: a 1-D gather is far faster than a 2-D one
    views = np.frombuffer(bufs[1], dtype=np.complex128)[v.offset : v.offset + len(v)]
    out = _memory.take(views, idx)  # (idx checked above; pooled output: no page faults)
    mask = valid
    if v.null_count:
        vmask = v.is_valid().to_numpy(zero_copy_only=False)[idx]
        mask = vmask if mask is None else (mask & vmask)
    if mask is not None and mask.all():
        mask = None
    vbuf = None if mask is None else pa.py_buffer(np.packbits(mask, bitorder="little"))
    return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(out), *bufs[2:]],
                                 null_count=-1 if mask is not None else 0)


def take_canonical(values: Array, idx: np.ndarray, valid: np.ndarray | None = None,
                   dtype: dt.DType | None = None, *, limits: ReaderLimits = DEFAULT_LIMITS
                   ) -> Array:
    """Rows ``values[idx]`` of a canonical array, as a canonical array of ``dtype``.

    ``idx`` are in-range integer indices; ``valid`` (optional, False = null) marks rows to
    null out. ``limits`` bounds what a gather of strings may expand to. Primitive, bool and
    extension values gather with numpy; strings, binary and nested dtypes go through Arrow's
    ``take`` (for strings it measured ~6x faster than a
    numpy byte gather: 10 ms vs 60-130 ms for 1M rows of a 50-value dictionary).
    """

    d = dtype if dtype is not None else values.dtype
    n = len(idx)
    enc = values.encoding
    if enc == "vortex.primitive":
        vals, vmask = primitive_values(values)
        m = _combine(_memory.take(vmask, idx) if vmask is not None else None, valid)
        return primitive_array(_memory.take(vals, idx), validity_child(m), nullable=d.nullable,
                               ptype=primitive(d, "take_canonical dtype").ptype)
    if enc == "vortex.bool":
        vals = bool_values(values)
        vmask = validity_mask(values.children[0] if values.children else None, len(values))
        m = _combine(vmask[idx] if vmask is not None else None, valid)
        return bool_array(vals[idx], validity_child(m), nullable=d.nullable)
    if enc == "vortex.null":
        return null_array(n)
    if enc == "vortex.ext" and isinstance(d, dt.Extension):
        return ext_array(d, take_canonical(values.children[0].canonical(), idx, valid, d.storage,
                                           limits=limits))
    return _take_arrow(values, idx, valid, d, limits)


def _take_arrow(values: Array, idx: np.ndarray, valid: np.ndarray | None, d: dt.DType,
                limits: ReaderLimits = DEFAULT_LIMITS) -> Array:
    """Arrow's ``take`` (strings, binary, structs, lists, decimals...): measured 5-10x
    faster than gathering string bytes with numpy."""

    out = from_arrow(_arrow_gather(values, idx, valid, limits), dtype=d)
    if out.encoding == "vortex.varbin" and out.children[0].encoding == "vortex.primitive":
        # Arrow built these offsets: seed varbin's cache so they are not re-validated

        out.memo("offsets", lambda: primitive_raw(out.children[0]))
    return out


def _arrow_gather(values: Array, idx: np.ndarray, valid: np.ndarray | None,
                  limits: ReaderLimits = DEFAULT_LIMITS) -> Any:
    """``values[idx]`` as a ``pyarrow.Array`` (rows where ``valid`` is False are null),
    string expansions bounded by ``limits`` first."""
    import pyarrow as pa

    a = values.to_arrow()
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if pa.types.is_string_view(a.type) or pa.types.is_binary_view(a.type):
        # string_view output was asked for, but Arrow has no take kernel for view types
        a = a.cast(pa.string() if pa.types.is_string_view(a.type) else pa.binary())
    cap = min(2**31 - 1, limits.max_decoded_bytes)
    # (values.nbytes bounds the longest value: small gathers skip measuring the lengths)
    if (pa.types.is_string(a.type) or pa.types.is_binary(a.type)) and len(idx) * values.nbytes > cap:
        lens = np.diff(np.frombuffer(a.buffers()[1], dtype=np.int32)[a.offset : a.offset + len(a) + 1])
        bound = len(idx) * (int(lens.max()) if len(lens) else 0)
        if bound > cap:
            # a few long values repeated by many codes or runs: bound the expansion first
            total = int(lens[idx].sum(dtype=np.int64)) if len(idx) else 0
            check_decoded_size(total, f"gather of {len(idx)} strings", limits)
            if total > 2**31 - 1:
                a = a.cast(pa.large_string() if pa.types.is_string(a.type) else pa.large_binary())
    if pa.types.is_string(a.type) or pa.types.is_binary(a.type):
        fixed = _fixed_width_take(a, idx, valid)
        if fixed is not None:
            return fixed
    ind = pa.array(idx, mask=None if valid is None else ~valid)
    return a.take(ind)


#: string dictionaries whose values all have one length up to this gather as byte rows
FIXED_WIDTH_MAX = 16
_FIXED_DICT_MAX = 4096
#: ... for gathers of at least this many rows (below it, the byte matrix's fixed setup
#: costs more than Arrow's take: measured crossover ~4-5K rows)
_FIXED_MIN_ROWS = 4096


def _fixed_width_take(a: Any, idx: np.ndarray, valid: np.ndarray | None) -> Any:
    """``a.take(idx)`` (nulls where ``valid`` is False) for a ``string``/``binary``
    dictionary whose non-null values all have the same length W <= ``FIXED_WIDTH_MAX``
    (flags, codes, airports...): the values become a (len, W) byte matrix and its rows
    are gathered as one W-byte item each (Arrow's take copies value by value: 2-4x
    slower). None for any other dictionary."""
    import pyarrow as pa

    m, n = len(a), len(idx)
    if not 0 < m <= _FIXED_DICT_MAX or n < _FIXED_MIN_ROWS:
        return None
    bufs = a.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int32)[a.offset : a.offset + m + 1]
    lens = np.diff(offs)
    vmask = a.is_valid().to_numpy(zero_copy_only=False) if a.null_count else None
    live = lens if vmask is None else lens[vmask]
    if len(live) == 0:
        return None
    w = int(live[0])
    if not 0 < w <= FIXED_WIDTH_MAX or n * w > 2**31 - 1 or bool((live != w).any()):
        return None
    data = np.frombuffer(bufs[2], dtype=np.uint8)
    rows = np.arange(m) if vmask is None else np.flatnonzero(vmask)
    mat = np.zeros((m, w), dtype=np.uint8)  # null values' rows stay zero (their slots are null)
    mat[rows] = data[offs[rows, None] + np.arange(w)]
    item = np.dtype(f"<u{w}") if w in (1, 2, 4, 8) else np.dtype(f"V{w}")
    out = _memory.take(mat.view(item).reshape(m), idx)
    offsets = np.arange(0, (n + 1) * w, w, dtype=np.int32)
    ok = valid
    if vmask is not None:
        vm = _memory.take(vmask, idx)
        ok = vm if ok is None else ok & vm
    bitmap = None
    if ok is not None and not ok.all():
        bitmap = pa.py_buffer(np.packbits(ok, bitorder="little"))
    return pa.Array.from_buffers(a.type, n, [bitmap, pa.py_buffer(offsets),
                                             pa.py_buffer(out.view(np.uint8))],
                                 null_count=-1 if bitmap is not None else 0)


def repeat_canonical(values: Array, counts: np.ndarray, dtype: dt.DType | None = None, *,
                     limits: ReaderLimits = DEFAULT_LIMITS) -> Array:
    """Each row of a canonical array repeated ``counts[i]`` times (run-end decoding)."""

    d = dtype if dtype is not None else values.dtype
    if values.encoding == "vortex.primitive":
        vals, vmask = primitive_values(values)
        m = None if vmask is None else np.repeat(vmask, counts)
        return primitive_array(np.repeat(vals, counts), validity_child(m), nullable=d.nullable,
                               ptype=primitive(d, "repeat_canonical dtype").ptype)
    if values.encoding == "vortex.bool":
        vmask = validity_mask(values.children[0] if values.children else None, len(values))
        m = None if vmask is None else np.repeat(vmask, counts)
        return bool_array(np.repeat(bool_values(values), counts), validity_child(m), nullable=d.nullable)
    idx = np.repeat(np.arange(len(values), dtype=np.intp), counts)
    return take_canonical(values, idx, None, d, limits=limits)


# -- encoding -----------------------------------------------------------------------------



def dict_encode(array: Any) -> Array:
    """Dictionary-encode an array (a ``vortex_io.Array`` or Arrow array).

    Values are deduplicated (floats by bit pattern, so ``-0.0``, ``0.0`` and NaN payloads
    stay distinct) in first-occurrence order; codes use the narrowest unsigned type.
    Nulls follow vortex-data: primitive arrays get nullable codes; other dtypes (strings,
    binary, ...) get a null dictionary value and non-nullable codes.
    """
    import pyarrow as pa


    arr = as_array(array)
    c = arr.canonical()
    d = arr.dtype
    if isinstance(d, dt.Primitive):
        vals, valid = primitive_values(c)
        key = vals.view(d.ptype.to_unsigned().np_dtype) if d.ptype.is_float else vals
        if valid is not None and valid.all():
            valid = None
        enc = pa.array(key, mask=None if valid is None else ~valid).dictionary_encode()
        uniq = np.asarray(enc.dictionary.to_numpy(zero_copy_only=False)).astype(key.dtype, copy=False)
        ind = enc.indices
        codes = np.asarray(ind.fill_null(0) if valid is not None else ind).astype(np.int64, copy=False)
        cp = narrowest_uint(max(len(uniq) - 1, 0))
        codes_arr = primitive_array(codes.astype(cp.np_dtype), validity_child(valid),
                                    nullable=d.nullable)
        values = primitive_array(uniq.view(d.ptype.np_dtype), nullable=d.nullable, ptype=d.ptype)
        return dict_array(codes_arr, values, all_values_referenced=True, dtype=d)
    a = c.to_arrow()
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    try:
        enc = a.dictionary_encode(null_encoding="encode")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        raise UnsupportedError(f"cannot dictionary-encode {d!r}: {e}") from None
    codes = np.asarray(enc.indices).astype(np.int64, copy=False)
    cp = narrowest_uint(max(len(enc.dictionary) - 1, 0))
    values = from_arrow(enc.dictionary, dtype=d)
    return dict_array(primitive_array(codes.astype(cp.np_dtype)), values, all_values_referenced=True,
                      dtype=d)


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_dict(a: Array, params: Any = None) -> Array | None:
    return dict_encode(a)


def _estimate_dict(f: Facts, comp: Any) -> Trial | None:
    if f.kind == "str":
        return _estimate_dict_str(f, comp)
    m = len(f.vkey)
    if m == 0 or f.distinct * 2 > m:
        return None
    d = f.distinct
    if f.kind == "int":
        values = _scheme.int_cost(f.groups[0], d, dict_=False, compact=f.compact)
    else:
        values = d * f.vkey.dtype.itemsize + NODE_COST
    codes = _scheme.codes_cost(d, f.n, f.runs)
    if f.compact and f.n >= 4096:
        idx = np.searchsorted(f.groups[0], f.vkey)
        codes = min(codes, _scheme.zstd_cost(_scheme.narrow_codes(idx, d)) + 2 * NODE_COST)
    size = codes + values + f.validity_bytes + 2 * NODE_COST
    return Trial(size, lambda: _encode_dict(f.a))


def _estimate_dict_str(f: Facts, comp: Any) -> Trial | None:
    enc = f.string_dict
    if enc is None:
        return None
    d = len(enc.dictionary)
    if d * 2 > f.n:
        return None
    idx = np.asarray(enc.indices)
    runs = 1 + int(np.count_nonzero(idx[1:] != idx[:-1])) if len(idx) else 0
    vals = enc.dictionary
    data_bytes = vals.buffers()[2].size if vals.buffers()[2] is not None else 0
    values = data_bytes + d * 1.5 + 3 * NODE_COST
    codes = _scheme.codes_cost(d, f.n, runs)
    if f.compact and f.n >= 4096:
        codes = min(codes, _scheme.zstd_cost(_scheme.narrow_codes(idx, d)) + 2 * NODE_COST)
    size = codes + values + 2 * NODE_COST
    return Trial(size, lambda: _encode_dict(f.a))


register_scheme(Scheme("vortex.dict", frozenset({"int", "float", "str"}), _estimate_dict, _encode_dict,
                       priority=100))
