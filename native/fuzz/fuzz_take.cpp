// libFuzzer harness of the take hooks (what a scan runs on the encoded columns of a message
// for the rows its filter selected): for every built column of one Array message, the rows
// at a selection are taken from the encoded node (vx::take: each encoding's own `take`, or
// its decode and a gather) and compared with the same rows gathered from the whole decoded
// column (vx::take_col of vx::decode): the decode is the oracle.
//
// Input: exactly fuzz_message's (native/fuzz/fuzz_message.cpp; its seeds serve here). The
// selection is not in the input: it is drawn from a generator seeded by a hash of the input
// (so an input always replays the same way), chunk by chunk of 1024 rows: every row, most,
// a few or none (strictly increasing, as a filter's positions are), which covers both the
// dense (whole-chunk) and the sparse (row by row) paths of the FastLanes takes. The rows of
// a column holding vortex.fsst are checked for their layout only (see below).
//
// Outcomes that are fine: a vx::Error from the dtype program or the message, a node only
// Python knows (NeedPython), a decode that fails (the take may fail too, or not: it may read
// less), a take that finds the message malformed where the decode did not (it may check
// otherwise: vortex.fsst checks the taken rows' codes against the sum of their lengths,
// the decode the whole window's). Each column holding a vortex.dict is taken twice: alone,
// and after a comparison with a literal drawn from the same generator has run with
// Ctx::keep (the decodes a scan's predicate leaves on the nodes for its takes, Node::kept).
// Bugs: a crash or sanitizer report, a take that fails otherwise where the decode
// succeeded, a taken column that breaks the Arrow layout, or rows that differ from the
// decode's.
#include <algorithm>

#include "fuzz_util.h"
#include "kernels.h"
#include "message.h"
#include "node.h"
#include "scan.h"

using namespace vx;
using namespace vxfuzz;

namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

// A sorted selection of rows of [0, n), chunk by chunk of 1024 rows.
std::vector<uint32_t> selection(uint64_t n, Rng& r) {
  std::vector<uint32_t> idx;
  for (uint64_t a = 0; a < n; a += 1024) {
    uint64_t b = std::min<uint64_t>(n, a + 1024);
    switch (r.next() % 5) {
      case 0:  // every row
        for (uint64_t i = a; i < b; i++) idx.push_back(uint32_t(i));
        break;
      case 1:  // most rows
        for (uint64_t i = a; i < b; i++)
          if (r.next() % 4) idx.push_back(uint32_t(i));
        break;
      case 2: {  // a few rows
        uint64_t k = r.next() % 40;
        std::vector<uint32_t> some;
        for (uint64_t j = 0; j < k; j++) some.push_back(uint32_t(a + r.next() % (b - a)));
        std::sort(some.begin(), some.end());
        some.erase(std::unique(some.begin(), some.end()), some.end());
        idx.insert(idx.end(), some.begin(), some.end());
        break;
      }
      default:  // none
        break;
    }
  }
  return idx;
}

bool has_encoding(const Node& n, std::string_view id) {
  if (n.enc_id == id) return true;
  for (const Node* ch : n.children)
    if (ch && has_encoding(*ch, id)) return true;
  return false;
}

bool valid_at(const Col& c, uint64_t i) {
  if (c.layout == Layout::Null) return false;
  return c.validity.empty() || get_bit(c.validity.data(), i);
}

// the bytes of string row i (String layout)
std::string_view str_at(const Col& c, uint64_t i) {
  const uint8_t* o = c.offsets.data();
  int32_t a = load<int32_t>(o + 4 * i), b = load<int32_t>(o + 4 * (i + 1));
  return std::string_view(reinterpret_cast<const char*>(c.values.data()) + a, size_t(b - a));
}

// Rows of `got` equal those of `want` (values compared where valid; strings by their bytes).
void same_rows(const Col& got, const Col& want, const std::string& path) {
  auto fail = [&](const std::string& why) { bug("a take differs from the decode:", path + ": " + why); };
  if (got.len != want.len) fail(cat(got.len, " rows, the decode's take has ", want.len));
  if (got.layout != want.layout) fail("another layout");
  for (uint64_t i = 0; i < got.len; i++) {
    bool v = valid_at(got, i);
    if (v != valid_at(want, i)) fail(cat("row ", i, " is ", v ? "valid" : "null", " in the take only"));
    if (!v) continue;
    switch (got.layout) {
      case Layout::Bool:
        if (get_bit(got.values.data(), i) != get_bit(want.values.data(), i)) fail(cat("bool row ", i));
        break;
      case Layout::Prim: {
        size_t w = size_t(ptype_width(got.ptype));
        if (got.ptype != want.ptype || std::memcmp(got.values.data() + i * w, want.values.data() + i * w, w))
          fail(cat("value of row ", i));
        break;
      }
      case Layout::Decimal: {
        size_t w = got.dec_width;
        if (got.dec_width != want.dec_width || std::memcmp(got.values.data() + i * w, want.values.data() + i * w, w))
          fail(cat("decimal of row ", i));
        break;
      }
      case Layout::String:
        if (str_at(got, i) != str_at(want, i)) fail(cat("string of row ", i));
        break;
      default:
        break;  // nested: their children below
    }
  }
  if (got.layout == Layout::Struct) {
    if (got.children.size() != want.children.size()) fail("another number of fields");
    for (size_t f = 0; f < got.children.size(); f++) same_rows(got.children[f], want.children[f], cat(path, ".", f));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  uint8_t flags = in.u8();
  const bool string_view = flags & 1;
  DTypeArena arena;
  const DType* root = read_dtype(in, arena);
  if (!root) return -1;
  MsgIn m = read_message(in);

  Tree t;
  std::vector<int> fields;
  const bool by_field = root->kind == Kind::Struct;
  if (by_field)
    for (size_t i = 0; i < root->children.size(); i++) fields.push_back(int(i));
  // a batch decodes to at most 4 MiB here (512Ki 8-byte rows: hundreds of FastLanes chunks,
  // every dense and sparse path): with fuzz_message's 64 MiB the corpus drifted to units of
  // ~10 ms under ASan, ~150 executions/s a worker after 2.4M (2026-12-06)
  Limits lim = message_limits();
  lim.max_decoded_bytes = 4u << 20;
  try {
    prepare_tree(t, m, lim);
    build_tree(t, root, by_field ? &fields : nullptr);
  } catch (Error&) {
    return 0;
  } catch (NeedPython&) {
    return 0;
  }
  // the columns a scan takes: the root struct's fields, else the root
  std::vector<std::pair<const Node*, const DType*>> cols;
  if (by_field && t.root && t.root->enc && std::string_view(t.root->enc->id()) == "vortex.struct") {
    for (int f : fields) cols.emplace_back(field_node(t, f), root->children[size_t(f)]);
  } else {
    cols.emplace_back(t.root, root);
  }
  Rng rng{fnv1a(data, size)};
  for (size_t ci = 0; ci < cols.size(); ci++) {
    const Node* node = cols[ci].first;
    const DType& d = *cols[ci].second;
    if (!node || !node->enc || node->subtree_foreign) continue;
    Ctx c(t.limits);
    c.string_view = string_view;
    Col full;
    try {
      full = decode(*node, c);
    } catch (Error&) {
      continue;  // the take may fail too, or read less and succeed: either is fine
    } catch (NeedPython&) {
      continue;
    }
    std::vector<uint32_t> idx = selection(node->len, rng);
    // the rows at idx taken from the node (false: the take failed as it may)
    auto take_rows = [&](Col& out, const char* failed) {
      try {
        out = take(*node, idx.data(), idx.size(), c);
        return true;
      } catch (Error& e) {
        // a take may check what the whole decode cannot (vortex.fsst: the taken rows' codes
        // against the sum of their lengths, where the decode checks the whole window's), and
        // allocate otherwise
        if (e.kind == ErrKind::Malformed || e.kind == ErrKind::Limit) return false;
        bug(failed, cat(dtype_repr(d), ": ", e.msg));
      } catch (NeedPython&) {
        return false;
      }
    };
    Col got;
    if (!take_rows(got, "a take fails where the decode succeeded:")) continue;
    Col want = take_col(full, idx.data(), idx.size());
    conform(want, d, false);
    // vortex.fsst holds each row's code range and its length: rows whose codes disagree with
    // their lengths (malformed) decode by position in the whole window but by code range in
    // a take, in the numpy reference alike; its rows are compared only for the layout
    const bool rows_comparable = !has_encoding(*node, "vortex.fsst");
    const std::string what = cat(dtype_repr(d), " (", node->enc->id(), ")");
    auto check = [&](Col& col, const char* stage) {
      conform(col, d, false);
      check_col(col, d, false, stage);
      if (rows_comparable) same_rows(col, want, what);
    };
    check(got, "take");
    // A scan's order: the predicate first, with Ctx::keep (the decodes it makes stay on the
    // nodes, Node::kept), then the take, which reuses them and must give the same rows (only
    // vortex.dict keeps a decode: other columns are not taken twice)
    if (!has_encoding(*node, "vortex.dict")) continue;
    const DType& sd = d.storage();
    Lit lit;
    if (sd.kind == Kind::Primitive && ptype_is_float(sd.ptype)) {
      lit.kind = Lit::Float;
      lit.f = double(int64_t(rng.next() % 2001) - 1000);
    } else if (sd.kind == Kind::Primitive) {
      lit = Lit::of_int(i128(int64_t(rng.next() % 2001) - 1000));
    } else if (sd.is_string_like()) {
      lit.kind = Lit::Bytes;
      lit.s = std::string(size_t(rng.next() % 4), char('a' + rng.next() % 26));
    } else if (sd.kind == Kind::Bool) {
      lit.kind = Lit::Bool;
      lit.b = rng.next() & 1;
    } else {
      continue;
    }
    Ctx pc(t.limits);
    pc.keep = true;
    try {
      (void)compare(*node, lit, Op(rng.next() % 6), pc);
    } catch (Error&) {
      continue;  // (a literal the column cannot be compared with, or a malformed node)
    } catch (NeedPython&) {
      continue;
    }
    Col again;
    if (!take_rows(again, "a take after a predicate fails where the decode succeeded:")) continue;
    check(again, "take after a predicate");
  }
  return 0;
}
