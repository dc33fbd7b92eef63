// vortex.onpair: strings as sequences of codes into a dictionary of tokens of 1..16 bytes
// (mirrors vortex_io/encodings/_onpair.py: the same checks in the same order).
//
// Like the reference, the codes codes[co[0]:co[n]] are decoded as one stream, which must
// decode to exactly the sum of the uncompressed lengths, and cut into rows by those
// lengths. Every code emits its token as one unconditional 16-byte copy from a zero-padded
// copy of the dictionary blob into a padded output and advances by the token's length.
#include "enc_util.h"
#include "encodings.h"

namespace vx {
namespace {

constexpr uint64_t kMaxToken = 16;
constexpr uint64_t kMaxDict = uint64_t(1) << 16;
constexpr size_t kBlock = 256;  // codes per block whose output size is checked at once

struct OnPairMeta : MetaBase {
  PType ulen = PType::U8;
  uint64_t bits = 0;
  uint64_t dict_size = 0;
  uint64_t total_tokens = 0;
  PType dict_offsets = PType::U8;
  PType codes = PType::U8;
  PType codes_offsets = PType::U8;
};

struct Tok {
  uint32_t off;
  uint32_t len;
};

// onpair_decompress over codes [lo, hi) of `codes`: `total` bytes into `out` (total + 16)
template <class C>
void decode_codes(const C* codes, uint64_t m, const Tok* tab, const uint8_t* blob, uint8_t* out,
                  uint64_t total) {
  uint64_t pos = 0;
  uint64_t i = 0;
  auto overrun = [&]() { malformed("vortex.onpair: codes decode to more than ", total, " bytes"); };
  while (i < m) {
    uint64_t e = std::min<uint64_t>(m, i + kBlock);
    if (pos + kMaxToken * (e - i) <= total) {
      for (; i < e; i++) {  // no token of the block can run past the output
        const Tok t = tab[uint64_t(codes[i])];
        std::memcpy(out + pos, blob + t.off, 16);
        pos += t.len;
      }
    } else {
      for (; i < e; i++) {
        const Tok t = tab[uint64_t(codes[i])];
        if (pos + t.len > total) overrun();
        std::memcpy(out + pos, blob + t.off, 16);  // pos + 16 <= total + 16
        pos += t.len;
      }
    }
  }
  if (pos != total)
    malformed("vortex.onpair: codes decode to ", pos, " bytes, the uncompressed lengths sum to ", total);
}

class OnPairEnc : public Encoding {
 public:
  OnPairEnc() : Encoding("vortex.onpair") {}

  void check_dtype(const DType& d) const override {
    if (!d.is_string_like()) malformed("vortex.onpair cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "OnPairMetadata");
    uint64_t bits = f.get_uint(2, 0, 32), size = f.get_uint(3, 0, 32);
    if (bits > 16 || size > kMaxDict)
      malformed("vortex.onpair: ", size, " tokens of ", bits, " bits; codes are at most 16 bits (",
                kMaxDict, " tokens)");
    OnPairMeta& m = make_meta<OnPairMeta>(n);
    m.ulen = int_ptype_of(f.get_uint(1, 0), "vortex.onpair uncompressed_lengths");
    m.bits = bits;
    m.dict_size = size;
    m.total_tokens = f.get_uint(4, 0);
    m.dict_offsets = int_ptype_of(f.get_uint(5, 0), "vortex.onpair dict_offsets");
    m.codes = int_ptype_of(f.get_uint(6, 0), "vortex.onpair codes");
    m.codes_offsets = int_ptype_of(f.get_uint(7, 0), "vortex.onpair codes_offsets");
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void child_specs(Node& n, Tree&) const override {
    const auto& m = n.m<OnPairMeta>();
    n.specs.push_back({prim(m.dict_offsets, false), m.dict_size + 1});
    n.specs.push_back({prim(m.codes, false), m.total_tokens});
    n.specs.push_back({prim(m.codes_offsets, false), n.len + 1});
    n.specs.push_back({prim(m.ulen, false), n.len});
    validity_spec(n, 4, n.specs);
  }

  Col decode(const Node& n, Ctx& c) const override {
    Col ulen = decode_ints(n.child(3), c, "vortex.onpair uncompressed lengths");
    Col co = decode_ints(n.child(2), c, "vortex.onpair codes_offsets");
    if (ulen.len != n.len || co.len != n.len + 1)
      malformed("vortex.onpair children do not match the array length");
    uint64_t total = strings_check_lengths(ulen, "vortex.onpair");
    check_decoded(c.lim, total, cat("vortex.onpair of ", n.len, " rows"));
    uint64_t lo = 0, hi = 0;
    strings_check_window(co, n.child(1).len, "vortex.onpair", &lo, &hi);
    // (the reference decodes only the window's slice of the codes child; the whole child is
    // decoded here and the window read from it)
    Col codes = decode_ints(n.child(1), c, "vortex.onpair codes");
    if (codes.len < hi) malformed("vortex.onpair codes decoded to ", codes.len, " values");
    Col dofs = decode_ints(n.child(0), c, "vortex.onpair dict_offsets");
    const Buf& blob = n.buffers[0];
    Buf data = decompress(blob, dofs, codes, lo, hi, total);
    Buf offs = strings_offsets(ulen, total, "vortex.onpair");
    Col out;
    out.layout = Layout::String;
    out.len = n.len;
    out.offsets = offs;
    out.values = data.slice(0, size_t(total));
    return with_child_validity(std::move(out), n, 4, c);
  }

  static Buf decompress(const Buf& blob, const Col& dofs, const Col& codes, uint64_t lo, uint64_t hi,
                        uint64_t total) {
    if (dofs.len == 0) malformed("vortex.onpair: dict_offsets is empty");
    const uint64_t nd = dofs.len - 1;
    // (buffer lengths are u32 on the wire: token offsets inside the blob fit Tok::off)
    if (blob.len > UINT32_MAX) unsupported("vortex.onpair: a dictionary of ", blob.len, " bytes");
    Buf tabb = alloc(size_t(8 * (nd ? nd : 1)));
    Tok* tab = tabb.mut<Tok>();
    with_int_ptype(dofs.ptype, [&](auto tt) {
      using T = decltype(tt);
      const T* d = dofs.vals<T>();
      if (nd) {
        bool bad = i128(d[0]) < 0 || i128(d[nd]) > i128(blob.len);
        for (uint64_t i = 1; i <= nd; i++) bad |= d[i] < d[i - 1];
        if (bad)
          malformed("vortex.onpair: dict_offsets are not monotonic inside the ", blob.len, "-byte dictionary");
      }
      uint64_t mx = 0, mn = UINT64_MAX;
      for (uint64_t i = 0; i < nd; i++) {
        uint64_t l = uint64_t(d[i + 1]) - uint64_t(d[i]);
        mx = l > mx ? l : mx;
        mn = l < mn ? l : mn;
        tab[i] = Tok{uint32_t(uint64_t(d[i])), uint32_t(l <= kMaxToken ? l : 0)};
      }
      if (nd && mx > kMaxToken) malformed("vortex.onpair: a dictionary token is over ", kMaxToken, " bytes");
      if (nd && mn == 0) malformed("vortex.onpair: the dictionary has an empty token");
    });
    const uint64_t m = hi - lo;
    if (total > sat_mul(kMaxToken, m))
      malformed("vortex.onpair: ", m, " codes cannot decode to the ", total, " uncompressed bytes");
    Buf out = alloc(size_t(total) + kMaxToken);
    if (m == 0) return out;
    // the blob with 16 bytes of zeros after it: every token's 16-byte copy stays inside
    Buf padded = alloc(blob.len + kMaxToken);
    if (blob.len) std::memcpy(padded.ptr, blob.data(), blob.len);
    std::memset(padded.ptr + blob.len, 0, kMaxToken);
    with_int_ptype(codes.ptype, [&](auto tt) {
      using C = decltype(tt);
      const C* cd = codes.vals<C>() + lo;
      C cmin = cd[0], cmax = cd[0];
      for (uint64_t i = 1; i < m; i++) {
        cmin = cd[i] < cmin ? cd[i] : cmin;
        cmax = cd[i] > cmax ? cd[i] : cmax;
      }
      if (i128(cmin) < 0 || i128(cmax) >= i128(nd))
        malformed("vortex.onpair: code ", i128(cmax) >= i128(nd) ? i128(cmax) : i128(cmin),
                  " is outside the ", nd, "-token dictionary");
      decode_codes<C>(cd, m, tab, padded.data(), out.ptr, total);
    });
    return out;
  }
};
REGISTER_ENCODING(OnPairEnc);

}  // namespace
}  // namespace vx
