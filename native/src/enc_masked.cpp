// vortex.masked (a non-nullable child masked by a validity child) and vortex.bytebool
// (booleans one byte each). Mirrors encodings/{masked,bytebool}.py.
#include "enc_util.h"

namespace vx {
namespace {

// -- vortex.masked ----------------------------------------------------------------------------
class MaskedEnc : public ChildValidityEncoding<1> {
 public:
  MaskedEnc() : ChildValidityEncoding("vortex.masked") {}
  void child_specs(Node& n, Tree& t) const override {
    if (n.dtype->storage().kind == Kind::Null) malformed("the Null dtype is always nullable");
    n.specs.push_back({t.dtypes.with_nullable(n.dtype, false), n.len});
    validity_spec(n, 1, n.specs);
  }
  Col decode(const Node& n, Ctx& c) const override {
    Col col = vx::decode(n.child(0), c);
    if (col.len != n.len) malformed("vortex.masked child decoded to ", col.len, " rows for ", n.len);
    Buf own = decode_validity(opt_child(n, 1), n.len, c);
    if (own.empty()) return col;
    col.validity = and_bits(own, col.validity, n.len);
    col.null_count = -1;
    normalize_validity(col);
    return col;
  }
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    const Node& ch = n.child(0);
    return ch.enc && ch.len && ch.enc->int_bounds(ch, lo, hi, c);
  }
  // the child's answer, masked (with_validity(vals, own if valid is None or own is None else
  // own & valid))
  static Mask masked(const Node& n, Mask m, Ctx& c) {
    Buf own = decode_validity(opt_child(n, 1), n.len, c);
    Buf valid = m.valid.empty() || own.empty() ? own : and_bits(own, m.valid, n.len);
    Buf vals = std::move(m.vals);
    if (!valid.empty() && !vals.unique_owned()) vals = bitmap_from(vals.data(), 0, n.len);
    return with_validity(vals, valid, n.len);
  }
  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    out = masked(n, vx::compare(n.child(0), v, op, c), c);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    out = masked(n, vx::is_in(n.child(0), v, c), c);
    return true;
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    out = vx::take(n.child(0), idx, k, c);
    Buf own = decode_validity(opt_child(n, 1), n.len, c);
    if (own.empty()) return true;
    out.validity = and_bits(take_bits(own.data(), idx, k), out.validity, k);
    out.null_count = -1;
    normalize_validity(out);
    return true;
  }
};
REGISTER_ENCODING(MaskedEnc);

// -- vortex.bytebool --------------------------------------------------------------------------
class ByteBoolEnc : public ChildValidityEncoding<0> {
 public:
  ByteBoolEnc() : ChildValidityEncoding("vortex.bytebool") {}
  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Bool) malformed("vortex.bytebool holds booleans, not ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    if (n.metadata.n) malformed("vortex.bytebool takes no metadata, got ", n.metadata.n, " bytes");
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void child_specs(Node& n, Tree&) const override { validity_spec(n, 0, n.specs); }
  void validate(Node& n, Tree&) const override {
    if (n.buffers[0].len != n.len)
      malformed("vortex.bytebool buffer is ", n.buffers[0].len, " bytes for ", n.len, " values");
  }
  Col decode(const Node& n, Ctx& c) const override {
    const uint64_t len = n.len;
    const uint8_t* src = n.buffers[0].data();
    Col out;
    out.layout = Layout::Bool;
    out.len = len;
    out.values = alloc_zeroed(bitmap_bytes(len));
    uint8_t* bits = out.values.ptr;
    const uint64_t lo7 = 0x7F7F7F7F7F7F7F7Full, hi = 0x8080808080808080ull;
    uint64_t full = len >> 3;
    for (uint64_t k = 0; k < full; k++) {
      uint64_t w = load<uint64_t>(src + 8 * k);
      // the high bit of each byte: set when the byte is non-zero
      uint64_t t = (((w & lo7) + lo7) | w) & hi;
      bits[k] = uint8_t(((t >> 7) * 0x0102040810204080ull) >> 56);
    }
    for (uint64_t i = full << 3; i < len; i++)
      if (src[i]) set_bit(bits, i);
    return with_own_validity(std::move(out), n, c);
  }
};
REGISTER_ENCODING(ByteBoolEnc);

}  // namespace
}  // namespace vx
