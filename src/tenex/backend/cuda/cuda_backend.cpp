// The CUDA backend: cuBLAS for contractions, cuSOLVER for decompositions, own kernels
// (NVRTC, codegen.hpp) for everything else, device memory from the process's caching
// allocator (allocator.hpp). What supports() declines (tenex::map's callables, the matrix
// functions inverse, solve and spd_pow) the executor runs on the CPU backend, its data moved.
// The plugin entry (at the end) is what libtenex_cuda.so exports. docs/cuda.md describes the design.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tenex/backend/cuda/cuda_backend.hpp"

#include "tenex/backend/backend_interface.hpp"
#include "tenex/backend/cuda/check.hpp"
#include "tenex/backend/cuda/codegen.hpp"
#include "tenex/backend/cuda/contraction_layout.hpp"
#include "tenex/backend/cuda/device.hpp"
#include "tenex/backend/plugin.hpp"
#include "tenex/config.hpp"
#include "tenex/error.hpp"
#include "tenex/labels.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail::cuda_impl {

// ---- supports ---------------------------------------------------------------------------------

template <class T>
bool CudaBackend<T>::supports(const OpNode& node, std::string& why) const {
  if (node.dtype != DType::f32 && node.dtype != DType::f64) {
    why = "the CUDA backend evaluates float and double tensors only";
    return false;
  }
  if (node.kind == OpKind::fused) {
    why = cuda::unsupported_program(node.get<FusedParams>().program, 0);
    return why.empty();
  }
  if (node.kind == OpKind::inverse || node.kind == OpKind::solve || node.kind == OpKind::spd_pow) {
    why = "the matrix functions (inverse, solve, pow of a symmetric matrix) have no device kernels yet";
    return false;
  }
  return true;
}

// ---- memory and streams -------------------------------------------------------------------

template <class T>
View<const T> CudaBackend<T>::read(Storage<T>& storage) {
  const std::size_t n = storage.shape().size();
  if (n == 0) return View<const T>{nullptr, 0, Device::cuda};
  std::lock_guard<std::mutex> lock(storage.residency_mutex());
  if (!storage.device_copy_valid() || !storage.device_copy()) {
    const std::size_t bytes = n * sizeof(T);
    Buffer copy;
    try {
      copy = device_buffer(bytes);
    } catch (const std::bad_alloc&) {
      throw BackendError("tenex: out of device memory: copying a tensor of shape " + storage.shape().to_string() +
                         " (" + std::to_string(bytes) +
                         " bytes) to the device; the process's cached device memory "
                         "was released first. Free tensors, split the set, or use TENEX_BACKEND=cpu");
    }
    lane_ = 0;
    TENEX_CUDA_CALL(runtime, cudaMemcpyAsync(copy.data(), storage.elements(), bytes, cudaMemcpyHostToDevice, stream()));
    cuda::count_to_device(bytes);
    storage.device_copy() = std::move(copy);
    storage.set_device_copy_valid(true);
    leave_node(storage.device_copy().data());
  }
  return View<const T>{static_cast<const T*>(storage.device_copy().data()), n, Device::cuda};
}

template <class T>
void CudaBackend<T>::to_host(void* host, const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  for (void* s : lanes().streams) TENEX_CUDA_CALL(runtime, cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
  TENEX_CUDA_CALL(runtime, cudaMemcpy(host, data, bytes, cudaMemcpyDeviceToHost));
  cuda::count_to_host(bytes);
}

template <class T>
void CudaBackend<T>::from_host(void* data, const void* host, std::size_t bytes) {
  if (bytes == 0) return;
  TENEX_CUDA_CALL(runtime, cudaMemcpy(data, host, bytes, cudaMemcpyHostToDevice));
  cuda::count_to_device(bytes);
}

template <class T>
void CudaBackend<T>::begin_set() {
  lanes();
  made_.clear();
  events_used_ = 0;
  // A value another thread's set made may still be in the making on that thread's streams:
  // an event on the legacy stream passes only after the work queued so far on every
  // (blocking) stream, and this backend's streams wait for it.
  if (lanes().streams.size() > 0) {
    cudaEvent_t all_before = next_event();
    TENEX_CUDA_CALL(runtime, cudaEventRecord(all_before, cudaStreamLegacy));
    for (void* s : lanes().streams) {
      TENEX_CUDA_CALL(runtime, cudaStreamWaitEvent(static_cast<cudaStream_t>(s), all_before, 0));
    }
  }
  cuda::allocator().reset_peak();
  traffic_at_begin_ = cuda::traffic();
}

template <class T>
void CudaBackend<T>::end_set(RunStats& stats) noexcept {
  try {
    // Every stream waits for every other: the next set may read this one's values anywhere.
    auto& streams = lanes().streams;
    if (streams.size() > 1) {
      std::vector<cudaEvent_t> ends;
      for (void* s : streams) {
        ends.push_back(next_event());
        cudaEventRecord(ends.back(), static_cast<cudaStream_t>(s));
      }
      for (void* s : streams) {
        for (cudaEvent_t e : ends) cudaStreamWaitEvent(static_cast<cudaStream_t>(s), e, 0);
      }
    }
  } catch (...) {
    cudaDeviceSynchronize();
  }
  made_.clear();
  events_used_ = 0;
  const cuda::Traffic now = cuda::traffic();
  stats.device_peak_bytes = cuda::allocator().stats().peak;
  stats.host_to_device_bytes = now.to_device - traffic_at_begin_.to_device;
  stats.device_to_host_bytes = now.to_host - traffic_at_begin_.to_host;
}

template <class T>
cudaEvent_t CudaBackend<T>::next_event() {
  if (events_used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    TENEX_CUDA_CALL(runtime, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
  }
  return events_[events_used_++];
}

template <class T>
void CudaBackend<T>::enter_node(const KernelArgs<T>& args) {
  const std::size_t lanes_count = lanes().streams.size();
  std::size_t lane = lanes_count;
  if (!args.operands.empty()) {
    if (auto it = made_.find(args.operands[0].data); it != made_.end()) lane = it->second.lane;
  }
  if (lane == lanes_count) {
    lane = next_lane_;
    next_lane_ = (next_lane_ + 1) % lanes_count;
  }
  lane_ = lane;
  auto wait_for = [&](const void* data) {
    if (auto it = made_.find(data); it != made_.end() && it->second.lane != lane_) {
      TENEX_CUDA_CALL(runtime, cudaStreamWaitEvent(stream(), it->second.event, 0));
    }
  };
  for (const auto& op : args.operands) wait_for(op.data);
  wait_for(args.out.data);
}

template <class T>
void CudaBackend<T>::leave_node(const void* data) {
  if (lanes().streams.size() == 1) return;
  cudaEvent_t e = next_event();
  TENEX_CUDA_CALL(runtime, cudaEventRecord(e, stream()));
  made_[data] = Made{lane_, e};
}

// ---- kernel launches ----------------------------------------------------------------------

template <class T>
void CudaBackend<T>::launch(const void* kernel, dim3 grid, dim3 block, void* argument) {
  void* arguments[] = {argument};
  TENEX_CUDA_CALL(runtime, cudaLaunchKernel(kernel, grid, block, arguments, 0, stream()));
}

template <class T>
void CudaBackend<T>::launch_utility(const char* entry, long long work, void** arguments) {
  static const std::string source = cuda::utility_source(is_double);
  const long long blocks = std::clamp<long long>((work + 255) / 256, 1, 65535);
  TENEX_CUDA_CALL(runtime, cudaLaunchKernel(cuda::kernel(source, entry), dim3(static_cast<unsigned>(blocks)), dim3(256),
                                            arguments, 0, stream()));
}

template <class T>
void CudaBackend<T>::copy(T* to, const T* from, std::size_t elements) {
  if (elements == 0 || to == from) return;
  TENEX_CUDA_CALL(runtime, cudaMemcpyAsync(to, from, elements * sizeof(T), cudaMemcpyDeviceToDevice, stream()));
}

template <class T>
void CudaBackend<T>::strided(const std::vector<FusedInstr>& program, ReduceOp reduce,
                             const std::vector<Operand<T>>& operands, T* out, const Labels& out_labels,
                             const Extents& out_extents, double beta) {
  if (total(out_extents) == 0) return;
  std::vector<cuda::StridedOperand> layout;
  for (const auto& op : operands) layout.push_back({op.labels, op.extents, op.offset});
  cuda::StridedSpec spec;
  cuda::StridedArgs a;
  cuda::plan_strided(layout, out_labels, out_extents, spec, a);
  spec.program = program;
  spec.reduce = reduce;
  spec.accumulate = beta != 0.0;
  spec.is_double = is_double;
  for (std::size_t k = 0; k < operands.size(); ++k) a.in[k] = operands[k].data;
  a.out = out;
  const std::vector<double> constants = cuda::program_constants(program);
  std::copy(constants.begin(), constants.end(), a.constant);
  a.beta = beta;
  const std::string source = cuda::strided_source(spec);
  if (const long long splits = cuda::strided_splits(a); splits > 1) {
    Buffer part = device_buffer(static_cast<std::size_t>(a.out_total * splits) * sizeof(T));
    T* part_data = static_cast<T*>(part.data());
    long long chunk = (a.red_total + splits - 1) / splits;
    void* split_arguments[] = {&a, &part_data, &chunk};
    TENEX_CUDA_CALL(runtime, cudaLaunchKernel(cuda::kernel(source, "tenex_strided_split"),
                                              dim3(static_cast<unsigned>(splits), static_cast<unsigned>(a.out_total)),
                                              dim3(256), split_arguments, 0, stream()));
    long long count = splits;
    void* combine_arguments[] = {&a, &part_data, &count};
    TENEX_CUDA_CALL(runtime, cudaLaunchKernel(cuda::kernel(source, "tenex_strided_combine"),
                                              dim3(static_cast<unsigned>(std::min(a.out_total, 65535LL))), dim3(256),
                                              combine_arguments, 0, stream()));
  } else if (cuda::strided_by_block(a)) {
    launch(cuda::kernel(source, "tenex_strided_block"), dim3(static_cast<unsigned>(std::min(a.out_total, 65535LL))),
           dim3(256), &a);
  } else {
    const long long blocks = std::clamp<long long>((a.out_total + 255) / 256, 1, 1 << 20);
    launch(cuda::kernel(source, "tenex_strided_thread"), dim3(static_cast<unsigned>(blocks)), dim3(256), &a);
  }
}

template <class T>
void CudaBackend<T>::rearrange(const Operand<T>& in, T* out, const Labels& out_labels, const Extents& out_extents,
                               double alpha, double beta) {
  if (total(out_extents) == 0) return;
  // A permutation whose fastest mode moves: the tiled kernel.
  cuda::TransposeArgs a;
  if (cuda::plan_transpose({in.labels, in.extents, in.offset}, out_labels, out_extents, a)) {
    a.in = in.data;
    a.out = out;
    a.alpha = alpha;
    a.beta = beta;
    static const std::string source = cuda::transpose_source(is_double);
    const long long tiles = ((a.extent_q + 31) / 32) * ((a.extent_l + 31) / 32);
    if (tiles <= 0x7fffffffLL) {
      launch(cuda::kernel(source, "tenex_transpose"),
             dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(std::min(a.rest_total, 65535LL))), dim3(32, 8),
             &a);
      return;
    }
  }
  std::vector<FusedInstr> program = {{FusedOp::load, 0}};
  if (alpha != 1.0) {
    program.push_back({FusedOp::constant, 0, 0, alpha});
    program.push_back({FusedOp::multiply, 0, 1});
  }
  strided(program, ReduceOp::sum, {in}, out, out_labels, out_extents, beta);
}

// ---- kernels by kind ------------------------------------------------------------------------


template <class T>
KernelCount CudaBackend<T>::run_output(const OutputParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const OpNode& op = *args.operand_nodes[0];
  rearrange({args.operands[0].data, params.operand_labels, op.extents}, args.out.data, args.node.labels,
            args.node.extents);
  leave_node(args.out.data);
  return {0, 1};
}

template <class T>
KernelCount CudaBackend<T>::run_reduce(const ReduceParams&, const KernelArgs<T>& args) {
  enter_node(args);
  const OpNode& op = *args.operand_nodes[0];
  rearrange({args.operands[0].data, op.labels, op.extents}, args.out.data, args.node.labels, args.node.extents);
  leave_node(args.out.data);
  const double n = static_cast<double>(op.size()), m = static_cast<double>(args.node.size());
  return {n > m ? n - m : 0.0, 1};
}

template <class T>
void CudaBackend<T>::gemm(const cuda::GemmPlan& plan, const T* a, const T* b, T* c, T alpha, T beta) {
  const auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
  const cuda::GemmOperand& first = plan.swap ? plan.a : plan.b;
  const cuda::GemmOperand& second = plan.swap ? plan.b : plan.a;
  const T* first_data = plan.swap ? a : b;
  const T* second_data = plan.swap ? b : a;
  auto as_int = [](long long v) {
    if (v > 0x7fffffffLL) {
      throw BackendError("tenex: cuda: a GEMM dimension of " + std::to_string(v) +
                         " exceeds cuBLAS's 32-bit limit; use TENEX_BACKEND=cpu for this set");
    }
    return static_cast<int>(v);
  };
  TENEX_CUDA_CALL(cublas, gemm_batched(blas(), op(first.transpose), op(second.transpose), as_int(plan.rows),
                                       as_int(plan.cols), as_int(plan.k), &alpha, first_data, as_int(first.ld),
                                       first.batch_stride, second_data, as_int(second.ld), second.batch_stride, &beta,
                                       c, as_int(plan.c.ld), plan.c.batch_stride, as_int(plan.batch)));
}

template <class T>
KernelCount CudaBackend<T>::run_contract(const ContractParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const OpNode& a_node = *args.operand_nodes[0];
  const OpNode& b_node = *args.operand_nodes[1];
  const Labels& lc = args.node.labels;
  KernelCount count;
  std::vector<Buffer> temps;
  // Sums first the labels only one operand has, and the diagonals of repeated labels.
  auto prepared = [&](const OpNode& node, const T* data, const Labels& other) -> Operand<T> {
    Labels keep;
    Extents extents;
    bool changed = false;
    for (std::size_t p = 0; p < node.labels.size(); ++p) {
      const std::string& x = node.labels[p];
      const bool used =
          std::find(other.begin(), other.end(), x) != other.end() || std::find(lc.begin(), lc.end(), x) != lc.end();
      const bool seen = std::find(keep.begin(), keep.end(), x) != keep.end();
      if (used && !seen) {
        keep.push_back(x);
        extents.push_back(node.extents[p]);
      } else {
        changed = true;
      }
    }
    if (!changed) return {data, node.labels, node.extents};
    temps.push_back(scratch<T>(static_cast<std::size_t>(total(extents))));
    T* out = static_cast<T*>(temps.back().data());
    rearrange({data, node.labels, node.extents}, out, keep, extents);
    ++count.calls;
    return {out, keep, extents};
  };
  Operand<T> a = prepared(a_node, args.operands[0].data, b_node.labels);
  Operand<T> b = prepared(b_node, args.operands[1].data, a.labels);
  Labels all = a.labels;
  Extents all_extents = a.extents;
  for (std::size_t p = 0; p < b.labels.size(); ++p) {
    if (std::find(all.begin(), all.end(), b.labels[p]) == all.end()) {
      all.push_back(b.labels[p]);
      all_extents.push_back(b.extents[p]);
    }
  }
  const cuda::GemmPlan plan = cuda::plan_gemm(a.labels, b.labels, lc, all, all_extents);
  auto extents_of = [&](const Labels& labels) {
    Extents e;
    for (const auto& x : labels) e.push_back(all_extents[std::find(all.begin(), all.end(), x) - all.begin()]);
    return e;
  };
  auto permuted = [&](Operand<T>& op, const cuda::GemmOperand& g) {
    if (!g.permute) return;
    const Extents e = extents_of(g.labels);
    temps.push_back(scratch<T>(static_cast<std::size_t>(total(e))));
    T* out = static_cast<T*>(temps.back().data());
    rearrange(op, out, g.labels, e);
    ++count.calls;
    op = {out, g.labels, e};
  };

  // The addend: out = beta * addend first unless the executor handed its buffer over.
  const bool addend = args.operands.size() == 3 && params.beta != 0.0;
  const bool aliased = addend && args.operands[2].data == args.out.data;
  if (addend && !aliased) {
    const OpNode& d = *args.operand_nodes[2];
    rearrange({args.operands[2].data, d.labels, d.extents}, args.out.data, lc, args.node.extents, params.beta);
    ++count.calls;
  }
  const double gemm_beta = aliased ? params.beta : addend ? 1.0 : 0.0;
  // A batch of tiny products (a Hadamard product is m = n = k = 1): one cuBLAS call per batch
  // element of a few flops costs a launch's worth each; the strided kernel reads a and b in
  // place and sums k per output element instead.
  if (cuda::tiny_batched_product(plan.m, plan.n, plan.k, plan.batch)) {
    const std::vector<FusedInstr> program = {{FusedOp::load, 0},
                                             {FusedOp::load, 1},
                                             {FusedOp::multiply, 0, 1},
                                             {FusedOp::constant, 0, 0, params.alpha},
                                             {FusedOp::multiply, 2, 3}};
    strided(program, ReduceOp::sum, {a, b}, args.out.data, lc, args.node.extents, gemm_beta);
    ++count.calls;
    count.flops += 2.0 * static_cast<double>(plan.m) * static_cast<double>(plan.n) * static_cast<double>(plan.k) *
                   static_cast<double>(plan.batch);
    if (addend) count.flops += 2.0 * static_cast<double>(args.node.size());
    leave_node(args.out.data);
    return count;
  }
  permuted(a, plan.a);  // for cuBLAS only: the strided kernel above reads any layout in place
  permuted(b, plan.b);
  T* c = args.out.data;
  if (plan.c.permute) {
    temps.push_back(scratch<T>(static_cast<std::size_t>(plan.m * plan.n * plan.batch)));
    c = static_cast<T*>(temps.back().data());
  }
  const long long out_size = static_cast<long long>(args.node.size());
  if (out_size > 0) {
    if (plan.k == 0) {
      if (!addend) TENEX_CUDA_CALL(runtime, cudaMemsetAsync(args.out.data, 0, out_size * sizeof(T), stream()));
    } else {
      const T alpha = static_cast<T>(params.alpha);
      const T beta = static_cast<T>(plan.c.permute ? 0.0 : gemm_beta);
      gemm(plan, a.data, b.data, c, alpha, beta);
      ++count.calls;
      count.flops += 2.0 * static_cast<double>(plan.m) * static_cast<double>(plan.n) * static_cast<double>(plan.k) *
                     static_cast<double>(plan.batch);
      if (plan.c.permute) {
        rearrange({c, plan.c.labels, extents_of(plan.c.labels)}, args.out.data, lc, args.node.extents, 1.0,
                  aliased  ? params.beta
                  : addend ? 1.0
                           : 0.0);
        ++count.calls;
      }
    }
  }
  if (addend) count.flops += 2.0 * static_cast<double>(out_size);
  leave_node(args.out.data);
  return count;
}

namespace {

/// alpha * a (op) alpha_b * b as a program, as the CPU computes it.
std::vector<FusedInstr> binary_program(FusedOp op, const ElementwiseParams& p) {
  return {{FusedOp::constant, 0, 0, p.alpha},
          {FusedOp::load, 0},
          {FusedOp::multiply, 0, 1},
          {FusedOp::constant, 0, 0, p.alpha_b},
          {FusedOp::load, 1},
          {FusedOp::multiply, 3, 4},
          {op, 2, 5}};
}

}  // namespace

#define TENEX_CUDA_BINARY(kind, fused_op)                                                                 \
  template <class T>                                                                                      \
  KernelCount CudaBackend<T>::run_##kind(const kind##_params_t& params, const KernelArgs<T>& args) {      \
    enter_node(args);                                                                                     \
    const OpNode& a = *args.operand_nodes[0];                                                             \
    const OpNode& b = *args.operand_nodes[1];                                                             \
    strided(binary_program(fused_op, params), ReduceOp::sum,                                              \
            {{args.operands[0].data, a.labels, a.extents}, {args.operands[1].data, b.labels, b.extents}}, \
            args.out.data, args.node.labels, args.node.extents);                                          \
    leave_node(args.out.data);                                                                            \
    const double scalings = (params.alpha != 1.0 ? 1.0 : 0.0) + (params.alpha_b != 1.0 ? 1.0 : 0.0);      \
    return {static_cast<double>(args.node.size()) * (1.0 + scalings), 1};                                 \
  }
using add_params_t = AddParams;
using subtract_params_t = SubtractParams;
using divide_params_t = DivideParams;
TENEX_CUDA_BINARY(add, FusedOp::add)
TENEX_CUDA_BINARY(subtract, FusedOp::subtract)
TENEX_CUDA_BINARY(divide, FusedOp::divide)
#undef TENEX_CUDA_BINARY

template <class T>
KernelCount CudaBackend<T>::run_scale(const ScaleParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const OpNode& a = *args.operand_nodes[0];
  strided({{FusedOp::constant, 0, 0, params.alpha}, {FusedOp::load, 0}, {FusedOp::multiply, 0, 1}}, ReduceOp::sum,
          {{args.operands[0].data, a.labels, a.extents}}, args.out.data, a.labels, a.extents);
  leave_node(args.out.data);
  return {static_cast<double>(args.node.size()), 1};
}

template <class T>
KernelCount CudaBackend<T>::run_factor(const FactorParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const OpNode& packed = *args.operand_nodes[0];
  const MatrixExtents matrix = decomposition_matrix(packed.params, packed.extents);
  const std::size_t offset = packed_factor_offset(packed.kind, params.which, matrix.m, matrix.n);
  copy(args.out.data, args.operands[0].data + offset, args.node.size());
  leave_node(args.out.data);
  return {0, 1};
}

template <class T>
KernelCount CudaBackend<T>::run_slice(const SliceParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const OpNode& in = *args.operand_nodes[0];
  const std::vector<long long> strides = row_major_strides(in.extents);
  long long offset = 0;
  for (std::size_t d = 0; d < in.extents.size(); ++d) offset += static_cast<long long>(params.lo[d]) * strides[d];
  const Labels labels = mode_labels(in.extents.size());
  // The block has the operand's strides and the node's extents.
  // The operand's strides (from its own extents), iterated over the node's extents.
  strided({{FusedOp::load, 0}}, ReduceOp::sum, {{args.operands[0].data, labels, in.extents, offset}}, args.out.data,
          labels, args.node.extents);
  leave_node(args.out.data);
  return {0, 1};
}

template <class T>
KernelCount CudaBackend<T>::run_chip(const ChipParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const OpNode& in = *args.operand_nodes[0];
  const std::vector<long long> strides = row_major_strides(in.extents);
  // A chip is the slice [index, index + 1) of its mode: the result laid out with that mode of
  // extent 1 has the node's elements in the node's order.
  const Labels labels = mode_labels(in.extents.size());
  Extents extents = in.extents;
  extents[params.mode] = 1;
  strided({{FusedOp::load, 0}}, ReduceOp::sum,
          {{args.operands[0].data, labels, in.extents, static_cast<long long>(params.index) * strides[params.mode]}},
          args.out.data, labels, extents);
  leave_node(args.out.data);
  return {0, 1};
}

template <class T>
KernelCount CudaBackend<T>::run_pow(const PowParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const std::size_t n = args.node.extents[0];
  const long long nn = static_cast<long long>(n);
  KernelCount count{0, 0};
  T* out = args.out.data;
  if (n > 0) {
    if (params.power == 0) {
      long long size = nn;
      void* arguments[] = {&out, &size};
      launch_utility("tenex_set_identity", nn * nn, arguments);
      count.calls = 1;
    } else {
      // Repeated squaring, as the CPU: result = a^p. Row-major x * y is column-major y^T x^T.
      const int ni = static_cast<int>(n);
      Buffer power_buffer = scratch<T>(n * n), temp_buffer = scratch<T>(n * n);
      T* power = static_cast<T*>(power_buffer.data());
      T* temp = static_cast<T*>(temp_buffer.data());
      copy(power, args.operands[0].data, n * n);
      bool have = false;
      const T one = T(1), zero = T(0);
      auto multiply = [&](const T* x, const T* y, T* into) {
        TENEX_CUDA_CALL(cublas, gemm_batched(blas(), CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, y, ni, 0, x, ni, 0,
                                             &zero, into, ni, 0, 1));
        ++count.calls;
        count.flops += 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
      };
      for (unsigned p = params.power; p > 0; p >>= 1) {
        if (p & 1U) {
          if (!have) {
            copy(out, power, n * n);
            have = true;
          } else {
            multiply(out, power, temp);
            copy(out, temp, n * n);
          }
        }
        if (p > 1) {
          multiply(power, power, temp);
          std::swap(power, temp);
        }
      }
    }
  }
  leave_node(args.out.data);
  return count;
}

template <class T>
KernelCount CudaBackend<T>::run_mask(const MaskParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const OpNode& node = args.node;
  const std::size_t total_size = node.size();
  copy(args.out.data, args.operands[0].data, total_size);
  if (total_size > 0 && !params.maps.empty()) {
    // Which elements the maps keep, worked out on the host (a map is a host structure).
    std::vector<unsigned char> keep(total_size, 1);
    const std::size_t rank = node.labels.size();
    for (const SparseMapUse& use : params.maps) {
      std::vector<std::size_t> source_modes, target_modes;
      for (const auto& l : use.source)
        source_modes.push_back(std::find(node.labels.begin(), node.labels.end(), l) - node.labels.begin());
      for (const auto& l : use.target)
        target_modes.push_back(std::find(node.labels.begin(), node.labels.end(), l) - node.labels.begin());
      std::vector<std::size_t> idx(rank, 0);
      SparseMap::Index source(source_modes.size()), target(target_modes.size());
      for (std::size_t flat = 0; flat < total_size; ++flat) {
        for (std::size_t i = 0; i < source_modes.size(); ++i) source[i] = idx[source_modes[i]];
        for (std::size_t i = 0; i < target_modes.size(); ++i) target[i] = idx[target_modes[i]];
        if (!use.map->allows(source, target)) keep[flat] = 0;
        for (std::size_t d = rank; d-- > 0;) {
          if (++idx[d] < node.extents[d]) break;
          idx[d] = 0;
        }
      }
    }
    Buffer keep_device = device_buffer(total_size);
    TENEX_CUDA_CALL(runtime,
                    cudaMemcpyAsync(keep_device.data(), keep.data(), total_size, cudaMemcpyHostToDevice, stream()));
    TENEX_CUDA_CALL(runtime, cudaStreamSynchronize(stream()));  // `keep` is freed on return
    cuda::count_to_device(total_size);
    T* out = args.out.data;
    const unsigned char* kd = static_cast<const unsigned char*>(keep_device.data());
    long long n = static_cast<long long>(total_size);
    void* arguments[] = {&out, &kd, &n};
    launch_utility("tenex_apply_mask", n, arguments);
  }
  leave_node(args.out.data);
  return {0, 2};
}

template <class T>
KernelCount CudaBackend<T>::run_fused(const FusedParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  std::vector<Operand<T>> operands;
  for (std::size_t k = 0; k < args.operands.size(); ++k) {
    operands.push_back({args.operands[k].data, args.operand_nodes[k]->labels, args.operand_nodes[k]->extents});
  }
  strided(params.program, params.reduce, operands, args.out.data, args.node.labels, args.node.extents);
  leave_node(args.out.data);
  // Flops as the CPU counts them: one per arithmetic instruction per point of the iteration space.
  double points = static_cast<double>(args.node.size());
  Labels seen = args.node.labels;
  for (const auto& op : operands) {
    for (std::size_t p = 0; p < op.labels.size(); ++p) {
      if (std::find(seen.begin(), seen.end(), op.labels[p]) == seen.end()) {
        seen.push_back(op.labels[p]);
        points *= static_cast<double>(op.extents[p]);
      }
    }
  }
  double arithmetic = 0;
  for (const FusedInstr& in : params.program) arithmetic += fused_op_values(in.op) > 0 ? 1 : 0;
  return {points * arithmetic, 1};
}

template class CudaBackend<float>;
template class CudaBackend<double>;

template <class T>
std::string CudaBackend<T>::describe(const OpNode& node) const {
  switch (node.kind) {
    case OpKind::contract: return "cuBLAS GEMM (batched or strided where the modes allow)";
    case OpKind::cholesky:
    case OpKind::eigen_solve:
    case OpKind::qr:
    case OpKind::svd: return "cuSOLVER";
    case OpKind::input:
    case OpKind::output:
    case OpKind::inverse:  // declined: the CPU backend runs them
    case OpKind::solve:
    case OpKind::spd_pow: return {};
    case OpKind::reduce:
    case OpKind::add:
    case OpKind::subtract:
    case OpKind::divide:
    case OpKind::scale:
    case OpKind::factor:
    case OpKind::slice:
    case OpKind::chip:
    case OpKind::pow:
    case OpKind::mask:
    case OpKind::fused: return "NVRTC kernel";
  }
  return {};
}

namespace {
int available() { return cuda::device_available() ? 1 : 0; }
}  // namespace

}  // namespace tenex::detail::cuda_impl

// The plugin's one export (tenex/backend/plugin.hpp): the registry loads libtenex_cuda.so and
// registers this entry when a set asks for the CUDA backend or automatic choice finds a device.
// It has no complex sets: those run on the CPU backend.
extern "C" __attribute__((visibility("default"))) const TenexBackendPlugin* tenex_backend_plugin_entry(void) {
  static const TenexBackendPlugin entry{
      TENEX_BACKEND_ABI_VERSION,
      tenex::plugin::kOpKinds,
      "cuda",
      TENEX_VERSION_STRING,
      TENEX_ELEMENT_REAL,
      &tenex::detail::cuda_impl::available,
      &tenex::plugin::create_backend<tenex::detail::cuda_impl::CudaBackend, TENEX_ELEMENT_REAL>};
  return &entry;
}
