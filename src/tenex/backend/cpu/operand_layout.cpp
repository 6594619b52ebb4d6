#include "tenex/backend/cpu/operand_layout.hpp"

#include <cstddef>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu::contraction {
namespace {

// Element strides of `layout` in the original operand, and the layout's extents.
void layout_of(const Problem& p, int op, const std::vector<int>& layout, Extents& extents, Strides& strides) {
  extents.clear();
  strides.clear();
  for (int d : layout) {
    extents.push_back(p.extent[static_cast<std::size_t>(d)]);
    strides.push_back(p.stride[op][static_cast<std::size_t>(d)]);
  }
}

}  // namespace

std::vector<int> fresh_layout(const Problem& p, int op, const Group& first, const Group& second,
                              const std::vector<int>& skip, bool flip) {
  std::vector<int> layout;
  for (int d : p.order[op]) {
    if (!contains(first, d) && !contains(second, d) && !contains(skip, d)) layout.push_back(d);
  }
  const int fast = p.last(op);
  const bool first_inner = (fast >= 0 && contains(first, fast)) != flip;
  const Group& outer_group = first_inner ? second : first;
  const Group& inner_group = first_inner ? first : second;
  layout.insert(layout.end(), outer_group.begin(), outer_group.end());
  layout.insert(layout.end(), inner_group.begin(), inner_group.end());
  return layout;
}

std::vector<std::ptrdiff_t> dense_strides(const Problem& p, const std::vector<int>& layout) {
  std::vector<std::ptrdiff_t> s(p.modes(), 0);
  std::ptrdiff_t next = 1;
  for (std::size_t x = layout.size(); x-- > 0;) {
    const auto d = static_cast<std::size_t>(layout[x]);
    s[d] = next;
    next *= static_cast<std::ptrdiff_t>(p.extent[d]);
  }
  return s;
}

std::pair<std::ptrdiff_t, std::ptrdiff_t> fresh_group_strides(const Problem& p, int op, const Group& first,
                                                              const Group& second, bool flip) {
  const int fast = p.last(op);
  const bool first_inner = (fast >= 0 && contains(first, fast)) != flip;
  const auto inner_extent = static_cast<std::ptrdiff_t>(extent_of(p, first_inner ? first : second));
  return first_inner ? std::pair<std::ptrdiff_t, std::ptrdiff_t>{1, inner_extent}
                     : std::pair<std::ptrdiff_t, std::ptrdiff_t>{inner_extent, 1};
}

template <class T>
std::vector<std::ptrdiff_t> pack_operand(const Problem& p, int op, const std::vector<int>& layout, const T* in,
                                         T* out) {
  const std::vector<std::ptrdiff_t> strides = dense_strides(p, layout);
  Extents extents;
  Strides from, to;
  layout_of(p, op, layout, extents, from);
  for (int d : layout) to.push_back(strides[static_cast<std::size_t>(d)]);
  strided_copy(in, from, out, to, extents, T(1), T(0));
  return strides;
}

#define TENEX_INSTANTIATE_PACK_OPERAND(T) \
  template std::vector<std::ptrdiff_t> pack_operand<T>(const Problem&, int, const std::vector<int>&, const T*, T*);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_PACK_OPERAND)
#undef TENEX_INSTANTIATE_PACK_OPERAND

}  // namespace tenex::detail::cpu::contraction
