"""The compressor entry point used by ``write_ipc(compress=True)``.

``compress(array, encodings=...)`` prepares one chunk for writing: it attaches statistics
(min, max, null count) to every column — readers use them to prune chunks — and applies
any encoding forced per column (``encodings={"city": "vortex_io.inverted_index"}``).
Encoders are registered by encoding ID with ``register_encoder``; a forced ID without an
encoder is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .. import dtype as dt
from ..array import Array

__all__ = ["compress", "register_encoder", "encoder_for"]

_ENCODERS: dict[str, Callable[[Array], Array]] = {}


def register_encoder(encoding_id: str, fn: Callable[[Array], Array]) -> None:
    """Make ``fn`` (canonical array -> encoded array) the encoder for ``encoding_id``."""
    _ENCODERS[encoding_id] = fn


def encoder_for(encoding_id: str) -> Callable[[Array], Array]:
    if encoding_id not in _ENCODERS:
        from ..encodings import inverted_index  # noqa: F401  (registers its encoder)
    try:
        return _ENCODERS[encoding_id]
    except KeyError:
        raise ValueError(
            f"no encoder for {encoding_id!r}; known: {sorted(_ENCODERS)}") from None


def compress(array: Array, *, encodings: Mapping[str, str] | None = None) -> Array:
    """Prepare ``array`` for writing: statistics attached, forced encodings applied."""
    from ..encodings.struct_ import StructEncoding, struct_array
    from .stats import with_stats

    array = with_stats(array)
    if not encodings:
        return array
    if not isinstance(array.dtype, dt.Struct) or array.encoding != "vortex.struct":
        raise ValueError("per-column encodings need a table (struct) stream")
    unknown = set(encodings) - set(array.dtype.names)
    if unknown:
        raise KeyError(f"encodings name unknown columns {sorted(unknown)}")
    validity, fields = StructEncoding.split(array)
    out = []
    for name, f in zip(array.dtype.names, fields):
        enc = encodings.get(name)
        if enc is not None and f.encoding != enc:
            st = f._stats
            f = encoder_for(enc)(f)
            if f._stats is None:
                f._stats = st
        out.append(f)
    return struct_array(array.dtype, len(array), out, validity)
