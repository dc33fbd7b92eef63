"""``vortex_io.show_versions()``: what a bug report needs to know about the installation."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import TextIO

from . import _native_glue as ng

#: (label, distribution name) of the libraries reported, the optional engines after the
#: required ones; versions come from the installed distributions' metadata (none is imported)
_DISTRIBUTIONS = (
    ("numpy", "numpy"),
    ("pyarrow", "pyarrow"),
    ("flatbuffers", "flatbuffers"),
    ("polars", "polars"),
    ("duckdb", "duckdb"),
    ("ray", "ray"),
    ("dask", "dask"),
    ("distributed", "distributed"),
    ("fsspec", "fsspec"),
    ("zstandard", "zstandard"),
    ("vortex-data", "vortex-data"),
)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _native_state() -> tuple[str, str]:
    if ng.enabled():
        return "on", str(ng.decode_threads(None))
    why = ng.reason() or "turned off in this process (use_native(False))"
    return f"off ({why})", "- (the native core is off)"


def versions() -> dict[str, str]:
    """The lines ``show_versions`` prints, as a dict (label: value)."""
    from . import __version__

    native, threads = _native_state()
    out = {
        "vortex_io": __version__,
        "native core": native,
        "native threads": threads,
        "python": f"{platform.python_version()} ({platform.python_implementation()})",
        "platform": platform.platform(),
    }
    for label, dist in _DISTRIBUTIONS:
        out[label] = _version(dist)
    return out


def show_versions(file: TextIO | None = None) -> None:
    """Print the versions a bug report needs: vortex_io's, whether its native core is on (and
    why not), the native core's thread count, Python's version and implementation, the
    platform, and the versions of numpy, pyarrow, flatbuffers and the optional engines
    ("not installed" where absent; read from package metadata, no engine is imported).
    ``file``: where to print (default ``sys.stdout``).

    >>> import io, vortex_io as vio
    >>> out = io.StringIO()
    >>> vio.show_versions(file=out)
    >>> lines = out.getvalue().splitlines()
    >>> lines[0]
    'vortex_io:      0.1.0'
    >>> [line.split(":")[0] for line in lines][1:5]
    ['native core', 'native threads', 'python', 'platform']
    """
    info = versions()
    width = max(len(k) for k in info) + 2
    stream = sys.stdout if file is None else file
    for k, v in info.items():
        print(f"{k + ':':<{width}}{v}", file=stream)
