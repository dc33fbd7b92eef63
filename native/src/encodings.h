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

// vortex.fsst / vortex.onpair (enc_fsst.cpp): the reference's fsst.check_lengths (non-negative
// uncompressed lengths; their sum, refused past 2**62 bytes), check_window (codes_offsets
// non-decreasing inside [0, limit]: (first, last)) and offsets_from_lengths (int32 prefix sums
// of lengths summing to `total`).
uint64_t strings_check_lengths(const Col& ulen, const char* what);
void strings_check_window(const Col& co, uint64_t limit, const char* what, uint64_t* lo, uint64_t* hi);
Buf strings_offsets(const Col& ulen, uint64_t total, const char* what);

}  // namespace vx
