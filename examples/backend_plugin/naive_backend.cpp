// A reference backend in naive loops, built outside tenex against its installed headers and
// loaded as a plugin (docs/extending.md, "Writing a backend"):
//
//   cmake -S examples/backend_plugin -B build-plugin -DCMAKE_PREFIX_PATH=<tenex's prefix>
//   cmake --build build-plugin
//   TENEX_PLUGIN_PATH=$PWD/build-plugin TENEX_BACKEND=naive ./my_program
//
// It runs the Einstein kinds, contractions, sums over modes and diagonals, permutations,
// element-wise sums, differences, quotients and scales, each as one loop over every index of
// the labels involved, and declines everything else in supports(): the decompositions, matrix
// functions, slices, masks, fused nodes and sparse layouts run on the CPU backend. It is
// slow on purpose, and short: the whole of what a backend must do besides its kernels is
// HostBackend's (memory is the host's) and the plugin entry at the end.
#include <complex>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tenex/backend/plugin.hpp>

namespace {

using tenex::OpKind;
using tenex::OpNode;
using tenex::plugin::KernelArgs;
using tenex::plugin::KernelCount;

template <class T>
T conj_if(T x, bool conj) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    return conj ? std::conj(x) : x;
  } else {
    (void)conj;
    return x;
  }
}

/// The labels of one loop nest: the result's first, then every other label an operand has,
/// with their extents; each operand's and the result's strides over the nest's positions.
struct Nest {
  std::vector<std::string> labels;
  std::vector<std::size_t> extents;

  void add(const std::vector<std::string>& ls, const std::vector<std::size_t>& es) {
    for (std::size_t i = 0; i < ls.size(); ++i) {
      bool known = false;
      for (const std::string& l : labels) known = known || l == ls[i];
      if (!known) {
        labels.push_back(ls[i]);
        extents.push_back(es[i]);
      }
    }
  }
  /// For each position of the nest, the stride of a row-major tensor with labels `ls` and
  /// extents `es` (a repeated label, a diagonal, adds its strides; a missing one is 0).
  std::vector<std::size_t> strides(const std::vector<std::string>& ls, const std::vector<std::size_t>& es) const {
    std::vector<std::size_t> out(labels.size(), 0);
    std::size_t stride = 1;
    for (std::size_t i = ls.size(); i-- > 0;) {
      for (std::size_t p = 0; p < labels.size(); ++p) {
        if (labels[p] == ls[i]) out[p] += stride;
      }
      stride *= es[i];
    }
    return out;
  }
  std::size_t size() const {
    std::size_t n = 1;
    for (std::size_t e : extents) n *= e;
    return n;
  }
};

/// out[result] = sum over the other labels of f(offsets of each operand): the one loop every
/// kind of this backend is.
template <class T, class F>
void loop(const Nest& nest, const std::vector<std::vector<std::size_t>>& strides,
          const std::vector<std::size_t>& out_strides, F&& f) {
  const std::size_t rank = nest.labels.size(), total = nest.size();
  std::vector<std::size_t> index(rank, 0), offsets(strides.size(), 0);
  std::size_t out = 0;
  for (std::size_t flat = 0; flat < total; ++flat) {
    f(out, offsets);
    for (std::size_t p = rank; p-- > 0;) {  // the next index: the last label fastest
      ++index[p];
      out += out_strides[p];
      for (std::size_t k = 0; k < strides.size(); ++k) offsets[k] += strides[k][p];
      if (index[p] < nest.extents[p]) break;
      out -= out_strides[p] * index[p];
      for (std::size_t k = 0; k < strides.size(); ++k) offsets[k] -= strides[k][p] * index[p];
      index[p] = 0;
    }
  }
}

/// `args` with every operand that shares the result's memory (the executor may hand an addend's
/// buffer over to the result) read from a copy held in `copies`.
template <class T>
KernelArgs<T> unaliased(const KernelArgs<T>& args, std::vector<std::vector<T>>& copies) {
  KernelArgs<T> out = args;
  copies.reserve(args.operands.size());
  for (auto& operand : out.operands) {
    if (operand.data == args.out.data) {
      copies.emplace_back(operand.data, operand.data + operand.size);
      operand.data = copies.back().data();
    }
  }
  return out;
}

/// out = sum over the labels `out_labels` lacks of the product of the operands (read as
/// `operand_labels`), each conjugated where asked, times alpha.
template <class T>
double einsum(const KernelArgs<T>& args, const std::vector<const std::vector<std::string>*>& operand_labels, T alpha,
              const std::vector<bool>& conj = {}) {
  Nest nest;
  nest.add(args.node.labels, args.node.extents);
  for (std::size_t k = 0; k < operand_labels.size(); ++k) nest.add(*operand_labels[k], args.operand_nodes[k]->extents);
  std::vector<std::vector<std::size_t>> strides;
  for (std::size_t k = 0; k < operand_labels.size(); ++k) {
    strides.push_back(nest.strides(*operand_labels[k], args.operand_nodes[k]->extents));
  }
  const std::vector<std::size_t> out_strides = nest.strides(args.node.labels, args.node.extents);
  T* out = args.out.data;
  for (std::size_t i = 0; i < args.out.size; ++i) out[i] = T(0);
  loop<T>(nest, strides, out_strides, [&](std::size_t o, const std::vector<std::size_t>& at) {
    T product = alpha;
    for (std::size_t k = 0; k < at.size(); ++k) {
      product *= conj_if(args.operands[k].data[at[k]], k < conj.size() && conj[k]);
    }
    out[o] += product;
  });
  return static_cast<double>(nest.size() * operand_labels.size());
}

template <class T>
class Naive final : public tenex::plugin::HostBackend<T> {
 public:
  std::string_view name() const override { return "naive"; }

  bool supports(const OpNode& node, std::string& why) const override {
    if (node.dtype == tenex::DType::shape) {
      why = "the naive backend evaluates tensors, not shapes";
      return false;
    }
    switch (node.kind) {
      case OpKind::input:
      case OpKind::output:
      case OpKind::reduce:
      case OpKind::contract:
      case OpKind::add:
      case OpKind::subtract:
      case OpKind::divide:
      case OpKind::scale: return true;
      default: why = "the naive backend runs the Einstein kinds only"; return false;
    }
  }
  std::string describe(const OpNode& node) const override {
    return node.kind == OpKind::input || node.kind == OpKind::output ? std::string() : std::string("naive loops");
  }

  KernelCount run_output(const tenex::OutputParams& params, const KernelArgs<T>& given) override {
    std::vector<std::vector<T>> copies;
    (void)einsum<T>(unaliased(given, copies), {&params.operand_labels}, T(1));
    return {0, 1};
  }
  KernelCount run_reduce(const tenex::ReduceParams&, const KernelArgs<T>& given) override {
    std::vector<std::vector<T>> copies;
    const KernelArgs<T> args = unaliased(given, copies);
    return {einsum<T>(args, {&args.operand_nodes[0]->labels}, T(1)), 1};
  }
  KernelCount run_contract(const tenex::ContractParams& p, const KernelArgs<T>& given) override {
    std::vector<std::vector<T>> copies;
    const KernelArgs<T> args = unaliased(given, copies);
    const double flops = einsum<T>(args, {&args.operand_nodes[0]->labels, &args.operand_nodes[1]->labels},
                                   static_cast<T>(p.alpha), {p.conj_a, p.conj_b});
    if (args.operands.size() == 3) add_addend(static_cast<T>(p.beta), args);
    return {flops, 1};
  }
  KernelCount run_add(const tenex::AddParams& p, const KernelArgs<T>& args) override {
    return binary(p, args, [](T a, T b) { return a + b; });
  }
  KernelCount run_subtract(const tenex::SubtractParams& p, const KernelArgs<T>& args) override {
    return binary(p, args, [](T a, T b) { return a - b; });
  }
  KernelCount run_divide(const tenex::DivideParams& p, const KernelArgs<T>& args) override {
    return binary(p, args, [](T a, T b) { return a / b; });
  }
  KernelCount run_scale(const tenex::ScaleParams& p, const KernelArgs<T>& args) override {
    const T alpha = tenex::scalar_factor<T>(p.alpha, p.alpha_imag);
    for (std::size_t i = 0; i < args.out.size; ++i) args.out.data[i] = alpha * args.operands[0].data[i];
    return {static_cast<double>(args.out.size), 1};
  }

 private:
  /// out += beta * d, d the contraction's addend with the result's labels in any order.
  static void add_addend(T beta, const KernelArgs<T>& args) {
    Nest nest;
    nest.add(args.node.labels, args.node.extents);
    const auto d = nest.strides(args.operand_nodes[2]->labels, args.operand_nodes[2]->extents);
    const auto out = nest.strides(args.node.labels, args.node.extents);
    loop<T>(nest, {d}, out, [&](std::size_t o, const std::vector<std::size_t>& at) {
      args.out.data[o] += beta * args.operands[2].data[at[0]];
    });
  }
  /// out = op(alpha * a, alpha_b * b), each operand broadcast along the labels it lacks.
  template <class F>
  static KernelCount binary(const tenex::ElementwiseParams& p, const KernelArgs<T>& given, F&& op) {
    std::vector<std::vector<T>> copies;
    const KernelArgs<T> args = unaliased(given, copies);
    Nest nest;
    nest.add(args.node.labels, args.node.extents);
    const auto a = nest.strides(args.operand_nodes[0]->labels, args.operand_nodes[0]->extents);
    const auto b = nest.strides(args.operand_nodes[1]->labels, args.operand_nodes[1]->extents);
    const auto out = nest.strides(args.node.labels, args.node.extents);
    const T alpha = static_cast<T>(p.alpha), alpha_b = static_cast<T>(p.alpha_b);
    loop<T>(nest, {a, b}, out, [&](std::size_t o, const std::vector<std::size_t>& at) {
      args.out.data[o] = op(alpha * args.operands[0].data[at[0]], alpha_b * args.operands[1].data[at[1]]);
    });
    return {static_cast<double>(nest.size()), 1};
  }
};

}  // namespace

TENEX_BACKEND_PLUGIN("naive", Naive, TENEX_ELEMENT_ALL)
