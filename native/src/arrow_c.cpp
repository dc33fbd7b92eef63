#include "arrow_c.h"

#include <vector>

namespace vx {
namespace {

alignas(64) const uint8_t kZeros[64] = {0};

struct Priv {
  std::vector<Buf> bufs;           // keep the memory alive
  std::vector<const void*> ptrs;   // ArrowArray.buffers
  std::vector<ArrowArray*> kids;   // ArrowArray.children
  std::vector<int64_t> view_sizes; // the variadic sizes buffer of a string_view array
  ArrowArray* dict = nullptr;      // ArrowArray.dictionary (a dictionary array's values)
};

void release_array(ArrowArray* a) {
  if (!a || !a->release) return;
  Priv* p = static_cast<Priv*>(a->private_data);
  for (ArrowArray* k : p->kids) {
    if (k->release) k->release(k);
    delete k;
  }
  if (p->dict) {
    if (p->dict->release) p->dict->release(p->dict);
    delete p->dict;
  }
  delete p;
  a->release = nullptr;
  a->private_data = nullptr;
}

const void* ptr_of(const Buf& b) { return b.len ? static_cast<const void*>(b.ptr) : kZeros; }

void fill(Col&& c, ArrowArray* out) {
  auto* p = new Priv();
  out->length = int64_t(c.len);
  out->offset = 0;
  out->dictionary = nullptr;
  out->null_count = c.null_count;
  auto add = [&](Buf&& b, bool validity) {
    if (validity && b.empty()) {
      p->ptrs.push_back(nullptr);
    } else {
      p->ptrs.push_back(ptr_of(b));
    }
    p->bufs.push_back(std::move(b));
  };
  switch (c.layout) {
    case Layout::Null:
      out->null_count = int64_t(c.len);
      break;
    case Layout::Bool:
    case Layout::Prim:
    case Layout::Decimal:
      add(std::move(c.validity), true);
      add(std::move(c.values), false);
      break;
    case Layout::String:
      add(std::move(c.validity), true);
      add(std::move(c.offsets), false);
      add(std::move(c.values), false);
      break;
    case Layout::View: {
      add(std::move(c.validity), true);
      add(std::move(c.values), false);
      for (auto& d : c.data) {
        p->view_sizes.push_back(int64_t(d.len));
        add(std::move(d), false);
      }
      p->ptrs.push_back(p->view_sizes.empty() ? static_cast<const void*>(kZeros)
                                              : static_cast<const void*>(p->view_sizes.data()));
      break;
    }
    case Layout::Struct:
    case Layout::FSL:
      add(std::move(c.validity), true);
      break;
    case Layout::List:
      add(std::move(c.validity), true);
      add(std::move(c.offsets), false);
      break;
  }
  if (out->null_count == 0 && !p->ptrs.empty() && c.layout != Layout::Null) p->ptrs[0] = nullptr;
  for (auto& k : c.children) {
    auto* ka = new ArrowArray();
    fill(std::move(k), ka);
    p->kids.push_back(ka);
  }
  out->n_buffers = int64_t(p->ptrs.size());
  out->buffers = p->ptrs.empty() ? nullptr : p->ptrs.data();
  out->n_children = int64_t(p->kids.size());
  out->children = p->kids.empty() ? nullptr : p->kids.data();
  out->private_data = p;
  out->release = release_array;
}

}  // namespace

void export_col(Col&& c, ArrowArray* out) { fill(std::move(c), out); }

void export_dictionary(Col&& codes, Col&& values, ArrowArray* out) {
  fill(std::move(codes), out);
  auto* d = new ArrowArray();
  fill(std::move(values), d);
  static_cast<Priv*>(out->private_data)->dict = d;
  out->dictionary = d;
}

void export_struct(std::vector<Col>&& cols, uint64_t len, ArrowArray* out) {
  Col s;
  s.layout = Layout::Struct;
  s.len = len;
  s.null_count = 0;
  s.children = std::move(cols);
  fill(std::move(s), out);
}

}  // namespace vx
