"""Fixtures that run vgi-rpc's own conformance suite (``vgi_rpc.conformance._pytest_suite``)
over its byte-stream transports, with and without ``VortexTransport`` around them.

Every connection fixture is parametrized over *variants* ``KIND-MODE``:

* KIND ``pipe``: the conformance server on a thread of this process, over a pair of
  ``os.pipe()`` transports (``vgi_rpc.rpc.make_pipe_pair``), a fresh pair per connection;
  ``subprocess``: the server in a child process (``conformance_worker.py``) over its
  stdin/stdout (``vgi_rpc.rpc.SubprocessTransport``), one child per mode for the session, as
  vgi-rpc's own runner has it.
* MODE ``plain``: vgi-rpc's Arrow IPC as it is, the baseline; ``vortex``: both ends wrapped
  in ``VortexTransport(inner)``; ``vortex-compressed``: ``VortexTransport(inner,
  compress=True)`` on both ends (they never skip: a failing import fails them).

The suite's fixtures supplied here: ``conformance_conn``, ``conformance_raw_conn``,
``conformance_describe``, ``conformance_protocol_connector`` (for ``protocol_target``),
``conformance_transport_kind_probes`` and ``conformance_bytestream_external_target`` (both
looked up by name, so the groups using them get the variant axis from ``vgi_variant`` /
``vgi_pipe_variant``, see the test module). The HTTP fixtures a test asks for by name in its
signature are stubs that skip: HTTP is outside this harness. Optional fixtures not supplied
(their groups skip, saying so): the HTTP-only ones (identity, grants, proxy proof, sticky,
CORS, access log, ...) and ``conformance_resource_soak_target`` (it samples one worker
process across many connections to it, which a stdio worker, one connection per process,
cannot give; the pipe kind's server is this very process).

The suite's ``timeout`` marks are charged to the test body only (``func_only``), as
vgi-rpc's own configuration has it: spawning a worker is fixture setup.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._harness import KINDS, MODES, vortex_io_path, wrap
from ._harness import conformance_server as _server
from ._harness import server_external_location as _server_external

HERE = Path(__file__).resolve().parent
WORKER = str(HERE / "conformance_worker.py")

VARIANTS = tuple(f"{kind}-{mode}" for kind in KINDS for mode in MODES)
PIPE_VARIANTS = tuple(v for v in VARIANTS if v.startswith("pipe-"))

#: How long a pipe server may take to stop once its client closed (inside the 5 s the suite
#: gives a test, as the connection closes in the test body), and a worker to answer
#: its first call.
SERVER_STOP_S = 2.0
WORKER_READY_S = 30.0

ConnFactory = Callable[..., contextlib.AbstractContextManager[Any]]


def split_variant(variant: str) -> tuple[str, str]:
    kind, _, mode = variant.partition("-")
    if kind not in KINDS or mode not in MODES:
        raise ValueError(f"unknown transport variant {variant!r}")
    return kind, mode


# -- timeouts: the suite's marks, charged to the test body only -------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in Path(item.path).resolve().parents:
            continue
        mark = item.get_closest_marker("timeout")
        if mark is not None and "func_only" not in mark.kwargs:
            item.add_marker(
                pytest.mark.timeout(*mark.args, **mark.kwargs, func_only=True), append=False
            )


# -- the in-process pipe server -----------------------------------------------------------------


@contextlib.contextmanager
def pipe_transport(mode: str, *, server: Any = None, server_external: Any = None) -> Iterator[Any]:
    """A client transport to a server on a thread, both ends wrapped per *mode*.

    Closing the client must end the server's loop (it sees the end of its input); a server
    still running after that fails the test's teardown.
    """
    from vgi_rpc.rpc import make_pipe_pair

    if server is None:
        server = _server(external_location=server_external)
    client_inner, server_inner = make_pipe_pair()
    try:
        client = wrap(client_inner, mode)
        server_side = wrap(server_inner, mode)
    except BaseException:
        client_inner.close()
        server_inner.close()
        raise
    thread = threading.Thread(
        target=server.serve, args=(server_side,), name="vgi-conformance-pipe", daemon=True
    )
    thread.start()
    try:
        yield client
    finally:
        client.close()
        thread.join(timeout=SERVER_STOP_S)
        server_side.close()
    if thread.is_alive():
        raise AssertionError(
            f"the pipe server ({mode}) was still serving {SERVER_STOP_S:g} s after its client closed "
            "its transport: the end of the client's stream did not reach it"
        )


# -- the worker processes -------------------------------------------------------------------------


class Workers:
    """The subprocess kind's workers: one per (mode, storage), spawned on first use, kept for
    the session; one whose connection failed is dropped (the next test gets a fresh one)."""

    def __init__(self) -> None:
        self._live: dict[tuple[str, str | None], tuple[Any, Any]] = {}

    def get(self, mode: str, storage: str | None = None) -> Any:
        key = (mode, storage)
        if key not in self._live:
            self._live[key] = self._spawn(mode, storage)
        return self._live[key][0]

    def discard(self, mode: str, storage: str | None = None) -> None:
        entry = self._live.pop((mode, storage), None)
        if entry is not None:
            self._stop(*entry)

    def close(self) -> None:
        while self._live:
            _, entry = self._live.popitem()
            self._stop(*entry)

    @staticmethod
    def _spawn(mode: str, storage: str | None) -> tuple[Any, Any]:
        from vgi_rpc.conformance import ConformanceService
        from vgi_rpc.rpc import SubprocessTransport, _RpcProxy

        cmd = [sys.executable, WORKER, mode]
        if mode != "plain":
            cmd += ["--path", vortex_io_path()]
        if storage is not None:
            cmd += ["--fake-storage", storage]
        inner = SubprocessTransport(cmd)
        try:
            transport = wrap(inner, mode)
        except BaseException:
            inner.close()
            raise
        # the first call, in setup and bounded: a worker that never answers is killed
        outcome: list[BaseException | None] = []

        def first_call() -> None:
            config = None
            try:
                if storage is not None:  # the answer comes as a pointer to the store
                    from vgi_rpc.external import ExternalLocationConfig

                    config = ExternalLocationConfig(url_validator=None)
                proxy = _RpcProxy(ConformanceService, transport, None, external_config=config)
                assert proxy.echo_int(value=0) == 0
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)
            finally:
                if config is not None:
                    config.fetch_config.close()

        probe = threading.Thread(
            target=first_call, name="vgi-conformance-worker-ready", daemon=True
        )
        probe.start()
        probe.join(timeout=WORKER_READY_S)
        if not outcome or outcome[0] is not None:
            inner.proc.kill()
            probe.join(timeout=5)
            Workers._stop(transport, inner)
            if not outcome:
                raise RuntimeError(f"worker {cmd!r} did not answer within {WORKER_READY_S:g} s")
            raise RuntimeError(f"worker {cmd!r} failed its first call") from outcome[0]
        return transport, inner

    @staticmethod
    def _stop(transport: Any, inner: Any) -> None:
        try:
            transport.close()
        finally:
            inner.close()  # a no-op once closed through the wrapper
            if inner.proc.poll() is None:
                inner.proc.kill()
                inner.proc.wait()


@pytest.fixture(scope="session")
def vgi_workers() -> Iterator[Workers]:
    workers = Workers()
    try:
        yield workers
    finally:
        workers.close()


@contextlib.contextmanager
def worker_transport(workers: Workers, mode: str, storage: str | None = None) -> Iterator[Any]:
    """The session worker's transport for *mode*; dropped when the connection failed (an
    exception other than an error the server answered with), its state being unknown."""
    from vgi_rpc.rpc import RpcError

    transport = workers.get(mode, storage)
    try:
        yield transport
    except RpcError as exc:
        if exc.error_type == "TransportError":
            workers.discard(mode, storage)
        raise
    except BaseException:
        workers.discard(mode, storage)
        raise


@contextlib.contextmanager
def client_transport(
    variant: str, workers: Workers, *, storage: str | None = None
) -> Iterator[Any]:
    kind, mode = split_variant(variant)
    if kind == "pipe":
        external = _server_external(storage, 1) if storage is not None else None
        with pipe_transport(mode, server_external=external) as transport:
            yield transport
    else:
        with worker_transport(workers, mode, storage) as transport:
            yield transport


def connect(
    variant: str,
    protocol: type,
    workers: Workers,
    on_log: Any = None,
    *,
    storage: str | None = None,
    external_config: Any = None,
) -> contextlib.AbstractContextManager[Any]:
    """A context manager yielding a proxy for *protocol* on the variant's server."""
    from vgi_rpc.rpc import _RpcProxy

    @contextlib.contextmanager
    def _conn() -> Iterator[Any]:
        with client_transport(variant, workers, storage=storage) as transport:
            yield _RpcProxy(protocol, transport, on_log, external_config=external_config)

    return _conn()


# -- the suite's fixtures ---------------------------------------------------------------------------


def _conn_factory(variant: str, workers: Workers) -> ConnFactory:
    from vgi_rpc.conformance import ConformanceService

    def factory(on_log: Any = None) -> contextlib.AbstractContextManager[Any]:
        return connect(variant, ConformanceService, workers, on_log)

    return factory


@pytest.fixture(params=VARIANTS)
def conformance_conn(request: pytest.FixtureRequest, vgi_workers: Workers) -> ConnFactory:
    """``factory(on_log=None)`` -> context manager yielding a ``ConformanceService`` proxy."""
    return _conn_factory(request.param, vgi_workers)


@pytest.fixture(params=VARIANTS)
def conformance_raw_conn(request: pytest.FixtureRequest, vgi_workers: Workers) -> ConnFactory:
    """As ``conformance_conn``; the suite writes framed requests to ``proxy._transport.writer``
    itself and reads the answer off ``proxy._transport.reader``."""
    return _conn_factory(request.param, vgi_workers)


@pytest.fixture
def conformance_protocol_connector(vgi_workers: Workers) -> Callable[..., Any]:
    """``connector(variant, protocol, on_log=None)`` -> a proxy bound to *protocol* on the
    server that the ``conformance_conn`` variant reaches."""

    def connector(
        transport: str, protocol: type, on_log: Any = None
    ) -> contextlib.AbstractContextManager[Any]:
        return connect(transport, protocol, vgi_workers, on_log)

    return connector


@pytest.fixture(params=VARIANTS)
def conformance_describe(request: pytest.FixtureRequest, vgi_workers: Workers) -> Any:
    """The ``ServiceDescription`` the variant's server answers ``__describe__`` with."""
    from vgi_rpc.introspect import introspect

    with client_transport(request.param, vgi_workers) as transport:
        return introspect(transport)


@pytest.fixture(params=VARIANTS)
def vgi_variant(request: pytest.FixtureRequest) -> str:
    """The variant axis of groups whose fixture the suite looks up by name."""
    return str(request.param)


@pytest.fixture(params=PIPE_VARIANTS)
def vgi_pipe_variant(request: pytest.FixtureRequest) -> str:
    """As ``vgi_variant``, the pipe kind only."""
    return str(request.param)


@pytest.fixture
def conformance_transport_kind_probes(
    vgi_pipe_variant: str,
) -> tuple[tuple[str, Callable[[], str]], ...]:
    """One probe: the kind a call on the (wrapped) pipe server sees in its ``CallContext``."""
    from typing import Protocol

    from vgi_rpc import CallContext
    from vgi_rpc.rpc import RpcServer, _RpcProxy

    _, mode = split_variant(vgi_pipe_variant)
    class _KindProbe(Protocol):
        def report_transport_kind(self) -> str: ...

    class _KindProbeImpl:
        def report_transport_kind(self, ctx: CallContext) -> str:
            assert ctx.kind is not None
            return str(ctx.kind.value)

    def probe() -> str:
        with pipe_transport(mode, server=RpcServer(_KindProbe, _KindProbeImpl())) as transport:
            return str(_RpcProxy(_KindProbe, transport, None).report_transport_kind())

    return (("pipe", probe),)


@pytest.fixture(scope="session")
def vgi_fake_storage() -> Iterator[str]:
    """vgi-rpc's in-memory object store (HTTP on a thread) for externalized batches."""
    from vgi_rpc.conformance.fake_storage import serve_in_thread

    base_url, shutdown = serve_in_thread()
    try:
        yield base_url
    finally:
        shutdown()


@pytest.fixture
def conformance_bytestream_external_target(
    vgi_variant: str, vgi_workers: Workers, vgi_fake_storage: str
) -> Iterator[Any]:
    """Connections whose every response batch goes through the object store: the wire
    carries pointer batches, the client fetches the payloads."""
    pytest.importorskip(
        "aiohttp", reason="vgi-rpc's external fetch needs aiohttp (vgi-rpc[external])"
    )
    from vgi_rpc.conformance import ConformanceService
    from vgi_rpc.conformance._external_bytestream_pytest import ByteStreamExternalTarget
    from vgi_rpc.external import ExternalLocationConfig

    configs: list[Any] = []

    def connect_external(on_log: Any = None) -> contextlib.AbstractContextManager[Any]:
        config = ExternalLocationConfig(url_validator=None)  # the store's URLs are http://127.0.0.1
        configs.append(config)
        return connect(
            vgi_variant,
            ConformanceService,
            vgi_workers,
            on_log,
            storage=vgi_fake_storage,
            external_config=config,
        )

    def uploaded_objects() -> int:
        with urllib.request.urlopen(f"{vgi_fake_storage}/_stats", timeout=10) as resp:
            return int(json.load(resp)["object_count"])

    try:
        yield ByteStreamExternalTarget(
            name=f"python-{vgi_variant}",
            connect=connect_external,
            uploaded_objects=uploaded_objects,
        )
    finally:
        for config in configs:
            config.fetch_config.close()


# -- HTTP: out of scope; the fixtures tests name in their signatures skip ----------------------

HTTP_REASON = (
    "HTTP transports are outside this harness (it runs the suite over pipe and subprocess)"
)

HTTP_FIXTURES = (
    "conformance_http_port",
    "conformance_http_auth_port",
    "conformance_http_external_security_port",
    "conformance_http_externalized_cap_port",
    "conformance_http_strict_cap_port",
    "conformance_http_with_storage_port",
    "conformance_http_with_zstd_storage_port",
    "conformance_fake_storage",  # asked for by the HTTP external-location groups only
)


def _http_stub(name: str) -> Any:
    @pytest.fixture(name=name)
    def stub() -> None:
        pytest.skip(HTTP_REASON)

    return stub


for _name in HTTP_FIXTURES:
    globals()[f"_stub_{_name}"] = _http_stub(_name)
del _name
