// The fused element-wise kernel for complex elements: the same contract as fused() for
// float and double (kernels.hpp), evaluated one point at a time. Highway has no complex
// vectors, and a complex product or quotient is several real operations, so the kernel walks
// the iteration space on the OpenMP threads, each thread owning whole result elements (their
// sums run in a fixed order, so the result does not depend on the thread count), and
// evaluates the program with the table's scalar definitions (tenex/graph/functions.hpp).
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <complex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/graph/functions.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {

namespace {

// One mode of the iteration space: its extent and each array's element stride along it.
struct SpaceMode {
  std::size_t extent = 1;
  std::ptrdiff_t out = 0;
  std::vector<std::ptrdiff_t> in;
};

// The operands' offsets at flat index `flat` of `modes` (row-major), added to `at`.
void add_offsets(const std::vector<SpaceMode>& modes, std::size_t flat, std::vector<std::ptrdiff_t>& at) {
  for (std::size_t d = modes.size(); d-- > 0;) {
    const auto x = static_cast<std::ptrdiff_t>(flat % modes[d].extent);
    flat /= modes[d].extent;
    for (std::size_t k = 0; k < at.size(); ++k) at[k] += x * modes[d].in[k];
  }
}

template <class T>
T evaluate(const FusedParams& params, const std::vector<const T*>& operands, const std::vector<std::ptrdiff_t>& at,
           std::vector<T>& values) {
  const std::size_t n = params.program.size();
  for (std::size_t i = 0; i < n; ++i) {
    const FusedInstr& in = params.program[i];
    using R = real_type_t<T>;
    if (in.op == FusedOp::load) {
      values[i] = operands[in.a][at[in.a]];
    } else if (in.op == FusedOp::constant) {
      values[i] = T(static_cast<R>(in.x), static_cast<R>(in.y));  // a complex constant: x + i y
    } else if (in.op == FusedOp::call) {
      const ScalarFunction& fn = *params.functions[in.b];
      if constexpr (std::is_same_v<T, std::complex<double>>) {
        values[i] = fn.c128(values[in.a]);
      } else {
        values[i] = fn.c64(values[in.a]);
      }
    } else {
      const T b = function_info(in.op).values == 2 ? values[in.b] : T(0);
      values[i] = apply_function(in.op, values[in.a], b, T(static_cast<R>(in.x)), T(static_cast<R>(in.y)));
    }
  }
  return values[n - 1];
}

template <class T>
KernelCount fused_complex(const FusedParams& params, const std::vector<const T*>& operands,
                          const std::vector<Modes>& operand_modes, const std::vector<Extents>& operand_extents, T* out,
                          const Modes& out_modes, const Extents& out_extents) {
  const std::size_t nin = operands.size();
  if (operand_modes.size() != nin || operand_extents.size() != nin) {
    throw std::invalid_argument("fused: operand modes and extents do not match the operands");
  }
  if (params.program.empty()) throw std::invalid_argument("fused: an empty program");
  for (const FusedInstr& in : params.program) {
    if (is_function(in.op) && !defined_for_complex(in.op)) {
      throw std::invalid_argument("fused: " + std::string(function_info(in.op).name) +
                                  " is not defined for complex numbers");
    }
  }
  if (params.reduce != ReduceOp::sum) throw std::invalid_argument("fused: max and min of complex numbers");
  // The result's modes, then the modes only operands have (summed).
  std::vector<SpaceMode> kept(out_modes.size()), summed;
  std::size_t out_size = 1;
  for (std::size_t d = out_modes.size(); d-- > 0;) {
    kept[d].extent = out_extents[d];
    kept[d].out = static_cast<std::ptrdiff_t>(out_size);
    kept[d].in.assign(nin, 0);
    out_size *= out_extents[d];
  }
  std::vector<int> summed_labels;
  for (std::size_t k = 0; k < nin; ++k) {
    std::ptrdiff_t stride = 1;
    for (std::size_t d = operand_modes[k].size(); d-- > 0;) {
      const int label = operand_modes[k][d];
      const auto found = std::find(out_modes.begin(), out_modes.end(), label);
      SpaceMode* mode = nullptr;
      if (found != out_modes.end()) {
        mode = &kept[static_cast<std::size_t>(found - out_modes.begin())];
      } else {
        const auto s = std::find(summed_labels.begin(), summed_labels.end(), label);
        if (s == summed_labels.end()) {
          summed_labels.push_back(label);
          summed.push_back({operand_extents[k][d], 0, std::vector<std::ptrdiff_t>(nin, 0)});
          mode = &summed.back();
        } else {
          mode = &summed[static_cast<std::size_t>(s - summed_labels.begin())];
        }
      }
      if (mode->extent != operand_extents[k][d]) {
        throw std::invalid_argument("fused: mode " + std::to_string(label) + " has extents " +
                                    std::to_string(mode->extent) + " and " + std::to_string(operand_extents[k][d]));
      }
      mode->in[k] = stride;
      stride *= static_cast<std::ptrdiff_t>(operand_extents[k][d]);
    }
  }
  std::size_t summed_size = 1;
  for (const SpaceMode& m : summed) summed_size *= m.extent;
  double ops = 0;
  for (const FusedInstr& in : params.program) {
    if (in.op != FusedOp::load && in.op != FusedOp::constant) ops += 1;
  }
  if (!summed.empty()) ops += 1;
  const double points = static_cast<double>(out_size) * static_cast<double>(summed_size);
  [[maybe_unused]] const bool par = points >= static_cast<double>(tuning::kFusedParallelMin);
#pragma omp parallel if (par)
  {
    std::vector<T> values(params.program.size());
    std::vector<std::ptrdiff_t> base(nin), at(nin);
#pragma omp for schedule(static)
    for (std::size_t o = 0; o < out_size; ++o) {
      std::fill(base.begin(), base.end(), 0);
      add_offsets(kept, o, base);
      T sum(0);
      for (std::size_t s = 0; s < summed_size; ++s) {
        at = base;
        add_offsets(summed, s, at);
        sum += evaluate(params, operands, at, values);
      }
      out[o] = sum;
    }
  }
  return {ops * points, 1};
}

}  // namespace

#define TENEX_DEFINE_FUSED_COMPLEX(T)                                                                                \
  template <>                                                                                                        \
  KernelCount fused<T>(const FusedParams& params, const std::vector<const T*>& operands,                             \
                       const std::vector<Modes>& operand_modes, const std::vector<Extents>& operand_extents, T* out, \
                       const Modes& out_modes, const Extents& out_extents) {                                         \
    return fused_complex(params, operands, operand_modes, operand_extents, out, out_modes, out_extents);             \
  }
TENEX_FOR_EACH_COMPLEX_SCALAR(TENEX_DEFINE_FUSED_COMPLEX)
#undef TENEX_DEFINE_FUSED_COMPLEX

}  // namespace tenex::detail::cpu
