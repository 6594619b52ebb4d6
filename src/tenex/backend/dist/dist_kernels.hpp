// The distributed backend's helpers shared by its kernel files (dist_backend.cpp: values,
// storages and the entry; dist_contract.cpp; dist_elementwise.cpp; dist_linalg.cpp): handles
// onto distributed values, layouts, workspace queries, checks of ScaLAPACK's results.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "tenex/backend/dist/dist_backend.hpp"
#include "tenex/backend/dist/scalapack.hpp"
#include "tenex/backend/matrix_checks.hpp"
#include "tenex/backend/scalar_entries.hpp"
#include "tenex/config.hpp"
#include "tenex/error.hpp"
#include "tenex/graph/functions.hpp"
#include "tenex/labels.hpp"
#include "tenex/scalar.hpp"
#include "tenex/settings.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::dist::detail::kernels {

using Labels = std::vector<std::string>;
using Extents = std::vector<std::size_t>;
template <class T>
using MatrixPtr = std::shared_ptr<DistMatrix<T>>;

// The handles alive in storages' device copies, so that read() tells ours from others'.
inline std::mutex handles_mutex;
inline std::unordered_set<const void*>& live_handles() {
  static auto* set = new std::unordered_set<const void*>;  // sets may run at exit
  return *set;
}

template <class T>
void release_value(void* data, std::size_t, void*) noexcept {
  {
    std::lock_guard<std::mutex> lock(handles_mutex);
    live_handles().erase(data);
  }
  delete static_cast<DistValue<T>*>(data);
}

template <class T>
Buffer new_handle(std::size_t bytes) {
  auto* value = new DistValue<T>;
  {
    std::lock_guard<std::mutex> lock(handles_mutex);
    live_handles().insert(value);
  }
  return Buffer(value, bytes, tenex::detail::Device::host, &release_value<T>);
}

inline bool is_handle(const void* data) {
  std::lock_guard<std::mutex> lock(handles_mutex);
  return data && live_handles().count(data) != 0;
}

template <class T>
DistValue<T>& value_of(const View<const T>& view) {
  return *reinterpret_cast<DistValue<T>*>(const_cast<T*>(view.data));
}
template <class T>
DistValue<T>& value_of(const View<T>& view) {
  return *reinterpret_cast<DistValue<T>*>(view.data);
}

/// The current context. Not held here: the user's Context (or a DistributedTensor) keeps it
/// alive while a set runs, and holding it longer would keep its grid past its Context.
inline const DistContext& context() {
  const std::shared_ptr<DistContext> held = current_context();
  if (!held) {
    throw BackendError(
        "tenex: the distributed backend has no dist::Context: make a tenex::dist::Context (on every rank) before "
        "running sets on BackendKind::distributed");
  }
  return *held;
}

template <class T>
const MatrixPtr<T>& operand(const KernelArgs<T>& args, std::size_t k) {
  const DistValue<T>& v = value_of(args.operands[k]);
  if (v.parts.empty()) throw InternalError("tenex: distributed backend: an operand has no value");
  if (v.parts[0]->desc[1] != context().blacs) {
    throw BackendError("tenex: distributed backend: operand " + std::to_string(k) + " " +
                       tenex::detail::describe(args.operand_nodes[k]->labels, args.operand_nodes[k]->extents) +
                       " was made on another tenex::dist::Context than the current one (the latest made); use one "
                       "Context at a time, or gather the tensor and build it again on the new one");
  }
  return v.parts[0];
}

template <class T>
MatrixPtr<T> allocate_matrix(const DistContext& ctx, Extents extents, std::size_t split) {
  MatrixPtr<T> m;
  agreed(ctx, [&] { m = make_matrix<T>(ctx, std::move(extents), split); });
  return m;
}
template <class T>
MatrixPtr<T> allocate_canonical(const DistContext& ctx, Extents extents) {
  const std::size_t split = canonical_split(extents.size());
  return allocate_matrix<T>(ctx, std::move(extents), split);
}

inline bool all_distinct(const Labels& labels) {
  for (std::size_t a = 0; a < labels.size(); ++a) {
    for (std::size_t b = a + 1; b < labels.size(); ++b) {
      if (labels[a] == labels[b]) return false;
    }
  }
  return true;
}

/// `src` (labels `from`) in the layout of labels `to` (extents `extents`, split `split`):
/// the same matrix when it already is, else a remap.
template <class T>
MatrixPtr<T> in_layout(const DistContext& ctx, const MatrixPtr<T>& src, const Labels& from, const Labels& to,
                       const Extents& extents, std::size_t split, Accumulate reduce = Accumulate::sum) {
  if (from == to && src->split == split && src->extents == extents && all_distinct(from)) return src;
  MatrixPtr<T> dst = allocate_matrix<T>(ctx, extents, split);
  RemapRule rule = rule_by_labels(from, to);
  rule.reduce = reduce;
  remap(ctx, *src, rule, *dst);
  return dst;
}
template <class T>
MatrixPtr<T> in_canonical(const DistContext& ctx, const MatrixPtr<T>& src, const Labels& from, const Labels& to,
                          const Extents& extents, Accumulate reduce = Accumulate::sum) {
  return in_layout(ctx, src, from, to, extents, canonical_split(extents.size()), reduce);
}

template <class T>
void set_out(const KernelArgs<T>& args, std::vector<MatrixPtr<T>> parts) {
  value_of(args.out).parts = std::move(parts);
}

inline std::size_t find_label(const Labels& labels, const std::string& l) {
  return static_cast<std::size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin());
}
inline bool has(const Labels& labels, const std::string& l) { return find_label(labels, l) < labels.size(); }

/// A number of a program (a function's parameter) as T: a complex T takes it as its real
/// part, as the CPU's complex kernel does.
template <class T>
T parameter(double x) {
  return scalar_factor<T>(x, 0.0);
}

/// The program over `n` points at once (one local column of the iteration space): `loads[k]`
/// holds operand k's values there; each function is applied by its scalar definition in the
/// table (tenex/graph/functions.hpp), as the CPU backend evaluates it. Returns the values
/// of the program's last instruction (in `values`, or an operand's column).
template <class T>
class ColumnProgram {
 public:
  explicit ColumnProgram(const FusedParams& params) : params_(params) {
    for (const FusedInstr& in : params.program) arity_.push_back(fused_op_values(in.op));
    values_.resize(params.program.size());
    at_.resize(params.program.size());
  }

  const T* run(const std::vector<const T*>& loads, std::size_t n) {
    if (zeros_.size() < n) zeros_.assign(n, T(0));
    const auto& program = params_.program;
    for (std::size_t i = 0; i < program.size(); ++i) {
      const FusedInstr& in_ = program[i];
      if (in_.op == FusedOp::load) {
        at_[i] = loads[in_.a];
        continue;
      }
      std::vector<T>& out = values_[i];
      if (out.size() < n) out.resize(n);
      T* v = out.data();
      at_[i] = v;
      if (in_.op == FusedOp::constant) {
        std::fill(v, v + n, scalar_factor<T>(in_.x, in_.y));  // complex sets: x + i y
        continue;
      }
      const T* a = at_[in_.a];
      const T* b = arity_[i] == 2 ? at_[in_.b] : zeros_.data();
      if (in_.op == FusedOp::call) {
        const ScalarFunction& f = *params_.functions.at(in_.b);
        for (std::size_t j = 0; j < n; ++j) {
          if constexpr (std::is_same_v<T, float>) {
            v[j] = f.f32(a[j]);
          } else if constexpr (std::is_same_v<T, double>) {
            v[j] = f.f64(a[j]);
          } else if constexpr (std::is_same_v<T, std::complex<float>>) {
            v[j] = f.c64(a[j]);
          } else {
            v[j] = f.c128(a[j]);
          }
        }
        continue;
      }
      const T x = parameter<T>(in_.x), y = parameter<T>(in_.y);
      switch (in_.op) {
        case FusedOp::load:
        case FusedOp::constant:
        case FusedOp::call: break;
#define TENEX_DIST_FUNCTION(op, name, values, parameters, keeps_zero, scalar, text, cuda)      \
  case FusedOp::op:                                                                            \
    for (std::size_t j = 0; j < n; ++j) v[j] = Function<FusedOp::op>::apply(a[j], b[j], x, y); \
    break;
          TENEX_FOR_EACH_FUNCTION(TENEX_DIST_FUNCTION)
#undef TENEX_DIST_FUNCTION
      }
    }
    return at_.back();
  }

 private:
  const FusedParams& params_;
  std::vector<int> arity_;
  std::vector<std::vector<T>> values_;
  std::vector<const T*> at_;
  std::vector<T> zeros_;
};

/// acc combined with v by a max or min reduction: the table's maximum and minimum, which
/// keep a NaN (std::max would drop it when it is the second operand).
template <class T>
T reduce_combine(Accumulate reduce, T acc, T v) {
  if (reduce == Accumulate::max) return Function<FusedOp::maximum>::apply(acc, v, T(0), T(0));
  if (reduce == Accumulate::min) return Function<FusedOp::minimum>::apply(acc, v, T(0), T(0));
  return acc + v;
}

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) {
    return MPI_FLOAT;
  } else if constexpr (std::is_same_v<T, double>) {
    return MPI_DOUBLE;
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    return MPI_C_FLOAT_COMPLEX;
  } else {
    return MPI_C_DOUBLE_COMPLEX;
  }
}

/// Sets the diagonal of a square matrix to one (the rest is zero already).
template <class T>
void set_identity(const DistContext& ctx, DistMatrix<T>& m) {
  for (int c = 0; c < m.local_cols; ++c) {
    const auto gc = m.global_col(ctx, c);
    for (int r = 0; r < m.local_rows; ++r) {
      if (m.global_row(ctx, r) == gc) m.local[static_cast<std::size_t>(c) * m.lld() + r] = T(1);
    }
  }
}

/// A vector (n x 1) holding `values`, which every rank has in full.
template <class T>
MatrixPtr<T> vector_of(const DistContext& ctx, const std::vector<T>& values, std::size_t n) {
  MatrixPtr<T> v = allocate_canonical<T>(ctx, {n});
  for (int c = 0; c < v->local_cols; ++c) {
    for (int r = 0; r < v->local_rows; ++r) {
      v->local[static_cast<std::size_t>(c) * v->lld() + r] = values[static_cast<std::size_t>(v->global_row(ctx, r))];
    }
  }
  return v;
}

template <class T>
MatrixPtr<T> copy_of(const DistContext& ctx, const DistMatrix<T>& m) {
  MatrixPtr<T> copy;
  agreed(ctx, [&] { copy = std::make_shared<DistMatrix<T>>(m); });
  return copy;
}

/// Zeroes the part of m strictly above (upper) or below (lower) its diagonal.
template <class T>
void zero_triangle(const DistContext& ctx, DistMatrix<T>& m, bool upper) {
  for (int c = 0; c < m.local_cols; ++c) {
    const auto gc = m.global_col(ctx, c);
    for (int r = 0; r < m.local_rows; ++r) {
      const auto gr = m.global_row(ctx, r);
      if (upper ? gc > gr : gr > gc) m.local[static_cast<std::size_t>(c) * m.lld() + r] = T(0);
    }
  }
}

/// Workspace size from a query's first element, padded (ScaLAPACK's queries are known to
/// fall short for some grids).
inline int padded(double query, int extra) {
  const double size = std::max(1.0, query) * 1.5 + extra + 256;
  if (size > static_cast<double>(std::numeric_limits<int>::max())) {
    throw BackendError("tenex: distributed backend: a ScaLAPACK workspace of " + std::to_string(size) +
                       " elements exceeds int; use smaller matrices or more ranks");
  }
  return static_cast<int>(size);
}

template <class T>
std::vector<T> workspace(const DistContext& ctx, double query, int extra) {
  std::vector<T> w;
  agreed(ctx, [&] { w.assign(static_cast<std::size_t>(padded(query, extra)), T(0)); });
  return w;
}

inline void check_info(const DistContext& ctx, int info, const std::string& routine, const std::string& what) {
  std::exception_ptr error;
  if (info < 0) {
    error = std::make_exception_ptr(InternalError("tenex: distributed backend: " + routine + " rejected argument " +
                                                  std::to_string(-info) + " (" + what + ")"));
  } else if (info > 0) {
    error = std::make_exception_ptr(
        NumericalError("tenex: " + what + " (" + routine + " info = " + std::to_string(info) + ")"));
  }
  agree(ctx, error);
}

/// Test switch: TENEX_DIST_FORCE_SYEVR=1 makes eigen_solve take p?syevr as if p?syevd's
/// workspace query had failed (docs/distributed.md).
inline bool force_syevr() {
  const char* v = tenex::detail::setting(tenex::detail::Setting::dist_force_syevr);
  return v && v[0] == '1';
}

template <class R>
R lamch(const DistContext& ctx, const char* what) {
  if constexpr (std::is_same_v<R, float>) {
    return pslamch_(&ctx.blacs, what);
  } else {
    return pdlamch_(&ctx.blacs, what);
  }
}

/// LAPACK reads one triangle of a symmetric (complex: Hermitian) matrix (and only the real
/// part of a complex diagonal), so a matrix that is not would give a wrong answer silently.
/// Throws NumericalError on every rank when max |a(i,j) - conj(a(j,i))| (diagonal_only, complex
/// only: max |imag a(i,i)|) exceeds the CPU backend's tolerance relative to max |a|. `what`
/// names the matrix ("a"; a text that starts with '(' is a description with its extents).
/// Collective.
template <class T>
void require_hermitian(const DistContext& ctx, const MatrixPtr<T>& a, std::size_t n, const char* operation,
                       const std::string& what, bool diagonal_only) {
  MatrixPtr<T> t;
  if (!diagonal_only) {
    RemapRule rule;
    rule.from = {1, 0};
    t = allocate_canonical<T>(ctx, {n, n});
    remap(ctx, *a, rule, *t);
  }
  double local[2] = {0, 0};  // largest deviation, max |a|
  for (int c = 0; c < a->local_cols; ++c) {
    const auto gc = a->global_col(ctx, c);
    for (int r = 0; r < a->local_rows; ++r) {
      const std::size_t at = static_cast<std::size_t>(c) * static_cast<std::size_t>(a->lld()) + r;
      const T x = a->local[at];
      local[1] = std::max(local[1], static_cast<double>(std::abs(x)));
      if (diagonal_only) {
        if constexpr (is_complex_v<T>) {
          if (a->global_row(ctx, r) == gc) local[0] = std::max(local[0], static_cast<double>(std::abs(x.imag())));
        }
      } else {
        local[0] = std::max(local[0], static_cast<double>(std::abs(x - conj_value(t->local[at]))));
      }
    }
  }
  double global[2] = {0, 0};
  MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, ctx.comm);
  const double tolerance = std::max(1024.0, 16.0 * static_cast<double>(n)) *
                           static_cast<double>(std::numeric_limits<real_type_t<T>>::epsilon());
  if (global[0] > tolerance * global[1]) {
    auto number = [](double x) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3g", x);
      return std::string(text);
    };
    const std::string size = std::to_string(n) + " x " + std::to_string(n);
    const std::string matrix = what.empty()     ? "the " + size + " matrix"
                               : what[0] == '(' ? "the matrix " + what
                                                : "the matrix " + what + " (" + size + ")";
    const std::string kind = is_complex_v<T> ? "Hermitian" : "symmetric";
    const std::string deviation = diagonal_only     ? "|imag a(i,i)|"
                                  : is_complex_v<T> ? "|a(i,j) - conj(a(j,i))|"
                                                    : "|a(i,j) - a(j,i)|";
    throw NumericalError("tenex: " + std::string(operation) + ": " + matrix + " is not " + kind + ": max " + deviation +
                         " = " + number(global[0]) + ", relative to max |a| = " + number(global[1]) +
                         " above the tolerance " + number(tolerance) + "; " + operation + " needs a " + kind +
                         " matrix");
  }
}


// ---- Matrix functions (inverse, solve, pow(a, double)): the CPU backend's checks and
// messages (backend/cpu/linalg.cpp), made collective. Every decision is taken from values all
// ranks hold alike (reduced or broadcast), so every rank throws the same error.

/// ScaLAPACK's name of a routine for T ("pdgetrf"; complex_suffix for complex T when given).
template <class T>
std::string routine(const char* suffix, const char* complex_suffix = nullptr) {
  // Appended, not "p" + name: GCC 12 inlines that operator+ into a false -Wrestrict (bug 105329).
  std::string name = "p";
  name += tenex::detail::lapack_routine_name<T>(suffix, complex_suffix);
  return name;
}

using tenex::detail::is_finite_entry;
using tenex::detail::is_nan_entry;
using tenex::detail::largest_part;
using tenex::detail::matrix_text;
using tenex::detail::scale_entry;
using tenex::detail::short_number;

/// The first element of m, in the tensor's row-major order, for which bad(x, row, col) holds
/// (row, col of the matricization), and value(x) of it, on every rank. Collective.
struct FirstEntry {
  bool found = false;
  std::uint64_t flat = 0;  // row-major offset in the tensor
  double value = 0;
};
template <class T, class Bad, class Value>
FirstEntry first_entry(const DistContext& ctx, const DistMatrix<T>& m, Bad bad, Value value) {
  constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t mine = none;
  double mine_value = -std::numeric_limits<double>::infinity();
  for (int c = 0; c < m.local_cols; ++c) {
    const auto gc = m.global_col(ctx, c);
    for (int r = 0; r < m.local_rows; ++r) {
      const T x = m.local[static_cast<std::size_t>(c) * static_cast<std::size_t>(m.lld()) + r];
      const auto gr = m.global_row(ctx, r);
      if (!bad(x, gr, gc)) continue;
      const auto flat =
          static_cast<std::uint64_t>(gr) * static_cast<std::uint64_t>(m.cols) + static_cast<std::uint64_t>(gc);
      if (flat < mine) {
        mine = flat;
        mine_value = value(x);
      }
    }
  }
  FirstEntry out;
  MPI_Allreduce(&mine, &out.flat, 1, MPI_UINT64_T, MPI_MIN, ctx.comm);
  if (out.flat == none) return out;
  out.found = true;
  if (mine != out.flat) mine_value = -std::numeric_limits<double>::infinity();
  MPI_Allreduce(&mine_value, &out.value, 1, MPI_DOUBLE, MPI_MAX, ctx.comm);
  return out;
}

/// Throws, on every rank, for the first non-finite entry of m (lower_only: of its lower
/// triangle), named (flat / columns, flat % columns) as the CPU backend names it.
template <class T>
void require_finite(const DistContext& ctx, const DistMatrix<T>& m, std::size_t columns, bool lower_only,
                    const char* operation, const char* which) {
  const FirstEntry bad = first_entry(
      ctx, m,
      [&](T x, std::int64_t row, std::int64_t col) { return (!lower_only || col <= row) && !is_finite_entry(x); },
      [](T x) { return is_nan_entry(x) ? 1.0 : 0.0; });
  if (!bad.found) return;
  throw NumericalError("tenex: " + std::string(operation) + ": " + which + " has a non-finite entry (" +
                       (bad.value == 1.0 ? "nan" : "inf") + ") at (" + std::to_string(bad.flat / columns) + ", " +
                       std::to_string(bad.flat % columns) + "); a decomposition needs finite input");
}

/// The power of two 2^e at or below max |a| (complex: its parts), 0 for a zero matrix: a is
/// factored as a / 2^e, as on the CPU (subnormal and huge matrices). Collective.
template <class T>
int scale_exponent(const DistContext& ctx, const DistMatrix<T>& m) {
  double mine = 0, largest = 0;
  for (const T& x : m.local) mine = std::max(mine, largest_part(x));
  MPI_Allreduce(&mine, &largest, 1, MPI_DOUBLE, MPI_MAX, ctx.comm);
  int e = 0;
  if (largest > 0) std::frexp(largest, &e);
  return largest > 0 ? e - 1 : 0;
}
template <class T>
void scale_by_power_of_two(DistMatrix<T>& m, int e) {
  if (e == 0) return;
  for (T& x : m.local) x = scale_entry(x, e);
}

/// max_i sum_j |a(i,j)|: the norm p?gecon takes with 'I' (the CPU's LAPACK, which sees a^T,
/// takes the 1-norm of a^T: the same number). Collective.
template <class T>
real_type_t<T> row_sum_norm(const DistContext& ctx, const DistMatrix<T>& m) {
  std::vector<double> mine(static_cast<std::size_t>(m.rows), 0.0), sums(mine.size(), 0.0);
  for (int c = 0; c < m.local_cols; ++c) {
    for (int r = 0; r < m.local_rows; ++r) {
      mine[static_cast<std::size_t>(m.global_row(ctx, r))] +=
          std::abs(m.local[static_cast<std::size_t>(c) * static_cast<std::size_t>(m.lld()) + r]);
    }
  }
  MPI_Allreduce(mine.data(), sums.data(), m.rows, MPI_DOUBLE, MPI_SUM, ctx.comm);
  double largest = 0;
  for (double v : sums) largest = std::max(largest, v);
  return static_cast<real_type_t<T>>(largest);
}

[[noreturn]] inline void throw_singular(const char* operation, const std::string& what, std::size_t n,
                                        const std::string& why) {
  throw NumericalError("tenex: " + std::string(operation) + ": " + matrix_text(what, n) + " is singular (" + why +
                       "); " + operation + " needs an invertible matrix");
}

template <class T>
[[noreturn]] inline void throw_overflow(const char* operation, const std::string& what, std::size_t n,
                                        const std::string& result_name, const std::string& detail) {
  const char* type = std::is_same_v<real_type_t<T>, float> ? "float" : "double";
  throw NumericalError("tenex: " + std::string(operation) + ": " + result_name + " of " + matrix_text(what, n) +
                       " overflows: " + detail + ", beyond the largest " + type + " " +
                       short_number(static_cast<double>(std::numeric_limits<real_type_t<T>>::max())) +
                       "; it cannot be represented in " + type + " (scale the matrix)");
}

/// Scales `m` (the result for a / 2^e) back by 2^-e; throws on every rank when an entry is
/// then beyond the largest T (named (k / columns, k % columns); columns 0: not named).
template <class T>
void unscale_checked(const DistContext& ctx, DistMatrix<T>& m, std::size_t columns, int e, const char* operation,
                     const std::string& what, std::size_t n, const char* result_name) {
  const FirstEntry bad = first_entry(
      ctx, m, [&](T x, std::int64_t, std::int64_t) { return !is_finite_entry(scale_entry(x, -e)); },
      [&](T x) { return std::log10(largest_part(x)) - e * std::log10(2.0); });
  if (bad.found) {
    const std::string entry = columns == 0 ? "an entry"
                                           : "its entry (" + std::to_string(bad.flat / columns) + ", " +
                                                 std::to_string(bad.flat % columns) + ")";
    throw_overflow<T>(operation, what, n, result_name,
                      entry + " is about 1e+" + std::to_string(static_cast<long long>(std::floor(bad.value))));
  }
  scale_by_power_of_two(m, -e);
}

/// p?getrf's pivots: LOCr(n) + MB entries.
template <class T>
std::vector<int> pivots(const DistContext& ctx, const DistMatrix<T>& a) {
  std::vector<int> ipiv;
  agreed(ctx, [&] { ipiv.assign(static_cast<std::size_t>(a.local_rows) + static_cast<std::size_t>(ctx.block), 0); });
  return ipiv;
}

/// After p?getrf (p?gesv) of a / 2^e: a zero pivot (info), LU factors that overflowed, or a
/// reciprocal condition number (p?gecon, infinity norm `anorm`) below epsilon is a singular
/// matrix, as on the CPU. Collective; the same error on every rank.
template <class T>
void check_lu(const DistContext& ctx, const char* operation, const std::string& what, std::size_t n, int info,
              const DistMatrix<T>& lu, real_type_t<T> anorm, const std::string& factor_routine) {
  using R = real_type_t<T>;
  check_info(ctx, std::min(info, 0), factor_routine, std::string(operation) + ": the LU factorization");
  int pivot = 0;
  MPI_Allreduce(&info, &pivot, 1, MPI_INT, MPI_MAX, ctx.comm);
  if (pivot > 0) {
    throw_singular(
        operation, what, n,
        factor_routine + ": the pivot U(" + std::to_string(pivot) + "," + std::to_string(pivot) + ") is exactly zero");
  }
  const FirstEntry overflow = first_entry(
      ctx, lu, [](T x, std::int64_t, std::int64_t) { return !is_finite_entry(x); }, [](T) { return 0.0; });
  if (overflow.found) {
    throw_singular(operation, what, n,
                   "to working precision: its LU factors overflow, a pivot being too small relative to the entries "
                   "below it");
  }
  const int in = lu.rows, one = 1;
  R rcond = 0;
  int gecon_info = 0;
  std::vector<T> work(1);
  std::vector<int> iwork(1);
  std::vector<R> rwork(1);
  auto gecon = [&](int lwork, int lrwork) {
    if constexpr (std::is_same_v<T, float>) {
      psgecon_("I", &in, lu.local.data(), &one, &one, lu.desc, &anorm, &rcond, work.data(), &lwork, iwork.data(),
               &lrwork, &gecon_info);
    } else if constexpr (std::is_same_v<T, double>) {
      pdgecon_("I", &in, lu.local.data(), &one, &one, lu.desc, &anorm, &rcond, work.data(), &lwork, iwork.data(),
               &lrwork, &gecon_info);
    } else if constexpr (std::is_same_v<T, std::complex<float>>) {
      pcgecon_("I", &in, lu.local.data(), &one, &one, lu.desc, &anorm, &rcond, work.data(), &lwork, rwork.data(),
               &lrwork, &gecon_info);
    } else {
      pzgecon_("I", &in, lu.local.data(), &one, &one, lu.desc, &anorm, &rcond, work.data(), &lwork, rwork.data(),
               &lrwork, &gecon_info);
    }
  };
  gecon(-1, -1);
  const std::string gecon_name = routine<T>("gecon");
  check_info(ctx, gecon_info, gecon_name, std::string(operation) + ": the workspace query failed");
  work = workspace<T>(ctx, static_cast<double>(std::real(work[0])), 0);
  int second = 0;
  if constexpr (is_complex_v<T>) {
    rwork = workspace<R>(ctx, static_cast<double>(rwork[0]), 0);
    second = static_cast<int>(rwork.size());
  } else {
    second = padded(static_cast<double>(iwork[0]), 0);
    agreed(ctx, [&] { iwork.assign(static_cast<std::size_t>(second), 0); });
  }
  gecon(static_cast<int>(work.size()), second);
  check_info(ctx, gecon_info, gecon_name, std::string(operation) + ": the condition estimate failed");
  MPI_Bcast(&rcond, 1, mpi_type<R>(), 0, ctx.comm);  // every rank decides on rank 0's number
  if (!(rcond >= std::numeric_limits<R>::epsilon())) {
    throw_singular(operation, what, n,
                   "to working precision: the reciprocal condition number " + short_number(static_cast<double>(rcond)) +
                       " is below the machine epsilon " +
                       short_number(static_cast<double>(std::numeric_limits<R>::epsilon())));
  }
}

/// The eigenpairs of the symmetric (complex: Hermitian) matrix a, read from its lower
/// triangle and overwritten: eigenvectors in z, eigenvalues ascending in w, the same on every
/// rank. p?syevd (p?heevd); p?syevr (p?heevr) when its workspace query fails or
/// TENEX_DIST_FORCE_SYEVR=1. Collective.
template <class T>
void hermitian_eigenpairs(const DistContext& ctx, DistMatrix<T>& a, DistMatrix<T>& z, std::vector<real_type_t<T>>& w,
                          const std::string& operation) {
  using R = real_type_t<T>;
  const int in = a.rows, one = 1;
  int info = 0;
  std::vector<T> work(1);
  std::vector<R> rwork(3);  // complex drivers only
  std::vector<int> iwork(1);
  auto size_workspaces = [&] {
    work = workspace<T>(ctx, static_cast<double>(std::real(work[0])), 0);
    if constexpr (is_complex_v<T>) rwork = workspace<R>(ctx, static_cast<double>(rwork[0]), 0);
    const int liwork = padded(static_cast<double>(iwork[0]), 0);
    agreed(ctx, [&] { iwork.assign(static_cast<std::size_t>(liwork), 0); });
  };
  auto evd = [&](int lwork, int lrwork, int liwork) {
    if constexpr (std::is_same_v<T, float>) {
      pssyevd_("V", "L", &in, a.local.data(), &one, &one, a.desc, w.data(), z.local.data(), &one, &one, z.desc,
               work.data(), &lwork, iwork.data(), &liwork, &info);
    } else if constexpr (std::is_same_v<T, double>) {
      pdsyevd_("V", "L", &in, a.local.data(), &one, &one, a.desc, w.data(), z.local.data(), &one, &one, z.desc,
               work.data(), &lwork, iwork.data(), &liwork, &info);
    } else if constexpr (std::is_same_v<T, std::complex<float>>) {
      pcheevd_("V", "L", &in, a.local.data(), &one, &one, a.desc, w.data(), z.local.data(), &one, &one, z.desc,
               work.data(), &lwork, rwork.data(), &lrwork, iwork.data(), &liwork, &info);
    } else {
      pzheevd_("V", "L", &in, a.local.data(), &one, &one, a.desc, w.data(), z.local.data(), &one, &one, z.desc,
               work.data(), &lwork, rwork.data(), &lrwork, iwork.data(), &liwork, &info);
    }
  };
  const std::string evd_name = is_complex_v<T> ? "p?heevd" : "p?syevd";
  const std::string evr_name = is_complex_v<T> ? "p?heevr" : "p?syevr";
  bool use_evr = force_syevr();
  if (!use_evr) {
    evd(-1, -1, -1);
    int failed = info != 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, ctx.comm);
    use_evr = any != 0;  // the query failed: p?syevr instead
  }
  if (!use_evr) {
    size_workspaces();
    evd(static_cast<int>(work.size()), static_cast<int>(rwork.size()), static_cast<int>(iwork.size()));
    check_info(ctx, info, evd_name, operation + ": the eigensolver did not converge");
  } else {
    const int il = 0, iu = 0;
    const R vl = 0, vu = 0;
    int found = 0, vectors = 0;
    auto evr = [&](int lwork, int lrwork, int liwork) {
      if constexpr (std::is_same_v<T, float>) {
        pssyevr_("V", "A", "L", &in, a.local.data(), &one, &one, a.desc, &vl, &vu, &il, &iu, &found, &vectors, w.data(),
                 z.local.data(), &one, &one, z.desc, work.data(), &lwork, iwork.data(), &liwork, &info);
      } else if constexpr (std::is_same_v<T, double>) {
        pdsyevr_("V", "A", "L", &in, a.local.data(), &one, &one, a.desc, &vl, &vu, &il, &iu, &found, &vectors, w.data(),
                 z.local.data(), &one, &one, z.desc, work.data(), &lwork, iwork.data(), &liwork, &info);
      } else if constexpr (std::is_same_v<T, std::complex<float>>) {
        pcheevr_("V", "A", "L", &in, a.local.data(), &one, &one, a.desc, &vl, &vu, &il, &iu, &found, &vectors, w.data(),
                 z.local.data(), &one, &one, z.desc, work.data(), &lwork, rwork.data(), &lrwork, iwork.data(), &liwork,
                 &info);
      } else {
        pzheevr_("V", "A", "L", &in, a.local.data(), &one, &one, a.desc, &vl, &vu, &il, &iu, &found, &vectors, w.data(),
                 z.local.data(), &one, &one, z.desc, work.data(), &lwork, rwork.data(), &lrwork, iwork.data(), &liwork,
                 &info);
      }
    };
    work.assign(3, T(0));
    rwork.assign(3, R(0));
    iwork.assign(1, 0);
    evr(-1, -1, -1);
    check_info(ctx, info, evr_name, operation + ": the workspace query of " + evr_name + " failed");
    size_workspaces();
    evr(static_cast<int>(work.size()), static_cast<int>(rwork.size()), static_cast<int>(iwork.size()));
    check_info(ctx, info, evr_name, operation + ": the eigensolver did not converge");
  }
  if (!w.empty()) MPI_Bcast(w.data(), static_cast<int>(w.size()), mpi_type<R>(), 0, ctx.comm);
}


}  // namespace tenex::dist::detail::kernels
