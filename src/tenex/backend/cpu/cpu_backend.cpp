#include "tenex/backend/cpu/cpu_backend.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <list>
#include <map>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/linalg.hpp"
#include "tenex/backend/cpu/plan_search.hpp"
#include "tenex/backend/cpu/sparse.hpp"
#include "tenex/backend/plugin.hpp"
#include "tenex/backend/registry.hpp"
#include "tenex/error.hpp"
#include "tenex/labels.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail {

namespace {

/// Integer mode ids for labels, shared by the operands and the result of one node. A node
/// has a handful of labels: a linear scan over the labels seen (which outlive this object)
/// beats a map of copied strings. The id vectors it returns live as long as it does; the
/// first few are the thread's, kept between kernels (a tiny statement's kernel costs less than
/// allocating them), unless an outer kernel on this thread holds them (a tenex::map callable
/// running statements).
class ModeIds {
 public:
  ModeIds() {
    Pool& pool = thread_pool();
    if (!pool.busy) {
      pool.busy = true;
      pool_ = &pool;
    }
  }
  ~ModeIds() {
    if (pool_) pool_->busy = false;
  }
  ModeIds(const ModeIds&) = delete;
  ModeIds& operator=(const ModeIds&) = delete;

  const cpu::Modes& operator()(const std::vector<std::string>& labels) {
    cpu::Modes& modes = next();
    modes.clear();
    modes.reserve(labels.size());
    for (const auto& l : labels) {
      std::size_t id = 0;
      while (id < count_ && *seen(id) != l) ++id;
      if (id == count_) {
        if (count_ < inline_.size()) {
          inline_[count_] = &l;
        } else {
          more_.push_back(&l);
        }
        ++count_;
      }
      modes.push_back(static_cast<int>(id));
    }
    return modes;
  }

 private:
  struct Pool {
    std::array<cpu::Modes, 4> modes;
    bool busy = false;
  };
  static Pool& thread_pool() {
    thread_local Pool pool;
    return pool;
  }
  cpu::Modes& next() {
    if (pool_ && used_ < pool_->modes.size()) return pool_->modes[used_++];
    return own_.emplace_back();
  }
  const std::string* seen(std::size_t id) const {
    return id < inline_.size() ? inline_[id] : more_[id - inline_.size()];
  }
  std::array<const std::string*, 16> inline_{};
  std::vector<const std::string*> more_;
  std::size_t count_ = 0;
  Pool* pool_ = nullptr;
  std::size_t used_ = 0;
  std::list<cpu::Modes> own_;  // past the pool's, or all where the pool is held: stable addresses
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

/// Zeroes the elements of `data` (laid out as `node`) that `use` excludes.
template <class T>
void apply_sparse_map(const OpNode& node, const SparseMapUse& use, T* data) {
  const std::size_t rank = node.labels.size();
  std::vector<std::size_t> source_modes, target_modes;
  for (const auto& l : use.source)
    source_modes.push_back(std::find(node.labels.begin(), node.labels.end(), l) - node.labels.begin());
  for (const auto& l : use.target)
    target_modes.push_back(std::find(node.labels.begin(), node.labels.end(), l) - node.labels.begin());
  const std::size_t total = node.size();
  std::vector<std::size_t> idx(rank, 0);
  SparseMap::Index source(source_modes.size()), target(target_modes.size());
  for (std::size_t flat = 0; flat < total; ++flat) {
    for (std::size_t i = 0; i < source_modes.size(); ++i) source[i] = idx[source_modes[i]];
    for (std::size_t i = 0; i < target_modes.size(); ++i) target[i] = idx[target_modes[i]];
    if (!use.map->allows(source, target)) data[flat] = T(0);
    for (std::size_t d = rank; d-- > 0;) {
      if (++idx[d] < node.extents[d]) break;
      idx[d] = 0;
    }
  }
}

[[noreturn]] void not_a_kernel(const OpNode& node) {
  throw InternalError("tenex: cpu backend: " + std::string(op_kind_name(node.kind)) +
                      " nodes are handled by the executor, not by a kernel");
}

/// The plans the CPU's contractions ran on this thread in its last set, as explain() shows
/// them: one object per thread over the notes last taken, so that a set allocates nothing
/// for it (the notes stand until the thread's next set takes its own).
class CpuRunNotes final : public RunNotes {
 public:
  std::vector<cpu::plan_search::Note> notes;
  // The plan each CPU contraction ran and why: model (the cost model's choice), measured (the
  // search has settled), loaded (a plan file's), searching k/n (k of n candidates tried); then the
  // rates the cost model ranked those plans with (the machine probe's), where known.
  std::string text() const override {
    constexpr std::size_t kShown = 8;
    std::string out;
    for (std::size_t x = 0; x < notes.size() && x < kShown; ++x) {
      out += "contraction " + std::to_string(x + 1) + " ran: " + cpu::plan_search::note_text(notes[x]) + "\n";
    }
    if (notes.size() > kShown) out += "... and " + std::to_string(notes.size() - kShown) + " more contraction calls\n";
    if (const std::string rates = cpu::plan_search::rates_text(); !rates.empty()) out += rates + "\n";
    return out;
  }
};

}  // namespace

template <class T>
CpuBackend<T>::CpuBackend() {
  (void)cpu::plan_search::store();
}

template <class T>
std::shared_ptr<const RunNotes> CpuBackend<T>::take_run_notes() {
  thread_local CpuRunNotes last;
  last.notes = cpu::plan_search::take_notes();
  if (last.notes.empty()) return nullptr;
  return std::shared_ptr<const RunNotes>(std::shared_ptr<const RunNotes>(), &last);  // owns nothing
}

template <class T>
bool CpuBackend<T>::supports(const OpNode& node, std::string& why) const {
  if (node.dtype != DType::shape) return true;
  why = "the CPU backend evaluates tensors, not shapes";
  return false;
}

template <class T>
KernelCount CpuBackend<T>::run_structured(const KernelArgs<T>& args) {
  return cpu::run_sparse<T>(*this, args);
}

template <class T>
Buffer CpuBackend<T>::allocate(std::size_t bytes) {
  return allocate_host_buffer(bytes);
}

template <class T>
View<const T> CpuBackend<T>::read(Storage<T>& storage) {
  return plugin::host_value(storage);
}

template <class T>
void CpuBackend<T>::write(Storage<T>& storage, Buffer&& buffer) {
  plugin::adopt_host_value(storage, std::move(buffer));
}

template <class T>
KernelCount CpuBackend<T>::run_input(const InputParams&, const KernelArgs<T>& args) {
  not_a_kernel(args.node);
}

template <class T>
KernelCount CpuBackend<T>::run_output(const OutputParams& params, const KernelArgs<T>& args) {
  ModeIds ids;
  const auto& in = ids(params.operand_labels);
  const auto& out = ids(args.node.labels);
  return cpu::reduce(args.operands[0].data, args.operand_nodes[0]->extents, in, args.out.data, out);
}

template <class T>
KernelCount CpuBackend<T>::run_reduce(const ReduceParams&, const KernelArgs<T>& args) {
  ModeIds ids;
  const auto& in = ids(args.operand_nodes[0]->labels);
  const auto& out = ids(args.node.labels);
  return cpu::reduce(args.operands[0].data, args.operand_nodes[0]->extents, in, args.out.data, out);
}

template <class T>
KernelCount CpuBackend<T>::run_contract(const ContractParams& params, const KernelArgs<T>& args) {
  ModeIds ids;
  const OpNode& a = *args.operand_nodes[0];
  const OpNode& b = *args.operand_nodes[1];
  const auto& ma = ids(a.labels);
  const auto& mb = ids(b.labels);
  const auto& mc = ids(args.node.labels);
  T beta = T(0);
  KernelCount init;
  if (args.operands.size() == 3) {
    beta = static_cast<T>(params.beta);
    // The addend's buffer is the output (the executor handed it over): GEMM with beta into it.
    // Else out = beta * addend in the output's layout first, then GEMM with beta = 1: one
    // kernel either way, with no temporary of the result's size.
    if (args.operands[2].data != args.out.data && beta != T(0)) {
      init = cpu::assign_scaled(beta, args.operands[2].data, ids(args.operand_nodes[2]->labels), args.out.data, mc,
                                args.node.extents);
      beta = T(1);
    }
  }
  KernelCount count =
      cpu::contract(static_cast<T>(params.alpha), args.operands[0].data, a.extents, ma, args.operands[1].data,
                    b.extents, mb, beta, args.out.data, mc, cpu::Conjugated{params.conj_a, params.conj_b});
  count.flops += init.flops;
  return count;
}

template <class T>
static KernelCount run_elementwise(cpu::BinaryOp op, const ElementwiseParams& params, const KernelArgs<T>& args) {
  ModeIds ids;
  const auto& ma = ids(args.operand_nodes[0]->labels);
  const auto& mb = ids(args.operand_nodes[1]->labels);
  const auto& mc = ids(args.node.labels);
  return cpu::elementwise(op, static_cast<T>(params.alpha), args.operands[0].data, ma, static_cast<T>(params.alpha_b),
                          args.operands[1].data, mb, args.out.data, args.node.extents, mc);
}

template <class T>
KernelCount CpuBackend<T>::run_add(const AddParams& params, const KernelArgs<T>& args) {
  return run_elementwise(cpu::BinaryOp::add, params, args);
}

template <class T>
KernelCount CpuBackend<T>::run_subtract(const SubtractParams& params, const KernelArgs<T>& args) {
  return run_elementwise(cpu::BinaryOp::subtract, params, args);
}

template <class T>
KernelCount CpuBackend<T>::run_divide(const DivideParams& params, const KernelArgs<T>& args) {
  return run_elementwise(cpu::BinaryOp::divide, params, args);
}

template <class T>
KernelCount CpuBackend<T>::run_scale(const ScaleParams& params, const KernelArgs<T>& args) {
  return cpu::scale(scalar_factor<T>(params.alpha, params.alpha_imag), args.operands[0].data, args.out.data,
                    args.node.size());
}

template <class T>
KernelCount CpuBackend<T>::run_cholesky(const CholeskyParams& params, const KernelArgs<T>& args) {
  const std::size_t n = args.node.extents[0];
  if (!params.upper) return cpu::cholesky(args.operands[0].data, n, args.out.data);
  // The factor of a^T: its lower triangle is a's upper one.
  std::vector<T> transposed(n * n);
  const T* a = args.operands[0].data;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) transposed[i * n + j] = a[j * n + i];
  }
  return cpu::cholesky(transposed.data(), n, args.out.data);
}

template <class T>
KernelCount CpuBackend<T>::run_eigen_solve(const EigenSolveParams& params, const KernelArgs<T>& args) {
  const std::size_t n = decomposition_matrix(args.node.params, args.node.extents).n;
  if (params.truncation.truncated) {
    const OpParams& p = args.node.params;
    const T* b = args.operands.size() == 2 ? args.operands[1].data : nullptr;
    return cpu::eigen_truncated(args.operands[0].data, b, n, params.truncation.max_rank, params.truncation.cutoff,
                                args.out.data, args.out.data + packed_factor_offset(p, 1, n, n),
                                args.out.data + packed_truncation_offset(p, n, n));
  }
  T* values = args.out.data + packed_factor_offset(OpKind::eigen_solve, 1, n, n);
  if (args.operands.size() == 2) {
    return cpu::eigen_generalized(args.operands[0].data, args.operands[1].data, n, args.out.data, values);
  }
  return cpu::eigen_symmetric(args.operands[0].data, n, args.out.data, values);
}

template <class T>
KernelCount CpuBackend<T>::run_qr(const QrParams&, const KernelArgs<T>& args) {
  const auto [m, n] = decomposition_matrix(args.node.params, args.node.extents);
  return cpu::qr(args.operands[0].data, m, n, args.out.data, args.out.data + packed_factor_offset(OpKind::qr, 1, m, n));
}

template <class T>
KernelCount CpuBackend<T>::run_svd(const SvdParams& params, const KernelArgs<T>& args) {
  const auto [m, n] = decomposition_matrix(args.node.params, args.node.extents);
  if (params.truncation.truncated) {
    const OpParams& p = args.node.params;
    return cpu::svd_truncated(args.operands[0].data, m, n, params.truncation.max_rank, params.truncation.cutoff,
                              args.out.data, args.out.data + packed_factor_offset(p, 1, m, n),
                              args.out.data + packed_factor_offset(p, 2, m, n),
                              args.out.data + packed_truncation_offset(p, m, n));
  }
  return cpu::svd(args.operands[0].data, m, n, args.out.data,
                  args.out.data + packed_factor_offset(OpKind::svd, 1, m, n),
                  args.out.data + packed_factor_offset(OpKind::svd, 2, m, n));
}

template <class T>
KernelCount CpuBackend<T>::run_factor(const FactorParams& params, const KernelArgs<T>& args) {
  const OpNode& packed = *args.operand_nodes[0];
  const auto [m, n_packed] = decomposition_matrix(packed.params, packed.extents);
  const std::size_t offset = packed_factor_offset(packed.params, params.which, m, n_packed);
  const std::size_t n = args.node.size();
  if (n) std::memcpy(args.out.data, args.operands[0].data + offset, n * sizeof(T));
  return {0, 1};
}

template <class T>
KernelCount CpuBackend<T>::run_slice(const SliceParams& params, const KernelArgs<T>& args) {
  copy_block(args.operands[0].data, args.operand_nodes[0]->extents, params.lo, args.node.extents, args.out.data);
  return {0, 1};
}

template <class T>
KernelCount CpuBackend<T>::run_chip(const ChipParams& params, const KernelArgs<T>& args) {
  // A chip is the slice [index, index + 1) of its mode, which then has extent 1.
  const auto& in = args.operand_nodes[0]->extents;
  std::vector<std::size_t> lo(in.size(), 0), extents = in;
  lo[params.mode] = params.index;
  extents[params.mode] = 1;
  copy_block(args.operands[0].data, in, lo, extents, args.out.data);
  return {0, 1};
}

template <class T>
KernelCount CpuBackend<T>::run_pow(const PowParams& params, const KernelArgs<T>& args) {
  return cpu::matrix_power(args.operands[0].data, args.node.extents[0], params.power, args.out.data);
}

template <class T>
KernelCount CpuBackend<T>::run_mask(const MaskParams& params, const KernelArgs<T>& args) {
  const std::size_t n = args.node.size();
  if (n && args.out.data != args.operands[0].data) std::memcpy(args.out.data, args.operands[0].data, n * sizeof(T));
  for (const SparseMapUse& use : params.maps) apply_sparse_map(args.node, use, args.out.data);
  return {0, 1};
}

template <class T>
KernelCount CpuBackend<T>::run_fused(const FusedParams& params, const KernelArgs<T>& args) {
  ModeIds ids;
  std::vector<const T*> in;
  std::vector<cpu::Modes> modes;
  std::vector<cpu::Extents> extents;
  for (std::size_t k = 0; k < args.operands.size(); ++k) {
    in.push_back(args.operands[k].data);
    modes.push_back(ids(args.operand_nodes[k]->labels));
    extents.push_back(args.operand_nodes[k]->extents);
  }
  return cpu::fused(params, in, modes, extents, args.out.data, ids(args.node.labels), args.node.extents);
}

// Matrix functions.
template <class T>
KernelCount CpuBackend<T>::run_inverse(const InverseParams&, const KernelArgs<T>& args) {
  const OpNode& a = *args.operand_nodes[0];
  return cpu::inverse(args.operands[0].data, args.node.extents[0], args.out.data,
                      detail::describe(a.labels, a.extents));
}

template <class T>
KernelCount CpuBackend<T>::run_solve(const SolveParams& params, const KernelArgs<T>& args) {
  const OpNode& a = *args.operand_nodes[0];
  const std::vector<std::size_t>& b = args.operand_nodes[1]->extents;
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < params.mode; ++d) outer *= b[d];
  for (std::size_t d = params.mode + 1; d < b.size(); ++d) inner *= b[d];
  return cpu::solve(args.operands[0].data, a.extents[0], args.operands[1].data, outer, inner, args.out.data,
                    detail::describe(a.labels, a.extents));
}

template <class T>
KernelCount CpuBackend<T>::run_spd_pow(const SpdPowParams& params, const KernelArgs<T>& args) {
  const OpNode& a = *args.operand_nodes[0];
  return cpu::spd_power(args.operands[0].data, args.node.extents[0], params.power, args.out.data,
                        detail::describe(a.labels, a.extents));
}

#define TENEX_INSTANTIATE_CPU_BACKEND(T) template class CpuBackend<T>;
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_CPU_BACKEND)
#undef TENEX_INSTANTIATE_CPU_BACKEND

const TenexBackendPlugin& cpu_backend_plugin() {
  static const TenexBackendPlugin entry{TENEX_BACKEND_ABI_VERSION,
                                        plugin::kOpKinds,
                                        "cpu",
                                        TENEX_VERSION_STRING,
                                        TENEX_ELEMENT_ALL,
                                        nullptr,
                                        &plugin::create_backend<CpuBackend, TENEX_ELEMENT_ALL>};
  return entry;
}

}  // namespace tenex::detail

namespace tenex::plugin {

// What the CPU backend does in read() and write(), for every host-memory backend (HostBackend).
#define TENEX_DEFINE_HOST_VALUE(T)                                                  \
  View<const T> host_value(Storage<T>& storage) {                                   \
    return View<const T>{storage.elements(), storage.shape().size(), Device::host}; \
  }                                                                                 \
  void adopt_host_value(Storage<T>& storage, Buffer&& buffer) { storage.adopt(std::move(buffer)); }
TENEX_FOR_EACH_SCALAR(TENEX_DEFINE_HOST_VALUE)
#undef TENEX_DEFINE_HOST_VALUE

}  // namespace tenex::plugin
