"""``vortex_io.segmented_for``: frame of reference with one reference per row segment.

In memory only (stacking, ``vortex_io.compute.stack``): ``fastlanes.for`` nodes of
several messages with different references stack into one of these over their stacked
children, and stacked dictionaries re-base their codes with it (each message's codes plus
the number of values before its dictionary). ``value[r] = child[r] + refs[s]`` for the
segment ``s`` holding row ``r``, added in the unsigned twin of the (possibly wider) output
type, so it wraps like ``fastlanes.for``. It is never read from or written to a stream.

>>> import numpy as np
>>> from vortex_io.encodings.primitive import primitive_array
>>> a = segmented_for_array(primitive_array(np.array([0, 1, 0, 2], dtype=np.uint8)),
...                         np.array([0, 2, 4]), [0, 300], dt.PType.U16)
>>> a.to_pylist(), a.dtype
([0, 1, 300, 302], u16)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _memory
from .. import dtype as dt
from ..array import Array, Encoding
from ..compute.kernels import take_values
from ..compute.numeric import compare_values, decoded, isin_values, validity, with_validity
from ..errors import MalformedStreamError, UnsupportedError
from . import fastlanes_layout as fl
from .bool_ import bool_array
from .primitive import primitive_array, primitive_values

__all__ = ["SEGMENTED_FOR", "SegmentedFoREncoding", "segmented_for_array"]


@dataclass(frozen=True, eq=False)
class SegmentedMeta:
    """Row ``starts`` of the segments (int64, one more than there are segments, ending at
    the length), their references (the output type's unsigned twin) and optionally the
    bound each segment's child values must stay under at valid rows (``what`` names them
    in the error: stacked dictionary codes are checked against their own dictionary)."""

    starts: np.ndarray
    refs: np.ndarray
    bounds: np.ndarray | None = None
    what: str = "vortex_io.segmented_for values"

    def check(self, vals: np.ndarray, valid: np.ndarray | None, seg: np.ndarray | None) -> None:
        """Raise ``MalformedStreamError`` if a valid child value (in segment ``seg[i]``, or
        the segments in row order when ``seg`` is None) is negative or over its bound."""
        if self.bounds is None or not len(vals):
            return
        if seg is None:  # every row: a max (and min) per segment first
            signed = vals.dtype.kind == "i"
            for s in range(len(self.bounds)):
                part = vals[int(self.starts[s]) : int(self.starts[s + 1])]
                if len(part) and (int(part.max()) >= self.bounds[s] or (signed and int(part.min()) < 0)):
                    break
            else:
                return
            seg = np.repeat(np.arange(len(self.bounds)), np.diff(self.starts))
        b = self.bounds[seg]
        bad = vals >= b if vals.dtype.kind == "u" else (vals < 0) | (vals.astype(np.int64) >= b)
        if valid is not None:
            bad &= valid
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MalformedStreamError(
                f"{self.what}: a code falls outside the {int(b[i])} values")


class SegmentedFoREncoding(Encoding):
    id = "vortex_io.segmented_for"

    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> Any:
        raise UnsupportedError("vortex_io.segmented_for is an in-memory encoding, never on the wire")

    def _values(self, arr: Array) -> np.ndarray:
        """Every row's value in the output type (kernel scratch: nothing is cached)."""
        m: SegmentedMeta = arr.meta
        c = decoded(arr.children[0])
        if c.encoding != "vortex.primitive" or not c.dtype.ptype.is_int:
            raise MalformedStreamError(f"vortex_io.segmented_for: child decoded to {c.dtype!r}")
        vals, valid = primitive_values(c)
        m.check(vals, valid, None)
        ut = fl.UNSIGNED[arr.dtype.ptype.byte_width * 8]
        out = _memory.empty(len(vals), ut)
        out[...] = vals  # widens (and wraps negative codes under nulls) as unsigned
        np.add(out, np.repeat(m.refs, np.diff(m.starts)), out=out)
        return out.view(arr.dtype.ptype.np_dtype)

    def canonicalize(self, arr: Array) -> Array:
        mask = validity(arr.children[0])
        v = None if mask is None else bool_array(mask)
        return primitive_array(self._values(arr), v, nullable=arr.dtype.nullable,
                               ptype=arr.dtype.ptype)

    # -- compute kernels -------------------------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity(arr.children[0])

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        r = compare_values(self._values(arr), arr.dtype.ptype, value, op)
        if r is None:
            return NotImplemented
        return with_validity(r, self.validity(arr))

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        return with_validity(isin_values(self._values(arr), arr.dtype.ptype, values),
                             self.validity(arr))

    def take_values(self, arr: Array, indices: np.ndarray) -> Any:
        m: SegmentedMeta = arr.meta
        vals, valid = take_values(arr.children[0], indices)
        if vals.dtype.kind not in "iu":
            raise MalformedStreamError(f"vortex_io.segmented_for: child decoded to {vals.dtype}")
        ut = fl.UNSIGNED[arr.dtype.ptype.byte_width * 8]
        seg = np.searchsorted(m.starts, indices, side="right") - 1
        m.check(vals, valid, seg)
        out = vals.astype(ut)
        np.add(out, m.refs[seg], out=out)
        return out.view(arr.dtype.ptype.np_dtype), valid

    def describe(self, arr: Array) -> str:
        return f"{len(arr.meta.refs)} segments"

    def child_names(self, arr: Array) -> list[str]:
        return ["encoded"]


SEGMENTED_FOR = SegmentedFoREncoding()  # not registered: no stream names it


def segmented_for_array(child: Array, starts: np.ndarray, refs: Any, ptype: dt.PType,
                        bounds: Any = None, what: str = "vortex_io.segmented_for values") -> Array:
    """A ``vortex_io.segmented_for`` node: ``child`` (integers) plus ``refs[s]`` on the rows
    ``[starts[s], starts[s + 1])``, in ``ptype`` (at least as wide as the child); with
    ``bounds``, a valid child value of segment ``s`` outside ``[0, bounds[s])`` is an error
    when decoded."""
    starts = np.asarray(starts, dtype=np.int64)
    if len(starts) != len(refs) + 1 or starts[0] != 0 or starts[-1] != len(child):
        raise ValueError("segment starts must rise from 0 to the child's length, one per ref")
    ut = fl.UNSIGNED[ptype.byte_width * 8]
    mask = (1 << (8 * ptype.byte_width)) - 1
    r = np.array([int(x) & mask for x in refs], dtype=ut)
    a = Array(SEGMENTED_FOR, dt.Primitive(ptype, child.dtype.nullable), len(child),
              children=[child])
    b = None if bounds is None else np.asarray(bounds, dtype=np.int64)
    if b is not None and len(b) != len(r):
        raise ValueError("one bound per segment")
    a._cache["meta"] = SegmentedMeta(starts, r, b, what)
    return a
