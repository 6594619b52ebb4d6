// Sparse evaluation on the CPU (docs/sparse.md): nodes stored as per-key dense blocks of
// their allowed elements (OpNode::compact) and the nodes that read them.
#pragma once

#include "tenex/backend/backend_interface.hpp"

namespace tenex::detail::cpu {

/// Runs a node that is compact or reads a compact operand. Products run as per-key
/// gathered GEMMs; element-wise work over blocks of one layout runs on the blocks; a
/// result written to a tensor is scattered into it with zeros elsewhere. Any other node
/// expands its compact operands, runs `dense`'s kernel and gathers its allowed elements.
template <class T>
KernelCount run_sparse(Backend<T>& dense, const KernelArgs<T>& args);

}  // namespace tenex::detail::cpu
