#include "dtype.h"

namespace vx {

const char* ptype_name(PType p) {
  static const char* names[] = {"u8", "u16", "u32", "u64", "i8", "i16",
                                "i32", "i64", "f16", "f32", "f64"};
  return uint8_t(p) <= 10 ? names[int(p)] : "?";
}

bool dtype_eq(const DType& a, const DType& b) {
  if (&a == &b) return true;
  if (a.kind != b.kind || a.nullable != b.nullable) return false;
  switch (a.kind) {
    case Kind::Primitive: return a.ptype == b.ptype;
    case Kind::Decimal: return a.precision == b.precision && a.scale == b.scale;
    case Kind::FixedSizeList:
      if (a.size != b.size) return false;
      break;
    case Kind::Extension:
      if (a.ext_id != b.ext_id || a.ext_meta != b.ext_meta) return false;
      break;
    case Kind::Struct:
      if (a.names != b.names) return false;
      break;
    default: break;
  }
  if (a.children.size() != b.children.size()) return false;
  for (size_t i = 0; i < a.children.size(); i++)
    if (!dtype_eq(*a.children[i], *b.children[i])) return false;
  return true;
}

std::string dtype_repr(const DType& d) {
  const char* q = d.nullable ? "?" : "";
  switch (d.kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return cat("bool", q);
    case Kind::Primitive: return cat(ptype_name(d.ptype), q);
    case Kind::Decimal: return cat("decimal(", int(d.precision), ",", int(d.scale), ")", q);
    case Kind::Utf8: return cat("utf8", q);
    case Kind::Binary: return cat("binary", q);
    case Kind::Struct: {
      std::string s = "Struct({";
      for (size_t i = 0; i < d.children.size(); i++) {
        if (i) s += ", ";
        s += d.names[i];
        s += ": ";
        s += dtype_repr(*d.children[i]);
      }
      s += "})";
      s += q;
      return s;
    }
    case Kind::List: return cat("list(", dtype_repr(*d.children[0]), ")", q);
    case Kind::FixedSizeList:
      return cat("fixed_size_list(", dtype_repr(*d.children[0]), ", ", d.size, ")", q);
    case Kind::Extension: {
      static const char* units[] = {"ns", "us", "ms", "s", "D"};
      std::string extra;
      if (d.ext != ExtKind::Other && d.unit <= kUnitD) extra = cat(", unit=", units[d.unit]);
      return cat("Extension(", d.ext_id, ", ", dtype_repr(*d.children[0]), extra, ")");
    }
  }
  return "?";
}

uint64_t estimate_width(const DType& d) {
  switch (d.kind) {
    case Kind::Extension: return estimate_width(*d.children[0]);
    case Kind::Primitive: return uint64_t(ptype_width(d.ptype));
    case Kind::Decimal: return 16;
    case Kind::Struct: {
      uint64_t w = 1;
      for (auto* c : d.children) w = sat_add(w, estimate_width(*c));
      return w;
    }
    case Kind::FixedSizeList: return sat_add(sat_mul(d.size, estimate_width(*d.children[0])), 1);
    case Kind::Utf8:
    case Kind::Binary:
    case Kind::List: return 4;
    default: return 1;
  }
}

namespace {

struct Statics {
  DType prims[kNumPTypes][2];
  DType bools[2];
  Statics() {
    for (int p = 0; p < kNumPTypes; p++)
      for (int n = 0; n < 2; n++) {
        prims[p][n].kind = Kind::Primitive;
        prims[p][n].ptype = PType(p);
        prims[p][n].nullable = n != 0;
      }
    for (int n = 0; n < 2; n++) {
      bools[n].kind = Kind::Bool;
      bools[n].nullable = n != 0;
    }
  }
};
const Statics& statics() {
  static const Statics* s = new Statics();  // never destroyed: decoders may run during exit
  return *s;
}

struct Reader {
  Bytes b;
  size_t pos = 0;
  uint8_t u8() {
    if (pos + 1 > b.n) malformed("dtype program: truncated");
    return b.p[pos++];
  }
  uint32_t u32() {
    if (pos + 4 > b.n) malformed("dtype program: truncated");
    uint32_t v = load<uint32_t>(b.p + pos);
    pos += 4;
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    if (pos + n > b.n) malformed("dtype program: truncated");
    std::string s(reinterpret_cast<const char*>(b.p + pos), n);
    pos += n;
    return s;
  }
};

const DType* parse_node(Reader& r, DTypeArena& a, int depth) {
  if (depth > 1000) malformed("dtype program: too deep");
  DType* d = a.make();
  uint8_t k = r.u8();
  if (k < 1 || k > 10) malformed("dtype program: bad kind ", int(k));
  d->kind = Kind(k);
  d->nullable = r.u8() != 0;
  switch (d->kind) {
    case Kind::Primitive: {
      uint8_t p = r.u8();
      if (!ptype_valid(p)) malformed("dtype program: bad ptype");
      d->ptype = PType(p);
      break;
    }
    case Kind::Decimal:
      d->precision = r.u8();
      d->scale = int8_t(r.u8());
      break;
    case Kind::Struct: {
      uint32_t n = r.u32();
      if (n > r.b.n) malformed("dtype program: bad field count");
      for (uint32_t i = 0; i < n; i++) d->names.push_back(r.str());
      for (uint32_t i = 0; i < n; i++) d->children.push_back(parse_node(r, a, depth + 1));
      break;
    }
    case Kind::List: d->children.push_back(parse_node(r, a, depth + 1)); break;
    case Kind::FixedSizeList:
      d->size = r.u32();
      d->children.push_back(parse_node(r, a, depth + 1));
      break;
    case Kind::Extension: {
      d->ext_id = r.str();
      d->ext_meta = r.str();
      d->children.push_back(parse_node(r, a, depth + 1));
      d->nullable = d->children[0]->nullable;
      if (d->ext_id == "vortex.timestamp") d->ext = ExtKind::Timestamp;
      else if (d->ext_id == "vortex.date") d->ext = ExtKind::Date;
      else if (d->ext_id == "vortex.time") d->ext = ExtKind::Time;
      if (d->ext != ExtKind::Other && !d->ext_meta.empty() && uint8_t(d->ext_meta[0]) <= kUnitD)
        d->unit = uint8_t(d->ext_meta[0]);
      break;
    }
    default: break;
  }
  return d;
}

}  // namespace

const DType* prim(PType p, bool nullable) { return &statics().prims[int(p)][nullable ? 1 : 0]; }
const DType* bool_dtype(bool nullable) { return &statics().bools[nullable ? 1 : 0]; }

const DType* DTypeArena::with_nullable(const DType* d, bool nullable) {
  if (d->nullable == nullable) return d;
  if (d->kind == Kind::Primitive) return prim(d->ptype, nullable);
  if (d->kind == Kind::Bool) return bool_dtype(nullable);
  DType* c = make();
  *c = *d;
  c->nullable = nullable;
  if (c->kind == Kind::Extension) c->children[0] = with_nullable(d->children[0], nullable);
  return c;
}

const DType* parse_dtype_program(Bytes prog, DTypeArena& arena) {
  Reader r{prog};
  const DType* d = parse_node(r, arena, 0);
  if (r.pos != prog.n) malformed("dtype program: trailing bytes");
  return d;
}

}  // namespace vx
