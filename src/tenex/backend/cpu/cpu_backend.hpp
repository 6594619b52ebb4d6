// The CPU backend: OpenBLAS GEMM for contractions, LAPACKE for decompositions, own
// multithreaded kernels for permutations, element-wise work and masks. Its memory is the
// host block cache (tensor/memory.cpp), the one allocator of the CPU.
#pragma once

#include <memory>

#include "tenex/backend/backend_interface.hpp"

namespace tenex::detail {

template <class T>
class CpuBackend final : public Backend<T> {
 public:
  /// Reads the plan file (TENEX_PLAN_FILE), once per process: it holds the trees the order pass
  /// chose in earlier processes, asked for before the passes of this thread's first set.
  CpuBackend();
  std::string_view name() const override { return "cpu"; }
  Device device() const override { return Device::host; }
  BackendCapabilities capabilities() const override {
    return {.host_memory = true,
            .truncated_decompositions = true,
            .storage_kinds = StorageKinds{StorageKind::dense, StorageKind::blocks}};
  }
  bool supports(const OpNode& node, std::string& why) const override;
  KernelCount run_structured(const KernelArgs<T>& args) override;
  Buffer allocate(std::size_t bytes) override;
  View<const T> read(Storage<T>& storage) override;
  void write(Storage<T>& storage, Buffer&& buffer) override;
  std::shared_ptr<const RunNotes> take_run_notes() override;

#define TENEX_CPU_METHOD(kind, arity, Params) \
  KernelCount run_##kind(const Params& params, const KernelArgs<T>& args) override;
  TENEX_FOR_EACH_OP(TENEX_CPU_METHOD)
#undef TENEX_CPU_METHOD
};

extern template class CpuBackend<float>;
extern template class CpuBackend<double>;

}  // namespace tenex::detail
