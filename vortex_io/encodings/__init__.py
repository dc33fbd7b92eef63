"""Encodings, one module each, registered by ID on import.

Canonical: ``vortex.null``, ``vortex.bool``, ``vortex.primitive``, ``vortex.decimal``,
``vortex.varbin``, ``vortex.varbinview``, ``vortex.struct``, ``vortex.list``,
``vortex.listview``, ``vortex.fixed_size_list``, ``vortex.ext``; structural:
``vortex.constant``, ``vortex.chunked``, ``vortex.masked``.

Add an encoding the way the built-ins do: subclass ``vortex_io.Encoding``, give it an
``id``, and call ``vortex_io.register_encoding``.
"""

from . import (  # noqa: F401  (import registers)
    alp,
    alprd,
    bitpacked,
    bool_,
    bytebool,
    chunked,
    constant,
    datetimeparts,
    decimal,
    decimal_byte_parts,
    delta,
    dict_,
    ext,
    fixed_size_list,
    for_,
    fsst,
    list_,
    listview,
    masked,
    null,
    onpair,
    primitive,
    rle,
    runend,
    sequence,
    sparse,
    struct_,
    varbin,
    varbinview,
    zigzag,
    zstd,
)
