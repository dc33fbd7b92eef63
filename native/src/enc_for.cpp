// fastlanes.for: frame of reference, value = encoded + reference, wrapping in the type's
// width (mirrors encodings/_for.py). Over bit-packing the addition is fused into the unpack.
#include "encodings.h"
#include "enc_util.h"

namespace vx {
namespace {

struct ForMeta : MetaBase {
  i128 ref = 0;
};

class ForEnc : public Encoding {
 public:
  ForEnc() : Encoding("fastlanes.for") {}
  void check_dtype(const DType& d) const override {
    if (!d.is_int()) malformed("fastlanes.for cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    if (n.metadata.n == 0) malformed("fastlanes.for: the reference value is missing");
    Scalar s = value_from_proto(*n.dtype, n.metadata);
    if (s.null) malformed("fastlanes.for: the reference value is null");
    make_meta<ForMeta>(n).ref = s.i;
  }
  void child_specs(Node& n, Tree&) const override {
    if (n.nchildren() != 1) malformed("fastlanes.for takes 1 child, got ", n.nchildren());
    n.specs.push_back({n.dtype, n.len});
  }
  static uint64_t ref_bits(const Node& n) { return uint64_t(u128(n.m<ForMeta>().ref)); }

  Col decode(const Node& n, Ctx& c) const override {
    PType p = n.dtype->ptype;
    Col out;
    if (bitpacked_decode_plus(n.child(0), ref_bits(n), c, out)) return out;
    Col ch = vx::decode(n.child(0), c);
    if (ch.layout != Layout::Prim || ch.ptype != p)
      malformed("fastlanes.for: encoded child decoded to ", dtype_repr(*n.child(0).dtype));
    Buf dst = ch.values.unique_owned() ? ch.values : alloc(size_t(n.len) * size_t(ptype_width(p)));
    with_uint_ptype(p, [&](auto t) {
      using T = decltype(t);
      const T* s = ch.vals<T>();
      T* d = dst.mut<T>();
      T r = T(ref_bits(n));
      for (uint64_t i = 0; i < n.len; i++) d[i] = T(s[i] + r);
    });
    ch.values = dst;
    return ch;
  }
  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = node_validity(n.child(0), c);
    return true;
  }
  // the largest encoded value when value = ref + encoded never wraps and the encoded child
  // reads the same signed or unsigned (so it compares directly)
  static bool encoded_bound(const Node& n, Ctx& c, i128* lo, i128* hi) {
    const Node& ch = n.child(0);
    if (!ch.enc || ch.len == 0 || !ch.enc->int_bounds(ch, *lo, *hi, c)) return false;
    if (*lo < 0) return false;
    if (n.m<ForMeta>().ref + *hi > ptype_max(n.dtype->ptype)) return false;
    return true;
  }
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    if (!encoded_bound(n, c, &lo, &hi)) return false;
    i128 r = n.m<ForMeta>().ref;
    lo += r;
    hi += r;
    return true;
  }
  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    if (v.kind != Lit::Int) return false;
    i128 lo, hi;
    if (!encoded_bound(n, c, &lo, &hi)) return false;
    i128 t = v.i - n.m<ForMeta>().ref;
    bool ans;
    if (bound_answer(op, t, 0, hi, &ans)) {
      out = mask_broadcast(n.len, ans, node_validity(n, c));
      return true;
    }
    out = vx::compare(n.child(0), Lit::of_int(t), op, c);
    return true;
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    if (bitpacked_take_plus(n.child(0), idx, k, ref_bits(n), c, out)) return true;
    Col ch = vx::take(n.child(0), idx, k, c);
    PType p = n.dtype->ptype;
    if (ch.layout != Layout::Prim || ch.ptype != p)
      malformed("fastlanes.for: encoded child decoded to ", dtype_repr(*n.child(0).dtype));
    Buf dst = ch.values.unique_owned() ? ch.values : alloc(k * size_t(ptype_width(p)));
    with_uint_ptype(p, [&](auto t) {
      using T = decltype(t);
      const T* s = ch.vals<T>();
      T* d = dst.mut<T>();
      T r = T(ref_bits(n));
      for (size_t i = 0; i < k; i++) d[i] = T(s[i] + r);
    });
    ch.values = dst;
    out = std::move(ch);
    return true;
  }
};
REGISTER_ENCODING(ForEnc);

}  // namespace
}  // namespace vx
