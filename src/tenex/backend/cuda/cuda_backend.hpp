// The CUDA backend's class and the helpers its files share (cuda_backend.cpp: memory, streams,
// launches and the Einstein and element-wise kernels; cuda_linalg.cpp: the decompositions on
// cuSOLVER). Included by those two files only: it names CUDA's headers.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tenex/backend/backend_interface.hpp"
#include "tenex/backend/cuda/check.hpp"
#include "tenex/backend/cuda/codegen.hpp"
#include "tenex/backend/cuda/contraction_layout.hpp"
#include "tenex/backend/cuda/device.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail::cuda_impl {


using cuda::Library;
using Labels = std::vector<std::string>;
using Extents = std::vector<std::size_t>;

inline void release_device(void* data, std::size_t bytes, void*) noexcept { cuda::allocator().free(data, bytes); }

inline void download(void* host, const void* device, std::size_t bytes) {
  if (bytes == 0) return;
  // The legacy stream waits for the backends' (blocking) streams: the result is complete.
  TENEX_CUDA_CALL(runtime, cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  cuda::count_to_host(bytes);
}

inline Buffer device_buffer(std::size_t bytes) {
  return Buffer(cuda::allocator().allocate(bytes), bytes, Device::cuda, &release_device);
}

inline std::vector<long long> row_major_strides(const Extents& extents) {
  std::vector<long long> s(extents.size(), 1);
  for (std::size_t d = extents.size(); d-- > 1;) s[d - 1] = s[d] * static_cast<long long>(extents[d]);
  return s;
}

// The labels m0, m1, ... of a rank's modes. Appended rather than written "m" + std::to_string(d):
// GCC 12 inlines that operator+ into a false -Wrestrict warning (GCC bug 105329).
inline Labels mode_labels(std::size_t rank) {
  Labels labels(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    labels[d] = 'm';
    labels[d] += std::to_string(d);
  }
  return labels;
}

inline long long total(const Extents& extents) {
  long long n = 1;
  for (std::size_t e : extents) n *= static_cast<long long>(e);
  return n;
}

/// One operand of a strided kernel: where it lives and how its labels are laid out.
template <class T>
struct Operand {
  const T* data;
  Labels labels;
  Extents extents;
  long long offset = 0;
};

template <class T>
class CudaBackend final : public Backend<T> {
 public:
  CudaBackend() = default;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;
  ~CudaBackend() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    cuda::return_lanes(lanes_);
  }

  std::string_view name() const override { return "cuda"; }
  Device device() const override { return Device::cuda; }
  bool supports(const OpNode& node, std::string& why) const override;
  Buffer allocate(std::size_t bytes) override { return device_buffer(bytes); }
  View<const T> read(Storage<T>& storage) override;
  void write(Storage<T>& storage, Buffer&& buffer) override { storage.adopt_device(std::move(buffer), &download); }
  void to_host(void* host, const void* data, std::size_t bytes) override;
  void from_host(void* data, const void* host, std::size_t bytes) override;
  void begin_set() override;
  void end_set(RunStats& stats) noexcept override;

  std::string describe(const OpNode& node) const override;

  // The kinds it runs; the others (inputs, which the executor reads, and what supports()
  // declines) keep the interface's default.
#define TENEX_CUDA_METHOD(kind, Params) \
  KernelCount run_##kind(const Params& params, const KernelArgs<T>& args) override;
  TENEX_CUDA_METHOD(output, OutputParams)
  TENEX_CUDA_METHOD(reduce, ReduceParams)
  TENEX_CUDA_METHOD(contract, ContractParams)
  TENEX_CUDA_METHOD(add, AddParams)
  TENEX_CUDA_METHOD(subtract, SubtractParams)
  TENEX_CUDA_METHOD(divide, DivideParams)
  TENEX_CUDA_METHOD(scale, ScaleParams)
  TENEX_CUDA_METHOD(cholesky, CholeskyParams)
  TENEX_CUDA_METHOD(eigen_solve, EigenSolveParams)
  TENEX_CUDA_METHOD(qr, QrParams)
  TENEX_CUDA_METHOD(svd, SvdParams)
  TENEX_CUDA_METHOD(factor, FactorParams)
  TENEX_CUDA_METHOD(slice, SliceParams)
  TENEX_CUDA_METHOD(chip, ChipParams)
  TENEX_CUDA_METHOD(pow, PowParams)
  TENEX_CUDA_METHOD(mask, MaskParams)
  TENEX_CUDA_METHOD(fused, FusedParams)
#undef TENEX_CUDA_METHOD

 private:
  static constexpr bool is_double = std::is_same_v<T, double>;

  // ---- streams: a node runs on its first operand's stream, else the next one ------------
  cuda::Lanes& lanes() {
    if (!lanes_) lanes_ = cuda::borrow_lanes();
    return *lanes_;
  }
  cudaStream_t stream() { return static_cast<cudaStream_t>(lanes().streams[lane_]); }
  cublasHandle_t blas() { return static_cast<cublasHandle_t>(lanes().blas[lane_]); }
  cusolverDnHandle_t solver() { return static_cast<cusolverDnHandle_t>(lanes().solver[lane_]); }
  cudaEvent_t next_event();
  /// Picks the node's stream and makes it wait for the operands made on other streams.
  void enter_node(const KernelArgs<T>& args);
  /// Records that `data` is ready once the node's work on its stream is done.
  void leave_node(const void* data);

  // ---- kernels ------------------------------------------------------------------------------
  /// out (out_labels, out_extents, contiguous) = reduce over the other labels of the operands
  /// of program(loads); accumulate: out = value + beta * out.
  void strided(const std::vector<FusedInstr>& program, ReduceOp reduce, const std::vector<Operand<T>>& operands, T* out,
               const Labels& out_labels, const Extents& out_extents, double beta = 0.0);
  /// out(out_labels) = alpha * in(in_labels) summed over the labels out lacks (+ beta * out):
  /// permutations through the tiled kernel, the rest through the strided one.
  void rearrange(const Operand<T>& in, T* out, const Labels& out_labels, const Extents& out_extents, double alpha = 1.0,
                 double beta = 0.0);
  void launch(const void* kernel, dim3 grid, dim3 block, void* argument);
  void launch_utility(const char* entry, long long work, void** arguments);
  void copy(T* to, const T* from, std::size_t elements);
  /// c = alpha * a b + beta * c as `plan` lays them out: one cuBLAS (strided batched) GEMM.
  void gemm(const cuda::GemmPlan& plan, const T* a, const T* b, T* c, T alpha, T beta);
  /// The device's info value of a cuSOLVER call, checked as LAPACK's is.
  void check_info(const int* info, const char* routine, std::size_t n);

  cuda::Lanes* lanes_ = nullptr;
  std::size_t lane_ = 0, next_lane_ = 0;
  struct Made {
    std::size_t lane;
    cudaEvent_t event;
  };
  std::unordered_map<const void*, Made> made_;  // this set's values: where they were made
  std::vector<cudaEvent_t> events_;
  std::size_t events_used_ = 0;
  cuda::Traffic traffic_at_begin_;
};

// ---- cuBLAS / cuSOLVER in both precisions -------------------------------------------------

inline cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const float* alpha, const float* a, int lda, long long sa, const float* b, int ldb,
                                   long long sb, const float* beta, float* c, int ldc, long long sc, int batch) {
  if (batch == 1) return cublasSgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}
inline cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const double* alpha, const double* a, int lda, long long sa, const double* b,
                                   int ldb, long long sb, const double* beta, double* c, int ldc, long long sc,
                                   int batch) {
  if (batch == 1) return cublasDgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return cublasDgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}

#define TENEX_SOLVER_PAIR(name, float_call, double_call) \
  template <class... A>                                  \
  inline cusolverStatus_t name(float*, A... a) {         \
    return float_call(a...);                             \
  }                                                      \
  template <class... A>                                  \
  cusolverStatus_t name(double*, A... a) {               \
    return double_call(a...);                            \
  }
TENEX_SOLVER_PAIR(potrf_size, cusolverDnSpotrf_bufferSize, cusolverDnDpotrf_bufferSize)
TENEX_SOLVER_PAIR(potrf, cusolverDnSpotrf, cusolverDnDpotrf)
TENEX_SOLVER_PAIR(syevd_size, cusolverDnSsyevd_bufferSize, cusolverDnDsyevd_bufferSize)
TENEX_SOLVER_PAIR(syevd, cusolverDnSsyevd, cusolverDnDsyevd)
TENEX_SOLVER_PAIR(sygvd_size, cusolverDnSsygvd_bufferSize, cusolverDnDsygvd_bufferSize)
TENEX_SOLVER_PAIR(sygvd, cusolverDnSsygvd, cusolverDnDsygvd)
TENEX_SOLVER_PAIR(geqrf_size, cusolverDnSgeqrf_bufferSize, cusolverDnDgeqrf_bufferSize)
TENEX_SOLVER_PAIR(geqrf, cusolverDnSgeqrf, cusolverDnDgeqrf)
TENEX_SOLVER_PAIR(orgqr_size, cusolverDnSorgqr_bufferSize, cusolverDnDorgqr_bufferSize)
TENEX_SOLVER_PAIR(orgqr, cusolverDnSorgqr, cusolverDnDorgqr)
TENEX_SOLVER_PAIR(gesvd_size, cusolverDnSgesvd_bufferSize, cusolverDnDgesvd_bufferSize)
TENEX_SOLVER_PAIR(gesvd, cusolverDnSgesvd, cusolverDnDgesvd)
#undef TENEX_SOLVER_PAIR

/// A device workspace of `elements` T (at least one) and the info integer.
template <class T>
struct Workspace {
  Buffer buffer;
  T* data() const { return static_cast<T*>(buffer.data()); }
  int* info() const { return reinterpret_cast<int*>(static_cast<char*>(buffer.data()) + info_at); }
  std::size_t info_at = 0;
  explicit Workspace(long long elements) {
    info_at = (static_cast<std::size_t>(std::max(elements, 1LL)) * sizeof(T) + 15) / 16 * 16;
    buffer = device_buffer(info_at + 16);
  }
};

template <class T>
Buffer scratch(std::size_t elements) {
  return device_buffer(std::max<std::size_t>(elements, 1) * sizeof(T));
}

}  // namespace tenex::detail::cuda_impl
