#include "tenex/backend/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "tenex/backend/cpu/linalg.hpp"
#include "tenex/error.hpp"

namespace tenex::detail {

namespace {

/// Integer mode ids for labels, shared by the operands and the result of one node.
class ModeIds {
 public:
  cpu::Modes operator()(const std::vector<std::string>& labels) {
    cpu::Modes modes;
    for (const auto& l : labels) {
      auto [it, inserted] = ids_.emplace(l, static_cast<int>(ids_.size()));
      modes.push_back(it->second);
    }
    return modes;
  }

 private:
  std::map<std::string, int> ids_;
};

/// Copies the block [lo, lo + out_extents) of `in` (row-major, in_extents) to `out`.
template <class T>
void copy_block(const T* in, const std::vector<std::size_t>& in_extents, const std::vector<std::size_t>& lo,
                const std::vector<std::size_t>& out_extents, T* out) {
  const std::size_t rank = in_extents.size();
  std::size_t total = 1;
  for (std::size_t e : out_extents) total *= e;
  if (total == 0) return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<std::size_t> in_strides(rank, 1);
  for (std::size_t d = rank - 1; d > 0; --d) in_strides[d - 1] = in_strides[d] * in_extents[d];
  const std::size_t row = out_extents[rank - 1];
  const std::size_t rows = total / row;
  std::vector<std::size_t> idx(rank, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += (lo[d] + idx[d]) * in_strides[d];
    std::memcpy(out + r * row, in + offset, row * sizeof(T));
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < out_extents[d]) break;
      idx[d] = 0;
    }
  }
}

[[noreturn]] void not_a_kernel(const OpNode& node) {
  throw InternalError("tenex: cpu backend: " + std::string(op_kind_name(node.kind)) +
                      " nodes are handled by the executor, not by a kernel");
}

}  // namespace

template <class T>
bool CpuBackend<T>::supports(const OpNode& node) const {
  return node.dtype == DType::f32 || node.dtype == DType::f64;
}

template <class T>
KernelCount CpuBackend<T>::run_input(const KernelArgs<T>& args) {
  not_a_kernel(args.node);
}

template <class T>
KernelCount CpuBackend<T>::run_output(const KernelArgs<T>& args) {
  ModeIds ids;
  auto in = ids(args.node.params.operand_labels);
  auto out = ids(args.node.labels);
  return cpu::reduce(args.operands[0], args.operand_nodes[0]->extents, in, args.out, out);
}

template <class T>
KernelCount CpuBackend<T>::run_reduce(const KernelArgs<T>& args) {
  ModeIds ids;
  auto in = ids(args.operand_nodes[0]->labels);
  auto out = ids(args.node.labels);
  return cpu::reduce(args.operands[0], args.operand_nodes[0]->extents, in, args.out, out);
}

template <class T>
KernelCount CpuBackend<T>::run_contract(const KernelArgs<T>& args) {
  ModeIds ids;
  const OpNode& a = *args.operand_nodes[0];
  const OpNode& b = *args.operand_nodes[1];
  auto ma = ids(a.labels);
  auto mb = ids(b.labels);
  auto mc = ids(args.node.labels);
  return cpu::contract(static_cast<T>(args.node.params.alpha), args.operands[0], a.extents, ma, args.operands[1],
                       b.extents, mb, T(0), args.out, mc);
}

template <class T>
static KernelCount run_elementwise(cpu::BinaryOp op, const KernelArgs<T>& args) {
  ModeIds ids;
  auto ma = ids(args.operand_nodes[0]->labels);
  auto mb = ids(args.operand_nodes[1]->labels);
  auto mc = ids(args.node.labels);
  return cpu::elementwise(op, static_cast<T>(args.node.params.alpha), args.operands[0], ma,
                          static_cast<T>(args.node.params.alpha_b), args.operands[1], mb, args.out, args.node.extents,
                          mc);
}

template <class T>
KernelCount CpuBackend<T>::run_add(const KernelArgs<T>& args) {
  return run_elementwise(cpu::BinaryOp::add, args);
}

template <class T>
KernelCount CpuBackend<T>::run_subtract(const KernelArgs<T>& args) {
  return run_elementwise(cpu::BinaryOp::subtract, args);
}

template <class T>
KernelCount CpuBackend<T>::run_divide(const KernelArgs<T>& args) {
  return run_elementwise(cpu::BinaryOp::divide, args);
}

template <class T>
KernelCount CpuBackend<T>::run_scale(const KernelArgs<T>& args) {
  return cpu::scale(static_cast<T>(args.node.params.alpha), args.operands[0], args.out, args.node.size());
}

template <class T>
KernelCount CpuBackend<T>::run_cholesky(const KernelArgs<T>& args) {
  return cpu::cholesky(args.operands[0], args.node.extents[0], args.out);
}

template <class T>
KernelCount CpuBackend<T>::run_eigen_solve(const KernelArgs<T>& args) {
  const std::size_t n = args.node.extents[0];
  if (args.operands.size() == 2) {
    return cpu::eigen_generalized(args.operands[0], args.operands[1], n, args.out, args.out + n * n);
  }
  return cpu::eigen_symmetric(args.operands[0], n, args.out, args.out + n * n);
}

template <class T>
KernelCount CpuBackend<T>::run_qr(const KernelArgs<T>& args) {
  const std::size_t m = args.node.extents[0], n = args.node.extents[1], k = std::min(m, n);
  return cpu::qr(args.operands[0], m, n, args.out, args.out + m * k);
}

template <class T>
KernelCount CpuBackend<T>::run_svd(const KernelArgs<T>& args) {
  const std::size_t m = args.node.extents[0], n = args.node.extents[1], k = std::min(m, n);
  return cpu::svd(args.operands[0], m, n, args.out, args.out + m * k, args.out + m * k + k);
}

template <class T>
KernelCount CpuBackend<T>::run_factor(const KernelArgs<T>& args) {
  const std::size_t n = args.node.size();
  if (n) std::memcpy(args.out, args.operands[0] + args.node.params.offset, n * sizeof(T));
  return {0, 1};
}

template <class T>
KernelCount CpuBackend<T>::run_slice(const KernelArgs<T>& args) {
  copy_block(args.operands[0], args.operand_nodes[0]->extents, args.node.params.lo, args.node.extents, args.out);
  return {0, 1};
}

template <class T>
KernelCount CpuBackend<T>::run_chip(const KernelArgs<T>& args) {
  // A chip is the slice [index, index + 1) of its mode, which then has extent 1.
  const auto& in = args.operand_nodes[0]->extents;
  std::vector<std::size_t> lo(in.size(), 0), extents = in;
  lo[args.node.params.mode] = args.node.params.index;
  extents[args.node.params.mode] = 1;
  copy_block(args.operands[0], in, lo, extents, args.out);
  return {0, 1};
}

template <class T>
KernelCount CpuBackend<T>::run_pow(const KernelArgs<T>& args) {
  return cpu::matrix_power(args.operands[0], args.node.extents[0], args.node.params.power, args.out);
}

template class CpuBackend<float>;
template class CpuBackend<double>;

}  // namespace tenex::detail
