"""Shared pytest configuration: hypothesis profiles.

Profiles (select with ``HYPOTHESIS_PROFILE=<name>``; ``ci`` is the default):

* ``ci``: ``deadline=None``, 25 examples per test, derandomized so that a run on the
  shared CI machine is reproducible and bounded in time.
* ``dev``: 100 examples, random seeds (run locally to search harder).
* ``thorough``: 1000 examples (occasional long runs).

Strategies live in ``tests/strategies.py``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

settings.register_profile("ci", max_examples=25, derandomize=True, print_blob=True, **_COMMON)
settings.register_profile("dev", max_examples=100, **_COMMON)
settings.register_profile("thorough", max_examples=1000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest  # noqa: E402


@pytest.fixture
def reference_path(monkeypatch):
    """Run a test on the numpy reference implementation (the native core off), for tests of
    machinery only that path has (stacking, header plans, its thread pool)."""
    monkeypatch.setattr("vortex_io._native_glue._off", 1)
