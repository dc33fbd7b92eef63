// Building the encoding tree of an Array message: the native twin of
// vortex_io._ipc.messages.decode_array_body and _Builder (the same checks in the same order,
// so a malformed message fails with the same error class either way).
#include "fb.h"
#include "node.h"

namespace vx {
namespace {

std::unordered_map<std::string, std::unique_ptr<Encoding>>& registry() {
  static auto* r = new std::unordered_map<std::string, std::unique_ptr<Encoding>>();
  return *r;
}

constexpr unsigned kMaxAlignmentExponent = 16;

[[noreturn]] void bad(const std::string& what) { malformed("flatbuffer ", what, " is outside the header"); }

// (start, count) of the vector whose offset field sits at absolute position p (_vector)
void vec_at(Bytes buf, uint64_t p, uint32_t elem, const char* what, const char* table,
            uint64_t* start, uint64_t* count) {
  if (p + 4 > buf.n) bad(cat("field ", table, ".", what));
  uint64_t t = p + load<uint32_t>(buf.p + p);
  if (t + 4 > buf.n || t == p) malformed("flatbuffer field ", table, ".", what, " points outside the header");
  uint64_t n = load<uint32_t>(buf.p + t);
  if (t + 4 + n * elem > buf.n)
    malformed("flatbuffer vector ", table, ".", what, " of ", n, " elements runs past the header");
  *start = t + 4;
  *count = n;
}

// (vtable position, slots) of the table at t (_vtable)
void vtable_at(Bytes buf, uint64_t t, const char* table, uint64_t* vt, uint32_t* slots) {
  if (t + 4 > buf.n) bad(cat("table ", table, " at ", t));
  int64_t v = int64_t(t) - int64_t(load<int32_t>(buf.p + t));
  if (v < 0 || uint64_t(v) + 4 > buf.n) bad(cat("vtable of ", table, " at ", v));
  uint32_t len = load<uint16_t>(buf.p + v);
  if (len < 4 || (len & 1) || uint64_t(v) + len > buf.n)
    malformed("flatbuffer vtable of ", table, " has a bad size ", len);
  *vt = uint64_t(v);
  *slots = (len - 4) >> 1;
}

// the ArrayStats table at t (_read_stats)
NodeStats* read_stats(Tree& tree, uint64_t t) {
  Bytes buf = tree.fb;
  uint64_t vt;
  uint32_t k;
  vtable_at(buf, t, "ArrayStats", &vt, &k);
  if (k > 11) k = 11;
  // "v" byte vector, "p" precision, "b" optional bool, "q" optional u64
  static const char kinds[] = "vpvpvbbbqqq";
  NodeStats& s = tree.stats.emplace_back();
  for (uint32_t i = 0; i < k; i++) {
    uint32_t off = load<uint16_t>(buf.p + vt + 4 + 2 * i);
    if (!off) continue;
    uint64_t p = t + off;
    char kind = kinds[i];
    if (kind == 'v') {
      uint64_t q, n;
      vec_at(buf, p, 1, "value", "ArrayStats", &q, &n);
      Bytes val(buf.p + q, size_t(n));
      if (i == 0) s.min = val;
      else if (i == 2) s.max = val;
      else s.sum = val;
    } else if (kind == 'q') {
      if (p + 8 > buf.n) bad("field ArrayStats.count");
      uint64_t v = load<uint64_t>(buf.p + p);
      if (i == 8) s.null_count = v;
      else if (i == 9) s.uncompressed_size = v;
      else s.nan_count = v;
    } else {
      if (p + 1 > buf.n) bad("field ArrayStats.flag");
      uint8_t v = buf.p[p];
      if (kind == 'p') {
        if (i == 1) s.min_exact = v == 1;
        else s.max_exact = v == 1;
      } else {
        bool b = v != 0;
        if (i == 5) s.is_sorted = b;
        else if (i == 6) s.is_strict_sorted = b;
        else s.is_constant = b;
      }
    }
  }
  return &s;
}

void enter(Tree& t, int depth) {
  if (uint64_t(depth) > t.limits.max_depth) limit_exceeded("array tree deeper than ", t.limits.max_depth);
  t.nodes_built++;
  if (t.nodes_built > t.limits.max_nodes)
    limit_exceeded("array tree has more than ", t.limits.max_nodes, " nodes");
}

// Walk the ArrayNode at `pos` (_node + the first half of _make) and build it.
Node* build_node(Tree& t, uint64_t pos, const DType* dtype, uint64_t len, int depth) {
  enter(t, depth);
  Bytes buf = t.fb;
  uint64_t vt;
  uint32_t k;
  vtable_at(buf, pos, "ArrayNode", &vt, &k);
  uint32_t offs[5] = {0, 0, 0, 0, 0};
  for (uint32_t i = 0; i < 5 && i < k; i++) offs[i] = load<uint16_t>(buf.p + vt + 4 + 2 * i);
  uint32_t ei = 0;
  if (offs[0]) {
    if (pos + offs[0] + 2 > buf.n) bad("field ArrayNode.ArrayNode.encoding");
    ei = load<uint16_t>(buf.p + pos + offs[0]);
  }
  uint64_t ms = 0, mn = 0;
  if (offs[1]) vec_at(buf, pos + offs[1], 1, "metadata", "ArrayNode", &ms, &mn);
  Node& n = t.nodes.emplace_back();
  n.pos = pos;
  n.depth = depth;
  n.dtype = dtype;
  n.len = len;
  if (offs[2]) {
    uint64_t s, cnt;
    vec_at(buf, pos + offs[2], 4, "children", "ArrayNode", &s, &cnt);
    n.child_pos.reserve(size_t(cnt));
    for (uint64_t i = 0; i < cnt; i++) n.child_pos.push_back(s + 4 * i + load<uint32_t>(buf.p + s + 4 * i));
  }
  std::vector<uint16_t> bidx;
  if (offs[3]) {
    uint64_t s, cnt;
    vec_at(buf, pos + offs[3], 2, "buffers", "ArrayNode", &s, &cnt);
    bidx.reserve(size_t(cnt));
    for (uint64_t i = 0; i < cnt; i++) bidx.push_back(load<uint16_t>(buf.p + s + 2 * i));
  }
  uint64_t st = 0;
  if (offs[4]) {
    uint64_t p = pos + offs[4];
    if (p + 4 > buf.n) bad("field ArrayNode.ArrayStats");
    st = p + load<uint32_t>(buf.p + p);
    if (st + 4 > buf.n || st == p)
      malformed("flatbuffer field ArrayNode.ArrayStats points outside the header");
  }
  // _make
  if (ei >= t.encoding_ids.size())
    malformed("array node names encoding #", ei, "; the message lists ", t.encoding_ids.size());
  n.enc_id = t.encoding_ids[ei];
  n.enc = t.encodings[ei];
  if (!n.enc) {
    if (!t.python_known[ei]) unsupported("unsupported encoding '", n.enc_id, "'");
    n.subtree_foreign = true;  // an encoding only Python knows: Python builds this subtree
    return &n;
  }
  n.metadata = mn ? Bytes(buf.p + ms, size_t(mn)) : Bytes();
  if (!bidx.empty()) {
    uint16_t mx = 0;
    for (uint16_t b : bidx) mx = b > mx ? b : mx;
    if (mx >= t.buffers.size())
      malformed(n.enc_id, " node names buffer #", mx, "; the message has ", t.buffers.size());
    n.buffers.reserve(bidx.size());
    for (uint16_t b : bidx) n.buffers.push_back(t.buffers[b]);
  }
  if (st) n.stats = read_stats(t, st);
  try {
    n.enc->build(n, t);
  } catch (Error& e) {
    if (!e.pathed) {
      e.msg = cat(n.enc_id, "(", dtype_repr(*dtype), ", len=", len, "): ", e.msg);
      e.pathed = true;
    }
    throw;
  }
  return &n;
}

}  // namespace

// -- the Encoding defaults --------------------------------------------------------------

void Encoding::child_specs(Node& n, Tree&) const {
  if (n.nchildren()) malformed(id(), " takes no children, got ", n.nchildren());
}

Node* build_child(Tree& t, Node& parent, size_t i, const ChildSpec& spec) {
  if (i >= parent.child_pos.size())
    malformed(parent.enc_id, ": child ", i, " is missing (", parent.child_pos.size(), " present)");
  Node* c = build_node(t, parent.child_pos[i], spec.dtype, spec.len, parent.depth + 1);
  if (parent.children.size() <= i) parent.children.resize(parent.child_pos.size(), nullptr);
  parent.children[i] = c;
  if (c->subtree_foreign) parent.subtree_foreign = true;
  return c;
}

void Encoding::build(Node& n, Tree& t) const {
  check_dtype(*n.dtype);
  parse(n, t);
  auto [lo, hi] = nbuffers(n);
  size_t nb = n.buffers.size();
  if (nb < lo || nb > hi) {
    std::string want = lo == hi ? cat(lo) : cat(lo, "..", hi);
    malformed(id(), " takes ", want, " buffers, got ", nb);
  }
  n.specs.clear();
  child_specs(n, t);
  if (n.specs.size() != n.nchildren())
    malformed(id(), " has ", n.nchildren(), " children, expected ", n.specs.size());
  n.children.assign(n.nchildren(), nullptr);
  // a scan's root struct: fields are built when used (the reference reader's LazyChildren)
  bool lazy = t.lazy_fields && n.depth == 0 && std::string_view(id()) == "vortex.struct";
  if (!lazy)
    for (size_t i = 0; i < n.specs.size(); i++) build_child(t, n, i, n.specs[i]);
  validate(n, t);
}

// -- registry -------------------------------------------------------------------------------

const Encoding* find_encoding(std::string_view id) {
  auto& r = registry();
  auto it = r.find(std::string(id));
  return it == r.end() ? nullptr : it->second.get();
}

void register_encoding(std::unique_ptr<Encoding> e) {
  std::string id = e->id();
  registry()[id] = std::move(e);
}

std::vector<std::string> native_encoding_ids() {
  std::vector<std::string> out;
  for (auto& kv : registry()) out.push_back(kv.first);
  return out;
}

// -- helpers --------------------------------------------------------------------------------

void validity_spec(const Node& n, size_t base, std::vector<ChildSpec>& out) {
  size_t k = n.nchildren();
  if (k == base) return;
  if (k == base + 1) {
    if (!n.dtype->nullable)
      malformed(n.enc_id, ": validity child on a non-nullable ", dtype_repr(*n.dtype));
    out.push_back({bool_dtype(false), n.len});
    return;
  }
  malformed(n.enc_id, ": ", k, " children, expected ", base, " or ", base + 1, " (with validity)");
}

PType ptype_of(uint64_t v, const std::string& what) {
  if (v > 10) malformed(what, ": unknown primitive type ", v);
  return PType(v);
}

PType int_ptype_of(uint64_t v, const std::string& what) {
  PType p = ptype_of(v, what);
  if (!ptype_is_int(p)) malformed(what, ": ", ptype_name(p), " is not an integer type");
  return p;
}

// -- the message ----------------------------------------------------------------------------

void build_tree(Tree& t, const DType* dtype, const std::vector<int>* fields) {
  const Limits& lim = t.limits;
  uint64_t rows = t.row_count;
  if (rows > lim.max_rows_per_message)
    limit_exceeded("array message of ", rows, " rows, over the limit of ", lim.max_rows_per_message);
  uint64_t nbytes = sat_mul(rows, estimate_width(*dtype));
  if (nbytes > lim.max_decoded_bytes)
    check_decoded(lim, nbytes, cat("array message of ", rows, " rows of ", dtype_repr(*dtype)));
  const uint64_t n = t.body.len;
  if (n < 4) malformed("array message body of ", n, " bytes has no flatbuffer length");
  uint64_t fb_len = load<uint32_t>(t.body.ptr + n - 4);
  if (fb_len + 4 > n) malformed("array flatbuffer of ", fb_len, " bytes does not fit a ", n, "-byte body");
  uint64_t data_end = n - 4 - fb_len;
  t.fb = Bytes(t.body.ptr + data_end, size_t(fb_len));
  fb::Table arr = fb::root(t.fb, "Array");
  uint64_t start, nspecs;
  t.buffers.clear();
  if (arr.vector(1, 8, "Array.buffers", &start, &nspecs)) {
    if (nspecs > lim.max_buffers)
      limit_exceeded(nspecs, " buffers in one message, over the limit of ", lim.max_buffers);
    t.buffers.reserve(size_t(nspecs));
    uint64_t pos = 0;
    const uint8_t* base = t.body.ptr;
    for (uint64_t i = 0; i < nspecs; i++) {
      const uint8_t* s = t.fb.p + start + 8 * i;
      uint16_t padding = load<uint16_t>(s);
      uint8_t exp = s[2];
      uint8_t compression = s[3];
      uint32_t length = load<uint32_t>(s + 4);
      if (compression != 0)
        unsupported("buffer ", i, " uses compression ", compression == 1 ? std::string("LZ4") : cat(int(compression)),
                    "; only uncompressed buffers are supported");
      if (exp > kMaxAlignmentExponent)
        malformed("buffer ", i, " has alignment exponent ", int(exp), " (at most 16 allowed)");
      pos += padding;
      uint64_t end = pos + length;
      if (end > data_end)
        malformed("buffer ", i, " [", pos, ", ", end, ") runs past the ", data_end, " bytes of buffer data");
      Buf b = t.body.slice(size_t(pos), size_t(length));
      if (exp && (reinterpret_cast<uintptr_t>(base + pos) & ((uintptr_t(1) << exp) - 1)))
        b = copy_of(b.ptr, b.len);  // misaligned: an aligned copy (as the reference reader)
      t.buffers.push_back(std::move(b));
      pos = end;
    }
  }
  uint64_t root_pos = arr.deref(0, "ArrayNode");
  if (!root_pos) malformed("array message has no root node");
  t.nodes_built = 0;
  t.lazy_fields = fields != nullptr;
  t.root = build_node(t, root_pos, dtype, rows, 0);
  if (t.lazy_fields)
    for (int f : *fields) build_field(t, size_t(f));
}

void build_field(Tree& t, size_t i) {
  Node& r = *t.root;
  if (!r.enc || std::string_view(r.enc->id()) != "vortex.struct") return;
  size_t nf = r.dtype->children.size();
  size_t k = r.nchildren() == nf + 1 ? i + 1 : i;  // a validity child comes first
  if (k >= r.nchildren() || r.children[k]) return;
  build_child(t, r, k, r.specs[k]);
}

}  // namespace vx
