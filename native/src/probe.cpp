// _native.kernel_probe: runs one compute kernel (compare, is_in, is_null, take, validity)
// on one node of a message's tree, for the differential tests of the encodings' compute
// hooks against the reference's kernels (tests/test_native_floats.py,
// tests/test_native_hooks.py). Test-only: not on any reading path.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrow_c.h"
#include "kernels.h"

namespace nb = nanobind;

namespace vx {
namespace {

nb::bytes bits_bytes(const Buf& b, uint64_t n) {
  if (b.empty()) return nb::bytes("", 0);
  return nb::bytes(reinterpret_cast<const char*>(b.data()), size_t((n + 7) / 8));
}

// ("i", hi, lo), ("f", x), ("b", str) or ("o", bool)
Lit lit_of(nb::handle h) {
  if (!PyTuple_Check(h.ptr()) || PyTuple_GET_SIZE(h.ptr()) < 2)
    throw std::invalid_argument("kernel_probe: a literal is a (kind, value...) tuple");
  nb::tuple t = nb::borrow<nb::tuple>(h);
  std::string kind = nb::cast<std::string>(t[0]);
  if (t.size() != (kind == "i" ? 3u : 2u))
    throw std::invalid_argument("kernel_probe: literal of kind '" + kind + "' has the wrong arity");
  Lit l;
  if (kind == "i") {
    // (hi, lo): the value is hi * 2^64 + lo, hi signed
    int64_t hi = nb::cast<int64_t>(t[1]);
    uint64_t lo = nb::cast<uint64_t>(t[2]);
    l.kind = Lit::Int;
    l.i = i128(u128(hi) << 64 | u128(lo));
  } else if (kind == "f") {
    l.kind = Lit::Float;
    l.f = nb::cast<double>(t[1]);
  } else if (kind == "b") {
    l.kind = Lit::Bytes;
    l.s = nb::cast<std::string>(t[1]);
  } else if (kind == "o") {
    l.kind = Lit::Bool;
    l.b = nb::cast<bool>(t[1]);
  } else {
    throw std::invalid_argument("kernel_probe: unknown literal kind '" + kind + "'");
  }
  return l;
}

nb::object capsule_of(Col&& col) {
  auto* a = new ArrowArray();
  export_col(std::move(col), a);
  PyObject* cap = PyCapsule_New(a, "arrow_array", [](PyObject* o) {
    auto* x = static_cast<ArrowArray*>(PyCapsule_GetPointer(o, "arrow_array"));
    if (!x) {
      PyErr_Clear();
      return;
    }
    if (x->release) x->release(x);
    delete x;
  });
  if (!cap) throw nb::python_error();
  return nb::steal(cap);
}

// kind: "compare" (op, lits[0]), "is_in" (lits), "is_null" (op != 0: negated), "take"
// (idx), "validity". Returns ("err", kind, message), ("python",), or
// (result kind, ..., handled by the node's own hook).
nb::tuple kernel_probe(nb::bytes program, std::vector<uint64_t> limits, nb::object body, uint64_t rows,
                       std::vector<std::string> encodings, std::vector<bool> known, std::vector<int> path,
                       std::string kind, int op, nb::list lits_in, std::vector<uint32_t> idx,
                       bool string_view) {
  std::vector<Lit> lits;
  for (auto h : lits_in) lits.push_back(lit_of(h));
  Py_buffer view{};
  if (PyObject_GetBuffer(body.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  // a pooled copy of the body: no Python object is touched without the GIL below
  Buf bodybuf = copy_of(static_cast<const uint8_t*>(view.buf), size_t(view.len));
  PyBuffer_Release(&view);
  if (limits.size() != 7) throw std::invalid_argument("limits: 7 values expected");
  DTypeArena arena;
  const DType* root = parse_dtype_program(
      Bytes(reinterpret_cast<const uint8_t*>(program.c_str()), program.size()), arena);
  Tree t;
  t.body = bodybuf;
  t.row_count = rows;
  t.limits.max_header_bytes = limits[0];
  t.limits.max_body_bytes = limits[1];
  t.limits.max_buffers = limits[2];
  t.limits.max_depth = limits[3];
  t.limits.max_nodes = limits[4];
  t.limits.max_rows_per_message = limits[5];
  t.limits.max_decoded_bytes = limits[6];
  t.encoding_ids = encodings;
  for (auto& id : t.encoding_ids) t.encodings.push_back(find_encoding(id));
  t.python_known = known;
  t.python_known.resize(t.encoding_ids.size(), false);
  try {
    build_tree(t, root, nullptr);
    const Node* n = t.root;
    for (int i : path) {
      if (i < 0 || size_t(i) >= n->children.size() || !n->children[size_t(i)])
        throw std::out_of_range("kernel_probe: no such child");
      n = n->children[size_t(i)];
    }
    if (!n->enc) return nb::make_tuple("python");
    Ctx c(t.limits);
    c.string_view = string_view;
    if (kind == "compare" || kind == "is_in" || kind == "is_null") {
      Mask m;
      bool handled = false;
      if (kind == "compare") {
        if (lits.size() != 1) throw std::invalid_argument("compare takes one literal");
        Op o = Op(op);
        handled = n->enc->compare(*n, lits[0], o, m, c);
        if (!handled) m = vx::compare(*n, lits[0], o, c);
      } else if (kind == "is_in") {
        handled = !lits.empty() && n->enc->is_in(*n, lits, m, c);
        if (!handled) m = vx::is_in(*n, lits, c);
      } else {
        m = vx::is_null(*n, op != 0, c);
      }
      return nb::make_tuple("mask", bits_bytes(m.vals, m.len), bits_bytes(m.valid, m.len), handled);
    }
    if (kind == "validity") {
      Buf out;
      bool handled = n->enc->validity(*n, out, c);
      if (!handled) out = node_validity(*n, c);
      return nb::make_tuple("bits", bits_bytes(out, n->len), handled);
    }
    if (kind == "take") {
      for (size_t i = 0; i < idx.size(); i++)
        if (idx[i] >= n->len || (i && idx[i] < idx[i - 1]))
          throw std::invalid_argument("kernel_probe: take positions must be sorted and in range");
      Col out;
      bool handled = n->enc->take(*n, idx.data(), idx.size(), out, c);
      if (!handled) out = vx::take(*n, idx.data(), idx.size(), c);
      conform(out, *n->dtype, string_view);
      return nb::make_tuple("col", capsule_of(std::move(out)), handled);
    }
    throw std::invalid_argument("kernel_probe: unknown kernel " + kind);
  } catch (NeedPython&) {
    return nb::make_tuple("python");
  } catch (Error& e) {
    return nb::make_tuple("err", int(e.kind), e.msg);
  }
}

}  // namespace

void bind_kernel_probe(nb::module_& m) {
  m.def("kernel_probe", &kernel_probe, nb::arg("dtype_program"), nb::arg("limits"), nb::arg("body"),
        nb::arg("rows"), nb::arg("encodings"), nb::arg("known"), nb::arg("path"), nb::arg("kind"),
        nb::arg("op"), nb::arg("lits"), nb::arg("idx"), nb::arg("string_view") = false,
        "test-only: one compute kernel on one node of a message's tree");
}

}  // namespace vx
