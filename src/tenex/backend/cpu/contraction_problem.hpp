// The canonical contraction problem: what contract() knows before it touches data, once the
// modes and extents of its operands are checked.
//
// After modes found in one operand only are summed out (see operand_reduction.hpp) and
// extent-1 modes dropped, every mode is a batch mode (in a, b and c), an m mode (a and c),
// an n mode (b and c) or a k mode (a and b).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"

namespace tenex::detail::cpu::contraction {

enum class Role : unsigned char { batch, m, n, k };
constexpr int kA = 0, kB = 1, kC = 2;

// The canonical problem: distinct modes numbered in order of first appearance (a, b, c),
// extent-1 modes dropped.
struct Problem {
  std::size_t element_size = 8;
  // Complex elements: only GEMM plans (the BLAS's c/zgemm) and the plain loops run them.
  bool complex = false;
  bool beta_zero = true;
  std::size_t threads = 1;
  std::vector<std::size_t> extent;  // per distinct mode
  std::vector<Role> role;
  std::array<std::vector<int>, 3> order;              // each operand's modes, slowest first
  std::array<std::vector<std::ptrdiff_t>, 3> stride;  // per distinct mode; 0 where absent
  std::array<std::size_t, 3> size{1, 1, 1};           // elements of each operand

  std::size_t modes() const { return extent.size(); }
  bool has(int op, int d) const { return stride[op][static_cast<std::size_t>(d)] != 0; }
  int last(int op) const { return order[op].empty() ? -1 : order[op].back(); }
};

// Modes fused into one GEMM dimension, slowest first.
using Group = std::vector<int>;

inline std::size_t extent_of(const Problem& p, const Group& g) {
  std::size_t n = 1;
  for (int d : g) n *= p.extent[static_cast<std::size_t>(d)];
  return n;
}

inline bool contains(const Group& g, int d) { return std::find(g.begin(), g.end(), d) != g.end(); }

// Whether `modes` holds `id`.
inline bool has_mode(const Modes& modes, int id) { return std::find(modes.begin(), modes.end(), id) != modes.end(); }

// What contract() knows before it touches data.
struct Prepared {
  Modes keep_a, keep_b;          // the operands' modes once summed-out modes and diagonals are gone
  Extents a_extents, b_extents;  // their extents
  std::size_t c_size = 1;
  bool empty_sum = false;  // a mode c lacks has extent 0
  Problem problem;
  double flops = 0;  // 2 * products summed
};

// Checks the modes and extents of a contraction (std::invalid_argument names what is wrong)
// and builds its canonical problem.
Prepared prepare(std::size_t element_size, bool beta_zero, const Extents& a_extents, const Modes& a_modes,
                 const Extents& b_extents, const Modes& b_modes, const Modes& c_modes, bool complex = false);

}  // namespace tenex::detail::cpu::contraction
