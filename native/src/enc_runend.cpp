// vortex.runend: runs of equal values as run ends and one value per run, of any dtype
// (mirrors encodings/_runend.py). Predicates run once per run and expand; take finds each
// row's run by binary search of the ends and takes only those runs' values.
#include "enc_ints.h"

namespace vx {
namespace {

struct RunEndMeta : MetaBase {
  PType ends_ptype = PType::U8;
  uint64_t num_runs = 0;
  uint64_t offset = 0;
};

struct Runs {
  ints::RunMap map;
  std::vector<int64_t> ends;  // every run end (when decoded)
};

// The ends, checked (run_counts): below 2^63, strictly increasing, reaching the node's end.
std::vector<int64_t> checked_ends(const Node& n, Ctx& c) {
  Col e = decode_ints(n.child(0), c, "vortex.runend ends");
  ints::align_values(e);
  std::vector<int64_t> ends(size_t(e.len));
  bool big = false;
  for_each_int(e, [&](uint64_t i, auto v) {
    if constexpr (std::is_same_v<decltype(v), uint64_t>) big |= v >> 63;
    ends[size_t(i)] = int64_t(v);
  });
  if (big) malformed("vortex.runend: a run end does not fit in 63 bits");
  for (size_t i = 1; i < ends.size(); i++)
    if (ends[i] <= ends[i - 1]) malformed("vortex.runend: run ends are not strictly increasing");
  return ends;
}

// (first run, last run + 1, where each run's rows start in the node): run_counts
Runs runs_of(const Node& n, Ctx& c) {
  Runs r;
  r.map.starts.push_back(0);
  if (n.len == 0) return r;
  const auto& m = n.m<RunEndMeta>();
  r.ends = checked_ends(n, c);
  const auto& ends = r.ends;
  u128 start = m.offset, stop = u128(m.offset) + n.len;
  if (ends.empty() || u128(ends.back()) < stop)
    malformed("vortex.runend: runs end at ", ends.empty() ? 0 : ends.back(), ", before row ", uint64_t(stop - 1) + 1,
              " (offset ", m.offset, " + ", n.len, ")");
  // (stop <= ends.back() < 2^63 from here)
  int64_t s0 = int64_t(start), s1 = int64_t(stop);
  uint64_t lo = uint64_t(std::upper_bound(ends.begin(), ends.end(), s0) - ends.begin());
  uint64_t hi = uint64_t(std::upper_bound(ends.begin(), ends.end(), s1 - 1) - ends.begin()) + 1;
  r.map.lo = lo;
  r.map.hi = hi;
  r.map.starts.resize(size_t(hi - lo + 1));
  for (uint64_t j = lo; j < hi; j++) r.map.starts[size_t(j - lo + 1)] = uint64_t(std::min(ends[size_t(j)], s1) - s0);
  return r;
}

class RunEndEnc : public Encoding {
 public:
  RunEndEnc() : Encoding("vortex.runend") {}
  void parse(Node& n, Tree&) const override {
    auto f = proto::parse(n.metadata, "RunEndMetadata");
    PType p = int_ptype_of(f.get_uint(1, 0), "vortex.runend ends");
    if (!ptype_is_unsigned(p)) malformed("vortex.runend ends must be unsigned, not ", ptype_name(p));
    uint64_t runs = f.get_uint(2, 0);
    if (runs > (uint64_t(1) << 32)) malformed("vortex.runend: ", runs, " runs is more than an array can hold");
    RunEndMeta& m = make_meta<RunEndMeta>(n);
    m.ends_ptype = p;
    m.num_runs = runs;
    m.offset = f.get_uint(3, 0);
  }
  void child_specs(Node& n, Tree&) const override {
    if (n.nchildren() != 2) malformed("vortex.runend takes 2 children (ends, values), got ", n.nchildren());
    const auto& m = n.m<RunEndMeta>();
    n.specs.push_back({prim(m.ends_ptype, false), m.num_runs});
    n.specs.push_back({n.dtype, m.num_runs});
  }
  void validate(Node& n, Tree& t) const override {
    const auto& m = n.m<RunEndMeta>();
    if (m.num_runs == 0 && (n.len || m.offset))
      malformed("vortex.runend with no runs cannot hold ", n.len, " rows at offset ", m.offset);
    if (u128(m.offset) + n.len > (u128(1) << 64)) malformed("vortex.runend: offset + length overflows");
    check_decoded(t.limits, sat_mul(n.len, estimate_width(*n.dtype)), cat("vortex.runend of ", n.len, " rows"));
  }

  static Col run_values(const Node& n, const ints::RunMap& r, Ctx& c) {
    Col vals = vx::decode(n.child(1), c);
    if (vals.len < r.hi) malformed("vortex.runend: values decoded to ", vals.len, " rows for ", r.hi, " runs");
    ints::align_values(vals);
    return vals;
  }

  Col decode(const Node& n, Ctx& c) const override {
    Runs r = runs_of(n, c);
    if (r.map.nruns() == 0) return repeat_scalar(Scalar(), *n.dtype, 0, c);  // (no rows)
    return ints::expand_col(run_values(n, r.map, c), r.map, n.len, c);
  }

  bool validity(const Node& n, Buf& out, Ctx& c) const override {
    out = Buf();
    if (!n.dtype->nullable) return true;
    Runs r = runs_of(n, c);
    if (r.map.nruns() == 0) return true;
    Buf v = node_validity(n.child(1), c);
    if (v.empty()) return true;
    Buf e = ints::expand_bits(v.data(), r.map, n.len);
    if (count_ones(e.data(), n.len) != n.len) out = e;
    return true;
  }
  bool int_bounds(const Node& n, i128& lo, i128& hi, Ctx& c) const override {
    const Node& v = n.child(1);
    return v.enc && v.len && v.enc->int_bounds(v, lo, hi, c);
  }
  bool compare(const Node& n, const Lit& v, Op op, Mask& out, Ctx& c) const override {
    Runs r = runs_of(n, c);
    if (r.map.nruns() == 0) {
      out = mask_const(0, false);
      return true;
    }
    out = ints::expand_mask(vx::compare(n.child(1), v, op, c), r.map, n.len);
    return true;
  }
  bool is_in(const Node& n, const std::vector<Lit>& v, Mask& out, Ctx& c) const override {
    Runs r = runs_of(n, c);
    if (r.map.nruns() == 0) {
      out = mask_const(0, false);
      return true;
    }
    out = ints::expand_mask(vx::is_in(n.child(1), v, c), r.map, n.len);
    return true;
  }
  // the run of each (sorted) row by binary search of the ends; each run hit is taken once
  bool take(const Node& n, const uint32_t* idx, size_t k, Col& out, Ctx& c) const override {
    Runs r = runs_of(n, c);  // validates the ends against the node
    std::vector<int64_t> ends = n.len ? std::move(r.ends) : checked_ends(n, c);
    const auto& m = n.m<RunEndMeta>();
    std::vector<uint32_t> runs;  // distinct runs hit, ascending
    Buf map = alloc(4 * k);      // row i -> its run's place in `runs`
    uint32_t* mp = map.mut<uint32_t>();
    auto from = ends.begin();
    for (size_t i = 0; i < k; i++) {
      int64_t x = int64_t(uint64_t(idx[i]) + m.offset);
      from = std::upper_bound(from, ends.end(), x);
      if (from == ends.end()) malformed("vortex.runend: row ", idx[i], " is past the runs");
      uint32_t j = uint32_t(from - ends.begin());
      if (runs.empty() || runs.back() != j) runs.push_back(j);
      mp[i] = uint32_t(runs.size() - 1);
    }
    Col vals = vx::take(n.child(1), runs.data(), runs.size(), c);
    out = runs.size() == k ? std::move(vals) : take_col(vals, mp, k);
    return true;
  }
};
REGISTER_ENCODING(RunEndEnc);

}  // namespace
}  // namespace vx
