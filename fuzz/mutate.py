"""Mutators: turn a valid seed stream into a hostile one.

Byte-level kinds work on the raw stream (``bitflip``, ``overwrite``, ``truncate``,
``field``: inflate or zero a length, count or index in place). Structural kinds decode the
seed with ``fuzz.wire``, change one thing and re-frame the message, so the mutant passes
the framing checks and reaches the encodings: ``meta_varint`` (one metadata varint set to
an extreme), ``meta_bytes``, ``buffer`` (cut, grow, overwrite a buffer), ``children``
(drop, duplicate, swap, graft), ``buffer_refs``, ``encoding`` (a node's ID replaced by
another's), ``row_count``, ``stats``, ``reorder`` (messages permuted, dropped,
duplicated), ``dtype_swap`` (another seed's DType message in front of these array
messages) and ``splice`` (another seed's array messages appended).

``mutate(stream, rng, others)`` picks a kind at random; ``MUTATIONS[kind](...)`` applies one.
Every mutator is a pure function of its inputs and the ``random.Random`` it is given, so
a mutant is reproduced from (seed name, kind, rng seed).

>>> import random
>>> from fuzz.corpus import seed_streams
>>> s = seed_streams()["canonical/primitives"]
>>> kind, data = mutate(s, random.Random(1), [s])
>>> isinstance(data, bytes) and kind in MUTATIONS
True
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Sequence

from vortex_io._ipc.schema import MessageType
from vortex_io._stats import ArrayStats

from .wire import ArrayMsg, Node, RawMsg, parse_stream, proto_encode, proto_fields

__all__ = ["mutate", "MUTATIONS", "KINDS", "interesting", "parsed"]

_PARSED: dict[bytes, list[RawMsg]] = {}


def parsed(stream: bytes) -> list[RawMsg]:
    """``parse_stream`` with a cache (seeds are parsed once)."""
    p = _PARSED.get(stream)
    if p is None:
        if len(_PARSED) > 512:
            _PARSED.clear()
        p = _PARSED[stream] = parse_stream(stream)
    return p


def interesting(rng: random.Random, current: int, bits: int) -> int:
    """A value likely to break a length, count, offset or index field of ``bits`` bits."""
    top = (1 << bits) - 1
    c = [0, 1, 2, current - 1, current + 1, current * 2, current + 7, current << 8,
         0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
         2**62, 2**63 - 1, 2**63, top, top - 1, top >> 1, rng.getrandbits(bits),
         rng.randrange(0, max(2, current * 4 + 16))]
    return rng.choice(c) & top


# -- byte level ---------------------------------------------------------------------------


def m_bitflip(stream: bytes, rng: random.Random, others) -> bytes:
    b = bytearray(stream)
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def m_overwrite(stream: bytes, rng: random.Random, others) -> bytes:
    b = bytearray(stream)
    for _ in range(rng.choice((1, 2, 3, 8))):
        i = rng.randrange(len(b))
        k = min(rng.choice((1, 1, 2, 4, 8)), len(b) - i)
        v = rng.choice((0x00, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)))
        b[i : i + k] = bytes([v]) * k if rng.random() < 0.6 else rng.randbytes(k)
    return bytes(b)


def m_truncate(stream: bytes, rng: random.Random, others) -> bytes:
    cut = rng.randrange(len(stream))
    if rng.random() < 0.2:
        return stream[:cut] + rng.randbytes(rng.randrange(1, 16))
    return stream[:cut]


def m_field(stream: bytes, rng: random.Random, others) -> bytes:
    fields = [f for m in parsed(stream) for f in m.fields]
    f = rng.choice(fields)
    cur = int.from_bytes(stream[f.pos : f.pos + f.size], "little")
    v = interesting(rng, cur, 8 * f.size)
    return stream[: f.pos] + v.to_bytes(f.size, "little") + stream[f.pos + f.size :]


# -- structural ---------------------------------------------------------------------------


def _arrays(stream: bytes) -> list[int]:
    return [i for i, m in enumerate(parsed(stream)) if m.array is not None]


def _restructure(stream: bytes, rng: random.Random, change: Callable[[ArrayMsg], None]) -> bytes:
    msgs = parsed(stream)
    idx = _arrays(stream)
    if not idx:
        return m_overwrite(stream, rng, [])
    i = rng.choice(idx)
    am = copy.deepcopy(msgs[i].array)
    assert am is not None
    change(am)
    return b"".join(am.encode() if j == i else m.data for j, m in enumerate(msgs))


def _pick_node(am: ArrayMsg, rng: random.Random) -> Node:
    return rng.choice(am.root.walk())


def m_meta_varint(stream: bytes, rng: random.Random, others) -> bytes:
    def change(am: ArrayMsg) -> None:
        nodes = [n for n in am.root.walk() if n.metadata]
        if not nodes:
            n = _pick_node(am, rng)
            n.metadata = proto_encode([(rng.randrange(1, 6), 0, interesting(rng, 0, 64))])
            return
        n = rng.choice(nodes)
        try:
            fields = [(num, wt, val) for num, wt, val, _s, _e in proto_fields(n.metadata)]
        except ValueError:
            n.metadata = rng.randbytes(len(n.metadata))
            return
        ints = [k for k, f in enumerate(fields) if f[1] == 0]
        r = rng.random()
        if ints and r < 0.7:
            k = rng.choice(ints)
            num, wt, val = fields[k]
            fields[k] = (num, wt, interesting(rng, int(val), 64))  # type: ignore[arg-type]
        elif fields and r < 0.85:
            del fields[rng.randrange(len(fields))]
        elif r < 0.93:
            lens = [k for k, f in enumerate(fields) if f[1] == 2]
            if lens:  # a nested message: mutate its bytes
                k = rng.choice(lens)
                num, wt, val = fields[k]
                sub = bytearray(val)  # type: ignore[arg-type]
                if sub:
                    sub[rng.randrange(len(sub))] = rng.randrange(256)
                fields[k] = (num, wt, bytes(sub))
        else:
            fields.append((rng.randrange(1, 8), 0, interesting(rng, 0, 64)))
        n.metadata = proto_encode(fields)

    return _restructure(stream, rng, change)


def m_meta_bytes(stream: bytes, rng: random.Random, others) -> bytes:
    def change(am: ArrayMsg) -> None:
        n = _pick_node(am, rng)
        r = rng.random()
        if r < 0.3 and n.metadata:
            n.metadata = n.metadata[: rng.randrange(len(n.metadata))]
        elif r < 0.5:
            n.metadata = b""
        else:
            n.metadata = rng.randbytes(rng.randrange(1, 24))

    return _restructure(stream, rng, change)


def m_buffer(stream: bytes, rng: random.Random, others) -> bytes:
    def change(am: ArrayMsg) -> None:
        if not am.buffers:
            am.buffers.append((rng.randbytes(rng.randrange(0, 64)), 0))
            return
        i = rng.randrange(len(am.buffers))
        data, exp = am.buffers[i]
        b = bytearray(data)
        r = rng.random()
        if r < 0.2:
            b = b[: rng.randrange(len(b) + 1)]
        elif r < 0.3:
            b += rng.randbytes(rng.randrange(1, 64))
        elif r < 0.45:
            b = bytearray(b"\xff" * len(b))
        elif r < 0.55:
            b = bytearray(len(b))
        elif r < 0.85 and b:
            # one aligned element set to an extreme: an offset, code, index or run end
            w = rng.choice((1, 2, 4, 8))
            k = len(b) // w
            if k:
                j = rng.randrange(k) * w
                cur = int.from_bytes(b[j : j + w], "little")
                b[j : j + w] = interesting(rng, cur, 8 * w).to_bytes(w, "little")
        elif b:
            j = rng.randrange(len(b))
            b[j : j + 8] = rng.randbytes(min(8, len(b) - j))
        if rng.random() < 0.1:
            exp = rng.randrange(0, 17)
        am.buffers[i] = (bytes(b), exp)
        if rng.random() < 0.1 and len(am.buffers) > 1:
            j = rng.randrange(len(am.buffers))
            am.buffers[i], am.buffers[j] = am.buffers[j], am.buffers[i]

    return _restructure(stream, rng, change)


def m_children(stream: bytes, rng: random.Random, others) -> bytes:
    def change(am: ArrayMsg) -> None:
        nodes = am.root.walk()
        n = rng.choice(nodes)
        r = rng.random()
        if n.children and r < 0.3:
            del n.children[rng.randrange(len(n.children))]
        elif n.children and r < 0.5:
            n.children.append(copy.deepcopy(rng.choice(n.children)))
        elif len(n.children) > 1 and r < 0.7:
            i, j = rng.sample(range(len(n.children)), 2)
            n.children[i], n.children[j] = n.children[j], n.children[i]
        else:  # graft another node (subtree) of this tree here
            donor = copy.deepcopy(rng.choice(nodes))
            if n.children:
                n.children[rng.randrange(len(n.children))] = donor
            else:
                n.children.append(donor)

    return _restructure(stream, rng, change)


def m_buffer_refs(stream: bytes, rng: random.Random, others) -> bytes:
    def change(am: ArrayMsg) -> None:
        n = _pick_node(am, rng)
        nb = max(1, len(am.buffers))
        r = rng.random()
        if n.buffers and r < 0.35:
            del n.buffers[rng.randrange(len(n.buffers))]
        elif r < 0.7:
            n.buffers.append(rng.randrange(nb))
        elif n.buffers:
            n.buffers[rng.randrange(len(n.buffers))] = rng.randrange(nb)

    return _restructure(stream, rng, change)


def m_encoding(stream: bytes, rng: random.Random, others) -> bytes:
    from vortex_io._array import registered_encodings

    ids = registered_encodings()

    def change(am: ArrayMsg) -> None:
        n = _pick_node(am, rng)
        n.encoding = rng.choice(ids)

    return _restructure(stream, rng, change)


def m_row_count(stream: bytes, rng: random.Random, others) -> bytes:
    def change(am: ArrayMsg) -> None:
        am.row_count = rng.choice((am.row_count - 1, am.row_count + 1, 0, am.row_count * 2,
                                   interesting(rng, am.row_count, 32)))
        am.row_count &= 2**32 - 1

    return _restructure(stream, rng, change)


def m_stats(stream: bytes, rng: random.Random, others) -> bytes:
    def change(am: ArrayMsg) -> None:
        n = _pick_node(am, rng)
        s = n.stats or ArrayStats()
        kw = dict(min=s.min, max=s.max, sum=s.sum, null_count=s.null_count,
                  is_sorted=s.is_sorted, is_constant=s.is_constant)
        key = rng.choice(list(kw))
        if key in ("min", "max", "sum"):
            cur = kw[key] or b""
            kw[key] = rng.choice((b"", rng.randbytes(rng.randrange(1, 12)),
                                  bytes(cur[: len(cur) // 2]) or b"\x00"))
        elif key == "null_count":
            kw[key] = interesting(rng, len_or(s.null_count), 64)
        else:
            kw[key] = rng.choice((True, False, None))
        n.stats = ArrayStats(min_exact=s.min_exact, max_exact=s.max_exact,
                             **kw)  # type: ignore[arg-type]

    return _restructure(stream, rng, change)


def len_or(v: int | None) -> int:
    return 0 if v is None else v


def m_reorder(stream: bytes, rng: random.Random, others) -> bytes:
    msgs = [m.data for m in parsed(stream)]
    r = rng.random()
    if len(msgs) > 1 and r < 0.4:
        rng.shuffle(msgs)
    elif len(msgs) > 1 and r < 0.6:
        del msgs[rng.randrange(len(msgs))]
    elif r < 0.8:
        i = rng.randrange(len(msgs))
        msgs.insert(rng.randrange(len(msgs) + 1), msgs[i])
    else:
        msgs.append(msgs[0])  # a second DType message
    return b"".join(msgs)


def m_dtype_swap(stream: bytes, rng: random.Random, others: Sequence[bytes]) -> bytes:
    donor = parsed(rng.choice(others))
    dtype_msgs = [m.data for m in donor if m.type == MessageType.DTYPE]
    msgs = parsed(stream)
    return b"".join([dtype_msgs[0], *(m.data for m in msgs[1:])])


def m_splice(stream: bytes, rng: random.Random, others: Sequence[bytes]) -> bytes:
    donor = parsed(rng.choice(others))
    extra = [m.data for m in donor[1:]]
    if not extra:
        return m_dtype_swap(stream, rng, others)
    return stream + rng.choice(extra)


MUTATIONS: dict[str, Callable[[bytes, random.Random, Sequence[bytes]], bytes]] = {
    "bitflip": m_bitflip,
    "overwrite": m_overwrite,
    "truncate": m_truncate,
    "field": m_field,
    "meta_varint": m_meta_varint,
    "meta_bytes": m_meta_bytes,
    "buffer": m_buffer,
    "children": m_children,
    "buffer_refs": m_buffer_refs,
    "encoding": m_encoding,
    "row_count": m_row_count,
    "stats": m_stats,
    "reorder": m_reorder,
    "dtype_swap": m_dtype_swap,
    "splice": m_splice,
}
KINDS = tuple(MUTATIONS)
#: structural kinds reach the encodings; they get more of the budget
_WEIGHTS = {"meta_varint": 4, "buffer": 4, "field": 3, "children": 2, "encoding": 2,
            "buffer_refs": 2, "row_count": 2, "dtype_swap": 2}


def mutate(stream: bytes, rng: random.Random, others: Sequence[bytes],
           kind: str | None = None) -> tuple[str, bytes]:
    """(kind, mutant): one mutation of ``stream`` (``others``: donors for swaps/splices)."""
    if kind is None:
        kind = rng.choices(KINDS, weights=[_WEIGHTS.get(k, 1) for k in KINDS])[0]
    out = MUTATIONS[kind](stream, rng, others)
    if rng.random() < 0.15:  # stack a second mutation now and then
        k2 = rng.choice(("bitflip", "overwrite", "field", "meta_varint", "buffer"))
        try:
            out = MUTATIONS[k2](out, rng, others)
            kind = f"{kind}+{k2}"
        except Exception:  # the first mutant no longer parses structurally: keep it
            pass
    return kind, out
