// fastlanes.delta: the FastLanes transposed delta encoding of integers (mirrors
// encodings/_delta.py; the layout and kernels are in fastlanes.h). Bit-packed deltas (or a
// FoR over them) unpack straight into the prefix sums, one pass per 1024-row chunk; other
// deltas children are decoded first. Only the chunks the node covers are decoded (take: only
// the chunks holding the rows).
#include "enc_ints.h"
#include "fastlanes.h"

namespace vx {
namespace {

struct DeltaMeta : MetaBase {
  uint64_t deltas_len = 0;
  uint32_t offset = 0;
};

inline int lanes_of(PType p) { return 1024 / (8 * ptype_width(p)); }

// The deltas child's packed words when they unpack straight into the sums:
// fastlanes.bitpacked of whole chunks at offset 0 without patches, or fastlanes.for over
// one (ref: its reference, added to every delta).
struct Packed {
  const uint8_t* words = nullptr;
  Buf keep;  // an aligned copy of the words when the buffer was not aligned
  int bits = 0;
  uint64_t ref = 0;
};

bool packed_deltas(const Node& d, PType p, Packed* out) {
  if (!d.enc) return false;
  const Node* bp = &d;
  std::string_view id = d.enc->id();
  if (id == "fastlanes.for") {
    if (d.nchildren() != 1 || !d.has_child(0)) return false;
    Scalar ref = value_from_proto(*d.dtype, d.metadata);  // (validated by the child's build)
    if (ref.null) return false;
    out->ref = uint64_t(u128(ref.i));
    bp = &d.child(0);
    if (!bp->enc) return false;
    id = bp->enc->id();
  }
  if (id != "fastlanes.bitpacked" || bp->dtype->kind != Kind::Primitive || bp->dtype->ptype != p) return false;
  if (bp->nchildren() || bp->len % 1024 || bp->buffers.size() != 1) return false;  // patches or validity
  auto f = proto::parse(bp->metadata, "BitPackedMetadata");
  uint64_t b = f.get_uint(1, 0, 32), off = f.get_uint(2, 0, 32);
  if (off || f.has(3) || b > uint64_t(8 * ptype_width(p))) return false;
  const Buf& w = bp->buffers[0];
  if (w.len != bp->len / 1024 * 128 * b) return false;  // (validated by the child's build)
  out->bits = int(b);
  out->words = w.data();
  if (reinterpret_cast<uintptr_t>(out->words) % uintptr_t(ptype_width(p))) {
    out->keep = copy_of(w.data(), w.len);
    out->words = out->keep.data();
  }
  return true;
}

// A decoded bases / deltas child: primitive of the node's ptype, at least `need` rows.
Col decoded_child(const Node& n, size_t i, uint64_t need, const char* what, Ctx& c) {
  Col col = vx::decode(n.child(i), c);
  PType p = n.dtype->ptype;
  if (col.layout != Layout::Prim || col.ptype != p)
    malformed("fastlanes.delta: ", what, " decoded to ",
              col.layout == Layout::Prim ? ptype_name(col.ptype) : "a non-primitive column");
  if (col.len < need) malformed("fastlanes.delta: ", what, " decoded to ", col.len, " rows, ", need, " needed");
  ints::align_values(col);
  return col;
}

// Decodes chunks of a delta node into 1024-value slots: the bases (and deltas) once, then
// any chunk on demand.
template <class T>
struct ChunkDecoder {
  const T* bases = nullptr;
  Col bases_col, deltas_col;
  Packed pk;
  bool packed = false;
  fl::UndeltaFn<T> fn = nullptr;
  size_t per = 0;

  ChunkDecoder(const Node& n, uint64_t last_chunk, Ctx& c) {
    uint64_t nl = uint64_t(fl::LANES<T>);
    bases_col = decoded_child(n, 0, last_chunk * nl, "bases", c);
    bases = bases_col.vals<T>();
    packed = packed_deltas(n.child(1), n.dtype->ptype, &pk);
    if (packed) {
      fn = fl::undelta_packer<T>(pk.bits);
      per = size_t(1024 * pk.bits / fl::W<T>);
    } else {
      deltas_col = decoded_child(n, 1, last_chunk * 1024, "deltas", c);
    }
  }
  void chunk(uint64_t ch, T* out) const {
    const T* base = bases + ch * uint64_t(fl::LANES<T>);
    if (packed) fn(reinterpret_cast<const T*>(pk.words) + ch * per, base, out, T(pk.ref));
    else fl::undelta_chunk<T>(deltas_col.vals<T>() + ch * 1024, base, out);
  }
};

class DeltaEnc : public ChildValidityEncoding<2> {
 public:
  DeltaEnc() : ChildValidityEncoding("fastlanes.delta") {}
  void check_dtype(const DType& d) const override {
    if (!d.is_int()) malformed("fastlanes.delta cannot hold ", dtype_repr(d));
  }
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "DeltaMetadata");
    uint64_t dl = f.get_uint(1, 0);
    uint64_t off = f.get_uint(2, 0, 32);
    if (off >= 1024) malformed("fastlanes.delta: offset ", off, " is not < 1024");
    if (dl % 1024) malformed("fastlanes.delta: ", dl, " deltas is not a multiple of 1024");
    if (sat_add(off, n.len) > dl)
      malformed("fastlanes.delta: offset ", off, " + ", n.len, " rows exceed ", dl, " deltas");
    DeltaMeta& m = make_meta<DeltaMeta>(n);
    m.deltas_len = dl;
    m.offset = uint32_t(off);
  }
  void child_specs(Node& n, Tree&) const override {
    size_t k = n.nchildren();
    if (k != 2 && k != 3) malformed("fastlanes.delta takes 2 or 3 children, got ", k);
    const auto& m = n.m<DeltaMeta>();
    const DType* inner = prim(n.dtype->ptype, false);
    n.specs.push_back({inner, m.deltas_len / 1024 * uint64_t(lanes_of(n.dtype->ptype))});
    n.specs.push_back({inner, m.deltas_len});
    validity_spec(n, 2, n.specs);
  }
  void validate(Node& n, Tree& t) const override {
    const auto& m = n.m<DeltaMeta>();
    check_decoded(t.limits, sat_mul(m.deltas_len, uint64_t(ptype_width(n.dtype->ptype))),
                  cat("fastlanes.delta of ", m.deltas_len, " deltas"));
  }

  Col decode(const Node& n, Ctx& c) const override {
    const auto& m = n.m<DeltaMeta>();
    PType p = n.dtype->ptype;
    size_t width = size_t(ptype_width(p));
    uint64_t c0 = m.offset / 1024, c1 = (m.offset + n.len + 1023) / 1024;
    Buf vals = alloc(size_t(c1 - c0) * 1024 * width);
    with_uint_ptype(p, [&](auto t) {
      using T = decltype(t);
      ChunkDecoder<T> dec(n, c1, c);
      T* out = vals.mut<T>();
      for (uint64_t ch = c0; ch < c1; ch++) dec.chunk(ch, out + (ch - c0) * 1024);
    });
    Col out = prim_col(p, n.len ? vals.slice((m.offset - c0 * 1024) * width, size_t(n.len) * width) : Buf(), n.len);
    return with_own_validity(std::move(out), n, c);
  }


  // only the chunks holding the (sorted) rows are decoded
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    const auto& m = n.m<DeltaMeta>();
    PType p = n.dtype->ptype;
    Buf vals = alloc(k * size_t(ptype_width(p)));
    Buf valid = decode_validity(opt_child(n, 2), n.len, c);
    if (k) {
      uint64_t last = (uint64_t(idx[k - 1]) + m.offset) / 1024 + 1;
      with_uint_ptype(p, [&](auto t) {
        using T = decltype(t);
        ChunkDecoder<T> dec(n, last, c);
        alignas(64) T chunk[1024];
        T* o = vals.mut<T>();
        const uint64_t off = m.offset;
        // a chunk decoded, then every position that falls in it (a tight loop; the
        // positions are sorted, any order would still be right: a position in another
        // chunk ends the run)
        for (size_t i = 0; i < k;) {
          const uint64_t ch = (uint64_t(idx[i]) + off) >> 10;
          dec.chunk(ch, chunk);
          size_t j = i;
          for (; j < k; j++) {
            const uint64_t row = uint64_t(idx[j]) + off;
            if (row >> 10 != ch) break;
            o[j] = chunk[row & 1023];
          }
          i = j;
        }
      });
    }
    out = prim_col(p, vals, k);
    if (!valid.empty()) {
      out.validity = take_bits(valid.data(), idx, k);
      out.null_count = -1;
      normalize_validity(out);
    }
    return true;
  }
};
REGISTER_ENCODING(DeltaEnc);

}  // namespace
}  // namespace vx
