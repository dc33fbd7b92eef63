// vortex.fsst: strings compressed with a static table of up to 255 symbols of 1..8 bytes
// (mirrors vortex_io/encodings/_fsst.py: the same checks in the same order, so a malformed
// array fails with the same error class either way).
//
// Decoding is the standard FSST loop: every code emits its symbol as one unconditional
// 8-byte store into a padded output and advances by the symbol's length; four codes at a
// time when none of them is an escape (255) or names no symbol, one at a time otherwise.
// Like the reference, the codes of all rows (codes[co[0]:co[n]]) are decoded as one
// stream, which must decode to exactly the sum of the uncompressed lengths; the rows are
// then cut by those lengths (the offsets are their prefix sums, known up front).
//
// Kernels: take decodes only the selected rows' codes (as one concatenated stream, like
// the reference's gather); == / != / IN compress the needle with the array's symbol table
// (the reference's greedy parse, reproduced exactly: rows whose codes equal the needle's
// match without decoding) and decode only the other candidate rows.
#include <algorithm>

#include "enc_util.h"
#include "encodings.h"

namespace vx {

// -- shared with vortex.onpair (encodings.h) --------------------------------------------------

// check_lengths: non-negative; returns the sum (refused past 2**62)
uint64_t strings_check_lengths(const Col& ulen, const char* what) {
  uint64_t total = 0;
  with_int_ptype(ulen.ptype, [&](auto tt) {
    using T = decltype(tt);
    const T* v = ulen.vals<T>();
    const uint64_t n = ulen.len;
    if constexpr (std::is_signed_v<T>) {
      T mn = 0;
      for (uint64_t i = 0; i < n; i++) mn = v[i] < mn ? v[i] : mn;
      if (mn < 0) malformed(what, ": negative uncompressed length");
    }
    uint64_t acc = 0;  // (a local: `v` may alias `total`)
    if (sizeof(T) <= 4 && n < (uint64_t(1) << 32)) {
      // fewer than 2**32 values of at most 32 bits: the u64 sum cannot wrap (vectorized)
      for (uint64_t i = 0; i < n; i++) acc += uint64_t(v[i]);
    } else {
      for (uint64_t i = 0; i < n; i++) acc = sat_add(acc, uint64_t(v[i]));
    }
    total = acc;
  });
  if (total > (uint64_t(1) << 62)) limit_exceeded(what, ": uncompressed lengths sum past 2**62 bytes");
  return total;
}

// check_window: codes_offsets non-decreasing inside [0, limit]; sets (first, last)
void strings_check_window(const Col& co, uint64_t limit, const char* what, uint64_t* lo, uint64_t* hi) {
  if (co.len == 0) malformed(what, ": codes_offsets is empty");
  with_int_ptype(co.ptype, [&](auto tt) {
    using T = decltype(tt);
    const T* v = co.vals<T>();
    i128 a = i128(v[0]), b = i128(v[co.len - 1]);
    if (a < 0 || b > i128(limit))
      malformed(what, ": codes_offsets [", a, ", ", b, "] fall outside ", limit, " codes");
    bool bad = false;
    for (uint64_t i = 1; i < co.len; i++) bad |= v[i] < v[i - 1];
    if (bad) malformed(what, ": codes_offsets are not monotonic");
    *lo = uint64_t(a);
    *hi = uint64_t(b);
  });
}

// int32 Arrow offsets: the prefix sums of the lengths (their sum was checked: `total`)
Buf strings_offsets(const Col& ulen, uint64_t total, const char* what) {
  if (total > 0x7FFFFFFF) unsupported(what, ": more than 2 GiB of strings in one array");
  Buf out = alloc(size_t(4 * (ulen.len + 1)));
  int32_t* o = out.mut<int32_t>();
  o[0] = 0;
  with_int_ptype(ulen.ptype, [&](auto tt) {
    using T = decltype(tt);
    const T* v = ulen.vals<T>();
    int32_t acc = 0;
    for (uint64_t i = 0; i < ulen.len; i++) {
      acc += int32_t(v[i]);
      o[i + 1] = acc;
    }
  });
  return out;
}

namespace {

constexpr uint8_t kEscape = 255;
constexpr size_t kPad = 32;  // output slack: 4 unconditional 8-byte stores past a valid position

// table flags in SymTab::len: an escape, a code naming no symbol
constexpr uint8_t kEscFlag = 0x40;
constexpr uint8_t kBadFlag = 0x80;

struct SymTab {
  uint64_t sym[256];
  uint8_t len[256];
  unsigned nsym = 0;
};

void load_symbols(const Node& n, SymTab& t) {
  const Buf& s = n.buffers[0];
  const Buf& l = n.buffers[1];
  t.nsym = unsigned(s.len / 8);  // validate: <= 255 and one length each
  for (unsigned c = 0; c < 256; c++) {
    if (c < t.nsym) {
      t.sym[c] = load<uint64_t>(s.data() + 8 * c);
      t.len[c] = l.data()[c];  // 1..8 (validate)
    } else {
      t.sym[c] = 0;
      t.len[c] = c == kEscape ? kEscFlag : kBadFlag;
    }
  }
}

// The output of a decode: `limit` bytes expected, `kPad` bytes of slack after them.
struct Out {
  uint8_t* base;
  uint64_t pos = 0;
  uint64_t limit;
  bool esc = false;  // the previous run ended with an escape: its literal comes next
};

[[noreturn]] void overrun(uint64_t limit) {
  malformed("vortex.fsst: codes decode to more than ", limit, " bytes");
}

// Decode codes [p, end) onto `o` (appending; an escape may carry over to the next run).
inline void decode_run(const SymTab& t, const uint8_t* p, const uint8_t* end, Out& o) {
  const uint64_t limit = o.limit;
  uint8_t* const base = o.base;
  uint64_t pos = o.pos;
  if (o.esc && p < end) {
    if (pos >= limit) overrun(limit);
    base[pos++] = *p++;
    o.esc = false;
  }
  while (p < end) {
    // fast: four codes, none an escape or unknown, while the 32 bytes they may store
    // stay inside the output and its slack (pos <= limit)
    while (end - p >= 4 && pos <= limit) {
      uint8_t c0 = p[0], c1 = p[1], c2 = p[2], c3 = p[3];
      uint8_t l0 = t.len[c0], l1 = t.len[c1], l2 = t.len[c2], l3 = t.len[c3];
      if ((l0 | l1 | l2 | l3) & (kEscFlag | kBadFlag)) break;
      uint8_t* d = base + pos;
      std::memcpy(d, &t.sym[c0], 8);
      d += l0;
      std::memcpy(d, &t.sym[c1], 8);
      d += l1;
      std::memcpy(d, &t.sym[c2], 8);
      d += l2;
      std::memcpy(d, &t.sym[c3], 8);
      d += l3;
      pos = uint64_t(d - base);
      p += 4;
    }
    if (p >= end) break;
    // slow: one code, every bound checked exactly
    uint8_t c = *p++;
    uint8_t l = t.len[c];
    if (l == kEscFlag) {
      if (p >= end) {
        o.esc = true;
        break;
      }
      if (pos >= limit) overrun(limit);
      base[pos++] = *p++;
    } else if (l == kBadFlag) {
      malformed("vortex.fsst: code ", int(c), " is not in the symbol table");
    } else {
      if (pos + l > limit) overrun(limit);
      std::memcpy(base + pos, &t.sym[c], 8);  // pos + 8 <= limit + kPad
      pos += l;
    }
  }
  o.pos = pos;
}

void finish(const Out& o) {
  if (o.esc) malformed("vortex.fsst: the code stream ends with an escape");
  if (o.pos != o.limit)
    malformed("vortex.fsst: codes decode to ", o.pos, " bytes, the uncompressed lengths sum to ", o.limit);
}

struct FsstMeta : MetaBase {
  PType ulen = PType::U8;
  PType co = PType::U8;
};

// The integer children of a node, decoded (and the codes bytes).
struct Parts {
  Bytes codes;
  Col ulen;
  Col co;
  const Node* validity = nullptr;
  uint64_t lo = 0, hi = 0;  // the codes window co[0], co[n]
};

Col string_col(const Node& n, Buf offsets, Buf data, uint64_t len, Buf validity) {
  Col out;
  out.layout = Layout::String;
  out.len = len;
  out.offsets = std::move(offsets);
  out.values = std::move(data);
  out.validity = std::move(validity);
  out.null_count = -1;
  normalize_validity(out);
  (void)n;
  return out;
}

// -- the needle's codes: the reference's greedy parse (fsst._Matcher / _parse) --------------
constexpr int kHBits = 12;
constexpr int kWays = 4;
constexpr uint64_t kPrefixMult = 0x9E3779B97F4A7C15ull;

inline uint64_t mask_bytes(unsigned n) { return n >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * n)) - 1; }
inline unsigned prefix_slot(uint64_t key) { return unsigned(((key & mask_bytes(3)) * kPrefixMult) >> (64 - kHBits)); }

std::string compress_needle(const SymTab& t, const std::string& needle) {
  const unsigned ns = t.nsym;
  uint64_t keys[256];
  for (unsigned c = 0; c < ns; c++) keys[c] = t.sym[c] & mask_bytes(t.len[c]);
  // 1- and 2-byte symbols: direct lookups (a key given twice: the last code wins, as numpy's
  // fancy assignment)
  int one[256];
  std::fill(one, one + 256, -1);
  std::vector<std::pair<uint16_t, int>> two;
  for (unsigned c = 0; c < ns; c++) {
    if (t.len[c] == 1) one[keys[c]] = int(c);
    else if (t.len[c] == 2) two.push_back({uint16_t(keys[c]), int(c)});
  }
  std::stable_sort(two.begin(), two.end(), [](auto& a, auto& b) { return a.first < b.first; });
  // longer symbols: by prefix slot, longest first, then by code; at most kWays per slot
  struct Long { unsigned slot; int len; int code; };
  std::vector<Long> lg;
  for (unsigned c = 0; c < ns; c++)
    if (t.len[c] >= 3) lg.push_back({prefix_slot(keys[c]), int(t.len[c]), int(c)});
  std::sort(lg.begin(), lg.end(), [](const Long& a, const Long& b) {
    if (a.slot != b.slot) return a.slot < b.slot;
    if (a.len != b.len) return a.len > b.len;
    return a.code < b.code;
  });
  {
    std::vector<Long> kept;
    for (size_t i = 0; i < lg.size(); i++) {
      size_t r = 0;
      while (r < kept.size() && kept[kept.size() - 1 - r].slot == lg[i].slot) r++;
      if (r < size_t(kWays)) kept.push_back(lg[i]);
    }
    lg.swap(kept);
  }
  const uint8_t* d = reinterpret_cast<const uint8_t*>(needle.data());
  const size_t len = needle.size();
  std::string out;
  size_t p = 0;
  while (p < len) {
    size_t avail = std::min<size_t>(len - p, 8);
    uint64_t key8 = 0;
    std::memcpy(&key8, d + p, avail);  // zero beyond the row
    int blen = 0, bcode = -1;
    unsigned s = prefix_slot(key8);
    auto it = std::lower_bound(lg.begin(), lg.end(), s, [](const Long& a, unsigned v) { return a.slot < v; });
    for (; it != lg.end() && it->slot == s; ++it) {
      if (size_t(it->len) <= avail && (key8 & mask_bytes(unsigned(it->len))) == keys[it->code]) {
        blen = it->len;
        bcode = it->code;
        break;
      }
    }
    if (!blen && avail >= 2) {
      uint16_t k2 = uint16_t(key8 & 0xFFFF);
      auto r = std::upper_bound(two.begin(), two.end(), k2, [](uint16_t v, auto& a) { return v < a.first; });
      if (r != two.begin() && (r - 1)->first == k2) {
        blen = 2;
        bcode = (r - 1)->second;
      }
    }
    if (!blen && one[d[p]] >= 0) {
      blen = 1;
      bcode = one[d[p]];
    }
    if (blen) {
      out += char(uint8_t(bcode));
      p += size_t(blen);
    } else {
      out += char(kEscape);
      out += char(d[p]);
      p += 1;
    }
  }
  return out;
}

class FsstEnc : public Encoding {
 public:
  FsstEnc() : Encoding("vortex.fsst") {}

  void check_dtype(const DType& d) const override {
    if (!d.is_string_like()) malformed("vortex.fsst cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "FSSTMetadata");
    FsstMeta& m = make_meta<FsstMeta>(n);
    m.ulen = int_ptype_of(f.get_uint(1, 0), "vortex.fsst uncompressed_lengths");
    m.co = int_ptype_of(f.get_uint(2, 0), "vortex.fsst codes_offsets");
  }
  std::pair<size_t, size_t> nbuffers(const Node&) const override { return {2, 3}; }
  void child_specs(Node& n, Tree& t) const override {
    const auto& m = n.m<FsstMeta>();
    ChildSpec ulen{prim(m.ulen, false), n.len};
    if (n.buffers.size() == 2) {  // legacy: codes as a binary varbin child
      if (n.nchildren() != 2)
        malformed("vortex.fsst (legacy form) takes 2 children, got ", n.nchildren());
      DType* b = t.dtypes.make();
      b->kind = Kind::Binary;
      b->nullable = n.dtype->nullable;
      n.specs.push_back({b, n.len});
      n.specs.push_back(ulen);
      return;
    }
    n.specs.push_back(ulen);
    n.specs.push_back({prim(m.co, false), n.len + 1});
    validity_spec(n, 2, n.specs);
  }
  void validate(Node& n, Tree&) const override {
    const Buf& sym = n.buffers[0];
    const Buf& lens = n.buffers[1];
    if (sym.len % 8) malformed("vortex.fsst symbols buffer of ", sym.len, " bytes is not u64s");
    uint64_t nsym = sym.len / 8;
    if (nsym > 255) malformed("vortex.fsst has ", nsym, " symbols, at most 255 allowed");
    if (lens.len != nsym) malformed("vortex.fsst has ", nsym, " symbols but ", lens.len, " symbol lengths");
    for (uint64_t i = 0; i < nsym; i++)
      if (lens.data()[i] < 1 || lens.data()[i] > 8) malformed("vortex.fsst symbol lengths must be 1..8");
  }

  static bool legacy(const Node& n) { return n.buffers.size() == 2; }

  // codes bytes, ulen, codes_offsets and the validity node (_parts + the integer children)
  static Parts parts(const Node& n, Ctx& c) {
    Parts p;
    const Node* co_node;
    const Node* ulen_node;
    if (legacy(n)) {
      const Node& codes = n.child(0);
      // the reference canonicalizes the codes child and requires vortex.varbin: another
      // canonical encoding is refused; what a compressed one decodes to is the Python
      // implementation's business
      if (!codes.enc) throw NeedPython();
      if (std::string_view(codes.enc->id()) != "vortex.varbin") {
        if (codes.enc->canonical())
          malformed("vortex.fsst (legacy form): codes must be vortex.varbin, not ", codes.enc_id);
        throw NeedPython();
      }
      p.codes = codes.buffers[0].bytes();
      co_node = &codes.child(0);
      p.validity = opt_child(codes, 1);
      ulen_node = &n.child(1);
    } else {
      p.codes = n.buffers[2].bytes();
      co_node = &n.child(1);
      ulen_node = &n.child(0);
      p.validity = opt_child(n, 2);
    }
    p.ulen = decode_ints(*ulen_node, c, "vortex.fsst uncompressed lengths");
    p.co = decode_ints(*co_node, c, "vortex.fsst codes_offsets");
    if (p.ulen.len != n.len || p.co.len != n.len + 1)
      malformed("vortex.fsst children do not match the array length");
    return p;
  }

  Col decode(const Node& n, Ctx& c) const override {
    Parts p = parts(n, c);
    uint64_t total = strings_check_lengths(p.ulen, "vortex.fsst");
    check_decoded(c.lim, total, cat("vortex.fsst of ", n.len, " rows"));
    strings_check_window(p.co, p.codes.n, "vortex.fsst", &p.lo, &p.hi);
    SymTab t;
    load_symbols(n, t);
    uint64_t m = p.hi - p.lo;
    if (total > sat_mul(8, m))
      malformed("vortex.fsst: ", m, " codes cannot decode to the ", total, " uncompressed bytes");
    Buf data = alloc(size_t(total) + kPad);
    Out o{data.ptr, 0, total};
    decode_run(t, p.codes.p + p.lo, p.codes.p + p.hi, o);
    finish(o);
    return string_col(n, strings_offsets(p.ulen, total, "vortex.fsst"), data.slice(0, size_t(total)), n.len,
                      decode_validity(p.validity, n.len, c));
  }

  // rows `idx` (sorted, in range) decoded: their bytes back to back (_rows); lengths in `lens`
  static Buf decode_rows(const Node& n, const Parts& p, const uint32_t* idx, size_t k, Ctx& c,
                         uint64_t* total_out) {
    uint64_t total = 0, m = 0;
    with_int_ptype(p.co.ptype, [&](auto tt) {
      using T = decltype(tt);
      const T* co = p.co.vals<T>();
      uint64_t acc = 0;
      for (size_t i = 0; i < k; i++) acc = sat_add(acc, uint64_t(co[idx[i] + 1]) - uint64_t(co[idx[i]]));
      m = acc;
    });
    // (each length is checked; repeated rows may still sum past anything: saturating)
    with_int_ptype(p.ulen.ptype, [&](auto tt) {
      using T = decltype(tt);
      const T* u = p.ulen.vals<T>();
      uint64_t acc = 0;
      for (size_t i = 0; i < k; i++) acc = sat_add(acc, uint64_t(u[idx[i]]));
      total = acc;
    });
    check_decoded(c.lim, total, cat("vortex.fsst take of ", k, " rows"));
    if (total > sat_mul(8, m))
      malformed("vortex.fsst: ", m, " codes cannot decode to the ", total, " uncompressed bytes");
    SymTab t;
    load_symbols(n, t);
    Buf data = alloc(size_t(total) + kPad);
    Out o{data.ptr, 0, total};
    with_int_ptype(p.co.ptype, [&](auto tt) {
      using T = decltype(tt);
      const T* co = p.co.vals<T>();
      const uint8_t* codes = p.codes.p;
      for (size_t i = 0; i < k; i++) decode_run(t, codes + uint64_t(co[idx[i]]), codes + uint64_t(co[idx[i] + 1]), o);
    });
    finish(o);
    *total_out = total;
    return data;
  }

  // _scratch_parts: the integer children checked (no decoded-size check: callers do theirs)
  static Parts scratch_parts(const Node& n, Ctx& c) {
    Parts p = parts(n, c);
    strings_check_lengths(p.ulen, "vortex.fsst");
    strings_check_window(p.co, p.codes.n, "vortex.fsst", &p.lo, &p.hi);
    return p;
  }

  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    if (legacy(n)) return false;
    Parts p = scratch_parts(n, c);
    uint64_t total = 0;
    Buf data = decode_rows(n, p, idx, k, c, &total);
    if (total > 0x7FFFFFFF) unsupported("vortex.fsst: more than 2 GiB of strings in one array");
    Buf offs = alloc(4 * (k + 1));
    int32_t* o = offs.mut<int32_t>();
    o[0] = 0;
    with_int_ptype(p.ulen.ptype, [&](auto tt) {
      using T = decltype(tt);
      const T* u = p.ulen.vals<T>();
      int32_t acc = 0;
      for (size_t i = 0; i < k; i++) {
        acc += int32_t(u[idx[i]]);
        o[i + 1] = acc;
      }
    });
    Buf v = decode_validity(p.validity, n.len, c);
    if (!v.empty()) v = take_bits(v.data(), idx, k);
    out = string_col(n, offs, data.slice(0, size_t(total)), k, v);
    return true;
  }

  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    if (legacy(n)) return false;
    out = decode_validity(opt_child(n, 2), n.len, c);
    return true;
  }

  // rows equal to `needle`, nulls not applied (equal_mask), into the bitmap `bits`
  static void equal_bits(const Node& n, const Parts& p, const std::string& needle, uint8_t* bits, Ctx& c) {
    const uint64_t L = needle.size();
    std::vector<uint32_t> cand;
    with_int_ptype(p.ulen.ptype, [&](auto tt) {
      using T = decltype(tt);
      const T* u = p.ulen.vals<T>();
      const uint64_t rows = n.len;
      uint64_t k = 0;
      for (uint64_t i = 0; i < rows; i++) k += uint64_t(u[i]) == L;
      cand.resize(size_t(k));
      uint32_t* out = cand.data();
      size_t j = 0;
      for (uint64_t i = 0; i < rows && j < k; i++) {
        out[j] = uint32_t(i);
        j += uint64_t(u[i]) == L;
      }
    });
    if (cand.empty()) return;
    if (L == 0) {
      for (uint32_t r : cand) set_bit(bits, r);
      return;
    }
    SymTab t;
    load_symbols(n, t);
    std::string nc = compress_needle(t, needle);
    std::vector<uint32_t> rest;
    with_int_ptype(p.co.ptype, [&](auto tt) {
      using T = decltype(tt);
      const T* co = p.co.vals<T>();
      const uint8_t* codes = p.codes.p;
      for (uint32_t r : cand) {
        uint64_t a = uint64_t(co[r]), b = uint64_t(co[r + 1]);
        if (b - a == nc.size() && std::memcmp(codes + a, nc.data(), nc.size()) == 0) set_bit(bits, r);
        else rest.push_back(r);
      }
    });
    if (rest.empty()) return;
    uint64_t total = 0;
    Buf data = decode_rows(n, p, rest.data(), rest.size(), c, &total);
    for (size_t i = 0; i < rest.size(); i++)
      if (std::memcmp(data.data() + i * L, needle.data(), size_t(L)) == 0) set_bit(bits, rest[i]);
  }

  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    if ((op != Op::Eq && op != Op::Neq) || v.kind != Lit::Bytes || legacy(n)) return false;
    Parts p = scratch_parts(n, c);
    Buf bits = alloc_zeroed(bitmap_bytes(n.len));
    equal_bits(n, p, v.s, bits.ptr, c);
    if (op == Op::Neq) {
      uint64_t* w = bits.mut<uint64_t>();
      for (size_t i = 0; i < bitmap_bytes(n.len) / 8; i++) w[i] = ~w[i];
      bitmap_clear_tail(bits.ptr, n.len);
    }
    out = with_validity(bits, decode_validity(p.validity, n.len, c), n.len);
    return true;
  }

  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    if (v.size() > 16 || legacy(n)) return false;
    for (const Lit& l : v)
      if (l.kind != Lit::Bytes) return false;
    Parts p = scratch_parts(n, c);
    Buf bits = alloc_zeroed(bitmap_bytes(n.len));
    std::vector<const std::string*> seen;
    for (const Lit& l : v) {
      bool dup = false;
      for (auto* s : seen) dup |= *s == l.s;
      if (dup) continue;
      seen.push_back(&l.s);
      equal_bits(n, p, l.s, bits.ptr, c);
    }
    out = with_validity(bits, decode_validity(p.validity, n.len, c), n.len);
    return true;
  }
};
REGISTER_ENCODING(FsstEnc);

}  // namespace
}  // namespace vx
