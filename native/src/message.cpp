#include "message.h"

#include <memory>

#include "fb.h"
#include "pool.h"
#include "scalar.h"

namespace vx {

MessageHeaderIn parse_message_header(Bytes b) {
  MessageHeaderIn h;
  fb::Table t = fb::root(b, "Message");
  h.version = t.scalar<uint8_t>(0, 0, "version");
  if (h.version != 0) unsupported("unsupported message version V", int(h.version), " (only V0 is supported)");
  h.type = t.scalar<uint8_t>(1, 0, "header_type");
  if (h.type < 1 || h.type > 3) malformed("unknown message header type ", int(h.type));
  h.body_size = t.scalar<uint64_t>(3, 0, "body_size");
  uint64_t start = 0, n = 0;
  // custom_metadata: each KeyValue table checked, then its key and value (schema.py's
  // _key_values, in its order)
  if (t.vector(4, 4, "custom_metadata", &start, &n) && n) {
    h.has_metadata = true;
    h.metadata.reserve(size_t(n));
    for (uint64_t i = 0; i < n; i++) {
      const uint64_t p = start + 4 * i;
      const fb::Table e(b, p + load<uint32_t>(b.p + p), "KeyValue");
      Bytes key, value;
      uint64_t s0 = 0, k = 0;
      if (e.vector(0, 1, "key", &s0, &k)) key = Bytes(b.p + s0, size_t(k));
      if (e.vector(1, 1, "value", &s0, &k)) value = Bytes(b.p + s0, size_t(k));
      h.metadata.emplace_back(key, value);
    }
  }
  bool present = false;
  fb::Table m = t.table(2, "MessageHeader", &present);
  static const char* const kNames[] = {"", "ARRAY", "BUFFER", "DTYPE"};
  if (!present && h.type != 3) malformed(kNames[h.type], " message has no header table");
  if (h.type == 1) {
    h.row_count = m.scalar<uint32_t>(0, 0, "row_count");
    if (m.vector(1, 4, "ArrayMessage.encodings", &start, &n)) {
      h.encodings.reserve(size_t(n));
      for (uint64_t i = 0; i < n; i++) {
        const uint64_t p = start + 4 * i;
        const uint64_t s = p + load<uint32_t>(b.p + p);
        if (s + 4 > b.n) malformed("flatbuffer string in MessageHeader.ArrayMessage.encodings is outside");
        const uint64_t len = load<uint32_t>(b.p + s);
        if (s + 4 + len > b.n) malformed("flatbuffer string in MessageHeader.ArrayMessage.encodings runs past");
        if (!utf8_valid(b.p + s + 4, size_t(len)))
          malformed("flatbuffer string in MessageHeader.ArrayMessage.encodings is not UTF-8");
        h.encodings.emplace_back(b.p + s + 4, size_t(len));
      }
    }
  } else if (h.type == 2) {
    h.alignment_exponent = m.scalar<uint8_t>(0, 0, "alignment_exponent");
  }
  return h;
}

MsgOut::~MsgOut() {
  for (ArrowArray* a : cols)
    if (a) {
      if (a->release) a->release(a);
      delete a;
    }
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

std::vector<MsgOut> decode_messages(const std::vector<MsgIn>& in, const DType* root_, const Limits& lim_,
                                    const std::vector<int>* fields, bool string_view, int threads,
                                    const ColCheck* check) {
  const bool is_struct = fields != nullptr;
  const std::vector<int> no_fields;
  const std::vector<int>& fl = is_struct ? *fields : no_fields;
  size_t nm = in.size();
  std::vector<std::unique_ptr<Tree>> trees(nm);
  std::vector<MsgOut> out(nm);
  const uint64_t rows = total_rows(in);
  // 1. the trees (headers walked and checked), one message per task
  parallel_for(nm, threads_for(rows, threads), [&](size_t i) {
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
  parallel_for(nm * per, threads_for(rows * per, threads), [&](size_t task) {
    size_t i = task / per, f = task % per;
    if (out[i].error) return;
    Tree& t = *trees[i];
    // a NeedPython leaves the column null: Python decodes it
    run_column_task([&] {
      const Node* node = t.root;
      const DType* d = root_;
      if (is_struct && t.root->enc && std::string_view(t.root->enc->id()) != "vortex.struct") {
        // a root of another encoding (constant, chunked, ...): decoded whole by the
        // first field's task, split into the fields
        if (f != 0) return;
        if (t.root->subtree_foreign) throw NeedPython();
        Ctx c(t.limits);
        c.string_view = string_view;
        Col col = vx::decode(*t.root, c);
        conform(col, *root_, string_view);
        if (col.layout != Layout::Struct || col.children.size() != root_->children.size())
          malformed(t.root->enc_id, " decoded to ", col.children.size(), " fields, not ",
                    root_->children.size());
        if (check) (*check)(col, *root_);
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
      // a column with a node only Python knows goes to Python whole, reached or not: the
      // native build skipped that subtree's checks, which the Python build makes
      if (node->subtree_foreign) throw NeedPython();
      Ctx c(t.limits);
      c.string_view = string_view;
      Col col = vx::decode(*node, c);
      conform(col, *d, string_view);
      if (check) (*check)(col, *d);
      auto* a = new ArrowArray();
      export_col(std::move(col), a);
      out[i].cols[f] = a;
    }, kinds[task], errs[task], "out of memory while decoding the message");
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
  return out;
}

}  // namespace vx
