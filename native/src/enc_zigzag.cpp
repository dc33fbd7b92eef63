// vortex.zigzag: signed integers stored as unsigned codes u = (x << 1) ^ (x >> (W - 1)),
// decoded x = (u >> 1) ^ -(u & 1) (mirrors encodings/_zigzag.py).
#include "enc_ints.h"
#include "fastlanes.h"

namespace vx {
namespace {

template <class U>
inline U unzig(U u) {
  return U(U(u >> 1) ^ U(U(0) - U(u & 1)));
}

// the zigzag code of a signed value of the type (in range)
inline u128 zig(i128 x) { return x < 0 ? u128(-(x + 1)) * 2 + 1 : u128(x) * 2; }

class ZigZagEnc : public Encoding {
 public:
  ZigZagEnc() : Encoding("vortex.zigzag") {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Primitive || !ptype_is_signed_int(d.ptype))
      malformed("vortex.zigzag cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    if (n.metadata.n) malformed("vortex.zigzag takes empty metadata, got ", n.metadata.n, " bytes");
  }
  void child_specs(Node& n, Tree&) const override {
    if (n.nchildren() != 1) malformed("vortex.zigzag takes 1 child, got ", n.nchildren());
    n.specs.push_back({prim(ptype_unsigned(n.dtype->ptype), n.dtype->nullable), n.len});
  }

  // the child's decoded (or taken) codes, decoded in place when the buffer is ours
  static Col unzigzag(const Node& n, Col ch) {
    PType p = n.dtype->ptype;
    if (ch.layout != Layout::Prim || ch.ptype != ptype_unsigned(p))
      malformed("vortex.zigzag: encoded child decoded to ", ch.layout == Layout::Prim ? ptype_name(ch.ptype) : "a non-primitive column");
    ints::align_values(ch);
    uint64_t k = ch.len;
    Buf dst = ch.values.unique_owned() ? ch.values : alloc(size_t(k) * size_t(ptype_width(p)));
    with_uint_ptype(p, [&](auto t) {
      using U = decltype(t);
      const U* s = ch.vals<U>();
      U* d = dst.mut<U>();
      for (uint64_t i = 0; i < k; i++) d[i] = unzig<U>(s[i]);
    });
    ch.values = dst;
    ch.ptype = p;
    return ch;
  }

  // over fastlanes.bitpacked without patches: unpack a chunk, decode it while it is in cache
  static bool decode_packed(const Node& n, Ctx& c, Col& out) {
    const Node& ch = n.child(0);
    if (!ch.enc || std::string_view(ch.enc->id()) != "fastlanes.bitpacked" || ch.buffers.size() != 1) return false;
    auto f = proto::parse(ch.metadata, "BitPackedMetadata");
    if (f.has(3)) return false;  // patches: the child decodes them
    PType p = n.dtype->ptype;
    size_t w = size_t(ptype_width(p));
    uint64_t b = f.get_uint(1, 0, 32), off = f.get_uint(2, 0, 32);  // (validated by the child)
    uint64_t nchunks = (off + n.len + 1023) / 1024;
    const Buf& buf = ch.buffers[0];
    if (b > 8 * w || off >= 1024 || buf.len != nchunks * 128 * b) return false;
    const uint8_t* words = buf.data();
    Buf keep;
    if (reinterpret_cast<uintptr_t>(words) % w) {
      keep = copy_of(words, buf.len);
      words = keep.data();
    }
    Buf vals = alloc(size_t(nchunks) * 1024 * w);
    with_uint_ptype(p, [&](auto t) {
      using U = decltype(t);
      auto fn = fl::unpacker<U>(int(b));
      const size_t per = size_t(1024 * b / uint64_t(fl::W<U>));
      const U* in = reinterpret_cast<const U*>(words);
      U* o = vals.mut<U>();
      for (uint64_t k = 0; k < nchunks; k++) {
        U* dst = o + k * 1024;
        fn(in + k * per, dst, 0);
        for (int j = 0; j < 1024; j++) dst[j] = unzig<U>(dst[j]);
      }
    });
    out = prim_col(p, n.len ? vals.slice(size_t(off) * w, size_t(n.len) * w) : Buf(), n.len);
    out.validity = decode_validity(opt_child(ch, 0), n.len, c);
    out.null_count = -1;
    normalize_validity(out);
    return true;
  }

  Col decode(const Node& n, Ctx& c) const override {
    Col out;
    if (decode_packed(n, c, out)) return out;
    return unzigzag(n, vx::decode(n.child(0), c));
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    out = unzigzag(n, vx::take(n.child(0), idx, k, c));
    return true;
  }
  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = node_validity(n.child(0), c);
    return true;
  }
  // codes in [0, hi] decode into [-(hi + 1) / 2, hi / 2]
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    const Node& ch = n.child(0);
    i128 a, b;
    if (!ch.enc || ch.len == 0 || !ch.enc->int_bounds(ch, a, b, c) || a < 0) return false;
    if (b > ptype_max(ch.dtype->ptype)) return false;
    lo = -((b + 1) >> 1);
    hi = b >> 1;
    return true;
  }
  // equality maps to the codes: x == v <=> u == zig(v)
  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    PType p = n.dtype->ptype;
    if (v.kind != Lit::Int || (op != Op::Eq && op != Op::Neq)) return false;
    if (v.i < ptype_min(p) || v.i > ptype_max(p)) return false;
    out = vx::compare(n.child(0), Lit::of_int(i128(zig(v.i))), op, c);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    PType p = n.dtype->ptype;
    std::vector<Lit> codes;
    for (const Lit& l : v) {
      if (l.kind != Lit::Int) return false;  // (floats and others: the generic kernel)
      if (l.i >= ptype_min(p) && l.i <= ptype_max(p)) codes.push_back(Lit::of_int(i128(zig(l.i))));
    }
    if (codes.empty()) {  // no literal the type holds: false wherever valid
      out = mask_const(n.len, false);
      out.valid = node_validity(n.child(0), c);
      return true;
    }
    out = vx::is_in(n.child(0), codes, c);
    return true;
  }
};
REGISTER_ENCODING(ZigZagEnc);

}  // namespace
}  // namespace vx
