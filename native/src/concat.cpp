// Joining decoded columns end to end (vortex.chunked's decode and take), empty columns of any
// dtype, and the bitmap builder they use.
#include "enc_util.h"

namespace vx {

void BitBuilder::append(const uint8_t* src, uint64_t n) {
  if (!n) return;
  uint8_t* d = buf.ptr + (pos >> 3);
  unsigned sh = unsigned(pos & 7);
  uint64_t nb = (n + 7) >> 3;
  unsigned tail = unsigned(n & 7);
  if (sh == 0) {
    std::memcpy(d, src, size_t(nb));
    if (tail) d[nb - 1] &= uint8_t((1u << tail) - 1);  // later appends OR into the rest
  } else {
    for (uint64_t k = 0; k < nb; k++) {
      unsigned b = src[k];
      if (k + 1 == nb && tail) b &= (1u << tail) - 1;
      d[k] |= uint8_t(b << sh);
      unsigned hi = b >> (8 - sh);
      if (hi) d[k + 1] |= uint8_t(hi);  // (only bits below pos + n: inside the buffer)
    }
  }
  pos += n;
}

void BitBuilder::append_ones(uint64_t n) {
  uint64_t end = pos + n;
  while (pos < end && (pos & 7)) set_bit(buf.ptr, pos++);
  if (end - pos >= 8) {
    uint64_t bytes = (end - pos) >> 3;
    std::memset(buf.ptr + (pos >> 3), 0xFF, size_t(bytes));
    pos += bytes << 3;
  }
  while (pos < end) set_bit(buf.ptr, pos++);
}

void check_ints(const Col& col, const std::string& what, const DType& d) {
  if (col.layout != Layout::Prim || !ptype_is_int(col.ptype))
    malformed(what, " must be integers, not ", dtype_repr(d));
  if (!col.validity.empty() && count_ones(col.validity.data(), col.len) != col.len)
    malformed(what, " contain nulls");
}

Col empty_col(const DType& d, Ctx& c) {
  const DType& s = d.storage();
  Col out;
  switch (s.kind) {
    case Kind::Null: out.layout = Layout::Null; break;
    case Kind::Bool: out.layout = Layout::Bool; break;
    case Kind::Primitive: out.layout = Layout::Prim; out.ptype = s.ptype; break;
    case Kind::Decimal:
      out.layout = Layout::Decimal;
      out.dec_width = s.precision <= 38 ? 16 : 32;
      break;
    case Kind::Utf8:
    case Kind::Binary:
      if (c.string_view) {
        out.layout = Layout::View;
      } else {
        out.layout = Layout::String;
        out.offsets = alloc_zeroed(4);
      }
      break;
    case Kind::Struct:
      out.layout = Layout::Struct;
      for (const DType* f : s.children) out.children.push_back(empty_col(*f, c));
      break;
    case Kind::List:
      out.layout = Layout::List;
      out.offsets = alloc_zeroed(4);
      out.children.push_back(empty_col(*s.children[0], c));
      break;
    case Kind::FixedSizeList:
      out.layout = Layout::FSL;
      out.fsl_size = s.size;
      out.children.push_back(empty_col(*s.children[0], c));
      break;
    default: unsupported("no column layout for ", dtype_repr(d));
  }
  return out;
}

namespace {

[[noreturn]] void mismatch() { malformed("vortex.chunked: chunks decoded to different layouts"); }

// the joined validity of parts (empty when no part has nulls)
void concat_validity(const std::vector<Col>& parts, uint64_t total, Col& out) {
  bool any = false;
  for (const Col& p : parts)
    if (p.layout == Layout::Null ? p.len > 0 : !p.validity.empty()) any = true;
  if (!any || out.layout == Layout::Null) return;
  BitBuilder b(total);
  for (const Col& p : parts) {
    if (p.validity.empty()) b.append_ones(p.len);
    else b.append(p.validity.data(), p.len);
  }
  out.validity = b.buf;
  out.null_count = -1;
  normalize_validity(out);
}

}  // namespace

Col slice_col(const Col& c, uint64_t off, uint64_t n) {
  if (off == 0 && n == c.len) return c;
  Col out = shaped_like(c, n);
  if (c.layout == Layout::Null) {
    out.null_count = int64_t(n);
    return out;
  }
  if (!c.validity.empty()) {
    out.validity = bitmap_from(c.validity.data(), off, n);
    out.null_count = -1;
    normalize_validity(out);
  }
  switch (c.layout) {
    case Layout::Bool: out.values = bitmap_from(c.values.data(), off, n); break;
    case Layout::Prim:
    case Layout::Decimal: {
      size_t w = c.layout == Layout::Prim ? size_t(ptype_width(c.ptype)) : size_t(c.dec_width);
      out.values = c.values.slice(size_t(off) * w, size_t(n) * w);
      break;
    }
    case Layout::String:  // (Arrow offsets need not start at 0)
    case Layout::List:
      out.offsets = c.offsets.slice(size_t(4 * off), size_t(4 * (n + 1)));
      out.values = c.values;
      out.children = c.children;
      break;
    case Layout::View:
      out.values = c.values.slice(size_t(16 * off), size_t(16 * n));
      out.data = c.data;
      break;
    case Layout::Struct:
      for (const Col& k : c.children) out.children.push_back(slice_col(k, off, n));
      break;
    case Layout::FSL:
      out.children.push_back(slice_col(c.children[0], off * c.fsl_size, n * c.fsl_size));
      break;
    default: break;
  }
  return out;
}

Col concat_cols(std::vector<Col>& parts) {
  if (parts.empty()) malformed("vortex.chunked: nothing to join");
  if (parts.size() == 1) return parts[0];
  const Col& f = parts[0];
  uint64_t total = 0;
  for (const Col& p : parts) {
    if (p.layout != f.layout || p.ptype != f.ptype || p.dec_width != f.dec_width || p.fsl_size != f.fsl_size ||
        p.children.size() != f.children.size())
      mismatch();
    total += p.len;
  }
  Col out = shaped_like(f, total);
  switch (f.layout) {
    case Layout::Null: out.null_count = int64_t(total); return out;
    case Layout::Bool: {
      BitBuilder b(total);
      for (const Col& p : parts) b.append(p.values.data(), p.len);
      out.values = b.buf;
      break;
    }
    case Layout::Prim:
    case Layout::Decimal: {
      size_t w = f.layout == Layout::Prim ? size_t(ptype_width(f.ptype)) : size_t(f.dec_width);
      out.values = alloc(size_t(total) * w);
      size_t at = 0;
      for (const Col& p : parts) {
        size_t nb = size_t(p.len) * w;
        if (nb) std::memcpy(out.values.ptr + at, p.values.data(), nb);
        at += nb;
      }
      break;
    }
    case Layout::String: {
      uint64_t bytes = 0;
      for (const Col& p : parts) {
        const int32_t* o = p.offsets.as<int32_t>();
        bytes += uint64_t(o[p.len] - o[0]);
      }
      if (bytes > 0x7FFFFFFF) unsupported("vortex.chunked: more than 2 GiB of strings in one array");
      out.offsets = alloc(size_t(4 * (total + 1)));
      out.values = alloc(size_t(bytes));
      int32_t* oo = out.offsets.mut<int32_t>();
      int32_t pos = 0;
      uint64_t row = 0;
      oo[0] = 0;
      for (const Col& p : parts) {
        const int32_t* o = p.offsets.as<int32_t>();
        int32_t first = o[0], span = o[p.len] - o[0];
        if (span) std::memcpy(out.values.ptr + pos, p.values.data() + first, size_t(span));
        int32_t shift = pos - first;
        for (uint64_t i = 1; i <= p.len; i++) oo[row + i] = o[i] + shift;
        row += p.len;
        pos += span;
      }
      break;
    }
    case Layout::View: {
      out.values = alloc(size_t(16 * total));
      uint8_t* v = out.values.ptr;
      for (const Col& p : parts) {
        uint64_t base = out.data.size();
        if (base > 0xFFFFFFFFu) unsupported("vortex.chunked: too many string buffers");
        if (p.len) std::memcpy(v, p.values.data(), size_t(16 * p.len));  // (an empty part may have no buffer)
        if (base)
          for (uint64_t i = 0; i < p.len; i++) {
            uint8_t* w = v + 16 * i;
            if (load<uint32_t>(w) > 12) {
              uint32_t bi = load<uint32_t>(w + 8) + uint32_t(base);
              std::memcpy(w + 8, &bi, 4);
            }
          }
        for (const Buf& d : p.data) out.data.push_back(d);
        v += 16 * p.len;
      }
      break;
    }
    case Layout::Struct: {
      std::vector<Col> kid(parts.size());
      for (size_t k = 0; k < f.children.size(); k++) {
        for (size_t i = 0; i < parts.size(); i++) kid[i] = parts[i].children[k];
        out.children.push_back(concat_cols(kid));
      }
      break;
    }
    case Layout::List: {
      // each part's referenced elements, joined; offsets re-based onto them
      uint64_t elems = 0;
      for (const Col& p : parts) {
        const int32_t* o = p.offsets.as<int32_t>();
        elems += uint64_t(o[p.len] - o[0]);
      }
      if (elems > 0x7FFFFFFF) unsupported("vortex.chunked: more than 2^31 list elements in one array");
      out.offsets = alloc(size_t(4 * (total + 1)));
      int32_t* oo = out.offsets.mut<int32_t>();
      uint64_t row = 0;
      int32_t base = 0;
      oo[0] = 0;
      std::vector<Col> kid;
      kid.reserve(parts.size());
      for (const Col& p : parts) {
        const int32_t* o = p.offsets.as<int32_t>();
        int32_t first = o[0], span = o[p.len] - o[0];
        int32_t shift = base - first;
        for (uint64_t i = 1; i <= p.len; i++) oo[row + i] = o[i] + shift;
        row += p.len;
        base += span;
        kid.push_back(slice_col(p.children[0], uint64_t(first), uint64_t(span)));
      }
      out.children.push_back(concat_cols(kid));
      break;
    }
    case Layout::FSL: {
      std::vector<Col> kid;
      kid.reserve(parts.size());
      for (const Col& p : parts) kid.push_back(p.children[0]);
      out.children.push_back(concat_cols(kid));
      break;
    }
  }
  concat_validity(parts, total, out);
  return out;
}

}  // namespace vx
