#include "scan.h"

#include <cmath>
#include <optional>

namespace vx {

const Scalar* constant_scalar(const Node& n);  // enc_constant.cpp

const Node* field_node(const Tree& t, int f) {
  const Node* r = t.root;
  if (!r || !r->enc || std::string_view(r->enc->id()) != "vortex.struct") return nullptr;
  size_t nf = r->dtype->children.size();
  size_t k = r->nchildren() == nf + 1 ? size_t(f) + 1 : size_t(f);
  return k < r->children.size() ? r->children[k] : nullptr;
}

namespace {

// -- pruning (compute.evaluate._skip, rule for rule) -----------------------------------------

struct NoPrune {};  // the reference's can_skip caught an exception: nothing is pruned

struct Bounds {
  std::optional<Scalar> lo, hi;
  std::optional<uint64_t> nulls;
};

Bounds bounds(const Node& f) {
  Bounds b;
  if (const Scalar* s = constant_scalar(f)) {
    if (s->null) {
      b.nulls = f.len;
      return b;
    }
    b.lo = *s;
    b.hi = *s;
    b.nulls = 0;
    return b;
  }
  if (!f.enc) throw NoPrune();  // (a foreign node: Python reads its statistics)
  const NodeStats* st = f.stats;
  if (!st) return b;
  const DType* d = f.dtype;
  DTypeArena arena;
  const DType* nd = d->kind == Kind::Null ? d : arena.with_nullable(d, true);
  try {
    if (st->min && st->min->n) {
      Scalar s = value_from_proto(*nd, *st->min);
      if (!s.null) b.lo = s;
    }
    if (st->max && st->max->n) {
      Scalar s = value_from_proto(*nd, *st->max);
      if (!s.null) b.hi = s;
    }
  } catch (Error&) {
    throw NoPrune();  // a bad statistic: MalformedStreamError, caught by can_skip
  }
  b.nulls = st->null_count;
  return b;
}

int sign(i128 a, i128 b) { return a < b ? -1 : (a > b ? 1 : 0); }

int cmp_double_int(double d, i128 i) {
  if (std::isinf(d)) return d > 0 ? 1 : -1;
  if (d >= 1.7014118346046923e38) return 1;    // 2^127
  if (d < -1.7014118346046923e38) return -1;
  double fl = std::floor(d);
  i128 f = i128(fl);
  if (f != i) return sign(f, i);
  return d > fl ? 1 : 0;
}

// sign of (s - v), or nullopt when unordered (a NaN)
std::optional<int> cmp(const Scalar& s, const PLit& v, const DType& st) {
  switch (st.kind) {
    case Kind::Primitive:
      if (ptype_is_int(st.ptype)) {
        if (v.kind == PLit::Float) return std::nullopt;  // (only a NaN literal comes as a float)
        if (v.kind != PLit::Int) throw NoPrune();
        if (v.inf) return v.inf > 0 ? -1 : 1;
        if (v.frac) return s.i <= v.i ? -1 : 1;
        return sign(s.i, v.i);
      }
      if (std::isnan(s.f)) return std::nullopt;
      if (v.kind == PLit::Int) {
        if (v.inf) return v.inf > 0 ? -1 : 1;
        if (v.frac) throw NoPrune();
        return cmp_double_int(s.f, v.i);
      }
      if (v.kind != PLit::Float) throw NoPrune();
      if (std::isnan(v.f)) return std::nullopt;
      return s.f < v.f ? -1 : (s.f > v.f ? 1 : 0);
    case Kind::Decimal:
      if (s.wide || v.kind != PLit::Int) throw NoPrune();
      if (v.inf) return v.inf > 0 ? -1 : 1;
      if (v.frac) return s.i <= v.i ? -1 : 1;
      return sign(s.i, v.i);
    case Kind::Utf8:
    case Kind::Binary: {
      if (v.kind != PLit::Bytes) throw NoPrune();
      int r = s.bytes.compare(v.s);
      return r < 0 ? -1 : (r > 0 ? 1 : 0);
    }
    case Kind::Bool:
      if (v.kind != PLit::Bool) throw NoPrune();
      return int(s.b) - int(v.b);
    default: throw NoPrune();
  }
}

// a comparison of a statistic with the literal that is false when unordered
inline bool lt0(std::optional<int> c) { return c && *c < 0; }
inline bool gt0(std::optional<int> c) { return c && *c > 0; }
inline bool le0(std::optional<int> c) { return c && *c <= 0; }
inline bool ge0(std::optional<int> c) { return c && *c >= 0; }
inline bool eq0(std::optional<int> c) { return c && *c == 0; }

bool skip(const Pred& p, const Tree& t) {
  if (t.row_count == 0) return true;
  switch (p.kind) {
    case Pred::And: return skip(*p.a, t) || skip(*p.b, t);
    case Pred::Or: return skip(*p.a, t) && skip(*p.b, t);
    case Pred::IsNull: {
      const Node* f = field_node(t, p.field);
      if (!f) throw NoPrune();
      Bounds b = bounds(*f);
      if (!f->dtype->nullable) return !p.negated;
      if (!b.nulls) return false;
      return p.negated ? *b.nulls == f->len : *b.nulls == 0;
    }
    case Pred::CmpNull: return true;
    case Pred::Cmp:
    case Pred::CmpConst:
    case Pred::In: {
      if (!p.prunable) return false;
      const Node* f = field_node(t, p.field);
      if (!f) throw NoPrune();
      Bounds b = bounds(*f);
      if (b.nulls && *b.nulls == f->len) return true;
      if (!b.lo || !b.hi) return false;
      const DType& st = f->dtype->storage();
      if (p.kind == Pred::In) {
        for (const PLit& v : p.plits)
          if (!(gt0(cmp(*b.lo, v, st)) || lt0(cmp(*b.hi, v, st)))) return false;
        return true;
      }
      auto lo = cmp(*b.lo, p.plit, st), hi = cmp(*b.hi, p.plit, st);
      switch (p.prune_op) {
        case Op::Eq: return gt0(lo) || lt0(hi);        // v < lo or v > hi
        case Op::Neq: return eq0(lo) && eq0(hi);       // lo == hi == v
        case Op::Lt: return ge0(lo);                   // lo >= v
        case Op::Lte: return gt0(lo);                  // lo > v
        case Op::Gt: return le0(hi);                   // hi <= v
        default: return lt0(hi);                       // hi < v
      }
    }
    default: return false;
  }
}

}  // namespace

bool can_skip(const Pred& p, const Tree& t, Ctx&) {
  try {
    return skip(p, t);
  } catch (NoPrune&) {
    return false;
  }
}

Mask evaluate(const Pred& p, const Tree& t, Ctx& c) {
  uint64_t n = t.row_count;
  auto field = [&]() -> const Node& {
    const Node* f = field_node(t, p.field);
    if (!f) throw NeedPython();
    return *f;
  };
  switch (p.kind) {
    case Pred::Cmp: return compare(field(), p.lit, p.op, c);
    case Pred::CmpConst: return mask_broadcast(n, p.answer, node_validity(field(), c));
    case Pred::CmpNull: return mask_null(n);
    case Pred::In: return is_in(field(), p.lits, c);
    case Pred::IsNull: return is_null(field(), p.negated, c);
    case Pred::Const: return p.const_v < 0 ? mask_null(n) : mask_const(n, p.const_v != 0);
    case Pred::BoolCol: {
      Col b = decode(field(), c);
      if (b.layout != Layout::Bool) malformed("a filter column must be boolean");
      Mask m;
      m.len = n;
      m.vals = bitmap_from(b.values.data(), 0, n);
      if (!b.validity.empty()) {
        m.valid = bitmap_from(b.validity.data(), 0, n);
        for (size_t i = 0; i < bitmap_bytes(n); i++) m.vals.ptr[i] &= m.valid.ptr[i];
      }
      return m;
    }
    case Pred::And: {
      Mask a = evaluate(*p.a, t, c);
      if (a.valid.empty() && mask_count(a) == 0) return a;  // all false: the right side cannot change it
      return mask_and(a, evaluate(*p.b, t, c));
    }
    case Pred::Or: return mask_or(evaluate(*p.a, t, c), evaluate(*p.b, t, c));
    case Pred::Not: return mask_not(evaluate(*p.a, t, c));
  }
  return mask_null(n);
}

}  // namespace vx
