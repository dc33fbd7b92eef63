"""The demo behind ``make demo`` (bench/demo.py): it runs on a small table, its files go to a
temporary directory that is gone afterwards, also when it fails, and ``--out`` keeps them."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from bench import demo

ROWS = ["--rows", "5000"]


@pytest.fixture
def tmp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory ``tempfile`` makes temporary directories in, for this test."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_demo_runs_and_removes_its_directory(tmp_root: Path, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    seen: list[Path] = []
    real_write = demo.vio.write_ipc

    def write_ipc(path: object, *args: Any, **kwargs: Any) -> int:
        if isinstance(path, str):
            seen.append(Path(path))
        return real_write(path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(demo.vio, "write_ipc", write_ipc)
        demo.main(ROWS)
    out = capsys.readouterr().out
    assert "read it back: 5,000 rows" in out and "identical to the input" in out
    assert "Parquet + zstd" in out and "scan symbol == 'AAPL'" in out
    # the stream went to a directory under the temporary root, and nothing is left there
    assert len(seen) == 1 and seen[0].name == "trades.vxipc", seen
    assert seen[0].parent.parent == tmp_root and seen[0].parent.name.startswith("vortex-io-demo-")
    assert not seen[0].exists()
    assert list(tmp_root.iterdir()) == []


def test_demo_removes_its_directory_when_it_fails(tmp_root: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("scan failed")

    monkeypatch.setattr(demo.vio, "scan", boom)  # after the stream was written and read back
    with pytest.raises(RuntimeError, match="scan failed"):
        demo.main(ROWS)
    assert list(tmp_root.iterdir()) == []


def test_demo_out_keeps_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kept"
    demo.main([*ROWS, "--out", str(out)])
    assert (out / "trades.vxipc").stat().st_size > 0
    assert f"files are in {out}" in capsys.readouterr().out


def test_demo_imports_only_runtime_dependencies() -> None:
    """``make demo`` installs the package without extras: the demo, run to the end, imports
    none of them."""
    import subprocess

    code = ("import sys; from bench import demo; demo.main(['--rows', '5000']); "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)")
    root = Path(__file__).resolve().parent.parent
    mods = set(subprocess.run([sys.executable, "-c", code], cwd=root, check=True,
                              capture_output=True, text=True).stderr.split())
    # (pandas is left out: pyarrow imports it when it is installed, and does without it)
    extras = {"polars", "duckdb", "ray", "dask", "distributed", "zstandard", "fsspec", "vortex",
              "matplotlib", "hypothesis", "pytest", "nbclient", "nanobind"}
    assert "vortex_io" in mods and "pyarrow" in mods
    assert not mods & extras, mods & extras
