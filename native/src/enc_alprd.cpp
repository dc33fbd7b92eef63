// vortex.alprd: ALP for "real doubles", floats split into a dictionary-coded left part and
// a raw right part (mirrors encodings/_alprd.py). `left = dict[code]`, patches replace the
// left bit pattern, `bits = (left << right_bit_width) | right`, reinterpreted as the float.
// One pass over the rows, written into the right parts' buffer when it is ours alone.
//
// No compute hooks (the reference has none: the generic kernels decode and answer).
#include <cstdlib>

#include "cpu.h"
#include "enc_util.h"
#include "patches_strict.h"

namespace vx {
namespace {

struct AlpRdMeta : MetaBase {
  uint32_t right_bit_width = 0;
  std::vector<uint16_t> dictionary;
  PType left_parts_ptype = PType::U16;
  std::optional<PatchesMeta> patches;
};

// out[i] = sd[code[i]] | right[i]; codes checked in range (all of them: `all_in`) or
// read as 0 where out of range (only under nulls: checked before)
template <class T, class C>
void rd_combine(const C* codes, const uint8_t* right, uint8_t* out, uint64_t n, const T* sd, uint64_t nd,
                bool all_in) {
  if (all_in) {
    for (uint64_t i = 0; i < n; i++) {
      T r;
      std::memcpy(&r, right + i * sizeof(T), sizeof(T));
      T v = T(sd[codes[i]] | r);
      std::memcpy(out + i * sizeof(T), &v, sizeof(T));
    }
  } else {
    for (uint64_t i = 0; i < n; i++) {
      T r;
      std::memcpy(&r, right + i * sizeof(T), sizeof(T));
      uint64_t cd = uint64_t(codes[i]);
      T v = T(sd[cd < nd ? cd : 0] | r);
      std::memcpy(out + i * sizeof(T), &v, sizeof(T));
    }
  }
}

#ifdef VX_HAVE_AVX2_DISPATCH
// AVX2 (runtime-selected): u16 codes into a dictionary of at most 8 entries (ALP-RD's
// size; all ALP-RD writers use u16 codes), the lookup a lane permutation (vpermd) instead of
// a scalar gather: the scalar loop was a third of an f32 ALP-RD decode. Codes must all be
// below 8 (the permutation reads their low 3 bits).
VX_AVX2_BEGIN
void rd_combine8_avx2(const uint16_t* codes, const uint8_t* right, uint8_t* out, uint64_t n,
                      const uint32_t* sd, uint64_t nd) {
  alignas(32) uint32_t tab[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (uint64_t j = 0; j < nd; j++) tab[j] = sd[j];
  const __m256i t = _mm256_load_si256(reinterpret_cast<const __m256i*>(tab));
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i c = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i)));
    __m256i r = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(right + 4 * i));
    __m256i v = _mm256_or_si256(_mm256_permutevar8x32_epi32(t, c), r);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4 * i), v);
  }
  rd_combine<uint32_t, uint16_t>(codes + i, right + 4 * i, out + 4 * i, n - i, sd, nd, true);
}
void rd_combine8_avx2(const uint16_t* codes, const uint8_t* right, uint8_t* out, uint64_t n,
                      const uint64_t* sd, uint64_t nd) {
  alignas(32) uint32_t lo[8] = {0, 0, 0, 0, 0, 0, 0, 0}, hi[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (uint64_t j = 0; j < nd; j++) {
    lo[j] = uint32_t(sd[j]);
    hi[j] = uint32_t(sd[j] >> 32);
  }
  const __m256i tl = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  const __m256i th = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i c = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + i)));
    __m256i l = _mm256_permutevar8x32_epi32(tl, c);
    __m256i h = _mm256_permutevar8x32_epi32(th, c);
    __m256i a = _mm256_unpacklo_epi32(l, h);  // rows 0 1 | 4 5
    __m256i b = _mm256_unpackhi_epi32(l, h);  // rows 2 3 | 6 7
    __m256i v0 = _mm256_permute2x128_si256(a, b, 0x20);  // rows 0 1 2 3
    __m256i v1 = _mm256_permute2x128_si256(a, b, 0x31);  // rows 4 5 6 7
    __m256i r0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(right + 8 * i));
    __m256i r1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(right + 8 * i + 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * i), _mm256_or_si256(v0, r0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * i + 32), _mm256_or_si256(v1, r1));
  }
  rd_combine<uint64_t, uint16_t>(codes + i, right + 8 * i, out + 8 * i, n - i, sd, nd, true);
}
VX_AVX2_END
#endif

class AlpRdEnc : public Encoding {
 public:
  AlpRdEnc() : Encoding("vortex.alprd") {}

  static int bits_of(PType p) { return p == PType::F64 ? 64 : 32; }

  void check_dtype(const DType& d) const override {
    if (d.kind != Kind::Primitive || (d.ptype != PType::F32 && d.ptype != PType::F64))
      malformed("vortex.alprd holds f32 or f64, not ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "ALPRDMetadata");
    AlpRdMeta& m = make_meta<AlpRdMeta>(n);
    uint64_t rbw = f.get_uint(1, 0, 32);
    uint64_t dict_len = f.get_uint(2, 0, 32);
    std::vector<uint64_t> entries = f.packed_varints(3);
    if (dict_len > entries.size())
      malformed("vortex.alprd: dict_len ", dict_len, " but the dictionary has ", entries.size(), " entries");
    m.dictionary.reserve(size_t(dict_len));
    for (size_t i = 0; i < size_t(dict_len); i++) {
      if (entries[i] >= (uint64_t(1) << 16)) malformed("vortex.alprd: a dictionary entry does not fit in u16");
      m.dictionary.push_back(uint16_t(entries[i]));
    }
    PType lp = int_ptype_of(f.get_uint(4, 0), "vortex.alprd left parts");
    if (!ptype_is_unsigned(lp)) malformed("vortex.alprd left parts must be unsigned, not ", ptype_name(lp));
    m.left_parts_ptype = lp;
    auto pm = proto::get_message(f, 5, "ALPRDMetadata.patches");
    if (pm) m.patches = PatchesMeta::from_fields(*pm, "vortex.alprd");
    // parse_metadata
    int bits = bits_of(n.dtype->ptype);
    if (rbw >= uint64_t(bits))
      malformed("vortex.alprd right_bit_width ", rbw, " leaves no left bits in ", bits);
    m.right_bit_width = uint32_t(rbw);
    if (m.patches) {
      if (!ptype_is_unsigned(m.patches->indices_ptype)) malformed("vortex.alprd: patch indices must be unsigned");
      if (m.patches->len > n.len) malformed("vortex.alprd: ", m.patches->len, " patches for ", n.len, " rows");
    }
  }
  void child_specs(Node& n, Tree&) const override {
    const auto& m = n.m<AlpRdMeta>();
    PType rp = n.dtype->ptype == PType::F64 ? PType::U64 : PType::U32;
    n.specs.push_back({prim(m.left_parts_ptype, n.dtype->nullable), n.len});
    n.specs.push_back({prim(rp, false), n.len});
    if (m.patches) m.patches->child_specs(prim(m.left_parts_ptype, false), n.specs);
    if (n.nchildren() != n.specs.size())
      malformed("vortex.alprd has ", n.nchildren(), " children, expected ", n.specs.size());
  }
  void validate(Node& n, Tree& t) const override {
    check_decoded(t.limits, sat_mul(n.len, uint64_t(ptype_width(n.dtype->ptype))),
                  cat("vortex.alprd of ", n.len, " rows"));
  }

  template <class T>
  static Col decode_t(const Node& n, Ctx& c) {
    const auto& m = n.m<AlpRdMeta>();
    const uint64_t len = n.len;
    Col left = vx::decode(n.child(0), c);
    if (left.layout != Layout::Prim || !ptype_is_unsigned(left.ptype))
      malformed("vortex.alprd left parts decode to ", dtype_repr(*n.child(0).dtype));
    if (left.len != len) malformed("vortex.alprd left parts decoded to ", left.len, " rows for ", len);
    Col right = decode_ints(n.child(1), c, "vortex.alprd right parts");
    const PType rp = sizeof(T) == 8 ? PType::U64 : PType::U32;
    if (right.ptype != rp || right.len != len)
      malformed("vortex.alprd right parts are ", ptype_name(right.ptype), ", expected ", ptype_name(rp));
    if (left.values.len < len * uint64_t(ptype_width(left.ptype)) || right.values.len < len * sizeof(T))
      malformed("vortex.alprd: a child decoded short");
    const uint8_t* valid = left.validity.empty() ? nullptr : left.validity.data();
    // the dictionary, shifted into place
    const unsigned rbw = m.right_bit_width;
    std::vector<T> sd(m.dictionary.size());
    for (size_t i = 0; i < sd.size(); i++) sd[i] = T(T(m.dictionary[i]) << rbw);
    if (sd.empty()) {
      if (len && (!valid || count_ones(valid, len) > 0)) malformed("vortex.alprd: codes into an empty dictionary");
      sd.push_back(0);
    }
    const uint64_t nd = sd.size();
    // codes in range at every valid row (checked_indices)
    bool all_in = true;
    with_int_ptype(left.ptype, [&](auto t) {
      using C = decltype(t);
      const C* cd = left.vals<C>();
      // the OR of the codes bounds their maximum (and vectorizes in any width): below a
      // dictionary size that is a power of two (ALP-RD's: up to 8), every code is in range
      C acc = 0;
      for (uint64_t i = 0; i < len; i++) acc = C(acc | cd[i]);
      if (uint64_t(acc) < nd) return;
      uint64_t mx = 0;
      for (uint64_t i = 0; i < len; i++) mx = uint64_t(cd[i]) > mx ? uint64_t(cd[i]) : mx;
      if (mx < nd) return;
      all_in = false;
      bool bad = !valid;
      if (valid)
        for (uint64_t i = 0; i < len && !bad; i++) bad = uint64_t(cd[i]) >= nd && get_bit(valid, i);
      if (bad) malformed("vortex.alprd left parts: a code falls outside the ", nd, " values");
    });
    Buf pos;
    Col pv;
    const auto& pm = m.patches;
    if (pm && pm->len) {
      pos = strict_patch_positions(*pm, n.child(2), len, "vortex.alprd", c);
      pv = patch_values(n.child(3), c);
      if (!ptype_is_int(pv.ptype) || pv.len < pos.len / 8)
        malformed("vortex.alprd patch values decode to ", dtype_repr(*n.child(3).dtype));
    }
    // the right parts of the patched rows (all their bits: hostile right parts may set
    // bits above right_bit_width, which the reference ORs in), before `out` overwrites them
    const size_t k = pos.len / 8;
    const uint64_t* p = pos.empty() ? nullptr : pos.as<uint64_t>();
    const uint8_t* r = right.values.data();
    std::vector<T> pr(k);
    for (size_t i = 0; i < k; i++) std::memcpy(&pr[i], r + p[i] * sizeof(T), sizeof(T));
    Buf out = right.values.unique_owned() ? right.values : alloc(size_t(len) * sizeof(T));
    bool done = false;
#ifdef VX_HAVE_AVX2_DISPATCH
    if (left.ptype == PType::U16 && all_in && nd <= 8 && have_avx2()) {
      rd_combine8_avx2(left.vals<uint16_t>(), r, out.ptr, len, sd.data(), nd);
      done = true;
    }
#endif
    if (!done)
      with_int_ptype(left.ptype, [&](auto t) {
        using C = decltype(t);
        rd_combine<T, C>(left.vals<C>(), r, out.ptr, len, sd.data(), nd, all_in);
      });
    // patches: the left bit pattern replaced (the last patch at a position wins)
    if (k) {
      with_int_ptype(pv.ptype, [&](auto t) {
        using S = decltype(t);
        const S* s = pv.vals<S>();
        for (size_t i = 0; i < k; i++) {
          T v = T(T(T(s[i]) << rbw) | pr[i]);
          std::memcpy(out.ptr + p[i] * sizeof(T), &v, sizeof(T));
        }
      });
    }
    Col col = prim_col(n.dtype->ptype, out, len, left.validity);
    col.null_count = -1;
    normalize_validity(col);
    return col;
  }
  Col decode(const Node& n, Ctx& c) const override {
    return n.dtype->ptype == PType::F64 ? decode_t<uint64_t>(n, c) : decode_t<uint32_t>(n, c);
  }
};
REGISTER_ENCODING(AlpRdEnc);

}  // namespace
}  // namespace vx
