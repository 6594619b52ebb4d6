// Sparse products on the CPU (docs/sparse.md, "CPU evaluation"): c = alpha a b run key by key
// over the loop sparse_contract_plan.hpp plans, each key's blocks gathered into one GEMM
// (keys with equal offsets that read one block of b joined), or, where a key's product is a
// row of a times a matrix of b, its rows of b swept in the order they lie in b.
#pragma once

#include <optional>
#include <vector>

#include "tenex/backend/backend_interface.hpp"

namespace tenex::detail::cpu::sparse {

/// c = alpha a b over the node's patterns, key by key; nullopt where the per-key loop does not
/// apply (the caller then runs the dense product). A compact operand whose pattern's key is
/// not the loop's is expanded into `expanded_a` or `expanded_b` first.
template <class T>
std::optional<KernelCount> sparse_contract(const ContractParams& params, const KernelArgs<T>& args,
                                           std::vector<T>& expanded_a, std::vector<T>& expanded_b);

}  // namespace tenex::detail::cpu::sparse
