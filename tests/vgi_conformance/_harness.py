"""What the vgi-rpc conformance harness's two ends share: the wrapper modes, the server, the
stdio transport of the worker process.

Imported by ``conftest.py`` (the client end, and the server end of the in-process pipe) and
by ``conformance_worker.py`` (the server end in a child process), so both build the same
server and wrap their transport the same way.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

#: How the transport is wrapped on both ends: ``plain`` is vgi-rpc's Arrow IPC as it is (the
#: baseline); the others put ``VortexTransport`` around the transport, so Vortex IPC crosses it.
MODES = ("plain", "vortex", "vortex-compressed")

#: Where the server runs: ``pipe`` on a thread of the test process over ``os.pipe()`` pairs,
#: ``subprocess`` in a child process over its stdin/stdout.
KINDS = ("pipe", "subprocess")

INTEGRATION = "vortex_io.integrations.vgi_rpc"


def vortex_transport_class() -> Any:
    """``VortexTransport`` (an import error fails the vortex modes: they never skip)."""
    return importlib.import_module(INTEGRATION).VortexTransport


def vortex_io_path() -> str:
    """The directory the imported ``vortex_io`` package lies in (for the worker's sys.path)."""
    import vortex_io

    return str(Path(vortex_io.__file__).resolve().parent.parent)


def wrap(transport: Any, mode: str) -> Any:
    """*transport* as the mode has it: itself, or inside a ``VortexTransport``."""
    if mode == "plain":
        return transport
    cls = vortex_transport_class()
    if mode == "vortex":
        return cls(transport)
    if mode == "vortex-compressed":
        return cls(transport, compress=True)
    raise ValueError(f"unknown wrapper mode {mode!r}")


def conformance_server(*, external_location: Any = None, describe: bool = True) -> Any:
    """The conformance worker's server, as vgi-rpc's own conformance worker builds it.

    ``ConformanceService`` with ``conformance.Secondary.v1`` hosted beside it (every
    conformance worker hosts it), ``__describe__`` on, and optionally an external location
    (with the implementation publishing through the same storage).
    """
    from vgi_rpc.conformance import ConformanceService, ConformanceServiceImpl
    from vgi_rpc.conformance.secondary import conformance_extra_protocols
    from vgi_rpc.rpc import RpcServer

    storage = external_location.storage if external_location is not None else None
    compression = external_location.compression if external_location is not None else None
    impl = ConformanceServiceImpl(external_storage=storage, external_compression=compression)
    return RpcServer(
        ConformanceService,
        impl,
        enable_describe=describe,
        external_location=external_location,
        extra_protocols=conformance_extra_protocols(),
    )


def server_external_location(storage_url: str, threshold: int) -> Any:
    """An external location that uploads every response batch above *threshold* bytes."""
    from vgi_rpc.conformance.fake_storage import FakeStorageBackend
    from vgi_rpc.external import ExternalLocationConfig

    return ExternalLocationConfig(
        storage=FakeStorageBackend(storage_url),
        externalize_threshold_bytes=threshold,
        url_validator=None,  # the fake storage's URLs are http://127.0.0.1
    )


def stdio_transport() -> Any:
    """This process's stdin/stdout as a vgi-rpc transport, framed as ``serve_stdio`` frames it
    (a buffered reader whose reads return all bytes asked for, an unbuffered writer that
    writes all it is given)."""
    from vgi_rpc.rpc import PipeTransport
    from vgi_rpc.rpc._transport import _clamped, _exact

    reader = _clamped(os.fdopen(0, "rb", closefd=False))
    writer = _exact(os.fdopen(1, "wb", buffering=0, closefd=False))
    return PipeTransport(reader, writer)
