// Operands laid out afresh for the GEMM (a or b permuted whole, c written to a buffer or a
// tile): their layouts, the strides of fused groups in them, and the packing of an operand
// into scratch.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/contraction_problem.hpp"

namespace tenex::detail::cpu::contraction {

// Layout of an operand laid out afresh: its loop modes (in the operand's own order), then
// its two groups, the one holding the operand's fastest mode innermost (so that the
// permutation keeps its inner rows), else `second` innermost; `flip` swaps the two groups.
std::vector<int> fresh_layout(const Problem& p, int op, const Group& first, const Group& second,
                              const std::vector<int>& skip, bool flip = false);

// Dense row-major strides, per distinct mode, of `layout`.
std::vector<std::ptrdiff_t> dense_strides(const Problem& p, const std::vector<int>& layout);

// Stride of a fused group: that of its fastest mode (1 for an empty group).
inline std::ptrdiff_t group_stride(const std::vector<std::ptrdiff_t>& s, const Group& g) {
  return g.empty() ? 1 : s[static_cast<std::size_t>(g.back())];
}

// The group strides of an operand laid out afresh (see fresh_layout), without building it.
std::pair<std::ptrdiff_t, std::ptrdiff_t> fresh_group_strides(const Problem& p, int op, const Group& first,
                                                              const Group& second, bool flip = false);

// Copies operand `op` (`in`, as the problem lays it out) into `out`, laid out densely as
// `layout`, and returns out's strides per distinct mode.
template <class T>
std::vector<std::ptrdiff_t> pack_operand(const Problem& p, int op, const std::vector<int>& layout, const T* in, T* out);

}  // namespace tenex::detail::cpu::contraction
