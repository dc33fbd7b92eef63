// vortex.sequence: base + i * multiplier (mirrors encodings/_sequence.py). Validated never to
// overflow its type, so wrapping arithmetic in the type's width is exact; comparisons are
// answered from the arithmetic (the rows where a comparison holds are one range).
#include "enc_ints.h"

namespace vx {
namespace {

struct SeqMeta : MetaBase {
  i128 base = 0;
  i128 mult = 0;
};

// an integer ScalarValue (field 3 sint64 or 4 uint64) that must fit `p` (_scalar_int)
i128 scalar_int(const std::optional<Bytes>& raw, PType p, const char* what) {
  if (!raw) malformed("vortex.sequence: ", what, " is missing");
  auto f = proto::parse(*raw, cat("vortex.sequence ", what));
  i128 v;
  if (f.has(3)) v = i128(int64_t(proto::zigzag_decode(f.get_uint(3, 0))));
  else if (f.has(4)) v = i128(f.get_uint(4, 0));
  else malformed("vortex.sequence: ", what, " is not an integer scalar");
  if (v < ptype_min(p) || v > ptype_max(p)) malformed("vortex.sequence: ", what, " ", v, " does not fit ", ptype_name(p));
  return v;
}

// floor(a / d) for d > 0
inline i128 floordiv(i128 a, i128 d) {
  i128 q = a / d;
  if ((a % d) != 0 && a < 0) q--;
  return q;
}
inline i128 clamp(i128 x, i128 lo, i128 hi) { return x < lo ? lo : (x > hi ? hi : x); }

Op flip(Op op) {
  switch (op) {
    case Op::Lt: return Op::Gt;
    case Op::Lte: return Op::Gte;
    case Op::Gt: return Op::Lt;
    case Op::Gte: return Op::Lte;
    default: return op;
  }
}

class SequenceEnc : public Encoding {
 public:
  SequenceEnc() : Encoding("vortex.sequence") {}
  void check_dtype(const DType& d) const override {
    if (!d.is_int()) malformed("vortex.sequence holds integers, not ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "SequenceMetadata");
    PType p = n.dtype->ptype;
    i128 base = scalar_int(f.get_bytes(1), p, "base");
    i128 mult = scalar_int(f.get_bytes(2), p, "multiplier");
    SeqMeta& m = make_meta<SeqMeta>(n);
    m.base = base;
    m.mult = mult;
  }
  void validate(Node& n, Tree& t) const override {
    const auto& m = n.m<SeqMeta>();
    PType p = n.dtype->ptype;
    if (n.len) {
      i128 steps = i128(n.len - 1), prod, last;
      bool over = __builtin_mul_overflow(steps, m.mult, &prod) || __builtin_add_overflow(m.base, prod, &last);
      if (over || last < ptype_min(p) || last > ptype_max(p) || steps > ptype_max(p))
        malformed("vortex.sequence: value ", over ? std::string("beyond 128 bits") : cat(last), " at row ",
                  n.len - 1, " overflows ", ptype_name(p));
    }
    check_decoded(t.limits, sat_mul(n.len, uint64_t(ptype_width(p))), cat("vortex.sequence of ", n.len, " rows"));
  }

  // (arithmetic in at least 32 unsigned bits: narrow types would promote to int and overflow)
  template <class U>
  using Wide = std::conditional_t<(sizeof(U) < 4), uint32_t, U>;
  template <class U>
  static void fill(U* out, uint64_t k, U base, U mult) {
    using X = Wide<U>;
    for (uint64_t i = 0; i < k; i++) out[i] = U(X(base) + X(i) * X(mult));
  }

  Col decode(const Node& n, Ctx&) const override {
    const auto& m = n.m<SeqMeta>();
    PType p = n.dtype->ptype;
    Col out = prim_col(p, alloc(size_t(n.len) * size_t(ptype_width(p))), n.len);
    with_uint_ptype(p, [&](auto t) {
      using U = decltype(t);
      fill<U>(out.values.mut<U>(), n.len, U(u128(m.base)), U(u128(m.mult)));
    });
    return out;
  }
  bool validity(const Node&, Buf& out, Ctx&) const override {
    out = Buf();
    return true;
  }
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx&) const override {
    if (!n.len) return false;
    const auto& m = n.m<SeqMeta>();
    i128 last = m.base + i128(n.len - 1) * m.mult;  // (validated: in the type's range)
    lo = std::min(m.base, last);
    hi = std::max(m.base, last);
    return true;
  }

  // rows [a, b) where `base + i * mult op v` holds (inside), or where it fails (!inside)
  static void index_range(const Node& n, i128 v, Op op, uint64_t* a, uint64_t* b, bool* inside) {
    const auto& m = n.m<SeqMeta>();
    i128 base = m.base, mult = m.mult;
    i128 len = i128(n.len);
    if (mult < 0) {  // mirror: -x is increasing; x op v <=> -x flip(op) -v
      base = -base;
      mult = -mult;
      v = -v;
      op = flip(op);
    }
    *inside = true;
    if (mult == 0) {
      *a = 0;
      *b = op_holds(base, v, op) ? n.len : 0;
      return;
    }
    // values increase: the first row >= v and the first row > v
    i128 ge = clamp(-floordiv(base - v, mult), 0, len);
    i128 gt = clamp(floordiv(v - base, mult) + 1, 0, len);
    uint64_t g = uint64_t(ge), h = uint64_t(gt), e = n.len;
    switch (op) {
      case Op::Lt: *a = 0; *b = g; break;
      case Op::Lte: *a = 0; *b = h; break;
      case Op::Gt: *a = h; *b = e; break;
      case Op::Gte: *a = g; *b = e; break;
      case Op::Eq: *a = g; *b = h; break;
      default: *a = g; *b = h; *inside = false; break;
    }
  }

  static bool in_range(const Node& n, const Lit& v) {
    PType p = n.dtype->ptype;
    return v.kind == Lit::Int && v.i >= ptype_min(p) && v.i <= ptype_max(p);
  }

  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx&) const override {
    if (!in_range(n, v)) return false;  // (the dispatch answers out-of-range integers)
    uint64_t a, b;
    bool inside;
    index_range(n, v.i, op, &a, &b, &inside);
    out = ints::range_mask(n.len, a, b, inside);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx&) const override {
    for (const Lit& l : v)
      if (l.kind != Lit::Int) return false;
    out = mask_const(n.len, false);
    for (const Lit& l : v) {
      if (!in_range(n, l)) continue;  // (matches no row of the type)
      uint64_t a, b;
      bool inside;
      index_range(n, l.i, Op::Eq, &a, &b, &inside);
      ints::fill_bits_range(out.vals.ptr, a, b, true);
    }
    return true;
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx&) const override {
    const auto& m = n.m<SeqMeta>();
    PType p = n.dtype->ptype;
    out = prim_col(p, alloc(k * size_t(ptype_width(p))), k);
    with_uint_ptype(p, [&](auto t) {
      using U = decltype(t);
      U* o = out.values.mut<U>();
      using X = Wide<U>;
      X base = X(U(u128(m.base))), mult = X(U(u128(m.mult)));
      for (size_t i = 0; i < k; i++) o[i] = U(base + X(idx[i]) * mult);
    });
    return true;
  }
};
REGISTER_ENCODING(SequenceEnc);

}  // namespace
}  // namespace vx
