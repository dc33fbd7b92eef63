"""Encodings, one module each, registered by ID on import; and the toolkit for writing one.

Canonical: ``vortex.null``, ``vortex.bool``, ``vortex.primitive``, ``vortex.decimal``,
``vortex.varbin``, ``vortex.varbinview``, ``vortex.struct``, ``vortex.list``,
``vortex.listview``, ``vortex.fixed_size_list``, ``vortex.ext``; structural:
``vortex.constant``, ``vortex.chunked``, ``vortex.masked``.

**Writing an encoding** takes only the names exported here (the built-ins use the same):

- subclass ``Encoding``, give it an ``id``, implement ``child_specs`` (the dtype and length
  of each child, from an ``ArrayParts``) and ``canonicalize`` or ``to_arrow``; optionally
  ``parse_metadata`` / ``validate`` (bad input raises ``MalformedStreamError``), the compute
  hooks (``compare``, ``is_in``, ``take``, ``take_values``, ``validity``, ``int_bounds``) and
  ``slice``; then ``register_encoding`` it;
- build its nodes with ``Array(encoding, dtype, length, metadata=..., buffers=...,
  children=..., meta=parsed)``; metadata bytes with ``ProtoWriter`` / ``parse_proto``;
  children with ``primitive_array``, ``bool_array``, ``validity_child`` and read them back
  with ``canonical_ints``, ``validity_mask``; keep what ``validate`` derived with
  ``Array.memo``;
- to let the compressor choose it, ``register_scheme(Scheme(id, kinds, estimate, encode))``:
  ``estimate`` reads the chunk's ``Facts`` and prices children with the cost models
  (``int_cost``, ``packed_cost``, ``codes_cost``, ``NODE_COST``...);
- to be found by ID without an import, publish it as an entry point of the group
  ``vortex_io.encodings`` (name: the ID).

``vortex_io.encodings.inverted_index`` is the worked example (not part of the core: it is
found through this project's own entry point); ``tests/test_user_encoding.py`` defines
another one from scratch.
"""

from .._array import Array, ArrayParts, Encoding, get_encoding, register_encoding
from .._errors import MalformedStreamError
from .._proto import ProtoWriter
from .._proto import parse as parse_proto
from . import (  # noqa: F401  (import registers)
    _alp,
    _alprd,
    _bitpacked,
    _bool,
    _bytebool,
    _chunked,
    _constant,
    _datetimeparts,
    _decimal,
    _decimal_byte_parts,
    _delta,
    _dict,
    _ext,
    _fixed_size_list,
    _for,
    _fsst,
    _list,
    _listview,
    _masked,
    _null,
    _onpair,
    _primitive,
    _rle,
    _runend,
    _sequence,
    _sparse,
    _struct,
    _varbin,
    _varbinview,
    _zigzag,
    _zstd,
)
from ._bool import bool_array
from ._common import canonical_ints, validity_child, validity_mask, validity_spec
from ._primitive import primitive_array, primitive_values
from ._scheme import (
    NODE_COST,
    Facts,
    Scheme,
    Trial,
    codes_cost,
    int_cost,
    packed_cost,
    register_scheme,
    registered_schemes,
    unregister_scheme,
    value_kind,
)
from ._varbin import varbin_array

__all__ = [
    "NODE_COST",
    "Array",
    "ArrayParts",
    "Encoding",
    "Facts",
    "MalformedStreamError",
    "ProtoWriter",
    "Scheme",
    "Trial",
    "bool_array",
    "canonical_ints",
    "codes_cost",
    "get_encoding",
    "int_cost",
    "packed_cost",
    "parse_proto",
    "primitive_array",
    "primitive_values",
    "register_encoding",
    "register_scheme",
    "registered_schemes",
    "unregister_scheme",
    "validity_child",
    "validity_mask",
    "validity_spec",
    "value_kind",
    "varbin_array",
]
