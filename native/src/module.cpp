// vortex_io._native: the Python bindings of the native core (nanobind).
//
// The unit of work is a batch of Array messages of one stream: Python frames them (sans-IO
// MessageDecoder) and hands their bodies here; the trees are built, checked and decoded
// with the GIL released, on the thread pool, and come back as Arrow C data capsules.
// Python objects are touched only here, with the GIL held.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "arrow_c.h"
#include "kernels.h"
#include "message.h"
#include "pool.h"

namespace nb = nanobind;
using namespace vx;

namespace {

// A Python buffer (a message body) as native memory: the view is released, with the GIL,
// when the last buffer referring to it goes (possibly on another thread, long after).
struct PyMem final : Mem {
  Py_buffer view{};
  bool held = false;
  ~PyMem() override {
    if (!held) return;
    if (_Py_IsFinalizing()) return;  // interpreter shutdown: leave it
    PyGILState_STATE st = PyGILState_Ensure();
    PyBuffer_Release(&view);
    PyGILState_Release(st);
  }
};

Buf buf_of(nb::handle obj) {
  auto m = std::make_shared<PyMem>();
  if (PyObject_GetBuffer(obj.ptr(), &m->view, PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  m->held = true;
  m->base = static_cast<uint8_t*>(m->view.buf);
  m->cap = size_t(m->view.len);
  m->owned = false;
  uint8_t* p = m->base;
  size_t n = m->cap;
  return Buf(std::move(m), p, n);
}

void capsule_free_array(PyObject* cap) {
  auto* a = static_cast<ArrowArray*>(PyCapsule_GetPointer(cap, "arrow_array"));
  if (!a) {
    PyErr_Clear();
    return;
  }
  if (a->release) a->release(a);
  delete a;
}

nb::object array_capsule(ArrowArray* a) {
  PyObject* cap = PyCapsule_New(a, "arrow_array", capsule_free_array);
  if (!cap) {
    if (a->release) a->release(a);
    delete a;
    throw nb::python_error();
  }
  return nb::steal(cap);
}

Limits limits_of(const std::vector<uint64_t>& v) {
  Limits l;
  if (v.size() != 7) throw std::invalid_argument("limits: 7 values expected");
  l.max_header_bytes = v[0];
  l.max_body_bytes = v[1];
  l.max_buffers = v[2];
  l.max_depth = v[3];
  l.max_nodes = v[4];
  l.max_rows_per_message = v[5];
  l.max_decoded_bytes = v[6];
  return l;
}

MsgIn message_in(nb::handle t) {
  nb::tuple tup = nb::borrow<nb::tuple>(t);
  MsgIn m;
  m.body = buf_of(tup[0]);
  m.rows = nb::cast<uint64_t>(tup[1]);
  m.encodings = nb::cast<std::vector<std::string>>(tup[2]);
  m.known = nb::cast<std::vector<bool>>(tup[3]);
  return m;
}

class Stream {
 public:
  Stream(nb::bytes program, std::vector<uint64_t> limits) : lim_(limits_of(limits)) {
    root_ = parse_dtype_program(Bytes(reinterpret_cast<const uint8_t*>(program.c_str()), program.size()), arena_);
  }

  // Decode messages: fields (root struct field indices; None = all / a non-struct stream).
  nb::list decode(nb::list messages, std::optional<std::vector<int>> fields, bool string_view, int threads) {
    std::vector<MsgIn> in;
    in.reserve(messages.size());
    for (auto h : messages) in.push_back(message_in(h));
    // by field: the root struct's fields, each its own column; else the whole array
    const bool is_struct = fields.has_value();
    std::vector<int> fl;
    if (is_struct) {
      if (root_->kind != Kind::Struct) throw std::invalid_argument("fields need a struct dtype");
      fl = *fields;
      for (int f : fl)
        if (f < 0 || f >= int(root_->children.size())) throw std::out_of_range("field index out of range");
    }
    size_t nm = in.size();
    std::vector<MsgOut> out;
    {
      nb::gil_scoped_release unlock;
      // the trees built and the columns decoded on the pool (message.cpp); the trees go
      // before the GIL is taken back (bodies are released with the GIL held: PyMem)
      out = decode_messages(in, root_, lim_, is_struct ? &fl : nullptr, string_view, threads);
    }
    nb::list res;
    for (size_t i = 0; i < nm; i++) {
      MsgOut& o = out[i];
      if (o.error) {
        res.append(nb::make_tuple(nb::str("err"), o.kind, nb::str(o.msg.c_str())));
        continue;
      }
      nb::list cols;
      for (ArrowArray*& a : o.cols) {
        if (a) {
          ArrowArray* x = a;
          a = nullptr;
          cols.append(array_capsule(x));
        } else {
          cols.append(nb::none());
        }
      }
      res.append(nb::make_tuple(nb::str("cols"), cols));
    }
    return res;
  }

 private:
  Limits lim_;
  DTypeArena arena_;
  const DType* root_;
};

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "vortex_io's native core (C++17): message decoding and compute kernels";
  nb::class_<Stream>(m, "Stream")
      .def(nb::init<nb::bytes, std::vector<uint64_t>>(), nb::arg("dtype_program"), nb::arg("limits"))
      .def("decode", &Stream::decode, nb::arg("messages"), nb::arg("fields").none(), nb::arg("string_view"),
           nb::arg("threads"));
  m.def("encodings", &native_encoding_ids, "IDs of the encodings the native core decodes");
  m.def("hardware_threads", &hardware_threads);
  m.def("pool_stats", []() {
    PoolStats s = pool_stats();
    return nb::make_tuple(s.allocated_bytes, s.cached_bytes, s.allocations, s.reuses);
  });
  m.def("set_cache_limit", &set_cache_limit);
  m.def("cache_limit", &cache_limit);
  m.def("release_cache", &release_cache);
#ifdef VX_EXACT_ALLOC
  m.attr("exact_alloc") = true;  // a sanitizer build: no pool (memory.cpp)
#else
  m.attr("exact_alloc") = false;
#endif
}
