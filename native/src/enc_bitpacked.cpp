// fastlanes.bitpacked: integers packed to B bits in the FastLanes 1024-value layout
// (mirrors encodings/_bitpacked.py; the layout kernels are in fastlanes.h).
#include <algorithm>

#include "encodings.h"
#include "fastlanes.h"
#include "patches.h"

namespace vx {
namespace {

struct BitPackedMeta : MetaBase {
  uint32_t bit_width = 0;
  uint32_t offset = 0;
  std::optional<PatchesMeta> patches;
};

uint64_t packed_bytes(uint64_t n, uint64_t offset, uint64_t b) { return (offset + n + 1023) / 1024 * 128 * b; }

class BitPackedEnc : public Encoding {
 public:
  BitPackedEnc() : Encoding("fastlanes.bitpacked") {}
  void check_dtype(const DType& d) const override {
    if (!d.is_int()) malformed("fastlanes.bitpacked cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "BitPackedMetadata");
    uint64_t b = f.get_uint(1, 0, 32);
    uint64_t off = f.get_uint(2, 0, 32);
    int w = 8 * ptype_width(n.dtype->ptype);
    if (b > uint64_t(w)) malformed("fastlanes.bitpacked: bit width ", b, " is wider than ", dtype_repr(*n.dtype));
    if (off >= 1024) malformed("fastlanes.bitpacked: offset ", off, " is not < 1024");
    BitPackedMeta& m = make_meta<BitPackedMeta>(n);
    m.bit_width = uint32_t(b);
    m.offset = uint32_t(off);
    auto pf = proto::get_message(f, 3, "fastlanes.bitpacked PatchesMetadata");
    if (pf) m.patches = PatchesMeta::from_fields(*pf, "fastlanes.bitpacked");
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {1, 1}; }
  void child_specs(Node& n, Tree&) const override {
    const auto& m = n.m<BitPackedMeta>();
    size_t base = 0;
    if (m.patches) {
      m.patches->child_specs(n.dtype, n.specs);
      base = n.specs.size();
    }
    validity_spec(n, base, n.specs);
  }
  void validate(Node& n, Tree& t) const override {
    const auto& m = n.m<BitPackedMeta>();
    uint64_t need = packed_bytes(n.len, m.offset, m.bit_width);
    if (n.buffers[0].len != need)
      malformed("fastlanes.bitpacked: packed buffer is ", n.buffers[0].len, " bytes, ", n.len,
                " values at offset ", m.offset, " and ", m.bit_width, " bits need ", need);
    check_decoded(t.limits, sat_mul((n.len + m.offset + 1023) / 1024 * 1024, uint64_t(ptype_width(n.dtype->ptype))),
                  cat("fastlanes.bitpacked of ", n.len, " rows"));
  }

  static const Node* validity_child(const Node& n) {
    const auto& m = n.m<BitPackedMeta>();
    size_t np = m.patches ? m.patches->nchildren() : 0;
    return opt_child(n, np);
  }

  Col decode(const Node& n, Ctx& c) const override {
    Col out;
    bitpacked_decode_plus(n, 0, c, out);
    return out;
  }
  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = decode_validity(validity_child(n), n.len, c);
    return true;
  }
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    return bitpacked_take_plus(n, idx, k, 0, c, out);
  }

  // the largest packed value, or false when a full-width signed value may read negative
  static bool packed_max(const Node& n, i128* hi) {
    const auto& m = n.m<BitPackedMeta>();
    PType p = n.dtype->ptype;
    if (int(m.bit_width) < 8 * ptype_width(p) || ptype_is_unsigned(p)) {
      *hi = (i128(1) << m.bit_width) - 1;
      return true;
    }
    return false;
  }

  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    if (!packed_max(n, &hi)) return false;
    lo = 0;
    const auto& m = n.m<BitPackedMeta>();
    if (m.patches && m.patches->len) {
      PatchPositions pp = patch_positions(*m.patches, n.child(0), n.len, c);
      if (pp.size()) {
        Col pv = patch_values(n.child(1), c);
        with_int_ptype(pv.ptype, [&](auto t) {
          using T = decltype(t);
          const T* v = pv.vals<T>();
          for (size_t i = 0; i < pp.size(); i++) {
            i128 x = i128(v[pp.which(i)]);
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
          }
        });
      }
    }
    return true;
  }

  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    if (v.kind != Lit::Int) return false;
    i128 hi;
    const auto& m = n.m<BitPackedMeta>();
    bool has_patches = m.patches && m.patches->len;
    if (!has_patches && packed_max(n, &hi)) {
      bool ans;
      if (bound_answer(op, v.i, 0, hi, &ans)) {
        out = mask_broadcast(n.len, ans, decode_validity(validity_child(n), n.len, c));
        return true;
      }
    }
    return false;  // unpack (fast) and compare
  }
};
REGISTER_ENCODING(BitPackedEnc);

// A take reads a chunk whole (one unpack of 1024 values, then a gather) once it selects at
// least this many of the chunk's rows; below it, each selected value is read alone. The
// break-even measured with fastlanes.h at -O3 -march=x86-64-v2 (a whole-chunk unpack against
// k single reads, widths 2-36): about 16 reads for u8, 24-32 for u16, 48 for u32, 96 for u64.
template <class T>
constexpr size_t kDenseTake = size_t(3 * fl::W<T> / 2 + 4);

template <class T>
void unpack_all(const uint8_t* words, uint64_t nchunks, int b, T* out, T ref) {
  auto fn = fl::unpacker<T>(b);
  const size_t per = size_t(1024 * b / fl::W<T>);
  const T* w = reinterpret_cast<const T*>(words);
  for (uint64_t ch = 0; ch < nchunks; ch++) fn(w + ch * per, out + ch * 1024, ref);
}

}  // namespace

bool bitpacked_decode_plus(const Node& n, uint64_t ref, Ctx& c, Col& out) {
  if (!n.enc || std::string_view(n.enc->id()) != "fastlanes.bitpacked") return false;
  const auto& m = n.m<BitPackedMeta>();
  PType p = n.dtype->ptype;
  int width = ptype_width(p);
  uint64_t nchunks = (m.offset + n.len + 1023) / 1024;
  // the words must be aligned to T for the kernels: the reader copies misaligned buffers
  // whose alignment exponent asks for it; a writer may declare less, so check here
  const Buf aligned = aligned_to(n.buffers[0], size_t(width));
  const uint8_t* words = aligned.data();
  Buf vals = alloc(size_t(nchunks * 1024) * size_t(width));
  with_uint_ptype(p, [&](auto t) {
    using T = decltype(t);
    unpack_all<T>(words, nchunks, int(m.bit_width), vals.mut<T>(), T(ref));
  });
  out = prim_col(p, vals.slice(size_t(m.offset) * size_t(width), size_t(n.len) * size_t(width)), n.len);
  if (m.patches && m.patches->len) {
    apply_patches(out, *m.patches, n.child(0), n.child(1), c, ref);
    if (!out.validity.empty()) {
      normalize_validity(out);
      if (out.null_count) malformed("fastlanes.bitpacked: patch values contain nulls");
    }
  }
  size_t np = m.patches ? m.patches->nchildren() : 0;
  out = with_child_validity(std::move(out), n, np, c);
  return true;
}

bool bitpacked_take_plus(const Node& n, const uint32_t* idx, size_t k, uint64_t ref, Ctx& c, Col& out) {
  if (!n.enc || std::string_view(n.enc->id()) != "fastlanes.bitpacked") return false;
  const auto& m = n.m<BitPackedMeta>();
  PType p = n.dtype->ptype;
  int width = ptype_width(p);
  const Buf aligned = aligned_to(n.buffers[0], size_t(width));
  const uint8_t* words = aligned.data();
  Buf vals = alloc(k * size_t(width));
  int b = int(m.bit_width);
  with_uint_ptype(p, [&](auto t) {
    using T = decltype(t);
    const T* w = reinterpret_cast<const T*>(words);
    const size_t per = size_t(1024 * b / fl::W<T>);
    T* o = vals.mut<T>();
    T r = T(ref);
    // chunk by chunk (idx is sorted): a chunk with many selected rows is unpacked whole into
    // a scratch chunk and gathered from (a dense filter), one with few is read value by value
    alignas(64) T scratch[1024];
    auto fn = fl::unpacker<T>(b);
    size_t i = 0;
    while (i < k) {
      uint64_t chunk = (uint64_t(idx[i]) + m.offset) >> 10;
      uint64_t end = (chunk + 1) * 1024 - m.offset;  // the first row past this chunk
      size_t j = end > 0xFFFFFFFFu ? k : size_t(std::lower_bound(idx + i, idx + k, uint32_t(end)) - idx);
      const T* cw = w + chunk * per;
      if (j - i >= kDenseTake<T>) {
        fn(cw, scratch, r);
        for (size_t q = i; q < j; q++) o[q] = scratch[(uint64_t(idx[q]) + m.offset) & 1023];
      } else {
        for (size_t q = i; q < j; q++)
          o[q] = T(fl::unpack_one<T>(cw, b, unsigned((uint64_t(idx[q]) + m.offset) & 1023)) + r);
      }
      i = j;
    }
  });
  out = prim_col(p, vals, k);
  if (m.patches && m.patches->len) {
    PatchPositions pp = patch_positions(*m.patches, n.child(0), n.len, c);
    if (pp.size()) {
      Col pv = patch_values(n.child(1), c);
      if (!pv.validity.empty()) {
        normalize_validity(pv);
        if (pv.null_count) {
          for (size_t i = 0; i < pp.size(); i++)
            if (!get_bit(pv.validity.data(), pp.which(i))) malformed("fastlanes.bitpacked: patch values contain nulls");
        }
      }
      // both sorted: each patch looked up among the selected rows (patches are few)
      with_uint_ptype(p, [&](auto t) {
        using T = decltype(t);
        T* o = out.values.mut<T>();
        with_int_ptype(pv.ptype, [&](auto s) {
          using S = decltype(s);
          const S* src = pv.vals<S>();
          const uint32_t* at = idx;
          const uint32_t* stop = idx + k;
          for (size_t j = 0; j < pp.size() && at < stop; j++) {
            uint64_t pos = pp.pos[j];
            if (pos > 0xFFFFFFFFu) break;
            // every selected row at pos (idx may repeat a row); a later patch of the same
            // row overwrites, as in the decode
            at = std::lower_bound(at, stop, uint32_t(pos));
            for (const uint32_t* e = at; e < stop && *e == pos; e++)
              o[e - idx] = T(T(src[pp.which(j)]) + T(ref));
          }
        });
      });
    }
  }
  size_t np = m.patches ? m.patches->nchildren() : 0;
  const Node* v = opt_child(n, np);
  if (v) {
    Buf full = decode_validity(v, n.len, c);
    if (!full.empty()) {
      out.validity = take_bits(full.data(), idx, k);
      out.null_count = -1;
      normalize_validity(out);
    }
  }
  return true;
}

}  // namespace vx
