// The CPU backend: OpenBLAS GEMM for contractions, LAPACKE for decompositions,
// own multithreaded kernels for permutations and element-wise work.
#pragma once

#include "tenex/backend/backend_interface.hpp"

namespace tenex::detail {

template <class T>
class CpuBackend final : public Backend<T> {
 public:
  std::string_view name() const override { return "cpu"; }
  bool supports(const OpNode& node) const override;
#define TENEX_CPU_METHOD(kind, arity) KernelCount run_##kind(const KernelArgs<T>& args) override;
  TENEX_FOR_EACH_OP_KIND(TENEX_CPU_METHOD)
#undef TENEX_CPU_METHOD
};

extern template class CpuBackend<float>;
extern template class CpuBackend<double>;

}  // namespace tenex::detail
