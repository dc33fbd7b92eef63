// vortex.decimal_byte_parts: decimals whose unscaled values fit a signed integer child, the
// msp (mirrors encodings/_decimal_byte_parts.py). Decodes by sign-extending the msp to the
// decimal's Arrow width; the kernels run on the msp (literals arrive as unscaled integers).
#include "enc_util.h"

namespace vx {
namespace {

struct DbpMeta : MetaBase {
  PType msp = PType::I64;
};

// signed integers sign-extended to `w`-byte (16 or 32) little-endian decimals
Col widen(const Col& msp, const DType& d, const Node& child) {
  if (msp.layout != Layout::Prim || !ptype_is_signed_int(msp.ptype))
    malformed("vortex.decimal_byte_parts msp must be signed integers, not ", dtype_repr(*child.dtype));
  const uint64_t n = msp.len;
  const int w = d.precision <= 38 ? 16 : 32;
  Col out;
  out.layout = Layout::Decimal;
  out.dec_width = uint8_t(w);
  out.len = n;
  out.values = alloc(size_t(n) * size_t(w));
  uint8_t* dst = out.values.ptr;
  with_int_ptype(msp.ptype, [&](auto t) {
    using T = decltype(t);
    const T* v = msp.vals<T>();
    if (w == 16) {
      i128* o = reinterpret_cast<i128*>(dst);
      for (uint64_t i = 0; i < n; i++) o[i] = i128(v[i]);
    } else {
      for (uint64_t i = 0; i < n; i++) {
        i128 x = i128(v[i]);
        i128 hi = x < 0 ? -1 : 0;
        std::memcpy(dst + 32 * i, &x, 16);
        std::memcpy(dst + 32 * i + 16, &hi, 16);
      }
    }
  });
  out.validity = msp.validity;
  out.null_count = -1;
  normalize_validity(out);
  return out;
}

class DecimalBytePartsEnc : public Encoding {
 public:
  DecimalBytePartsEnc() : Encoding("vortex.decimal_byte_parts") {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Decimal) malformed("vortex.decimal_byte_parts cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "DecimalBytesPartsMetadata");
    PType p = ptype_of(f.get_uint(1, 0), "vortex.decimal_byte_parts msp");
    if (!ptype_is_signed_int(p))
      malformed("vortex.decimal_byte_parts: the msp must be a signed integer, not ", ptype_name(p));
    uint64_t lower = f.get_uint(2, 0, 32);
    if (lower) unsupported("vortex.decimal_byte_parts with ", lower, " lower parts is not supported");
    make_meta<DbpMeta>(n).msp = p;
  }
  void child_specs(Node& n, Tree&) const override {
    if (n.nchildren() != 1) malformed("vortex.decimal_byte_parts takes 1 child, got ", n.nchildren());
    n.specs.push_back({prim(n.m<DbpMeta>().msp, n.dtype->nullable), n.len});
  }
  Col decode(const Node& n, Ctx& c) const override {
    Col msp = vx::decode(n.child(0), c);
    if (msp.layout == Layout::Prim && ptype_is_signed_int(msp.ptype) && msp.len != n.len)
      malformed("vortex.decimal_byte_parts msp does not match the array length");
    return widen(msp, *n.dtype, n.child(0));
  }
  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = node_validity(n.child(0), c);
    return true;
  }
  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    if (v.kind != Lit::Int) return false;
    out = vx::compare(n.child(0), v, op, c);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    std::vector<Lit> ints;
    for (const Lit& l : v)
      if (l.kind == Lit::Int) ints.push_back(l);
    out = vx::is_in(n.child(0), ints, c);
    return true;
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    Col msp = vx::take(n.child(0), idx, k, c);
    if (msp.len != k) malformed("vortex.decimal_byte_parts msp: a take gave ", msp.len, " rows for ", k);
    out = widen(msp, *n.dtype, n.child(0));
    return true;
  }
};
REGISTER_ENCODING(DecimalBytePartsEnc);

}  // namespace
}  // namespace vx
