// vortex.chunked: chunk offsets (u64, nchunks + 1) then the chunks (mirrors
// encodings/_chunked.py). The chunks' lengths come from the decoded offsets, so the node is
// built by its own `build`; decoding joins the chunks' columns, and the kernels run chunk by
// chunk.
#include <algorithm>

#include "enc_util.h"

namespace vx {
namespace {

struct ChunkedMeta : MetaBase {
  std::vector<uint64_t> starts;  // nchunks + 1 chunk offsets (0 ... len)
};

class ChunkedEnc : public Encoding {
 public:
  ChunkedEnc() : Encoding("vortex.chunked") {}

  void build(Node& n, Tree& t) const override {
    if (!n.buffers.empty()) malformed("vortex.chunked takes no buffers");
    if (n.nchildren() < 1) malformed("vortex.chunked needs a chunk-offsets child");
    const size_t nchunks = n.nchildren() - 1;
    n.specs.clear();
    n.specs.push_back({prim(PType::U64, false), uint64_t(nchunks) + 1});
    n.children.assign(n.nchildren(), nullptr);
    const Node* offs_node = build_child(t, n, 0, n.specs[0]);
    ChunkedMeta& m = make_meta<ChunkedMeta>(n);
    Col offs;
    try {
      if (offs_node->subtree_foreign) throw NeedPython();
      Ctx c(t.limits);
      offs = decode_ints(*offs_node, c, "vortex.chunked offsets");
    } catch (NeedPython&) {
      // the chunk lengths are known only to Python: the whole node is Python's to build
      n.enc = nullptr;
      n.subtree_foreign = true;
      return;
    }
    if (offs.len != uint64_t(nchunks) + 1) malformed("vortex.chunked: ", offs.len, " offsets for ", nchunks, " chunks");
    m.starts.resize(nchunks + 1);
    with_int_ptype(offs.ptype, [&](auto tag) {
      using T = decltype(tag);
      const T* o = offs.vals<T>();
      for (size_t i = 0; i <= nchunks; i++) m.starts[i] = uint64_t(o[i]);  // (astype(np.uint64))
    });
    bool ok = m.starts[0] == 0 && m.starts[nchunks] == n.len;
    for (size_t i = 1; i <= nchunks && ok; i++) ok = m.starts[i] >= m.starts[i - 1];
    if (!ok) malformed("vortex.chunked offsets must rise from 0 to the length ", n.len);
    for (size_t i = 0; i < nchunks; i++) {
      n.specs.push_back({n.dtype, m.starts[i + 1] - m.starts[i]});
      build_child(t, n, i + 1, n.specs.back());
    }
  }

  Col decode(const Node& n, Ctx& c) const override {
    const size_t nchunks = n.nchildren() - 1;
    if (nchunks == 0) return empty_col(*n.dtype, c);
    std::vector<Col> parts;
    parts.reserve(nchunks);
    for (size_t i = 0; i < nchunks; i++) {
      parts.push_back(vx::decode(n.child(i + 1), c));
      conform(parts.back(), *n.dtype, c.string_view);
    }
    return concat_cols(parts);
  }

  // -- kernels: chunk by chunk --------------------------------------------------------------
  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    const size_t nchunks = n.nchildren() - 1;
    std::vector<Buf> vs(nchunks);
    bool any = false;
    for (size_t i = 0; i < nchunks; i++) {
      vs[i] = node_validity(n.child(i + 1), c);
      any |= !vs[i].empty();
    }
    out = Buf();
    if (!any) return true;
    BitBuilder b(n.len);
    for (size_t i = 0; i < nchunks; i++) {
      uint64_t k = n.child(i + 1).len;
      if (vs[i].empty()) b.append_ones(k);
      else b.append(vs[i].data(), k);
    }
    out = b.buf;
    return true;
  }

  static Mask join(const Node& n, std::vector<Mask>& parts) {
    if (parts.empty()) return mask_const(0, false);
    if (parts.size() == 1) return parts[0];
    BitBuilder vals(n.len);
    bool any = false;
    for (const Mask& m : parts) {
      vals.append(m.vals.data(), m.len);
      any |= !m.valid.empty();
    }
    Mask out;
    out.len = n.len;
    out.vals = vals.buf;
    if (any) {
      BitBuilder valid(n.len);
      for (const Mask& m : parts) {
        if (m.valid.empty()) valid.append_ones(m.len);
        else valid.append(m.valid.data(), m.len);
      }
      out.valid = valid.buf;
    }
    return out;
  }

  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    std::vector<Mask> parts;
    for (size_t i = 1; i < n.nchildren(); i++) parts.push_back(vx::compare(n.child(i), v, op, c));
    out = join(n, parts);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    std::vector<Mask> parts;
    for (size_t i = 1; i < n.nchildren(); i++) parts.push_back(vx::is_in(n.child(i), v, c));
    out = join(n, parts);
    return true;
  }
  // each chunk takes its own rows (the positions are sorted)
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    const auto& starts = n.m<ChunkedMeta>().starts;
    const size_t nchunks = n.nchildren() - 1;
    std::vector<Col> parts;
    std::vector<uint32_t> local;
    size_t at = 0;
    for (size_t i = 0; i < nchunks && at < k; i++) {
      uint64_t lo = starts[i], hi = starts[i + 1];
      size_t end = at;
      while (end < k && idx[end] < hi) end++;
      if (end == at) continue;
      local.resize(end - at);
      for (size_t j = at; j < end; j++) local[j - at] = uint32_t(idx[j] - lo);
      parts.push_back(vx::take(n.child(i + 1), local.data(), local.size(), c));
      conform(parts.back(), *n.dtype, c.string_view);
      at = end;
    }
    out = parts.empty() ? empty_col(*n.dtype, c) : concat_cols(parts);
    return true;
  }
};
REGISTER_ENCODING(ChunkedEnc);

}  // namespace
}  // namespace vx
