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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__GLIBCXX__)
#include <cxxabi.h>  // (glibc: the forced unwind of pthread_exit, see take_gil_back)
#endif

#include "arrow_c.h"
#include "crc32c.h"
#include "fbwrite.h"
#include "kernels.h"
#include "message.h"
#include "pool.h"
#include "scan.h"

namespace nb = nanobind;
using namespace vx;

namespace {

// -- the GIL ---------------------------------------------------------------------------------

// The thread that ran the interpreter's atexit callbacks (the one finalizing it), and the
// main thread's ident (the only one Python handles signals on); set at import.
std::atomic<std::thread::id> g_exit_thread{};
unsigned long g_main_ident = 0;

[[noreturn]] void park_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
}

// Takes the GIL back for a thread that released it for native work. Once the interpreter is
// finalizing, CPython (3.11 to 3.13) ends any other thread asking for the GIL with
// PyThread_exit_thread: pthread_exit, on glibc a forced unwind, which kills the process
// ("terminate called without an active exception") when it crosses a noexcept frame, and
// would run destructors that touch Python objects without the GIL anyway. Such a thread (a
// daemon thread coming back from a scan at interpreter exit) is parked instead: it never
// runs Python again, holds no lock, and the process exits around it (what CPython 3.14
// itself does with such threads).
void take_gil_back(PyThreadState* ts) noexcept {
  if (!Py_IsInitialized() && std::this_thread::get_id() != g_exit_thread.load()) park_forever();
#if defined(__GLIBCXX__)
  try {
    PyEval_RestoreThread(ts);
  } catch (...) {
    // the forced unwind (PyEval_RestoreThread, C, throws nothing else): finalization began
    // while this thread waited for the GIL. Caught by `...`: a forced unwind has no
    // exception object, so binding it to a reference is undefined (UBSan reports it).
    park_forever();
  }
#else
  PyEval_RestoreThread(ts);
#endif
}

// Runs f with the GIL released and returns what it returns (or throws what it throws) with
// the GIL held again. On the main thread, Ctrl-C is looked for meanwhile: the outermost
// parallel_for loops of f call PyErr_CheckSignals (with the GIL, between tasks and while
// waiting for them, every kPollIntervalMs); when a signal handler raised (KeyboardInterrupt),
// the tasks not started are skipped and that exception is raised here.
template <class F>
auto without_gil(F&& f) -> decltype(f()) {
  const bool main = PyThread_get_thread_ident() == g_main_ident;
  std::optional<nb::python_error> raised;  // (destroyed last: with the GIL)
  PyThreadState* ts = PyEval_SaveThread();
  struct Retake {
    PyThreadState** ts;
    ~Retake() { take_gil_back(*ts); }
  } retake{&ts};
  std::optional<InterruptScope> scope;
  if (main)
    scope.emplace([&ts, &raised] {
      take_gil_back(ts);
      if (PyErr_CheckSignals() != 0) raised.emplace();  // (takes the error indicator)
      ts = PyEval_SaveThread();
      return raised.has_value();
    });
  try {
    return f();
  } catch (Interrupted&) {
  }
  // (the exception is moved out here and raised once retake took the GIL back)
  if (!raised) throw std::runtime_error("native work interrupted");
  throw std::move(*raised);
}

// Python buffer views whose last native owner went on a thread without the GIL: released on
// the main thread at its next chance (Py_AddPendingCall needs neither the GIL nor a thread
// state; a thread waiting for the GIL here could be ended by finalization, as above).
std::mutex* g_orphans_mu = new std::mutex();                   // (never destroyed: worker
std::vector<Py_buffer>* g_orphans = new std::vector<Py_buffer>();  //  threads may outlive exit)
bool g_orphans_scheduled = false;

int release_orphans(void*) {
  std::vector<Py_buffer> views;
  {
    std::lock_guard<std::mutex> g(*g_orphans_mu);
    views.swap(*g_orphans);
    g_orphans_scheduled = false;
  }
  for (Py_buffer& v : views) PyBuffer_Release(&v);
  return 0;
}

// A Python buffer (a message body) as native memory: the view is released when the last
// buffer referring to it goes (possibly on another thread, long after): at once with the
// GIL, else by the main thread (release_orphans); at and after finalization it is left to
// the process's end.
struct PyMem final : Mem {
  Py_buffer view{};
  bool held = false;
  ~PyMem() override {
    if (!held || !Py_IsInitialized()) return;
    if (PyGILState_Check()) {
      PyBuffer_Release(&view);
      return;
    }
    std::lock_guard<std::mutex> g(*g_orphans_mu);
    g_orphans->push_back(view);
    if (!g_orphans_scheduled) g_orphans_scheduled = Py_AddPendingCall(release_orphans, nullptr) == 0;
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

// The columns as capsules (None where Python decodes the column), each taken out of `arrays`
// as its capsule takes it over.
nb::list capsules_of(std::vector<ArrowArray*>& arrays) {
  nb::list cols;
  for (ArrowArray*& a : arrays) {
    if (a) {
      ArrowArray* x = a;
      a = nullptr;
      cols.append(array_capsule(x));
    } else {
      cols.append(nb::none());
    }
  }
  return cols;
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

// The Message flatbuffer of a header (vortex_io/_ipc/schema.decode_message_header's twin):
// (version, type, body_size, row_count, encodings, alignment_exponent, metadata pairs or
// None), or ("err", kind, message).
// A contiguous view of a Python buffer, released when it goes out of scope.
struct BufferView {
  Py_buffer view{};
  explicit BufferView(nb::handle obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  }
  ~BufferView() { PyBuffer_Release(&view); }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  const char* data() const { return static_cast<const char*>(view.buf); }
  size_t size() const { return size_t(view.len); }
};

nb::tuple message_header(nb::handle obj) {
  BufferView view(obj);
  MessageHeaderIn h;
  try {
    h = parse_message_header(Bytes(reinterpret_cast<const uint8_t*>(view.data()), view.size()));
  } catch (Error& e) {
    return nb::make_tuple(nb::str("err"), int(e.kind), nb::str(e.msg.c_str()));
  }
  nb::list enc;
  for (const Bytes& e : h.encodings) enc.append(nb::str(reinterpret_cast<const char*>(e.p), e.n));
  nb::object md = nb::none();
  if (h.has_metadata) {
    nb::list pairs;
    for (auto& [k, v] : h.metadata)
      pairs.append(nb::make_tuple(nb::bytes(reinterpret_cast<const char*>(k.p), k.n),
                                  nb::bytes(reinterpret_cast<const char*>(v.p), v.n)));
    md = pairs;
  }
  return nb::make_tuple(int(h.version), int(h.type), h.body_size, h.row_count, nb::tuple(enc),
                        int(h.alignment_exponent), md);
}

// -- the writer's flatbuffers (fbwrite.h), from the objects the Python reference reads ------

std::string bytes_of(nb::handle o) {
  BufferView v(o);
  return std::string(v.data(), v.size());
}

// a str as UTF-8 (strict, as the reference's encode), or bytes as they are
std::string text_of(nb::handle o) {
  if (PyUnicode_Check(o.ptr())) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(o.ptr(), &n);
    if (!p) throw nb::python_error();
    return std::string(p, size_t(n));
  }
  return bytes_of(o);
}

// an int that fits T (the reference's builder raises TypeError for one that does not)
template <class T>
T int_of(nb::handle o, const char* what) {
  T v;
  if (!nb::try_cast<T>(o, v)) throw nb::type_error(cat(what, " must be an integer that fits ", sizeof(T) * 8, " unsigned bits").c_str());
  return v;
}

bool truthy(nb::handle o) {
  int r = PyObject_IsTrue(o.ptr());
  if (r < 0) throw nb::python_error();
  return r != 0;
}

fbw::StatsIn stats_in(nb::handle s) {
  fbw::StatsIn out;
  nb::object mn = s.attr("min"), mx = s.attr("max"), sm = s.attr("sum");
  if (truthy(mn)) out.min = bytes_of(mn);
  if (truthy(mx)) out.max = bytes_of(mx);
  if (truthy(sm)) out.sum = bytes_of(sm);
  out.min_exact = truthy(s.attr("min_exact"));
  out.max_exact = truthy(s.attr("max_exact"));
  const std::pair<const char*, std::optional<bool>*> flags[] = {
      {"is_sorted", &out.is_sorted}, {"is_strict_sorted", &out.is_strict_sorted},
      {"is_constant", &out.is_constant}};
  for (auto& [name, v] : flags) {
    nb::object x = s.attr(name);
    if (!x.is_none()) *v = truthy(x);
  }
  const std::pair<const char*, std::optional<uint64_t>*> counts[] = {
      {"null_count", &out.null_count}, {"uncompressed_size_in_bytes", &out.uncompressed_size_in_bytes},
      {"nan_count", &out.nan_count}};
  for (auto& [name, v] : counts) {
    nb::object x = s.attr(name);
    if (!x.is_none()) *v = int_of<uint64_t>(x, name);
  }
  return out;
}

constexpr int kMaxWriteDepth = 1024;

fbw::NodeIn node_in(nb::handle n, int depth) {
  if (depth > kMaxWriteDepth) throw nb::value_error("array tree nested deeper than 1024 levels");
  fbw::NodeIn out;
  out.encoding = int_of<uint16_t>(n.attr("encoding"), "FlatNode.encoding");
  out.metadata = bytes_of(n.attr("metadata"));
  for (nb::handle b : n.attr("buffers")) out.buffers.push_back(int_of<uint16_t>(b, "a buffer index"));
  for (nb::handle c : n.attr("children")) out.children.push_back(node_in(c, depth + 1));
  nb::object st = n.attr("stats");
  if (!st.is_none() && truthy(st)) out.stats = stats_in(st);
  return out;
}

// encode_array_fb's twin: (root FlatNode, [(padding, alignment exponent, length), ...])
nb::bytes array_fb(nb::handle root, nb::handle buffers) {
  std::vector<fbw::BufferSpec> specs;
  for (nb::handle t : buffers) {
    nb::tuple tup = nb::cast<nb::tuple>(t);
    if (tup.size() != 3) throw nb::value_error("a buffer spec is (padding, alignment exponent, length)");
    specs.push_back({int_of<uint16_t>(tup[0], "a buffer padding"), int_of<uint8_t>(tup[1], "a buffer alignment"),
                     int_of<uint32_t>(tup[2], "a buffer length")});
  }
  std::string out = fbw::array_fb(node_in(root, 0), specs);
  return nb::bytes(out.data(), out.size());
}

// encode_message_header's twin: metadata is a list of (key, value) pairs or None (no
// pairs: the reference writes none for empty metadata either)
nb::bytes message_fb(int type, nb::handle body_size, nb::handle row_count, nb::handle encodings,
                     nb::handle alignment_exponent, nb::handle metadata, nb::handle record,
                     nb::handle record_key) {
  if (type < 1 || type > 3) throw nb::value_error("unknown message type");
  fbw::MessageIn m;
  m.type = uint8_t(type);
  m.body_size = int_of<uint64_t>(body_size, "body_size");
  m.row_count = int_of<uint32_t>(row_count, "row_count");
  for (nb::handle e : encodings) m.encodings.push_back(text_of(e));
  m.alignment_exponent = int_of<uint8_t>(alignment_exponent, "alignment_exponent");
  if (!metadata.is_none()) {
    for (nb::handle kv : metadata) {
      nb::tuple t = nb::cast<nb::tuple>(kv);
      if (t.size() != 2) throw nb::value_error("a metadata pair is (key, value)");
      m.metadata.emplace_back(text_of(t[0]), bytes_of(t[1]));
    }
    m.has_metadata = !m.metadata.empty();
  }
  if (!record.is_none()) {
    m.record = bytes_of(record);
    m.record_key = text_of(record_key);
  }
  std::string out = fbw::message_fb(m);
  return nb::bytes(out.data(), out.size());
}

// -- the scan's predicate, from Python's lowering (vortex_io/_native_scan.py) ---------------------

Op op_of(int v) {
  if (v < 0 || v > 5) throw std::invalid_argument("bad operator");
  return Op(v);
}

i128 i128_of(nb::handle h) {
  nb::bytes b = nb::borrow<nb::bytes>(h);
  if (b.size() != 16) throw std::invalid_argument("an integer literal is 16 bytes");
  return load<i128>(reinterpret_cast<const uint8_t*>(b.c_str()));
}

// A literal tuple (kind, value, ...) as L (Lit or PLit): `int_rest` reads what an integer
// literal carries after its value.
template <class L, class F>
L lit_from(nb::handle h, F&& int_rest) {
  nb::tuple t = nb::borrow<nb::tuple>(h);
  std::string k = nb::cast<std::string>(t[0]);
  L l;
  if (k == "i") {
    l.kind = L::Int;
    l.i = i128_of(t[1]);
    int_rest(l, t);
  } else if (k == "f") {
    l.kind = L::Float;
    l.f = nb::cast<double>(t[1]);
  } else if (k == "b") {
    l.kind = L::Bytes;
    nb::bytes b = nb::borrow<nb::bytes>(t[1]);
    l.s.assign(b.c_str(), b.size());
  } else if (k == "o") {
    l.kind = L::Bool;
    l.b = nb::cast<bool>(t[1]);
  } else {
    throw std::invalid_argument("bad literal kind");
  }
  return l;
}

Lit lit_of(nb::handle h) {
  return lit_from<Lit>(h, [](Lit&, const nb::tuple&) {});
}

// a predicate literal: an integer also carries (frac, inf)
PLit plit_of(nb::handle h) {
  return lit_from<PLit>(h, [](PLit& l, const nb::tuple& t) {
    l.frac = nb::cast<bool>(t[2]);
    l.inf = nb::cast<int>(t[3]);
  });
}

std::unique_ptr<Pred> pred_of(nb::handle h, int depth = 0) {
  if (depth > 10000) throw std::invalid_argument("predicate too deep");
  nb::tuple t = nb::borrow<nb::tuple>(h);
  std::string k = nb::cast<std::string>(t[0]);
  auto p = std::make_unique<Pred>();
  auto prune = [&](nb::handle x) {
    if (x.is_none()) return;
    nb::tuple pt = nb::borrow<nb::tuple>(x);
    p->prunable = true;
    p->prune_op = op_of(nb::cast<int>(pt[0]));
    p->plit = plit_of(pt[1]);
  };
  if (k == "cmp") {
    p->kind = Pred::Cmp;
    p->field = nb::cast<int>(t[1]);
    p->op = op_of(nb::cast<int>(t[2]));
    p->lit = lit_of(t[3]);
    prune(t[4]);
  } else if (k == "cmpconst") {
    p->kind = Pred::CmpConst;
    p->field = nb::cast<int>(t[1]);
    p->answer = nb::cast<bool>(t[2]);
    prune(t[3]);
  } else if (k == "cmpnull") {
    p->kind = Pred::CmpNull;
    p->field = nb::cast<int>(t[1]);
  } else if (k == "in") {
    p->kind = Pred::In;
    p->field = nb::cast<int>(t[1]);
    for (auto x : nb::borrow<nb::list>(t[2])) p->lits.push_back(lit_of(x));
    if (!t[3].is_none()) {
      p->prunable = true;
      for (auto x : nb::borrow<nb::list>(t[3])) p->plits.push_back(plit_of(x));
    }
  } else if (k == "isnull") {
    p->kind = Pred::IsNull;
    p->field = nb::cast<int>(t[1]);
    p->negated = nb::cast<bool>(t[2]);
  } else if (k == "const") {
    p->kind = Pred::Const;
    p->const_v = nb::cast<int>(t[1]);
  } else if (k == "col") {
    p->kind = Pred::BoolCol;
    p->field = nb::cast<int>(t[1]);
  } else if (k == "and" || k == "or") {
    p->kind = k == "and" ? Pred::And : Pred::Or;
    p->a = pred_of(t[1], depth + 1);
    p->b = pred_of(t[2], depth + 1);
  } else if (k == "not") {
    p->kind = Pred::Not;
    p->a = pred_of(t[1], depth + 1);
  } else {
    throw std::invalid_argument("bad predicate kind " + k);
  }
  return p;
}

// bytes of the buffers a decoder allocated (ScanStats.bytes_canonicalized)
uint64_t owned_bytes(const Col& c) {
  uint64_t n = 0;
  auto add = [&](const Buf& b) {
    if (b.mem && b.mem->owned) n += b.len;
  };
  add(c.validity);
  add(c.values);
  add(c.offsets);
  for (auto& d : c.data) add(d);
  for (auto& k : c.children) n += owned_bytes(k);
  return n;
}

// What a scan made of a message.
struct ScanOut {
  enum { Ok, Pruned, Python, Err } state = Ok;
  int kind = 0;
  std::string msg;
  bool all = true;                 // every row (of [start, stop)) selected
  uint64_t nsel = 0;               // how many rows are selected
  Positions pos;                   // the selected rows unless all (and columns are taken)
  std::vector<ArrowArray*> cols;
  uint64_t canonicalized = 0;
  ~ScanOut() {
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
    std::vector<MsgOut> out;
    // the trees built and the columns decoded on the pool (message.cpp); the trees go
    // before the GIL is taken back (the bodies, `in`, are released with the GIL held: PyMem)
    out = without_gil([&] { return decode_messages(in, root_, lim_, is_struct ? &fl : nullptr, string_view, threads); });
    nb::list res;
    for (size_t i = 0; i < nm; i++) {
      MsgOut& o = out[i];
      if (o.error) {
        res.append(nb::make_tuple(nb::str("err"), o.kind, nb::str(o.msg.c_str())));
        continue;
      }
      nb::list cols = capsules_of(o.cols);
      res.append(nb::make_tuple(nb::str("cols"), cols));
    }
    return res;
  }

  // Build (and so check) each message's whole tree: None, or (error kind, message).
  nb::list validate(nb::list messages, int threads) {
    std::vector<MsgIn> in;
    in.reserve(messages.size());
    for (auto h : messages) in.push_back(message_in(h));
    size_t nm = in.size();
    std::vector<int> kinds(nm, 0);
    std::vector<std::string> msgs(nm);
    const uint64_t rows = total_rows(in);
    without_gil([&] {
      parallel_for(nm, threads_for(rows, threads), [&](size_t i) {
        try {
          Tree t;
          prepare_tree(t, in[i], lim_);
          build_tree(t, root_, nullptr);
        } catch (Error& e) {
          kinds[i] = int(e.kind);
          msgs[i] = e.msg;
        } catch (std::bad_alloc&) {
          kinds[i] = int(ErrKind::Limit);
          msgs[i] = "out of memory while reading the message";
        }
      });
    });
    nb::list res;
    for (size_t i = 0; i < nm; i++) {
      if (kinds[i]) res.append(nb::make_tuple(kinds[i], nb::str(msgs[i].c_str())));
      else res.append(nb::none());
    }
    return res;
  }

  // Scan messages: prune by statistics, evaluate the predicate on the encoded columns,
  // take the selected rows of the output fields. ranges: per message (start, stop, cap):
  // without a predicate the rows [start, stop); at most `cap` selected rows (cap < 0: all).
  nb::list scan(nb::list messages, nb::object program, std::vector<int> filter_fields,
                std::vector<int> out_fields, std::vector<std::tuple<int64_t, int64_t, int64_t>> ranges,
                bool string_view, int threads, std::vector<int> dict_fields) {
    if (root_->kind != Kind::Struct) throw std::invalid_argument("a scan needs a struct dtype");
    std::vector<MsgIn> in;
    in.reserve(messages.size());
    for (auto h : messages) in.push_back(message_in(h));
    if (ranges.size() != in.size()) throw std::invalid_argument("one range per message");
    std::unique_ptr<Pred> pred;
    if (!program.is_none()) pred = pred_of(program);
    for (const auto* fs : {&filter_fields, &out_fields})
      for (int f : *fs)
        if (f < 0 || f >= int(root_->children.size())) throw std::out_of_range("field index out of range");
    for (int f : dict_fields)
      if (std::find(out_fields.begin(), out_fields.end(), f) == out_fields.end() ||
          !root_->children[size_t(f)]->storage().is_string_like())
        throw std::invalid_argument("dictionary fields must be output fields holding strings");
    size_t nm = in.size(), per = out_fields.size();
    std::vector<std::unique_ptr<Tree>> trees(nm);
    std::vector<ScanOut> out(nm);
    const uint64_t rows = total_rows(in);
    without_gil([&] {
      // 1. per message: the tree, pruning, the predicate
      parallel_for(nm, threads_for(rows, threads), [&](size_t i) {
        ScanOut& o = out[i];
        try {
          auto t = std::make_unique<Tree>();
          prepare_tree(*t, in[i], lim_);
          // the filter's columns first; the output columns once rows are selected (a pruned
          // message, or one the predicate rejects, builds and checks no other column: the
          // reference scan's lazily built fields)
          build_tree(*t, root_, &filter_fields);
          if (!t->root->enc || std::string_view(t->root->enc->id()) != "vortex.struct") throw NeedPython();
          auto build_outputs = [&] {
            for (int f : out_fields) build_field(*t, size_t(f));
          };
          // a filter column holding a node only Python knows: the message is Python's (its
          // checks are, reached or not)
          for (int f : filter_fields) {
            const Node* fn = field_node(*t, f);
            if (!fn || fn->subtree_foreign) throw NeedPython();
          }
          Ctx c(t->limits);
          c.keep = per != 0;  // the takes below reuse what the predicate decodes
          auto [start, stop, cap] = ranges[i];
          uint64_t rows = t->row_count;
          if (pred) {
            if (can_skip(*pred, *t, c)) {
              o.state = ScanOut::Pruned;
              trees[i] = std::move(t);
              return;
            }
            Mask m = evaluate(*pred, *t, c);
            if (per == 0) {  // a count: no positions
              o.nsel = mask_count(m);
              if (cap >= 0 && o.nsel > uint64_t(cap)) o.nsel = uint64_t(cap);
            } else {
              o.pos = mask_positions(m);
              if (cap >= 0 && o.pos.size() > size_t(cap)) o.pos.resize(size_t(cap));
              o.nsel = o.pos.size();
            }
            o.all = o.nsel == rows;
            if (o.nsel) build_outputs();
          } else {
            build_outputs();
            uint64_t a = uint64_t(std::max<int64_t>(start, 0)), b = std::min<uint64_t>(uint64_t(stop), rows);
            if (cap >= 0 && b > a + uint64_t(cap)) b = a + uint64_t(cap);
            o.all = a == 0 && b == rows;
            o.nsel = b > a ? b - a : 0;
            if (!o.all && per) {
              o.pos.resize(size_t(o.nsel));
              for (uint64_t r = a; r < b; r++) o.pos[size_t(r - a)] = uint32_t(r);
            }
          }
          trees[i] = std::move(t);
        } catch (NeedPython&) {
          o.state = ScanOut::Python;
        } catch (Error& e) {
          o.state = ScanOut::Err;
          o.kind = int(e.kind);
          o.msg = e.msg;
        } catch (std::bad_alloc&) {
          o.state = ScanOut::Err;
          o.kind = int(ErrKind::Limit);
          o.msg = "out of memory while scanning the message";
        }
      });
      // 2. per (message, output field): the selected rows
      for (size_t i = 0; i < nm; i++)
        if (out[i].state == ScanOut::Ok) out[i].cols.assign(per, nullptr);
      std::vector<std::string> errs(nm * per);
      std::vector<int> kinds(nm * per, 0);
      std::vector<uint64_t> canon(nm * per, 0);
      uint64_t taken = 0;  // the rows the columns are taken for
      for (size_t i = 0; i < nm; i++)
        if (out[i].state == ScanOut::Ok) taken += out[i].all ? in[i].rows : out[i].pos.size();
      parallel_for(nm * per, threads_for(taken * per, threads), [&](size_t task) {
        size_t i = task / per, f = task % per;
        ScanOut& o = out[i];
        if (o.state != ScanOut::Ok || (!o.all && o.pos.empty())) return;
        Tree& t = *trees[i];
        // a NeedPython leaves the column null: Python takes it
        run_column_task([&] {
          const Node* node = field_node(t, out_fields[f]);
          if (!node || node->subtree_foreign) throw NeedPython();  // Python's, reached or not
          Ctx c(t.limits);
          c.string_view = string_view;
          const DType& fd = *root_->children[size_t(out_fields[f])];
          if (std::find(dict_fields.begin(), dict_fields.end(), out_fields[f]) != dict_fields.end()) {
            Col codes, values;
            decode_dictionary(*node, o.pos.data(), o.pos.size(), o.all, fd, c, codes, values);
            canon[task] = owned_bytes(codes) + owned_bytes(values);
            auto* a = new ArrowArray();
            export_dictionary(std::move(codes), std::move(values), a);
            o.cols[f] = a;
          } else {
            Col col = o.all ? vx::decode(*node, c) : vx::take(*node, o.pos.data(), o.pos.size(), c);
            conform(col, fd, string_view);
            canon[task] = owned_bytes(col);
            auto* a = new ArrowArray();
            export_col(std::move(col), a);
            o.cols[f] = a;
          }
        }, kinds[task], errs[task], "out of memory while scanning the message");
      });
      for (size_t i = 0; i < nm; i++) {
        if (out[i].state != ScanOut::Ok) continue;
        for (size_t f = 0; f < per; f++) {
          out[i].canonicalized += canon[i * per + f];
          if (kinds[i * per + f] && out[i].state == ScanOut::Ok) {
            out[i].state = ScanOut::Err;
            out[i].kind = kinds[i * per + f];
            out[i].msg = errs[i * per + f];
          }
        }
      }
      trees.clear();
    });
    nb::list res;
    for (size_t i = 0; i < nm; i++) {
      ScanOut& o = out[i];
      switch (o.state) {
        case ScanOut::Err:
          res.append(nb::make_tuple(nb::str("err"), o.kind, nb::str(o.msg.c_str())));
          continue;
        case ScanOut::Pruned: res.append(nb::make_tuple(nb::str("pruned"))); continue;
        case ScanOut::Python: res.append(nb::make_tuple(nb::str("python"))); continue;
        default: break;
      }
      // a column Python takes (left null) needs the selected rows
      bool handed_back = std::find(o.cols.begin(), o.cols.end(), nullptr) != o.cols.end();
      nb::list cols = capsules_of(o.cols);
      nb::object pos = nb::none();
      uint64_t nsel = o.all ? in[i].rows : o.nsel;
      if (!o.all && handed_back) pos = nb::bytes(reinterpret_cast<const char*>(o.pos.data()), o.pos.size() * 4);
      res.append(nb::make_tuple(nb::str("ok"), nsel, pos, cols, o.canonicalized));
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
    without_gil([&] {
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
    });
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

// A CRC-32C computed on the background thread (crc32c_start): Python frames the next
// messages meanwhile and asks for the result (waiting with the GIL released) before the
// body is used. The Python object keeps the buffer's view; the background thread sees only
// the bytes and the job's state (it never touches Python), and the object waits for the job
// before it lets the view go.
struct CrcJob {
  const uint8_t* p = nullptr;
  size_t n = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  uint32_t crc = 0;
  void wait() {
    std::unique_lock<std::mutex> g(mu);
    cv.wait(g, [&] { return done; });
  }
};

struct PyCrcJob {
  Buf data;
  std::shared_ptr<CrcJob> job;
  PyCrcJob() = default;
  PyCrcJob(PyCrcJob&&) = default;
  PyCrcJob& operator=(PyCrcJob&&) = default;
  PyCrcJob(const PyCrcJob&) = delete;
  ~PyCrcJob() {
    if (job) job->wait();  // (microseconds: the bytes must outlive the job)
  }
  uint32_t result() {
    {
      std::lock_guard<std::mutex> g(job->mu);
      if (job->done) return job->crc;
    }
    without_gil([&] { job->wait(); });
    return job->crc;
  }
};

PyCrcJob crc32c_start(nb::handle data) {
  PyCrcJob out;
  out.data = buf_of(data);
  out.job = std::make_shared<CrcJob>();
  out.job->p = out.data.ptr;
  out.job->n = out.data.len;
  run_in_background([job = out.job] {
    uint32_t c = crc32c_parallel(job->p, job->n, 0, 2);  // (several MiB: two pieces)
    {
      std::lock_guard<std::mutex> g(job->mu);
      job->crc = c;
      job->done = true;
    }
    job->cv.notify_all();
  });
  return out;
}

// CRC-32C of a buffer (anything with the buffer protocol), continuing `value`; the GIL is
// released for large buffers (the caller must not resize them meanwhile: bytes, mmap views
// and numpy arrays are what vortex_io passes)
uint32_t py_crc32c(nb::handle data, uint32_t value, bool portable, int threads = 1) {
  BufferView view(data);
  const auto* p = reinterpret_cast<const uint8_t*>(view.data());
  size_t n = view.size();
  if (n >= (64u << 10))
    return without_gil([&] { return portable ? crc32c_portable(p, n, value) : crc32c_parallel(p, n, value, threads); });
  return portable ? crc32c_portable(p, n, value) : vx::crc32c(p, n, value);
}

// For tests of Ctrl-C: `tasks` tasks of `ms` milliseconds each (sleeping) on up to `threads`
// threads with the GIL released, as a long decode runs; returns how many ran (all of them
// unless interrupted, which raises)
size_t pool_busy(size_t tasks, int ms, int threads) {
  std::atomic<size_t> ran{0};
  without_gil([&] {
    parallel_for(tasks, threads, [&](size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      ran++;
    });
  });
  return ran.load();
}

// (an atexit callback: the interpreter is about to be finalized, on this thread)
void at_exit() {
  g_exit_thread.store(std::this_thread::get_id());
  // Threads still alive now are daemon threads (finalization joined the others): CPython stops
  // them without ever releasing what their frames hold, so a Stream a daemon thread was
  // scanning with stays alive for good, by CPython's design, and nanobind's leak check
  // (after finalization) would report it, its type and their functions as a leak of this
  // module on every such exit. The report stays on for every exit without such threads.
  nb::module_ threading = nb::module_::import_("threading");
  nb::object me = threading.attr("current_thread")();
  for (nb::handle t : threading.attr("enumerate")())
    if (!t.is(me) && truthy(t.attr("is_alive")())) {
      nb::set_leak_warnings(false);
      break;
    }
}

}  // namespace

namespace vx {
void bind_kernel_probe(nb::module_& m);  // probe.cpp (test-only)
}

NB_MODULE(_native, m) {
  m.doc() = "vortex_io's native core (C++17): message decoding and compute kernels";
  g_main_ident = nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  // the thread finalizing the interpreter runs the atexit callbacks first (take_gil_back)
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(at_exit));
  nb::class_<Stream>(m, "Stream")
      .def(nb::init<nb::bytes, std::vector<uint64_t>>(), nb::arg("dtype_program"), nb::arg("limits"))
      .def("decode", &Stream::decode, nb::arg("messages"), nb::arg("fields").none(), nb::arg("string_view"),
           nb::arg("threads"))
      .def("validate", &Stream::validate, nb::arg("messages"), nb::arg("threads"))
      .def("scan", &Stream::scan, nb::arg("messages"), nb::arg("program").none(), nb::arg("filter_fields"),
           nb::arg("out_fields"), nb::arg("ranges"), nb::arg("string_view"), nb::arg("threads"),
           nb::arg("dict_fields") = std::vector<int>())
      .def("kernel", &Stream::kernel, nb::arg("message"), nb::arg("kind"), nb::arg("op"), nb::arg("lits"),
           nb::arg("idx"), nb::arg("string_view"));
  m.def("crc32c", [](nb::handle data, uint32_t value, int threads) { return py_crc32c(data, value, false, threads); },
        nb::arg("data"), nb::arg("value") = 0, nb::arg("threads") = 1,
        "CRC-32C of a buffer, continuing value (the SSE4.2 instruction where the CPU has it; "
        "buffers of several MiB on up to `threads` threads)");
  m.def("crc32c_combine", &crc32c_combine, nb::arg("crc_a"), nb::arg("crc_b"), nb::arg("len_b"),
        "crc32c(a + b) from crc32c(a), crc32c(b) and len(b)");
  m.def("crc32c_portable", [](nb::handle data, uint32_t value) { return py_crc32c(data, value, true); },
        nb::arg("data"), nb::arg("value") = 0, "crc32c by the portable slice-by-8 tables (tests)");
  nb::class_<PyCrcJob>(m, "CrcJob")
      .def("result", &PyCrcJob::result, "the CRC-32C (waits for the background thread)");
  m.def("crc32c_start", &crc32c_start, nb::arg("data"),
        "start the CRC-32C of a buffer on the background thread; .result() waits for it");
  m.def("crc32c_hardware", &crc32c_hardware, "True when crc32c uses the SSE4.2 instruction");
  m.def("encodings", &native_encoding_ids, "IDs of the encodings the native core decodes");
  m.def("array_fb", &array_fb, nb::arg("root"), nb::arg("buffers"),
        "The Array flatbuffer of a message body (ipc/schema.encode_array_fb's twin, the same bytes)");
  m.def("message_fb", &message_fb, nb::arg("type"), nb::arg("body_size"), nb::arg("row_count"),
        nb::arg("encodings"), nb::arg("alignment_exponent"), nb::arg("metadata").none(),
        nb::arg("record").none(), nb::arg("record_key"),
        "The Message flatbuffer of a header (ipc/schema.encode_message_header's twin, the same bytes)");
  m.def("message_header", &message_header, nb::arg("header"),
        "The Message flatbuffer of a message header (ipc/schema.decode_message_header's twin)");
  m.def("hardware_threads", &hardware_threads);
  m.def("pool_stats", []() {
    PoolStats s = pool_stats();
    return nb::make_tuple(s.allocated_bytes, s.cached_bytes, s.allocations, s.reuses);
  });
  m.def("set_cache_limit", &set_cache_limit);
  m.def("cache_limit", &cache_limit);
  m.def("release_cache", &release_cache);
  m.def("pool_busy", &pool_busy, nb::arg("tasks"), nb::arg("ms"), nb::arg("threads"),
        "test-only: tasks sleeping ms each on the pool, with the GIL released (Ctrl-C polled)");
  vx::bind_kernel_probe(m);
#ifdef VX_EXACT_ALLOC
  m.attr("exact_alloc") = true;  // a sanitizer build: no pool (memory.cpp)
#else
  m.attr("exact_alloc") = false;
#endif
}
