#include "tenex/backend/cpu/operand_reduction.hpp"

#include <cstddef>
#include <optional>

#include "tenex/backend/cpu/contraction_problem.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu::contraction {

Modes kept_modes(const Modes& modes, const Modes& other, const Modes& c_modes) {
  Modes kept;
  for (int id : modes) {
    if (!has_mode(kept, id) && (has_mode(other, id) || has_mode(c_modes, id))) kept.push_back(id);
  }
  return kept;
}

template <class T>
const T* reduce_operand(const T* in, const Extents& in_extents, const Modes& in_modes, const Modes& keep,
                        const Extents& keep_extents, std::optional<Scratch<T>>& out, KernelCount& counted) {
  std::size_t n = 1;
  for (std::size_t e : keep_extents) n *= e;
  out.emplace(n);
  const KernelCount k = reduce(in, in_extents, in_modes, out->get(), keep, T(1));
  counted.flops += k.flops;
  counted.calls += k.calls;
  return out->get();
}

#define TENEX_INSTANTIATE_REDUCE_OPERAND(T)                                                                 \
  template const T* reduce_operand<T>(const T*, const Extents&, const Modes&, const Modes&, const Extents&, \
                                      std::optional<Scratch<T>>&, KernelCount&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_REDUCE_OPERAND)
#undef TENEX_INSTANTIATE_REDUCE_OPERAND

}  // namespace tenex::detail::cpu::contraction
