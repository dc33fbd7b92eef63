"""The import contract of ARCHITECTURE.md ("Layers"), checked on the source: every import
of every module of the package, at module level or inside a function (a lazy import is a
dependency too; only ``if TYPE_CHECKING:`` blocks are left out), against the rules.

The rules, from the bottom up:

- the model (dtype, errors, limits, metadata, proto, scalar, stats, _check, _memory) imports
  nothing above it (dtype's Arrow mapping lives in the Arrow bridge: that one edge);
- encodings never import readers, writers, the scan, the compressor or an adapter: they
  sit below all of them (the compressor reaches them through the scheme registry);
- compute never imports readers, writers, the scan, the compressor or an adapter;
- ipc reaches encodings only through the registry (``array.get_encoding``), plus the
  ``vortex.chunked`` constructor for ``read_ipc``'s batches; the compressor through the
  registered schemes, plus the struct and primitive layouts it walks;
- nothing in the core imports an adapter, except the two ``register_*`` functions of the
  package and the CLI's ``sql`` command, each lazily;
- engines (polars, duckdb, ray, dask, pandas) are imported only by their own adapter;
  ``vortex`` (vortex-data) nowhere;
- adapters use the core's public names (the transcoders too), its scan API and the
  file-system helpers, never encodings, the compressor, arrays' internals or the native
  core directly;
- the InvertedIndex plugin imports public names only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "vortex_io"

MODEL = {"dtype", "_errors", "_limits", "_metadata", "_proto", "_scalar", "_stats", "_check", "_memory"}
ENGINES = {"polars", "duckdb", "ray", "dask", "pandas"}
OWN_ENGINES = {
    "integrations.polars_plugin": {"polars"},
    "integrations.duckdb_ext": {"duckdb"},
    "integrations.ray_data": {"ray", "pandas"},
    "integrations.dask_dataframe": {"dask", "pandas"},
}
ADAPTER_MAY_USE = {"", "_scan", "expr", "compute._expr", "compute", "_errors", "dtype", "_arrow", "_arrow_schema", "_ipc",
                   "_limits", "_metadata", "_fs", "transcode"}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                out.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return out


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in a file; modules of the package are
    given relative to it ("" for the package itself, "encodings._dict"...), others by name."""
    mod = _module(path)
    pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, _rel(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = [p for p in pkg[: len(pkg) - (node.level - 1)] if p]
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target] if node.module else [".".join([*base, a.name]) for a in node.names]
                for t in names:
                    yield node.lineno, t
            else:
                yield node.lineno, _rel(node.module or "")


def _rel(name: str) -> str:
    if name == "vortex_io":
        return ""
    if name.startswith("vortex_io."):
        return name[len("vortex_io."):]
    return "!" + name  # outside the package


def _is(target: str, *prefixes: str) -> bool:
    return any(target == p or target.startswith(p + ".") for p in prefixes)


FILES = sorted(p for p in PKG.rglob("*.py"))


def _violations() -> list[str]:
    out = []
    for path in FILES:
        mod = _module(path)
        for line, t in imports(path):
            where = f"{path.relative_to(PKG.parent)}:{line}: {mod or 'vortex_io'} imports {t.lstrip('!') or 'vortex_io'}"
            ext = t[1:] if t.startswith("!") else None
            top = (ext or "").split(".")[0]
            if ext is not None:
                if top == "vortex":
                    out.append(where + " (vortex-data is a test dependency only)")
                if top in ENGINES and top not in OWN_ENGINES.get(mod, set()):
                    out.append(where + " (engines are imported only by their own adapter)")
                continue
            first = t.split(".")[0] if t else ""
            if mod.split(".")[0] in MODEL and t and first not in MODEL and t != "_arrow":
                out.append(where + " (the model imports nothing above it)")
            if _is(mod, "encodings") and mod != "encodings.inverted_index" and _is(
                    t, "_ipc", "_scan", "_compress", "integrations", "cli", "_native_scan"):
                out.append(where + " (encodings sit below readers, writers, scan and compressor)")
            if _is(mod, "compute") and _is(t, "_ipc", "_scan", "_compress", "integrations", "cli"):
                out.append(where + " (compute sits below readers, writers, scan and compressor)")
            if _is(mod, "_compress") and _is(t, "encodings") and t not in (
                    "encodings._scheme", "encodings._struct", "encodings._primitive"):
                out.append(where + " (the compressor reaches encodings through their schemes)")
            if _is(mod, "_ipc") and _is(t, "encodings") and t != "encodings._chunked":
                out.append(where + " (ipc reaches encodings through the registry)")
            if not _is(mod, "integrations") and _is(t, "integrations") and not (
                    (mod == "" and t in ("integrations.polars_plugin", "integrations.duckdb_ext"))
                    or (mod == "cli" and t == "integrations.duckdb_ext")):
                out.append(where + " (the core never imports an adapter)")
            if _is(mod, "integrations") and not _is(t, "integrations") and t not in ADAPTER_MAY_USE:
                out.append(where + " (adapters use the public API, the scan and _fs)")
            if mod == "encodings.inverted_index" and t not in ("", "encodings", "dtype"):
                out.append(where + " (the plugin example uses public names only)")
    return out


def test_the_import_contract_holds():
    bad = _violations()
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("source, rule", [
    ("from .._ipc.reader import StreamReader\n", "encodings sit below"),
    ("import duckdb\n", "engines are imported only"),
    ("def f():\n    import vortex\n", "vortex-data"),
])
def test_a_forbidden_import_is_reported(tmp_path, monkeypatch, source, rule):
    """The checker itself: a planted import in an encoding module is caught."""
    fake = PKG / "encodings" / "_dict.py"
    real = fake.read_text()
    planted = tmp_path / "dict_.py"
    planted.write_text(real + "\n" + source)
    orig = Path.read_text

    def read_text(self: Path, *a, **k) -> str:
        return orig(planted) if self == fake else orig(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", read_text)
    assert any(rule in v for v in _violations())


def test_the_core_imports_no_engine_at_import_time():
    """``import vortex_io`` (and its public modules) loads no engine and no adapter."""
    import subprocess
    import sys

    code = ("import sys, vortex_io, vortex_io.encodings, vortex_io.expr; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{sorted(ENGINES | {'vortex', 'fsspec'})!r} or m.startswith('vortex_io.integrations')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_public_name_shadows_a_module():
    """``vortex_io.X`` is either a module or something else, never a function hiding the
    module of the same name (``vortex_io.scan`` is the function, ``vortex_io._scan`` its
    module); every public name is documented."""
    import types

    import vortex_io

    modules = {p.stem for p in PKG.glob("*.py")} | {p.name for p in PKG.iterdir() if p.is_dir()}
    for name in vortex_io.__all__:
        obj = getattr(vortex_io, name)
        if name in modules:
            assert isinstance(obj, types.ModuleType), f"vortex_io.{name} shadows its module"
        assert obj.__doc__, f"vortex_io.{name} has no docstring"


#: the public modules of the package (ARCHITECTURE.md, "The public API"); every other
#: module's name starts with "_" (or sits in a package whose name does)
PUBLIC_MODULES = {
    "", "cli", "compute", "datasets", "dtype", "encodings", "encodings.inverted_index",
    "expr", "integrity", "integrations", "integrations.dask_dataframe",
    "integrations.duckdb_ext", "integrations.polars_plugin", "integrations.ray_data",
    "integrations.vgi_rpc", "transcode",
}


def test_implementation_modules_are_private():
    """A module is public only if ARCHITECTURE.md says so: built-in encodings and
    compute's modules are ``_``-prefixed, like every other implementation module."""
    public = {m for m in map(_module, FILES) if not any(p.startswith("_") for p in m.split("."))}
    assert public == PUBLIC_MODULES


def test_no_function_shadows_a_submodule():
    """In every package, a public attribute named like one of its submodules is that
    module (``vortex_io.compute.evaluate`` is a function; its module is ``_evaluate``)."""
    import importlib
    import types

    for init in PKG.rglob("__init__.py"):
        pkg = importlib.import_module(".".join(filter(None, ["vortex_io", _module(init)])))
        subs = {p.stem for p in init.parent.glob("*.py")} | {
            p.name for p in init.parent.iterdir() if (p / "__init__.py").exists()}
        for name in subs & set(vars(pkg)):
            assert isinstance(getattr(pkg, name), types.ModuleType), f"{pkg.__name__}.{name}"


def test_the_scan_uses_public_seams_only():
    """The scan reaches readers, messages and arrays through their public names
    (``lazy_fields=``, ``bytes_consumed``, ``source_name``, ``background_checks``...): no
    private attribute of anything but itself, its own ``ScanStats`` lock, and pyarrow's
    C-interface import."""
    allowed = {("stats", "_lock"), ("pa.Array", "_import_from_c_capsule")}
    found = []
    for name in ("_scan.py", "_native_scan.py"):
        for node in ast.walk(ast.parse((PKG / name).read_text())):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                base = ast.unparse(node.value)
                if base != "self" and (base, node.attr) not in allowed:
                    found.append(f"{name}:{node.lineno}: {base}.{node.attr}")
    assert found == []
