// Modes only one operand holds, and c lacks, are summed out of that operand before the GEMMs
// (and a repeated mode becomes a diagonal), by cpu::reduce into scratch.
#pragma once

#include <optional>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/scratch.hpp"

namespace tenex::detail::cpu::contraction {

// The unique modes of an operand that the other operand or c holds, in order.
Modes kept_modes(const Modes& modes, const Modes& other, const Modes& c_modes);

// Reduces the operand `in` to the modes `keep` (of extents keep_extents) in `out`, and
// returns out's elements. The work done is added to `counted`.
template <class T>
const T* reduce_operand(const T* in, const Extents& in_extents, const Modes& in_modes, const Modes& keep,
                        const Extents& keep_extents, std::optional<Scratch<T>>& out, KernelCount& counted);

}  // namespace tenex::detail::cpu::contraction
