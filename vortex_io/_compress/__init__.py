"""The compressor used by ``write_ipc(compress=True)``: ``vortex_io.compress(array, ...)``.

Per chunk and per column it samples the data, estimates candidate encodings (dictionary,
FoR + bit-packing, delta, run-end, sparse, sequence, constant, ALP / ALP-RD, FSST,
datetime parts, decimal byte parts) on the sample, encodes the column with the smallest,
and cascades into the chosen encoding's children (bounded depth). Output is deterministic
for the same input and options, and readable by vortex-data 0.93.

It also attaches statistics (min, max, null count) to every column, which readers use to
prune chunks.

Per-column control with ``encodings``: a string forces that encoding
(``{"city": "vortex_io.inverted_index"}``), a collection of IDs restricts the search to
them (``{"price": ["vortex.alp"]}``), and an empty collection keeps the column canonical.

``CompressOptions(compact=True)`` (also ``write_ipc(..., compress=CompressOptions(...))``)
lets the search use ``vortex.zstd`` (entropy coding) where it wins: dictionary codes, narrow
integer parts, strings without a useful dictionary; and ``vortex.onpair`` for long text.
Streams get smaller (on the bench datasets well below Parquet + zstd), encoding gets slower
on text, and reading them back with vortex_io needs the optional ``zstandard`` package
(vortex-data always reads them). Like vortex-data's ``with_compact``, it is off by default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, cast

from .. import dtype as dt
from .._array import Array
from .._errors import ColumnNotFoundError, UnsupportedError, VortexIPCError
from ..encodings._scheme import named_scheme
from .compressor import CompressOptions, CompressSession, compress_array, scheme_names

__all__ = ["compress", "encoder_for", "CompressOptions", "CompressSession", "scheme_names",
           "compress_array"]


def encoder_for(encoding_id: str, options: CompressOptions | None = None
                ) -> Callable[[Array], Array]:
    """The encoder used when a column is forced to ``encoding_id``: its registered scheme
    (``vortex_io.encodings.register_scheme``; an installed plugin of that ID is loaded),
    the children compressed in turn. ``UnsupportedError`` naming the known IDs otherwise."""
    from .compressor import _Compressor

    if named_scheme(encoding_id) is None:
        raise UnsupportedError(f"no encoder for {encoding_id!r}; known: {sorted(scheme_names())}")
    opts = options or CompressOptions()
    return lambda a: _Compressor(opts).force(a, encoding_id)


def _forced(name: str, encoding_id: str, a: Array) -> Array:
    """Column ``name`` encoded with the forced ``encoding_id``; ``UnsupportedError`` naming
    both when that encoding cannot hold the column."""
    try:
        return encoder_for(encoding_id)(a)
    except VortexIPCError:
        raise
    except (TypeError, ValueError, KeyError, IndexError) as e:
        raise UnsupportedError(f"column {name!r}: {encoding_id} cannot encode {a.dtype!r} "
                               f"({e.args[0] if e.args else type(e).__name__})") from None


def compress(array: Array, *, encodings: Mapping[str, Any] | None = None,
             options: CompressOptions | None = None,
             session: CompressSession | None = None) -> Array:
    """Compress one chunk: statistics attached, encodings chosen per column.

    ``encodings`` maps column names to a forced encoding ID (str) or to the IDs the
    search may use (a list/set; empty = keep canonical). ``options`` tunes the search;
    a ``session`` shared by the chunks of a stream lets later chunks reuse earlier choices.

    >>> import numpy as np, vortex_io as vio
    >>> a = vio.compress(vio.array(np.repeat(np.arange(10), 1000)))
    >>> a.encoding in ("vortex.runend", "vortex.dict")
    True
    """
    from ..encodings._struct import StructEncoding, struct_array
    from .stats import with_stats

    opts = options or CompressOptions()
    array = with_stats(array)
    forced: dict[str, str] = {}
    per_column: dict[str, CompressOptions] = {}
    if encodings:
        if not isinstance(array.dtype, dt.Struct) or array.encoding != "vortex.struct":
            raise ValueError("per-column encodings need a table (struct) stream")
        for name in encodings:
            if name not in array.dtype.names:
                raise ColumnNotFoundError(name, array.dtype.names, context="encodings")
        for name, spec in encodings.items():
            if isinstance(spec, str):
                encoder_for(spec)  # fail early on an unknown ID
                forced[name] = spec
            else:
                ids = frozenset(spec)
                bad = {i for i in ids - set(scheme_names()) if named_scheme(i) is None}
                if bad:
                    raise UnsupportedError(f"unknown encodings {sorted(bad)} for column {name!r}")
                per_column[name] = dataclasses.replace(opts, allow=ids)
    out = compress_array(array, opts, per_column=per_column, session=session)
    if not forced:
        return out
    d = cast(dt.Struct, array.dtype)  # (forced encodings need a struct: checked above)
    validity, fields = StructEncoding.split(out)
    orig = dict(zip(d.names, StructEncoding.split(array)[1]))
    new = []
    for name, f in zip(d.names, fields):
        if name in forced and f.encoding != forced[name]:
            src = orig[name]
            f = _forced(name, forced[name], src)
            if f._stats is None:
                f._stats = src._stats
        new.append(f)
    return struct_array(d, len(array), new, validity)


