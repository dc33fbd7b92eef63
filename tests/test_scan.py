"""The scan API and filter expressions: results equal pyarrow filtering the decoded table.

Predicates are generated with hypothesis and translated to pyarrow dataset expressions,
which follow the same SQL (Kleene) semantics; ``Table.filter`` keeps rows where the
predicate is true.
"""

from __future__ import annotations

import decimal
import io
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vortex_io as vio
from vortex_io.compute._expr import And, Column, Compare, IsIn, IsNull, Literal, Not, Or
from vortex_io.expr import col

TS = pa.timestamp("us", "UTC")


def make_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    i = rng.integers(-50, 50, n)
    f = rng.normal(0, 10, n).round(1)
    f[rng.random(n) < 0.05] = np.nan
    s = np.array(["apple", "pear", "fig", "kiwi", ""])[rng.integers(0, 5, n)]
    null = rng.random(n) < 0.1
    return pa.table({
        "i": pa.array(i, mask=null),
        "u8": pa.array(rng.integers(0, 255, n).astype(np.uint8)),
        "f": pa.array(f, mask=rng.random(n) < 0.1),
        "s": pa.array(s, mask=rng.random(n) < 0.1),
        "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
        "ts": pa.array(np.sort(rng.integers(0, 10**9, n)), TS),
        "d": pa.array([None if k % 7 == 0 else decimal.Decimal(k % 100) / 4 for k in range(n)],
                      pa.decimal128(9, 2)),
    })


TABLE = make_table(3000)


def stream_of(table: pa.Table, chunk_rows: int = 700) -> bytes:
    buf = io.BytesIO()
    vio.write_ipc(buf, table, chunk_rows=chunk_rows)
    return buf.getvalue()


DATA = stream_of(TABLE)

_PA_OPS = {"eq": "__eq__", "neq": "__ne__", "lt": "__lt__", "lte": "__le__", "gt": "__gt__",
           "gte": "__ge__"}


def to_pyarrow(e, schema: pa.Schema) -> pc.Expression:
    if isinstance(e, Column):
        return pc.field(e.name)
    if isinstance(e, Literal):
        return pc.scalar(e.value)
    if isinstance(e, Compare):
        left, right = e.left, e.right
        lp = to_pyarrow(left, schema)
        if isinstance(left, Column) and isinstance(right, Literal):
            t = schema.field(left.name).type
            v = right.value
            if pa.types.is_integer(t) and isinstance(v, float):
                lp = lp.cast(pa.float64())
                rp = pc.scalar(v)
            elif pa.types.is_integer(t) and t.bit_width < 64:
                lp = lp.cast(pa.int64())  # literals outside the column's range stay exact
                rp = pc.scalar(pa.scalar(v, pa.int64()))
            elif pa.types.is_decimal(t):
                rp = pc.scalar(pa.scalar(v, pa.decimal128(12, 3)))
            else:
                rp = pc.scalar(pa.scalar(v, t))
        else:
            rp = to_pyarrow(right, schema)
        return getattr(lp, _PA_OPS[e.op])(rp)
    if isinstance(e, And):
        return to_pyarrow(e.left, schema) & to_pyarrow(e.right, schema)
    if isinstance(e, Or):
        return to_pyarrow(e.left, schema) | to_pyarrow(e.right, schema)
    if isinstance(e, Not):
        return ~to_pyarrow(e.child, schema)
    if isinstance(e, IsNull):
        f = to_pyarrow(e.child, schema)
        return f.is_valid() if e.negated else f.is_null()
    if isinstance(e, IsIn):
        t = schema.field(e.child.name).type
        vals = pa.array([v for v in e.values if v is not None], type=t)
        inner = to_pyarrow(e.child, schema).isin(vals)
        # SQL: a null row gives null, not false
        return pc.if_else(to_pyarrow(e.child, schema).is_valid(), inner,
                          pc.scalar(pa.scalar(None, pa.bool_())))
    raise TypeError(e)


def _rows(t: pa.Table) -> list:
    def norm(v):
        return "NaN" if isinstance(v, float) and v != v else v

    return [tuple(norm(v) for v in r.values()) for r in t.to_pylist()]


def same(got: pa.Table, exp: pa.Table) -> bool:
    """Equal schemas and values (NaN equal to NaN, unlike Table.equals)."""
    return got.schema == exp.schema and _rows(got) == _rows(exp)


def expected(table: pa.Table, e, columns=None) -> pa.Table:
    out = table.filter(to_pyarrow(e, table.schema)) if e is not None else table
    return out.select(columns) if columns is not None else out


# -- generated predicates -------------------------------------------------------------------

leaf = st.one_of(
    st.tuples(st.just("i"), st.sampled_from(["eq", "neq", "lt", "lte", "gt", "gte"]),
              st.one_of(st.integers(-60, 60), st.sampled_from([2.5, -0.5, 1e20, -1e20]))),
    st.tuples(st.just("u8"), st.sampled_from(["eq", "lt", "gte"]), st.integers(-5, 300)),
    st.tuples(st.just("f"), st.sampled_from(["eq", "neq", "lt", "gt"]),
              st.sampled_from([0.0, -3.5, 1.2, 100.0, math.inf])),
    st.tuples(st.just("s"), st.sampled_from(["eq", "neq", "lt", "gte"]),
              st.sampled_from(["apple", "fig", "", "zzz", "b"])),
    st.tuples(st.just("ts"), st.sampled_from(["lt", "gte", "eq"]), st.integers(0, 10**9)),
    st.tuples(st.just("d"), st.sampled_from(["eq", "lt", "gt"]),
              st.sampled_from(["0.25", "10.5", "24.75", "-1"])),
)


def leaf_expr(t):
    name, op, v = t
    c = col(name)
    if name == "ts":
        v = pa.scalar(v, TS)
    if name == "d":
        v = decimal.Decimal(v)
    return Compare(op, c, Literal(v))


other_leaf = st.one_of(
    st.sampled_from(["i", "f", "s", "b", "d"]).map(lambda n: col(n).is_null()),
    st.sampled_from(["i", "f", "s", "b"]).map(lambda n: col(n).is_not_null()),
    st.lists(st.integers(-55, 55), min_size=1, max_size=4).map(lambda v: col("i").is_in(v)),
    st.lists(st.sampled_from(["apple", "fig", "nope", ""]), min_size=1, max_size=3).map(
        lambda v: col("s").is_in(v)),
    st.tuples(st.integers(-40, 0), st.integers(0, 40)).map(lambda t: col("i").between(*t)),
    st.just(col("b") == True),  # noqa: E712 - builds an expression
)

exprs = st.recursive(
    st.one_of(leaf.map(leaf_expr), other_leaf),
    lambda children: st.one_of(
        st.tuples(children, children).map(lambda t: t[0] & t[1]),
        st.tuples(children, children).map(lambda t: t[0] | t[1]),
        children.map(lambda c: ~c),
    ),
    max_leaves=4,
)


@given(exprs)
def test_scan_matches_pyarrow_filter(e):
    got = vio.scan(DATA, filter=e).to_arrow()
    exp = expected(TABLE, e)
    assert got.num_rows == exp.num_rows, repr(e)
    assert same(got, exp), repr(e)


@given(exprs, st.lists(st.sampled_from(TABLE.column_names), min_size=1, max_size=3, unique=True))
def test_scan_projection_and_filter(e, columns):
    got = vio.scan(DATA, columns=columns, filter=e).to_arrow()
    assert got.schema.names == columns
    assert same(got, expected(TABLE, e, columns))


def test_scan_without_filter_returns_everything_in_order():
    s = vio.scan(DATA)
    assert s.schema == TABLE.schema
    assert same(s.to_arrow(), TABLE)
    assert s.stats.rows_returned == TABLE.num_rows
    assert s.stats.chunks == math.ceil(TABLE.num_rows / 700)


@pytest.mark.parametrize("limit", [0, 1, 699, 700, 701, 2999, 3000, 5000])
def test_limit(limit):
    s = vio.scan(DATA, limit=limit)
    assert same(s.to_arrow(), TABLE.slice(0, limit))
    e = col("i") > 0
    got = vio.scan(DATA, filter=e, limit=limit).to_arrow()
    assert same(got, expected(TABLE, e).slice(0, limit))


def test_limit_stops_reading_early():
    s = vio.scan(DATA, limit=10)
    s.to_arrow()
    assert s.stats.chunks == 1


def test_batch_size():
    batches = list(vio.scan(DATA, batch_size=256))
    assert max(b.num_rows for b in batches) == 256
    assert same(pa.Table.from_batches(batches), TABLE)


def test_empty_projection_counts_rows():
    assert vio.scan(DATA, columns=[]).to_arrow().num_rows == TABLE.num_rows
    assert vio.scan(DATA, columns=[], filter=col("u8") < 10).to_arrow().num_rows == \
        expected(TABLE, col("u8") < 10).num_rows


def test_pruning_by_statistics():
    # ts is sorted: a cutoff inside the first chunk prunes every later chunk
    cutoff = TABLE["ts"][100]
    s = vio.scan(DATA, filter=col("ts") < cutoff)
    got = s.to_arrow()
    assert same(got, expected(TABLE, col("ts") < cutoff))
    assert s.stats.chunks == 5 and s.stats.chunks_pruned == 4
    s = vio.scan(DATA, filter=(col("i") > 1000) | col("s").is_in(["zzz", "zz"]))
    assert s.to_arrow().num_rows == 0
    assert s.stats.chunks_pruned == s.stats.chunks == 5


def test_stats_show_selective_decoding():
    s = vio.scan(DATA, columns=["i"], filter=col("s") == "fig")
    got = s.to_arrow()
    assert same(got, expected(TABLE, col("s") == "fig", ["i"]))
    st_ = s.stats
    assert st_.rows_scanned == TABLE.num_rows
    assert st_.rows_returned == got.num_rows
    assert 0 < st_.bytes_canonicalized < TABLE.nbytes / 4


def test_multiple_sources_list_and_glob(tmp_path):
    paths = []
    for k in range(3):
        p = tmp_path / f"part-{k}.vxipc"
        vio.write_ipc(str(p), TABLE.slice(k * 1000, 1000), chunk_rows=300)
        paths.append(str(p))
    e = col("s") == "kiwi"
    assert same(vio.scan(paths, filter=e).to_arrow(), expected(TABLE, e))
    g = vio.scan(str(tmp_path / "part-*.vxipc"), filter=e)
    assert g.stats.sources == 3
    assert same(g.to_arrow(), expected(TABLE, e))
    with pytest.raises(FileNotFoundError):
        vio.scan(str(tmp_path / "nothing-*.vxipc"))


def test_sources_must_share_a_dtype(tmp_path):
    a, b = tmp_path / "a.vxipc", tmp_path / "b.vxipc"
    vio.write_ipc(str(a), pa.table({"x": [1]}))
    vio.write_ipc(str(b), pa.table({"x": ["s"]}))
    with pytest.raises(vio.VortexIPCError, match="differs"):
        vio.scan([str(a), str(b)]).to_arrow()


def test_schema_known_before_reading_data():
    s = vio.scan(DATA, columns=["s", "i"])
    assert s.schema.names == ["s", "i"]
    assert s.stats.chunks == 0


def test_bad_column_and_bad_literal_are_clear_errors():
    with pytest.raises(KeyError, match="no column 'nope'"):
        vio.scan(DATA, filter=col("nope") == 1)
    with pytest.raises(KeyError, match="nope"):
        vio.scan(DATA, columns=["nope"])
    with pytest.raises(TypeError, match="cannot compare"):
        vio.scan(DATA, filter=col("i") == "text")
    with pytest.raises(TypeError, match="truth value"):
        bool(col("i") == 1)


def test_comparison_with_null_literal_is_null():
    assert vio.scan(DATA, filter=col("i") == None).to_arrow().num_rows == 0  # noqa: E711
    assert vio.scan(DATA, filter=~(col("i") == None)).to_arrow().num_rows == 0  # noqa: E711


def test_reversed_comparison_and_literal_side():
    assert same(vio.scan(DATA, filter=5 < col("i")).to_arrow(), expected(TABLE, col("i") > 5))


def test_scan_non_struct_stream():
    buf = io.BytesIO()
    vio.write_ipc(buf, pa.array([3, 1, None, 7]))
    t = vio.scan(buf.getvalue()).to_arrow()
    assert t.column(0).to_pylist() == [3, 1, None, 7]


def test_scan_is_an_arrow_stream():
    t = pa.table(vio.scan(DATA, filter=col("b") == True))  # noqa: E712
    assert same(t, expected(TABLE, col("b") == True))  # noqa: E712


def test_string_view_output_matches_string_output():
    t = pa.table({"s": pa.array(np.array(["x", "yy", "a-much-longer-string!"])[
        np.random.default_rng(0).integers(0, 3, 4000)], mask=np.arange(4000) % 9 == 0),
        "i": np.arange(4000)})
    data = stream_of(t)
    with vio.StreamReader(data) as r:
        assert any(b.array.field("s").encoding == "vortex.dict" for b in r)  # the gather path
    views = vio.StreamReader(data).read_arrow(string_view=True)
    assert views.schema.field("s").type == pa.string_view()
    assert views.cast(t.schema).equals(t)
    e = col("s") == "yy"
    s = vio.scan(data, filter=e, string_view=True)
    assert s.schema.field("s").type == pa.string_view()
    assert s.to_arrow().cast(t.schema).equals(expected(t, e))
    assert vio.array(t["s"]).to_arrow(string_view=True).type == pa.string_view()


@pytest.mark.parametrize("e", [
    col("s") == "fig",
    (col("s") == "kiwi") & (col("i") == 3),
    Compare("eq", Literal(7), Column("i")),  # literal on the left
    col("b") == True,  # noqa: E712
    col("u8") == 17,
    col("ts") == TABLE["ts"][1234].as_py(),
    col("u8") == 300,  # out of u8's range: no row
    col("i") == 1.5,  # not an integer: no row
    (col("s") == "fig") | (col("s") == "pear"),  # not a conjunct: decoded as usual
    col("f") == 0.0,  # floats are never pinned (-0.0 == 0.0)
])
@pytest.mark.parametrize("string_view", [False, True])
def test_equality_conjuncts_pin_their_columns(e, string_view):
    """Rows selected by ``col == literal`` all hold the literal: the scan repeats it
    rather than decoding the column, with the same values and Arrow types."""
    s = vio.scan(DATA, filter=e, string_view=string_view)
    got = s.to_arrow()
    assert got.schema == s.schema
    assert same(got.cast(TABLE.schema), expected(TABLE, e)), repr(e)


def test_a_pinned_column_is_not_decoded():
    s = vio.scan(DATA, columns=["s"], filter=col("s") == "fig")
    got = s.to_arrow()
    assert got.num_rows == expected(TABLE, col("s") == "fig").num_rows > 0
    assert s.stats.bytes_canonicalized == 0  # every returned value is the literal
    s = vio.scan(DATA, columns=["s"], filter=col("s").is_in(["fig"]))
    assert same(s.to_arrow(), got)
    assert s.stats.bytes_canonicalized > 0


# -- a count of a local file reads its messages' headers only ----------------------------------


def test_a_count_of_a_file_reads_only_its_headers(tmp_path):
    p = tmp_path / "t.vxipc"
    p.write_bytes(DATA)
    s = vio.scan(p, columns=[])
    assert s.to_arrow().num_rows == TABLE.num_rows
    st_ = s.stats
    assert (st_.chunks, st_.rows_scanned, st_.bytes_canonicalized) == (5, TABLE.num_rows, 0)
    # the DType message and five message prefixes and headers: a few KB of the file
    assert 0 < st_.bytes_read < len(DATA) / 10
    # a limit stops the walk; an offset skips rows; several files add up
    s = vio.scan(p, columns=[], limit=1000)
    assert s.to_arrow().num_rows == 1000 and s.stats.chunks == 2
    assert vio.scan(p, columns=[], offset=2990).to_arrow().num_rows == 10
    q = tmp_path / "u.vxipc"
    q.write_bytes(stream_of(TABLE.slice(0, 50), chunk_rows=7))
    assert vio.scan([p, q], columns=[]).to_arrow().num_rows == TABLE.num_rows + 50
    # a filter, or a column, reads the bodies
    s = vio.scan(p, columns=[], filter=col("u8") < 10)
    assert s.to_arrow().num_rows == expected(TABLE, col("u8") < 10).num_rows
    assert s.stats.bytes_read >= len(DATA) - 64


def test_a_count_sees_framing_damage_but_not_inside_bodies(tmp_path):
    spans = vio.message_spans(DATA)
    # a byte inside the third message's body: the headers still frame the stream
    damaged = bytearray(DATA)
    damaged[spans[2].offset + spans[2].size - 200] ^= 0xFF
    p = tmp_path / "body.vxipc"
    p.write_bytes(bytes(damaged))
    assert vio.scan(p, columns=[]).to_arrow().num_rows == TABLE.num_rows
    # a stream cut inside a message: the reader's error, located
    p = tmp_path / "cut.vxipc"
    p.write_bytes(DATA[: spans[3].offset + 10])
    with pytest.raises(vio.TruncatedStreamError) as ei:
        vio.scan(p, columns=[]).to_arrow()
    assert ei.value.message_index == 4 and ei.value.source == str(p)
    # rows over the reader's limit: the limit's error, as a decode gives it
    p = tmp_path / "ok.vxipc"
    p.write_bytes(DATA)
    with pytest.raises(vio.LimitExceededError, match="rows, over the limit") as ei:
        vio.scan(p, columns=[], limits=vio.ReaderLimits(max_rows_per_message=600)).to_arrow()
    assert ei.value.message_index == 1


def test_a_count_of_a_stream_with_integrity_data_verifies_every_body(tmp_path):
    buf = io.BytesIO()
    vio.write_ipc(buf, TABLE, chunk_rows=700, integrity=True)
    data = buf.getvalue()
    p = tmp_path / "i.vxipc"
    p.write_bytes(data)
    s = vio.scan(p, columns=[])
    assert s.to_arrow().num_rows == TABLE.num_rows and s.stats.bytes_read == len(data)
    spans = vio.message_spans(data)
    damaged = bytearray(data)
    damaged[spans[2].offset + spans[2].size - 200] ^= 0xFF
    p.write_bytes(bytes(damaged))
    with pytest.raises(vio.IntegrityError):
        vio.scan(p, columns=[]).to_arrow()


def test_a_count_from_headers_agrees_with_reading_every_column(tmp_path):
    """Mutants of the struct seed streams (``fuzz/mutate.py``), as files: where reading every
    column succeeds, the header-only count gives its rows; where the count fails, the read
    fails too (the count sees the framing alone, which the read checks as well); and every
    failure is a ``VortexIPCError``."""
    import random

    from fuzz.corpus import seed_streams
    from fuzz.harness import FUZZ_LIMITS
    from fuzz.mutate import mutate

    seeds = [s for s in seed_streams().values()
             if isinstance(vio.StreamReader(s).dtype, vio.dtype.Struct)]
    assert len(seeds) >= 10
    rng = random.Random(20261206)
    p = tmp_path / "m.vxipc"
    outcomes = {"both ok": 0, "count ok, read fails": 0, "both fail": 0}
    for k in range(400):
        _, data = mutate(seeds[k % len(seeds)], rng, seeds)
        p.write_bytes(data)
        try:
            count: int | None = vio.scan(p, columns=[], limits=FUZZ_LIMITS).to_arrow().num_rows
        except vio.VortexIPCError:
            count = None
        try:
            rows: int | None = vio.scan(p, limits=FUZZ_LIMITS).to_arrow().num_rows
        except vio.VortexIPCError:
            rows = None
        if rows is not None:
            assert count == rows, k
            outcomes["both ok"] += 1
        else:
            outcomes["count ok, read fails" if count is not None else "both fail"] += 1
    # the mutants reach every case
    assert min(outcomes.values()) > 10, outcomes
