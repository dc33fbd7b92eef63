// vortex.alp: Adaptive Lossless floating-Point, floats stored as scaled integers (mirrors
// encodings/_alp.py). Decoding is bit-exact with the reference: `F(enc) * F10[f] * IF10[e]`
// evaluated left to right in the float type F, then the patches overwrite the exceptions.
// The integer child (usually fastlanes.for over fastlanes.bitpacked, fused there) is
// decoded and converted in one pass, in place when its buffer is ours alone.
//
// Kernels: comparisons and IN run on the encoded integers (decoding is monotonic, so a
// literal becomes integer thresholds, found exactly by binary search), patches answered on
// their own; take takes the encoded child's rows and the patches that fall on them.
#include <cmath>
#include <cstdlib>
#include <limits>

#include "cpu.h"
#include "enc_util.h"
#include "patches_strict.h"

namespace vx {
namespace {

// The reference's constant tables (alp.py F10 / IF10): F10[i] = 10^i correctly rounded,
// IF10[i] = the literal 1e-i correctly rounded, in the float type (C++ literals are).
template <class F>
struct Alp;
template <>
struct Alp<double> {
  using I = int64_t;
  static constexpr PType ptype = PType::F64;
  static constexpr PType iptype = PType::I64;
  static constexpr uint32_t max_exponent = 18;
  static constexpr double F10[24] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23};
  static constexpr double IF10[24] = {1e0,   1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,
                                      1e-8,  1e-9,  1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15,
                                      1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22, 1e-23};
};
template <>
struct Alp<float> {
  using I = int32_t;
  static constexpr PType ptype = PType::F32;
  static constexpr PType iptype = PType::I32;
  static constexpr uint32_t max_exponent = 10;
  static constexpr float F10[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
  static constexpr float IF10[11] = {1e0f,  1e-1f, 1e-2f, 1e-3f, 1e-4f, 1e-5f,
                                     1e-6f, 1e-7f, 1e-8f, 1e-9f, 1e-10f};
};

// one value, as the reference computes it: the float of k (correctly rounded), times
// F10[f], times IF10[e]
template <class F>
inline F alp_value(typename Alp<F>::I k, F mf, F me) {
  return F(k) * mf * me;
}

// int64 -> double, correctly rounded (what the conversion instruction gives), in integer
// and double lane operations: x86-64 has no packed int64 -> double before AVX-512, and the
// scalar conversion runs about one a cycle. With u = x + 2^63 as an unsigned split in
// 32-bit halves, 2^84 + hi * 2^32 and 2^52 + lo are doubles by their bits; (that -
// (2^84 + 2^63 + 2^52)) is exact, and adding (2^52 + lo) rounds once.
inline double i64_to_f64(int64_t x) {
  uint64_t u = uint64_t(x) ^ 0x8000000000000000ull;
  uint64_t hb = (u >> 32) | 0x4530000000000000ull;          // 2^84 + hi * 2^32
  uint64_t lb = (u & 0xFFFFFFFFull) | 0x4330000000000000ull;  // 2^52 + lo
  const uint64_t cb = 0x4530000080100000ull;                  // 2^84 + 2^63 + 2^52
  double h, l, cc;
  std::memcpy(&h, &hb, 8);
  std::memcpy(&l, &lb, 8);
  std::memcpy(&cc, &cb, 8);
  return (h - cc) + l;
}

// alp_value for the lane loops: the same value, the f64 conversion in lane operations
template <class F>
inline F alp_lane(typename Alp<F>::I k, F mf, F me) {
  if constexpr (std::is_same_v<F, double>) return i64_to_f64(k) * mf * me;
  else return F(k) * mf * me;
}

// Decoding [src, src + n) of I into F at dst. In place (dst == src, same width) is a
// separate loop: one pointer, each element loaded then stored, so the compiler vectorizes it
// without alias checks. (memcpy loads/stores: no type punning, no alignment assumption.)
// The baseline loops (SSE2) convert f64 with the scalar instruction (cheaper than the lane
// trick on 2 lanes); on AVX2 machines 4-lane (f64) / 8-lane (f32) clones run instead:
// measured 0.25 against 0.36-0.6 ns a value for f64.
#define VX_ALP_LOOPS(SUFFIX, VALUE)                                                            \
  template <class F>                                                                            \
  void alp_inplace##SUFFIX(uint8_t* p, uint64_t n, F mf, F me) {                                \
    using I = typename Alp<F>::I;                                                               \
    static_assert(sizeof(I) == sizeof(F));                                                      \
    for (uint64_t i = 0; i < n; i++) {                                                          \
      I x;                                                                                      \
      std::memcpy(&x, p + i * sizeof(I), sizeof(I));                                            \
      F y = VALUE<F>(x, mf, me);                                                                \
      std::memcpy(p + i * sizeof(F), &y, sizeof(F));                                            \
    }                                                                                           \
  }                                                                                             \
  template <class F>                                                                            \
  void alp_copy##SUFFIX(const uint8_t* __restrict s, uint8_t* __restrict d, uint64_t n, F mf, F me) { \
    using I = typename Alp<F>::I;                                                               \
    for (uint64_t i = 0; i < n; i++) {                                                          \
      I x;                                                                                      \
      std::memcpy(&x, s + i * sizeof(I), sizeof(I));                                            \
      F y = VALUE<F>(x, mf, me);                                                                \
      std::memcpy(d + i * sizeof(F), &y, sizeof(F));                                            \
    }                                                                                           \
  }

VX_ALP_LOOPS(_base, alp_value)
#ifdef VX_HAVE_AVX2_DISPATCH
VX_AVX2_BEGIN
VX_ALP_LOOPS(_avx2, alp_lane)
VX_AVX2_END
#endif
#undef VX_ALP_LOOPS

template <class F>
void alp_inplace(uint8_t* p, uint64_t n, F mf, F me) {
#ifdef VX_HAVE_AVX2_DISPATCH
  if (have_avx2()) return alp_inplace_avx2<F>(p, n, mf, me);
#endif
  alp_inplace_base<F>(p, n, mf, me);
}
template <class F>
void alp_copy(const uint8_t* s, uint8_t* d, uint64_t n, F mf, F me) {
#ifdef VX_HAVE_AVX2_DISPATCH
  if (have_avx2()) return alp_copy_avx2<F>(s, d, n, mf, me);
#endif
  alp_copy_base<F>(s, d, n, mf, me);
}

// numpy's float32(double) (round to nearest; out of range to +-inf), without UB
float to_f32(double v) {
  if (std::isnan(v)) return std::numeric_limits<float>::quiet_NaN();
  const double mx = double(std::numeric_limits<float>::max());
  double a = std::fabs(v);
  if (a >= mx + std::ldexp(1.0, 103)) return v < 0 ? -std::numeric_limits<float>::infinity()
                                                   : std::numeric_limits<float>::infinity();
  if (a > mx) return v < 0 ? -std::numeric_limits<float>::max() : std::numeric_limits<float>::max();
  return float(v);
}

// the literal in the column's float type (np_literal), false when it is no number
template <class F>
bool lit_as(const Lit& v, F* out) {
  double x;
  if (v.kind == Lit::Float) x = v.f;
  else if (v.kind == Lit::Int) x = double(v.i);
  else return false;
  if constexpr (std::is_same_v<F, float>) *out = to_f32(x);
  else *out = x;
  return true;
}

template <class F>
inline auto bits_of(F x) {
  using U = std::conditional_t<sizeof(F) == 8, uint64_t, uint32_t>;
  U u;
  std::memcpy(&u, &x, sizeof(F));
  return u;
}

struct AlpMeta : MetaBase {
  uint32_t e = 0, f = 0;
  std::optional<PatchesMeta> patches;
  bool has_patches() const { return patches && patches->len; }
};

// The patches of a node, decoded: strict positions, the values (a Prim column of the
// node's float type) and, per patch, whether a later patch at the same position overrides
// it (the reference's numpy scatters: the last write wins).
struct AlpPatches {
  Buf pos;  // uint64_t positions
  Col values;
  size_t k = 0;
  const uint64_t* p() const { return pos.as<uint64_t>(); }
  bool overridden(size_t i) const { return i + 1 < k && p()[i + 1] == p()[i]; }
  const uint8_t* valid() const { return values.validity.empty() ? nullptr : values.validity.data(); }
};

class AlpEnc : public Encoding {
 public:
  AlpEnc() : Encoding("vortex.alp") {}

  // -- building --------------------------------------------------------------------------
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Primitive || (d.ptype != PType::F32 && d.ptype != PType::F64))
      malformed("vortex.alp holds f32 or f64, not ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto fl = proto::parse(n.metadata, "ALPMetadata");
    auto pm = proto::get_message(fl, 3, "ALPMetadata.patches");
    AlpMeta& m = make_meta<AlpMeta>(n);
    m.e = uint32_t(fl.get_uint(1, 0, 32));
    m.f = uint32_t(fl.get_uint(2, 0, 32));
    if (pm) m.patches = PatchesMeta::from_fields(*pm, "vortex.alp");
    uint32_t mx = n.dtype->ptype == PType::F64 ? Alp<double>::max_exponent : Alp<float>::max_exponent;
    if (m.e > mx || m.f > mx)
      malformed("vortex.alp exponents e=", m.e, ", f=", m.f, " out of range for ", dtype_repr(*n.dtype),
                " (at most ", mx, ")");
    if (m.patches) {
      if (!ptype_is_unsigned(m.patches->indices_ptype)) malformed("vortex.alp: patch indices must be unsigned");
      if (m.patches->len > n.len) malformed("vortex.alp: ", m.patches->len, " patches for ", n.len, " rows");
    }
  }
  void child_specs(Node& n, Tree&) const override {
    const auto& m = n.m<AlpMeta>();
    PType ip = n.dtype->ptype == PType::F64 ? PType::I64 : PType::I32;
    n.specs.push_back({prim(ip, n.dtype->nullable), n.len});
    if (m.patches) m.patches->child_specs(n.dtype, n.specs);
    if (n.nchildren() != n.specs.size())
      malformed("vortex.alp has ", n.nchildren(), " children, expected ", n.specs.size());
  }
  void validate(Node& n, Tree& t) const override {
    check_decoded(t.limits, sat_mul(n.len, uint64_t(ptype_width(n.dtype->ptype))),
                  cat("vortex.alp of ", n.len, " rows"));
  }

  // -- helpers -----------------------------------------------------------------------------
  template <class F>
  static F f10(const Node& n) { return Alp<F>::F10[n.m<AlpMeta>().f]; }
  template <class F>
  static F if10(const Node& n) { return Alp<F>::IF10[n.m<AlpMeta>().e]; }

  // the patches (none when the node has none): positions checked strictly, values decoded
  static AlpPatches patches_of(const Node& n, Ctx& c) {
    AlpPatches ps;
    const auto& m = n.m<AlpMeta>();
    if (!m.has_patches()) return ps;
    ps.pos = strict_patch_positions(*m.patches, n.child(1), n.len, "vortex.alp", c);
    ps.values = patch_values(n.child(2), c);
    if (ps.values.ptype != n.dtype->ptype)
      malformed("vortex.alp patch values decode to ", dtype_repr(*n.child(2).dtype));
    ps.k = size_t(ps.pos.len / 8);
    if (ps.values.len < ps.k) malformed("vortex.alp: ", ps.values.len, " patch values for ", ps.k, " patches");
    return ps;
  }

  // `valid` (empty: all valid) AND the patches' validity at their positions (last wins),
  // as the reference combines them; `rows` maps patch i to its row in `valid` (positions)
  static Buf and_patch_validity(Buf valid, uint64_t n, const AlpPatches& ps, const uint64_t* rows,
                                const uint32_t* which = nullptr, size_t nrows = 0) {
    const uint8_t* pv = ps.valid();
    if (!pv) return valid;
    if (valid.empty()) valid = bitmap_alloc(n, true);
    else if (!valid.unique_owned()) valid = bitmap_from(valid.data(), 0, n);
    if (which) {  // take: row i takes patch which[i]
      for (size_t i = 0; i < nrows; i++)
        if (!get_bit(pv, which[i])) clear_bit(valid.ptr, rows[i]);
    } else {
      for (size_t i = 0; i < ps.k; i++)
        if (!ps.overridden(i) && !get_bit(pv, i)) clear_bit(valid.ptr, rows[i]);
    }
    return valid;
  }

  // an integer column of I (decoded or taken) converted to F, in place when we may
  template <class F>
  static Col to_floats(Col ints, const Node& n) {
    using I = typename Alp<F>::I;
    if (ints.layout != Layout::Prim || ints.ptype != Alp<F>::iptype)
      malformed("vortex.alp encoded child decodes to ", dtype_repr(*n.child(0).dtype));
    const F mf = f10<F>(n), me = if10<F>(n);
    uint64_t len = ints.len;
    if (ints.values.len < len * sizeof(I)) malformed("vortex.alp: the encoded child decoded short");
    if (ints.values.unique_owned()) {
      alp_inplace<F>(ints.values.ptr, len, mf, me);
    } else {
      Buf out = alloc(size_t(len) * sizeof(F));
      alp_copy<F>(ints.values.data(), out.ptr, len, mf, me);
      ints.values = out;
    }
    ints.ptype = Alp<F>::ptype;
    return ints;
  }

  // -- decoding ------------------------------------------------------------------------------
  template <class F>
  static Col decode_t(const Node& n, Ctx& c) {
    Col out = to_floats<F>(vx::decode(n.child(0), c), n);
    if (out.len != n.len) malformed("vortex.alp: the encoded child decoded to ", out.len, " rows for ", n.len);
    AlpPatches ps = patches_of(n, c);
    if (ps.k) {
      F* d = out.values.mut<F>();
      const F* s = ps.values.vals<F>();
      const uint64_t* p = ps.p();
      for (size_t i = 0; i < ps.k; i++) d[p[i]] = s[i];
      if (ps.valid()) {
        out.validity = and_patch_validity(out.validity, n.len, ps, p);
        out.null_count = -1;
      }
    }
    if (out.null_count < 0 || !out.validity.empty()) {
      out.null_count = -1;
      normalize_validity(out);
    }
    return out;
  }
  Col decode(const Node& n, Ctx& c) const override {
    return n.dtype->ptype == PType::F64 ? decode_t<double>(n, c) : decode_t<float>(n, c);
  }

  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    Buf base = node_validity(n.child(0), c);
    AlpPatches ps = patches_of(n, c);
    if (ps.k && ps.valid()) {
      base = and_patch_validity(base, n.len, ps, ps.p());
      if (count_ones(base.data(), n.len) == n.len) base = Buf();
    }
    out = base;
    return true;
  }

  template <class F>
  static bool take_t(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) {
    Col col = to_floats<F>(vx::take(n.child(0), idx, k, c), n);
    if (col.len != k) malformed("vortex.alp: the encoded child took ", col.len, " rows for ", k);
    const auto& m = n.m<AlpMeta>();
    if (k && m.has_patches()) {
      AlpPatches ps = patches_of(n, c);
      // the taken rows that are patched and the patch each takes
      std::vector<uint64_t> rows;
      std::vector<uint32_t> which;
      patch_hits(ps.p(), ps.k, idx, k, rows, which);
      F* d = col.values.mut<F>();
      const F* s = ps.values.vals<F>();
      for (size_t h = 0; h < rows.size(); h++) d[rows[h]] = s[which[h]];
      if (ps.valid() && !rows.empty()) {
        col.validity = and_patch_validity(col.validity, k, ps, rows.data(), which.data(), rows.size());
        col.null_count = -1;
      }
    }
    if (col.null_count < 0 || !col.validity.empty()) {
      col.null_count = -1;
      normalize_validity(col);
    }
    out = std::move(col);
    return true;
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    return n.dtype->ptype == PType::F64 ? take_t<double>(n, idx, k, out, c) : take_t<float>(n, idx, k, out, c);
  }

  // -- predicates on the encoded integers -------------------------------------------------------
  // (t1, t2): an encoded k decodes below `lit` iff k < t1, to at most `lit` iff k < t2
  // (decoding is monotonic in k), each in [IMIN, IMAX + 1]; exact, by binary search
  template <class F>
  static void thresholds(const Node& n, F lit, i128* t1, i128* t2) {
    using I = typename Alp<F>::I;
    const F mf = f10<F>(n), me = if10<F>(n);
    auto first = [&](auto pred) {
      i128 lo = i128(std::numeric_limits<I>::min()), hi = i128(std::numeric_limits<I>::max()) + 1;
      while (lo < hi) {
        i128 mid = lo + (hi - lo) / 2;
        if (pred(alp_value<F>(I(mid), mf, me))) hi = mid;
        else lo = mid + 1;
      }
      return lo;
    };
    *t1 = first([&](F d) { return d >= lit; });
    *t2 = first([&](F d) { return d > lit; });
  }

  // the Mask of `op` on the rows as the encoded child gives them (patched rows included:
  // the caller overwrites them)
  template <class F>
  static Mask encoded_compare(const Node& n, F lit, Op op, Ctx& c) {
    const Node& child = n.child(0);
    if (std::isnan(lit)) return mask_broadcast(n.len, op == Op::Neq, node_validity(child, c));
    if (std::isinf(lit)) {  // decoded values are finite
      bool below = lit > 0;  // every value is below +inf
      bool ans = false;
      switch (op) {
        case Op::Eq: ans = false; break;
        case Op::Neq: ans = true; break;
        case Op::Lt: case Op::Lte: ans = below; break;
        default: ans = !below; break;
      }
      return mask_broadcast(n.len, ans, node_validity(child, c));
    }
    i128 t1, t2;
    thresholds<F>(n, lit, &t1, &t2);
    switch (op) {
      case Op::Lt: return vx::compare(child, Lit::of_int(t1), Op::Lt, c);
      case Op::Gte: return vx::compare(child, Lit::of_int(t1), Op::Gte, c);
      case Op::Lte: return vx::compare(child, Lit::of_int(t2), Op::Lt, c);
      case Op::Gt: return vx::compare(child, Lit::of_int(t2), Op::Gte, c);
      default: break;
    }
    Mask eq;
    if (t2 == t1) eq = mask_broadcast(n.len, false, node_validity(child, c));
    else if (t2 == t1 + 1) eq = vx::compare(child, Lit::of_int(t1), Op::Eq, c);
    else eq = mask_and(vx::compare(child, Lit::of_int(t1), Op::Gte, c), vx::compare(child, Lit::of_int(t2), Op::Lt, c));
    return op == Op::Eq ? eq : mask_not(eq);
  }

  // overwrite the patched rows of `res` with pred(patch value), the validity combined as
  // the reference does (_with_patches)
  template <class F, class P>
  static Mask with_patches(const Node& n, Mask res, P&& pred, Ctx& c) {
    AlpPatches ps = patches_of(n, c);
    if (!ps.k) return res;
    uint64_t len = n.len;
    Buf vals = res.vals.unique_owned() && res.vals.len >= bitmap_bytes(len) ? res.vals : bitmap_from(res.vals.data(), 0, len);
    Buf valid = res.valid;
    const uint64_t* p = ps.p();
    if (ps.valid()) valid = and_patch_validity(valid, len, ps, p);
    const F* s = ps.values.vals<F>();
    const uint8_t* ok = valid.empty() ? nullptr : valid.data();
    for (size_t i = 0; i < ps.k; i++) {
      if (ps.overridden(i)) continue;
      bool r = pred(s[i]) && (!ok || get_bit(ok, p[i]));
      if (r) set_bit(vals.ptr, p[i]);
      else clear_bit(vals.ptr, p[i]);
    }
    Mask out;
    out.len = len;
    out.vals = vals;
    out.valid = valid;
    return out;
  }

  template <class F>
  static bool compare_t(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) {
    F lit;
    if (!lit_as<F>(v, &lit)) return false;
    Mask res = encoded_compare<F>(n, lit, op, c);
    out = with_patches<F>(n, std::move(res), [&](F x) { return op_holds(double(x), double(lit), op); }, c);
    return true;
  }
  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    return n.dtype->ptype == PType::F64 ? compare_t<double>(n, v, op, out, c) : compare_t<float>(n, v, op, out, c);
  }

  template <class F>
  static bool is_in_t(const Node& n, const std::vector<Lit>& vs, Mask& out, Ctx& c) {
    using I = typename Alp<F>::I;
    std::vector<F> lits;
    for (const Lit& v : vs) {
      F x;
      if (!lit_as<F>(v, &x)) return false;
      lits.push_back(x);
    }
    const F mf = f10<F>(n), me = if10<F>(n);
    std::vector<Lit> ints;
    for (F x : lits) {
      if (std::isnan(x) || std::isinf(x)) continue;  // decoded values are finite: only patches match
      i128 t1, t2;
      thresholds<F>(n, x, &t1, &t2);
      if (t2 - t1 > 16) return false;  // (as the reference: decode and match)
      // the integers decoding to x bit for bit (-0.0 never: 0 decodes to +0.0)
      for (i128 k = t1; k < t2; k++)
        if (bits_of(alp_value<F>(I(k), mf, me)) == bits_of(x)) ints.push_back(Lit::of_int(k));
    }
    Mask res = vx::is_in(n.child(0), ints, c);
    bool nan = false;
    std::vector<decltype(bits_of(F{}))> want;
    for (F x : lits) {
      if (std::isnan(x)) nan = true;
      else want.push_back(bits_of(x));
    }
    out = with_patches<F>(n, std::move(res), [&](F x) {
      if (std::isnan(x)) return nan;
      auto b = bits_of(x);
      for (auto w : want)
        if (w == b) return true;
      return false;
    }, c);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    return n.dtype->ptype == PType::F64 ? is_in_t<double>(n, v, out, c) : is_in_t<float>(n, v, out, c);
  }
};
REGISTER_ENCODING(AlpEnc);

}  // namespace
}  // namespace vx
