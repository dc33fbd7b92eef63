// A test-only C entry point into the native core's compute dispatch (compare, is_in, take,
// validity, decode on one node of a message), so tests can check the encodings' compute
// hooks against the numpy reference's kernels before the bindings expose a scan. Built
// from native/src (all but module.cpp) by tests/test_native_hooks.py; results come back as
// Arrow C data arrays (masks as booleans whose nulls are the mask's nulls).
//
// Request (little-endian): str dtype_program, str body, u64 rows, u32 nenc + nenc str,
// i32 field (-1: the root), u8 op, then by op:
//   'C': u8 cmp op (Eq..Gte), lit        'I': u32 count, count lits
//   'T': u32 k, k x u32 sorted positions  'V', 'D': nothing
// str = u32 length + bytes; lit = u8 kind (0 int: 16-byte i128, 1 float: f64, 2 bytes: str,
// 3 bool: u8).
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "arrow_c.h"
#include "kernels.h"

using namespace vx;

namespace {

struct Rd {
  const uint8_t* p;
  size_t n, pos = 0;
  const uint8_t* take(size_t k) {
    if (pos + k > n) throw std::runtime_error("request truncated");
    const uint8_t* r = p + pos;
    pos += k;
    return r;
  }
  template <class T>
  T get() { T v; std::memcpy(&v, take(sizeof(T)), sizeof(T)); return v; }
  std::string str() {
    uint32_t k = get<uint32_t>();
    const uint8_t* b = take(k);
    return std::string(reinterpret_cast<const char*>(b), k);
  }
  Lit lit() {
    Lit l;
    uint8_t kind = get<uint8_t>();
    if (kind == 0) { l.kind = Lit::Int; std::memcpy(&l.i, take(16), 16); }
    else if (kind == 1) { l.kind = Lit::Float; l.f = get<double>(); }
    else if (kind == 2) { l.kind = Lit::Bytes; l.s = str(); }
    else { l.kind = Lit::Bool; l.b = get<uint8_t>() != 0; }
    return l;
  }
};

Col mask_col(const Mask& m) {
  Col c;
  c.layout = Layout::Bool;
  c.len = m.len;
  c.values = m.vals;
  c.validity = m.valid;
  c.null_count = -1;
  normalize_validity(c);
  return c;
}

}  // namespace

extern "C" int vxh_run(const uint8_t* req, size_t n, ArrowArray* out, char* err, size_t errn) {
  std::string msg;
  int rc = 0;
  try {
    Rd r{req, n};
    std::string prog = r.str();
    std::string body = r.str();
    auto t = std::make_unique<Tree>();
    DTypeArena arena;
    const DType* root = parse_dtype_program(Bytes(reinterpret_cast<const uint8_t*>(prog.data()), prog.size()), arena);
    Buf b = copy_of(reinterpret_cast<const uint8_t*>(body.data()), body.size());
    t->body = b;
    t->row_count = r.get<uint64_t>();
    uint32_t ne = r.get<uint32_t>();
    for (uint32_t i = 0; i < ne; i++) t->encoding_ids.push_back(r.str());
    for (auto& id : t->encoding_ids) t->encodings.push_back(find_encoding(id));
    t->python_known.assign(ne, true);
    int32_t field = r.get<int32_t>();
    build_tree(*t, root, nullptr);
    const Node* node = t->root;
    const DType* d = root;
    if (field >= 0) {
      size_t nf = root->children.size();
      size_t k = t->root->nchildren() == nf + 1 ? size_t(field) + 1 : size_t(field);
      node = t->root->children.at(k);
      d = root->children.at(size_t(field));
    }
    Ctx c(t->limits);
    uint8_t op = r.get<uint8_t>();
    Col col;
    if (op == 'C') {
      Op o = Op(r.get<uint8_t>());
      Lit l = r.lit();
      col = mask_col(vx::compare(*node, l, o, c));
    } else if (op == 'I') {
      uint32_t k = r.get<uint32_t>();
      std::vector<Lit> lits;
      for (uint32_t i = 0; i < k; i++) lits.push_back(r.lit());
      col = mask_col(vx::is_in(*node, lits, c));
    } else if (op == 'T') {
      uint32_t k = r.get<uint32_t>();
      std::vector<uint32_t> idx(k);
      if (k) std::memcpy(idx.data(), r.take(4 * size_t(k)), 4 * size_t(k));
      for (uint32_t x : idx)
        if (x >= node->len) throw std::runtime_error("position out of range");
      col = vx::take(*node, idx.data(), idx.size(), c);
      conform(col, *d, false);
    } else if (op == 'V') {
      Buf v = node_validity(*node, c);
      col.layout = Layout::Bool;
      col.len = node->len;
      col.values = v.empty() ? bitmap_alloc(node->len, true) : v;
    } else {
      col = vx::decode(*node, c);
      conform(col, *d, false);
    }
    export_col(std::move(col), out);
  } catch (Error& e) {
    rc = int(e.kind);
    msg = e.msg;
  } catch (NeedPython&) {
    rc = 9;
    msg = "NeedPython";
  } catch (std::exception& e) {
    rc = 8;
    msg = e.what();
  }
  if (errn) {
    size_t k = std::min(errn - 1, msg.size());
    std::memcpy(err, msg.data(), k);
    err[k] = 0;
  }
  return rc;
}
