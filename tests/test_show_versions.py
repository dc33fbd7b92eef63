"""vortex_io.show_versions(): what a bug report needs, without importing any engine."""

from __future__ import annotations

import io
import subprocess
import sys
from importlib import metadata

import vortex_io as vio
import vortex_io._native_glue as ng


def _lines() -> dict[str, str]:
    out = io.StringIO()
    vio.show_versions(file=out)
    pairs = [line.split(":", 1) for line in out.getvalue().splitlines()]
    return {k: v.strip() for k, v in pairs}


def test_show_versions_reports_the_installation():
    info = _lines()
    assert info["vortex_io"] == vio.__version__
    assert info["python"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")
    assert info["numpy"] == metadata.version("numpy")
    assert info["pyarrow"] == metadata.version("pyarrow")
    assert info["flatbuffers"] == metadata.version("flatbuffers")
    for engine in ("polars", "duckdb", "ray", "dask", "distributed", "fsspec", "zstandard",
                   "vortex-data"):
        assert engine in info
    if ng.enabled():
        assert info["native core"] == "on"
        assert int(info["native threads"]) >= 1
    else:
        assert info["native core"].startswith("off (") and ng.reason() in info["native core"]


def test_show_versions_says_why_the_native_core_is_off():
    with ng.use_native(False):
        assert _lines()["native core"].startswith("off (")


def test_an_absent_engine_is_not_installed(monkeypatch):
    real = metadata.version

    def version(dist: str) -> str:
        if dist == "polars":
            raise metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(metadata, "version", version)
    assert _lines()["polars"] == "not installed"


def test_show_versions_imports_no_engine():
    code = ("import sys, vortex_io; vortex_io.show_versions(); "
            "print(sorted(m for m in ('polars', 'duckdb', 'ray', 'dask', 'distributed', "
            "'fsspec', 'zstandard', 'vortex') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert "native core:" in out.stdout and "vortex_io:" in out.stdout
