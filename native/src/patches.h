// Patches: exceptions overlaid on a decoded array (bitpacked, alp, alprd, sparse), the
// native twin of encodings/_patches.py.
#pragma once

#include <optional>

#include "enc_util.h"

namespace vx {

struct PatchesMeta {
  uint64_t len = 0;
  uint64_t offset = 0;
  PType indices_ptype = PType::U8;
  std::optional<uint64_t> chunk_offsets_len;
  std::optional<PType> chunk_offsets_ptype;
  std::optional<uint64_t> offset_within_chunk;

  static PatchesMeta from_fields(const proto::Fields& f, const std::string& name);
  // (dtype, length) of indices, values and (when present) chunk_offsets
  void child_specs(const DType* values_dtype, std::vector<ChildSpec>& out) const;
  size_t nchildren() const { return chunk_offsets_ptype ? 3 : 2; }
};

// Positions of the patches inside [0, n) and which patch each one is (patch_positions):
// indices decoded, checked sorted, shifted by the offset; out-of-range ones dropped.
struct PatchPositions {
  std::vector<uint64_t> pos;
  std::vector<uint64_t> sel;  // empty: every patch (sel[i] == i)
  size_t size() const { return pos.size(); }
  uint64_t which(size_t i) const { return sel.empty() ? i : sel[i]; }
};
PatchPositions patch_positions(const PatchesMeta& m, const Node& indices, uint64_t n, Ctx& c);

// Which of the sorted rows idx[0..k) are patched (patch_hits): their places in idx, `at`,
// and the patch each takes, `which`, from the sorted positions pos[0..npos). A row patched
// twice (a malformed stream) takes its last patch, as the decode's scatter leaves it.
void patch_hits(const uint64_t* pos, size_t npos, const uint32_t* idx, size_t k,
                std::vector<uint64_t>& at, std::vector<uint32_t>& which);

// The patch values as a primitive column (patch values must be primitive).
Col patch_values(const Node& values, Ctx& c);

// Overlay the patches on `values` (a Prim column of `ptype`, written in place: the caller
// owns it) and on its validity. `add` is added to every patch value (a fused FoR).
void apply_patches(Col& values, const PatchesMeta& m, const Node& indices, const Node& pvalues,
                   Ctx& c, uint64_t add = 0);

}  // namespace vx
