// The flatbuffers builder of the writer (see fbwrite.h): Python's flatbuffers.Builder, step
// by step, so the bytes are the reference's.
#include "fbwrite.h"

#include <cstring>
#include <map>
#include <stdexcept>

namespace vx::fbw {
namespace {

constexpr size_t kMaxBuffer = size_t(1) << 31;  // the builder's 2 GiB limit

class Builder {
 public:
  explicit Builder(size_t initial) : buf_(initial), head_(initial) {}

  // Offset(): distance from the end of the buffer (invariant when the buffer grows)
  uint32_t offset() const { return uint32_t(buf_.size() - head_); }

  void prep(size_t size, size_t additional) {
    if (size > minalign_) minalign_ = size;
    size_t align = (~(buf_.size() - head_ + additional) + 1) & (size - 1);
    size_t needed = align + size + additional;
    while (head_ < needed) grow();
    pad(align);
  }

  template <class T>
  void place(T v) {
    head_ -= sizeof(T);
    std::memcpy(&buf_[head_], &v, sizeof(T));  // little-endian hosts (the core's assumption)
  }

  template <class T>
  void prepend(T v) {
    prep(sizeof(T), 0);
    place<T>(v);
  }

  void prepend_uoffset(uint32_t off) {
    prep(4, 0);
    if (off > offset()) throw std::logic_error("flatbuffers: offset arithmetic error");
    place<uint32_t>(offset() - off + 4);
  }

  void start_vector(size_t elem, size_t n, size_t alignment) {
    vector_n_ = n;
    prep(4, elem * n);
    prep(alignment, elem * n);
  }

  uint32_t end_vector() {
    place<uint32_t>(uint32_t(vector_n_));
    return offset();
  }

  uint32_t bytes(const std::string& x) {
    prep(4, x.size());
    head_ -= x.size();
    if (!x.empty()) std::memcpy(&buf_[head_], x.data(), x.size());
    vector_n_ = x.size();
    return end_vector();
  }

  uint32_t string(const std::string& x) {
    prep(4, x.size() + 1);
    place<uint8_t>(0);
    head_ -= x.size();
    if (!x.empty()) std::memcpy(&buf_[head_], x.data(), x.size());
    vector_n_ = x.size();
    return end_vector();
  }

  uint32_t offsets(const std::vector<uint32_t>& offs) {
    start_vector(4, offs.size(), 4);
    for (size_t i = offs.size(); i-- > 0;) prepend_uoffset(offs[i]);
    return end_vector();
  }

  void start_object(size_t fields) {
    vtable_.assign(fields, 0);
    object_end_ = offset();
  }

  void slot(size_t i) { vtable_[i] = offset(); }

  template <class T>
  void prepend_slot(size_t i, T x, T dflt) {
    if (x != dflt) {
      prepend<T>(x);
      slot(i);
    }
  }

  void prepend_uoffset_slot(size_t i, uint32_t x) {
    if (x != 0) {
      prepend_uoffset(x);
      slot(i);
    }
  }

  // EndObject / WriteVtable
  uint32_t end_object() {
    prep(4, 0);  // PrependSOffsetTRelative(0): a placeholder, overwritten below
    place<int32_t>(int32_t(offset() + 4));
    const uint32_t object = offset();
    std::vector<uint32_t> key;  // the vtable's fields, last first, trailing absent ones trimmed
    bool trim = true;
    for (size_t i = vtable_.size(); i-- > 0;) {
      uint32_t e = vtable_[i];
      if (e == 0) {
        if (trim) continue;
      } else {
        e = object - e;
        trim = false;
      }
      key.push_back(e);
    }
    const uint32_t object_size = object - object_end_;
    key.push_back(object_size);
    auto hit = vtables_.find(key);
    if (hit == vtables_.end()) {
      size_t trailing = 0;
      trim = true;
      for (size_t i = vtable_.size(); i-- > 0;) {
        uint32_t e = vtable_[i], off = 0;
        if (e == 0) {
          if (trim) {
            trailing++;
            continue;
          }
        } else {
          off = object - e;
          trim = false;
        }
        prepend<uint16_t>(voffset(off));
      }
      prepend<uint16_t>(voffset(object_size));
      prepend<uint16_t>(voffset((vtable_.size() - trailing + 2) * 2));
      const size_t start = buf_.size() - object;  // after the vtable: the buffer may have grown
      int32_t rel = int32_t(int64_t(offset()) - int64_t(object));
      std::memcpy(&buf_[start], &rel, 4);
      vtables_.emplace(std::move(key), offset());
    } else {
      head_ = buf_.size() - object;
      int32_t rel = int32_t(int64_t(hit->second) - int64_t(object));
      std::memcpy(&buf_[head_], &rel, 4);
    }
    return object;
  }

  std::string finish(uint32_t root) {
    prep(minalign_, 4);
    prepend_uoffset(root);
    return std::string(reinterpret_cast<const char*>(buf_.data() + head_), buf_.size() - head_);
  }

 private:
  static uint16_t voffset(size_t v) {
    if (v > 0xFFFF) throw std::length_error("flatbuffers: a table too large for its vtable");
    return uint16_t(v);
  }

  void grow() {
    size_t old = buf_.size();
    if (old >= kMaxBuffer) throw std::length_error("flatbuffers: cannot grow buffer beyond 2 gigabytes");
    size_t n = old ? std::min(old * 2, kMaxBuffer) : 1;
    std::vector<uint8_t> bigger(n);
    if (old) std::memcpy(bigger.data() + (n - old), buf_.data(), old);
    buf_.swap(bigger);
    head_ += n - old;
  }

  void pad(size_t n) {
    head_ -= n;
    std::memset(&buf_[head_], 0, n);
  }

  std::vector<uint8_t> buf_;
  size_t head_;
  size_t minalign_ = 1;
  size_t vector_n_ = 0;
  uint32_t object_end_ = 0;
  std::vector<uint32_t> vtable_;
  std::map<std::vector<uint32_t>, uint32_t> vtables_;
};

// _write_stats
std::optional<uint32_t> stats(Builder& b, const StatsIn& s) {
  std::optional<uint32_t> mn, mx, sm;
  if (!s.min.empty()) mn = b.bytes(s.min);
  if (!s.max.empty()) mx = b.bytes(s.max);
  if (!s.sum.empty()) sm = b.bytes(s.sum);
  b.start_object(11);
  const std::pair<size_t, const std::optional<uint64_t>*> counts[] = {
      {8, &s.null_count}, {9, &s.uncompressed_size_in_bytes}, {10, &s.nan_count}};
  for (auto& [slot, v] : counts) {
    if (*v) {
      b.prepend<uint64_t>(**v);
      b.slot(slot);
    }
  }
  if (mn) b.prepend_uoffset_slot(0, *mn);
  if (mx) b.prepend_uoffset_slot(2, *mx);
  if (sm) b.prepend_uoffset_slot(4, *sm);
  const std::pair<size_t, const std::optional<bool>*> flags[] = {
      {5, &s.is_sorted}, {6, &s.is_strict_sorted}, {7, &s.is_constant}};
  for (auto& [slot, v] : flags) {
    if (*v) {
      b.prepend<uint8_t>(**v ? 1 : 0);
      b.slot(slot);
    }
  }
  if (mn) b.prepend_slot<uint8_t>(1, s.min_exact ? 1 : 0, 0);
  if (mx) b.prepend_slot<uint8_t>(3, s.max_exact ? 1 : 0, 0);
  return b.end_object();
}

uint32_t node(Builder& b, const NodeIn& n) {
  std::vector<uint32_t> kids;
  kids.reserve(n.children.size());
  for (const NodeIn& c : n.children) kids.push_back(node(b, c));
  uint32_t kv = b.offsets(kids);
  uint32_t meta = b.bytes(n.metadata);
  b.start_vector(2, n.buffers.size(), 2);
  for (size_t i = n.buffers.size(); i-- > 0;) b.prepend<uint16_t>(n.buffers[i]);
  uint32_t bv = b.end_vector();
  std::optional<uint32_t> st;
  if (n.stats) st = stats(b, *n.stats);
  b.start_object(5);
  if (st) b.prepend_uoffset_slot(4, *st);
  b.prepend_uoffset_slot(3, bv);
  b.prepend_uoffset_slot(2, kv);
  b.prepend_uoffset_slot(1, meta);
  b.prepend_slot<uint16_t>(0, n.encoding, 0);
  return b.end_object();
}

}  // namespace

std::string array_fb(const NodeIn& root, const std::vector<BufferSpec>& buffers) {
  Builder b(1024);
  uint32_t r = node(b, root);
  b.start_vector(8, buffers.size(), 4);
  for (size_t i = buffers.size(); i-- > 0;) {
    const BufferSpec& s = buffers[i];
    b.prep(4, 8);
    b.prepend<uint32_t>(s.length);
    b.prepend<uint8_t>(0);
    b.prepend<uint8_t>(s.alignment_exponent);
    b.prepend<uint16_t>(s.padding);
  }
  uint32_t bufv = b.end_vector();
  b.start_object(2);
  b.prepend_uoffset_slot(1, bufv);
  b.prepend_uoffset_slot(0, r);
  return b.finish(b.end_object());
}

std::string message_fb(const MessageIn& m) {
  Builder b(256);
  std::optional<uint32_t> rec;
  if (m.record) rec = b.bytes(*m.record);
  std::optional<uint32_t> kv_vec;
  if (m.has_metadata || rec) {
    std::vector<uint32_t> kvs;
    auto pair = [&](uint32_t ko, uint32_t vo) {
      b.start_object(2);
      b.prepend_uoffset_slot(0, ko);
      b.prepend_uoffset_slot(1, vo);
      kvs.push_back(b.end_object());
    };
    for (auto& [k, v] : m.metadata) {
      uint32_t ko = b.string(k);
      pair(ko, b.bytes(v));
    }
    if (rec) pair(b.string(m.record_key), *rec);
    kv_vec = b.offsets(kvs);
  }
  if (m.type == 1) {
    std::vector<uint32_t> encs;
    encs.reserve(m.encodings.size());
    for (const std::string& e : m.encodings) encs.push_back(b.string(e));
    uint32_t ev = b.offsets(encs);
    b.start_object(2);
    b.prepend_slot<uint32_t>(0, m.row_count, 0);
    b.prepend_uoffset_slot(1, ev);
  } else if (m.type == 2) {
    b.start_object(1);
    b.prepend_slot<uint8_t>(0, m.alignment_exponent, 0);
  } else {
    b.start_object(0);
  }
  uint32_t hdr = b.end_object();
  b.start_object(kv_vec ? 5 : 4);
  b.prepend<uint64_t>(m.body_size);
  b.slot(3);
  if (kv_vec) b.prepend_uoffset_slot(4, *kv_vec);
  b.prepend_uoffset_slot(2, hdr);
  b.prepend_slot<uint8_t>(1, m.type, 0);
  b.prepend_slot<uint8_t>(0, 0, 0);
  return b.finish(b.end_object());
}

}  // namespace vx::fbw
