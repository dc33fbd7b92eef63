"""``Array``: one node of an encoding tree, and ``Encoding``: what an encoding ID means.

An ``Array`` is a logical dtype and length plus a physical encoding: the encoding's
metadata bytes, data buffers and child arrays, exactly as they travel on the wire. Arrays
read from a stream hold views into the input; nothing is decoded until a consumer asks
(``to_arrow``, ``to_numpy``, ``canonical``) and then only the nodes it needs.

Encodings are registered by ID in a registry that users extend with
``register_encoding`` (see ``vortex_io.encodings.inverted_index`` for a complete example).

>>> import vortex_io as vio
>>> a = vio.array([1, 2, None])
>>> a.encoding, len(a), a.dtype
('vortex.primitive', 3, i64?)
>>> a.to_arrow().to_pylist()
[1, 2, None]
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from . import dtype as dt
from ._errors import (
    ColumnNotFoundError,
    LimitExceededError,
    MalformedStreamError,
    UnsupportedError,
    VortexIPCError,
)
from ._limits import DEFAULT_LIMITS, ReaderLimits

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from ._stats import ArrayStats

__all__ = [
    "Array",
    "Encoding",
    "ArrayParts",
    "register_encoding",
    "get_encoding",
    "registered_encodings",
    "typed_view",
    "EMPTY_BUFFER",
]

EMPTY_BUFFER = np.zeros(0, dtype=np.uint8)

_T = TypeVar("_T")
_E = TypeVar("_E", bound="Encoding | type[Encoding]")
_NO_META: Any = object()  # Array(meta=...) not given: parsed from the bytes when first used


# -- registry -------------------------------------------------------------------------

_REGISTRY: dict[str, Encoding] = {}


def register_encoding(encoding: _E, *, replace: bool = False) -> _E:
    """Register an encoding (class or instance) under its ``id``; returns its argument,
    so it is usable as a class decorator and ``X = register_encoding(XEncoding())`` keeps
    ``X``'s own type.

    Registering an ID twice is an error unless ``replace=True``.
    """
    inst = encoding() if isinstance(encoding, type) else encoding
    if not inst.id:
        raise ValueError("an encoding needs a non-empty id")
    if inst.id in _REGISTRY and not replace and type(_REGISTRY[inst.id]) is not type(inst):
        raise ValueError(f"encoding {inst.id!r} is already registered")
    _REGISTRY[inst.id] = inst
    return encoding


@functools.cache
def _takes_string_view(fn: Callable[..., Any]) -> bool:
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False
    return any(p.name == "string_view" or p.kind is p.VAR_KEYWORD for p in ps)


def arrow_hook(hook: Callable[..., Any], *args: Any) -> Any:
    """``hook(*args, string_view=True)`` for an encoding's ``to_arrow`` / ``take_arrow``;
    for one written without that parameter, its output with strings cast to views."""
    if _takes_string_view(getattr(hook, "__func__", hook)):
        return hook(*args, string_view=True)
    out = hook(*args)
    if out is None:
        return None
    from ._arrow import with_views

    return with_views(out)


def get_encoding(encoding_id: str) -> Encoding:
    """The registered encoding for an ID; ``UnsupportedError`` naming it if there is none.

    An ID nobody registered yet is looked up among the installed plugins: the entry points
    of the group ``vortex_io.encodings`` (name: the encoding ID, value: the module, or
    ``module:EncodingClass``, that registers it), loaded on first use.
    """
    try:
        return _REGISTRY[encoding_id]
    except KeyError:
        _ensure_builtins()
        if encoding_id not in _REGISTRY:
            load_plugin(encoding_id)
        try:
            return _REGISTRY[encoding_id]
        except KeyError:
            raise UnsupportedError(f"unsupported encoding {encoding_id!r}") from None


def registered_encodings() -> list[str]:
    """IDs of every registered encoding (the installed plugins' included, loaded here)."""
    _ensure_builtins()
    for name in list(_plugins()):
        load_plugin(name)
    return sorted(_REGISTRY)


def _ensure_builtins() -> None:
    from . import encodings  # noqa: F401  (registers the built-in encodings)


#: the entry points of group "vortex_io.encodings" not loaded yet, by name (None: not read)
_PLUGINS: dict[str, Any] | None = None
PLUGIN_GROUP = "vortex_io.encodings"
#: the plugins that failed to import, with the error each raised
_PLUGIN_ERRORS: dict[str, str] = {}


def _plugins() -> dict[str, Any]:
    global _PLUGINS
    if _PLUGINS is None:
        from importlib.metadata import entry_points

        try:
            eps: Any = entry_points(group=PLUGIN_GROUP)
        except Exception:  # pragma: no cover - broken metadata of some installed package
            eps = ()
        _PLUGINS = {ep.name: ep for ep in eps}
    return _PLUGINS


def load_plugin(encoding_id: str) -> bool:
    """Import the installed plugin named ``encoding_id`` (once); False when there is none.

    The entry point's module registers its encoding (and its compression scheme) on import;
    when the entry point names an ``Encoding`` class or instance that is not registered
    yet, it is registered here. A plugin that fails to import raises ``UnsupportedError``
    naming it.
    """
    failed = _PLUGIN_ERRORS.get(encoding_id)
    if failed is not None:  # the same error every time, not "unsupported" the second time
        raise UnsupportedError(failed)
    ep = _plugins().pop(encoding_id, None)
    if ep is None:
        return False
    try:
        obj = ep.load()
    except Exception as e:
        msg = (f"encoding {encoding_id!r}: its plugin {ep.value!r} failed to load: "
               f"{type(e).__name__}: {e}")
        _PLUGIN_ERRORS[encoding_id] = msg
        raise UnsupportedError(msg) from e
    if encoding_id not in _REGISTRY and (
            isinstance(obj, Encoding) or (isinstance(obj, type) and issubclass(obj, Encoding))):
        register_encoding(obj)
    return True


# -- aligned typed views ---------------------------------------------------------------


def typed_view(buf: np.ndarray, np_dtype: np.dtype, count: int, what: str) -> np.ndarray:
    """``count`` values of ``np_dtype`` from the start of a byte buffer.

    Checks the buffer is long enough (``MalformedStreamError`` otherwise) and copies it
    into aligned memory only when it is misaligned.
    """
    size = np_dtype.itemsize
    need = count * size
    if count < 0 or buf.nbytes < need:
        raise MalformedStreamError(
            f"{what}: buffer of {buf.nbytes} bytes is too short for {count} x {np_dtype}"
        )
    raw = buf[:need]
    out = raw.view(np_dtype)
    if not out.flags.aligned:  # (cheaper than reading raw.ctypes.data)
        out = raw.copy().view(np_dtype)  # numpy allocations are at least 16-byte aligned
    return out


# -- the node -------------------------------------------------------------------------


class Array:
    """One node of an encoding tree: dtype, length, encoding, metadata, buffers, children.

    Build arrays with ``vortex_io.array(obj)`` (from Arrow, numpy or Python lists) or read
    them from a stream. ``encoding`` is the wire ID; ``to_arrow()`` decodes.

    An encoding's constructor functions build nodes with ``Array(encoding, dtype, length,
    metadata=raw, buffers=..., children=..., meta=parsed)``: ``meta`` is the typed form of
    the ``metadata`` bytes (what ``Encoding.parse_metadata`` would return), given when the
    builder has it so it is never parsed back; without it ``array.meta`` parses on first use.
    """

    __slots__ = (
        "__weakref__",
        "_cache",
        "_enc",
        "_len",
        "_stats",
        "buffers",
        "children",
        "dtype",
        "metadata",
    )

    def __init__(
        self,
        encoding: Encoding | str,
        dtype: dt.DType,
        length: int,
        *,
        metadata: bytes = b"",
        buffers: Sequence[np.ndarray] = (),
        children: Sequence[Array] | LazyChildren = (),
        stats: ArrayStats | None = None,
        meta: Any = _NO_META,
    ) -> None:
        self._enc = get_encoding(encoding) if isinstance(encoding, str) else encoding
        self.dtype = dtype
        self._len = length if type(length) is int else int(length)
        self.metadata = metadata if type(metadata) is bytes else bytes(metadata)
        self.buffers = buffers if type(buffers) is tuple else tuple(buffers)
        self.children = (children if type(children) is tuple or type(children) is LazyChildren
                         else tuple(children))
        self._stats = stats
        self._cache: dict[str, Any] = {} if meta is _NO_META else {"meta": meta}

    # -- identity --------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        """The encoding ID, e.g. ``"vortex.primitive"`` or ``"fastlanes.bitpacked"``."""
        return self._enc.id

    @property
    def vtable(self) -> Encoding:
        """The ``Encoding`` object implementing this node."""
        return self._enc

    def __len__(self) -> int:
        return self._len

    @property
    def is_canonical(self) -> bool:
        return self._enc.canonical

    @property
    def meta(self) -> Any:
        """The parsed encoding metadata (cached)."""
        try:
            return self._cache["meta"]
        except KeyError:
            m = self._enc.parse_metadata(self.metadata, self.dtype, self._len)
            self._cache["meta"] = m
            return m

    @property
    def limits(self) -> ReaderLimits:
        """The ``ReaderLimits`` this node was read under (``DEFAULT_LIMITS`` for a node built
        in memory); decoders check what they materialize against them."""
        return self._cache.get("limits", DEFAULT_LIMITS)

    def memo(self, key: str, compute: Callable[[], _T]) -> _T:
        """A value derived from this node, computed once: ``compute()`` on the first call
        for ``key``, the same object afterwards. Encodings keep what their ``validate``
        checked (typed offsets, a parsed fill value...) here rather than derive it again in
        every kernel. Keys are per node; ``"meta"``, ``"canonical"`` and ``"limits"`` are
        the core's.

        >>> import vortex_io as vio
        >>> a = vio.array([1, 2, 3])
        >>> a.memo("total", lambda: sum(a.to_pylist())), a.memo("total", lambda: 0)
        (6, 6)
        """
        try:
            return self._cache[key]
        except KeyError:
            v = self._cache[key] = compute()
            return v

    @property
    def cached_canonical(self) -> Array | None:
        """The canonical array if this node was decoded already (by ``canonical()``), else
        None: kernels use it to skip work that decoding made moot."""
        return self if self._enc.canonical else self._cache.get("canonical")

    @property
    def stats(self) -> ArrayStats:
        """Statistics carried with the array (possibly empty)."""
        if self._stats is None:
            from ._stats import ArrayStats

            self._stats = ArrayStats()
        return self._stats

    @property
    def nbytes(self) -> int:
        """Bytes of all buffers in this tree (the encoded size, without headers)."""
        return sum(b.nbytes for b in self.buffers) + sum(c.nbytes for c in self.children)

    # -- decoding --------------------------------------------------------------------
    def canonical(self) -> Array:
        """This array in a canonical encoding (cached)."""
        if self._enc.canonical:
            return self
        try:
            return self._cache["canonical"]
        except KeyError:
            origin = self._cache.get("origin")
            try:
                c = self._enc.canonicalize(self)
            except VortexIPCError as e:
                if origin is None:
                    raise
                raise e.locate(**origin) from None
            self._cache["canonical"] = c
            return c

    def located(self, *, message_index: int, offset: int, source: str | None) -> Array:
        """Mark this array as the one a stream's message ``message_index`` (at byte
        ``offset`` of ``source``) holds: an error decoding it is located there, as a
        batch's are (what ``read_ipc`` / ``StreamReader.read_all`` chunks carry).
        Returns ``self``."""
        self._cache["origin"] = {"message_index": message_index, "offset": offset,
                                 "source": source}
        return self

    def to_arrow(self, *, string_view: bool = False) -> pa.Array | pa.ChunkedArray:
        """Decode to a ``pyarrow.Array`` (``ChunkedArray`` for a chunked array).

        The Arrow type follows the dtype (``dtype.to_arrow()``); struct arrays give
        ``StructArray``. Canonical buffers are handed to Arrow without copying.
        ``string_view=True`` decodes strings and binary, at any depth, to Arrow
        ``string_view`` / ``binary_view`` (Polars' and DuckDB's own layout).
        """
        origin = self._cache.get("origin")
        try:
            if not string_view:
                return self._enc.to_arrow(self)
            return arrow_hook(self._enc.to_arrow, self)
        except VortexIPCError as e:
            if origin is None:
                raise
            raise e.locate(**origin) from None

    def to_numpy(self, *, zero_copy_only: bool = False) -> np.ndarray:
        """Decode to numpy (nulls follow ``pyarrow.Array.to_numpy`` conventions)."""
        a = self.to_arrow()
        if hasattr(a, "combine_chunks"):
            a = a.combine_chunks()
        return a.to_numpy(zero_copy_only=zero_copy_only)

    def to_pylist(self) -> list[Any]:
        return self.to_arrow().to_pylist()

    def __arrow_c_array__(self, requested_schema: Any = None) -> Any:
        a = self.to_arrow()
        if hasattr(a, "combine_chunks"):
            a = a.combine_chunks()
        return a.__arrow_c_array__(requested_schema)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        import pyarrow as pa

        a = self.to_arrow()
        chunks = a.chunks if isinstance(a, pa.ChunkedArray) else [a]
        if isinstance(self.dtype, dt.Struct) and not self.dtype.nullable:
            batches = [pa.RecordBatch.from_struct_array(c) for c in chunks]
            schema = pa.schema([pa.field(f.name, f.type, f.nullable) for f in a.type])
            rdr = pa.RecordBatchReader.from_batches(schema, batches)
        else:
            rdr = pa.RecordBatchReader.from_batches(
                pa.schema([pa.field("values", a.type)]),
                [pa.record_batch([c], names=["values"]) for c in chunks],
            )
        return rdr.__arrow_c_stream__(requested_schema)

    # -- navigation ------------------------------------------------------------------
    def field(self, name: str) -> Array:
        """A field of a struct array (without the struct's own validity);
        ``vortex_io.ColumnNotFoundError`` (a ``KeyError``) for a name it does not have."""
        if not isinstance(self.dtype, dt.Struct):
            raise TypeError(f"field() needs a struct array, not {self.dtype!r}")
        if name not in self.dtype.names:
            raise ColumnNotFoundError(name, self.dtype.names)
        return self._enc.struct_field(self, name)

    def slice(self, start: int, stop: int) -> Array:
        """Rows ``[start, stop)``: a cheap view where the encoding allows."""
        start, stop, _ = slice(start, stop).indices(self._len)
        stop = max(start, stop)
        if start == 0 and stop == self._len:
            return self
        out = self._enc.slice(self, start, stop)
        lim = self._cache.get("limits")
        if lim is not None:  # a slice decodes under the limits its array was read with
            out._cache.setdefault("limits", lim)
        return out

    # -- display ---------------------------------------------------------------------
    def tree(self, indent: str = "") -> str:
        """The encoding tree, one node a line, with dtypes, lengths and buffer sizes."""
        own = sum(b.nbytes for b in self.buffers)
        extra = self._enc.describe(self)
        line = (
            f"{indent}{self.encoding}({self.dtype!r}, len={self._len}"
            + (f", {extra}" if extra else "")
            + f") {own} B own, {self.nbytes} B total"
        )
        lines = [line]
        for name, c in zip(self._enc.child_names(self), self.children):
            lines.append(f"{indent}  {name}: " + c.tree(indent + "  ").lstrip())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<vortex_io.Array {self.tree()}>"

    def _repr_html_(self) -> str:
        import html

        return (
            f"<b>vortex_io.Array</b> {html.escape(repr(self.dtype))}, {self._len} rows, "
            f"{self.nbytes:,} bytes encoded<pre>{html.escape(self.tree())}</pre>"
        )


# -- deserialization parts ---------------------------------------------------------------


def canonicalized_nbytes(a: Array) -> int:
    """Bytes of the canonical forms cached on ``a`` and on every node of its tree built so
    far (lazy children never used are not built for this): what decoding ``a`` has
    materialized, for a scan's statistics. Scratch decodes (``compute._numeric.decoded``)
    are not cached, so not counted."""
    total = 0
    seen: set[int] = set()
    stack = [a]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        c = x._cache.get("canonical")
        if c is not None:
            total += c.nbytes
        kids = x.children
        if isinstance(kids, LazyChildren):
            stack.extend(k for k in kids._built if k is not None)
        else:
            stack.extend(kids)
    return total


class LazyChildren:
    """The children of a node read off the wire, each built from the header when first
    used. Readers that ask for it (a scan) give a message's root struct these: a batch the
    statistics prune, or a projection, never builds the other columns (and so never checks
    them either: their errors surface when, and only if, they are used)."""

    __slots__ = ("_built", "_parts", "_specs")

    def __init__(self, parts: ArrayParts, specs: Sequence[tuple[dt.DType, int]]) -> None:
        self._parts = parts
        self._specs = list(specs)
        self._built: list[Array | None] = [None] * len(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self._specs))))
        n = len(self._specs)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("child index out of range")
        c = self._built[i]
        if c is None:
            d, length = self._specs[i]
            c = self._built[i] = self._parts.child(i, d, length)
        return c

    def __iter__(self) -> Iterator[Array]:
        return (self[i] for i in range(len(self._specs)))

    def __repr__(self) -> str:
        return f"LazyChildren({sum(c is not None for c in self._built)}/{len(self._specs)} built)"


class ArrayParts:
    """What a node carries on the wire, handed to ``Encoding.build`` during decoding."""

    __slots__ = ("_builder", "_children", "buffers", "depth", "encoding_id", "lazy", "limits",
                 "metadata", "nchildren", "stats")

    def __init__(self, encoding_id, metadata, buffers, children, builder, stats, depth,
                 limits: ReaderLimits | None = None) -> None:
        self.encoding_id = encoding_id
        self.metadata = metadata
        self.buffers = buffers
        self._children = children
        self._builder = builder
        self.stats = stats
        self.depth = depth
        #: how many children the node has on the wire
        self.nchildren = len(children)
        #: the reader's limits (``DEFAULT_LIMITS`` for a builder without any)
        self.limits: ReaderLimits = (limits if limits is not None
                                     else getattr(builder, "limits", DEFAULT_LIMITS))
        #: build the children on first use (``LazyChildren``) rather than now
        self.lazy = False

    def child(self, i: int, dtype: dt.DType, length: int) -> Array:
        """Decode child ``i`` with the dtype and length its parent derived for it."""
        if not 0 <= i < len(self._children):
            raise MalformedStreamError(
                f"{self.encoding_id}: child {i} is missing ({len(self._children)} present)"
            )
        if length < 0:
            raise MalformedStreamError(f"{self.encoding_id}: child {i} has negative length")
        return self._builder(self._children[i], dtype, length, self.depth + 1)


# -- encodings ---------------------------------------------------------------------------


class Encoding:
    """What an encoding ID means: how to read, validate, decode and describe its nodes.

    Subclass it, set ``id``, implement ``child_specs`` (the dtype and length of each
    child, derived from the node) and ``canonicalize`` or ``to_arrow``, then
    ``register_encoding`` it.
    """

    id: ClassVar[str] = ""
    canonical: ClassVar[bool] = False
    #: required alignment exponent of each buffer (None: the encoding decides per node)
    buffer_alignment: ClassVar[int] = 0

    # -- reading ---------------------------------------------------------------------
    def parse_metadata(self, raw: bytes, dtype: dt.DType, length: int) -> Any:
        """Parse (and validate) the metadata bytes; the result is cached as ``array.meta``."""
        return None

    def check_dtype(self, dtype: dt.DType) -> None:
        """Raise ``MalformedStreamError`` if this encoding cannot hold ``dtype``."""

    def child_specs(
        self, dtype: dt.DType, length: int, meta: Any, parts: ArrayParts
    ) -> list[tuple[dt.DType, int]]:
        """(dtype, length) of each child present in ``parts``, in wire order."""
        if parts.nchildren:
            raise MalformedStreamError(f"{self.id} takes no children, got {parts.nchildren}")
        return []

    def nbuffers(self, dtype: dt.DType, meta: Any) -> tuple[int, int]:
        """(min, max) number of buffers a node may carry."""
        return (0, 0)

    def build(self, parts: ArrayParts, dtype: dt.DType, length: int) -> Array:
        """Build a node read off the wire. The default covers most encodings."""
        meta = _parsed_metadata(self, parts.metadata, dtype, length)
        lo, hi = self.nbuffers(dtype, meta)
        nb = len(parts.buffers)
        if not lo <= nb <= hi:
            want = str(lo) if lo == hi else f"{lo}..{hi}"
            raise MalformedStreamError(f"{self.id} takes {want} buffers, got {nb}")
        specs = self.child_specs(dtype, length, meta, parts)
        if len(specs) != parts.nchildren:
            raise MalformedStreamError(
                f"{self.id} has {parts.nchildren} children, expected {len(specs)}"
            )
        children = (LazyChildren(parts, specs) if parts.lazy
                    else [parts.child(i, d, n) for i, (d, n) in enumerate(specs)])
        arr = Array(self, dtype, length, metadata=parts.metadata, buffers=parts.buffers,
                    children=children, stats=parts.stats, meta=meta)
        self.validate(arr, parts.limits)
        return arr

    def validate(self, arr: Array, limits: ReaderLimits) -> None:
        """Check buffers against metadata, dtype and length (cheap: no decoding)."""

    # -- writing ---------------------------------------------------------------------
    def buffer_alignments(self, arr: Array) -> list[int]:
        """Alignment exponent of each buffer, as declared on the wire."""
        return [self.buffer_alignment] * len(arr.buffers)

    # -- decoding --------------------------------------------------------------------
    def canonicalize(self, arr: Array) -> Array:
        """Decode to a canonical array. The default goes through Arrow."""
        from ._arrow import from_arrow

        return from_arrow(self.to_arrow(arr), dtype=arr.dtype)

    def to_arrow(self, arr: Array, *, string_view: bool = False) -> Any:
        """``arr`` as a pyarrow array of ``arr.dtype.to_arrow(string_view=string_view)``;
        pass ``string_view`` on to the children decoded on the way. (An encoding whose
        ``to_arrow`` takes no ``string_view`` still works: the core casts its output.)"""
        if type(self).canonicalize is Encoding.canonicalize:
            raise NotImplementedError(f"{self.id} implements neither canonicalize nor to_arrow")
        return arr.canonical().to_arrow(string_view=string_view)

    def slice(self, arr: Array, start: int, stop: int) -> Array:
        """Rows ``[start, stop)``; encodings override this with cheap views."""
        return arr.canonical().slice(start, stop)

    def struct_field(self, arr: Array, name: str) -> Array:
        return arr.canonical().field(name)

    # -- compute kernels (vortex_io.compute dispatches here; NotImplemented = fallback) ----
    def compare(self, arr: Array, value: Any, op: str) -> Any:
        """Compare with a literal already coerced to the dtype's storage domain.

        Return ``(values, validity)`` numpy bool arrays (validity None = all valid), or
        ``NotImplemented`` to let the canonical fallback run.
        """
        return NotImplemented

    def is_in(self, arr: Array, values: list[Any]) -> Any:
        """Membership in coerced literal values; ``(values, validity)`` or NotImplemented."""
        return NotImplemented

    def take(self, arr: Array, indices: np.ndarray) -> Any:
        """Rows at sorted or unsorted int64 ``indices`` as an Array (ideally still
        encoded), or NotImplemented."""
        return NotImplemented

    def take_values(self, arr: Array, indices: np.ndarray) -> Any:
        """Rows at in-range int64 ``indices`` of a node of a primitive dtype, decoded
        straight to numpy: ``(values, validity mask or None)`` with the values in the
        dtype's numpy type (possibly read-only); or NotImplemented. Where ``take`` keeps
        the encoding (for later kernels), this is the path to output: no node is built
        per level (see ``vortex_io.compute._kernels.take_values``)."""
        return NotImplemented

    def validity(self, arr: Array) -> Any:
        """Numpy bool mask, True where valid (None: all valid), read without decoding the
        values where the encoding can; or NotImplemented (the kernels then decode and ask
        the canonical array). Every canonical encoding implements it."""
        return NotImplemented

    def int_bounds(self, arr: Array) -> tuple[int, int] | None:
        """(lo, hi) bounding every value of a non-empty node of an integer dtype (rows
        under nulls included) when the encoding knows them cheaply (bit width, reference,
        constant...), else None: lets comparisons with literals outside the bounds be
        answered without decoding."""
        return None

    def take_arrow(self, arr: Array, indices: np.ndarray, *, string_view: bool = False) -> Any:
        """Rows at in-range int64 ``indices`` of a node of a non-primitive dtype straight to
        a ``pyarrow.Array`` (the output path of a scan: a dictionary gathers its values by
        the taken codes), or None: the scan then takes and decodes (``take``).
        ``string_view`` as in ``to_arrow``."""
        return None

    # -- display ---------------------------------------------------------------------
    def describe(self, arr: Array) -> str:
        return ""

    def child_names(self, arr: Array) -> list[str]:
        return [f"child{i}" for i in range(len(arr.children))]

    def __repr__(self) -> str:
        return f"<Encoding {self.id}>"


#: parsed metadata by (encoding, raw bytes, dtype, length): the messages of a stream repeat
#: the same metadata node after node, and parsing it is a good part of the per-node cost
_META_CACHE: dict[tuple[Any, ...], Any] = {}
_META_CACHE_MAX = 4096
_MISSING = object()


def _parsed_metadata(enc: Encoding, raw: bytes, dtype: dt.DType, length: int) -> Any:
    """``enc.check_dtype(dtype)`` then ``enc.parse_metadata(raw, dtype, length)``, served
    from a cache when the same arguments were parsed before.

    ``parse_metadata`` is a function of its arguments; only hashable results (ints, enums,
    tuples, frozen dataclasses: values nobody can mutate) are cached, so an encoding
    returning a mutable object simply parses every time.
    """
    if not raw:  # nothing to parse (and not worth hashing a struct dtype for)
        enc.check_dtype(dtype)
        return enc.parse_metadata(raw, dtype, length)
    key = (enc, raw, dtype, length)
    meta = _META_CACHE.get(key, _MISSING)
    if meta is _MISSING:
        enc.check_dtype(dtype)
        meta = enc.parse_metadata(raw, dtype, length)
        try:
            hash(meta)
        except TypeError:
            return meta
        if len(_META_CACHE) >= _META_CACHE_MAX:
            _META_CACHE.clear()
        _META_CACHE[key] = meta
    return meta


def check_decoded_size(nbytes: int, what: str, limits: ReaderLimits = DEFAULT_LIMITS) -> None:
    """Refuse to materialize more than ``limits.max_decoded_bytes``."""
    if nbytes > limits.max_decoded_bytes:
        raise LimitExceededError(
            f"{what} would decode to {nbytes} bytes, over the limit of {limits.max_decoded_bytes}"
        )
