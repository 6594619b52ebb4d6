#include "tenex/backend/dist/dist_backend.hpp"

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

namespace tenex::dist::detail {

namespace {

using Labels = std::vector<std::string>;
using Extents = std::vector<std::size_t>;
template <class T>
using MatrixPtr = std::shared_ptr<DistMatrix<T>>;

// The handles alive in storages' device copies, so that read() tells ours from others'.
std::mutex handles_mutex;
std::unordered_set<const void*>& live_handles() {
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

bool is_handle(const void* data) {
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
const DistContext& context() {
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

bool all_distinct(const Labels& labels) {
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

std::size_t find_label(const Labels& labels, const std::string& l) {
  return static_cast<std::size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin());
}
bool has(const Labels& labels, const std::string& l) { return find_label(labels, l) < labels.size(); }

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
int padded(double query, int extra) {
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

void check_info(const DistContext& ctx, int info, const std::string& routine, const std::string& what) {
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
bool force_syevr() {
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

[[noreturn]] void throw_singular(const char* operation, const std::string& what, std::size_t n,
                                 const std::string& why) {
  throw NumericalError("tenex: " + std::string(operation) + ": " + matrix_text(what, n) + " is singular (" + why +
                       "); " + operation + " needs an invertible matrix");
}

template <class T>
[[noreturn]] void throw_overflow(const char* operation, const std::string& what, std::size_t n,
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

}  // namespace

template <class T>
Buffer make_value_buffer(std::shared_ptr<DistMatrix<T>> value) {
  Buffer b = new_handle<T>(value->local.size() * sizeof(T));
  static_cast<DistValue<T>*>(b.data())->parts = {std::move(value)};
  return b;
}

template <class T>
const DistValue<T>* distributed_value(Storage<T>& storage) {
  if (!storage.device_copy_valid() || !is_handle(storage.device_copy().data())) return nullptr;
  return static_cast<const DistValue<T>*>(storage.device_copy().data());
}

namespace {
template <class T>
std::set<const Tensor<T>*>& proxies() {
  static auto* set = new std::set<const Tensor<T>*>;
  return *set;
}
std::mutex proxies_mutex;
}  // namespace

template <class T>
void register_proxy(const Tensor<T>* proxy) {
  std::lock_guard<std::mutex> lock(proxies_mutex);
  proxies<T>().insert(proxy);
}
template <class T>
void unregister_proxy(const Tensor<T>* proxy) {
  std::lock_guard<std::mutex> lock(proxies_mutex);
  proxies<T>().erase(proxy);
}

namespace {
template <class T>
bool is_proxy_storage(const Storage<T>& storage) {
  std::lock_guard<std::mutex> lock(proxies_mutex);
  for (const Tensor<T>* p : proxies<T>()) {
    if (tenex::detail::Access::storage(*p).get() == &storage) return true;
  }
  return false;
}
}  // namespace

template <class T>
bool DistBackend<T>::supports(const OpNode& node, std::string& why) const {
  // Every op kind runs here (docs/distributed.md) but decompositions over label groups; only a
  // missing Context is refused besides.
  if (!current_context()) {
    why = "no tenex::dist::Context is alive; make one on every rank first";
    return false;
  }
  if (packed_factor_count(node.kind) != 0 && node.extents.size() != 2) {
    why = "a decomposition over label groups (an operand of rank " + std::to_string(node.extents.size()) +
          ") is not distributed; decompose a matrix (rank 2)";
    return false;
  }
  return true;
}

template <class T>
Buffer DistBackend<T>::allocate(std::size_t bytes) {
  return new_handle<T>(bytes);
}

template <class T>
View<const T> DistBackend<T>::read(Storage<T>& storage) {
  const DistContext& ctx = context();
  Buffer& copy = storage.device_copy();
  if (storage.device_copy_valid() && is_handle(copy.data())) {
    return View<const T>{static_cast<const T*>(copy.data()), storage.shape().size(), tenex::detail::Device::host};
  }
  // A tensor every rank holds in full (SPMD): each keeps its own blocks, no messages. The
  // handle stays in the storage's device copy, marked invalid (rebuilt at every read: a
  // write through Tensor::data() would not tell us).
  const T* host = storage.elements();
  MatrixPtr<T> m;
  agreed(ctx, [&] {
    if (!host && storage.shape().size() != 0) {
      throw Error("tenex: distributed backend: a tensor operand has no value on this rank");
    }
    m = make_canonical<T>(ctx, storage.shape().extents());
    if (!is_handle(copy.data())) copy = new_handle<T>(storage.shape().size() * sizeof(T));
  });
  if (host) scatter_local(ctx, host, *m);
  static_cast<DistValue<T>*>(copy.data())->parts = {m};
  storage.set_device_copy_valid(false);
  return View<const T>{static_cast<const T*>(copy.data()), storage.shape().size(), tenex::detail::Device::host};
}

template <class T>
void DistBackend<T>::write(Storage<T>& storage, Buffer&& buffer) {
  const DistContext& ctx = context();
  if (is_proxy_storage(storage)) {
    storage.device_copy() = std::move(buffer);
    storage.set_device_copy_valid(true);
    return;
  }
  // A plain Tensor target: every rank gets the whole value.
  const DistValue<T>& value = *static_cast<const DistValue<T>*>(buffer.data());
  std::vector<T> full = gather(ctx, *value.parts.at(0), -1);
  agreed(ctx, [&] { storage.allocate(); });
  std::copy(full.begin(), full.end(), storage.elements());
}

template <class T>
KernelCount DistBackend<T>::run_input(const InputParams&, const KernelArgs<T>&) {
  throw InternalError("tenex: distributed backend: an input node is not a kernel");
}

template <class T>
KernelCount DistBackend<T>::run_output(const OutputParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  set_out(args, {in_canonical(ctx, operand(args, 0), params.operand_labels, args.node.labels, args.node.extents)});
  return {0, 1};
}

template <class T>
KernelCount DistBackend<T>::run_reduce(const ReduceParams&, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const Labels& operand_labels = args.operand_nodes[0]->labels;
  if (args.node.labels.empty() &&
      std::set<std::string>(operand_labels.begin(), operand_labels.end()).size() == operand_labels.size()) {
    // A sum of every element to a scalar (not a trace: no label repeats): each rank sums its own
    // elements, then one MPI_Allreduce (a summing remap would send every element to the rank
    // that holds the scalar).
    const DistMatrix<T>& a = *operand(args, 0);
    T local = T(0);
    for (int c = 0; c < a.local_cols; ++c) {
      const T* column = a.local.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(a.lld());
      for (int r = 0; r < a.local_rows; ++r) local += column[r];
    }
    T total = local;
    MPI_Allreduce(&local, &total, 1, mpi_type<T>(), MPI_SUM, ctx.comm);
    MatrixPtr<T> s = allocate_canonical<T>(ctx, {});
    if (!s->local.empty()) s->local[0] = total;
    set_out(args, {s});
    double elements = 1;
    for (std::size_t e : args.operand_nodes[0]->extents) elements *= static_cast<double>(e);
    return {elements, 1};
  }
  set_out(args,
          {in_canonical(ctx, operand(args, 0), args.operand_nodes[0]->labels, args.node.labels, args.node.extents)});
  return {0, 1};
}

namespace {

struct ContractionLabels {
  Labels batch, free_a, free_b, contracted;
};

/// Whether `m` (labels `labels`) is, as stored, the matrix (first | second).
template <class T>
bool stored_as(const DistMatrix<T>& m, const Labels& labels, const Labels& first, const Labels& second) {
  if (m.split != first.size() || labels.size() != first.size() + second.size()) return false;
  for (std::size_t k = 0; k < first.size(); ++k) {
    if (labels[k] != first[k]) return false;
  }
  for (std::size_t k = 0; k < second.size(); ++k) {
    if (labels[first.size() + k] != second[k]) return false;
  }
  return true;
}

/// The p?gemm flag that reads `m` as op(m), op given by `trans` ('N' or 'T'), conjugated
/// when `conj`: a transposed read becomes 'C' (no pass over m); PBLAS has no conjugated
/// untransposed read, so then m is conjugated locally (no messages), in place when `owned`
/// (a layout made for this product), else in a copy.
template <class T>
char conjugate_flag(const DistContext& ctx, MatrixPtr<T>& m, char trans, bool conj, bool owned) {
  if (!conj) return trans;
  if (trans == 'T') return 'C';
  if (!owned) m = copy_of(ctx, *m);
  for (T& x : m->local) x = conj_value(x);
  return 'N';
}

Labels concat(const Labels& a, const Labels& b, const Labels& c = {}) {
  Labels r = a;
  r.insert(r.end(), b.begin(), b.end());
  r.insert(r.end(), c.begin(), c.end());
  return r;
}

}  // namespace

template <class T>
KernelCount DistBackend<T>::run_contract(const ContractParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const OpNode& na = *args.operand_nodes[0];
  const OpNode& nb = *args.operand_nodes[1];
  const Labels& la = na.labels;
  const Labels& lb = nb.labels;
  const Labels& lc = args.node.labels;
  MatrixPtr<T> a = operand(args, 0), b = operand(args, 1);
  MatrixPtr<T> addend = args.operands.size() == 3 ? operand(args, 2) : nullptr;
  ContractionLabels cl;
  for (const auto& l : lc) {
    const bool in_a = has(la, l), in_b = has(lb, l);
    if (in_a && in_b) {
      cl.batch.push_back(l);
    } else if (in_a) {
      cl.free_a.push_back(l);
    } else if (in_b) {
      cl.free_b.push_back(l);
    }
  }
  for (const auto& l : la) {
    if (has(lb, l) && !has(lc, l) && !has(cl.contracted, l)) cl.contracted.push_back(l);
  }
  // The order of the contracted modes b stores, when that lets b be used as it is.
  if (cl.batch.empty() && all_distinct(lb) && all_distinct(la)) {
    Labels from_b;
    for (const auto& l : lb) {
      if (has(cl.contracted, l)) from_b.push_back(l);
    }
    auto direct = [&](const MatrixPtr<T>& m, const Labels& labels, const Labels& free, const Labels& contracted,
                      bool free_first) {
      return free_first ? (stored_as(*m, labels, free, contracted) || stored_as(*m, labels, contracted, free))
                        : (stored_as(*m, labels, contracted, free) || stored_as(*m, labels, free, contracted));
    };
    const int with_a = direct(a, la, cl.free_a, cl.contracted, true) + direct(b, lb, cl.free_b, cl.contracted, false);
    const int with_b = direct(a, la, cl.free_a, from_b, true) + direct(b, lb, cl.free_b, from_b, false);
    if (with_b > with_a) cl.contracted = from_b;
  }
  const Extents ea = na.extents, eb = nb.extents;
  auto extent = [&](const std::string& l) { return has(la, l) ? ea[find_label(la, l)] : eb[find_label(lb, l)]; };
  auto extents = [&](const Labels& labels) {
    Extents e;
    for (const auto& l : labels) e.push_back(extent(l));
    return e;
  };
  std::size_t batches = 1, m = 1, n = 1, k = 1;
  for (const auto& l : cl.batch) batches *= extent(l);
  for (const auto& l : cl.free_a) m *= extent(l);
  for (const auto& l : cl.free_b) n *= extent(l);
  for (const auto& l : cl.contracted) k *= extent(l);
  const T alpha = scalar_factor<T>(params.alpha, 0.0);
  // Complex sets: conj_a / conj_b read a factor conjugated (always false in real sets).
  const bool conj_a = params.conj_a, conj_b = params.conj_b;
  MatrixPtr<T> result;
  bool same_labels = la.size() == lb.size() && all_distinct(la) && all_distinct(lb);
  for (const auto& l : lb) same_labels = same_labels && has(la, l);
  if (lc.empty() && same_labels) {
    // An inner product (MP2's energy): b in a's layout, the products summed locally, one
    // MPI_Allreduce; no p?gemm on a 1 x N matricization, so neither operand is remapped to one.
    const MatrixPtr<T> mb = in_layout(ctx, b, lb, la, ea, a->split);
    T local = T(0);
    for (std::size_t x = 0; x < a->local.size(); ++x) {
      local += (conj_a ? conj_value(a->local[x]) : a->local[x]) * (conj_b ? conj_value(mb->local[x]) : mb->local[x]);
    }
    T total = local;
    MPI_Allreduce(&local, &total, 1, mpi_type<T>(), MPI_SUM, ctx.comm);
    result = allocate_canonical<T>(ctx, {});
    if (!result->local.empty()) result->local[0] = alpha * total;
  } else if (cl.batch.empty()) {
    // op(A) is (free_a | contracted), op(B) is (contracted | free_b): p?gemm's flags take a
    // stored transpose as it is.
    char ta = 'N', tb = 'N';
    MatrixPtr<T> ma, mb;
    if (all_distinct(la) && stored_as(*a, la, cl.free_a, cl.contracted)) {
      ma = a;
    } else if (all_distinct(la) && stored_as(*a, la, cl.contracted, cl.free_a)) {
      ma = a;
      ta = 'T';
    } else {
      ma = in_layout(ctx, a, la, concat(cl.free_a, cl.contracted), extents(concat(cl.free_a, cl.contracted)),
                     cl.free_a.size());
    }
    if (all_distinct(lb) && stored_as(*b, lb, cl.contracted, cl.free_b)) {
      mb = b;
    } else if (all_distinct(lb) && stored_as(*b, lb, cl.free_b, cl.contracted)) {
      mb = b;
      tb = 'T';
    } else {
      mb = in_layout(ctx, b, lb, concat(cl.contracted, cl.free_b), extents(concat(cl.contracted, cl.free_b)),
                     cl.contracted.size());
    }
    // A layout made here (not an operand's own matrix) may be conjugated in place.
    const bool owned_a = ma != a && ma != b, owned_b = mb != a && mb != b;
    const std::size_t split = canonical_split(lc.size());
    if (lc == concat(cl.free_a, cl.free_b) && split == cl.free_a.size()) {
      result = allocate_matrix<T>(ctx, args.node.extents, split);
      const char fa = conjugate_flag(ctx, ma, ta, conj_a, owned_a), fb = conjugate_flag(ctx, mb, tb, conj_b, owned_b);
      gemm(ctx, fa, fb, alpha, *ma, *mb, T(0), *result);
    } else if (lc == concat(cl.free_b, cl.free_a) && split == cl.free_b.size()) {
      // C^T = op(B)^T op(A)^T: the flags flip, the operands swap.
      result = allocate_matrix<T>(ctx, args.node.extents, split);
      const char fb = conjugate_flag(ctx, mb, tb == 'N' ? 'T' : 'N', conj_b, owned_b);
      const char fa = conjugate_flag(ctx, ma, ta == 'N' ? 'T' : 'N', conj_a, owned_a);
      gemm(ctx, fb, fa, alpha, *mb, *ma, T(0), *result);
    } else {
      const Labels lt = concat(cl.free_a, cl.free_b);
      MatrixPtr<T> c = allocate_matrix<T>(ctx, extents(lt), cl.free_a.size());
      const char fa = conjugate_flag(ctx, ma, ta, conj_a, owned_a), fb = conjugate_flag(ctx, mb, tb, conj_b, owned_b);
      gemm(ctx, fa, fb, alpha, *ma, *mb, T(0), *c);
      result = in_canonical(ctx, c, lt, lc, args.node.extents);
    }
  } else {
    // Batch indices by a loop: the operands as (batch, free | contracted) matrices, each
    // batch's rows cut out with p?gemr2d.
    const Labels labels_a = concat(cl.batch, cl.free_a, cl.contracted);
    const Labels labels_b = concat(cl.batch, cl.contracted, cl.free_b);
    const Labels labels_c = concat(cl.batch, cl.free_a, cl.free_b);
    MatrixPtr<T> ma = in_layout(ctx, a, la, labels_a, extents(labels_a), cl.batch.size() + cl.free_a.size());
    MatrixPtr<T> mb = in_layout(ctx, b, lb, labels_b, extents(labels_b), cl.batch.size() + cl.contracted.size());
    MatrixPtr<T> mc = allocate_matrix<T>(ctx, extents(labels_c), cl.batch.size() + cl.free_a.size());
    MatrixPtr<T> pa = allocate_matrix<T>(ctx, {m, k}, 1);
    MatrixPtr<T> pb = allocate_matrix<T>(ctx, {k, n}, 1);
    MatrixPtr<T> pc = allocate_matrix<T>(ctx, {m, n}, 1);
    const int im = checked_int(m, "rows"), in = checked_int(n, "columns"), ik = checked_int(k, "contracted extent");
    for (std::size_t batch = 0; batch < batches; ++batch) {
      const int bi = checked_int(batch, "batch");
      copy_block(ctx, im, ik, *ma, bi * im, 0, *pa, 0, 0);
      copy_block(ctx, ik, in, *mb, bi * ik, 0, *pb, 0, 0);
      const char fa = conjugate_flag(ctx, pa, 'N', conj_a, true), fb = conjugate_flag(ctx, pb, 'N', conj_b, true);
      gemm(ctx, fa, fb, alpha, *pa, *pb, T(0), *pc);
      copy_block(ctx, im, in, *pc, 0, 0, *mc, bi * im, 0);
    }
    result = in_canonical(ctx, mc, labels_c, lc, args.node.extents);
  }
  if (addend && params.beta != 0.0) {
    MatrixPtr<T> d = in_canonical(ctx, addend, args.operand_nodes[2]->labels, lc, args.node.extents);
    const T beta = scalar_factor<T>(params.beta, 0.0);
    if (result == a || result == b) result = copy_of(ctx, *result);
    for (std::size_t x = 0; x < result->local.size(); ++x) result->local[x] += beta * d->local[x];
  }
  set_out(args, {result});
  return {2.0 * static_cast<double>(batches) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
          batches};
}

namespace {

/// The operands of element-wise work over an iteration space (labels `space`): each either
/// remapped to the space's canonical layout (then local element `at` of every operand is the
/// space's element `at`), or, when broadcasting it would send more than gathering it
/// everywhere (its size times the ranks is at most the space's size: e_i, e_a of MP2's
/// denominators), replicated on every rank with MPI_Allgatherv and read by index.
template <class T>
struct SpaceOperands {
  std::vector<MatrixPtr<T>> local;                // null where read by strides
  std::vector<std::vector<T>> full;               // replicated values, row-major
  std::vector<const T*> base;                     // where read by strides: `full`, or the whole matrix
  std::vector<std::vector<std::size_t>> strides;  // by space mode, from `base`
  std::vector<MatrixPtr<T>> held;                 // keeps read-in-place matrices alive
  bool any_replicated = false;

  SpaceOperands(const DistContext& ctx, const KernelArgs<T>& args, const Labels& space, const Extents& extents) {
    std::size_t space_size = 1;
    for (std::size_t e : extents) space_size *= e;
    const std::size_t n = args.operands.size();
    local.resize(n);
    full.resize(n);
    base.resize(n, nullptr);
    strides.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      const OpNode& node = *args.operand_nodes[k];
      const MatrixPtr<T>& m = operand(args, k);
      bool broadcast = false, within = true;
      for (const auto& l : space) broadcast = broadcast || !has(node.labels, l);
      for (const auto& l : node.labels) within = within && has(space, l);
      const bool in_order = node.labels == space && all_distinct(node.labels);
      // Each element's offset from `base` is a sum over the operand's modes of index times
      // stride (a repeated label adds its strides: a diagonal).
      auto read_by_strides = [&](const std::vector<std::size_t>& own) {
        strides[k].assign(space.size(), 0);
        for (std::size_t s = 0; s < space.size(); ++s) {
          for (std::size_t d = 0; d < node.labels.size(); ++d) {
            if (node.labels[d] == space[s]) strides[k][s] += own[d];
          }
        }
        any_replicated = true;
      };
      if (broadcast && node.size() * static_cast<std::size_t>(ctx.size) <= space_size) {
        full[k] = gather(ctx, *m, -1);
        base[k] = full[k].data();
        std::vector<std::size_t> own(node.labels.size(), 1);
        for (std::size_t d = node.labels.size(); d-- > 1;) own[d - 1] = own[d] * node.extents[d];
        read_by_strides(own);
      } else if (ctx.size == 1 && within && !in_order) {
        // One rank holds the whole matrix: a permuted operand (MP2's exchange V(i,b,j,a)) is
        // read where it is, not remapped into a copy of its size. Row modes step through the
        // rows, column modes through the columns of the column-major local matrix.
        std::vector<std::size_t> own(node.labels.size(), 1);
        for (std::size_t d = m->split; d-- > 1;) own[d - 1] = own[d] * node.extents[d];
        if (m->split < node.labels.size()) own[node.labels.size() - 1] = static_cast<std::size_t>(m->lld());
        for (std::size_t d = node.labels.size(); d-- > m->split + 1;) own[d - 1] = own[d] * node.extents[d];
        held.push_back(m);
        base[k] = m->local.data();
        read_by_strides(own);
      } else {
        local[k] = in_canonical(ctx, m, node.labels, space, extents);
      }
    }
  }

  /// Calls f(c, columns) for every local column c of `x` (the space's canonical layout; only
  /// its geometry is read): columns[k] points at operand k's x.local_rows values there (a
  /// local operand's own column; a replicated one's values gathered into a buffer, its
  /// offset the sum of what the row modes and what the column modes give, worked out once
  /// per local row and once per local column).
  template <class F>
  void for_each_column(const DistContext& ctx, const DistMatrix<T>& x, F f) const {
    const std::size_t n = local.size();
    const auto rows = static_cast<std::size_t>(x.local_rows);
    std::vector<std::vector<std::size_t>> row_offset(n);
    std::vector<std::vector<T>> buffer(n);
    std::vector<std::size_t> index, col_offset(n, 0);
    for (std::size_t k = 0; k < n; ++k) {
      if (local[k]) continue;
      row_offset[k].resize(rows);
      buffer[k].resize(rows);
      for (int r = 0; r < x.local_rows; ++r) {
        x.tensor_index(x.global_row(ctx, r), 0, index);
        std::size_t offset = 0;
        for (std::size_t s = 0; s < x.split; ++s) offset += index[s] * strides[k][s];
        row_offset[k][static_cast<std::size_t>(r)] = offset;
      }
    }
    std::vector<const T*> columns(n);
    for (int c = 0; c < x.local_cols; ++c) {
      const std::size_t at = static_cast<std::size_t>(c) * static_cast<std::size_t>(x.lld());
      if (any_replicated) x.tensor_index(0, x.global_col(ctx, c), index);
      for (std::size_t k = 0; k < n; ++k) {
        if (local[k]) {
          columns[k] = local[k]->local.data() + at;
          continue;
        }
        std::size_t offset = 0;
        for (std::size_t s = x.split; s < index.size(); ++s) offset += index[s] * strides[k][s];
        const T* values = base[k] + offset;
        for (std::size_t r = 0; r < rows; ++r) buffer[k][r] = values[row_offset[k][r]];
        columns[k] = buffer[k].data();
      }
      f(c, columns);
    }
  }
};

template <class T>
KernelCount binary(const DistContext& ctx, const KernelArgs<T>& args, const ElementwiseParams& p, int op) {
  const SpaceOperands<T> in(ctx, args, args.node.labels, args.node.extents);
  MatrixPtr<T> c = allocate_canonical<T>(ctx, args.node.extents);
  const T alpha = scalar_factor<T>(p.alpha, 0.0), alpha_b = scalar_factor<T>(p.alpha_b, 0.0);
  const auto rows = static_cast<std::size_t>(c->local_rows);
  in.for_each_column(ctx, *c, [&](int col, const std::vector<const T*>& columns) {
    T* out = c->local.data() + static_cast<std::size_t>(col) * static_cast<std::size_t>(c->lld());
    const T* a = columns[0];
    const T* b = columns[1];
    for (std::size_t r = 0; r < rows; ++r) {
      const T u = alpha * a[r], v = alpha_b * b[r];
      out[r] = op == 0 ? u + v : op == 1 ? u - v : u / v;
    }
  });
  set_out(args, {c});
  return {static_cast<double>(args.node.size()), 1};
}

}  // namespace

template <class T>
KernelCount DistBackend<T>::run_add(const AddParams& params, const KernelArgs<T>& args) {
  return binary(context(), args, params, 0);
}
template <class T>
KernelCount DistBackend<T>::run_subtract(const SubtractParams& params, const KernelArgs<T>& args) {
  return binary(context(), args, params, 1);
}
template <class T>
KernelCount DistBackend<T>::run_divide(const DivideParams& params, const KernelArgs<T>& args) {
  return binary(context(), args, params, 2);
}

template <class T>
KernelCount DistBackend<T>::run_scale(const ScaleParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  MatrixPtr<T> a =
      in_canonical(ctx, operand(args, 0), args.operand_nodes[0]->labels, args.node.labels, args.node.extents);
  MatrixPtr<T> c = copy_of(ctx, *a);
  const T alpha = scalar_factor<T>(params.alpha, params.alpha_imag);  // complex sets: alpha + i alpha_imag
  for (T& x : c->local) x *= alpha;
  set_out(args, {c});
  return {static_cast<double>(args.node.size()), 1};
}

template <class T>
KernelCount DistBackend<T>::run_fused(const FusedParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  if constexpr (is_complex_v<T>) {  // the expression layer refuses these first; checked here as the CPU does
    for (const FusedInstr& in : params.program) {
      if (is_function(in.op) && !defined_for_complex(in.op)) {
        throw Error("tenex: distributed backend: " + std::string(function_info(in.op).name) +
                    " is not defined for complex numbers");
      }
    }
    if (params.reduce != ReduceOp::sum) {
      throw Error("tenex: distributed backend: max and min reductions are not defined for complex numbers");
    }
  }
  // The iteration space: the result's labels, then those the operands add (reduced).
  Labels space = args.node.labels;
  Extents extents = args.node.extents;
  for (const OpNode* op : args.operand_nodes) {
    for (std::size_t k = 0; k < op->labels.size(); ++k) {
      if (!has(space, op->labels[k])) {
        space.push_back(op->labels[k]);
        extents.push_back(op->extents[k]);
      }
    }
  }
  const SpaceOperands<T> in(ctx, args, space, extents);
  std::size_t space_size = 1;
  for (std::size_t e : extents) space_size *= e;
  const double flops = static_cast<double>(space_size) * static_cast<double>(params.program.size());
  const Accumulate reduce = params.reduce == ReduceOp::max   ? Accumulate::max
                            : params.reduce == ReduceOp::min ? Accumulate::min
                                                             : Accumulate::sum;
  if (args.node.labels.empty() && !space.empty()) {
    // A full reduction (MP2's energy): each rank reduces its part of the space as it goes,
    // without storing it, then one MPI_Allreduce.
    T identity = T(0);
    if constexpr (!is_complex_v<T>) {
      if (reduce == Accumulate::max) identity = -std::numeric_limits<T>::infinity();
      if (reduce == Accumulate::min) identity = std::numeric_limits<T>::infinity();
    }
    T local = identity;
    MatrixPtr<T> layout;
    agreed(ctx, [&] {  // a tenex::map callable may throw on some ranks only
      layout = make_layout<T>(ctx, extents, canonical_split(extents.size()));
      ColumnProgram<T> program(params);
      const auto rows = static_cast<std::size_t>(layout->local_rows);
      in.for_each_column(ctx, *layout, [&](int, const std::vector<const T*>& columns) {
        const T* v = program.run(columns, rows);
        for (std::size_t r = 0; r < rows; ++r) local = reduce_combine(reduce, local, v[r]);
      });
    });
    T total = local;
    if (reduce == Accumulate::sum) {
      MPI_Allreduce(&local, &total, 1, mpi_type<T>(), MPI_SUM, ctx.comm);
    } else {
      // MPI_MAX and MPI_MIN need not keep a NaN: every rank combines all ranks' values itself.
      std::vector<T> all(static_cast<std::size_t>(ctx.size));
      MPI_Allgather(&local, 1, mpi_type<T>(), all.data(), 1, mpi_type<T>(), ctx.comm);
      total = identity;
      for (T v : all) total = reduce_combine(reduce, total, v);
    }
    MatrixPtr<T> s = allocate_canonical<T>(ctx, {});
    if (!s->local.empty()) s->local[0] = total;
    set_out(args, {s});
    return {flops, 2};
  }
  MatrixPtr<T> x = allocate_canonical<T>(ctx, extents);
  agreed(ctx, [&] {  // a tenex::map callable may throw on some ranks only
    ColumnProgram<T> program(params);
    const auto rows = static_cast<std::size_t>(x->local_rows);
    in.for_each_column(ctx, *x, [&](int col, const std::vector<const T*>& columns) {
      const T* v = program.run(columns, rows);
      std::copy(v, v + rows, x->local.data() + static_cast<std::size_t>(col) * static_cast<std::size_t>(x->lld()));
    });
  });
  if (space.size() == args.node.labels.size()) {
    set_out(args, {x});
    return {flops, 1};
  }
  set_out(args, {in_canonical(ctx, x, space, args.node.labels, args.node.extents, reduce)});
  return {flops, 2};
}

template <class T>
KernelCount DistBackend<T>::run_slice(const SliceParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const MatrixPtr<T>& a = operand(args, 0);
  RemapRule rule;
  for (std::size_t k = 0; k < params.lo.size(); ++k) {
    rule.from.push_back(static_cast<int>(k));
    rule.offset.push_back(-static_cast<std::ptrdiff_t>(params.lo[k]));
  }
  rule.lo = params.lo;
  rule.hi = params.hi;
  MatrixPtr<T> c = allocate_canonical<T>(ctx, args.node.extents);
  remap(ctx, *a, rule, *c);
  set_out(args, {c});
  return {0, 1};
}

template <class T>
KernelCount DistBackend<T>::run_chip(const ChipParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const MatrixPtr<T>& a = operand(args, 0);
  const Extents& in = args.operand_nodes[0]->extents;
  RemapRule rule;
  for (std::size_t k = 0; k < in.size(); ++k) {
    rule.lo.push_back(k == params.mode ? params.index : 0);
    rule.hi.push_back(k == params.mode ? params.index + 1 : in[k]);
    if (k != params.mode) rule.from.push_back(static_cast<int>(k));
  }
  MatrixPtr<T> c = allocate_canonical<T>(ctx, args.node.extents);
  remap(ctx, *a, rule, *c);
  set_out(args, {c});
  return {0, 1};
}

template <class T>
KernelCount DistBackend<T>::run_factor(const FactorParams& params, const KernelArgs<T>& args) {
  const DistValue<T>& packed = value_of(args.operands[0]);
  if (params.which >= packed.parts.size() || packed.parts[params.which]->extents != args.node.extents) {
    throw InternalError("tenex: distributed backend: factor " + std::to_string(params.which) +
                        " does not match the decomposition's parts");
  }
  set_out(args, {packed.parts[params.which]});
  return {0, 0};
}

template <class T>
KernelCount DistBackend<T>::run_pow(const PowParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const MatrixPtr<T>& a = operand(args, 0);
  const std::size_t n = args.node.extents[0];
  MatrixPtr<T> result = allocate_canonical<T>(ctx, {n, n});
  if (params.power == 0) {
    set_identity(ctx, *result);
  } else {
    result = copy_of(ctx, *a);
    MatrixPtr<T> next = allocate_canonical<T>(ctx, {n, n});
    for (unsigned p = 1; p < params.power; ++p) {
      gemm(ctx, 'N', 'N', T(1), *result, *a, T(0), *next);
      std::swap(result, next);
    }
  }
  set_out(args, {result});
  const double nn = static_cast<double>(n);
  return {params.power > 1 ? 2.0 * nn * nn * nn * (params.power - 1) : 0.0, params.power > 1 ? params.power - 1 : 1};
}

template <class T>
KernelCount DistBackend<T>::run_mask(const MaskParams& params, const KernelArgs<T>& args) {
  // Element-wise: each rank zeroes the elements of its own blocks that a map excludes (the
  // CPU's dense mask), no messages.
  const DistContext& ctx = context();
  const OpNode& node = args.node;
  MatrixPtr<T> c =
      copy_of(ctx, *in_canonical(ctx, operand(args, 0), args.operand_nodes[0]->labels, node.labels, node.extents));
  struct Use {
    std::vector<std::size_t> source_modes, target_modes;
    const SparseMap* map;
  };
  std::vector<Use> uses;
  for (const SparseMapUse& use : params.maps) {
    Use u{{}, {}, use.map.get()};
    for (const auto& l : use.source) u.source_modes.push_back(find_label(node.labels, l));
    for (const auto& l : use.target) u.target_modes.push_back(find_label(node.labels, l));
    uses.push_back(std::move(u));
  }
  agreed(ctx, [&] {
    std::vector<std::size_t> index;
    SparseMap::Index source, target;
    for (int col = 0; col < c->local_cols; ++col) {
      const auto gc = c->global_col(ctx, col);
      for (int r = 0; r < c->local_rows; ++r) {
        c->tensor_index(c->global_row(ctx, r), gc, index);
        for (const Use& u : uses) {
          source.resize(u.source_modes.size());
          target.resize(u.target_modes.size());
          for (std::size_t i = 0; i < u.source_modes.size(); ++i) source[i] = index[u.source_modes[i]];
          for (std::size_t i = 0; i < u.target_modes.size(); ++i) target[i] = index[u.target_modes[i]];
          if (!u.map->allows(source, target)) {
            c->local[static_cast<std::size_t>(col) * static_cast<std::size_t>(c->lld()) + r] = T(0);
            break;
          }
        }
      }
    }
  });
  set_out(args, {c});
  return {0, 1};
}

template <class T>
KernelCount DistBackend<T>::run_inverse(const InverseParams&, const KernelArgs<T>& args) {
  PhaseTimer timer(phase_clock().compute_seconds);
  const DistContext& ctx = context();
  const OpNode& node_a = *args.operand_nodes[0];
  const std::string what = tenex::detail::describe(node_a.labels, node_a.extents);
  const std::size_t n = args.node.extents[0];
  MatrixPtr<T> a = copy_of(ctx, *operand(args, 0));
  if (n == 0) {
    set_out(args, {a});
    return {0, 0};
  }
  const int in = checked_int(n, "matrix order"), one = 1;
  require_finite(ctx, *a, n, false, "inverse", "the matrix");
  // inverse(a) = inverse(a / 2^e) / 2^e, as on the CPU.
  const int e = scale_exponent(ctx, *a);
  scale_by_power_of_two(*a, -e);
  const auto anorm = row_sum_norm(ctx, *a);
  std::vector<int> ipiv = pivots(ctx, *a);
  int info = 0;
  if constexpr (std::is_same_v<T, float>) {
    psgetrf_(&in, &in, a->local.data(), &one, &one, a->desc, ipiv.data(), &info);
  } else if constexpr (std::is_same_v<T, double>) {
    pdgetrf_(&in, &in, a->local.data(), &one, &one, a->desc, ipiv.data(), &info);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    pcgetrf_(&in, &in, a->local.data(), &one, &one, a->desc, ipiv.data(), &info);
  } else {
    pzgetrf_(&in, &in, a->local.data(), &one, &one, a->desc, ipiv.data(), &info);
  }
  check_lu(ctx, "inverse", what, n, info, *a, anorm, routine<T>("getrf"));
  std::vector<T> work(1);
  std::vector<int> iwork(1);
  auto getri = [&](int lwork, int liwork) {
    if constexpr (std::is_same_v<T, float>) {
      psgetri_(&in, a->local.data(), &one, &one, a->desc, ipiv.data(), work.data(), &lwork, iwork.data(), &liwork,
               &info);
    } else if constexpr (std::is_same_v<T, double>) {
      pdgetri_(&in, a->local.data(), &one, &one, a->desc, ipiv.data(), work.data(), &lwork, iwork.data(), &liwork,
               &info);
    } else if constexpr (std::is_same_v<T, std::complex<float>>) {
      pcgetri_(&in, a->local.data(), &one, &one, a->desc, ipiv.data(), work.data(), &lwork, iwork.data(), &liwork,
               &info);
    } else {
      pzgetri_(&in, a->local.data(), &one, &one, a->desc, ipiv.data(), work.data(), &lwork, iwork.data(), &liwork,
               &info);
    }
  };
  const std::string getri_name = routine<T>("getri");
  getri(-1, -1);
  check_info(ctx, info, getri_name, "inverse: the workspace query failed");
  work = workspace<T>(ctx, static_cast<double>(std::real(work[0])), 0);
  const int liwork = padded(static_cast<double>(iwork[0]), 0);
  agreed(ctx, [&] { iwork.assign(static_cast<std::size_t>(liwork), 0); });
  getri(static_cast<int>(work.size()), liwork);
  check_info(ctx, info, getri_name, "inverse: the inverse from the LU factors failed");
  unscale_checked(ctx, *a, n, e, "inverse", what, n, "the inverse");
  set_out(args, {a});
  const double dn = static_cast<double>(n);
  return {2.0 * dn * dn * dn, 3};  // p?getrf 2n^3/3 + p?getri 4n^3/3
}

template <class T>
KernelCount DistBackend<T>::run_solve(const SolveParams& params, const KernelArgs<T>& args) {
  PhaseTimer timer(phase_clock().compute_seconds);
  const DistContext& ctx = context();
  const OpNode& node_a = *args.operand_nodes[0];
  const Extents& eb = args.operand_nodes[1]->extents;
  const std::string what = tenex::detail::describe(node_a.labels, node_a.extents);
  const std::size_t n = node_a.extents[0], mode = params.mode;
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < mode; ++d) outer *= eb[d];
  for (std::size_t d = mode + 1; d < eb.size(); ++d) inner *= eb[d];
  const std::size_t nrhs = outer * inner;
  if (n == 0 || nrhs == 0) {
    set_out(args, {allocate_canonical<T>(ctx, eb)});
    return {0, 0};
  }
  const int in = checked_int(n, "matrix order"), irhs = checked_int(nrhs, "right-hand sides"), one = 1;
  MatrixPtr<T> a = copy_of(ctx, *operand(args, 0));
  const MatrixPtr<T>& b = operand(args, 1);
  require_finite(ctx, *a, n, false, "solve", "the matrix a");
  require_finite(ctx, *b, inner == 1 ? n : inner, false, "solve", "b");
  // The right-hand sides as the columns of an n x nrhs matrix (rows: the solved mode; columns:
  // the others, in b's order): b's own layout when the solved mode is its first and only row mode.
  const bool as_stored = mode == 0 && b->split == 1;
  Extents rhs_extents{n};
  RemapRule to_rhs;
  to_rhs.from = {static_cast<int>(mode)};
  for (std::size_t d = 0; d < eb.size(); ++d) {
    if (d == mode) continue;
    rhs_extents.push_back(eb[d]);
    to_rhs.from.push_back(static_cast<int>(d));
  }
  MatrixPtr<T> rhs;
  if (as_stored) {
    rhs = copy_of(ctx, *b);
  } else {
    rhs = allocate_matrix<T>(ctx, rhs_extents, 1);
    remap(ctx, *b, to_rhs, *rhs);
  }
  // (a / 2^e) y = b, x = y / 2^e, as on the CPU.
  const int e = scale_exponent(ctx, *a);
  scale_by_power_of_two(*a, -e);
  const auto anorm = row_sum_norm(ctx, *a);
  std::vector<int> ipiv = pivots(ctx, *a);
  int info = 0;
  if constexpr (std::is_same_v<T, float>) {
    psgesv_(&in, &irhs, a->local.data(), &one, &one, a->desc, ipiv.data(), rhs->local.data(), &one, &one, rhs->desc,
            &info);
  } else if constexpr (std::is_same_v<T, double>) {
    pdgesv_(&in, &irhs, a->local.data(), &one, &one, a->desc, ipiv.data(), rhs->local.data(), &one, &one, rhs->desc,
            &info);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    pcgesv_(&in, &irhs, a->local.data(), &one, &one, a->desc, ipiv.data(), rhs->local.data(), &one, &one, rhs->desc,
            &info);
  } else {
    pzgesv_(&in, &irhs, a->local.data(), &one, &one, a->desc, ipiv.data(), rhs->local.data(), &one, &one, rhs->desc,
            &info);
  }
  check_lu(ctx, "solve", what, n, info, *a, anorm, routine<T>("gesv"));
  unscale_checked(ctx, *rhs, 0, e, "solve", what, n, "the solution x of a x = b for");
  if (!as_stored) {
    // Back to b's modes: b's mode `mode` is the rhs's first, the others follow in order.
    RemapRule back;
    for (std::size_t d = 0; d < eb.size(); ++d)
      back.from.push_back(d == mode ? 0 : static_cast<int>(d < mode ? d + 1 : d));
    MatrixPtr<T> x = allocate_canonical<T>(ctx, eb);
    remap(ctx, *rhs, back, *x);
    rhs = x;
  }
  set_out(args, {rhs});
  const double dn = static_cast<double>(n), dr = static_cast<double>(nrhs);
  return {2.0 * dn * dn * dn / 3.0 + 2.0 * dn * dn * dr, 1};
}

template <class T>
KernelCount DistBackend<T>::run_spd_pow(const SpdPowParams& params, const KernelArgs<T>& args) {
  using R = real_type_t<T>;
  const DistContext& ctx = context();
  const OpNode& node_a = *args.operand_nodes[0];
  const std::string what = tenex::detail::describe(node_a.labels, node_a.extents);
  const std::size_t n = args.node.extents[0];
  const double p = params.power;
  MatrixPtr<T> out = allocate_canonical<T>(ctx, {n, n});
  if (n == 0) {
    set_out(args, {out});
    return {0, 0};
  }
  checked_int(n, "matrix order");
  const MatrixPtr<T>& a = operand(args, 0);
  require_finite(ctx, *a, n, true, "pow", "the matrix");
  require_hermitian(ctx, a, n, "pow", what, false);
  MatrixPtr<T> work = copy_of(ctx, *a);
  MatrixPtr<T> z = allocate_canonical<T>(ctx, {n, n});
  std::vector<R> w(n);
  {
    PhaseTimer timer(phase_clock().compute_seconds);  // p?gemm and the remaps below time themselves
    hermitian_eigenpairs(ctx, *work, *z, w, "pow");
  }
  work.reset();
  // The CPU's tests on the eigenvalues (every rank holds the same w).
  tenex::detail::check_power_eigenvalues(w.data(), n, p, what);
  // a^p = U U^H with column j of U = w_j^(p/2) v_j: each rank scales its own columns; one p?gemm.
  for (int c = 0; c < z->local_cols; ++c) {
    const double wj = std::max(0.0, static_cast<double>(w[static_cast<std::size_t>(z->global_col(ctx, c))]));
    const auto f = static_cast<R>(wj == 0.0 ? 0.0 : std::pow(wj, p / 2));
    T* column = z->local.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(z->lld());
    for (int r = 0; r < z->local_rows; ++r) column[r] *= f;
  }
  gemm(ctx, 'N', is_complex_v<T> ? 'C' : 'T', T(1), *z, *z, T(0), *out);
  z.reset();
  // Exactly symmetric (Hermitian), as on the CPU: the upper triangle mirrors the lower one.
  RemapRule transpose;
  transpose.from = {1, 0};
  MatrixPtr<T> t = allocate_canonical<T>(ctx, {n, n});
  remap(ctx, *out, transpose, *t);
  for (int c = 0; c < out->local_cols; ++c) {
    const auto gc = out->global_col(ctx, c);
    for (int r = 0; r < out->local_rows; ++r) {
      const auto gr = out->global_row(ctx, r);
      const std::size_t at = static_cast<std::size_t>(c) * static_cast<std::size_t>(out->lld()) + r;
      if (gr < gc) out->local[at] = conj_value(t->local[at]);
      if constexpr (is_complex_v<T>) {
        if (gr == gc) out->local[at] = T(out->local[at].real(), R(0));
      }
    }
  }
  const FirstEntry overflow = first_entry(
      ctx, *out, [](T x, std::int64_t, std::int64_t) { return !is_finite_entry(x); }, [](T) { return 0.0; });
  if (overflow.found) {
    throw_overflow<T>("pow", what, n, "the power " + short_number(p),
                      "its entry (" + std::to_string(overflow.flat / n) + ", " + std::to_string(overflow.flat % n) +
                          ") is out of range (its eigenvalues run from " + short_number(static_cast<double>(w[0])) +
                          " to " + short_number(static_cast<double>(w[n - 1])) + ")");
  }
  set_out(args, {out});
  const double dn = static_cast<double>(n);
  return {10.0 * dn * dn * dn, 2};
}

template <class T>
KernelCount DistBackend<T>::run_cholesky(const CholeskyParams& params, const KernelArgs<T>& args) {
  PhaseTimer timer(phase_clock().compute_seconds);
  const DistContext& ctx = context();
  const std::size_t n = args.node.extents[0];
  MatrixPtr<T> a = operand(args, 0);
  MatrixPtr<T> l;
  if (params.upper) {
    // The factor of a^T: its lower triangle is a's upper one.
    RemapRule rule;
    rule.from = {1, 0};
    l = allocate_canonical<T>(ctx, {n, n});
    remap(ctx, *a, rule, *l);
  } else {
    l = copy_of(ctx, *a);
  }
  const int in = checked_int(n, "matrix order"), one = 1;
  if constexpr (is_complex_v<T>) require_hermitian(ctx, l, n, "cholesky", "", true);
  int info = 0;
  if (in > 0) {
    if constexpr (std::is_same_v<T, float>) {
      pspotrf_("L", &in, l->local.data(), &one, &one, l->desc, &info);
    } else if constexpr (std::is_same_v<T, double>) {
      pdpotrf_("L", &in, l->local.data(), &one, &one, l->desc, &info);
    } else if constexpr (std::is_same_v<T, std::complex<float>>) {
      pcpotrf_("L", &in, l->local.data(), &one, &one, l->desc, &info);
    } else {
      pzpotrf_("L", &in, l->local.data(), &one, &one, l->desc, &info);
    }
  }
  const std::string symmetric = is_complex_v<T> ? "Hermitian" : "symmetric";
  check_info(ctx, info, "p?potrf",
             "cholesky: the leading minor of order " + std::to_string(info) + " of the " + std::to_string(n) + " x " +
                 std::to_string(n) + " matrix is not positive definite, so the matrix is not " + symmetric +
                 " positive definite; cholesky needs a " + symmetric + " positive definite matrix");
  zero_triangle(ctx, *l, true);
  set_out(args, {l});
  const double nn = static_cast<double>(n);
  return {nn * nn * nn / 3.0, 1};
}

namespace {

/// Symmetric eigenproblems of real matrices: p?syevd (p?syevr when its workspace query fails
/// or TENEX_DIST_FORCE_SYEVR=1), generalized p?sygvx.
template <class T>
KernelCount eigen_symmetric(const DistContext& ctx, const KernelArgs<T>& args, std::size_t n) {
  const int in = checked_int(n, "matrix order"), one = 1;
  MatrixPtr<T> a = copy_of(ctx, *operand(args, 0));
  MatrixPtr<T> z = allocate_canonical<T>(ctx, {n, n});
  std::vector<T> w(n);
  int info = 0;
  const double nn = static_cast<double>(n);
  if (in == 0) {
    set_out(args, {z, allocate_canonical<T>(ctx, {n})});
    return {0, 0};
  }
  if (args.operands.size() == 2) {
    MatrixPtr<T> b = copy_of(ctx, *operand(args, 1));
    const int ibtype = 1, il = 0, iu = 0;
    const T vl = 0, vu = 0, orfac = T(-1);
    T abstol;
    if constexpr (std::is_same_v<T, float>) {
      abstol = 2 * pslamch_(&ctx.blacs, "S");
    } else {
      abstol = 2 * pdlamch_(&ctx.blacs, "S");
    }
    int found = 0, vectors = 0;
    std::vector<int> ifail(n), iclustr(2 * static_cast<std::size_t>(ctx.size)), iwork(1);
    std::vector<T> gap(static_cast<std::size_t>(ctx.size)), work(1);
    auto call = [&](int lwork, int liwork) {
      if constexpr (std::is_same_v<T, float>) {
        pssygvx_(&ibtype, "V", "A", "L", &in, a->local.data(), &one, &one, a->desc, b->local.data(), &one, &one,
                 b->desc, &vl, &vu, &il, &iu, &abstol, &found, &vectors, w.data(), &orfac, z->local.data(), &one, &one,
                 z->desc, work.data(), &lwork, iwork.data(), &liwork, ifail.data(), iclustr.data(), gap.data(), &info);
      } else {
        pdsygvx_(&ibtype, "V", "A", "L", &in, a->local.data(), &one, &one, a->desc, b->local.data(), &one, &one,
                 b->desc, &vl, &vu, &il, &iu, &abstol, &found, &vectors, w.data(), &orfac, z->local.data(), &one, &one,
                 z->desc, work.data(), &lwork, iwork.data(), &liwork, ifail.data(), iclustr.data(), gap.data(), &info);
      }
    };
    call(-1, -1);
    check_info(ctx, info, "p?sygvx", "eigen_solve: the workspace query failed");
    // Room for reorthogonalizing clusters of close eigenvalues (the query assumes none).
    work = workspace<T>(ctx, static_cast<double>(work[0]), checked_int(n * std::min<std::size_t>(n, 512), "workspace"));
    const int liwork = padded(static_cast<double>(iwork[0]), 0);
    agreed(ctx, [&] { iwork.assign(static_cast<std::size_t>(liwork), 0); });
    call(static_cast<int>(work.size()), liwork);
    std::string what = "eigen_solve(a, b): ";
    if (info > 0 && (info & 16)) {
      what += "the leading minor of order " + std::to_string(ifail[0]) +
              " of b is not positive definite; the generalized eigensolver needs b symmetric positive definite";
    } else {
      what += "the eigensolver did not converge";
    }
    check_info(ctx, info, "p?sygvx", what);
    set_out(args, {z, vector_of(ctx, w, n)});
    return {14.0 * nn * nn * nn, 1};
  }
  hermitian_eigenpairs(ctx, *a, *z, w, "eigen_solve");
  set_out(args, {z, vector_of(ctx, w, n)});
  return {9.0 * nn * nn * nn, 1};
}

/// Hermitian eigenproblems of complex matrices: p?heevd (p?heevr when its workspace query
/// fails or TENEX_DIST_FORCE_SYEVR=1), generalized p?hegvx. The eigenvalues are real; the
/// packed value holds them with a zero imaginary part, as the CPU backend's does.
template <class T>
KernelCount eigen_hermitian(const DistContext& ctx, const KernelArgs<T>& args, std::size_t n) {
  using R = real_type_t<T>;
  constexpr bool single = std::is_same_v<T, std::complex<float>>;
  const int in = checked_int(n, "matrix order"), one = 1;
  MatrixPtr<T> a = copy_of(ctx, *operand(args, 0));
  MatrixPtr<T> z = allocate_canonical<T>(ctx, {n, n});
  std::vector<R> w(n);
  int info = 0;
  const double nn = static_cast<double>(n);
  if (in == 0) {
    set_out(args, {z, allocate_canonical<T>(ctx, {n})});
    return {0, 0};
  }
  const bool generalized = args.operands.size() == 2;
  require_hermitian(ctx, a, n, "eigen_solve", generalized ? "a" : "", false);
  auto values = [&] {
    std::vector<T> v(n);
    for (std::size_t k = 0; k < n; ++k) v[k] = T(w[k], R(0));
    return vector_of(ctx, v, n);
  };
  std::vector<T> work(1);
  std::vector<R> rwork(3);
  std::vector<int> iwork(1);
  // Sizes the three workspaces from a query's answers (padded as the real drivers' are).
  auto size_workspaces = [&](int extra) {
    work = workspace<T>(ctx, static_cast<double>(std::real(work[0])), extra);
    rwork = workspace<R>(ctx, static_cast<double>(rwork[0]), extra);
    const int liwork = padded(static_cast<double>(iwork[0]), 0);
    agreed(ctx, [&] { iwork.assign(static_cast<std::size_t>(liwork), 0); });
  };
  if (generalized) {
    MatrixPtr<T> b = copy_of(ctx, *operand(args, 1));
    require_hermitian(ctx, b, n, "eigen_solve", "b", false);
    const int ibtype = 1, il = 0, iu = 0;
    const R vl = 0, vu = 0, orfac = R(-1), abstol = 2 * lamch<R>(ctx, "S");
    int found = 0, vectors = 0;
    std::vector<int> ifail(n), iclustr(2 * static_cast<std::size_t>(ctx.size));
    std::vector<R> gap(static_cast<std::size_t>(ctx.size));
    auto call = [&](int lwork, int lrwork, int liwork) {
      if constexpr (single) {
        pchegvx_(&ibtype, "V", "A", "L", &in, a->local.data(), &one, &one, a->desc, b->local.data(), &one, &one,
                 b->desc, &vl, &vu, &il, &iu, &abstol, &found, &vectors, w.data(), &orfac, z->local.data(), &one, &one,
                 z->desc, work.data(), &lwork, rwork.data(), &lrwork, iwork.data(), &liwork, ifail.data(),
                 iclustr.data(), gap.data(), &info);
      } else {
        pzhegvx_(&ibtype, "V", "A", "L", &in, a->local.data(), &one, &one, a->desc, b->local.data(), &one, &one,
                 b->desc, &vl, &vu, &il, &iu, &abstol, &found, &vectors, w.data(), &orfac, z->local.data(), &one, &one,
                 z->desc, work.data(), &lwork, rwork.data(), &lrwork, iwork.data(), &liwork, ifail.data(),
                 iclustr.data(), gap.data(), &info);
      }
    };
    call(-1, -1, -1);
    check_info(ctx, info, "p?hegvx", "eigen_solve: the workspace query failed");
    // Room for reorthogonalizing clusters of close eigenvalues (the query assumes none).
    size_workspaces(checked_int(n * std::min<std::size_t>(n, 512), "workspace"));
    call(static_cast<int>(work.size()), static_cast<int>(rwork.size()), static_cast<int>(iwork.size()));
    std::string what = "eigen_solve(a, b): ";
    if (info > 0 && (info & 16)) {
      what += "the leading minor of order " + std::to_string(ifail[0]) +
              " of b is not positive definite; the generalized eigensolver needs b Hermitian positive definite";
    } else {
      what += "the eigensolver did not converge";
    }
    check_info(ctx, info, "p?hegvx", what);
    set_out(args, {z, values()});
    return {14.0 * nn * nn * nn, 1};
  }
  hermitian_eigenpairs(ctx, *a, *z, w, "eigen_solve");
  set_out(args, {z, values()});
  return {9.0 * nn * nn * nn, 1};
}

}  // namespace

template <class T>
KernelCount DistBackend<T>::run_eigen_solve(const EigenSolveParams&, const KernelArgs<T>& args) {
  PhaseTimer timer(phase_clock().compute_seconds);
  const DistContext& ctx = context();
  const std::size_t n = args.node.extents[0];
  if constexpr (is_complex_v<T>) {
    return eigen_hermitian(ctx, args, n);
  } else {
    return eigen_symmetric(ctx, args, n);
  }
}

template <class T>
KernelCount DistBackend<T>::run_qr(const QrParams&, const KernelArgs<T>& args) {
  PhaseTimer timer(phase_clock().compute_seconds);
  const DistContext& ctx = context();
  const std::size_t m = args.node.extents[0], n = args.node.extents[1], k = std::min(m, n);
  MatrixPtr<T> a = copy_of(ctx, *operand(args, 0));
  MatrixPtr<T> q = allocate_canonical<T>(ctx, {m, k});
  MatrixPtr<T> r = allocate_canonical<T>(ctx, {k, n});
  if (k == 0) {
    set_out(args, {q, r});
    return {0, 0};
  }
  const int im = checked_int(m, "rows"), in = checked_int(n, "columns"), ik = static_cast<int>(k), one = 1;
  std::vector<T> tau(static_cast<std::size_t>(std::max(1, a->local_cols)) + static_cast<std::size_t>(ctx.block));
  std::vector<T> work(1);
  int info = 0, lwork = -1;
  auto geqrf = [&] {
    if constexpr (std::is_same_v<T, float>) {
      psgeqrf_(&im, &in, a->local.data(), &one, &one, a->desc, tau.data(), work.data(), &lwork, &info);
    } else if constexpr (std::is_same_v<T, double>) {
      pdgeqrf_(&im, &in, a->local.data(), &one, &one, a->desc, tau.data(), work.data(), &lwork, &info);
    } else if constexpr (std::is_same_v<T, std::complex<float>>) {
      pcgeqrf_(&im, &in, a->local.data(), &one, &one, a->desc, tau.data(), work.data(), &lwork, &info);
    } else {
      pzgeqrf_(&im, &in, a->local.data(), &one, &one, a->desc, tau.data(), work.data(), &lwork, &info);
    }
  };
  geqrf();
  check_info(ctx, info, "p?geqrf", "qr: the workspace query failed");
  work = workspace<T>(ctx, static_cast<double>(std::real(work[0])), 0);
  lwork = static_cast<int>(work.size());
  geqrf();
  check_info(ctx, info, "p?geqrf", "qr failed");
  copy_block(ctx, ik, in, *a, 0, 0, *r, 0, 0);
  zero_triangle(ctx, *r, false);
  copy_block(ctx, im, ik, *a, 0, 0, *q, 0, 0);
  auto orgqr = [&] {
    if constexpr (std::is_same_v<T, float>) {
      psorgqr_(&im, &ik, &ik, q->local.data(), &one, &one, q->desc, tau.data(), work.data(), &lwork, &info);
    } else if constexpr (std::is_same_v<T, double>) {
      pdorgqr_(&im, &ik, &ik, q->local.data(), &one, &one, q->desc, tau.data(), work.data(), &lwork, &info);
    } else if constexpr (std::is_same_v<T, std::complex<float>>) {
      pcungqr_(&im, &ik, &ik, q->local.data(), &one, &one, q->desc, tau.data(), work.data(), &lwork, &info);
    } else {
      pzungqr_(&im, &ik, &ik, q->local.data(), &one, &one, q->desc, tau.data(), work.data(), &lwork, &info);
    }
  };
  lwork = -1;
  orgqr();
  check_info(ctx, info, "p?orgqr", "qr: the workspace query failed");
  work = workspace<T>(ctx, static_cast<double>(std::real(work[0])), 0);
  lwork = static_cast<int>(work.size());
  orgqr();
  check_info(ctx, info, "p?orgqr", "qr failed");
  set_out(args, {q, r});
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  return {4.0 * dm * dn * dk, 2};
}

template <class T>
KernelCount DistBackend<T>::run_svd(const SvdParams&, const KernelArgs<T>& args) {
  PhaseTimer timer(phase_clock().compute_seconds);
  const DistContext& ctx = context();
  const std::size_t m = args.node.extents[0], n = args.node.extents[1], k = std::min(m, n);
  MatrixPtr<T> a = copy_of(ctx, *operand(args, 0));
  MatrixPtr<T> u = allocate_canonical<T>(ctx, {m, k});
  MatrixPtr<T> vt = allocate_canonical<T>(ctx, {k, n});
  using R = real_type_t<T>;
  std::vector<R> s(k);  // singular values are real (complex matrices: A = U S V^H, vt holds V^H)
  if (k == 0) {
    set_out(args, {u, allocate_canonical<T>(ctx, {k}), vt});
    return {0, 0};
  }
  const int im = checked_int(m, "rows"), in = checked_int(n, "columns"), one = 1;
  std::vector<T> work(1);
  std::vector<R> rwork;  // complex drivers only: 1 + 4 max(m, n)
  if constexpr (is_complex_v<T>) rwork = workspace<R>(ctx, 1.0 + 4.0 * static_cast<double>(std::max(m, n)), 0);
  int info = 0, lwork = -1;
  auto call = [&] {
    if constexpr (std::is_same_v<T, float>) {
      psgesvd_("V", "V", &im, &in, a->local.data(), &one, &one, a->desc, s.data(), u->local.data(), &one, &one, u->desc,
               vt->local.data(), &one, &one, vt->desc, work.data(), &lwork, &info);
    } else if constexpr (std::is_same_v<T, double>) {
      pdgesvd_("V", "V", &im, &in, a->local.data(), &one, &one, a->desc, s.data(), u->local.data(), &one, &one, u->desc,
               vt->local.data(), &one, &one, vt->desc, work.data(), &lwork, &info);
    } else if constexpr (std::is_same_v<T, std::complex<float>>) {
      pcgesvd_("V", "V", &im, &in, a->local.data(), &one, &one, a->desc, s.data(), u->local.data(), &one, &one, u->desc,
               vt->local.data(), &one, &one, vt->desc, work.data(), &lwork, rwork.data(), &info);
    } else {
      pzgesvd_("V", "V", &im, &in, a->local.data(), &one, &one, a->desc, s.data(), u->local.data(), &one, &one, u->desc,
               vt->local.data(), &one, &one, vt->desc, work.data(), &lwork, rwork.data(), &info);
    }
  };
  call();
  check_info(ctx, info, "p?gesvd", "svd: the workspace query failed");
  work = workspace<T>(ctx, static_cast<double>(std::real(work[0])), 0);
  lwork = static_cast<int>(work.size());
  call();
  check_info(ctx, info, "p?gesvd", "svd: the SVD did not converge");
  std::vector<T> values(k);
  for (std::size_t x = 0; x < k; ++x) values[x] = static_cast<T>(s[x]);
  set_out(args, {u, vector_of(ctx, values, k), vt});
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  return {4.0 * dm * dn * dk + 8.0 * dk * dk * dk, 1};
}

namespace {
bool dist_available() { return current_context() != nullptr; }
std::unique_ptr<Backend<float>> make_dist_f32() { return std::make_unique<DistBackend<float>>(); }
std::unique_ptr<Backend<double>> make_dist_f64() { return std::make_unique<DistBackend<double>>(); }
std::unique_ptr<Backend<std::complex<float>>> make_dist_c64() {
  return std::make_unique<DistBackend<std::complex<float>>>();
}
std::unique_ptr<Backend<std::complex<double>>> make_dist_c128() {
  return std::make_unique<DistBackend<std::complex<double>>>();
}
}  // namespace

tenex::detail::BackendEntry dist_backend_entry() {
  tenex::detail::BackendEntry entry;
  entry.kind = BackendKind::distributed;
  entry.name = "distributed";
  entry.available = &dist_available;
  entry.make_f32 = &make_dist_f32;
  entry.make_f64 = &make_dist_f64;
  entry.make_c64 = &make_dist_c64;
  entry.make_c128 = &make_dist_c128;
  return entry;
}

#define TENEX_INSTANTIATE_DIST_BACKEND(T)                               \
  template class DistBackend<T>;                                        \
  template Buffer make_value_buffer<T>(std::shared_ptr<DistMatrix<T>>); \
  template const DistValue<T>* distributed_value<T>(Storage<T>&);       \
  template void register_proxy<T>(const Tensor<T>*);                    \
  template void unregister_proxy<T>(const Tensor<T>*);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_DIST_BACKEND)
#undef TENEX_INSTANTIATE_DIST_BACKEND

}  // namespace tenex::dist::detail

// The plugin's one export (plugins.hpp): the registry loads libtenex_dist.so (already loaded
// in a program that links it for tenex::dist::Context) and registers this entry when a set
// asks for the distributed backend.
extern "C" __attribute__((visibility("default"))) const tenex::detail::BackendEntry* tenex_backend_plugin(
    const char* tenex_version) {
  static const tenex::detail::BackendEntry entry = tenex::dist::detail::dist_backend_entry();
  return std::string_view(tenex_version) == TENEX_VERSION_STRING ? &entry : nullptr;
}
