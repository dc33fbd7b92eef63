"""``vortex_io.inverted_index``: a string column stored as an inverted index.

This is also the worked example of adding an encoding from outside the core: it uses only
public names (``vortex_io`` and the authors' toolkit ``vortex_io.encodings``), registers
itself and its compression scheme exactly as a user's module would, and the core never
imports it: this project's ``pyproject.toml`` publishes it as an entry point of the group
``vortex_io.encodings``, so a stream or a write naming ``vortex_io.inverted_index`` loads it.

Logical dtype: ``Utf8`` (nullable or not) — unchanged. Physical layout:

- metadata (protobuf): ``1: cardinality`` (distinct non-null values), ``2: num_postings``
  (non-null rows);
- child 0 ``dictionary``: the distinct values (Utf8, non-null, ``cardinality`` rows, any
  encoding);
- child 1 ``offsets``: u32, ``cardinality + 1`` values: value k's rows are
  ``rows[offsets[k]:offsets[k+1]]``;
- child 2 ``rows``: u32 row IDs, ``num_postings`` values, sorted within each value;
- child 3 (optional) ``validity``: a Bool child as for canonical arrays; null rows appear in
  no posting list.

Reading validates everything (offsets start at 0, rise, end at ``num_postings``; postings
are sorted within a value and cover every valid row exactly once; dictionary values are
unique) and rejects a malformed index with ``MalformedStreamError``. ``==``, ``!=`` and
``IN`` read only the dictionary and the posting lists they need.

>>> import vortex_io as vio
>>> from vortex_io.encodings.inverted_index import InvertedIndex
>>> a = InvertedIndex.encode(vio.array(["London", "Paris", None, "London"]))
>>> a.encoding
'vortex_io.inverted_index'
>>> InvertedIndex.rows_equal_to(a, "London").tolist()
[0, 3]
>>> a.to_pylist()
['London', 'Paris', None, 'London']

vortex-data cannot read this encoding, so the compressor never picks it on its own (its
scheme is opt-in): ``write_ipc(..., encodings={"city": "vortex_io.inverted_index"})`` forces
it on a column, ``encodings={"city": ["vortex_io.inverted_index", "vortex.dict"]}`` lets the
search weigh it against a dictionary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import vortex_io
from vortex_io import dtype as dt
from vortex_io.encodings import (
    NODE_COST,
    Array,
    ArrayParts,
    Facts,
    MalformedStreamError,
    ProtoWriter,
    Scheme,
    Trial,
    bool_array,
    canonical_ints,
    int_cost,
    parse_proto,
    primitive_array,
    register_scheme,
    validity_mask,
)

__all__ = ["InvertedIndex"]

_U32 = dt.Primitive(dt.PType.U32)
_BOOL = dt.Bool()
_UTF8 = dt.Utf8()


class InvertedIndex(vortex_io.Encoding):
    """The inverted-index encoding of a (nullable) Utf8 column."""

    id = "vortex_io.inverted_index"

    # -- wire ------------------------------------------------------------------------
    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Utf8):
            raise MalformedStreamError(f"{self.id} holds utf8 columns, not {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> tuple[int, int]:
        f = parse_proto(raw, "InvertedIndexMetadata")
        card, npost = f.get_uint(1, 0), f.get_uint(2, 0)
        if npost > length:
            raise MalformedStreamError(f"{self.id}: {npost} postings for {length} rows")
        if card > npost:
            raise MalformedStreamError(f"{self.id}: {card} distinct values but {npost} postings")
        return card, npost

    def child_specs(self, dtype, length, meta, parts: ArrayParts):
        card, npost = meta
        specs = [(_UTF8, card), (_U32, card + 1), (_U32, npost)]
        if parts.nchildren == 4:
            if not dtype.nullable:
                raise MalformedStreamError(f"{self.id}: validity child on a non-nullable column")
            specs.append((_BOOL, length))
        return specs

    def validate(self, arr: Array, limits: Any) -> None:
        self._parts(arr)

    def _parts(self, arr: Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(offsets, rows, validity mask), checked once per node."""
        return arr.memo("ii", lambda: self._checked(arr))

    def _checked(self, arr: Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        card, npost = arr.meta
        n = len(arr)
        offs = canonical_ints(arr.children[1], f"{self.id} offsets").astype(np.int64)
        rows = canonical_ints(arr.children[2], f"{self.id} rows").astype(np.int64)
        if offs[0] != 0 or offs[-1] != npost or (np.diff(offs) < 0).any():
            raise MalformedStreamError(f"{self.id}: offsets must rise from 0 to {npost}")
        if card and (np.diff(offs) == 0).any():
            raise MalformedStreamError(f"{self.id}: a dictionary value has no rows")
        if npost and (rows.max() >= n or rows.min() < 0):
            raise MalformedStreamError(f"{self.id}: a posting names a row outside 0..{n}")
        # sorted within each value: every step is positive except where a new value starts
        if npost > 1:
            steps = np.diff(rows)
            starts = np.zeros(npost - 1, dtype=np.bool_)
            inner = offs[1:-1]
            inner = inner[(inner > 0) & (inner < npost)]
            starts[inner - 1] = True
            if ((steps <= 0) & ~starts).any():
                raise MalformedStreamError(f"{self.id}: postings are not sorted within a value")
        valid = validity_mask(arr.children[3] if len(arr.children) > 3 else None, n)
        expect = np.ones(n, dtype=np.int64) if valid is None else valid.astype(np.int64)
        if not np.array_equal(np.bincount(rows, minlength=n)[:n], expect) or len(rows) != expect.sum():
            raise MalformedStreamError(
                f"{self.id}: postings must cover every non-null row exactly once")
        dictionary = arr.children[0].to_arrow()  # (Arrow has no take for the view types)
        import pyarrow.compute as pc

        if dictionary.null_count:
            raise MalformedStreamError(f"{self.id}: the dictionary holds a null")
        if len(pc.unique(dictionary)) != card:
            raise MalformedStreamError(f"{self.id}: dictionary values are not unique")
        return offs, rows, valid

    # -- decode ----------------------------------------------------------------------
    def canonicalize(self, arr: Array) -> Array:
        return vortex_io.array(self.to_arrow(arr), arr.dtype)

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        offs, rows, valid = self._parts(arr)
        n = len(arr)
        card = len(offs) - 1
        codes = np.zeros(n, dtype=np.int32)
        codes[rows] = np.repeat(np.arange(card, dtype=np.int32), np.diff(offs))
        mask = None if valid is None else ~valid
        dictionary = arr.children[0].to_arrow()  # (Arrow has no take for the view types)
        if isinstance(dictionary, pa.ChunkedArray):
            dictionary = dictionary.combine_chunks()
        out = dictionary.take(pa.array(codes, mask=mask))
        t = arr.dtype.to_arrow(string_view=string_view)
        return out if out.type == t else out.cast(t)

    # -- kernels ---------------------------------------------------------------------
    def _value_index(self, arr: Array, values: list[Any]) -> np.ndarray:
        """Dictionary positions of the given strings (absent values are skipped)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        dictionary = arr.children[0].to_arrow()  # (Arrow has no take for the view types)
        hits = pc.index_in(dictionary, value_set=pa.array([str(v) for v in values], pa.string()))
        return np.flatnonzero(hits.is_valid().to_numpy(zero_copy_only=False))

    def _rows_of(self, arr: Array, ks: np.ndarray) -> np.ndarray:
        offs, rows, _ = self._parts(arr)
        if len(ks) == 0:
            return np.zeros(0, dtype=np.int64)
        parts = [rows[offs[k] : offs[k + 1]] for k in ks.tolist()]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        if op not in ("eq", "neq") or not isinstance(value, str):
            return NotImplemented
        n = len(arr)
        _, _, valid = self._parts(arr)
        hit = np.zeros(n, dtype=np.bool_)
        hit[self._rows_of(arr, self._value_index(arr, [value]))] = True
        if op == "neq":
            hit = ~hit if valid is None else (~hit & valid)
        return hit, valid

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        if not all(isinstance(v, str) for v in values):
            return NotImplemented
        _, _, valid = self._parts(arr)
        hit = np.zeros(len(arr), dtype=np.bool_)
        hit[self._rows_of(arr, self._value_index(arr, values))] = True
        return hit, valid

    # -- public helpers --------------------------------------------------------------
    @staticmethod
    def rows_equal_to(array: Array, value: str) -> np.ndarray:
        """Sorted row IDs whose value equals ``value``, read from the posting list only."""
        enc = array.vtable
        if not isinstance(enc, InvertedIndex):
            raise TypeError(f"rows_equal_to needs a {InvertedIndex.id} array, not {array.encoding}")
        return enc._rows_of(array, enc._value_index(array, [value])).astype(np.int64)

    @staticmethod
    def encode(array: Any) -> Array:
        """Build the index from a Utf8 array (any encoding) or Arrow/Python strings."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not isinstance(array, Array):
            array = vortex_io.array(array)
        if not isinstance(array.dtype, dt.Utf8):
            raise TypeError(f"an inverted index needs a utf8 column, not {array.dtype!r}")
        n = len(array)
        if n >= 2**32:
            raise ValueError("an inverted index holds at most 2**32-1 rows")
        a = array.to_arrow()
        if isinstance(a, pa.ChunkedArray):
            a = a.combine_chunks()
        enc = pc.dictionary_encode(a)
        codes_arr = enc.indices
        valid = None
        if a.null_count:
            valid = a.is_valid().to_numpy(zero_copy_only=False)
        codes = codes_arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        card = len(enc.dictionary)
        sel = np.arange(n, dtype=np.int64) if valid is None else np.flatnonzero(valid)
        order = sel[np.argsort(codes[sel], kind="stable")]
        counts = np.bincount(codes[sel], minlength=card)
        offs = np.zeros(card + 1, dtype=np.uint32)
        np.cumsum(counts, out=offs[1:])
        dictionary = vortex_io.array(enc.dictionary.cast(pa.string()), _UTF8)
        children = [dictionary, primitive_array(offs), primitive_array(order.astype(np.uint32))]
        if valid is not None:
            children.append(bool_array(valid))
        meta = ProtoWriter().varint(1, card).varint(2, len(order)).finish()
        out = Array(_INSTANCE, array.dtype, n, metadata=meta, children=children,
                    meta=(card, len(order)))
        out.memo("ii", lambda: (offs.astype(np.int64), order, valid))
        return out

    def describe(self, arr: Array) -> str:
        return f"cardinality={arr.meta[0]}"

    def child_names(self, arr: Array) -> list[str]:
        return ["dictionary", "offsets", "rows", "validity"]


_INSTANCE = InvertedIndex()
vortex_io.register_encoding(_INSTANCE)


# -- compression scheme -------------------------------------------------------------------


def _encode(array: Array, params: Any = None) -> Array | None:
    return InvertedIndex.encode(array)


def _estimate(f: Facts, compressor: Any) -> Trial | None:
    """The index is built for real (vectorized, and the scheme only runs where a caller
    named it); its children are priced as the cascade will compress them: the dictionary's
    text with offsets, the offsets and the row IDs (sorted within a value: bit-packed)."""
    if f.n >= 2**32 or f.nulls == f.n:
        return None
    r = InvertedIndex.encode(f.a)
    offs, rows, _ = _INSTANCE._parts(r)
    dictionary = r.children[0].to_arrow()
    text = sum(b.size for b in dictionary.buffers()[2:3] if b is not None)
    text_offsets = np.asarray(dictionary.offsets)
    size = (text + int_cost(text_offsets) + int_cost(offs) + int_cost(rows, f.n)
            + f.validity_bytes + 5 * NODE_COST)
    return Trial(size, lambda: r)


register_scheme(Scheme(InvertedIndex.id, frozenset({"str"}), _estimate, _encode, opt_in=True))
