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

// One message as Python describes it.
struct MsgIn {
  Buf body;
  uint64_t rows;
  std::vector<std::string> encodings;
  std::vector<bool> known;
};

MsgIn message_in(nb::handle t) {
  nb::tuple tup = nb::borrow<nb::tuple>(t);
  MsgIn m;
  m.body = buf_of(tup[0]);
  m.rows = nb::cast<uint64_t>(tup[1]);
  m.encodings = nb::cast<std::vector<std::string>>(tup[2]);
  m.known = nb::cast<std::vector<bool>>(tup[3]);
  return m;
}

void prepare_tree(Tree& t, const MsgIn& m, const Limits& lim) {
  t.body = m.body;
  t.row_count = m.rows;
  t.limits = lim;
  t.encoding_ids = m.encodings;
  t.encodings.clear();
  for (auto& id : t.encoding_ids) t.encodings.push_back(find_encoding(id));
  t.python_known = m.known;
  if (t.python_known.size() < t.encoding_ids.size()) t.python_known.resize(t.encoding_ids.size(), false);
}

// What a message came to: an error, or one decoded column per requested field (null where
// Python has to decode it).
struct MsgOut {
  bool error = false;
  int kind = 0;
  std::string msg;
  std::vector<ArrowArray*> cols;  // owned until handed to Python
  bool whole = false;             // non-struct stream: cols[0] is the whole array
  ~MsgOut() {
    for (ArrowArray* a : cols)
      if (a) {
        if (a->release) a->release(a);
        delete a;
      }
  }
};

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
    std::vector<std::unique_ptr<Tree>> trees(nm);
    std::vector<MsgOut> out(nm);
    {
      nb::gil_scoped_release unlock;
      // 1. the trees (headers walked and checked), one message per task
      parallel_for(nm, threads, [&](size_t i) {
        try {
          auto t = std::make_unique<Tree>();
          prepare_tree(*t, in[i], lim_);
          build_tree(*t, root_, is_struct ? &fl : nullptr);
          trees[i] = std::move(t);
        } catch (Error& e) {
          out[i].error = true;
          out[i].kind = int(e.kind);
          out[i].msg = e.msg;
        } catch (std::bad_alloc&) {
          out[i].error = true;
          out[i].kind = int(ErrKind::Limit);
          out[i].msg = "out of memory while reading the message";
        }
      });
      // 2. the columns, one (message, field) per task
      size_t per = is_struct ? fl.size() : 1;
      for (size_t i = 0; i < nm; i++)
        if (!out[i].error) out[i].cols.assign(per, nullptr);
      std::vector<std::string> errs(nm * per);
      std::vector<int> kinds(nm * per, 0);
      parallel_for(nm * per, threads, [&](size_t task) {
        size_t i = task / per, f = task % per;
        if (out[i].error) return;
        Tree& t = *trees[i];
        try {
          const Node* node = t.root;
          const DType* d = root_;
          if (is_struct && t.root->enc && std::string_view(t.root->enc->id()) != "vortex.struct") {
            // a root of another encoding (constant, chunked, ...): decoded whole by the
            // first field's task, split into the fields
            if (f != 0) return;
            Ctx c(t.limits);
            c.string_view = string_view;
            Col col = vx::decode(*t.root, c);
            conform(col, *root_, string_view);
            if (col.layout != Layout::Struct || col.children.size() != root_->children.size())
              malformed(t.root->enc_id, " decoded to ", col.children.size(), " fields, not ",
                        root_->children.size());
            for (size_t j = 0; j < per; j++) {
              auto* a = new ArrowArray();
              export_col(std::move(col.children[size_t(fl[j])]), a);
              out[i].cols[j] = a;
            }
            return;
          }
          if (is_struct) {
            if (!t.root->enc) throw NeedPython();
            size_t nf = root_->children.size();
            size_t k = t.root->nchildren() == nf + 1 ? size_t(fl[f]) + 1 : size_t(fl[f]);
            node = t.root->children[k];
            d = root_->children[size_t(fl[f])];
          }
          Ctx c(t.limits);
          c.string_view = string_view;
          Col col = vx::decode(*node, c);
          conform(col, *d, string_view);
          auto* a = new ArrowArray();
          export_col(std::move(col), a);
          out[i].cols[f] = a;
        } catch (NeedPython&) {
          // left null: Python decodes this column
        } catch (Error& e) {
          kinds[task] = int(e.kind);
          errs[task] = e.msg;
        } catch (std::bad_alloc&) {
          kinds[task] = int(ErrKind::Limit);
          errs[task] = "out of memory while decoding the message";
        }
      });
      for (size_t i = 0; i < nm; i++) {
        if (out[i].error) continue;
        for (size_t f = 0; f < per; f++)
          if (kinds[i * per + f]) {
            out[i].error = true;
            out[i].kind = kinds[i * per + f];
            out[i].msg = errs[i * per + f];
            break;
          }
      }
      trees.clear();  // (bodies are released with the GIL held below: PyMem)
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

  // For tests: one compute kernel on the root of one message, with the GIL released.
  // kind: "compare" (op = Op, lits[0]), "is_in" (lits), "take" (sorted in-range idx),
  // "validity". Returns ("mask", values bitmap, validity bitmap or None), ("col", capsule),
  // ("validity", bitmap or None), ("err", kind, message) or ("python",) (a foreign node).
  nb::tuple kernel(nb::handle message, std::string kind, int op, nb::list lits, std::vector<uint32_t> idx,
                   bool string_view) {
    MsgIn in = message_in(message);
    std::vector<Lit> lv;
    for (auto h : lits) {
      Lit l;
      if (nb::isinstance<nb::bytes>(h)) {
        nb::bytes b = nb::borrow<nb::bytes>(h);
        l.kind = Lit::Bytes;
        l.s.assign(b.c_str(), b.size());
      } else if (nb::isinstance<nb::str>(h)) {
        l.kind = Lit::Bytes;
        l.s = nb::cast<std::string>(h);
      } else if (nb::isinstance<nb::bool_>(h)) {
        l.kind = Lit::Bool;
        l.b = nb::cast<bool>(h);
      } else if (nb::isinstance<nb::int_>(h)) {
        l = Lit::of_int(i128(nb::cast<int64_t>(h)));
      } else {
        l.kind = Lit::Float;
        l.f = nb::cast<double>(h);
      }
      lv.push_back(std::move(l));
    }
    if (kind == "compare" && (lv.size() != 1 || op < 0 || op > 5)) throw std::invalid_argument("compare: one literal, op 0..5");
    for (size_t i = 0; i < idx.size(); i++)
      if ((i && idx[i] < idx[i - 1]) || idx[i] >= in.rows) throw std::invalid_argument("take: sorted in-range indices");
    enum { MASK, COL, VALID, ERR, PY } what = ERR;
    Mask mask;
    Buf valid;
    ArrowArray* arr = nullptr;
    int ekind = 0;
    std::string emsg;
    {
      nb::gil_scoped_release unlock;
      try {
        Tree t;
        prepare_tree(t, in, lim_);
        build_tree(t, root_, nullptr);
        Ctx c(t.limits);
        c.string_view = string_view;
        const Node& root = *t.root;
        if (kind == "compare") {
          mask = vx::compare(root, lv[0], Op(op), c);
          what = MASK;
        } else if (kind == "is_in") {
          mask = vx::is_in(root, lv, c);
          what = MASK;
        } else if (kind == "take") {
          Col col = vx::take(root, idx.data(), idx.size(), c);
          conform(col, *root_, string_view);
          arr = new ArrowArray();
          export_col(std::move(col), arr);
          what = COL;
        } else if (kind == "validity") {
          valid = node_validity(root, c);
          what = VALID;
        } else {
          throw std::invalid_argument("kernel: compare, is_in, take or validity");
        }
      } catch (NeedPython&) {
        what = PY;
      } catch (Error& e) {
        what = ERR;
        ekind = int(e.kind);
        emsg = e.msg;
      } catch (std::bad_alloc&) {
        what = ERR;
        ekind = int(ErrKind::Limit);
        emsg = "out of memory while running the kernel";
      }
    }
    auto bits = [&](const Buf& b, uint64_t n) -> nb::object {
      if (b.empty()) return nb::none();
      return nb::bytes(reinterpret_cast<const char*>(b.data()), size_t((n + 7) >> 3));
    };
    switch (what) {
      case MASK: return nb::make_tuple(nb::str("mask"), bits(mask.vals, mask.len), bits(mask.valid, mask.len));
      case COL: return nb::make_tuple(nb::str("col"), array_capsule(arr));
      case VALID: return nb::make_tuple(nb::str("validity"), bits(valid, in.rows));
      case PY: return nb::make_tuple(nb::str("python"));
      default: return nb::make_tuple(nb::str("err"), ekind, nb::str(emsg.c_str()));
    }
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
           nb::arg("threads"))
      .def("kernel", &Stream::kernel, nb::arg("message"), nb::arg("kind"), nb::arg("op"), nb::arg("lits"),
           nb::arg("idx"), nb::arg("string_view"));
  m.def("encodings", &native_encoding_ids, "IDs of the encodings the native core decodes");
  m.def("hardware_threads", &hardware_threads);
  m.def("pool_stats", []() {
    PoolStats s = pool_stats();
    return nb::make_tuple(s.allocated_bytes, s.cached_bytes, s.allocations, s.reuses);
  });
  m.def("set_cache_limit", &set_cache_limit);
  m.def("cache_limit", &cache_limit);
  m.def("release_cache", &release_cache);
}
