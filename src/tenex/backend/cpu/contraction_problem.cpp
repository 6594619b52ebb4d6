#include "tenex/backend/cpu/contraction_problem.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "tenex/backend/cpu/operand_reduction.hpp"

namespace tenex::detail::cpu::contraction {

Prepared prepare(std::size_t element_size, bool beta_zero, const Extents& a_extents, const Modes& a_modes,
                 const Extents& b_extents, const Modes& b_modes, const Modes& c_modes, bool complex) {
  if (a_extents.size() != a_modes.size() || b_extents.size() != b_modes.size()) {
    throw std::invalid_argument(
        "contract: an operand's modes and extents differ in number (a: " + std::to_string(a_modes.size()) + " modes, " +
        std::to_string(a_extents.size()) + " extents; b: " + std::to_string(b_modes.size()) + " modes, " +
        std::to_string(b_extents.size()) + " extents)");
  }
  Modes ids;
  Extents id_extents;
  auto add = [&](int id, std::size_t extent) {
    auto it = std::find(ids.begin(), ids.end(), id);
    if (it == ids.end()) {
      ids.push_back(id);
      id_extents.push_back(extent);
    } else if (id_extents[static_cast<std::size_t>(it - ids.begin())] != extent) {
      throw std::invalid_argument("contract: mode " + std::to_string(id) + " has extents " +
                                  std::to_string(id_extents[static_cast<std::size_t>(it - ids.begin())]) + " and " +
                                  std::to_string(extent));
    }
  };
  auto extent_of_id = [&](int id) {
    return id_extents[static_cast<std::size_t>(std::find(ids.begin(), ids.end(), id) - ids.begin())];
  };
  for (std::size_t x = 0; x < a_modes.size(); ++x) add(a_modes[x], a_extents[x]);
  for (std::size_t x = 0; x < b_modes.size(); ++x) add(b_modes[x], b_extents[x]);
  Prepared r;
  Extents c_extents;
  for (int id : c_modes) {
    if (!has_mode(ids, id))
      throw std::invalid_argument("contract: mode " + std::to_string(id) + " of c is in neither a nor b");
    if (std::count(c_modes.begin(), c_modes.end(), id) != 1) {
      throw std::invalid_argument("contract: mode " + std::to_string(id) + " repeats in c");
    }
    c_extents.push_back(extent_of_id(id));
    r.c_size *= c_extents.back();
  }
  // With c non-empty, a zero extent is on a mode c lacks: every sum is empty.
  r.empty_sum = std::find(id_extents.begin(), id_extents.end(), 0) != id_extents.end();
  r.keep_a = kept_modes(a_modes, b_modes, c_modes);
  r.keep_b = kept_modes(b_modes, a_modes, c_modes);
  for (int id : r.keep_a) r.a_extents.push_back(extent_of_id(id));
  for (int id : r.keep_b) r.b_extents.push_back(extent_of_id(id));

  Problem& p = r.problem;
  p.element_size = element_size;
  p.complex = complex;
  p.beta_zero = beta_zero;
  p.threads = static_cast<std::size_t>(omp_get_max_threads());
  Modes distinct;
  const std::array<const Modes*, 3> modes{&r.keep_a, &r.keep_b, &c_modes};
  const std::array<const Extents*, 3> extents{&r.a_extents, &r.b_extents, &c_extents};
  for (int op = 0; op < 3; ++op) {
    for (std::size_t x = 0; x < modes[op]->size(); ++x) {
      const int id = (*modes[op])[x];
      if ((*extents[op])[x] > 1 && !has_mode(distinct, id)) {
        distinct.push_back(id);
        p.extent.push_back((*extents[op])[x]);
      }
    }
  }
  for (int op = 0; op < 3; ++op) {
    p.stride[op].assign(distinct.size(), 0);
    std::ptrdiff_t s = 1;
    for (std::size_t x = modes[op]->size(); x-- > 0;) {
      const std::size_t e = (*extents[op])[x];
      auto it = std::find(distinct.begin(), distinct.end(), (*modes[op])[x]);
      if (it != distinct.end()) p.stride[op][static_cast<std::size_t>(it - distinct.begin())] = s;
      s *= static_cast<std::ptrdiff_t>(e);
      p.size[op] *= e;
    }
    for (int id : *modes[op]) {
      auto it = std::find(distinct.begin(), distinct.end(), id);
      if (it != distinct.end()) p.order[op].push_back(static_cast<int>(it - distinct.begin()));
    }
  }
  double products = static_cast<double>(r.c_size);
  for (std::size_t d = 0; d < distinct.size(); ++d) {
    const auto u = static_cast<int>(d);
    const bool in_a = p.has(kA, u), in_b = p.has(kB, u), in_c = p.has(kC, u);
    p.role.push_back(in_a && in_b ? (in_c ? Role::batch : Role::k) : (in_a ? Role::m : Role::n));
    if (!in_c) products *= static_cast<double>(p.extent[d]);
  }
  r.flops = 2.0 * products;
  return r;
}

}  // namespace tenex::detail::cpu::contraction
