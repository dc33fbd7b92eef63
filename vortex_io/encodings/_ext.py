"""``vortex.ext``: an extension-typed array stored as its storage array."""

from __future__ import annotations

from typing import Any, cast

from .. import dtype as dt
from .._array import Array, ArrayParts, Encoding, register_encoding
from .._errors import MalformedStreamError
from ..compute._kernels import compare_storage, is_in_storage, take, take_arrow
from ..compute._numeric import validity
from ._scheme import NODE_COST, Facts, Scheme, Trial, register_scheme


class ExtEncoding(Encoding):
    id = "vortex.ext"
    canonical = True

    def check_dtype(self, dtype: dt.DType) -> None:
        if not isinstance(dtype, dt.Extension):
            raise MalformedStreamError(f"vortex.ext cannot hold {dtype!r}")

    def child_specs(self, dtype: dt.DType, length, meta, parts: ArrayParts):
        return [(cast(dt.Extension, dtype).storage, length)]

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        import pyarrow as pa

        storage = arr.children[0].to_arrow(string_view=string_view)
        target = arr.dtype.to_arrow(string_view=string_view)
        if storage.type == target:
            return storage
        if isinstance(storage, pa.ChunkedArray):
            return pa.chunked_array([c.view(target) for c in storage.chunks], type=target)
        return storage.view(target)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        return Array(self, arr.dtype, stop - start, children=[arr.children[0].slice(start, stop)])

    # -- compute kernels: the storage child's -------------------------------------------
    def validity(self, arr: Array) -> Any:
        return validity(arr.children[0])

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        return compare_storage(arr.children[0], value, op)

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        return is_in_storage(arr.children[0], values)

    def take(self, arr: Array, indices: Any) -> Any:
        return ext_array(cast(dt.Extension, arr.dtype), take(arr.children[0], indices))

    def take_arrow(self, arr: Array, indices: Any, *, string_view: bool = False) -> Any:
        """The storage's rows as Arrow (``take_arrow``), typed as the extension."""

        storage = take_arrow(arr.children[0], indices, string_view=string_view)
        if storage is None:
            return None
        target = arr.dtype.to_arrow(string_view=string_view)
        return storage if storage.type == target else storage.view(target)

    def child_names(self, arr: Array) -> list[str]:
        return ["storage"]


EXT = register_encoding(ExtEncoding())


def ext_array(dtype: dt.Extension, storage: Array) -> Array:
    return Array(EXT, dtype, len(storage), children=[storage])


# -- compression scheme (estimate + encode, registered with the compressor) ----------


def _encode_ext_storage(a: Array, params: Any = None) -> Array | None:
    c = a.canonical()
    if c.encoding != "vortex.ext":
        return None
    return ext_array(cast(dt.Extension, a.dtype), c.children[0])


def _estimate_ext(f: Facts, comp: Any) -> Trial | None:
    r = _encode_ext_storage(f.a)
    if r is None:
        return None
    storage = r.children[0]
    best = comp.evaluate(storage, frozenset())
    size = (best[0].size if best is not None else storage.nbytes) + NODE_COST
    return Trial(size, lambda: r)


register_scheme(Scheme("vortex.ext", frozenset({"ext"}), _estimate_ext, _encode_ext_storage,
                       priority=50))
