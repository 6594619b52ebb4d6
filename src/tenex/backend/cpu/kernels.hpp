// CPU kernels on dense row-major arrays. Private to the CPU backend.
//
// Tensors here are described by their extents and a list of integer mode
// ids (one id per mode, row-major order). Two operands that share a mode id
// share that index. Modes are unique within an operand unless said otherwise.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tenex/backend/kernel_count.hpp"
#include "tenex/graph/op_kind.hpp"

namespace tenex::detail::cpu {

using Modes = std::vector<int>;
using Extents = std::vector<std::size_t>;
using Strides = std::vector<std::ptrdiff_t>;

using detail::KernelCount;

/// out = alpha * in permuted: out mode d is in mode perm[d]. Cache-blocked, multithreaded.
template <class T>
KernelCount permute(const T* in, const Extents& in_extents, const std::vector<std::size_t>& perm, T* out,
                    T alpha = T(1));

/// out[x] = alpha * in[x] + beta * out[x] for every multi-index x of `extents`, where in and
/// out address element x through their own strides (in elements, non-negative). The out
/// strides must give distinct elements distinct addresses; in and out must not overlap.
/// beta == 0 means out is not read. The permutation kernel behind permute, the scatter of
/// the contraction engine and the pre-permutations of its operands. `parallel == false`
/// runs on the calling thread only (for use from inside another parallel region).
template <class T>
KernelCount strided_copy(const T* in, const Strides& in_strides, T* out, const Strides& out_strides,
                         const Extents& extents, T alpha, T beta, bool parallel = true);

/// out = in (strided_copy with alpha 1, beta 0, on the calling thread) for packing part of a
/// large array into a small buffer: rows are visited in the input's memory order, so that
/// the reads from memory form one stream while the writes land in cache.
template <class T>
void strided_gather(const T* in, const Strides& in_strides, T* out, const Strides& out_strides, const Extents& extents);

/// out[out_modes] = alpha * sum over the modes of `in` that out lacks of in[in_modes].
/// in_modes MAY repeat (a repeated id takes the diagonal); out_modes are unique and a
/// subset of in_modes, in any order. Covers diagonal, trace, partial sums and permutation.
template <class T>
KernelCount reduce(const T* in, const Extents& in_extents, const Modes& in_modes, T* out, const Modes& out_modes,
                   T alpha = T(1));

/// c[c_modes] = alpha * sum a[a_modes] * b[b_modes] + beta * c.
/// Each mode of c is in a or b (or both: a Hadamard / batch mode). A mode in a and b that c
/// lacks is contracted; a mode in only one operand that c lacks is summed out first.
/// Extents of c follow from a and b. Uses GEMM (cblas) with the fewest permutations.
/// beta == 0 means c is not read (may be uninitialised). flops counts 2 per product summed
/// (2*m*n*k*batch) plus the additions of any summing out. Runs on the OpenMP threads; while
/// they call GEMMs a pthreads OpenBLAS is set to one thread (then restored). Scratch memory
/// comes from the block cache (tensor/host_memory.hpp), which keeps it for the next call.
/// Which operands of a complex contraction are read conjugated (a real one ignores it): the
/// GEMM reads them conjugated (ConjTrans, ConjNoTrans), in place or from the copy a plan lays
/// out afresh; the plain loops (tiny products) read a conjugated copy.
struct Conjugated {
  bool a = false, b = false;
};
template <class T>
KernelCount contract(T alpha, const T* a, const Extents& a_extents, const Modes& a_modes, const T* b,
                     const Extents& b_extents, const Modes& b_modes, T beta, T* c, const Modes& c_modes,
                     Conjugated conj = {});

/// For tests: contract() chooses among candidate plans (which operands to permute, which
/// modes to fuse into the GEMM, how c is written, or plain loops). contract_plan_count gives
/// how many there are for a problem; contract_with_plan runs candidate `plan` instead of the
/// cheapest, so that a test can check every path on small shapes. `plan` must be below the
/// count; the last candidate is always the plain-loop kernel.
template <class T>
std::size_t contract_plan_count(const Extents& a_extents, const Modes& a_modes, const Extents& b_extents,
                                const Modes& b_modes, const Modes& c_modes, bool beta_zero);
template <class T>
KernelCount contract_with_plan(std::size_t plan, T alpha, const T* a, const Extents& a_extents, const Modes& a_modes,
                               const T* b, const Extents& b_extents, const Modes& b_modes, T beta, T* c,
                               const Modes& c_modes, Conjugated conj = {});
/// For bench/contraction_plans: what candidate `plan` does (operands permuted or packed per
/// tile, how c is written, the fused groups) and the model's predicted seconds, in one line.
template <class T>
std::string contract_plan_description(std::size_t plan, const Extents& a_extents, const Modes& a_modes,
                                      const Extents& b_extents, const Modes& b_modes, const Modes& c_modes,
                                      bool beta_zero);

/// c[c_modes] = beta * d[d_modes], d_modes a permutation of c_modes (c_extents gives the
/// extents in c's order): the start of a contraction with an addend, which then runs with
/// beta = 1. Counts the multiplications as flops (none for beta == 1) and no call: it is
/// part of the contraction's kernel.
template <class T>
KernelCount assign_scaled(T beta, const T* d, const Modes& d_modes, T* c, const Modes& c_modes,
                          const Extents& c_extents);

enum class BinaryOp { add, subtract, multiply, divide };

/// c[c_modes] = op(alpha_a * a[a_modes], alpha_b * b[b_modes]), broadcasting: a_modes and
/// b_modes are subsets of c_modes (any order). c_extents gives every mode's extent.
template <class T>
KernelCount elementwise(BinaryOp op, T alpha_a, const T* a, const Modes& a_modes, T alpha_b, const T* b,
                        const Modes& b_modes, T* c, const Extents& c_extents, const Modes& c_modes);

/// A fused element-wise node: out[out_modes] = reduce over the modes the operands have and
/// out lacks of the program's value at each point (FusedParams). Operand modes are unique
/// and shared modes have one extent; an operand lacking a mode is broadcast along it.
template <class T>
KernelCount fused(const FusedParams& params, const std::vector<const T*>& operands,
                  const std::vector<Modes>& operand_modes, const std::vector<Extents>& operand_extents, T* out,
                  const Modes& out_modes, const Extents& out_extents);
// Complex elements: fused_complex.cpp (fused.cpp holds float and double).
#define TENEX_DECLARE_FUSED_COMPLEX(T)                                                                               \
  template <>                                                                                                        \
  KernelCount fused<T>(const FusedParams& params, const std::vector<const T*>& operands,                             \
                       const std::vector<Modes>& operand_modes, const std::vector<Extents>& operand_extents, T* out, \
                       const Modes& out_modes, const Extents& out_extents);
TENEX_FOR_EACH_COMPLEX_SCALAR(TENEX_DECLARE_FUSED_COMPLEX)
#undef TENEX_DECLARE_FUSED_COMPLEX

/// c[i] = alpha * a[i] over n elements.
template <class T>
KernelCount scale(T alpha, const T* a, T* c, std::size_t n);

}  // namespace tenex::detail::cpu
