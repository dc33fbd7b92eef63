// The encoding tree of one message, and the Encoding interface every native encoding
// implements (the native twin of vortex_io._array.Encoding; see ARCHITECTURE.md).
//
// Building a tree mirrors vortex_io._ipc.messages._Builder step for step: per node, the
// encoding checks the dtype, parses its metadata, says how many buffers it takes and the
// (dtype, length) of each child, the children are built, and the encoding validates the
// node. The checks (and so the errors) are the reference implementation's.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "col.h"
#include "dtype.h"
#include "memory.h"
#include "scalar.h"

namespace vx {

struct Limits {
  uint64_t max_header_bytes = 16u << 20;
  uint64_t max_body_bytes = 512u << 20;
  uint64_t max_buffers = 65536;
  uint64_t max_depth = 64;
  uint64_t max_nodes = 100000;
  uint64_t max_rows_per_message = 0xFFFFFFFFull;
  uint64_t max_decoded_bytes = 512u << 20;
};

// Refuse to materialize more than limits.max_decoded_bytes (check_decoded_size).
inline void check_decoded(const Limits& l, uint64_t nbytes, const std::string& what) {
  if (nbytes > l.max_decoded_bytes)
    limit_exceeded(what, " would decode to ", nbytes, " bytes, over the limit of ", l.max_decoded_bytes);
}

// ArrayStats of a node (what the reader keeps of them: pruning reads min/max/null_count).
struct NodeStats {
  std::optional<Bytes> min, max, sum;
  bool min_exact = false, max_exact = false;
  std::optional<bool> is_sorted, is_strict_sorted, is_constant;
  std::optional<uint64_t> null_count, uncompressed_size, nan_count;
};

struct MetaBase {
  virtual ~MetaBase() = default;
};

class Encoding;
struct Tree;

struct ChildSpec {
  const DType* dtype;
  uint64_t len;
};

struct Node {
  const Encoding* enc = nullptr;  // nullptr: an encoding only Python knows (foreign)
  std::string_view enc_id;
  const DType* dtype = nullptr;
  uint64_t len = 0;
  Bytes metadata;
  std::vector<Buf> buffers;
  std::vector<Node*> children;      // nullptr: not built (a lazily built struct field)
  std::vector<ChildSpec> specs;     // dtype and length of each child (Encoding::child_specs)
  std::vector<uint64_t> child_pos;  // flatbuffer positions of the children
  uint64_t pos = 0;                 // flatbuffer position of this node
  int depth = 0;
  const NodeStats* stats = nullptr;
  std::unique_ptr<MetaBase> meta;
  bool subtree_foreign = false;     // this node or a built descendant is foreign
  // A decode of this node's codes that a scan's predicate made (Ctx::keep), for the take of
  // the selected rows after it (vortex.dict: its codes, unpacked once). Written only while
  // the predicate runs, on the one thread that evaluates it; read by the takes after it.
  mutable std::shared_ptr<const Col> kept;

  size_t nchildren() const { return child_pos.size(); }
  template <class M>
  const M& m() const { return static_cast<const M&>(*meta); }
  const Node& child(size_t i) const { return *children[i]; }
  bool has_child(size_t i) const { return i < children.size() && children[i]; }
};

// Thrown when a decode or kernel reaches a foreign node: the caller hands that column (or
// message) to the Python implementation.
struct NeedPython {};

// The tree of one Array message and everything its nodes point into.
struct Tree {
  std::deque<Node> nodes;
  std::deque<NodeStats> stats;
  DTypeArena dtypes;          // derived dtypes of this message's nodes
  Buf body;                   // the message body (keeps its memory alive)
  Bytes fb;                   // the Array flatbuffer
  std::vector<Buf> buffers;   // the message's buffers (aligned where required)
  std::vector<std::string> encoding_ids;
  std::vector<const Encoding*> encodings;  // by index; nullptr: not native
  std::vector<bool> python_known;          // by index: registered in Python
  Limits limits;
  uint64_t row_count = 0;
  Node* root = nullptr;
  uint64_t nodes_built = 0;
  bool lazy_fields = false;   // the root struct's fields are built on demand
};

class Ctx;
struct Mask;
struct Lit;
enum class Op : uint8_t { Eq = 0, Neq, Lt, Lte, Gt, Gte };

// What an encoding ID means to the native core. One instance per ID, registered at load
// time (REGISTER_ENCODING); stateless and shared by every thread.
class Encoding {
 public:
  explicit Encoding(const char* id, bool canonical = false) : id_(id), canonical_(canonical) {}
  virtual ~Encoding() = default;
  const char* id() const { return id_; }
  bool canonical() const { return canonical_; }

  // -- building (mirrors the Python Encoding.build) ---------------------------------------
  // The whole build of a node: check_dtype, parse, the buffer count, child_specs, the
  // children, validate. Encodings whose children depend on decoded data (vortex.chunked)
  // override it and use build_child.
  virtual void build(Node& n, Tree& t) const;
  // raise MalformedStreamError when the encoding cannot hold `d`
  virtual void check_dtype(const DType& d) const { (void)d; }
  // parse the metadata bytes into n.meta (n.dtype, n.len, n.metadata are set)
  virtual void parse(Node& n, Tree& t) const { (void)n; (void)t; }
  // (min, max) number of buffers
  virtual std::pair<size_t, size_t> nbuffers(const Node& n) const { (void)n; return {0, 0}; }
  // (dtype, length) of each child present (n.nchildren() of them), into n.specs
  virtual void child_specs(Node& n, Tree& t) const;
  // after the children are built: cheap checks of the buffers against the metadata
  virtual void validate(Node& n, Tree& t) const { (void)n; (void)t; }

  // -- decoding -------------------------------------------------------------------------
  virtual Col decode(const Node& n, Ctx& c) const = 0;

  // -- compute on the encoded node (false: not handled here, the caller decodes) ----------
  // `v` is in the storage domain of n's dtype and, for integers, inside the type's range
  virtual bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const;
  virtual bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const;
  // rows at sorted in-range `idx` (k of them) as a decoded column
  virtual bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const;
  // the validity bitmap (empty Buf: all valid) without decoding values; false: not here
  virtual bool validity(const Node& n, Buf& out, Ctx& c) const;
  // cheap bounds of every value of an integer node (rows under nulls included)
  virtual bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const;

 private:
  const char* id_;
  bool canonical_;
};

const Encoding* find_encoding(std::string_view id);
void register_encoding(std::unique_ptr<Encoding> e);
std::vector<std::string> native_encoding_ids();

struct Registrar {
  explicit Registrar(Encoding* e) { register_encoding(std::unique_ptr<Encoding>(e)); }
};
#define VX_CONCAT2(a, b) a##b
#define VX_CONCAT(a, b) VX_CONCAT2(a, b)
#define REGISTER_ENCODING(cls) static ::vx::Registrar VX_CONCAT(vx_reg_, __LINE__)(new cls())

// -- helpers for encodings ------------------------------------------------------------------
// The optional validity child after `base` required ones (validity_spec).
void validity_spec(const Node& n, size_t base, std::vector<ChildSpec>& out);
// The (parsed) PType of a protobuf enum field; MalformedStreamError naming `what`.
PType ptype_of(uint64_t v, const std::string& what);
PType int_ptype_of(uint64_t v, const std::string& what);

// Build child `i` of `parent` with the dtype and length its parent derived for it.
Node* build_child(Tree& t, Node& parent, size_t i, const ChildSpec& spec);

// Build a message's tree. `fields`: the root struct's fields to build (nullptr: all); the
// others are left unbuilt (and unchecked), like the Python reader's lazy fields.
void build_tree(Tree& t, const DType* dtype, const std::vector<int>* fields);
// Build field `i` of a lazily built root struct (no-op when built).
void build_field(Tree& t, size_t i);

}  // namespace vx
