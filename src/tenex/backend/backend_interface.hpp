// Backend: the small interface every backend implements, one method per op kind.
//
// Derived backends must handle every kind (a strict visitor): a new kind in
// TENEX_FOR_EACH_OP_KIND is a compile error in every backend until handled.
// supports() is asked for every node before anything runs.
#pragma once

#include <string_view>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/graph/op_graph.hpp"

namespace tenex::detail {

using cpu::KernelCount;

template <class T>
struct KernelArgs {
  const OpNode& node;
  std::vector<const OpNode*> operand_nodes;
  std::vector<const T*> operands;
  T* out;  // node.elements elements (output: the target's storage)
};

template <class T>
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// Whether this backend can run `node`.
  virtual bool supports(const OpNode& node) const = 0;

#define TENEX_BACKEND_METHOD(kind, arity) virtual KernelCount run_##kind(const KernelArgs<T>& args) = 0;
  TENEX_FOR_EACH_OP_KIND(TENEX_BACKEND_METHOD)
#undef TENEX_BACKEND_METHOD

  KernelCount run(const KernelArgs<T>& args) {
    switch (args.node.kind) {
#define TENEX_BACKEND_DISPATCH(kind, arity) \
  case OpKind::kind:                        \
    return run_##kind(args);
      TENEX_FOR_EACH_OP_KIND(TENEX_BACKEND_DISPATCH)
#undef TENEX_BACKEND_DISPATCH
    }
    return {};
  }
};

}  // namespace tenex::detail
