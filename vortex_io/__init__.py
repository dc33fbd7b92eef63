"""vortex_io: Vortex IPC streams in Python.

Read and write Vortex IPC streams byte-compatibly with ``vortex-data`` 0.93, with
per-message custom metadata, a sans-IO decoder, and an Arrow bridge.

>>> import io, pyarrow as pa, vortex_io as vio
>>> table = pa.table({"symbol": ["AAPL", "MSFT", None], "price": [1.5, 2.25, 3.0]})
>>> buf = io.BytesIO()
>>> _ = vio.write_ipc(buf, table, metadata={"source": "doctest"})
>>> with vio.StreamReader(buf.getvalue()) as r:
...     r.read_arrow().equals(table)
True
>>> vio.read_table(buf.getvalue(), columns=["price"]).column("price").to_pylist()
[1.5, 2.25, 3.0]
"""

from typing import Any

from . import compute, dtype, expr, integrity, transcode
from . import encodings as encodings
from ._array import Array, Encoding, get_encoding, register_encoding, registered_encodings
from ._compress import CompressOptions, compress
from ._errors import (
    ColumnNotFoundError,
    IntegrityError,
    LimitExceededError,
    MalformedStreamError,
    TruncatedStreamError,
    TypeMismatchError,
    UnsupportedError,
    VortexIPCError,
)
from ._ipc import (
    AsyncStreamReader,
    AsyncStreamWriter,
    Batch,
    MessageDecoder,
    MessageEncoder,
    StreamReader,
    StreamWriter,
    read_ipc,
    write_ipc,
)
from ._limits import ReaderLimits
from ._metadata import Metadata
from ._scalar import Scalar
from ._scan import Scan, ScanStats, expand_sources, message_spans, read_table, scan
from ._stats import ArrayStats
from ._versions import show_versions

__version__ = "0.1.0"

__all__ = [
    "Array",
    "ArrayStats",
    "CompressOptions",
    "AsyncStreamReader",
    "AsyncStreamWriter",
    "Batch",
    "ColumnNotFoundError",
    "Encoding",
    "IntegrityError",
    "LimitExceededError",
    "MalformedStreamError",
    "MessageDecoder",
    "MessageEncoder",
    "Metadata",
    "ReaderLimits",
    "Scalar",
    "Scan",
    "ScanStats",
    "StreamReader",
    "StreamWriter",
    "TruncatedStreamError",
    "TypeMismatchError",
    "UnsupportedError",
    "VortexIPCError",
    "array",
    "compress",
    "compute",
    "dtype",
    "encodings",
    "expand_sources",
    "expr",
    "get_encoding",
    "integrity",
    "message_spans",
    "read_ipc",
    "read_table",
    "register_encoding",
    "register_polars",
    "register_duckdb",
    "registered_encodings",
    "scan",
    "show_versions",
    "transcode",
    "write_ipc",
]


def array(obj, dtype=None) -> Array:
    """A Vortex array from Arrow data, numpy arrays, Python lists, or objects exporting
    ``__arrow_c_array__`` / ``__arrow_c_stream__``.

    >>> import vortex_io as vio
    >>> vio.array([1, 2, 3]).encoding
    'vortex.primitive'
    >>> vio.array(["a", "b"]).dtype
    utf8?
    """
    import numpy as np
    import pyarrow as pa

    from ._arrow import from_arrow

    if isinstance(obj, Array):
        return obj
    d = dtype if dtype is None or isinstance(dtype, dtype_mod.DType) else dtype_mod.from_arrow(dtype)
    if isinstance(obj, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        return from_arrow(obj, d)
    if isinstance(obj, np.ndarray):
        return from_arrow(pa.array(obj), d)
    if hasattr(obj, "__arrow_c_stream__") and not hasattr(obj, "__arrow_c_array__"):
        return from_arrow(pa.RecordBatchReader.from_stream(obj).read_all(), d)
    if hasattr(obj, "__arrow_c_array__"):
        return from_arrow(pa.array(obj), d)
    if hasattr(obj, "__arrow_c_stream__"):
        return from_arrow(pa.RecordBatchReader.from_stream(obj).read_all(), d)
    return from_arrow(pa.array(obj, type=d.to_arrow() if d is not None else None), d)


dtype_mod = dtype


def register_polars() -> None:
    """Add ``pl.scan_vortex_ipc``, ``pl.read_vortex_ipc``, ``DataFrame.vortex.write_ipc`` and
    ``LazyFrame.vortex.sink_ipc`` to Polars (idempotent; see
    ``vortex_io.integrations.polars_plugin``). Polars is imported only here:
    ``pip install 'vortex-io[polars]'``."""
    from .integrations.polars_plugin import register

    return register()


def register_duckdb(con: Any, **kwargs: Any) -> Any:
    """Make the table function ``vortex_ipc(source)`` available on the DuckDB connection
    ``con`` and its cursors (see ``vortex_io.integrations.duckdb_ext.register``); returns
    ``con``. DuckDB is imported only here: ``pip install 'vortex-io[duckdb]'``."""
    from .integrations.duckdb_ext import register

    return register(con, **kwargs)

