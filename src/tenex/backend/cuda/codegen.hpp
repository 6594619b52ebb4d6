// CUDA C source of the backend's own kernels, compiled at run time by NVRTC (device.hpp)
// and cached per source text. Generating the source is plain string work, tested without
// a device (tests/backend/cuda/): every source is compiled to PTX there.
//
// - The strided kernel: out[p] = reduce over r of program(operand loads), every operand
//   read at offset + sum of index * stride over the output and the reduced modes (strides
//   of 0 broadcast, a repeated label sums its strides: a diagonal). It runs permutations
//   whose fastest mode stays fastest, reductions, traces, diagonals, broadcasts, slices,
//   chips, element-wise nodes and fused regions. Its source depends on the program's
//   structure, the ranks and the scalar type; extents, strides, pointers and the program's
//   constants are kernel arguments, so a loop that changes them compiles nothing new.
//   Two entry points: one thread per output element, or one block per output element
//   (a long reduction into few elements: a dot product, a trace).
// - The tiled permutation: a 32 x 32 tile through shared memory, reads coalesced along the
//   input's fastest mode and writes along the output's.
// - Utilities: identity, masks, triangles and the sign conventions of the decompositions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tenex/graph/op_kind.hpp"

namespace tenex::detail::cuda {

constexpr int max_rank = 8;        // modes of the output, and of the reduction, after merging
constexpr int max_operands = 8;    // operands of one strided kernel
constexpr int max_constants = 32;  // constants of one program

/// Layout of the strided kernel's argument, the same on host and device.
struct StridedArgs {
  long long out_extent[max_rank];
  long long red_extent[max_rank];
  long long stride[max_operands][max_rank];      // over the output modes
  long long red_stride[max_operands][max_rank];  // over the reduced modes
  long long offset[max_operands];
  const void* in[max_operands];
  void* out;
  long long out_total;
  long long red_total;
  double constant[max_constants];
  double beta;  // out = value + beta * out when the kernel accumulates (beta != 0)
};

/// What the source of a strided kernel depends on (the cache key is the source itself).
struct StridedSpec {
  std::vector<FusedInstr> program;  // constants are read from StridedArgs::constant in order
  ReduceOp reduce = ReduceOp::sum;
  int operands = 0;
  int out_rank = 0;
  int red_rank = 0;
  bool accumulate = false;
  bool is_double = true;
};

/// The constants of `program` in the order the generated code reads them (constant: x;
/// power: x; clamp: x, y). More than max_constants: the program is not supported.
std::vector<double> program_constants(const std::vector<FusedInstr>& program);
/// Why `program` cannot run on the device ("" when it can): callables of tenex::map, too many
/// operands or constants.
std::string unsupported_program(const std::vector<FusedInstr>& program, std::size_t operands);

/// Entry points: "tenex_strided_thread" and "tenex_strided_block" (blockDim.x == 256).
std::string strided_source(const StridedSpec& spec);
/// The __device__ function of a function of the table (tenex/graph/functions.hpp), its cuda
/// column as the body: "__device__ __forceinline__ T tenex_exp(T a, T b, T x, T y) { return
/// exp(a); }". strided_source writes the ones its program and reduction use, and calls them.
std::string device_function(FusedOp op);
/// "tenex_exp": the name of that function. Not a function of the table: InternalError.
std::string device_function_name(FusedOp op);

/// Layout of the tiled permutation's argument. out = alpha * in permuted (+ beta * out).
/// Mode q of the output is the input's fastest; the output's last mode is its own fastest.
struct TransposeArgs {
  long long rest_extent[max_rank];  // the other modes
  long long rest_in[max_rank];
  long long rest_out[max_rank];
  long long rest_rank;
  long long rest_total;
  long long extent_q;      // extent of the input's fastest mode
  long long extent_l;      // extent of the output's fastest mode
  long long in_stride_l;   // input stride of the output's fastest mode
  long long out_stride_q;  // output stride of the input's fastest mode
  const void* in;
  void* out;
  double alpha;
  double beta;
};
/// Entry point "tenex_transpose" (blockDim (32, 8)).
std::string transpose_source(bool is_double);

/// One operand of a strided kernel: its labels (a repeated label is a diagonal), its extents
/// (which give its row-major strides) and the element where it starts.
struct StridedOperand {
  std::vector<std::string> labels;
  std::vector<std::size_t> extents;
  long long offset = 0;
};
/// Lays out a strided kernel over `out_labels` (`out_extents`, contiguous) that sums the
/// operands' other labels, neighbouring modes merged where every operand (and the output)
/// walks them as one. Sets spec.operands, spec.out_rank, spec.red_rank and every field of
/// `args` but in, out, constant and beta. Throws BackendError beyond max_rank / max_operands.
void plan_strided(const std::vector<StridedOperand>& operands, const std::vector<std::string>& out_labels,
                  const std::vector<std::size_t>& out_extents, StridedSpec& spec, StridedArgs& args);
/// One block per output element (a long reduction into few elements), else one thread.
bool strided_by_block(const StridedArgs& args);
/// Blocks each output point's reduction is split into (1: none): a reduction too long for
/// one block per point over too few points to fill the device (a dot product, a norm, a sum
/// into a few values) runs as tenex_strided_split into a buffer of out_total x splits
/// partial values, then tenex_strided_combine, which combines them in order and stores.
long long strided_splits(const StridedArgs& args);
/// The tiled permutation's arguments but pointers, alpha and beta, for `in` rearranged to
/// `out_labels`; false when that is not a whole permutation whose fastest mode moves (the
/// strided kernel then runs it, coalesced already or not a permutation).
bool plan_transpose(const StridedOperand& in, const std::vector<std::string>& out_labels,
                    const std::vector<std::size_t>& out_extents, TransposeArgs& args);


/// Entry points (all grid-stride loops):
///   tenex_set_identity(T* a, long long n)                      a = I (n x n)
///   tenex_apply_mask(T* a, const unsigned char* keep, long long n)
///   tenex_zero_triangle(T* a, long long rows, long long cols, int upper)   zero the strict upper
///     (upper != 0) or lower part of a row-major matrix
///   tenex_fix_signs(T* cols, long long rows, long long k, long long ld_cols, T* paired, long long cols_paired)
///     column j of the row-major rows x k matrix `cols` (row stride ld_cols) gets its entry of largest
///     magnitude positive (the first on ties); row j of `paired` (k x cols_paired) flips with it.
///   tenex_fix_qr(T* q, long long m, long long k, T* r, long long n)   R's diagonal non-negative
std::string utility_source(bool is_double);

/// The C++ expression of a double constant that reads back exactly ("0x1.8p+1").
std::string exact_literal(double value);

}  // namespace tenex::detail::cuda
