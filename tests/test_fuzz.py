"""Mutation fuzzing of the reader (issue 8): every mutant of a stream of every encoding,
read and fully canonicalized, ends in success or a ``VortexIPCError`` within 2 s and a
bounded address space.

Seeds: every golden stream (tests/golden/**, written by vortex-data 0.93) and streams our
own encoders write for every registered encoding (``fuzz/corpus.py``). Mutants
(``fuzz/mutate.py``): bit flips, overwritten bytes, truncation, inflated lengths and counts
in place (header length, body_size, row_count, buffer lengths and padding, node encoding
and buffer indices, metadata varints), re-framed structural changes (metadata varints set
to extremes, buffers cut/grown/overwritten, children dropped/duplicated/swapped/grafted,
encoding IDs replaced, row counts, statistics), reordered messages, another stream's
DType message and spliced messages. Each mutant runs in a ``fuzz.sandbox.Sandbox`` worker
(time and memory bounded; a hang, a crash, an allocation that hits the bound or any
exception other than ``VortexIPCError`` fails the test). The worker also reads each mutant
with ``read_arrow``, and scans it (every column, or a filter and a projection), by the
native core and by the numpy reference and fails the test when they differ
(``fuzz.harness.differential``: identical tables, floats by their bits, or the same error
class; a scan of a stream that does not read may raise natively where the reference's
lazier scan gives a table, never the other way round). A second sweep reads the same
mutants by every route a user has (``fuzz.harness.ROUTES``: batch by batch, ``read_arrow``,
``read_ipc``, scans, the async reader) on both cores: public, located errors only, and the
same class from both cores on every route.

Sizes: ``FUZZ_EXAMPLES`` (hypothesis examples, default 150), ``FUZZ_MUTATIONS`` (the
deterministic sweep, default 300) and ``FUZZ_FIELDS`` (fields inflated per stream, default
60; 0 = all); ``FUZZ_SEED`` picks another range of sweep mutants (default 0). The full acceptance run is
``FUZZ_MUTATIONS=10000 .venv/bin/pytest -q -s tests/test_fuzz.py -k sweep``
(``make fuzz-mutations``); ``FUZZ_REPORT=path.json`` writes its numbers.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import random
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vortex_io as vio
from fuzz.corpus import encodings_of, seed_streams
from fuzz.harness import ROUTES, consume, exercise
from fuzz.mutate import KINDS, interesting, mutate, parsed
from fuzz.route_sweep import mutant, sweep
from fuzz.sandbox import GiB, Sandbox
from tests.vx_util import split_messages

SEEDS = seed_streams()
NAMES = sorted(SEEDS)
DONORS = [SEEDS[k] for k in NAMES]
TIME_LIMIT = float(os.environ.get("FUZZ_TIME_LIMIT", "2.0"))
N_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
N_MUTATIONS = int(os.environ.get("FUZZ_MUTATIONS", "300"))
N_FIELDS = int(os.environ.get("FUZZ_FIELDS", "60")) or 1 << 30
FIRST = int(os.environ.get("FUZZ_SEED", "0"))  # the sweep's first mutant number
FINDINGS = pathlib.Path(__file__).resolve().parent.parent / "fuzz" / "findings"


@pytest.fixture(scope="module")
def sandbox():
    # FUZZ_LIMITS bound what a batch may decode to 64 MiB: 1 GiB of address space is
    # ample for any input that honours them, so a path that ignores them is caught
    # differential: each mutant is also read with read_arrow and scanned by the native core and by the
    # reference (VORTEX_IO_NATIVE=0 semantics); different tables or error classes fail
    with Sandbox(time_limit=TIME_LIMIT, memory_limit=1 * GiB, differential=True) as sb:
        yield sb


def _check(sb: Sandbox, data: bytes, what: str) -> str:
    res = sb.run(data)
    if res.failed:
        FINDINGS.mkdir(parents=True, exist_ok=True)
        path = FINDINGS / f"{res.outcome}-{abs(hash(data)) % 10**12}.bin"
        path.write_bytes(data)
        pytest.fail(f"{what}: {res.outcome} after {res.secs:.2f} s (input saved to {path})\n"
                    f"{res.detail}")
    return res.outcome


# -- the seeds ----------------------------------------------------------------------------------


def test_every_registered_encoding_is_seeded():
    seen: set[str] = set()
    for data in SEEDS.values():
        seen |= encodings_of(data)
    from vortex_io._array import get_encoding

    # vortex_io's own encodings (other test modules register test-only ones)
    ours = {e for e in vio.registered_encodings()
            if type(get_encoding(e)).__module__.startswith("vortex_io.")}
    assert len(ours) >= 30 and ours <= seen, sorted(ours - seen)
    golden = [p for p in (pathlib.Path(__file__).parent / "golden").rglob("*")
              if p.suffix in (".vortex", ".vxipc")]
    assert len([k for k in NAMES if not k.startswith("gen/")]) == len(golden) > 80


def test_seeds_read_cleanly():
    for name in NAMES:
        assert consume(SEEDS[name]) == "ok", name


# -- hypothesis-driven mutants (shrunk to a minimal mutation on failure) -----------------------------


@settings(max_examples=N_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(name=st.sampled_from(NAMES), kind=st.sampled_from(KINDS),
       rnd=st.randoms(use_true_random=False))
def test_mutants_end_in_success_or_a_vortex_error(sandbox, name, kind, rnd):
    kind, data = mutate(SEEDS[name], rnd, DONORS, kind=kind)
    _check(sandbox, data, f"{kind} mutant of {name}")


# -- targeted sweeps ---------------------------------------------------------------------------------


SMALL = [k for k in NAMES if len(SEEDS[k]) <= 700]


@pytest.mark.parametrize("name", SMALL)
def test_truncation_at_every_offset(name):
    """A cut between messages is a shorter complete stream (with integrity data: a
    TruncatedStreamError too, the end marker missing); any other cut is a
    TruncatedStreamError at exactly the cut offset."""
    data = SEEDS[name]
    bounds = set(np.cumsum([0] + [len(p) for p in split_messages(data)]).tolist())
    integrity = vio.StreamReader(data).integrity
    for cut in range(1, len(data)):
        prefix = data[:cut]
        if cut in bounds and not integrity:
            assert consume(prefix, scans=False) == "ok", cut
            continue
        with pytest.raises(vio.TruncatedStreamError) as ei:
            with vio.StreamReader(prefix) as r:
                for b in r:
                    b.array.to_arrow()
        assert ei.value.offset == cut, (name, cut)


FIELD_SEEDS = ["gen/compressed_table", "gen/fsst_utf8", "fastlanes/i32_patches_nulls",
               "values/utf8_low_card_nulls", "canonical/list_of_struct", "gen/rle_i32",
               "gen/inverted_index"]


@pytest.mark.parametrize("name", FIELD_SEEDS)
def test_every_length_and_count_inflated(sandbox, name):
    """Every numeric field the wire has (header length, body_size, row_count, buffer
    padding/alignment/length, encoding and buffer indices, metadata varints), each set to
    values that break lengths: 0, current+1, the type's maximum, 2**31."""
    data = SEEDS[name]
    fields = [f for m in parsed(data) for f in m.fields]
    rng = random.Random(name)
    if len(fields) > N_FIELDS:  # a sample of the multi-message streams (all: FUZZ_FIELDS=0)
        fields = sorted(rng.sample(fields, N_FIELDS), key=lambda f: f.pos)
    tried = 0
    for f in fields:
        cur = int.from_bytes(data[f.pos : f.pos + f.size], "little")
        top = (1 << (8 * f.size)) - 1
        for v in {0, (cur + 1) & top, top, 2**31 & top, interesting(rng, cur, 8 * f.size)}:
            if v == cur:
                continue
            mutant = data[: f.pos] + v.to_bytes(f.size, "little") + data[f.pos + f.size :]
            _check(sandbox, mutant, f"{f.what} at {f.pos} of {name} set to {v}")
            tried += 1
    assert tried > 3 * len(fields) // 2


SWAP_SEEDS = ["canonical/primitives", "canonical/utf8", "canonical/struct_nested",
              "canonical/list_i32", "canonical/decimal128", "canonical/temporal",
              "canonical/fixed_size_list_f32", "canonical/null", "fastlanes/i64_outliers",
              "values/f64_prices_2dp", "values/utf8_low_card_nulls", "values/bool_nulls",
              "strings_temporal/ts_us_seconds_utc", "gen/compressed_table", "gen/fsst_utf8"]


def test_every_dtype_swapped_onto_every_stream(sandbox):
    """Another stream's DType message in front of these array messages."""
    outcomes: collections.Counter[str] = collections.Counter()
    for a in SWAP_SEEDS:
        dtype_msg = split_messages(SEEDS[a])[0]
        for b in SWAP_SEEDS:
            arrays = split_messages(SEEDS[b])[1:]
            outcomes[_check(sandbox, dtype_msg + b"".join(arrays), f"dtype of {a} on {b}")] += 1
    assert outcomes["ok"] >= len(SWAP_SEEDS)  # at least each stream with its own dtype
    assert outcomes["MalformedStreamError"] > 0


def test_mutation_sweep(sandbox):
    """``FUZZ_MUTATIONS`` deterministic mutants across all seeds and kinds (the full run is
    10,000): counts outcomes and the slowest input, fails on any bug, hang, crash, slow
    input or runaway allocation."""
    outcomes: collections.Counter[str] = collections.Counter()
    by_kind: collections.Counter[str] = collections.Counter()
    slowest = (0.0, "")
    t0 = time.perf_counter()
    failures = []
    for i in range(FIRST, FIRST + N_MUTATIONS):
        name, kind, data = mutant(i)
        res = sandbox.run(data)
        outcomes[res.outcome] += 1
        by_kind[kind.split("+")[0]] += 1
        if res.secs > slowest[0]:
            slowest = (res.secs, f"#{i} {kind} of {name}")
        if res.failed:
            FINDINGS.mkdir(parents=True, exist_ok=True)
            path = FINDINGS / f"sweep-{i}-{res.outcome}.bin"
            path.write_bytes(data)
            failures.append(f"#{i} {kind} of {name}: {res.outcome} ({path})\n{res.detail}")
    report = {"inputs": N_MUTATIONS, "first": FIRST, "outcomes": dict(outcomes),
              "kinds": dict(by_kind),
              "seeds": len(NAMES), "slowest_s": round(slowest[0], 3), "slowest": slowest[1],
              "wall_s": round(time.perf_counter() - t0, 1), "worker_restarts": sandbox.restarts,
              "failures": len(failures)}
    print("\nfuzz sweep:", json.dumps(report))
    if os.environ.get("FUZZ_REPORT"):
        pathlib.Path(os.environ["FUZZ_REPORT"]).write_text(json.dumps(report, indent=1))
    assert not failures, "\n\n".join(failures[:5])
    assert set(by_kind) == set(KINDS) or N_MUTATIONS < 200
    assert outcomes["ok"] > 0 and outcomes["MalformedStreamError"] > 0


def test_mutation_sweep_by_every_route():
    """The sweep's mutants (``FUZZ_MUTATIONS``, from ``FUZZ_SEED``) read by every route a user
    has (``fuzz.harness.ROUTES``: batch by batch with ``Batch.to_arrow()`` alone, with lazy
    fields, ``read_next_batch``, ``read_arrow``, ``read_ipc``, scans in batches and with a
    projection and a filter, the async reader): each ends in success or a public
    ``VortexIPCError`` that says where it is, and with the native core every route's
    outcome class is the reference's (``fuzz.route_sweep``; ``python -m fuzz.route_sweep N``
    is the large run)."""
    rep = sweep(N_MUTATIONS, FIRST, time_limit=2 * TIME_LIMIT)
    print("\nroute sweep:", json.dumps({k: rep[k] for k in ("outcomes", "wall_s")}))
    for f in rep["failures"]:
        FINDINGS.mkdir(parents=True, exist_ok=True)
        (FINDINGS / f"routes-{f['i']}-{f['outcome']}.bin").write_bytes(mutant(f["i"])[2])
    assert not rep["failures"], "\n\n".join(
        f"#{f['i']} {f['kind']} of {f['seed']}: {f['outcome']}\n{f['detail']}"
        for f in rep["failures"][:5])
    batches = rep["routes"]["batches"]
    assert batches.get("ok", 0) > 0 and batches.get("MalformedStreamError", 0) > 0, batches
    assert set(rep["routes"]) >= set(ROUTES)


# -- regressions: minimized inputs of bugs the fuzzers found ----------------------------------------

# canonical/null with its row_count set to 2**32-2 (found by the sweep and by atheris):
# vortex.null's to_arrow took ~0.5 s per call (pa.nulls walks every row): over 2 s when
# read, sliced and scanned. Now O(1); by default the batch is refused outright.
NULL_4G = bytes.fromhex(
    "3000000014000000000000000c001400000013000c0004000c00000020000000000000000c00000000000003"
    "04000400040000000c00000008000c000700080008000000000000010800000004000400040000005800"
    "000014000000000000000c0018000000070008000c000c000000000000011800000048000000000000000000"
    "000008000c00080004000800000008000000feffffff01000000040000000b000000766f727465782e6e75"
    "6c6c000c00000008000c0004000800080000001800000004000000000000000c0010000000040008000c00"
    "0c00000010000000100000000400000000000000000000000000000044000000")


def test_regression_null_array_of_four_billion_rows():
    with pytest.raises(vio.LimitExceededError, match="4294967294 rows of null"):
        exercise(NULL_4G)
    with vio.StreamReader(NULL_4G, limits=vio.ReaderLimits.unlimited()) as r:
        (b,) = list(r)
    t0 = time.perf_counter()
    a = b.array.to_arrow()
    b.array.slice(1, 2**32 - 3).to_arrow()
    assert len(a) == 2**32 - 2 and a.null_count == 2**32 - 2
    assert time.perf_counter() - t0 < 0.2


def test_regression_empty_constant_of_a_list_type():
    """Found by atheris: a zero-row ``vortex.constant`` of a list (or fixed-size list) dtype
    raised ``pyarrow.ArrowInvalid`` from ``pa.repeat`` in ``to_arrow()``."""
    from tests.vx_util import our_array_stream
    from vortex_io import dtype as dt
    from vortex_io.encodings._constant import constant_array

    for d, v, py in [(dt.List(dt.int32()), [1, 2], [1, 2]),
                     (dt.FixedSizeList(dt.int8(), 2), [3, 4], [3, 4]),
                     (dt.Struct(["l"], [dt.List(dt.Utf8())]), [["a"]], {"l": ["a"]})]:
        data = our_array_stream(constant_array(v, 0, d))
        assert consume(data) == "ok"
        got = vio.read_ipc(data).to_arrow()
        assert len(got) == 0 and got.type == d.to_arrow()
        # and a constant sliced down to no rows
        whole = vio.read_ipc(our_array_stream(constant_array(v, 4, d)))
        assert whole.slice(2, 2).to_arrow().to_pylist() == []
        assert whole.slice(1, 3).to_arrow().to_pylist() == [py, py]


def test_regression_a_child_length_past_the_largest_python_length():
    """Found by the sweep (#2890, a metadata varint of gen/nested_table): a list whose
    elements length reads 2**64 - 1 made the reference raise ``OverflowError`` from
    ``len(array)`` (no ``VortexIPCError``); it is a ``MalformedStreamError`` on both sides."""
    import pyarrow as pa

    from fuzz.wire import proto_encode, proto_fields, rewrite_arrays
    from tests.native_util import NATIVE
    from tests.vx_util import our_stream
    from vortex_io import _native_glue as ng

    good = our_stream(pa.table({"l": pa.array([[1, 2], [3], None] * 5, pa.list_(pa.int32()))}),
                      compress=False)

    def inflate(am) -> None:
        (lst,) = [n for n in am.root.walk() if n.encoding == "vortex.list"]
        fields = [(num, wt, v) for num, wt, v, *_ in proto_fields(lst.metadata)]
        # the elements length (the varint that holds 15) set to 2**64 - 1
        assert [v for _, _, v in fields].count(15) == 1
        lst.metadata = proto_encode([(num, wt, 2**64 - 1 if v == 15 else v)
                                     for num, wt, v in fields])

    bad = rewrite_arrays(good, inflate)
    for native in (False, True) if NATIVE else (False,):
        with ng.use_native(native):
            with pytest.raises(vio.MalformedStreamError, match="18446744073709551615"):
                vio.read_table(bad)
            assert consume(bad) == "MalformedStreamError"
