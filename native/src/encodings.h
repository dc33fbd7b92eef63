// Entry points encodings offer each other (fusions across a parent and its child).
#pragma once

#include "kernels.h"

namespace vx {

// fastlanes.bitpacked: unpack (patches applied) with `ref` added to every value, wrapping
// (fastlanes.for over bit-packing in one pass). False when `n` is not bit-packed.
bool bitpacked_decode_plus(const Node& n, uint64_t ref, Ctx& c, Col& out);
// fastlanes.bitpacked: the values at sorted in-range positions, + ref, patched. False when
// `n` is not bit-packed.
bool bitpacked_take_plus(const Node& n, const uint32_t* idx, size_t k, uint64_t ref, Ctx& c, Col& out);

}  // namespace vx
