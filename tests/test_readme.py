"""The README's code blocks run as written: every ``python`` block, in order, in one
namespace, and every ``sh`` block with bash, in a temporary directory (as a new user would
paste them). The blocks not run are the ``make`` ones (every line a ``make`` command): they
run in the checkout, and the one at the top is how this suite itself is run (``make test``)
and how the package is built; their targets are checked to exist."""


from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str]]:
    return [(lang, code) for lang, code in FENCE.findall(README.read_text())]


def _is_make(code: str) -> bool:
    lines = [ln for ln in code.splitlines() if ln.strip()]
    return bool(lines) and all(ln.startswith("make ") for ln in lines)


def test_readme_has_the_blocks_this_test_runs():
    langs = [lang for lang, _ in blocks()]
    assert langs.count("python") >= 4 and langs.count("sh") >= 2
    assert {lang for lang in langs} <= {"python", "sh"}, langs
    text = README.read_text()
    assert "vio.read_arrow" not in text  # it does not exist: StreamReader.read_arrow does


@pytest.fixture
def _schemes_restored():
    """The README registers an example encoding's compression scheme in this process: it
    leaves the search when the test ends (the other tests share the pytest worker)."""
    from vortex_io.encodings import registered_schemes, unregister_scheme

    before = set(registered_schemes())
    yield
    for s in set(registered_schemes()) - before:
        unregister_scheme(s)


def test_readme_code_blocks_run_in_order(tmp_path, monkeypatch, _schemes_restored):
    pytest.importorskip("polars")
    pytest.importorskip("duckdb")
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    namespace: dict = {"__name__": "__readme__"}
    ran = skipped = 0
    for i, (lang, code) in enumerate(blocks()):
        if lang == "sh" and _is_make(code):
            skipped += 1
            continue
        if lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"README.md block {i}", "exec"), namespace)
        else:
            p = subprocess.run(["bash", "-e", "-c", code], capture_output=True, env=env,
                               cwd=tmp_path, timeout=300)
            assert p.returncode == 0, (code, p.stdout.decode()[-2000:], p.stderr.decode()[-2000:])
            assert b"Traceback" not in p.stderr, p.stderr.decode()
        ran += 1
    assert ran == len(blocks()) - skipped and 1 <= skipped <= 2
    # what the blocks made is what they say
    assert namespace["t"].to_pydict() == {"symbol": ["MSFT"], "price": [402.1]}
    assert (tmp_path / "aapl.vxipc").exists() and (tmp_path / "trades.parquet").exists()
    assert namespace["hits"].num_rows == int((namespace["ts"] < 1_700_000_003).sum()) > 0


def test_readme_make_targets_exist():
    """Every ``make`` line the README shows names a target of the Makefile."""
    makefile = (README.parent / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    shown = [ln.split()[1] for lang, code in blocks() if lang == "sh" and _is_make(code)
             for ln in code.splitlines() if ln.strip()]
    assert shown and set(shown) <= targets, (shown, targets)
