"""A user's encoding, written here with public names only (``vortex_io``, the authors'
toolkit ``vortex_io.encodings`` and ``vortex_io.expr``), plugs in as a built-in does: it
registers itself and its compression scheme, the compressor's search picks it, streams
carry it, readers decode it, and a scan's filter runs on its encoded values through its
``compare`` hook. Also: encodings found through the ``vortex_io.encodings`` entry points."""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import vortex_io as vio
from vortex_io.encodings import (
    NODE_COST,
    Array,
    ArrayParts,
    Encoding,
    Facts,
    MalformedStreamError,
    ProtoWriter,
    Scheme,
    Trial,
    canonical_ints,
    int_cost,
    parse_proto,
    primitive_array,
    primitive_values,
    register_encoding,
    register_scheme,
    unregister_scheme,
    validity_child,
    validity_mask,
    validity_spec,
)
from vortex_io.expr import col

dt = vio.dtype
_I64 = dt.Primitive(dt.PType.I64)
_MAX_DIGITS = 6


class ScaledFloat(Encoding):
    """``test.scaled_float``: f64 values with at most ``digits`` decimals, stored as the
    int64 ``round(value * 10**digits)`` (child 0; optional validity child 1); metadata
    ``1: digits``. Comparisons with a literal run on the integers."""

    id = "test.scaled_float"
    calls: ClassVar[dict[str, int]] = {"compare": 0, "canonicalize": 0}

    def check_dtype(self, dtype: Any) -> None:
        if not (isinstance(dtype, dt.Primitive) and dtype.ptype == dt.PType.F64):
            raise MalformedStreamError(f"{self.id} holds f64 columns, not {dtype!r}")

    def parse_metadata(self, raw: bytes, dtype: Any, length: int) -> int:
        digits = parse_proto(raw, "ScaledFloatMetadata").get_uint(1, 0)
        if digits > _MAX_DIGITS:
            raise MalformedStreamError(f"{self.id}: {digits} digits, at most {_MAX_DIGITS}")
        return digits

    def child_specs(self, dtype: Any, length: int, meta: int, parts: ArrayParts) -> list:
        return [(_I64, length), *validity_spec(self.id, dtype, length, parts.nchildren, 1)]

    def _valid(self, arr: Array) -> np.ndarray | None:
        return validity_mask(arr.children[1] if len(arr.children) > 1 else None, len(arr))

    def canonicalize(self, arr: Array) -> Array:
        type(self).calls["canonicalize"] += 1
        codes = canonical_ints(arr.children[0], f"{self.id} codes")
        values = codes.astype(np.float64) / 10.0 ** arr.meta
        return primitive_array(values, validity_child(self._valid(arr)), nullable=arr.dtype.nullable)

    def validity(self, arr: Array) -> Any:
        return self._valid(arr)

    def compare(self, arr: Array, value: Any, op: str) -> Any:
        scaled = float(value) * 10.0 ** arr.meta
        if not np.isfinite(scaled) or scaled != round(scaled) or abs(scaled) >= 2**53:
            return NotImplemented  # not exactly an integer code: let the fallback decode
        type(self).calls["compare"] += 1
        codes = canonical_ints(arr.children[0], f"{self.id} codes")
        ops = {"eq": np.equal, "neq": np.not_equal, "lt": np.less, "lte": np.less_equal,
               "gt": np.greater, "gte": np.greater_equal}
        hits = ops[op](codes, int(scaled))
        valid = self._valid(arr)
        return (hits if valid is None else hits & valid), valid

    def describe(self, arr: Array) -> str:
        return f"digits={arr.meta}"

    def child_names(self, arr: Array) -> list[str]:
        return ["codes", "validity"]


SCALED = ScaledFloat()
register_encoding(SCALED, replace=True)


def scaled_float(values: Any, digits: int, validity: np.ndarray | None = None) -> Array:
    codes = np.round(np.asarray(values, dtype=np.float64) * 10.0**digits).astype(np.int64)
    kids = [primitive_array(codes)]
    if validity is not None:
        kids.append(validity_child(validity))
    return Array(SCALED, dt.Primitive(dt.PType.F64, validity is not None), len(codes),
                 metadata=ProtoWriter().varint(1, digits).finish(), children=kids, meta=digits)


def _fewest_digits(values: np.ndarray) -> int | None:
    for digits in range(_MAX_DIGITS + 1):
        s = values * 10.0**digits
        if np.all(np.abs(s) < 2**53) and np.array_equal(np.round(s) / 10.0**digits, values):
            return digits
    return None


def _encode(a: Array, params: Any = None) -> Array | None:
    vals, mask = primitive_values(a)
    valid = vals if mask is None else vals[mask]
    digits = params if params is not None else _fewest_digits(valid)
    if digits is None:
        return None
    filled = vals if mask is None else np.where(mask, vals, 0.0)
    return scaled_float(filled, digits, None if mask is None else mask.copy())


def _estimate(f: Facts, compressor: Any) -> Trial | None:
    if f.a.dtype.ptype != dt.PType.F64:
        return None
    vals, mask = primitive_values(f.a)
    valid = vals if mask is None else vals[mask]
    if len(valid) == 0:
        return None
    digits = _fewest_digits(valid)
    if digits is None:
        return None
    codes = np.round(valid * 10.0**digits).astype(np.int64)
    size = int_cost(codes, f.n, f.nulls) + f.validity_bytes + 2 * NODE_COST
    return Trial(size, lambda: _encode(f.a, digits), digits)


SCHEME = Scheme(ScaledFloat.id, frozenset({"float"}), _estimate, _encode, priority=5)


@pytest.fixture(autouse=True)
def _scheme_registered():
    """The scheme takes part in every search of the process while registered: only for the
    tests of this file (the other tests share the pytest worker)."""
    register_scheme(SCHEME, replace=True)
    yield
    unregister_scheme(SCHEME)


def _prices(n: int = 20_000, nulls: bool = True) -> pa.Table:
    rng = np.random.default_rng(3)
    price = np.round(rng.uniform(50, 150, n), 2)
    mask = rng.random(n) < 0.1 if nulls else None
    return pa.table({"price": pa.array(price, mask=mask), "id": np.arange(n)})


def _stream(t: pa.Table, **kw: Any) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, t, chunk_rows=4096, **kw)
    return buf.getvalue()


def test_this_file_uses_public_names_only():
    tree = ast.parse(Path(__file__).read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    ours = {m for m in modules if m and m.startswith("vortex_io")}
    assert ours == {"vortex_io", "vortex_io.encodings", "vortex_io.expr"}


def test_the_search_chooses_it_and_streams_carry_it():
    t = _prices()
    # the built-in float schemes left out: the user's scheme competes with keeping the column
    data = _stream(t, compress=vio.CompressOptions(exclude=frozenset({"vortex.alp", "vortex.alprd"})))
    with vio.StreamReader(data) as r:
        batches = list(r)
    assert {b.array.field("price").encoding for b in batches} == {"test.scaled_float"}
    assert pa.Table.from_batches([b.to_arrow() for b in batches]).equals(t)
    tree = batches[0].array.field("price").tree()
    assert "test.scaled_float(f64?" in tree and "digits=2" in tree
    # its codes child was compressed by the cascade like any built-in's children
    assert batches[0].array.field("price").children[0].encoding != "vortex.primitive"


def test_an_unregistered_scheme_is_out_of_the_search():
    opts = vio.CompressOptions(exclude=frozenset({"vortex.alp", "vortex.alprd"}))
    unregister_scheme(SCHEME)
    with vio.StreamReader(_stream(_prices(5000), compress=opts)) as r:
        assert "test.scaled_float" not in {b.array.field("price").encoding for b in r}
    with pytest.raises(vio.UnsupportedError, match="no encoder"):
        _stream(_prices(100), encodings={"price": "test.scaled_float"})


def test_naming_it_restricts_the_search_and_forcing_uses_its_scheme():
    t = _prices(5000)
    # a list restricts the whole column's search (its children's too); a string forces
    for spec in (["test.scaled_float", "fastlanes.for", "fastlanes.bitpacked"], "test.scaled_float"):
        data = _stream(t, encodings={"price": spec})
        with vio.StreamReader(data) as r:
            assert {b.array.field("price").encoding for b in r} == {"test.scaled_float"}
        assert vio.read_table(data).equals(t)


def test_values_it_cannot_hold_are_left_to_the_others():
    t = pa.table({"x": np.random.default_rng(1).random(3000)})  # 16+ significant digits
    f32 = pa.table({"x": pa.array(np.round(np.arange(3000) / 4, 2), pa.float32())})
    with vio.StreamReader(_stream(f32)) as r:
        assert "test.scaled_float" not in {b.array.field("x").encoding for b in r}
    with vio.StreamReader(_stream(t)) as r:
        assert "test.scaled_float" not in {b.array.field("x").encoding for b in r}
    with pytest.raises(vio.UnsupportedError, match=r"test\.scaled_float"):
        _stream(t, encodings={"x": "test.scaled_float"})


@pytest.mark.parametrize("threads", [1, 2])
def test_a_scan_filters_it_on_the_encoded_values(threads):
    t = _prices()
    data = _stream(t, encodings={"price": "test.scaled_float"})
    before = dict(ScaledFloat.calls)
    for e, expect in ((col("price") < 90, pc.less(t["price"], 90)),
                      (col("price") == 100.5, pc.equal(t["price"], 100.5)),
                      (col("price") >= 149.99, pc.greater_equal(t["price"], 149.99))):
        got = vio.scan(data, filter=e, threads=threads).to_arrow()
        assert got.equals(t.filter(expect)), e
    assert ScaledFloat.calls["compare"] > before["compare"]  # the hook answered the filters
    # a literal that is no code (more digits than stored) falls back to decoding, same rows
    got = vio.scan(data, filter=col("price") < 90.001, columns=["id"], threads=threads).to_arrow()
    assert got.column("id").equals(t.filter(pc.less(t["price"], 90.001)).column("id"))
    nulls = vio.scan(data, filter=col("price").is_null(), columns=["id"]).to_arrow()
    assert nulls.num_rows == t["price"].null_count


def test_malformed_nodes_raise_stream_errors():
    bad = Array(SCALED, dt.Primitive(dt.PType.F64), 3, metadata=ProtoWriter().varint(1, 40).finish(),
                children=[primitive_array(np.arange(3))])
    buf = io.BytesIO()
    with vio.StreamWriter(buf, dt.Primitive(dt.PType.F64)) as w:
        w.write_batch(bad)
    with pytest.raises(vio.MalformedStreamError, match="40 digits"):
        vio.read_ipc(buf.getvalue()).to_arrow()


# -- plugins: encodings found by ID through entry points -----------------------------------------


_PLUGIN = """
import numpy as np
import vortex_io as vio
from vortex_io.encodings import Encoding

class PluginCodec(Encoding):
    '''A pass-through node over its one child; registered by nobody.'''
    id = "test.plugin_codec"

    def child_specs(self, dtype, length, meta, parts):
        return [(dtype, length)]

    def canonicalize(self, arr):
        return arr.children[0].canonical()
"""

_USE_PLUGINS = """
import io, sys, numpy as np, vortex_io as vio
from vortex_io.encodings import Array, primitive_array
i64 = vio.dtype.Primitive(vio.dtype.PType.I64)
a = Array("test.plugin_codec", i64, 3, children=[primitive_array(np.arange(3))])
assert "myplugin_codec" in sys.modules and a.to_pylist() == [0, 1, 2]
buf = io.BytesIO()
with vio.StreamWriter(buf, i64) as w:
    w.write_batch(a)
print(vio.read_ipc(buf.getvalue()).encoding, vio.read_ipc(buf.getvalue()).to_pylist())
for _ in range(2):  # the second lookup says the same
    try:
        vio.get_encoding("test.broken")
    except vio.UnsupportedError as e:
        print(e)
"""


def test_an_installed_entry_point_makes_an_encoding_found(tmp_path):
    """A package that only declares an entry point (as pip installs it: a .dist-info with
    entry_points.txt on sys.path) is imported when its ID is first needed."""
    (tmp_path / "myplugin_codec.py").write_text(_PLUGIN)
    info = tmp_path / "myplugin_codec-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplugin-codec\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[vortex_io.encodings]\ntest.plugin_codec = myplugin_codec:PluginCodec\n"
        "test.broken = no_such_module_xyz\n")
    out = subprocess.run([sys.executable, "-c", _USE_PLUGINS], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    first, second, third = out.stdout.strip().splitlines()
    assert first == "test.plugin_codec [0, 1, 2]"
    assert "'test.broken'" in second and "failed to load" in second
    assert "ModuleNotFoundError" in second
    assert third == second


def test_the_inverted_index_is_a_plugin_the_core_never_imports(tmp_path):
    names = {ep.name: ep.value for ep in entry_points(group="vortex_io.encodings")}
    assert names.get("vortex_io.inverted_index") == "vortex_io.encodings.inverted_index:InvertedIndex"
    path = tmp_path / "cities.vxipc"
    t = pa.table({"city": ["oslo", "rome", None, "oslo"] * 50})
    path.write_bytes(_stream(t, encodings={"city": "vortex_io.inverted_index"}))
    code = textwrap.dedent(f"""
        import sys, vortex_io as vio
        assert "vortex_io.encodings.inverted_index" not in sys.modules
        t = vio.read_table({str(path)!r})
        assert "vortex_io.encodings.inverted_index" in sys.modules
        print(t.num_rows, t.column("city").null_count)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["200", "50"]


class ReversedStrings(Encoding):
    """``test.reversed``: a utf8 column stored reversed in its one child; its ``to_arrow``
    predates the ``string_view`` option (it takes ``arr`` only) and returns ``string``."""

    id = "test.reversed"

    def child_specs(self, dtype: Any, length: int, meta: Any, parts: ArrayParts) -> list:
        return [(dtype, length)]

    def to_arrow(self, arr: Array) -> Any:
        return pc.utf8_reverse(arr.children[0].to_arrow())


def test_a_to_arrow_without_string_view_still_gives_views_when_asked():
    """The core casts the output of a ``to_arrow`` that takes no ``string_view`` (at any
    depth: here as a struct's field), so encodings written before the option keep working."""
    register_encoding(ReversedStrings(), replace=True)
    utf8 = dt.Utf8(True)
    inner = vio.array(pa.array(["cba", None, "fe"]))
    rev = Array(ReversedStrings(), utf8, 3, children=[inner])
    assert rev.to_arrow().type == pa.string()
    got = rev.to_arrow(string_view=True)
    assert got.type == pa.string_view() and got.to_pylist() == ["abc", None, "ef"]
    table = vio.array(pa.table({"s": pa.array(["x", "y", "z"]), "n": [1, 2, 3]}))
    st = Array(table.vtable, table.dtype, 3, children=[rev, table.children[1]])
    assert st.to_arrow(string_view=True).type.field("s").type == pa.string_view()
