// Tensor contraction on the CPU as loops over GEMM calls (cblas), after the fewest and
// smallest permutations.
//
// After modes found in one operand only are summed out (reduce) and extent-1 modes dropped,
// every mode is a batch mode (in a, b and c), an m mode (a and c), an n mode (b and c) or a
// k mode (a and b). A plan fuses a group of m modes, one of n modes and one of k modes into
// the dimensions of a GEMM and loops over every other mode (loops over k modes accumulate).
// A group can be fused where its modes are adjacent, in the same order, in every operand
// that holds them as it is; each matrix needs one unit-stride dimension, which is why a
// plan can also lay an operand out afresh:
//   - a or b is permuted whole into a layout that suits the GEMM (cheap when it is small);
//   - c is written to a buffer laid out for the GEMM and permuted into place, either whole
//     ("buffered") or one tile at a time, by tasks that loop over some outer modes of c
//     ("tiled"): a tile stays in cache between the GEMMs that write it and the copy that
//     scatters it, so the permutation of c costs almost no memory traffic.
// Every candidate is costed with a small model (bytes the permutations move at memory
// bandwidth; GEMM time from a per-core peak scaled down for small dimensions, plus a fixed
// cost per call) and the cheapest runs. Plans are cached per thread by problem shape.
//
// Threads: the GEMMs of a plan are independent tasks (loop indices, and slices of m and n
// when there are too few loop indices), shared among OpenMP threads, each task calling a
// single-threaded GEMM. OpenBLAS built on pthreads has no per-call thread count, so while
// such tasks run its global count is set to 1 (and restored after); with an OpenMP
// OpenBLAS (or another BLAS) a call made inside a parallel region is single-threaded anyway.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/scratch.hpp"
#include "tenex/scalar.hpp"

// OpenBLAS's thread controls, declared weak so that the library still links (and simply
// does not use them) against another BLAS.
extern "C" {
__attribute__((weak)) int openblas_get_parallel(void);
__attribute__((weak)) int openblas_get_num_threads(void);
__attribute__((weak)) void openblas_set_num_threads(int);
}

namespace tenex::detail::cpu {
namespace {

// ---------------------------------------------------------------------------------------
// Cost model constants. They only rank plans against each other, so they need to be right
// within a factor, not exact; measured on a Zen 4 core with OpenBLAS 0.3.21.

// GEMM flops per second of one core on large double matrices (twice that for float).
constexpr double kCorePeakDouble = 45e9;
// A GEMM dimension of extent x runs at x / (x + kHalfSpeed) of the peak: a dimension of 8
// halves the speed (packing and edge cases dominate).
constexpr double kHalfSpeed = 8.0;
// Fixed cost of one GEMM call (argument checks, buffer set-up).
constexpr double kCallSeconds = 0.4e-6;
// Bytes per second a permutation moves through memory (reads plus writes, all cores).
constexpr double kMemoryBandwidth = 14e9;
// Bytes per second of a permutation within cache (per core).
constexpr double kCacheBandwidth = 25e9;
// Element products per second of the plain loops of the fallback kernel (per core).
constexpr double kNaiveRate = 1.5e9;
// Writing one run of a tile to a page other than the previous run's (a TLB miss, mostly).
constexpr double kScatteredRunSeconds = 25e-9;
// A tile larger than this spills out of the core's L2 before it is scattered.
constexpr double kTileBytes = 768.0 * 1024;
// A matrix this small stays in a core's L2 cache between uses.
constexpr double kCacheResident = 512.0 * 1024;
// The least extent a GEMM dimension is cut down to when cut into tasks.
constexpr std::size_t kMinSlice = 48;
// Problems smaller than this (flops) skip the search over tiles: it costs more than it saves.
constexpr double kTiledSearchMin = 2e7;
// Outer modes of c a tiled plan may loop over.
constexpr std::size_t kMaxTileModes = 5;
// Less work than this (flops, or products for the plain loops) runs on the calling thread:
// starting a parallel region costs microseconds, and milliseconds when the other threads
// have gone to sleep.
constexpr double kParallelFlops = 4e6;

enum class Role : unsigned char { batch, m, n, k };
constexpr int kA = 0, kB = 1, kC = 2;

// ---------------------------------------------------------------------------------------
// BLAS calls on strided matrices.

void xgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void xgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// C (m x n) += A (m x k) B (k x n), each matrix given by the element strides of its two
// dimensions ("a_m": the stride of A along m, ...).
struct Geometry {
  std::size_t m = 1, n = 1, k = 1;
  std::ptrdiff_t a_m = 1, a_k = 1, b_k = 1, b_n = 1, c_m = 1, c_n = 1;
};

// The row-major cblas call for a Geometry. `swap` computes C^T = B^T A^T instead, for a C
// whose unit stride runs along m.
struct BlasCall {
  bool swap = false;
  CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
};

bool unit(std::size_t extent, std::ptrdiff_t stride) { return extent <= 1 || stride == 1; }

bool fits_int(std::size_t x) { return x <= static_cast<std::size_t>(INT_MAX); }

bool leading_ok(std::ptrdiff_t ld, std::size_t least) {
  return ld >= static_cast<std::ptrdiff_t>(std::max<std::size_t>(least, 1)) && ld <= INT_MAX;
}

// A matrix needs a unit stride along one dimension (a vector needs none), a leading
// dimension at least its row length, and sizes within int.
std::optional<BlasCall> blas_call(Geometry g) {
  if (!fits_int(g.m) || !fits_int(g.n) || !fits_int(g.k)) return std::nullopt;
  BlasCall call;
  call.swap = !unit(g.n, g.c_n);
  if (call.swap) {
    if (!unit(g.m, g.c_m)) return std::nullopt;
    std::swap(g.m, g.n);
    std::swap(g.c_m, g.c_n);
    std::swap(g.a_m, g.b_n);
    std::swap(g.a_k, g.b_k);
  }
  const auto ldc = g.m <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.n, 1)) : g.c_m;
  if (!leading_ok(ldc, g.n)) return std::nullopt;
  std::ptrdiff_t lda = 0, ldb = 0;
  if (unit(g.k, g.a_k) && (g.m <= 1 || g.a_m >= static_cast<std::ptrdiff_t>(g.k))) {
    call.ta = CblasNoTrans;
    lda = g.m <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.k, 1)) : g.a_m;
    if (!leading_ok(lda, g.k)) return std::nullopt;
  } else if (unit(g.m, g.a_m)) {
    call.ta = CblasTrans;
    lda = g.k <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.m, 1)) : g.a_k;
    if (!leading_ok(lda, g.m)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (unit(g.n, g.b_n) && (g.k <= 1 || g.b_k >= static_cast<std::ptrdiff_t>(g.n))) {
    call.tb = CblasNoTrans;
    ldb = g.k <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.n, 1)) : g.b_k;
    if (!leading_ok(ldb, g.n)) return std::nullopt;
  } else if (unit(g.k, g.b_k)) {
    call.tb = CblasTrans;
    ldb = g.n <= 1 ? static_cast<std::ptrdiff_t>(std::max<std::size_t>(g.k, 1)) : g.b_n;
    if (!leading_ok(ldb, g.k)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  call.m = static_cast<int>(g.m);
  call.n = static_cast<int>(g.n);
  call.k = static_cast<int>(g.k);
  call.lda = static_cast<int>(lda);
  call.ldb = static_cast<int>(ldb);
  call.ldc = static_cast<int>(ldc);
  return call;
}

// One GEMM on strided matrices. Plans only produce geometries blas_call accepts; the plain
// loop below is a safety net that keeps this function from failing inside a parallel region.
template <class T>
void gemm(const Geometry& g, T alpha, const T* a, const T* b, T beta, T* c) {
  if (const auto call = blas_call(g)) {
    const T* first = call->swap ? b : a;
    const T* second = call->swap ? a : b;
    xgemm(call->ta, call->tb, call->m, call->n, call->k, alpha, first, call->lda, second, call->ldb, beta, c,
          call->ldc);
    return;
  }
  for (std::size_t i = 0; i < g.m; ++i) {
    for (std::size_t j = 0; j < g.n; ++j) {
      T sum = T(0);
      for (std::size_t p = 0; p < g.k; ++p) {
        sum += a[static_cast<std::ptrdiff_t>(i) * g.a_m + static_cast<std::ptrdiff_t>(p) * g.a_k] *
               b[static_cast<std::ptrdiff_t>(p) * g.b_k + static_cast<std::ptrdiff_t>(j) * g.b_n];
      }
      T& out = c[static_cast<std::ptrdiff_t>(i) * g.c_m + static_cast<std::ptrdiff_t>(j) * g.c_n];
      out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
    }
  }
}

// While alive, a pthreads OpenBLAS runs every call on the calling thread. Nested and
// concurrent holders share one saved thread count.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas() {
    if (!controllable()) return;
    std::lock_guard lock(mutex());
    if (holders()++ == 0) {
      saved() = openblas_get_num_threads();
      if (saved() > 1) openblas_set_num_threads(1);
    }
    active_ = true;
  }
  ~SingleThreadedBlas() {
    if (!active_) return;
    std::lock_guard lock(mutex());
    if (--holders() == 0 && saved() > 1) openblas_set_num_threads(saved());
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  // openblas_get_parallel: 0 sequential, 1 pthreads, 2 OpenMP (which already runs one
  // thread per call inside a parallel region, and whose setter would change ours).
  static bool controllable() {
    static const bool yes = openblas_get_parallel != nullptr && openblas_get_num_threads != nullptr &&
                            openblas_set_num_threads != nullptr && openblas_get_parallel() == 1;
    return yes;
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static int& holders() {
    static int n = 0;
    return n;
  }
  static int& saved() {
    static int n = 1;
    return n;
  }
  bool active_ = false;
};

// ---------------------------------------------------------------------------------------
// Loop nests over GEMMs.

struct Loop {
  std::size_t extent;
  std::ptrdiff_t a, b, c;  // element strides (0 where the operand lacks the mode)
};

struct Nest {
  Geometry gemm;
  std::vector<Loop> outer;  // modes of c: independent GEMMs
  std::vector<Loop> inner;  // contracted modes not fused into k: accumulate
};

std::size_t count(const std::vector<Loop>& loops) {
  std::size_t n = 1;
  for (const Loop& l : loops) n *= l.extent;
  return n;
}

// Offsets of the linear index `x` of `loops` (row-major).
void offsets(const std::vector<Loop>& loops, std::size_t x, std::ptrdiff_t& a, std::ptrdiff_t& b,
             std::ptrdiff_t& c) {
  for (std::size_t d = loops.size(); d-- > 0;) {
    const auto i = static_cast<std::ptrdiff_t>(x % loops[d].extent);
    x /= loops[d].extent;
    a += i * loops[d].a;
    b += i * loops[d].b;
    c += i * loops[d].c;
  }
}

// The GEMM calls of one task: parts [m0, m0 + part.m) x [n0, n0 + part.n) of the outer
// index x, accumulated over the inner indices [y0, y1) and over [k0, k0 + part.k) of k.
struct Part {
  Geometry part;
  std::size_t x = 0, m0 = 0, n0 = 0, k0 = 0, y0 = 0, y1 = 1;
};

template <class T>
void run_part(const Nest& nest, const Part& p, T alpha, const T* a, const T* b, T beta, T* c) {
  const Geometry& g = nest.gemm;
  std::ptrdiff_t oa = 0, ob = 0, oc = 0;
  offsets(nest.outer, p.x, oa, ob, oc);
  oa += static_cast<std::ptrdiff_t>(p.m0) * g.a_m + static_cast<std::ptrdiff_t>(p.k0) * g.a_k;
  ob += static_cast<std::ptrdiff_t>(p.n0) * g.b_n + static_cast<std::ptrdiff_t>(p.k0) * g.b_k;
  oc += static_cast<std::ptrdiff_t>(p.m0) * p.part.c_m + static_cast<std::ptrdiff_t>(p.n0) * p.part.c_n;
  for (std::size_t y = p.y0; y < p.y1; ++y) {
    std::ptrdiff_t ia = oa, ib = ob, ic = oc;
    offsets(nest.inner, y, ia, ib, ic);
    gemm(p.part, alpha, a + ia, b + ib, y == p.y0 ? beta : T(1), c + ic);
  }
}

std::size_t pieces(std::size_t n, std::size_t slice) { return (n + slice - 1) / slice; }

// Runs the nest: c = alpha a b + beta c, with beta applied by the first GEMM into each part
// of c (beta == 0: c is not read). Returns the number of GEMM calls.
//
// With `parallel`, the outer indices are tasks shared among threads, each calling a
// single-threaded GEMM. With too few of them, each GEMM is cut along m (or n), where reading
// the other factor once more per slice costs little next to the flops; else, when c is small
// and k long, k is cut and each thread sums into its own copy of c; else the GEMMs run one
// after the other, each threaded by the BLAS.
template <class T>
std::size_t run_nest(const Nest& nest, T alpha, const T* a, const T* b, T beta, T* c, bool parallel) {
  const Geometry& g = nest.gemm;
  const std::size_t outer = count(nest.outer), inner = count(nest.inner);
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                       static_cast<double>(outer) * static_cast<double>(inner);
  const std::size_t threads = parallel && flops >= kParallelFlops && !omp_in_parallel()
                                  ? static_cast<std::size_t>(omp_get_max_threads())
                                  : 1;
  const std::size_t want = 2 * threads;
  std::size_t slice_m = g.m, slice_n = g.n;
  if (threads > 1 && outer < want) {
    // Bytes read again from memory because of the cuts may cost a few percent of the GEMM
    // time; a factor that fits in a core's L2 is read again for free.
    const double budget = flops / 64.0;
    auto from_memory = [](double bytes) { return bytes <= kCacheResident ? 0.0 : bytes; };
    const double panel_a = from_memory(static_cast<double>(g.m * g.k * sizeof(T)));
    const double panel_b = from_memory(static_cast<double>(g.k * g.n * sizeof(T)));
    auto extra = [&](std::size_t sm, std::size_t sn) {
      return static_cast<double>(outer) * static_cast<double>(inner) *
             ((static_cast<double>(pieces(g.m, sm)) - 1.0) * panel_b + (static_cast<double>(pieces(g.n, sn)) - 1.0) * panel_a);
    };
    while (outer * pieces(g.m, slice_m) * pieces(g.n, slice_n) < want) {
      const std::size_t half_m = (slice_m + 1) / 2, half_n = (slice_n + 1) / 2;
      const bool can_m = slice_m >= 2 * kMinSlice && extra(half_m, slice_n) <= budget;
      const bool can_n = slice_n >= 2 * kMinSlice && extra(slice_m, half_n) <= budget;
      if (can_m && (!can_n || slice_m >= slice_n)) {
        slice_m = half_m;
      } else if (can_n) {
        slice_n = half_n;
      } else {
        break;
      }
    }
  }
  const std::size_t pieces_m = pieces(g.m, slice_m), pieces_n = pieces(g.n, slice_n);
  const std::size_t tasks = outer * pieces_m * pieces_n;

  if (threads > 1 && tasks >= threads) {
    SingleThreadedBlas single;
#pragma omp parallel for schedule(dynamic)
    for (std::size_t t = 0; t < tasks; ++t) {
      Part p;
      p.part = g;
      p.x = t / (pieces_n * pieces_m);
      p.m0 = (t / pieces_n) % pieces_m * slice_m;
      p.n0 = t % pieces_n * slice_n;
      p.part.m = std::min(slice_m, g.m - p.m0);
      p.part.n = std::min(slice_n, g.n - p.n0);
      p.y1 = inner;
      run_part(nest, p, alpha, a, b, beta, c);
    }
    return tasks * inner;
  }

  // Cut the sums: each thread adds its share of (inner index, slice of k) into its own
  // m x n buffer; the buffers are then summed into c.
  const std::size_t k_pieces = inner >= threads ? 1 : pieces(threads, inner);
  const std::size_t units = inner * k_pieces;
  const bool split_k = threads > 1 && outer == 1 && units >= threads && g.k >= k_pieces * kMinSlice &&
                       g.m * g.n <= (std::size_t{1} << 20);
  if (split_k) {
    const std::size_t mn = g.m * g.n, slice_k = pieces(g.k, k_pieces);
    Scratch<T> partial(mn * threads);
    {
      SingleThreadedBlas single;
#pragma omp parallel num_threads(static_cast<int>(threads))
      {
        const auto me = static_cast<std::size_t>(omp_get_thread_num());
        const auto team = static_cast<std::size_t>(omp_get_num_threads());
        T* mine = partial.get() + me * mn;
        bool first = true;
        for (std::size_t u = units * me / team; u < units * (me + 1) / team; ++u) {
          Part p;
          p.part = g;
          p.part.c_m = static_cast<std::ptrdiff_t>(g.n);
          p.part.c_n = 1;
          p.y0 = u / k_pieces;
          p.y1 = p.y0 + 1;
          p.k0 = u % k_pieces * slice_k;
          p.part.k = std::min(slice_k, g.k - std::min(g.k, p.k0));
          if (p.part.k == 0) continue;
          run_part(nest, p, T(1), a, b, first ? T(0) : T(1), mine);
          first = false;
        }
        if (first) std::fill(mine, mine + mn, T(0));
#pragma omp barrier
#pragma omp for schedule(static)
        for (std::size_t i = 0; i < g.m; ++i) {
          for (std::size_t j = 0; j < g.n; ++j) {
            T sum = T(0);
            for (std::size_t t = 0; t < team; ++t) sum += partial.get()[t * mn + i * g.n + j];
            T& out = c[static_cast<std::ptrdiff_t>(i) * g.c_m + static_cast<std::ptrdiff_t>(j) * g.c_n];
            out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
          }
        }
      }
    }
    return units;
  }

  // One GEMM after the other, each threaded by the BLAS (or all on this thread).
  for (std::size_t x = 0; x < outer; ++x) {
    Part p;
    p.part = g;
    p.x = x;
    p.y1 = inner;
    run_part(nest, p, alpha, a, b, beta, c);
  }
  return outer * inner;
}

// ---------------------------------------------------------------------------------------
// The canonical problem: distinct modes numbered in order of first appearance (a, b, c),
// extent-1 modes dropped.

struct Problem {
  std::size_t element_size = 8;
  bool beta_zero = true;
  std::size_t threads = 1;
  std::vector<std::size_t> extent;  // per distinct mode
  std::vector<Role> role;
  std::array<std::vector<int>, 3> order;              // each operand's modes, slowest first
  std::array<std::vector<std::ptrdiff_t>, 3> stride;  // per distinct mode; 0 where absent
  std::array<std::size_t, 3> size{1, 1, 1};           // elements of each operand

  std::size_t modes() const { return extent.size(); }
  bool has(int op, int d) const { return stride[op][static_cast<std::size_t>(d)] != 0; }
  int last(int op) const { return order[op].empty() ? -1 : order[op].back(); }
};

enum class Output : unsigned char { direct, buffered, tiled };

struct Plan {
  bool naive = true;  // plain loops instead of GEMM
  bool permute_a = false, permute_b = false;
  Output output = Output::direct;
  std::vector<int> gm, gn, gk;  // fused groups, slowest mode first
  std::vector<int> tiles;       // tiled: modes of c the tasks loop over
  double seconds = std::numeric_limits<double>::infinity();
};

using Group = std::vector<int>;

std::size_t extent_of(const Problem& p, const Group& g) {
  std::size_t n = 1;
  for (int d : g) n *= p.extent[static_cast<std::size_t>(d)];
  return n;
}

bool contains(const Group& g, int d) { return std::find(g.begin(), g.end(), d) != g.end(); }

// Maximal groups of available `role` modes that are adjacent, and in the same order, in
// each of the operands x and y that is kept as it is ("fixed"). When neither is, every
// available mode forms one group, in x's order (x holds every `role` mode).
std::vector<Group> runs(const Problem& p, Role role, const std::vector<char>& available, int x, bool x_fixed, int y,
                        bool y_fixed) {
  auto wanted = [&](int d) {
    const auto u = static_cast<std::size_t>(d);
    return p.role[u] == role && available[u];
  };
  std::vector<Group> out;
  if (!x_fixed && !y_fixed) {
    Group all;
    for (int d : p.order[x]) {
      if (wanted(d)) all.push_back(d);
    }
    if (!all.empty()) out.push_back(std::move(all));
    return out;
  }
  const int base = x_fixed ? x : y;
  const bool both = x_fixed && y_fixed;
  auto position_in_y = [&](int d) {
    const auto& o = p.order[y];
    return std::find(o.begin(), o.end(), d) - o.begin();
  };
  Group current;
  for (int d : p.order[base]) {
    const bool adjacent_in_y = !both || current.empty() || position_in_y(d) == position_in_y(current.back()) + 1;
    if (!wanted(d) || !adjacent_in_y) {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    }
    if (wanted(d)) current.push_back(d);
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

// Layout of an operand laid out afresh: its loop modes (in the operand's own order), then
// its two groups, the one holding the operand's fastest mode innermost (so that the
// permutation keeps its inner rows), else `second` innermost.
std::vector<int> fresh_layout(const Problem& p, int op, const Group& first, const Group& second,
                              const std::vector<int>& skip) {
  std::vector<int> layout;
  for (int d : p.order[op]) {
    if (!contains(first, d) && !contains(second, d) && !contains(skip, d)) layout.push_back(d);
  }
  const int fast = p.last(op);
  const bool first_inner = fast >= 0 && contains(first, fast);
  const Group& outer_group = first_inner ? second : first;
  const Group& inner_group = first_inner ? first : second;
  layout.insert(layout.end(), outer_group.begin(), outer_group.end());
  layout.insert(layout.end(), inner_group.begin(), inner_group.end());
  return layout;
}

// Dense row-major strides, per distinct mode, of `layout`.
std::vector<std::ptrdiff_t> dense_strides(const Problem& p, const std::vector<int>& layout) {
  std::vector<std::ptrdiff_t> s(p.modes(), 0);
  std::ptrdiff_t next = 1;
  for (std::size_t x = layout.size(); x-- > 0;) {
    const auto d = static_cast<std::size_t>(layout[x]);
    s[d] = next;
    next *= static_cast<std::ptrdiff_t>(p.extent[d]);
  }
  return s;
}

// Stride of a fused group: that of its fastest mode (1 for an empty group).
std::ptrdiff_t group_stride(const std::vector<std::ptrdiff_t>& s, const Group& g) {
  return g.empty() ? 1 : s[static_cast<std::size_t>(g.back())];
}

// The group strides of an operand laid out afresh (see fresh_layout), without building it.
std::pair<std::ptrdiff_t, std::ptrdiff_t> fresh_group_strides(const Problem& p, int op, const Group& first,
                                                              const Group& second) {
  const int fast = p.last(op);
  const bool first_inner = fast >= 0 && contains(first, fast);
  const auto inner_extent = static_cast<std::ptrdiff_t>(extent_of(p, first_inner ? first : second));
  return first_inner ? std::pair<std::ptrdiff_t, std::ptrdiff_t>{1, inner_extent}
                     : std::pair<std::ptrdiff_t, std::ptrdiff_t>{inner_extent, 1};
}

double speed(double x) { return x / (x + kHalfSpeed); }

// Seconds of the plain-loop kernel.
double naive_seconds(const Problem& p) {
  double products = static_cast<double>(p.size[kC]);
  for (std::size_t d = 0; d < p.modes(); ++d) {
    if (p.role[d] == Role::k) products *= static_cast<double>(p.extent[d]);
  }
  return products / (kNaiveRate * static_cast<double>(p.threads)) +
         static_cast<double>(p.size[kC] * p.element_size) / kMemoryBandwidth;
}

// Seconds the plan is expected to take, or infinity when it cannot run.
double plan_seconds(const Problem& p, const Plan& plan) {
  const std::size_t m = extent_of(p, plan.gm), n = extent_of(p, plan.gn), k = extent_of(p, plan.gk);
  Geometry g;
  g.m = m;
  g.n = n;
  g.k = k;
  if (plan.permute_a) {
    std::tie(g.a_m, g.a_k) = fresh_group_strides(p, kA, plan.gm, plan.gk);
  } else {
    g.a_m = group_stride(p.stride[kA], plan.gm);
    g.a_k = group_stride(p.stride[kA], plan.gk);
  }
  if (plan.permute_b) {
    std::tie(g.b_k, g.b_n) = fresh_group_strides(p, kB, plan.gk, plan.gn);
  } else {
    g.b_k = group_stride(p.stride[kB], plan.gk);
    g.b_n = group_stride(p.stride[kB], plan.gn);
  }
  if (plan.output == Output::direct) {
    g.c_m = group_stride(p.stride[kC], plan.gm);
    g.c_n = group_stride(p.stride[kC], plan.gn);
  } else {
    std::tie(g.c_m, g.c_n) = fresh_group_strides(p, kC, plan.gm, plan.gn);
  }
  if (!blas_call(g)) return std::numeric_limits<double>::infinity();

  double loops_c = 1, loops_k = 1, tile_tasks = 1;
  for (std::size_t u = 0; u < p.modes(); ++u) {
    const int d = static_cast<int>(u);
    const auto e = static_cast<double>(p.extent[u]);
    if (p.role[u] == Role::k) {
      if (!contains(plan.gk, d)) loops_k *= e;
    } else if (!contains(plan.gm, d) && !contains(plan.gn, d)) {
      loops_c *= e;
    }
    if (contains(plan.tiles, d)) tile_tasks *= e;
  }
  const auto es = static_cast<double>(p.element_size);
  const double peak = kCorePeakDouble * 8.0 / es;
  const auto threads = static_cast<double>(p.threads);
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  const double calls = loops_c * loops_k;
  const double flops = 2.0 * dm * dn * dk * calls;
  double tasks = 0;
  if (plan.output == Output::tiled) {
    tasks = tile_tasks;
  } else {
    tasks = loops_c * std::max(1.0, std::floor(dm / kMinSlice)) * std::max(1.0, std::floor(dn / kMinSlice));
  }
  const double workers = std::min(threads, tasks);
  double seconds = flops / (workers * peak * speed(dm) * speed(dn) * speed(dk)) + calls * kCallSeconds / workers;

  const auto bytes_c = static_cast<double>(p.size[kC]) * es;
  if (plan.permute_a) seconds += 2.0 * static_cast<double>(p.size[kA]) * es / kMemoryBandwidth;
  if (plan.permute_b) seconds += 2.0 * static_cast<double>(p.size[kB]) * es / kMemoryBandwidth;
  // Accumulating GEMMs re-read and re-write c (or its tile, or buffer) once per k loop.
  if (loops_k > 1) seconds += (loops_k - 1.0) * 2.0 * bytes_c / (kCacheBandwidth * workers);
  const double read_c = p.beta_zero ? 0.0 : 1.0;
  if (plan.output == Output::buffered) {
    seconds += (2.0 + read_c) * bytes_c / kMemoryBandwidth;
  } else if (plan.output == Output::tiled) {
    // Copying a tile from cache; writes of fewer than a cache line's worth per run waste
    // the rest of the line.
    double run = 1;
    for (auto it = p.order[kC].rbegin(); it != p.order[kC].rend() && !contains(plan.tiles, *it); ++it) {
      run *= static_cast<double>(p.extent[static_cast<std::size_t>(*it)]);
    }
    const double waste = std::max(0.0, 64.0 / (run * es) - 1.0);
    seconds += 2.0 * bytes_c / (kCacheBandwidth * workers) + (waste + read_c) * bytes_c / kMemoryBandwidth;
    // Runs shorter than a page land on a different page each: a TLB miss per run.
    if (run * es < 4096.0) seconds += static_cast<double>(p.size[kC]) / run * kScatteredRunSeconds / workers;
    if (bytes_c / tile_tasks > kTileBytes) seconds += bytes_c / kMemoryBandwidth;
  }
  return seconds;
}

// Calls visit(plan) for every GEMM plan that can run (finite cost): which of a and b to
// permute, how c is written, over which tile modes, and which groups to fuse. Tiled plans
// are left out of small problems unless `all_tiles`.
template <class Visit>
void for_each_plan(const Problem& p, double flops, bool all_tiles, Visit visit) {
  const std::vector<char> all(p.modes(), 1);
  for (int permute_a = 0; permute_a < 2; ++permute_a) {
    if (permute_a && p.order[kA].size() < 2) continue;
    for (int permute_b = 0; permute_b < 2; ++permute_b) {
      if (permute_b && p.order[kB].size() < 2) continue;
      const std::vector<Group> runs_k = runs(p, Role::k, all, kA, !permute_a, kB, !permute_b);
      for (Output output : {Output::direct, Output::buffered, Output::tiled}) {
        if (output != Output::direct && p.order[kC].size() < 2) continue;
        // Tile mode sets: subsets of the outer modes of c (never its fastest).
        std::vector<std::vector<int>> tile_sets{{}};
        if (output == Output::tiled) {
          if (flops < kTiledSearchMin && !all_tiles) continue;
          tile_sets.clear();
          const std::size_t candidates = std::min(kMaxTileModes, p.order[kC].size() - 1);
          for (std::size_t bits = 1; bits < (std::size_t{1} << candidates); ++bits) {
            std::vector<int> set;
            for (std::size_t x = 0; x < candidates; ++x) {
              if (bits >> x & 1U) set.push_back(p.order[kC][x]);
            }
            tile_sets.push_back(std::move(set));
          }
        }
        for (const auto& tiles : tile_sets) {
          std::vector<char> available(p.modes(), 1);
          for (int d : tiles) available[static_cast<std::size_t>(d)] = 0;
          const bool c_fixed = output == Output::direct;
          std::vector<Group> runs_m = runs(p, Role::m, available, kA, !permute_a, kC, c_fixed);
          std::vector<Group> runs_n = runs(p, Role::n, available, kB, !permute_b, kC, c_fixed);
          runs_m.emplace_back();
          runs_n.emplace_back();
          std::vector<Group> ks = runs_k;
          ks.emplace_back();
          Plan plan;
          plan.naive = false;
          plan.permute_a = permute_a;
          plan.permute_b = permute_b;
          plan.output = output;
          plan.tiles = tiles;
          for (const Group& gm : runs_m) {
            for (const Group& gn : runs_n) {
              for (const Group& gk : ks) {
                plan.gm = gm;
                plan.gn = gn;
                plan.gk = gk;
                plan.seconds = plan_seconds(p, plan);
                if (plan.seconds < std::numeric_limits<double>::infinity()) visit(plan);
              }
            }
          }
        }
      }
    }
  }
}

Plan make_plan(const Problem& p, double flops) {
  Plan best;
  best.seconds = naive_seconds(p);
  for_each_plan(p, flops, false, [&](const Plan& plan) {
    if (plan.seconds < best.seconds) best = plan;
  });
  return best;
}

// What a plan depends on: the canonical problem.
std::vector<std::size_t> plan_key(const Problem& p) {
  std::vector<std::size_t> key{p.element_size, p.beta_zero ? 1U : 0U, p.threads, p.modes()};
  for (int op = 0; op < 3; ++op) {
    key.push_back(p.order[op].size());
    for (int d : p.order[op]) key.push_back(static_cast<std::size_t>(d));
  }
  key.insert(key.end(), p.extent.begin(), p.extent.end());
  return key;
}

// Every candidate, the plain loops last (see contract_with_plan). The last problem's list is
// kept, as a test runs each of its plans in turn.
const std::vector<Plan>& all_plans(const Problem& p, double flops) {
  thread_local std::vector<std::size_t> key;
  thread_local std::vector<Plan> plans;
  std::vector<std::size_t> wanted = plan_key(p);
  if (wanted != key || plans.empty()) {
    plans.clear();
    for_each_plan(p, flops, true, [&](const Plan& plan) { plans.push_back(plan); });
    plans.emplace_back();
    key = std::move(wanted);
  }
  return plans;
}

// Plans by problem shape, most recent last.
const Plan& cached_plan(const Problem& p, double flops) {
  thread_local std::vector<std::pair<std::vector<std::size_t>, Plan>> cache;
  std::vector<std::size_t> key = plan_key(p);
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->first == key) {
      std::rotate(it, it + 1, cache.end());
      return cache.back().second;
    }
  }
  constexpr std::size_t kCachedPlans = 64;
  if (cache.size() >= kCachedPlans) cache.erase(cache.begin());
  cache.emplace_back(std::move(key), make_plan(p, flops));
  return cache.back().second;
}

// ---------------------------------------------------------------------------------------
// Execution.

// c = alpha * sum a b + beta c with plain loops: for tiny problems, Hadamard products and
// scalars, where GEMM calls would be mostly overhead.
template <class T>
std::size_t run_naive(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  std::vector<Loop> rows, sums;
  for (int d : p.order[kC]) {
    const auto u = static_cast<std::size_t>(d);
    rows.push_back({p.extent[u], p.stride[kA][u], p.stride[kB][u], p.stride[kC][u]});
  }
  for (std::size_t u = 0; u < p.modes(); ++u) {
    if (p.role[u] == Role::k) sums.push_back({p.extent[u], p.stride[kA][u], p.stride[kB][u], 0});
  }
  Loop lane{1, 0, 0, 0};
  if (!rows.empty()) {
    lane = rows.back();
    rows.pop_back();
  }
  const std::size_t units = count(rows), terms = count(sums);
  const bool par = units > 1 && static_cast<double>(p.size[kC]) * static_cast<double>(terms) >= kParallelFlops / 4 &&
                   omp_get_max_threads() > 1 && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (par)
  for (std::size_t u = 0; u < units; ++u) {
    std::ptrdiff_t oa = 0, ob = 0, oc = 0;
    offsets(rows, u, oa, ob, oc);
    for (std::size_t x = 0; x < lane.extent; ++x) {
      const auto i = static_cast<std::ptrdiff_t>(x);
      const T* pa = a + oa + i * lane.a;
      const T* pb = b + ob + i * lane.b;
      T sum = T(0);
      for (std::size_t y = 0; y < terms; ++y) {
        std::ptrdiff_t sa = 0, sb = 0, sc = 0;
        offsets(sums, y, sa, sb, sc);
        sum += pa[sa] * pb[sb];
      }
      T& out = c[oc + i * lane.c];
      out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
    }
  }
  return 1;
}

// Element strides of `layout` in the original operand, and the layout's extents.
void layout_of(const Problem& p, int op, const std::vector<int>& layout, Extents& extents, Strides& strides) {
  extents.clear();
  strides.clear();
  for (int d : layout) {
    extents.push_back(p.extent[static_cast<std::size_t>(d)]);
    strides.push_back(p.stride[op][static_cast<std::size_t>(d)]);
  }
}

template <class T>
std::size_t run_plan(const Problem& p, const Plan& plan, T alpha, const T* a, const T* b, T beta, T* c) {
  std::size_t calls = 0;
  // Operands laid out afresh.
  std::optional<Scratch<T>> a_copy, b_copy;
  std::vector<std::ptrdiff_t> sa = p.stride[kA], sb = p.stride[kB];
  Extents extents;
  Strides from, to;
  if (plan.permute_a) {
    const auto layout = fresh_layout(p, kA, plan.gm, plan.gk, {});
    a_copy.emplace(p.size[kA]);
    sa = dense_strides(p, layout);
    layout_of(p, kA, layout, extents, from);
    to.clear();
    for (int d : layout) to.push_back(sa[static_cast<std::size_t>(d)]);
    strided_copy(a, from, a_copy->get(), to, extents, T(1), T(0));
    a = a_copy->get();
    ++calls;
  }
  if (plan.permute_b) {
    const auto layout = fresh_layout(p, kB, plan.gk, plan.gn, {});
    b_copy.emplace(p.size[kB]);
    sb = dense_strides(p, layout);
    layout_of(p, kB, layout, extents, from);
    to.clear();
    for (int d : layout) to.push_back(sb[static_cast<std::size_t>(d)]);
    strided_copy(b, from, b_copy->get(), to, extents, T(1), T(0));
    b = b_copy->get();
    ++calls;
  }
  // Where the GEMMs write: c itself, or a buffer (whole c, or one tile per task).
  std::vector<std::ptrdiff_t> sc = p.stride[kC];
  std::vector<int> c_layout;
  if (plan.output != Output::direct) {
    c_layout = fresh_layout(p, kC, plan.gm, plan.gn, plan.tiles);
    sc = dense_strides(p, c_layout);
  }
  Nest nest;
  Geometry& g = nest.gemm;
  g.m = extent_of(p, plan.gm);
  g.n = extent_of(p, plan.gn);
  g.k = extent_of(p, plan.gk);
  g.a_m = group_stride(sa, plan.gm);
  g.a_k = group_stride(sa, plan.gk);
  g.b_k = group_stride(sb, plan.gk);
  g.b_n = group_stride(sb, plan.gn);
  g.c_m = group_stride(sc, plan.gm);
  g.c_n = group_stride(sc, plan.gn);
  std::vector<Loop> tile_loops;
  for (int d : p.order[kC]) {
    const auto u = static_cast<std::size_t>(d);
    if (contains(plan.gm, d) || contains(plan.gn, d)) continue;
    if (contains(plan.tiles, d)) {
      tile_loops.push_back({p.extent[u], sa[u], sb[u], p.stride[kC][u]});
    } else {
      nest.outer.push_back({p.extent[u], sa[u], sb[u], sc[u]});
    }
  }
  for (int d : p.order[kA]) {
    const auto u = static_cast<std::size_t>(d);
    if (p.role[u] == Role::k && !contains(plan.gk, d)) nest.inner.push_back({p.extent[u], sa[u], sb[u], 0});
  }

  if (plan.output == Output::direct) {
    return calls + run_nest(nest, alpha, a, b, beta, c, true);
  }
  // The scatter of the buffer (or of one tile) into c.
  extents.clear();
  from.clear();
  to.clear();
  for (int d : c_layout) {
    extents.push_back(p.extent[static_cast<std::size_t>(d)]);
    from.push_back(sc[static_cast<std::size_t>(d)]);
    to.push_back(p.stride[kC][static_cast<std::size_t>(d)]);
  }
  std::size_t tile_size = 1;
  for (std::size_t e : extents) tile_size *= e;
  if (plan.output == Output::buffered) {
    Scratch<T> buffer(tile_size);
    calls += run_nest(nest, alpha, a, b, T(0), buffer.get(), true);
    strided_copy(buffer.get(), from, c, to, extents, T(1), beta);
    return calls + 1;
  }
  const std::size_t tasks = count(tile_loops);
  const auto threads = static_cast<std::size_t>(omp_in_parallel() ? 1 : omp_get_max_threads());
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                       static_cast<double>(count(nest.outer) * count(nest.inner) * tasks);
  const bool par = threads > 1 && tasks > 1 && flops >= kParallelFlops;
  Scratch<T> buffers(tile_size * (par ? threads : 1));
  std::optional<SingleThreadedBlas> single;
  if (par) single.emplace();
  std::size_t nest_calls = 0;
  // An exception must not leave a parallel region: the first is kept and rethrown after it.
  std::exception_ptr error;
#pragma omp parallel if (par)
  {
    T* buffer = buffers.get() + tile_size * static_cast<std::size_t>(omp_get_thread_num());
#pragma omp for schedule(dynamic)
    for (std::size_t t = 0; t < tasks; ++t) {
      try {
        std::ptrdiff_t oa = 0, ob = 0, oc = 0;
        offsets(tile_loops, t, oa, ob, oc);
        const std::size_t n = run_nest(nest, alpha, a + oa, b + ob, T(0), buffer, false);
        strided_copy(buffer, from, c + oc, to, extents, T(1), beta, false);
        if (t == 0) nest_calls = n;
      } catch (...) {
#pragma omp critical(tenex_contract_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  return calls + tasks * (nest_calls + 1);
}

// ---------------------------------------------------------------------------------------
// Validation, and the canonical problem.

bool has_mode(const Modes& modes, int id) { return std::find(modes.begin(), modes.end(), id) != modes.end(); }

// The unique modes of an operand that the other operand or c holds, in order.
Modes kept_modes(const Modes& modes, const Modes& other, const Modes& c_modes) {
  Modes kept;
  for (int id : modes) {
    if (!has_mode(kept, id) && (has_mode(other, id) || has_mode(c_modes, id))) kept.push_back(id);
  }
  return kept;
}

// What contract() knows before it touches data.
struct Prepared {
  Modes keep_a, keep_b;         // the operands' modes once summed-out modes and diagonals are gone
  Extents a_extents, b_extents;  // their extents
  std::size_t c_size = 1;
  bool empty_sum = false;  // a mode c lacks has extent 0
  Problem problem;
  double flops = 0;  // 2 * products summed
};

Prepared prepare(std::size_t element_size, bool beta_zero, const Extents& a_extents, const Modes& a_modes,
                 const Extents& b_extents, const Modes& b_modes, const Modes& c_modes) {
  if (a_extents.size() != a_modes.size() || b_extents.size() != b_modes.size()) {
    throw std::invalid_argument("contract: an operand's modes and extents differ in number (a: " +
                                std::to_string(a_modes.size()) + " modes, " + std::to_string(a_extents.size()) +
                                " extents; b: " + std::to_string(b_modes.size()) + " modes, " +
                                std::to_string(b_extents.size()) + " extents)");
  }
  Modes ids;
  Extents id_extents;
  auto add = [&](int id, std::size_t extent) {
    auto it = std::find(ids.begin(), ids.end(), id);
    if (it == ids.end()) {
      ids.push_back(id);
      id_extents.push_back(extent);
    } else if (id_extents[static_cast<std::size_t>(it - ids.begin())] != extent) {
      throw std::invalid_argument("contract: mode " + std::to_string(id) + " has extents " +
                                  std::to_string(id_extents[static_cast<std::size_t>(it - ids.begin())]) + " and " +
                                  std::to_string(extent));
    }
  };
  auto extent_of_id = [&](int id) { return id_extents[static_cast<std::size_t>(std::find(ids.begin(), ids.end(), id) - ids.begin())]; };
  for (std::size_t x = 0; x < a_modes.size(); ++x) add(a_modes[x], a_extents[x]);
  for (std::size_t x = 0; x < b_modes.size(); ++x) add(b_modes[x], b_extents[x]);
  Prepared r;
  Extents c_extents;
  for (int id : c_modes) {
    if (!has_mode(ids, id)) throw std::invalid_argument("contract: mode " + std::to_string(id) + " of c is in neither a nor b");
    if (std::count(c_modes.begin(), c_modes.end(), id) != 1) {
      throw std::invalid_argument("contract: mode " + std::to_string(id) + " repeats in c");
    }
    c_extents.push_back(extent_of_id(id));
    r.c_size *= c_extents.back();
  }
  // With c non-empty, a zero extent is on a mode c lacks: every sum is empty.
  r.empty_sum = std::find(id_extents.begin(), id_extents.end(), 0) != id_extents.end();
  r.keep_a = kept_modes(a_modes, b_modes, c_modes);
  r.keep_b = kept_modes(b_modes, a_modes, c_modes);
  for (int id : r.keep_a) r.a_extents.push_back(extent_of_id(id));
  for (int id : r.keep_b) r.b_extents.push_back(extent_of_id(id));

  Problem& p = r.problem;
  p.element_size = element_size;
  p.beta_zero = beta_zero;
  p.threads = static_cast<std::size_t>(omp_get_max_threads());
  Modes distinct;
  const std::array<const Modes*, 3> modes{&r.keep_a, &r.keep_b, &c_modes};
  const std::array<const Extents*, 3> extents{&r.a_extents, &r.b_extents, &c_extents};
  for (int op = 0; op < 3; ++op) {
    for (std::size_t x = 0; x < modes[op]->size(); ++x) {
      const int id = (*modes[op])[x];
      if ((*extents[op])[x] > 1 && !has_mode(distinct, id)) {
        distinct.push_back(id);
        p.extent.push_back((*extents[op])[x]);
      }
    }
  }
  for (int op = 0; op < 3; ++op) {
    p.stride[op].assign(distinct.size(), 0);
    std::ptrdiff_t s = 1;
    for (std::size_t x = modes[op]->size(); x-- > 0;) {
      const std::size_t e = (*extents[op])[x];
      auto it = std::find(distinct.begin(), distinct.end(), (*modes[op])[x]);
      if (it != distinct.end()) p.stride[op][static_cast<std::size_t>(it - distinct.begin())] = s;
      s *= static_cast<std::ptrdiff_t>(e);
      p.size[op] *= e;
    }
    for (int id : *modes[op]) {
      auto it = std::find(distinct.begin(), distinct.end(), id);
      if (it != distinct.end()) p.order[op].push_back(static_cast<int>(it - distinct.begin()));
    }
  }
  double products = static_cast<double>(r.c_size);
  for (std::size_t d = 0; d < distinct.size(); ++d) {
    const auto u = static_cast<int>(d);
    const bool in_a = p.has(kA, u), in_b = p.has(kB, u), in_c = p.has(kC, u);
    p.role.push_back(in_a && in_b ? (in_c ? Role::batch : Role::k) : (in_a ? Role::m : Role::n));
    if (!in_c) products *= static_cast<double>(p.extent[d]);
  }
  r.flops = 2.0 * products;
  return r;
}

template <class T>
void scale_c(T beta, T* c, std::size_t n, KernelCount& count) {
  if (beta == T(0)) {
#pragma omp parallel for schedule(static) if (n >= (std::size_t{1} << 15) && !omp_in_parallel())
    for (std::size_t x = 0; x < n; ++x) c[x] = T(0);
    count.calls += 1;
  } else if (beta != T(1)) {
    const KernelCount scaled = scale(beta, c, c, n);
    count.flops += scaled.flops;
    count.calls += scaled.calls;
  }
}

// contract(), running `forced` (an index into all_plans) when given, else the cheapest plan.
template <class T>
KernelCount run_contract(std::optional<std::size_t> forced, T alpha, const T* a, const Extents& a_extents,
                         const Modes& a_modes, const T* b, const Extents& b_extents, const Modes& b_modes, T beta, T* c,
                         const Modes& c_modes) {
  const Prepared prepared =
      prepare(sizeof(T), beta == T(0), a_extents, a_modes, b_extents, b_modes, c_modes);
  KernelCount counted;
  if (prepared.c_size == 0) return counted;
  if (prepared.empty_sum || alpha == T(0)) {
    scale_c(beta, c, prepared.c_size, counted);
    return counted;
  }
  // Sum out the modes only one operand holds, and take diagonals.
  std::optional<Scratch<T>> a_reduced, b_reduced;
  auto presum = [&](const T* in, const Extents& in_extents, const Modes& in_modes, const Modes& keep,
                    const Extents& keep_extents, std::optional<Scratch<T>>& out) -> const T* {
    std::size_t n = 1;
    for (std::size_t e : keep_extents) n *= e;
    out.emplace(n);
    const KernelCount k = reduce(in, in_extents, in_modes, out->get(), keep, T(1));
    counted.flops += k.flops;
    counted.calls += k.calls;
    return out->get();
  };
  if (prepared.keep_a != a_modes) a = presum(a, a_extents, a_modes, prepared.keep_a, prepared.a_extents, a_reduced);
  if (prepared.keep_b != b_modes) b = presum(b, b_extents, b_modes, prepared.keep_b, prepared.b_extents, b_reduced);

  const Problem& p = prepared.problem;
  counted.flops += prepared.flops;
  Plan chosen;
  if (forced) {
    const std::vector<Plan>& plans = all_plans(p, prepared.flops);
    if (*forced >= plans.size()) {
      throw std::invalid_argument("contract_with_plan: plan " + std::to_string(*forced) + " of " +
                                  std::to_string(plans.size()));
    }
    chosen = plans[*forced];
  } else {
    chosen = cached_plan(p, prepared.flops);
  }
  counted.calls += chosen.naive ? run_naive(p, alpha, a, b, beta, c) : run_plan(p, chosen, alpha, a, b, beta, c);
  return counted;
}

}  // namespace

template <class T>
KernelCount contract(T alpha, const T* a, const Extents& a_extents, const Modes& a_modes, const T* b,
                     const Extents& b_extents, const Modes& b_modes, T beta, T* c, const Modes& c_modes) {
  return run_contract<T>(std::nullopt, alpha, a, a_extents, a_modes, b, b_extents, b_modes, beta, c, c_modes);
}

template <class T>
std::size_t contract_plan_count(const Extents& a_extents, const Modes& a_modes, const Extents& b_extents,
                                const Modes& b_modes, const Modes& c_modes, bool beta_zero) {
  const Prepared prepared = prepare(sizeof(T), beta_zero, a_extents, a_modes, b_extents, b_modes, c_modes);
  return all_plans(prepared.problem, prepared.flops).size();
}

template <class T>
KernelCount contract_with_plan(std::size_t plan, T alpha, const T* a, const Extents& a_extents, const Modes& a_modes,
                               const T* b, const Extents& b_extents, const Modes& b_modes, T beta, T* c,
                               const Modes& c_modes) {
  return run_contract<T>(plan, alpha, a, a_extents, a_modes, b, b_extents, b_modes, beta, c, c_modes);
}

#define TENEX_INSTANTIATE_CONTRACT(T)                                                                               \
  template KernelCount contract<T>(T, const T*, const Extents&, const Modes&, const T*, const Extents&, const Modes&, \
                                   T, T*, const Modes&);                                                            \
  template std::size_t contract_plan_count<T>(const Extents&, const Modes&, const Extents&, const Modes&,            \
                                              const Modes&, bool);                                                  \
  template KernelCount contract_with_plan<T>(std::size_t, T, const T*, const Extents&, const Modes&, const T*,      \
                                             const Extents&, const Modes&, T, T*, const Modes&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_CONTRACT)
#undef TENEX_INSTANTIATE_CONTRACT

}  // namespace tenex::detail::cpu
