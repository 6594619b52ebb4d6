// What the kernels that read operands as they lie share (narrow_kernel.cpp, gett_kernel.cpp):
// tables of the offsets of every index of a group of modes into one operand, and c's update.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tenex/backend/cpu/contraction_problem.hpp"

namespace tenex::detail::cpu::contraction {

using Offsets = std::vector<std::ptrdiff_t>;

// The offsets into operand `op` of every index of `modes` (the first mode slowest).
inline Offsets offsets(const Problem& p, int op, const std::vector<int>& modes) {
  Offsets out{0};
  for (int d : modes) {
    const auto u = static_cast<std::size_t>(d);
    const std::ptrdiff_t stride = p.stride[static_cast<std::size_t>(op)][u];
    Offsets next;
    next.reserve(out.size() * p.extent[u]);
    for (std::ptrdiff_t base : out) {
      for (std::size_t x = 0; x < p.extent[u]; ++x) next.push_back(base + static_cast<std::ptrdiff_t>(x) * stride);
    }
    out = std::move(next);
  }
  return out;
}

// The offsets into two operands of consecutive indices of a group of modes (the first mode
// slowest), a range at a time: for groups whose table would be large (a GETT kernel's N, a
// million values: two tables of 8 MB, newly mapped on every call).
class OffsetWalk {
 public:
  OffsetWalk(const Problem& p, int first, int second, const std::vector<int>& modes) {
    for (int d : modes) {
      const auto u = static_cast<std::size_t>(d);
      extent_.push_back(p.extent[u]);
      first_.push_back(p.stride[static_cast<std::size_t>(first)][u]);
      second_.push_back(p.stride[static_cast<std::size_t>(second)][u]);
    }
  }

  std::size_t modes() const { return extent_.size(); }

  // The offsets of indices [from, from + count) into the first operand (to `first`) and the
  // second (to `second`); `digits` holds modes() values of scratch.
  void fill(std::size_t from, std::size_t count, std::ptrdiff_t* first, std::ptrdiff_t* second,
            std::size_t* digits) const {
    if (count == 0) return;
    if (extent_.empty()) {  // one index, of offset 0
      first[0] = second[0] = 0;
      return;
    }
    std::ptrdiff_t x = 0, y = 0;
    for (std::size_t d = extent_.size(), rest = from; d-- > 0;) {
      digits[d] = rest % extent_[d];
      rest /= extent_[d];
      x += static_cast<std::ptrdiff_t>(digits[d]) * first_[d];
      y += static_cast<std::ptrdiff_t>(digits[d]) * second_[d];
    }
    const std::size_t inner = extent_.size() - 1;
    for (std::size_t i = 0;;) {
      const std::size_t run = std::min(count - i, extent_[inner] - digits[inner]);
      for (std::size_t t = 0; t < run; ++t) {
        first[i + t] = x + static_cast<std::ptrdiff_t>(t) * first_[inner];
        second[i + t] = y + static_cast<std::ptrdiff_t>(t) * second_[inner];
      }
      i += run;
      if (i == count) return;
      // The innermost mode wraps: carried into the slower ones.
      x -= static_cast<std::ptrdiff_t>(digits[inner]) * first_[inner];
      y -= static_cast<std::ptrdiff_t>(digits[inner]) * second_[inner];
      digits[inner] = 0;
      for (std::size_t d = inner; d-- > 0;) {
        x += first_[d];
        y += second_[d];
        if (++digits[d] < extent_[d]) break;
        x -= static_cast<std::ptrdiff_t>(extent_[d]) * first_[d];
        y -= static_cast<std::ptrdiff_t>(extent_[d]) * second_[d];
        digits[d] = 0;
      }
    }
  }

 private:
  std::vector<std::size_t> extent_;
  std::vector<std::ptrdiff_t> first_, second_;
};

// The modes of `op` that play `role`, in op's order.
inline std::vector<int> modes_of(const Problem& p, int op, Role role) {
  std::vector<int> out;
  for (int d : p.order[static_cast<std::size_t>(op)]) {
    if (p.role[static_cast<std::size_t>(d)] == role) out.push_back(d);
  }
  return out;
}

// The role of an operand's free modes.
inline Role free_role(int op) { return op == kA ? Role::m : Role::n; }

// The product of an operand's free extents.
inline std::size_t free_size(const Problem& p, int op) {
  std::size_t n = 1;
  for (int d : modes_of(p, op, free_role(op))) n *= p.extent[static_cast<std::size_t>(d)];
  return n;
}

// Whether operand `op`'s stride-1 mode is a k mode (K lies together in its memory).
inline bool last_is_k(const Problem& p, int op) {
  const int last = p.last(op);
  return last >= 0 && p.role[static_cast<std::size_t>(last)] == Role::k;
}

// The product of the k extents.
inline std::size_t k_size(const Problem& p) {
  std::size_t k = 1;
  for (std::size_t d = 0; d < p.modes(); ++d) {
    if (p.role[d] == Role::k) k *= p.extent[d];
  }
  return k;
}

// c's value from a sum: alpha * value, plus beta * c where beta is not 0 (c is not read then).
template <class T>
void store_value(T& out, T value, T alpha, T beta) {
  out = beta == T(0) ? alpha * value : alpha * value + beta * out;
}

inline std::size_t round_up(std::size_t x, std::size_t step) { return (x + step - 1) / step * step; }

}  // namespace tenex::detail::cpu::contraction
