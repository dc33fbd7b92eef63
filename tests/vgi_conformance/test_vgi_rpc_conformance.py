"""vgi-rpc's conformance suite, as the package ships it, over this directory's fixtures
(``conftest.py``): every test runs per transport variant ``KIND-MODE``, e.g.
``test_echo_string[subprocess-vortex]``.

Two groups look their fixture up by name, so they cannot be parametrized through it; they
are subclassed here, unchanged but for the variant fixture they use, which gives them the
same axis.
"""

import pytest

pytest.importorskip("vgi_rpc", reason="vgi-rpc (Python >= 3.13) is not installed")
pytest.importorskip("pytest_timeout", reason="the suite's per-test timeouts need pytest-timeout")

from vgi_rpc.conformance._pytest_suite import *  # noqa: F403
from vgi_rpc.conformance._pytest_suite import TestExternalByteStream as _ExternalByteStream
from vgi_rpc.conformance._pytest_suite import TestTransportKindContext as _TransportKindContext


@pytest.mark.usefixtures("vgi_variant")
class TestExternalByteStream(_ExternalByteStream):
    """Externalized responses over the byte-stream transports, per variant."""


@pytest.mark.usefixtures("vgi_pipe_variant")
class TestTransportKindContext(_TransportKindContext):
    """The transport kind a call sees, per wrapper mode (the pipe kind)."""
