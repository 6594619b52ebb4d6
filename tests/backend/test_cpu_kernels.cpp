// CPU kernels (backend/cpu/kernels.hpp) against naive nested loops: permutation, strided
// copy, reduction, contraction (every candidate plan, the TCCG cases at small extents,
// degenerate shapes, beta != 0, scratch from the block cache), broadcasting element-wise
// operations and scaling, the fused element-wise kernel (every function of the table, NaN,
// Inf and signed zeros, reductions). The SIMD kernels' cases run once per SIMD target.
//
// References are computed in double from the same inputs; a contraction is compared with
// a tolerance relative to the magnitude of what it sums (sum of |a||b|), so an element
// that is wrong by more than rounding fails. When beta == 0 the output starts as NaN: a
// kernel that reads it fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <tenex/backend/backend.hpp>

#include "machine_profiles.hpp"
#include "support/environment_scope.hpp"
#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/contraction_problem.hpp"
#include "tenex/backend/cpu/gather_kernel.hpp"
#include "tenex/backend/cpu/gemm_call.hpp"
#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/narrow_kernel.hpp"
#include "tenex/backend/cpu/plan_execution.hpp"
#include "tenex/backend/cpu/plan_search.hpp"
#include "tenex/backend/cpu/simd.hpp"
#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/graph/functions.hpp"
#include "tenex/scalar.hpp"

#if TENEX_OPENMP
#include <omp.h>
#endif

namespace cpu = tenex::detail::cpu;

namespace {

/// The cost model ranks plans for the threads a call may use (omp_get_max_threads()); a case
/// that states the model's ranking for two threads holds them for its duration, so the suite
/// gives the same answer under OMP_NUM_THREADS=1. Without OpenMP the kernels run one thread
/// and `held` is false: such a case checks only what holds for any thread count.
struct TwoThreads {
#if TENEX_OPENMP
  int before = omp_get_max_threads();
  bool held = true;
  TwoThreads() { omp_set_num_threads(2); }
  ~TwoThreads() { omp_set_num_threads(before); }
#else
  bool held = false;
#endif
};

// Runs `check` once per SIMD target this CPU has (simd.hpp: AVX-512, AVX2, SSE4 and the
// scalar emulation on an AVX-512 machine), the kernels capped to it, so that every target's
// kernels are tested wherever the CPU runs them; then back to the default target.
struct SimdTargetScope {
  explicit SimdTargetScope(const std::string& name) { cpu::set_simd_target_for_test(name); }
  ~SimdTargetScope() { cpu::set_simd_target_for_test(""); }
  SimdTargetScope(const SimdTargetScope&) = delete;
  SimdTargetScope& operator=(const SimdTargetScope&) = delete;
};

template <class F>
void for_each_simd_target(F check) {
  for (const std::string& target : cpu::simd_targets_available()) {
    const SimdTargetScope scope(target);
    INFO("SIMD target ", target);
    CHECK(std::string(cpu::simd_target_name()) == target);
    check();
  }
}

#define TENEX_TEST_TUPLE_OF(T) \
  , std::tuple<T> {}
using Scalars = decltype(std::tuple_cat(std::tuple<> {} TENEX_FOR_EACH_REAL_SCALAR(TENEX_TEST_TUPLE_OF)));
using ComplexScalars = decltype(std::tuple_cat(std::tuple<> {} TENEX_FOR_EACH_COMPLEX_SCALAR(TENEX_TEST_TUPLE_OF)));
#undef TENEX_TEST_TUPLE_OF

using cpu::Extents;
using cpu::Modes;

template <class T>
double eps() {
  return static_cast<double>(std::numeric_limits<T>::epsilon());
}

std::size_t volume(const Extents& e) {
  std::size_t n = 1;
  for (std::size_t x : e) n *= x;
  return n;
}

template <class T>
std::vector<T> random_values(std::size_t n, std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) {
    if constexpr (tenex::is_complex_v<T>) {
      const double re = u(rng);
      x = T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(u(rng)));
    } else {
      x = static_cast<T>(u(rng));
    }
  }
  return v;
}

std::string describe(const Modes& modes, const Extents& extents) {
  std::string s = "(";
  for (std::size_t x = 0; x < modes.size(); ++x) {
    if (x) s += ",";
    s += std::to_string(modes[x]) + ":" + std::to_string(extents[x]);
  }
  return s + ")";
}

// Every distinct id of the operands with its extent, and a walk over all their values.
struct IndexSpace {
  Modes ids;
  Extents extents;

  void add(const Modes& modes, const Extents& ext) {
    for (std::size_t x = 0; x < modes.size(); ++x) {
      if (std::find(ids.begin(), ids.end(), modes[x]) == ids.end()) {
        ids.push_back(modes[x]);
        extents.push_back(ext[x]);
      }
    }
  }
  std::size_t extent(int id) const {
    return extents[static_cast<std::size_t>(std::find(ids.begin(), ids.end(), id) - ids.begin())];
  }
  // Row-major offset into an array with `modes` at the index values `value` (per id).
  std::size_t offset(const Modes& modes, const std::vector<std::size_t>& value) const {
    std::size_t off = 0;
    for (int id : modes) {
      const auto d = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), id) - ids.begin());
      off = off * extents[d] + value[d];
    }
    return off;
  }
  // Calls f(value) for every combination of index values.
  template <class F>
  void for_each(F f) const {
    if (volume(extents) == 0) return;
    std::vector<std::size_t> value(ids.size(), 0);
    while (true) {
      f(value);
      std::size_t d = ids.size();
      while (d > 0) {
        --d;
        if (++value[d] < extents[d]) break;
        value[d] = 0;
        if (d == 0) return;
      }
      if (ids.empty()) return;
    }
  }
};

// c = alpha * sum a b + beta * c0 in double, and the magnitude |alpha| sum |a||b| + |beta c0|.
struct Expected {
  std::vector<double> values, magnitude;
  double terms = 1;  // products summed into each element
};

template <class T>
Expected reference_contract(double alpha, const std::vector<T>& a, const Extents& a_ext, const Modes& a_modes,
                            const std::vector<T>& b, const Extents& b_ext, const Modes& b_modes, double beta,
                            const std::vector<T>& c0, const Modes& c_modes) {
  IndexSpace space;
  space.add(a_modes, a_ext);
  space.add(b_modes, b_ext);
  Extents c_ext;
  for (int id : c_modes) c_ext.push_back(space.extent(id));
  const std::size_t n = volume(c_ext);
  Expected e;
  e.values.assign(n, 0.0);
  e.magnitude.assign(n, 0.0);
  space.for_each([&](const std::vector<std::size_t>& v) {
    const double x = static_cast<double>(a[space.offset(a_modes, v)]);
    const double y = static_cast<double>(b[space.offset(b_modes, v)]);
    const std::size_t o = space.offset(c_modes, v);
    e.values[o] += x * y;
    e.magnitude[o] += std::abs(x * y);
  });
  e.terms = n == 0 ? 1.0 : static_cast<double>(volume(space.extents)) / static_cast<double>(n);
  for (std::size_t x = 0; x < n; ++x) {
    e.values[x] *= alpha;
    e.magnitude[x] *= std::abs(alpha);
    if (beta != 0.0) {
      e.values[x] += beta * static_cast<double>(c0[x]);
      e.magnitude[x] += std::abs(beta * static_cast<double>(c0[x]));
    }
  }
  return e;
}

// Elements of `got` off the expected values by more than rounding of a sum of e.terms
// products can explain (a worst-case bound: terms * eps relative to the magnitude).
template <class T>
std::size_t mismatches(const std::vector<T>& got, const Expected& e) {
  if (got.size() != e.values.size()) return got.size() + e.values.size() + 1;
  const double rtol = 4.0 * eps<T>() * (e.terms + 4.0);
  std::size_t bad = 0;
  for (std::size_t x = 0; x < got.size(); ++x) {
    const double g = static_cast<double>(got[x]);
    if (!(std::abs(g - e.values[x]) <= rtol * e.magnitude[x] + 1e-300)) ++bad;
  }
  return bad;
}

struct Problem {
  Extents a_ext, b_ext;
  Modes a_modes, b_modes, c_modes;
};

Extents extents_for(const Modes& modes, const std::vector<std::size_t>& extent_of_id) {
  Extents e;
  for (int id : modes) e.push_back(extent_of_id[static_cast<std::size_t>(id)]);
  return e;
}

// An einsum such as "bda,dc->abc" with the extent of each letter.
Problem parse(const std::string& einsum, const std::vector<std::size_t>& extent_of_letter) {
  Problem p;
  Modes* target = &p.a_modes;
  for (std::size_t x = 0; x < einsum.size(); ++x) {
    const char ch = einsum[x];
    if (ch == ',') {
      target = &p.b_modes;
    } else if (ch == '-') {
      target = &p.c_modes;
      ++x;
    } else {
      target->push_back(ch - 'a');
    }
  }
  p.a_ext = extents_for(p.a_modes, extent_of_letter);
  p.b_ext = extents_for(p.b_modes, extent_of_letter);
  return p;
}

// The same from each label's extent (labels not given: extent 1).
Problem parse(const std::string& einsum, const std::vector<std::pair<char, std::size_t>>& extents) {
  std::vector<std::size_t> extent_of(26, 1);
  for (const auto& [label, extent] : extents) extent_of[static_cast<std::size_t>(label - 'a')] = extent;
  return parse(einsum, extent_of);
}

// A random contraction: modes of every kind (batch, free in a or b, contracted, summed in one
// operand only), shuffled orders, and now and then a repeated mode (a diagonal).
Problem random_problem(std::mt19937& rng, std::size_t max_modes, std::size_t max_extent) {
  std::uniform_int_distribution<std::size_t> count(0, max_modes), extent(1, max_extent);
  std::uniform_int_distribution<int> kind(0, 9);
  const std::size_t n = count(rng);
  std::vector<std::size_t> extent_of(n);
  Problem p;
  for (std::size_t d = 0; d < n; ++d) {
    extent_of[d] = extent(rng);
    const int id = static_cast<int>(d);
    switch (kind(rng)) {
      case 0:
      case 1:  // batch
        p.a_modes.push_back(id);
        p.b_modes.push_back(id);
        p.c_modes.push_back(id);
        break;
      case 2:
      case 3:  // free in a
        p.a_modes.push_back(id);
        p.c_modes.push_back(id);
        break;
      case 4:
      case 5:  // free in b
        p.b_modes.push_back(id);
        p.c_modes.push_back(id);
        break;
      case 6:
      case 7:
      case 8:  // contracted
        p.a_modes.push_back(id);
        p.b_modes.push_back(id);
        break;
      default:  // summed in one operand only
        (d % 2 ? p.a_modes : p.b_modes).push_back(id);
        break;
    }
  }
  std::shuffle(p.a_modes.begin(), p.a_modes.end(), rng);
  std::shuffle(p.b_modes.begin(), p.b_modes.end(), rng);
  std::shuffle(p.c_modes.begin(), p.c_modes.end(), rng);
  if (!p.a_modes.empty() && kind(rng) == 0) {
    std::uniform_int_distribution<std::size_t> at(0, p.a_modes.size());
    const int id = p.a_modes[at(rng) % p.a_modes.size()];
    p.a_modes.insert(p.a_modes.begin() + static_cast<std::ptrdiff_t>(at(rng)), id);
  }
  p.a_ext = extents_for(p.a_modes, extent_of);
  p.b_ext = extents_for(p.b_modes, extent_of);
  return p;
}

Extents c_extents(const Problem& p) {
  IndexSpace s;
  s.add(p.a_modes, p.a_ext);
  s.add(p.b_modes, p.b_ext);
  Extents e;
  for (int id : p.c_modes) e.push_back(s.extent(id));
  return e;
}

std::string describe(const Problem& p) {
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on the chain of +.
  std::string text = "a";
  text += describe(p.a_modes, p.a_ext);
  text += " b";
  text += describe(p.b_modes, p.b_ext);
  text += " -> c";
  text += describe(p.c_modes, c_extents(p));
  return text;
}

// Runs contract (the cheapest plan) and, with `every_plan`, each candidate plan (or every
// `step`-th), on random data; checks each result against the reference. Returns the number
// of runs checked.
template <class T>
std::size_t check_contract(const Problem& p, std::mt19937& rng, T alpha, T beta, bool every_plan,
                           std::size_t step = 1) {
  const auto a = random_values<T>(volume(p.a_ext), rng);
  const auto b = random_values<T>(volume(p.b_ext), rng);
  const std::size_t n = volume(c_extents(p));
  const auto c0 = beta == T(0) ? std::vector<T>(n, std::numeric_limits<T>::quiet_NaN()) : random_values<T>(n, rng);
  const Expected expected = reference_contract(static_cast<double>(alpha), a, p.a_ext, p.a_modes, b, p.b_ext, p.b_modes,
                                               static_cast<double>(beta), c0, p.c_modes);
  const std::size_t plans =
      every_plan ? cpu::contract_plan_count<T>(p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, beta == T(0)) : 0;
  std::size_t runs = 0;
  for (std::size_t plan = 0; plan <= plans; plan = plan + step > plans && plan < plans ? plans : plan + step) {
    std::vector<T> c = c0;
    cpu::KernelCount counted;
    if (plan == plans) {
      counted =
          cpu::contract(alpha, a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, beta, c.data(), p.c_modes);
    } else {
      counted = cpu::contract_with_plan(plan, alpha, a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, beta,
                                        c.data(), p.c_modes);
    }
    INFO(describe(p), " plan ", plan, " of ", plans, " (", plans, " = cheapest)");
    CHECK(mismatches(c, expected) == 0);
    CHECK(counted.flops >= 0.0);
    ++runs;
  }
  return runs;
}

// The public TCCG cases (shared/bench/tccg_public.tsv).
const char* const kTccg[] = {"bda,dc->abc",       "dbea,ec->abcd",     "ebad,ce->abcd",     "ecbfa,fd->abcde",
                             "ea,ebcd->abcd",     "ec,abed->abcd",     "acd,dbc->ab",       "acd,db->abc",
                             "adc,bd->abc",       "adec,ebd->abc",     "aebf,fdec->abcd",   "aecf,fbed->abcd",
                             "aedf,fbec->abcd",   "aefc,fbed->abcd",   "eafc,bfde->abcd",   "dega,gfbc->abcdef",
                             "degc,gfab->abcdef", "dfgb,geac->abcdef", "efga,gdbc->abcdef", "efgc,gdab->abcdef",
                             "gdac,efgb->abcdef", "geab,dfgc->abcdef", "gebc,dfga->abcdef", "gfac,degb->abcdef"};

}  // namespace

// ----------------------------------------------------------------------------------------
// permute, strided_copy

Modes identity_modes(std::size_t rank) {
  Modes modes(rank);
  std::iota(modes.begin(), modes.end(), 0);
  return modes;
}

// Elements of `out`, `in` permuted by `perm`, that `agree(out's element, in's)` rejects: walks
// the input and looks where the permutation sends each element.
template <class T, class Agree>
std::size_t permute_mismatches(const std::vector<T>& in, const Extents& in_ext, const std::vector<std::size_t>& perm,
                               const std::vector<T>& out, Agree agree) {
  IndexSpace space;
  const Modes in_modes = identity_modes(in_ext.size());
  Modes out_modes;
  for (std::size_t p : perm) out_modes.push_back(static_cast<int>(p));
  space.add(in_modes, in_ext);
  std::size_t bad = 0;
  space.for_each([&](const std::vector<std::size_t>& v) {
    if (!agree(out[space.offset(out_modes, v)], in[space.offset(in_modes, v)])) ++bad;
  });
  return bad;
}

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: permute matches index arithmetic", T, cpu_kernels_permute) {
  for_each_simd_target([&] {
    std::mt19937 rng(11);
    std::vector<Extents> shapes{{},
                                {1},
                                {7},
                                {3, 4},
                                {37, 45},
                                {64, 3, 33},
                                {2, 1, 3, 1, 2},
                                {5, 6, 7, 4},
                                {3, 4, 2, 5, 3},
                                {40, 1, 70},
                                {130, 257},
                                {9, 2, 65, 2}};
    std::uniform_int_distribution<std::size_t> rank(0, 5), extent(1, 6);
    for (int x = 0; x < 40; ++x) {
      Extents e(rank(rng));
      for (auto& v : e) v = extent(rng);
      shapes.push_back(e);
    }
    for (const Extents& in_ext : shapes) {
      std::vector<std::size_t> perm(in_ext.size());
      std::iota(perm.begin(), perm.end(), 0);
      for (int trial = 0; trial < 3; ++trial) {
        if (trial > 0) std::shuffle(perm.begin(), perm.end(), rng);
        const auto in = random_values<T>(volume(in_ext), rng);
        std::vector<T> out(in.size(), std::numeric_limits<T>::quiet_NaN());
        const T alpha = trial == 1 ? T(1) : T(-1.5);
        cpu::permute(in.data(), in_ext, perm, out.data(), alpha);
        INFO("extents ", describe(identity_modes(in_ext.size()), in_ext), " trial ", trial);
        CHECK(permute_mismatches(in, in_ext, perm, out, [&](T got, T x) { return got == alpha * x; }) == 0);
      }
    }
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_permute, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: permute rejects a bad permutation", T, cpu_kernels_permute_errors) {
  std::vector<T> in(6), out(6);
  CHECK_THROWS_AS(cpu::permute(in.data(), Extents{2, 3}, {0, 0}, out.data()), std::invalid_argument);
  CHECK_THROWS_AS(cpu::permute(in.data(), Extents{2, 3}, {1}, out.data()), std::invalid_argument);
  CHECK_THROWS_AS(cpu::permute(in.data(), Extents{2, 3}, {0, 2}, out.data()), std::invalid_argument);
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_permute_errors, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: strided_copy scatters with beta", T, cpu_kernels_strided_copy) {
  for_each_simd_target([&] {
    std::mt19937 rng(12);
    // A 3-d block written into the middle of a bigger array, transposed, with beta != 0 and 0.
    const Extents ext{5, 40, 33};
    const cpu::Strides in_strides{40 * 33, 33, 1};
    const cpu::Strides out_strides{1, 7 * 50, 7};  // out[x][y][z] at x + 350 y + 7 z: disjoint
    const auto in = random_values<T>(volume(ext), rng);
    for (T beta : {T(0), T(0.5)}) {
      const std::size_t out_size = 350 * 40 + 7 * 33 + 5;
      auto out0 = random_values<T>(out_size, rng);
      std::vector<T> out = out0;
      cpu::strided_copy(in.data(), in_strides, out.data(), out_strides, ext, T(2), beta);
      std::vector<bool> touched(out_size, false);
      std::size_t bad = 0;
      for (std::size_t x = 0; x < 5; ++x) {
        for (std::size_t y = 0; y < 40; ++y) {
          for (std::size_t z = 0; z < 33; ++z) {
            const std::size_t o = x + 350 * y + 7 * z;
            touched[o] = true;
            const double want = 2.0 * static_cast<double>(in[x * 40 * 33 + y * 33 + z]) +
                                static_cast<double>(beta) * static_cast<double>(out0[o]);
            if (std::abs(static_cast<double>(out[o]) - want) > 4 * eps<T>() * (std::abs(want) + 2)) ++bad;
          }
        }
      }
      for (std::size_t o = 0; o < out_size; ++o) {
        if (!touched[o] && !(out[o] == out0[o])) ++bad;
      }
      CHECK(bad == 0);
    }
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_strided_copy, Scalars);

// A random reduction: `least` to 4 modes of extent 1 to `most_extent` (the first `first_extent`
// where that is not 0), some read twice (a diagonal), about three in four kept, in shuffled
// orders.
struct Reduction {
  Modes in_modes, out_modes;
  Extents in_ext, out_ext;
};
Reduction random_reduction(std::mt19937& rng, std::size_t least, std::size_t most_extent, std::size_t first_extent) {
  std::uniform_int_distribution<std::size_t> count(least, 4), extent(1, most_extent), repeat(0, 3);
  const std::size_t n = count(rng);
  std::vector<std::size_t> extent_of(n);
  Reduction r;
  for (std::size_t d = 0; d < n; ++d) {
    extent_of[d] = first_extent != 0 && d == 0 ? first_extent : extent(rng);
    r.in_modes.push_back(static_cast<int>(d));
    if (repeat(rng) == 0) r.in_modes.push_back(static_cast<int>(d));  // a diagonal
  }
  std::shuffle(r.in_modes.begin(), r.in_modes.end(), rng);
  for (std::size_t d = 0; d < n; ++d) {
    if (repeat(rng) != 0) r.out_modes.push_back(static_cast<int>(d));
  }
  std::shuffle(r.out_modes.begin(), r.out_modes.end(), rng);
  r.in_ext = extents_for(r.in_modes, extent_of);
  r.out_ext = extents_for(r.out_modes, extent_of);
  return r;
}

// Complex numbers move as pairs of their parts: a permutation whose output's fastest mode is not
// the input's tiles the pairs (permute.cpp, copy_pairs), contiguous or strided on either side,
// with real and non-real factors and beta.
TEST_CASE_TEMPLATE_DEFINE("cpu kernels: complex permutations and strided copies move whole numbers", T,
                          cpu_kernels_complex_copy) {
  using R = typename T::value_type;
  const double tol = 8 * static_cast<double>(std::numeric_limits<R>::epsilon());
  std::mt19937 rng(13);
  auto near = [&](T got, std::complex<double> want) {
    return std::abs(std::complex<double>(got.real(), got.imag()) - want) <= tol * (std::abs(want) + 2);
  };
  for_each_simd_target([&] {
    for (const Extents& in_ext :
         std::vector<Extents>{{37, 45}, {130, 257}, {9, 2, 65, 2}, {5, 33, 3, 40}, {3, 1, 70}}) {
      std::vector<std::size_t> perm(in_ext.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::reverse(perm.begin(), perm.end());
      for (const T alpha : {T(1), T(-1.5), T(0.5, 2)}) {
        const auto in = random_values<T>(volume(in_ext), rng);
        std::vector<T> out(in.size(), T(std::numeric_limits<R>::quiet_NaN()));
        cpu::permute(in.data(), in_ext, perm, out.data(), alpha);
        INFO("extents ", describe(identity_modes(in_ext.size()), in_ext), " alpha ", alpha.real(), "+", alpha.imag(),
             "i");
        CHECK(permute_mismatches(in, in_ext, perm, out, [&](T got, T x) {
                return near(got, std::complex<double>(alpha) * std::complex<double>(x));
              }) == 0);
      }
    }
    // Strided on both sides: the input's rows padded (33 of 40), the output's numbers two apart.
    const Extents ext{6, 50, 33};
    const cpu::Strides in_strides{50 * 40, 40, 1};
    const cpu::Strides out_strides{2 * 50 * 33 + 3, 2, 2 * 50};  // out[x][z][y], y the fastest
    const std::size_t in_size = 6 * 50 * 40, out_size = 6 * (2 * 50 * 33 + 3);
    const auto in = random_values<T>(in_size, rng);
    for (const T beta : {T(0), T(0.5), T(0, -1)}) {
      const auto out0 = random_values<T>(out_size, rng);
      std::vector<T> out = out0;
      const T alpha(2, beta.imag());
      cpu::strided_copy(in.data(), in_strides, out.data(), out_strides, ext, alpha, beta);
      std::vector<bool> touched(out_size, false);
      std::size_t bad = 0;
      for (std::size_t x = 0; x < 6; ++x) {
        for (std::size_t y = 0; y < 50; ++y) {
          for (std::size_t z = 0; z < 33; ++z) {
            const std::size_t o = x * (2 * 50 * 33 + 3) + 2 * y + 2 * 50 * z;
            touched[o] = true;
            const std::complex<double> a(alpha), b(beta), i(in[x * 50 * 40 + y * 40 + z]), was(out0[o]);
            if (!near(out[o], a * i + b * was)) ++bad;
          }
        }
      }
      for (std::size_t o = 0; o < out_size; ++o) {
        if (!touched[o] && !(out[o] == out0[o])) ++bad;
      }
      INFO("beta ", beta.real(), "+", beta.imag(), "i");
      CHECK(bad == 0);
    }
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_complex_copy, ComplexScalars);

// Complex sums as pairs of parts too (permute.cpp, reduce_dims): the pair merged into a kept mode
// contiguous in both arrays, or summed as whole numbers; diagonals, every mode kept or summed, a
// real and a non-real factor; against sums in complex<double>.
TEST_CASE_TEMPLATE_DEFINE("cpu kernels: complex reduce takes diagonals, sums and permutes", T,
                          cpu_kernels_complex_reduce) {
  using R = typename T::value_type;
  const double tol = 64 * static_cast<double>(std::numeric_limits<R>::epsilon());
  for_each_simd_target([&] {
    std::mt19937 rng(14);
    std::size_t bad = 0;
    for (int trial = 0; trial < 200; ++trial) {
      const Reduction r = random_reduction(rng, 1, 6, trial % 20 == 0 ? 300 : 0);
      const Modes &in_modes = r.in_modes, &out_modes = r.out_modes;
      const Extents &in_ext = r.in_ext, &out_ext = r.out_ext;
      const auto in = random_values<T>(volume(in_ext), rng);
      const T alpha = trial % 2 == 0 ? T(0.75) : T(0.5, -1.25);
      std::vector<T> out(volume(out_ext), T(std::numeric_limits<R>::quiet_NaN()));
      cpu::reduce(in.data(), in_ext, in_modes, out.data(), out_modes, alpha);
      IndexSpace space;
      space.add(in_modes, in_ext);
      std::vector<std::complex<double>> want(out.size());
      space.for_each([&](const std::vector<std::size_t>& v) {
        const T x = in[space.offset(in_modes, v)];
        want[space.offset(out_modes, v)] += std::complex<double>(x.real(), x.imag());
      });
      for (std::size_t o = 0; o < out.size(); ++o) {
        const std::complex<double> w = std::complex<double>(alpha.real(), alpha.imag()) * want[o];
        const std::complex<double> got(out[o].real(), out[o].imag());
        if (!(std::abs(got - w) <= tol * (std::abs(w) + 300))) {
          INFO("in ", describe(in_modes, in_ext), " out ", describe(out_modes, out_ext));
          CHECK(std::abs(got - w) <= tol * (std::abs(w) + 300));
          ++bad;
          break;
        }
      }
    }
    CHECK(bad == 0);
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_complex_reduce, ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: strided_gather packs a strided part densely", T, cpu_kernels_strided_gather) {
  for_each_simd_target([&] {
    std::mt19937 rng(13);
    // The part [e][f][a] of a 5-d array [e][c][b][f][a] at fixed c, b, packed as [f][e][a]
    // (the per-tile pack of a contraction), and a full transpose.
    const std::size_t ne = 7, nc = 3, nb = 4, nf = 9, na = 37;
    const auto in = random_values<T>(ne * nc * nb * nf * na, rng);
    const auto sa = static_cast<std::ptrdiff_t>(1), sf = static_cast<std::ptrdiff_t>(na),
               sb = static_cast<std::ptrdiff_t>(nf * na), sc = static_cast<std::ptrdiff_t>(nb * nf * na),
               se = static_cast<std::ptrdiff_t>(nc * nb * nf * na);
    const std::ptrdiff_t base = 2 * sc + 1 * sb;
    std::vector<T> out(nf * ne * na, T(-7));
    cpu::strided_gather(in.data() + base, cpu::Strides{sf, se, sa}, out.data(),
                        cpu::Strides{static_cast<std::ptrdiff_t>(ne * na), static_cast<std::ptrdiff_t>(na), 1},
                        Extents{nf, ne, na});
    std::size_t bad = 0;
    for (std::size_t f = 0; f < nf; ++f) {
      for (std::size_t e = 0; e < ne; ++e) {
        for (std::size_t a = 0; a < na; ++a) {
          const auto from = base + static_cast<std::ptrdiff_t>(f) * sf + static_cast<std::ptrdiff_t>(e) * se +
                            static_cast<std::ptrdiff_t>(a) * sa;
          if (!(out[(f * ne + e) * na + a] == in[static_cast<std::size_t>(from)])) ++bad;
        }
      }
    }
    CHECK(bad == 0);
    std::vector<T> t(nf * na, T(0));
    cpu::strided_gather(in.data(), cpu::Strides{sf, sa}, t.data(), cpu::Strides{1, static_cast<std::ptrdiff_t>(nf)},
                        Extents{nf, na});
    bad = 0;
    for (std::size_t f = 0; f < nf; ++f) {
      for (std::size_t a = 0; a < na; ++a) {
        if (!(t[a * nf + f] == in[f * na + a])) ++bad;
      }
    }
    CHECK(bad == 0);
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_strided_gather, Scalars);

// ----------------------------------------------------------------------------------------
// reduce

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: reduce takes diagonals, sums and permutes", T, cpu_kernels_reduce) {
  for_each_simd_target([&] {
    std::mt19937 rng(13);
    std::size_t checked = 0;
    for (int trial = 0; trial < 300; ++trial) {
      const Reduction r = random_reduction(rng, 0, 5, trial % 50 == 0 ? 40 : 0);
      const Modes &in_modes = r.in_modes, &out_modes = r.out_modes;
      const Extents &in_ext = r.in_ext, &out_ext = r.out_ext;
      const auto in = random_values<T>(volume(in_ext), rng);
      std::vector<T> out(volume(out_ext), std::numeric_limits<T>::quiet_NaN());
      const T alpha = T(0.75);
      cpu::reduce(in.data(), in_ext, in_modes, out.data(), out_modes, alpha);
      // Reference: a contraction of `in` with the scalar 1.
      const Expected e = reference_contract(0.75, in, in_ext, in_modes, std::vector<T>{T(1)}, Extents{}, Modes{}, 0.0,
                                            std::vector<T>(out.size()), out_modes);
      INFO("in ", describe(in_modes, in_ext), " out ", describe(out_modes, out_ext));
      CHECK(mismatches(out, e) == 0);
      ++checked;
    }
    CHECK(checked == 300);
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_reduce, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: reduce of a large matrix along each mode", T, cpu_kernels_reduce_large) {
  for_each_simd_target([&] {
    std::mt19937 rng(14);
    const Extents ext{300, 257};
    const auto in = random_values<T>(volume(ext), rng);
    for (const Modes& out_modes : {Modes{0}, Modes{1}, Modes{}, Modes{1, 0}}) {
      std::vector<T> out(volume(extents_for(out_modes, {300, 257})));
      cpu::reduce(in.data(), ext, Modes{0, 1}, out.data(), out_modes, T(1));
      const Expected e = reference_contract(1.0, in, ext, Modes{0, 1}, std::vector<T>{T(1)}, Extents{}, Modes{}, 0.0,
                                            std::vector<T>(out.size()), out_modes);
      CHECK(mismatches(out, e) == 0);
    }
    // The trace of a square matrix: a repeated mode, summed.
    const Extents square{200, 200};
    const auto s = random_values<T>(volume(square), rng);
    T trace = T(7);
    cpu::reduce(s.data(), square, Modes{4, 4}, &trace, Modes{}, T(1));
    double want = 0, magnitude = 0;
    for (std::size_t i = 0; i < 200; ++i) {
      want += static_cast<double>(s[i * 201]);
      magnitude += std::abs(static_cast<double>(s[i * 201]));
    }
    CHECK(std::abs(static_cast<double>(trace) - want) <= 4 * eps<T>() * 204 * magnitude);
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_reduce_large, Scalars);

// ----------------------------------------------------------------------------------------
// contract

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract, every plan on random problems", T, cpu_kernels_contract_random) {
  std::mt19937 rng(21);
  std::size_t runs = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const Problem p = random_problem(rng, 6, 4);
    const T beta = trial % 3 == 0 ? T(0.5) : T(0);
    runs += check_contract<T>(p, rng, T(trial % 2 ? 1.0 : -0.75), beta, true);
  }
  CHECK(runs > 120);
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_random, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract, every plan on the TCCG cases at small extents", T,
                          cpu_kernels_contract_tccg) {
  std::mt19937 rng(22);
  std::uniform_int_distribution<std::size_t> extent(2, 5);
  for (const char* einsum : kTccg) {
    std::vector<std::size_t> extent_of(26);
    for (auto& e : extent_of) e = extent(rng);
    const Problem p = parse(einsum, extent_of);
    INFO(einsum);
    check_contract<T>(p, rng, T(1), T(0), true);
    check_contract<T>(p, rng, T(-2), T(0.25), false);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_tccg, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract, every plan on a problem large enough for threads", T,
                          cpu_kernels_contract_threaded_plans) {
  std::mt19937 rng(27);
  // Above the threshold for threads (4 Mflop), with few candidate plans.
  std::vector<std::size_t> extent_of{48, 40, 36, 40};
  extent_of.resize(26, 1);
  check_contract<T>(parse("acd,dbc->ab", extent_of), rng, T(1), T(0), true, 3);
  extent_of = {60, 50, 12, 64};
  extent_of.resize(26, 1);
  check_contract<T>(parse("bda,dc->abc", extent_of), rng, T(-1), T(0.5), true, 5);
  // Skinny, with a tiled plan that packs a per tile (tccg07's shape).
  extent_of = {12, 9, 8, 7, 12, 13};
  extent_of.resize(26, 1);
  check_contract<T>(parse("ecbfa,fd->abcde", extent_of), rng, T(1), T(0), true, 7);
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_threaded_plans, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the narrow kernel, K in blocks", T, cpu_kernels_narrow) {
  // One operand with few free values (at most kNarrowMost), the other's stride-1 mode a k
  // mode: the narrow kernel packs the small one and reads the other as it lies (plan 0). The
  // shapes put k modes before the large operand's last free mode, so that K runs in blocks
  // whose sums go to memory and back; free values within one vector and past two (four
  // vectors of doubles); rows past a whole task. Every plan runs against the reference, with
  // beta 0 and 0.5, and the narrow kernel on every SIMD target. Where the large operand's
  // stride-1 mode is free, the kernel is not offered.
  std::mt19937 rng(31);
  struct Shape {
    const char* einsum;
    std::vector<std::pair<char, std::size_t>> extents;
    bool narrow;
  };
  const std::vector<Shape> shapes{
      {"xqu,umx->mq", {{'x', 50}, {'q', 5}, {'u', 3}, {'m', 37}}, true},
      {"xqu,umx->mq", {{'x', 49}, {'q', 30}, {'u', 2}, {'m', 13}}, true},
      {"kriuo,wuglro->wglik", {{'k', 2}, {'r', 3}, {'i', 3}, {'u', 4}, {'o', 20}, {'w', 3}, {'g', 5}, {'l', 2}}, true},
      {"xyl,xjym->ljm", {{'x', 4}, {'y', 50}, {'l', 30}, {'j', 3}, {'m', 19}}, false},
  };
  for (const Shape& shape : shapes) {
    const Problem p = parse(shape.einsum, shape.extents);
    INFO(shape.einsum);
    const std::string first =
        cpu::contract_plan_description<T>(0, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
    CHECK((first.find("narrow kernel") == 0) == shape.narrow);
    CHECK(check_contract<T>(p, rng, T(-0.75), T(0), true, 5) > 1);
    CHECK(check_contract<T>(p, rng, T(1), T(0.5), true, 5) > 1);
    if (!shape.narrow) continue;
    const auto a = random_values<T>(volume(p.a_ext), rng);
    const auto b = random_values<T>(volume(p.b_ext), rng);
    const auto c0 = random_values<T>(volume(c_extents(p)), rng);
    for (const T beta : {T(0), T(0.5)}) {
      const Expected expected = reference_contract(-0.75, a, p.a_ext, p.a_modes, b, p.b_ext, p.b_modes,
                                                   static_cast<double>(beta), c0, p.c_modes);
      for_each_simd_target([&] {
        std::vector<T> c = c0;
        cpu::contract_with_plan(0, T(-0.75), a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, beta, c.data(),
                                p.c_modes);
        CHECK(mismatches(c, expected) == 0);
      });
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_narrow, Scalars);

// The GETT kernel's plan (plan 0 or 1, after the narrow kernel's), where it is offered.
template <class T>
std::optional<std::size_t> gett_plan_of(const Problem& p) {
  for (std::size_t plan = 0; plan < 2; ++plan) {
    const std::string text =
        cpu::contract_plan_description<T>(plan, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
    if (text.find("GETT kernel") == 0) return plan;
  }
  return std::nullopt;
}

// The same, checked to be offered (on every SIMD target).
template <class T>
std::optional<std::size_t> offered_gett_plan(const Problem& p) {
  const std::optional<std::size_t> gett = gett_plan_of<T>(p);
  CHECK(gett.has_value());
  return gett;
}

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the GETT kernel, K and N in blocks", T, cpu_kernels_gett) {
  // The GETT kernel packs one operand into panels and the other, whatever its layout, a
  // block at a time from its own strides (plan 0 or 1, after the narrow kernel, on every
  // SIMD target). The shapes: skinny, K in blocks of 256 with the sums in a buffer and N past
  // several blocks, runs of the large operand's stride-1 mode across strips; the small
  // operand's free values over three panels, padded, with c's small modes innermost; a single
  // free value; the large operand's stride-1 mode a k mode; c's stride-1 mode the large
  // operand's slowest; then c's modes interleaving the operands', the sums stored from the
  // registers into c's runs (added after K's first block), and strips packed from runs of
  // one value; c's stride-1 mode next to the strip operand's innermost, written through the
  // buffer in c's order. The kernel's plan runs against the reference with beta 0 (c not
  // read: it starts as NaN) and 0.5, then the contraction's own choice.
  std::mt19937 rng(37);
  const std::vector<std::pair<const char*, std::vector<std::pair<char, std::size_t>>>> shapes{
      {"nyvbl,bsnwyp->svlpw", {{'n', 5}, {'y', 6}, {'v', 3}, {'b', 40}, {'l', 4}, {'s', 4}, {'w', 9}, {'p', 9}}},
      {"kab,kcd->cdab", {{'k', 40}, {'a', 5}, {'b', 5}, {'c', 30}, {'d', 7}}},
      {"k,nk->n", {{'k', 300}, {'n', 70}}},
      {"gmxon,igk->mknoix", {{'g', 70}, {'m', 2}, {'x', 3}, {'o', 2}, {'n', 2}, {'i', 5}, {'k', 41}}},
      {"frwp,vefprk->vwke", {{'f', 3}, {'r', 5}, {'w', 7}, {'p', 4}, {'v', 3}, {'e', 2}, {'k', 33}}},
      // Skinny, c's stride-1 mode e the strip operand's slowest, past a block's span (d, a, b:
      // 294 values): numbered next to d instead; K in one block, then in two with the sums in
      // a buffer.
      {"efbad,cf->abcde", {{'e', 9}, {'f', 5}, {'b', 7}, {'a', 7}, {'d', 6}, {'c', 3}}},
      {"efbad,cf->abcde", {{'e', 9}, {'f', 300}, {'b', 7}, {'a', 7}, {'d', 6}, {'c', 3}}},
      // Skinny, c's stride-1 mode e next to the strip operand's innermost a, whose values are
      // far apart in c: the sums go to c through the buffer in c's order, tiles of rows of e
      // turned in the registers. Rows of 19 values of a, read where they lie (a vector and a
      // part), in groups cut by e's extent (21: a vector of rows, then 5); rows of 2 values,
      // many to a block; dbea,ec->abcd (tccg03's shape, d within a block's span), rows of the
      // 45 values of b and a, which do not lie together in a: packed.
      {"ecbfa,fd->abcde", {{'e', 21}, {'c', 3}, {'b', 5}, {'f', 5}, {'a', 19}, {'d', 7}}},
      {"ecbfa,fd->abcde", {{'e', 40}, {'c', 30}, {'b', 40}, {'f', 3}, {'a', 2}, {'d', 9}}},
      {"dbea,ec->abcd", {{'d', 20}, {'b', 5}, {'e', 7}, {'a', 9}, {'c', 3}}},
      // The same where e and a row's modes are dense in c, so that a block of e's 21 rows
      // fills one range of c per panel row: turned into a staging row, then written in order
      // (tccg06's shape: rows of 26 values of d read where they lie, two panels; and rows of
      // x and d, which do not lie together in a, packed). Then rows of d that are not dense
      // in c with e (c's c between them): tile by tile.
      {"efbad,cf->abcde", {{'e', 21}, {'f', 5}, {'b', 3}, {'a', 4}, {'d', 26}, {'c', 19}}},
      {"yexfd,cf->cyxde", {{'y', 10}, {'e', 20}, {'x', 5}, {'f', 7}, {'d', 6}, {'c', 3}}},
      {"efbad,cf->abdce", {{'e', 21}, {'f', 5}, {'b', 3}, {'a', 4}, {'d', 26}, {'c', 5}}},
      // Short K, both sides past kGettMost, c's modes interleaving the operands'; the first
      // one large enough for threads, with too few blocks of N for them (panels in parts).
      {"iramc,dprc->admpi", {{'i', 7}, {'r', 3}, {'a', 10}, {'m', 8}, {'c', 6}, {'d', 40}, {'p', 10}}},
      {"tl,lxcfj->xjctf", {{'t', 70}, {'l', 22}, {'x', 4}, {'c', 5}, {'f', 3}, {'j', 3}}},
      {"ol,joyb->ylbj", {{'o', 31}, {'l', 50}, {'j', 15}, {'y', 4}, {'b', 5}}},
      // K in two blocks of 600 (past kWideBlockK), the second added to c: each panel against
      // every strip; N in two blocks (a block's strips capped by its bytes).
      {"aecf,fbed->abcd", {{'a', 6}, {'b', 7}, {'c', 7}, {'d', 40}, {'e', 40}, {'f', 30}}},
      // The strip operand's runs of one value: packed down K where K lies together (a's f),
      // else gathered a vector at a time (b: d runs 30 apart, c innermost).
      {"aedf,fbec->abcd", {{'a', 6}, {'b', 7}, {'c', 6}, {'d', 7}, {'e', 5}, {'f', 6}}},
      {"aebf,fdec->abcd", {{'a', 6}, {'b', 7}, {'c', 6}, {'d', 7}, {'e', 5}, {'f', 6}}},
  };
  for (const auto& [einsum, extents] : shapes) {
    const Problem p = parse(einsum, extents);
    INFO(std::string(einsum));
    const std::optional<std::size_t> gett = offered_gett_plan<T>(p);
    if (!gett) continue;
    const auto a = random_values<T>(volume(p.a_ext), rng);
    const auto b = random_values<T>(volume(p.b_ext), rng);
    const std::size_t n = volume(c_extents(p));
    for (const T beta : {T(0), T(0.5)}) {
      const auto c0 = beta == T(0) ? std::vector<T>(n, std::numeric_limits<T>::quiet_NaN()) : random_values<T>(n, rng);
      const Expected expected = reference_contract(-0.75, a, p.a_ext, p.a_modes, b, p.b_ext, p.b_modes,
                                                   static_cast<double>(beta), c0, p.c_modes);
      for_each_simd_target([&] {
        std::vector<T> c = c0;
        cpu::contract_with_plan(*gett, T(-0.75), a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, beta,
                                c.data(), p.c_modes);
        CHECK(mismatches(c, expected) == 0);
      });
    }
    CHECK(check_contract<T>(p, rng, T(1), T(0), false) == 1);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_gett, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the GETT kernel streams a large c past the caches", T,
                          cpu_kernels_gett_stream) {
  for_each_simd_target([&] {
    // tccg37's shape, efga,gdbc->abcdef, with K = 3 and c of 9 M values (36 MB in float, 72 MB
    // in double: past kStreamBytes), only written (beta 0): whole lines of c go past the
    // caches. The strip operand a (12 K values) is gathered (its stride-1 mode a is c's
    // slowest), and each panel runs against every strip (c's e, f run together). c is 64-byte
    // aligned, as the streaming stores need, and starts as NaN; checked against plain loops.
    constexpr std::size_t A = 16, B = 13, C = 13, D = 13, E = 16, F = 16, G = 3;
    std::vector<std::size_t> extent_of(26, 1);
    const std::size_t extents[] = {A, B, C, D, E, F, G};
    for (std::size_t x = 0; x < 7; ++x) extent_of[x] = extents[x];
    const Problem p = parse("efga,gdbc->abcdef", extent_of);
    const std::optional<std::size_t> gett = offered_gett_plan<T>(p);
    if (!gett) return;
    std::mt19937 rng(41);
    const auto a = random_values<T>(E * F * G * A, rng);
    const auto b = random_values<T>(G * D * B * C, rng);
    const std::size_t n = A * B * C * D * E * F;
    std::vector<T> raw(n + 64 / sizeof(T));
    T* c = raw.data();
    while (reinterpret_cast<std::uintptr_t>(c) % 64 != 0) ++c;
    std::fill(c, c + n, std::numeric_limits<T>::quiet_NaN());
    cpu::contract_with_plan(*gett, T(-0.75), a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, T(0), c,
                            p.c_modes);
    const double rtol = 4.0 * eps<T>() * (G + 4.0);
    std::size_t bad = 0, at = 0;
    for (std::size_t ia = 0; ia < A; ++ia) {
      for (std::size_t ib = 0; ib < B; ++ib) {
        for (std::size_t ic = 0; ic < C; ++ic) {
          for (std::size_t id = 0; id < D; ++id) {
            for (std::size_t ie = 0; ie < E; ++ie) {
              for (std::size_t jf = 0; jf < F; ++jf, ++at) {
                double sum = 0, magnitude = 0;
                for (std::size_t ig = 0; ig < G; ++ig) {
                  const double term = static_cast<double>(a[((ie * F + jf) * G + ig) * A + ia]) *
                                      static_cast<double>(b[((ig * D + id) * B + ib) * C + ic]);
                  sum += term;
                  magnitude += std::abs(term);
                }
                const double got = static_cast<double>(c[at]);
                if (!(std::abs(got + 0.75 * sum) <= rtol * 0.75 * magnitude + 1e-300)) ++bad;
              }
            }
          }
        }
      }
    }
    CHECK(bad == 0);
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_gett_stream, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the GETT kernel's staged rows stream a large c past the caches", T,
                          cpu_kernels_gett_staged_stream) {
  // tccg06's shape, efbad,cf->abcde, with K = 2 and c of 8.6 M values (34 MB in float, 69 MB
  // in double: past kStreamBytes), only written (beta 0): each block's rows of d go to c
  // through the staging row, its whole lines past the caches, the parts before c's first
  // line and after its last masked. c starts as NaN; checked against the reference.
  const Problem p = parse("efbad,cf->abcde", {{'e', 33}, {'f', 2}, {'b', 20}, {'a', 20}, {'d', 26}, {'c', 25}});
  const std::optional<std::size_t> gett = offered_gett_plan<T>(p);
  if (!gett) return;
  std::mt19937 rng(43);
  const auto a = random_values<T>(volume(p.a_ext), rng);
  const auto b = random_values<T>(volume(p.b_ext), rng);
  const std::vector<T> c0(volume(c_extents(p)), std::numeric_limits<T>::quiet_NaN());
  const Expected expected = reference_contract(-0.75, a, p.a_ext, p.a_modes, b, p.b_ext, p.b_modes, 0.0, c0, p.c_modes);
  for_each_simd_target([&] {
    std::vector<T> c = c0;
    cpu::contract_with_plan(*gett, T(-0.75), a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, T(0), c.data(),
                            p.c_modes);
    CHECK(mismatches(c, expected) == 0);
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_gett_staged_stream, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the GETT kernel writes a large c in boxes of its modes", T,
                          cpu_kernels_gett_boxed) {
  // c's modes interleave the operands' from its innermost on, K is short and c is only written
  // and past kStreamBytes (35-40 MB in float, twice that in double): each block's sums, a box
  // of c's modes, go to c through a buffer in c's order. rand185's shape, runs of 7 values of
  // i (shorter than a vector), the cut mode m's last block one value; rand074's, runs of 12
  // values of g (past a vector of doubles: two stores a run), the cut mode i's last block
  // shorter, the staged ranges q by g, for each value of i and n. c starts as NaN; checked
  // against the reference.
  //
  // Boxes only where a run is shorter than a strip (two vectors of the target) and not one
  // vector (the direct path writes runs of whole vectors as fast), and only where a block
  // (half the L2, tuning::gett_block_bytes) holds, beside every row of the panels, a whole
  // strip of the cut mode's values that fill its lanes best (boxed_blocks), four blocks per
  // thread (nqal,gialw->winqg in float on AVX-512 with a 1 MB L2: a block of 38 columns of
  // the 12 values of g; 3 values of i fill 36 lanes of two strips, 2 fill 24 of one, short of
  // a strip: direct). So the choice depends on the L2, the target and the threads: two
  // threads held (without OpenMP, one: the choice unchecked), each machine profile's caches
  // pinned (machine_profiles.hpp), every SIMD target the CPU has; boxed_targets lists, per
  // profile, the targets that box.
  struct Boxed {
    const char* einsum;
    std::vector<std::pair<char, std::size_t>> extents;
    const char* boxed_targets[2][machine_profiles::kProfileCount];  // float, double
  };
  const std::vector<Boxed> shapes{
      {"iramc,dprc->admpi",
       {{'i', 7}, {'r', 2}, {'a', 19}, {'m', 17}, {'c', 3}, {'d', 221}, {'p', 20}},
       {{"sse4", "avx2 sse4", "avx512 avx2 sse4"}, {"", "avx2", "avx512 avx2"}}},
      {"nqal,gialw->winqg",
       {{'n', 58}, {'q', 58}, {'a', 2}, {'l', 2}, {'g', 12}, {'i', 11}, {'w', 20}},
       {{"", "avx2", "avx512 avx2"}, {"", "", "avx512"}}},
  };
  const TwoThreads two;
  std::mt19937 rng(47);
  for (const Boxed& shape : shapes) {
    const Problem p = parse(shape.einsum, shape.extents);
    INFO(std::string(shape.einsum));
    const auto a = random_values<T>(volume(p.a_ext), rng);
    const auto b = random_values<T>(volume(p.b_ext), rng);
    const std::vector<T> c0(volume(c_extents(p)), std::numeric_limits<T>::quiet_NaN());
    const Expected expected =
        reference_contract(-0.75, a, p.a_ext, p.a_modes, b, p.b_ext, p.b_modes, 0.0, c0, p.c_modes);
    machine_profiles::for_each_profile([&](std::size_t profile) {
      INFO("machine profile ", std::string(machine_profiles::kProfiles[profile].name));
      const std::optional<std::size_t> gett = offered_gett_plan<T>(p);
      if (!gett) return;
      const std::string listed = std::string(" ") + shape.boxed_targets[sizeof(T) == 4 ? 0 : 1][profile] + " ";
      for_each_simd_target([&] {
        const std::string text =
            cpu::contract_plan_description<T>(*gett, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
        const bool boxed = listed.find(std::string(" ") + cpu::simd_target_name() + " ") != std::string::npos;
        if (two.held) CHECK((text.find("c written in boxes") != std::string::npos) == boxed);
        std::vector<T> c = c0;
        cpu::contract_with_plan(*gett, T(-0.75), a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, T(0),
                                c.data(), p.c_modes);
        CHECK(mismatches(c, expected) == 0);
      });
    });
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_gett_boxed, Scalars);

// The kernels' own plans (the GETT and narrow kernels: plans 0 and 1, where offered) of `p`
// against the reference on every SIMD target, at `threads` threads, then the contraction's
// own choice; c starts as NaN. Runs checked.
template <class T>
std::size_t check_kernel_plans(const Problem& p, std::mt19937& rng, int threads) {
  const auto a = random_values<T>(volume(p.a_ext), rng);
  const auto b = random_values<T>(volume(p.b_ext), rng);
  const std::vector<T> c0(volume(c_extents(p)), std::numeric_limits<T>::quiet_NaN());
  const Expected expected = reference_contract(-0.75, a, p.a_ext, p.a_modes, b, p.b_ext, p.b_modes, 0.0, c0, p.c_modes);
#if TENEX_OPENMP
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
#endif
  INFO(describe(p), ", ", threads, " threads");
  std::size_t runs = 0;
  for_each_simd_target([&] {
    const std::size_t plans = cpu::contract_plan_count<T>(p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
    for (std::size_t plan = 0; plan <= std::min<std::size_t>(plans, 2); ++plan) {
      const bool own = plan == std::min<std::size_t>(plans, 2);
      const std::string text =
          own ? "cheapest"
              : cpu::contract_plan_description<T>(plan, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
      if (!own && text.find("GETT kernel") != 0 && text.find("narrow kernel") != 0) continue;
      INFO(text);
      std::vector<T> c = c0;
      if (own) {
        cpu::contract(T(-0.75), a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, T(0), c.data(), p.c_modes);
      } else {
        cpu::contract_with_plan(plan, T(-0.75), a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, T(0),
                                c.data(), p.c_modes);
      }
      CHECK(mismatches(c, expected) == 0);
      ++runs;
    }
  });
#if TENEX_OPENMP
  omp_set_num_threads(before);
#endif
  return runs;
}

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: two k and three free modes of the large operand, c's stride-1 mode its own", T,
                          cpu_kernels_two_k_three_free) {
  // The large operand's free modes b, d, e and k modes k, l in any order, c's stride-1 mode b
  // (32 values or more) not the operand's innermost, K short: the GETT kernel writes c through
  // its buffer in c's order, a block's rows of d and e wide (issue 45: on the scalar target,
  // whose strips are two values, a block held more strips than the packing's masks on the
  // stack, and the stack was smashed). The issue's two shapes, then random orders of the
  // modes; each at one and two threads on every SIMD target against the reference.
  std::mt19937 rng(53);
  std::vector<Problem> shapes{
      parse("skl,bledk->sedb", {{'s', 7}, {'k', 36}, {'l', 2}, {'b', 64}, {'e', 9}, {'d', 9}}),
      parse("sltk,lbdek->detsb", {{'s', 32}, {'l', 6}, {'t', 1}, {'k', 8}, {'b', 146}, {'d', 16}, {'e', 5}}),
  };
  const std::size_t b_extents[] = {32, 47, 64};
  for (std::size_t x = 0; x < 6; ++x) {
    std::string big = "bdekl", c = "sde";
    std::shuffle(big.begin(), big.end(), rng);
    std::shuffle(c.begin(), c.end(), rng);
    std::uniform_int_distribution<std::size_t> small(2, 12), k(2, 16);
    const std::string einsum = "skl," + big + "->" + c + "b";
    shapes.push_back(parse(einsum, {{'s', small(rng)},
                                    {'k', k(rng)},
                                    {'l', k(rng)},
                                    {'b', b_extents[x % 3]},
                                    {'d', small(rng)},
                                    {'e', small(rng)}}));
  }
  for (const Problem& p : shapes) {
    for (const int threads : {1, 2}) CHECK(check_kernel_plans<T>(p, rng, threads) >= 1);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_two_k_three_free, Scalars);

TEST_CASE("cpu kernels: the GETT kernel is not offered where it would scatter") {
  // A skinny shape with short K whose strips would write c a value at a time far apart
  // (tccg03's) and whose rows are too long to go through the buffer in c's order (200 values
  // of a: 1600 bytes, past kMostRow), and a shape whose strip operand would be gathered a
  // value at a time (its stride-1 mode c past a block's span of d) from 6.4 MB, more than the
  // caches hold (kCachedStripBytes): no GETT plan.
  const std::vector<std::pair<const char*, std::vector<std::pair<char, std::size_t>>>> shapes{
      {"dbea,ec->abcd", {{'d', 20}, {'b', 20}, {'e', 8}, {'a', 200}, {'c', 5}}},
      {"ab,dbc->acd", {{'a', 40}, {'b', 20}, {'d', 1000}, {'c', 40}}},
  };
  for (const auto& [einsum, extents] : shapes) {
    const Problem p = parse(einsum, extents);
    INFO(std::string(einsum));
    const std::size_t plans = cpu::contract_plan_count<double>(p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
    for (std::size_t plan = 0; plan < std::min<std::size_t>(plans, 3); ++plan) {
      const std::string text =
          cpu::contract_plan_description<double>(plan, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
      CHECK(text.find("GETT kernel") == std::string::npos);
    }
  }
}

// The plans of the kernels written over portable vectors (GETT, narrow) among the first two.
template <class T>
std::vector<std::size_t> simd_kernel_plans(const Problem& p) {
  std::vector<std::size_t> plans;
  for (std::size_t plan = 0; plan < 2; ++plan) {
    const std::string text =
        cpu::contract_plan_description<T>(plan, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
    if (text.find("GETT kernel") == 0 || text.find("narrow kernel") == 0) plans.push_back(plan);
  }
  return plans;
}

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the GETT and narrow kernels at the edges of the target's tiles", T,
                          cpu_kernels_simd_edges) {
  // On every SIMD target, free extents of 1, a vector's lanes less one and plus one, and
  // primes, so that strips, panels and the narrow kernel's vectors end part-way; K prime.
  // Shapes: the small operand's free values in panels or the narrow kernel's panel (its
  // stride-1 mode k), and a shape whose c interleaves the operands' modes. Each kernel's plan
  // against the reference with beta 0 (c NaN), 1 and -0.5, at one thread and at two, on a
  // problem past the threshold for threads.
  std::mt19937 rng(53);
  for_each_simd_target([&] {
    const std::size_t lanes = cpu::simd_lanes<T>();
    std::size_t runs = 0;
    for (const std::size_t m : {std::size_t{1}, lanes > 1 ? lanes - 1 : 2, lanes + 1, std::size_t{13}}) {
      for (const std::size_t n : {std::size_t{1}, lanes + 1, std::size_t{37}, std::size_t{67}}) {
        const std::vector<Problem> problems{
            parse("mk,kn->mn", {{'m', m}, {'k', 7}, {'n', n}}),
            parse("km,nk->nm", {{'k', 31}, {'m', m}, {'n', n}}),
            parse("amk,kbn->mbna", {{'a', 3}, {'m', m}, {'k', 5}, {'b', 2}, {'n', n}}),
        };
        for (const Problem& p : problems) {
          for (const std::size_t plan : simd_kernel_plans<T>(p)) {
            for (const T beta : {T(0), T(1), T(-0.5)}) {
              const auto a = random_values<T>(volume(p.a_ext), rng);
              const auto b = random_values<T>(volume(p.b_ext), rng);
              const std::size_t size = volume(c_extents(p));
              const auto c0 = beta == T(0) ? std::vector<T>(size, std::numeric_limits<T>::quiet_NaN())
                                           : random_values<T>(size, rng);
              const Expected expected = reference_contract(1.25, a, p.a_ext, p.a_modes, b, p.b_ext, p.b_modes,
                                                           static_cast<double>(beta), c0, p.c_modes);
              std::vector<T> c = c0;
              cpu::contract_with_plan(plan, T(1.25), a.data(), p.a_ext, p.a_modes, b.data(), p.b_ext, p.b_modes, beta,
                                      c.data(), p.c_modes);
              INFO(describe(p), " plan ", plan, " beta ", static_cast<double>(beta));
              CHECK(mismatches(c, expected) == 0);
              ++runs;
            }
          }
        }
      }
    }
    CHECK(runs > 48);
    // Past the threshold for threads (4 Mflop): one thread, then two.
    const Problem large = parse("mk,kn->mn", {{'m', 700}, {'k', 301}, {'n', lanes + 1}});
    const std::vector<std::size_t> plans = simd_kernel_plans<T>(large);
    CHECK(!plans.empty());
    for (const int threads : {1, 2}) {
#if TENEX_OPENMP
      const int before = omp_get_max_threads();
      omp_set_num_threads(threads);
#endif
      for (const std::size_t plan : plans) {
        const auto a = random_values<T>(volume(large.a_ext), rng);
        const auto b = random_values<T>(volume(large.b_ext), rng);
        const auto c0 = random_values<T>(volume(c_extents(large)), rng);
        const Expected expected = reference_contract(-1.0, a, large.a_ext, large.a_modes, b, large.b_ext, large.b_modes,
                                                     0.5, c0, large.c_modes);
        std::vector<T> c = c0;
        cpu::contract_with_plan(plan, T(-1), a.data(), large.a_ext, large.a_modes, b.data(), large.b_ext, large.b_modes,
                                T(0.5), c.data(), large.c_modes);
        INFO("threads ", threads, " plan ", plan);
        CHECK(mismatches(c, expected) == 0);
      }
#if TENEX_OPENMP
      omp_set_num_threads(before);
#endif
    }
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_simd_edges, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the sparse gather and streamed copy on every SIMD target", T,
                          cpu_kernels_simd_gather) {
  // gather_axpy_simd: c[y] += a b[index[y]] against the plain loop, for lengths around a
  // vector's lanes (the rest after whole vectors) and offsets anywhere in b. stream_bytes:
  // copies and zeros from unaligned starts, lengths past a line and short of one.
  std::mt19937 rng(59);
  for_each_simd_target([&] {
    const std::size_t lanes = cpu::simd_lanes<T>();
    const auto b = random_values<T>(1000, rng);
    std::uniform_int_distribution<std::int32_t> offset(0, 999);
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, lanes - 1, lanes, lanes + 1, 3 * lanes + 2, std::size_t{37}}) {
      std::vector<std::int32_t> index(n);
      for (auto& x : index) x = offset(rng);
      const auto c0 = random_values<T>(n, rng);
      std::vector<T> c = c0;
      cpu::gather_axpy_simd(c.data(), T(-1.5), b.data(), index.data(), n);
      std::size_t bad = 0;
      for (std::size_t y = 0; y < n; ++y) {
        const double want =
            static_cast<double>(c0[y]) - 1.5 * static_cast<double>(b[static_cast<std::size_t>(index[y])]);
        if (!(std::abs(static_cast<double>(c[y]) - want) <= 8 * eps<T>() * (std::abs(want) + 2.0))) ++bad;
      }
      INFO("n ", n);
      CHECK(bad == 0);
    }
    std::vector<char> from(700), to(800);
    for (std::size_t x = 0; x < from.size(); ++x) from[x] = static_cast<char>(x * 7 + 1);
    for (const std::size_t start : {std::size_t{0}, std::size_t{3}, std::size_t{61}}) {
      for (const std::size_t bytes :
           {std::size_t{0}, std::size_t{5}, std::size_t{64}, std::size_t{200}, std::size_t{699}}) {
        std::fill(to.begin(), to.end(), char(-1));
        cpu::stream_bytes(to.data() + start, from.data(), bytes);
        CHECK(std::equal(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(bytes),
                         to.begin() + static_cast<std::ptrdiff_t>(start)));
        CHECK(to[start + bytes] == char(-1));
        cpu::stream_bytes(to.data() + start, nullptr, bytes);
        CHECK(std::count(to.begin() + static_cast<std::ptrdiff_t>(start),
                         to.begin() + static_cast<std::ptrdiff_t>(start + bytes),
                         char(0)) == static_cast<std::ptrdiff_t>(bytes));
        if (start > 0) CHECK(to[start - 1] == char(-1));
      }
    }
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_simd_gather, Scalars);

TEST_CASE("cpu kernels: TENEX_SIMD caps the SIMD target") {
  // Each target this CPU has, named in TENEX_SIMD, is the one the kernels run, with its
  // vector's lanes (a vector of 64, 32 or 16 bytes; one value for the scalar code); an unknown
  // name leaves the best target, as does no value. Targets are listed best first.
  const std::vector<std::string> targets = cpu::simd_targets_available();
  REQUIRE(!targets.empty());
  CHECK(targets.back() == "scalar");
  for (const std::string& target : targets) {
    EnvironmentScope simd("TENEX_SIMD", target.c_str());
    cpu::set_simd_target_for_test("");  // reads TENEX_SIMD again
    INFO(target);
    CHECK(std::string(cpu::simd_target_name()) == target);
    const std::size_t bytes = target == "avx512" ? 64 : target == "avx2" ? 32 : target == "scalar" ? 0 : 16;
    if (bytes > 0) {
      CHECK(cpu::simd_lanes<float>() == bytes / sizeof(float));
      CHECK(cpu::simd_lanes<double>() == bytes / sizeof(double));
    } else {
      CHECK(cpu::simd_lanes<double>() >= 1);
    }
  }
  for (const char* value : {"", "avx1024", "AVX2", "none"}) {
    EnvironmentScope simd("TENEX_SIMD", value);
    cpu::set_simd_target_for_test("");
    INFO(value);
    CHECK(std::string(cpu::simd_target_name()) == targets.front());
  }
  cpu::set_simd_target_for_test("");
}

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract, larger shapes run the cheapest plan", T, cpu_kernels_contract_large) {
  std::mt19937 rng(23);
  // Big enough for GEMM plans, slices across threads, tiles and pre-permutations.
  const std::vector<std::pair<const char*, const char*>> cases{
      {"ik,kj->ij", "i=200,j=150,k=100"},       // one GEMM cut along m among threads
      {"acd,dbc->ab", "a=20,b=18,c=100,d=80"},  // small c, long k: k cut among threads
      {"abk,bkc->abc", "a=70,b=3,c=65,k=50"},
      {"bda,dc->abc", "a=24,b=20,c=9,d=31"},
      {"dbea,ec->abcd", "a=12,b=11,c=5,d=13,e=14"},
      {"ecbfa,fd->abcde", "a=9,b=7,c=6,d=5,e=8,f=9"},
      {"acd,dbc->ab", "a=33,b=29,c=31,d=27"},
      {"aecf,fbed->abcd", "a=10,b=9,c=8,d=11,e=12,f=7"},
      {"dfgb,geac->abcdef", "a=8,b=6,c=7,d=9,e=5,f=6,g=8"},
      {"geab,dfgc->abcdef", "a=7,b=6,c=8,d=9,e=6,f=7,g=9"},
  };
  for (const auto& [einsum, extents] : cases) {
    std::vector<std::size_t> extent_of(26, 1);
    for (const char* x = extents; *x; ++x) {
      if (x[1] == '=') extent_of[static_cast<std::size_t>(*x - 'a')] = std::stoul(x + 2);
    }
    const Problem p = parse(einsum, extent_of);
    INFO(einsum, " ", extents);
    check_contract<T>(p, rng, T(1), T(0), false);
    check_contract<T>(p, rng, T(0.5), T(-1), false);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_large, Scalars);

// A contraction repeated tries a few plans, timing each (all in its first call when beta ==
// 0, else one per call), then keeps the fastest (contract.cpp): every call, the searching
// ones and the settled ones, must be right,
// with beta == 0 (c not read) and with beta != 0 (c accumulated).
TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract repeated, while it times its candidate plans and after", T,
                          cpu_kernels_contract_repeated) {
  std::mt19937 rng(31);
  const std::vector<std::pair<const char*, const char*>> cases{
      {"ukth,khcgsu->tgcs", "c=31,g=3,h=9,k=11,s=4,t=22,u=4"},  // skinny m, a large operand to permute
      {"odh,hsd->so", "d=8,h=54,o=30,s=300"},
      {"ecbfa,fd->abcde", "a=19,b=13,c=13,d=9,e=19,f=19"},
  };
  for (const auto& [einsum, extents] : cases) {
    std::vector<std::size_t> extent_of(26, 1);
    for (const char* x = extents; *x; ++x) {
      if (x[1] == '=') extent_of[static_cast<std::size_t>(*x - 'a')] = std::stoul(x + 2);
    }
    const Problem p = parse(einsum, extent_of);
    INFO(einsum, " ", extents);
    for (int call = 0; call < 5; ++call) {
      INFO("call ", call);
      check_contract<T>(p, rng, T(1), T(0), false);
      check_contract<T>(p, rng, T(0.5), T(-1), false);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_repeated, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract, degenerate shapes", T, cpu_kernels_contract_degenerate) {
  std::mt19937 rng(24);
  const std::vector<Problem> problems{
      {{}, {}, {}, {}, {}},                                        // scalar * scalar
      {{}, {3, 4}, {}, {0, 1}, {1, 0}},                            // scalar * matrix, transposed
      {{5}, {6}, {0}, {1}, {0, 1}},                                // outer product
      {{5}, {6}, {0}, {1}, {1, 0}},                                // outer product, transposed
      {{4, 5}, {5, 4}, {0, 1}, {1, 0}, {0, 1}},                    // Hadamard
      {{4, 5, 3}, {3, 5, 4}, {0, 1, 2}, {2, 1, 0}, {1, 2, 0}},     // Hadamard, permuted
      {{7}, {7}, {0}, {0}, {}},                                    // dot product
      {{6, 6}, {}, {0, 0}, {}, {}},                                // trace
      {{6, 6}, {}, {0, 0}, {}, {0}},                               // diagonal
      {{4, 3, 5}, {5, 2}, {0, 9, 1}, {1, 2}, {0, 2}},              // mode 9 summed in a only
      {{4, 3}, {3, 2, 6}, {0, 1}, {1, 2, 7}, {2, 0}},              // mode 7 summed in b only
      {{1, 1}, {1, 1}, {0, 1}, {1, 2}, {0, 2}},                    // all extents 1
      {{3, 1, 4}, {4, 1, 2}, {0, 1, 2}, {2, 3, 4}, {4, 3, 1, 0}},  // extent-1 modes everywhere
  };
  for (const Problem& p : problems) {
    for (T beta : {T(0), T(2)}) check_contract<T>(p, rng, T(1.5), beta, true);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_degenerate, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract with zero extents and alpha == 0", T, cpu_kernels_contract_zero) {
  std::mt19937 rng(25);
  // c has a zero extent: nothing is written.
  {
    std::vector<T> a(12, T(1)), b(1, T(1));
    T sentinel = T(42);
    cpu::contract(T(1), a.data(), Extents{0, 3}, Modes{0, 1}, a.data(), Extents{3, 4}, Modes{1, 2}, T(0), &sentinel,
                  Modes{0, 2});
    CHECK(sentinel == T(42));
  }
  // k has extent 0: c = beta c (zeros when beta == 0, even over NaN).
  for (T beta : {T(0), T(3)}) {
    std::vector<T> a(1), b(1);
    auto c0 = random_values<T>(20, rng);
    std::vector<T> c = beta == T(0) ? std::vector<T>(20, std::numeric_limits<T>::quiet_NaN()) : c0;
    cpu::contract(T(1), a.data(), Extents{4, 0}, Modes{0, 1}, b.data(), Extents{0, 5}, Modes{1, 2}, beta, c.data(),
                  Modes{0, 2});
    std::size_t bad = 0;
    for (std::size_t x = 0; x < 20; ++x) {
      if (c[x] != beta * (beta == T(0) ? T(0) : c0[x])) ++bad;
    }
    CHECK(bad == 0);
  }
  // A mode summed in one operand only, of extent 0.
  {
    std::vector<T> a(1), b = random_values<T>(6, rng);
    std::vector<T> c(6, std::numeric_limits<T>::quiet_NaN());
    cpu::contract(T(1), a.data(), Extents{0}, Modes{5}, b.data(), Extents{2, 3}, Modes{0, 1}, T(0), c.data(),
                  Modes{1, 0});
    CHECK(std::count(c.begin(), c.end(), T(0)) == 6);
  }
  // alpha == 0: c = beta c, a and b unread.
  {
    std::vector<T> a(6, std::numeric_limits<T>::quiet_NaN()), b(6, std::numeric_limits<T>::quiet_NaN());
    std::vector<T> c(4, T(2));
    cpu::contract(T(0), a.data(), Extents{2, 3}, Modes{0, 1}, b.data(), Extents{3, 2}, Modes{1, 2}, T(0.5), c.data(),
                  Modes{0, 2});
    CHECK(std::count(c.begin(), c.end(), T(1)) == 4);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_zero, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract counts flops and calls", T, cpu_kernels_contract_counts) {
  std::mt19937 rng(26);
  const auto a = random_values<T>(6 * 7 * 3, rng), b = random_values<T>(7 * 5 * 3, rng);
  std::vector<T> c(6 * 5 * 3);
  // c(b,i,j) = a(b,i,k) b(b,k,j): 2 m n k batch flops, at least one call.
  const cpu::KernelCount counted = cpu::contract(T(1), a.data(), Extents{3, 6, 7}, Modes{0, 1, 2}, b.data(),
                                                 Extents{3, 7, 5}, Modes{0, 2, 3}, T(0), c.data(), Modes{0, 1, 3});
  CHECK(counted.flops == doctest::Approx(2.0 * 6 * 5 * 7 * 3));
  CHECK(counted.calls >= 1);
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_counts, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the measured plan search gives the right result on every call", T,
                          cpu_kernels_contract_search) {
  // Large enough for the search (the model's plan above 50 us): with beta == 0 the first call
  // runs every candidate in turn on c, the last one's result standing, and later calls the
  // fastest; with beta != 0 (c accumulated, which a second run would spoil) the first call
  // runs the model's choice untimed, the next calls each try a candidate, then the fastest
  // runs. Every one of those calls must give the reference result.
  // TENEX_PLAN_SEARCH=measure (test_plan_search.cpp has the other modes); the mode is read
  // when a thread meets a shape, so the thread's shapes are forgotten first.
  const EnvironmentScope measure("TENEX_PLAN_SEARCH", "measure");
  cpu::plan_search::reset_for_testing(false);
  std::mt19937 rng(31);
  const Problem p = parse("aecf,fbed->abcd", {14, 14, 14, 14, 14, 14});
  const Problem q = parse("aecf,fbed->abcd", {14, 14, 14, 14, 14, 15});  // its own search
  for (int call = 0; call < 8; ++call) {
    INFO("call ", call);
    check_contract<T>(p, rng, T(1), T(0), false);
    check_contract<T>(q, rng, T(0.5), T(-1), false);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_search, Scalars);

TEST_CASE("cpu kernels: every plan has a description, the plain loops last") {
  const Problem p = parse("bda,dc->abc", {5, 6, 7, 8});
  const std::size_t plans = cpu::contract_plan_count<double>(p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
  REQUIRE(plans >= 2);
  for (std::size_t plan = 0; plan + 1 < plans; ++plan) {
    const std::string text =
        cpu::contract_plan_description<double>(plan, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true);
    INFO(plan, ": ", text);
    CHECK((text.find("; m {") != std::string::npos || text.find("narrow kernel, ") == 0 ||
           text.find("GETT kernel, ") == 0));
    CHECK(text.find(" ms") != std::string::npos);
  }
  CHECK(cpu::contract_plan_description<double>(plans - 1, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true) ==
        "plain loops");
  CHECK_THROWS_AS(
      cpu::contract_plan_description<double>(plans, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true),
      std::invalid_argument);
}

TEST_CASE("cpu kernels: contract takes its scratch from the block cache") {
  // c(i,j) = a(k,i) b(k,j), a of 1 MiB: the plans that permute a copy it into scratch, which
  // waits in the block cache for the next call until release_cached_memory().
  const Extents a_extents{256, 512}, b_extents{256, 4};
  const Modes a_modes{0, 1}, b_modes{0, 2}, c_modes{1, 2};
  std::mt19937 rng(29);
  const auto a = random_values<double>(volume(a_extents), rng), b = random_values<double>(volume(b_extents), rng);
  std::vector<double> c(512 * 4);
  tenex::release_cached_memory();
  const std::size_t plans = cpu::contract_plan_count<double>(a_extents, a_modes, b_extents, b_modes, c_modes, true);
  for (std::size_t plan = 0; plan < plans; ++plan) {
    cpu::contract_with_plan(plan, 1.0, a.data(), a_extents, a_modes, b.data(), b_extents, b_modes, 0.0, c.data(),
                            c_modes);
  }
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer nothing is cached.
  CHECK(tenex::cached_memory_bytes() == 0);
#else
  CHECK(tenex::cached_memory_bytes() >= volume(a_extents) * sizeof(double));
#endif
  tenex::release_cached_memory();
  CHECK(tenex::cached_memory_bytes() == 0);
}

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: contract rejects inconsistent modes", T, cpu_kernels_contract_errors) {
  std::vector<T> a(64), b(64), c(64);
  // c holds a mode neither operand has.
  CHECK_THROWS_AS(cpu::contract(T(1), a.data(), Extents{2, 3}, Modes{0, 1}, b.data(), Extents{3, 2}, Modes{1, 2}, T(0),
                                c.data(), Modes{0, 5}),
                  std::invalid_argument);
  // One mode, two extents.
  CHECK_THROWS_AS(cpu::contract(T(1), a.data(), Extents{2, 3}, Modes{0, 1}, b.data(), Extents{4, 2}, Modes{1, 2}, T(0),
                                c.data(), Modes{0, 2}),
                  std::invalid_argument);
  // A mode repeated in c.
  CHECK_THROWS_AS(cpu::contract(T(1), a.data(), Extents{2, 3}, Modes{0, 1}, b.data(), Extents{3, 2}, Modes{1, 2}, T(0),
                                c.data(), Modes{0, 0}),
                  std::invalid_argument);
  // Modes and extents of different lengths.
  CHECK_THROWS_AS(cpu::contract(T(1), a.data(), Extents{2}, Modes{0, 1}, b.data(), Extents{3, 2}, Modes{1, 2}, T(0),
                                c.data(), Modes{0, 2}),
                  std::invalid_argument);
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_errors, Scalars);

// ----------------------------------------------------------------------------------------
// elementwise, scale

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: elementwise broadcasts every operation", T, cpu_kernels_elementwise) {
  std::mt19937 rng(31);
  std::uniform_int_distribution<std::size_t> count(0, 4), extent(1, 6), keep(0, 2);
  const cpu::BinaryOp ops[] = {cpu::BinaryOp::add, cpu::BinaryOp::subtract, cpu::BinaryOp::multiply,
                               cpu::BinaryOp::divide};
  std::vector<std::pair<Modes, Extents>> shapes;
  for (int trial = 0; trial < 60; ++trial) {
    Modes m(count(rng));
    std::iota(m.begin(), m.end(), 0);
    Extents e;
    for (std::size_t x = 0; x < m.size(); ++x) e.push_back(extent(rng));
    shapes.emplace_back(m, e);
  }
  shapes.push_back({{0, 1}, {300, 257}});  // large: the threaded paths
  shapes.push_back({{0, 1, 2}, {50, 40, 30}});
  std::size_t trial = 0;
  for (const auto& [c_modes_sorted, c_ext_sorted] : shapes) {
    Modes c_modes = c_modes_sorted;
    std::shuffle(c_modes.begin(), c_modes.end(), rng);
    Extents c_ext;
    for (int id : c_modes) c_ext.push_back(c_ext_sorted[static_cast<std::size_t>(id)]);
    for (cpu::BinaryOp op : ops) {
      ++trial;
      Modes a_modes, b_modes;
      for (int id : c_modes) {
        // Every third trial keeps all modes in c's order: the contiguous fast path.
        if (trial % 3 == 0 || keep(rng) != 0) a_modes.push_back(id);
        if (trial % 3 == 0 || keep(rng) != 0) b_modes.push_back(id);
      }
      if (trial % 3 != 0) {
        std::shuffle(a_modes.begin(), a_modes.end(), rng);
        std::shuffle(b_modes.begin(), b_modes.end(), rng);
      }
      const Extents a_ext = extents_for(a_modes, c_ext_sorted), b_ext = extents_for(b_modes, c_ext_sorted);
      const auto a = random_values<T>(volume(a_ext), rng);
      auto b = random_values<T>(volume(b_ext), rng, 0.5, 1.5);
      const T alpha_a = T(1.25), alpha_b = trial % 2 ? T(1) : T(-0.5);
      std::vector<T> c(volume(c_ext), std::numeric_limits<T>::quiet_NaN());
      cpu::elementwise(op, alpha_a, a.data(), a_modes, alpha_b, b.data(), b_modes, c.data(), c_ext, c_modes);
      IndexSpace space;
      space.add(c_modes, c_ext);
      std::size_t bad = 0;
      space.for_each([&](const std::vector<std::size_t>& v) {
        const double x = static_cast<double>(alpha_a) * static_cast<double>(a[space.offset(a_modes, v)]);
        const double y = static_cast<double>(alpha_b) * static_cast<double>(b[space.offset(b_modes, v)]);
        double want = 0;
        switch (op) {
          case cpu::BinaryOp::add: want = x + y; break;
          case cpu::BinaryOp::subtract: want = x - y; break;
          case cpu::BinaryOp::multiply: want = x * y; break;
          case cpu::BinaryOp::divide: want = x / y; break;
        }
        const double got = static_cast<double>(c[space.offset(c_modes, v)]);
        const double scale = std::abs(x) + std::abs(y) + std::abs(want);
        if (!(std::abs(got - want) <= 8 * eps<T>() * scale)) ++bad;
      });
      INFO("c ", describe(c_modes, c_ext), " a ", describe(a_modes, a_ext), " b ", describe(b_modes, b_ext));
      CHECK(bad == 0);
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_elementwise, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: elementwise rejects modes the result lacks", T,
                          cpu_kernels_elementwise_errors) {
  std::vector<T> a(6), b(6), c(6);
  CHECK_THROWS_AS(cpu::elementwise(cpu::BinaryOp::add, T(1), a.data(), Modes{0, 7}, T(1), b.data(), Modes{0}, c.data(),
                                   Extents{2, 3}, Modes{0, 1}),
                  std::invalid_argument);
  CHECK_THROWS_AS(cpu::elementwise(cpu::BinaryOp::add, T(1), a.data(), Modes{0}, T(1), b.data(), Modes{1, 1}, c.data(),
                                   Extents{2, 3}, Modes{0, 1}),
                  std::invalid_argument);
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_elementwise_errors, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: scale, also in place", T, cpu_kernels_scale) {
  std::mt19937 rng(32);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{100000}}) {
    const auto a = random_values<T>(n, rng);
    std::vector<T> c(n), d = a;
    cpu::scale(T(-3), a.data(), c.data(), n);
    cpu::scale(T(-3), d.data(), d.data(), n);
    std::size_t bad = 0;
    for (std::size_t x = 0; x < n; ++x) {
      if (c[x] != T(-3) * a[x] || d[x] != c[x]) ++bad;
    }
    CHECK(bad == 0);
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_scale, Scalars);

// ----------------------------------------------------------------------------------------
// fused

namespace {

/// Runs `check` at one thread and at two (the fused kernel shares rows, the points of a row
/// or private sums among them); without OpenMP once.
template <class F>
void at_one_and_two_threads(F check) {
#if TENEX_OPENMP
  const int before = omp_get_max_threads();
  for (const int threads : {1, 2}) {
    omp_set_num_threads(threads);
    INFO("threads ", threads);
    check();
  }
  omp_set_num_threads(before);
#else
  check();
#endif
}

/// Random values in [-2, 2] with NaN, +-Inf and +-0 at a few places (none when `plain`).
template <class T>
std::vector<T> values_with_specials(std::size_t n, std::mt19937& rng, bool plain = false) {
  std::vector<T> v = random_values<T>(n, rng, -2.0, 2.0);
  if (plain) return v;
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(0), -T(0)};
  for (std::size_t x = 0; x < n; x += 7) v[x] = specials[(x / 7) % 5];
  return v;
}

/// Whether a kernel's value is the reference's: the same bits up to NaN's payload (the sign
/// of a zero included).
template <class T>
bool same_value(T got, T want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

/// A 2-d space (i, j) of extents ni x nj: a(i, j) row-major, b(j, i) transposed (or b(i), one
/// value per row, when `broadcast`), evaluated by the naive loop over the program with the
/// table's scalar definitions, one instruction at a time.
template <class T>
struct FusedCase {
  std::size_t ni, nj;
  bool broadcast = false;
  std::vector<T> a, b;

  T b_at(std::size_t i, std::size_t j) const { return broadcast ? b[i] : b[j * ni + i]; }
  static T value(const tenex::FusedParams& p, T a, T b) {
    std::vector<T> v;
    for (const tenex::FusedInstr& in : p.program) {
      if (in.op == tenex::FusedOp::load) {
        v.push_back(in.a == 0 ? a : b);
      } else if (in.op == tenex::FusedOp::constant) {
        v.push_back(static_cast<T>(in.x));
      } else {
        v.push_back(tenex::apply_function(in.op, v[in.a], v[in.b], static_cast<T>(in.x), static_cast<T>(in.y)));
      }
    }
    return v.back();
  }
  /// The kernel on the case, the result over `out_modes` (of 0 = i, 1 = j).
  std::vector<T> run(const tenex::FusedParams& p, const Modes& out_modes) const {
    Extents out_ext;
    for (int m : out_modes) out_ext.push_back(m == 0 ? ni : nj);
    std::vector<T> out(volume(out_ext), T(-7));
    const Modes b_modes = broadcast ? Modes{0} : Modes{1, 0};
    const Extents b_ext = broadcast ? Extents{ni} : Extents{nj, ni};
    cpu::fused<T>(p, {a.data(), b.data()}, {Modes{0, 1}, b_modes}, {Extents{ni, nj}, b_ext}, out.data(), out_modes,
                  out_ext);
    return out;
  }
};

/// The program load a, load b, op(a, b) with parameters x = -0.5, y = 0.75.
tenex::FusedParams one_function(tenex::FusedOp op) {
  tenex::FusedParams p;
  p.program = {{tenex::FusedOp::load, 0, 0, 0, 0}, {tenex::FusedOp::load, 1, 0, 0, 0}, {op, 0, 1, -0.5, 0.75}};
  return p;
}

const std::vector<std::pair<std::size_t, std::size_t>> kFusedShapes{{1, 1},    {1, 3},   {3, 17},   {17, 1},
                                                                    {17, 257}, {257, 3}, {130, 257}};

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the fused kernel's functions on every SIMD target, NaN, Inf and zeros", T,
                          cpu_kernels_fused_functions) {
  // Every function of the table on a(i, j) and b(j, i) (a transposed operand) or b(i) (one
  // value per strip), odd extents, the same bits as the table's scalar definition per point.
  std::mt19937 rng(71);
  std::vector<tenex::FusedOp> ops;
#define TENEX_TEST_OP(op, name, values, parameters, keeps_zero, scalar, text, cuda) ops.push_back(tenex::FusedOp::op);
  TENEX_FOR_EACH_FUNCTION(TENEX_TEST_OP)
#undef TENEX_TEST_OP
  for_each_simd_target([&] {
    at_one_and_two_threads([&] {
      for (const auto& [ni, nj] : kFusedShapes) {
        for (const bool broadcast : {false, true}) {
          FusedCase<T> c{ni, nj, broadcast, values_with_specials<T>(ni * nj, rng),
                         values_with_specials<T>(broadcast ? ni : ni * nj, rng)};
          for (const tenex::FusedOp op : ops) {
            const tenex::FusedParams p = one_function(op);
            const std::vector<T> out = c.run(p, Modes{0, 1});
            std::size_t bad = 0;
            for (std::size_t i = 0; i < ni; ++i) {
              for (std::size_t j = 0; j < nj; ++j) {
                if (!same_value(out[i * nj + j], FusedCase<T>::value(p, c.a[i * nj + j], c.b_at(i, j)))) ++bad;
              }
            }
            INFO("function ", tenex::function_info(op).name, " extents ", ni, " x ", nj,
                 std::string(broadcast ? " b(i)" : " b(j,i)"));
            CHECK(bad == 0);
          }
        }
      }
    });
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_fused_functions, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the fused kernel's reductions on every SIMD target", T,
                          cpu_kernels_fused_reductions) {
  // sum, max and min of a*b + a (b transposed) over j (one sum per row), over i (a sum per
  // column, across rows) and over both; with and without NaN and Inf. max and min propagate
  // NaN and are exact; a sum is within rounding of the double reference.
  std::mt19937 rng(72);
  tenex::FusedParams p;
  p.program = {{tenex::FusedOp::load, 0, 0, 0, 0},
               {tenex::FusedOp::load, 1, 0, 0, 0},
               {tenex::FusedOp::multiply, 0, 1, 0, 0},
               {tenex::FusedOp::add, 2, 0, 0, 0}};
  for_each_simd_target([&] {
    at_one_and_two_threads([&] {
      for (const auto& [ni, nj] : kFusedShapes) {
        for (const bool plain : {true, false}) {
          const FusedCase<T> c{ni, nj, false, values_with_specials<T>(ni * nj, rng, plain),
                               values_with_specials<T>(ni * nj, rng, plain)};
          for (const tenex::ReduceOp reduce : {tenex::ReduceOp::sum, tenex::ReduceOp::max, tenex::ReduceOp::min}) {
            p.reduce = reduce;
            for (const Modes& out_modes : {Modes{0}, Modes{1}, Modes{}}) {
              const std::vector<T> out = c.run(p, out_modes);
              std::vector<double> want(out.size(), reduce == tenex::ReduceOp::sum ? 0.0
                                                   : reduce == tenex::ReduceOp::max
                                                       ? -std::numeric_limits<double>::infinity()
                                                       : std::numeric_limits<double>::infinity());
              std::vector<double> magnitude(out.size(), 0.0);
              for (std::size_t i = 0; i < ni; ++i) {
                for (std::size_t j = 0; j < nj; ++j) {
                  const std::size_t o = out_modes.empty() ? 0 : out_modes[0] == 0 ? i : j;
                  const auto v = static_cast<double>(FusedCase<T>::value(p, c.a[i * nj + j], c.b_at(i, j)));
                  magnitude[o] += std::abs(v);
                  if (reduce == tenex::ReduceOp::sum) {
                    want[o] += v;
                  } else if (std::isnan(v) || std::isnan(want[o])) {
                    want[o] = std::numeric_limits<double>::quiet_NaN();
                  } else {
                    want[o] = reduce == tenex::ReduceOp::max ? std::max(want[o], v) : std::min(want[o], v);
                  }
                }
              }
              std::size_t bad = 0;
              for (std::size_t o = 0; o < out.size(); ++o) {
                const auto got = static_cast<double>(out[o]);
                if (reduce != tenex::ReduceOp::sum || !std::isfinite(want[o])) {
                  if (!(std::isnan(want[o]) ? std::isnan(got) : got == static_cast<double>(static_cast<T>(want[o]))))
                    ++bad;
                } else if (!(std::abs(got - want[o]) <= 4 * eps<T>() * static_cast<double>(ni * nj) * magnitude[o])) {
                  ++bad;
                }
              }
              INFO("reduce ", static_cast<int>(reduce), " to ", out_modes.size(), " modes, extents ", ni, " x ", nj,
                   std::string(plain ? "" : " with NaN and Inf"));
              CHECK(bad == 0);
            }
          }
        }
      }
    });
  });
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_fused_reductions, Scalars);

namespace {

/// A program whose last instruction is outer(l, r), each side a value or an arithmetic
/// instruction of two values (op 0 add, 1 subtract, 2 multiply, 3 divide, 4 a value): what
/// the kernel runs as one compound loop. Values: a, b, the constants 0.75 and -1.5; each
/// value of an inner instruction times -1.5 where `scaled` (the fusion pass's scale); the
/// right side reads b with a constant where `with_constant`, and only b and constants where
/// `only_b` (with b(i) a value per strip: the whole compound is).
tenex::FusedParams compound_program(int outer, int left, int right, bool scaled, bool with_constant, bool only_b) {
  using tenex::FusedOp;
  const FusedOp ops[] = {FusedOp::add, FusedOp::subtract, FusedOp::multiply, FusedOp::divide};
  tenex::FusedParams p;
  p.program = {{FusedOp::load, 0, 0, 0, 0},
               {FusedOp::load, 1, 0, 0, 0},
               {FusedOp::constant, 0, 0, 0.75, 0},
               {FusedOp::constant, 0, 0, -1.5, 0}};
  auto push = [&](tenex::FusedInstr in) {
    p.program.push_back(in);
    return static_cast<std::uint32_t>(p.program.size() - 1);
  };
  auto value = [&](std::uint32_t v) { return scaled ? push({FusedOp::multiply, v, 3, 0, 0}) : v; };
  auto side = [&](int op, std::uint32_t x, std::uint32_t y) {
    if (op == 4) return x;
    const std::uint32_t vx = value(x), vy = value(y);
    return push({ops[op], vx, vy, 0, 0});
  };
  const std::uint32_t l = side(left, only_b ? 1 : 0, only_b ? 2 : 1);
  const std::uint32_t r = side(right, 1, with_constant ? 2 : 0);
  push({ops[outer], l, r, 0, 0});
  return p;
}

}  // namespace

// The fused kernel's result of `p` on case `c`, on every SIMD target at one and two threads,
// bit for bit the program's value one point at a time (FusedCase::value).
template <class T>
void check_fused_bits(const FusedCase<T>& c, const tenex::FusedParams& p) {
  std::vector<T> want(c.ni * c.nj);
  for (std::size_t i = 0; i < c.ni; ++i) {
    for (std::size_t j = 0; j < c.nj; ++j) want[i * c.nj + j] = FusedCase<T>::value(p, c.a[i * c.nj + j], c.b_at(i, j));
  }
  for_each_simd_target([&] {
    at_one_and_two_threads([&] {
      const std::vector<T> out = c.run(p, Modes{0, 1});
      std::size_t bad = 0;
      for (std::size_t x = 0; x < out.size(); ++x) bad += same_value(out[x], want[x]) ? 0 : 1;
      CHECK(bad == 0);
    });
  });
}

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the fused kernel's compound instructions on every SIMD target", T,
                          cpu_kernels_fused_compounds) {
  // Every compound the kernel runs in one loop (4 outer operations x 5 x 5 sides, scaled
  // values, constants, a whole compound of values uniform on the strip), on a(i, j) and
  // b(j, i) or b(i), odd extents, NaN, Inf and zeros: the same bits as the instructions one
  // at a time in the table's scalar definitions.
  std::mt19937 rng(73);
  std::vector<tenex::FusedParams> programs;
  for (int outer = 0; outer < 4; ++outer) {
    for (int left = 0; left < 5; ++left) {
      for (int right = 0; right < 5; ++right) {
        for (const bool scaled : {false, true}) {
          for (const bool with_constant : {false, true}) {
            for (const bool only_b : {false, true}) {
              programs.push_back(compound_program(outer, left, right, scaled, with_constant, only_b));
            }
          }
        }
      }
    }
  }
  // 130 x 257 runs on two threads (past kFusedParallelMin points), 3 x 17 on one.
  for (const auto& [ni, nj] : {std::pair<std::size_t, std::size_t>{3, 17}, {130, 257}}) {
    for (const bool broadcast : {false, true}) {
      const FusedCase<T> c{ni, nj, broadcast, values_with_specials<T>(ni * nj, rng),
                           values_with_specials<T>(broadcast ? ni : ni * nj, rng)};
      for (std::size_t k = 0; k < programs.size(); ++k) {
        if (k % 2 == 1 && !broadcast) continue;  // only b: uniform on the strip where b is b(i)
        const tenex::FusedParams& p = programs[k];
        INFO("program ", k, " (outer, left, right, scaled, constant, only b: compound_program), extents ", ni, " x ",
             nj, std::string(broadcast ? " b(i)" : " b(j,i)"));
        check_fused_bits(c, p);
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_fused_compounds, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: the fused kernel streams a large result past the caches", T,
                          cpu_kernels_fused_streamed) {
  // A result over 32 MB that is only written takes streamed stores (whole vectors, rows that
  // start off a vector's alignment): a + 2 b - a / b(i), the same bits as one point at a time.
  std::mt19937 rng(74);
  const std::size_t ni = sizeof(T) == 8 ? 2051 : 2901, nj = sizeof(T) == 8 ? 2053 : 2903;
  REQUIRE(ni * nj * sizeof(T) > (std::size_t{32} << 20));
  const FusedCase<T> c{ni, nj, true, values_with_specials<T>(ni * nj, rng), values_with_specials<T>(ni, rng)};
  tenex::FusedParams p;
  p.program = {{tenex::FusedOp::load, 0, 0, 0, 0},     {tenex::FusedOp::load, 1, 0, 0, 0},
               {tenex::FusedOp::constant, 0, 0, 2, 0}, {tenex::FusedOp::multiply, 1, 2, 0, 0},
               {tenex::FusedOp::add, 0, 3, 0, 0},      {tenex::FusedOp::divide, 0, 1, 0, 0},
               {tenex::FusedOp::subtract, 4, 5, 0, 0}};
  check_fused_bits(c, p);
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_fused_streamed, Scalars);

TEST_CASE("cpu kernels: a timed candidate's scratch is faulted in and waits in the block cache") {
  // c(i,j,l) = a(k,i,l) b(k,j): a of 2 MiB and c of 3 MiB, whose blocks the cache keeps (b, of
  // 48 KiB, is left to malloc). Before the plan search times a candidate, prefault_scratch
  // takes the blocks the plan will take, writes them, and gives them back: the cache then
  // holds at least the size of each one that it keeps.
  namespace contraction = cpu::contraction;
  const Extents a_extents{64, 128, 32}, b_extents{64, 96};
  const Modes a_modes{0, 1, 3}, b_modes{0, 2}, c_modes{1, 2, 3};
  const contraction::Prepared prepared =
      contraction::prepare(sizeof(double), true, a_extents, a_modes, b_extents, b_modes, c_modes);
  const contraction::Problem& p = prepared.problem;
  const std::vector<contraction::Plan>& plans = contraction::all_plans(p, prepared.flops);
  constexpr std::size_t kCachedBytes = std::size_t{1} << 20;
  auto kept = [](std::size_t elements) {
    const std::size_t bytes = elements * sizeof(double);
    return bytes >= kCachedBytes ? bytes : 0;
  };
  bool buffered = false, permuted = false;
  for (const contraction::Plan& any : plans) {
    if (!any.gemm()) continue;  // the plain loops take none; the other kernels, one small panel
    const contraction::Gemm& plan = *any.gemm();
    std::size_t least = 0;
    if (plan.output == contraction::Output::buffered) least += kept(p.size[contraction::kC]);
    if (plan.output != contraction::Output::tiled || !plan.tile_pack) {
      // Packed chunk by chunk: one chunk's buffer.
      auto part = [&](int op) {
        const std::size_t size = p.size[static_cast<std::size_t>(op)];
        if (plan.k_chunk == 0) return size;
        return size / p.extent[static_cast<std::size_t>(plan.gk.front())] * plan.k_chunk;
      };
      if (plan.permute_a) least += kept(part(contraction::kA));
      if (plan.permute_b) least += kept(part(contraction::kB));
    }
    if (least == 0) continue;
    buffered = buffered || plan.output == contraction::Output::buffered;
    permuted = permuted || plan.permute_a;
    tenex::release_cached_memory();
    contraction::prefault_scratch<double>(p, any);
#if defined(__SANITIZE_ADDRESS__)
    CHECK(tenex::cached_memory_bytes() == 0);  // nothing is cached under AddressSanitizer
#else
    INFO(contraction::describe(p, any));
    CHECK(tenex::cached_memory_bytes() >= least);
#endif
  }
  CHECK(buffered);
  CHECK(permuted);
  tenex::release_cached_memory();
}

TEST_CASE("cpu kernels: the plan search times the fewest GEMM calls and each way to write c") {
  // The candidates contract() times on a shape's first call: the model's cheapest first, at
  // most kPlansTried, no two alike; where the cheapest makes many GEMM calls, the cheapest
  // plan with the fewest calls among those within kCandidateSpread (tccg15: 170 GEMMs of
  // 161 x 161 x 170 in place, or one of 27370 x 161 x 170 into a buffer); and each way to
  // write c (direct, or buffered or tiled in either order) within kOutputSpread of the
  // cheapest (piov,iovd->pd: c buffered with its order flipped ran 1.6x faster than the
  // model's direct choice).
  namespace contraction = cpu::contraction;
  struct Shape {
    Extents a_extents, b_extents;
    Modes a_modes, b_modes, c_modes;
  };
  const std::vector<Shape> shapes{
      // acd,db->abc, a=170, b=161, c=161, d=170
      {{170, 161, 170}, {170, 161}, {0, 2, 3}, {3, 1}, {0, 1, 2}},
      // piov,iovd->pd, p=2457, i=34, o=15, v=5, d=13
      {{2457, 34, 15, 5}, {34, 15, 5, 13}, {0, 1, 2, 3}, {1, 2, 3, 4}, {0, 4}},
  };
  for (const Shape& shape : shapes) {
    const contraction::Prepared prepared = contraction::prepare(sizeof(double), true, shape.a_extents, shape.a_modes,
                                                                shape.b_extents, shape.b_modes, shape.c_modes);
    const contraction::Problem& p = prepared.problem;
    const std::vector<contraction::Plan> candidates =
        cpu::plan_search::candidate_plans(p, prepared.flops, cpu::plan_search::kPlansTried);
    const std::vector<contraction::Plan>& plans = contraction::all_plans(p, prepared.flops);
    REQUIRE(!candidates.empty());
    CHECK(candidates.size() <= cpu::plan_search::kPlansTried);
    const contraction::Plan& best = candidates.front();
    REQUIRE(!best.naive());
    auto calls = [&](const contraction::Plan& plan) {
      const contraction::Gemm& x = contraction::memory_layout(plan);
      std::size_t all = 1;
      for (std::size_t e : p.extent) all *= e;
      return all /
             (contraction::extent_of(p, x.gm) * contraction::extent_of(p, x.gn) * contraction::extent_of(p, x.gk));
    };
    std::size_t fewest_near = calls(best);
    for (const contraction::Plan& plan : plans) {
      if (plan.naive()) continue;
      CHECK(plan.seconds >= best.seconds);
      if (plan.seconds <= best.seconds * cpu::plan_search::kCandidateSpread) {
        fewest_near = std::min(fewest_near, calls(plan));
      }
      if (plan.seconds > best.seconds * cpu::plan_search::kOutputSpread) continue;
      const contraction::Gemm& layout = contraction::memory_layout(plan);
      const bool written = std::any_of(candidates.begin(), candidates.end(), [&](const contraction::Plan& x) {
        return contraction::memory_layout(x).output == layout.output &&
               contraction::memory_layout(x).flip_c == layout.flip_c;
      });
      INFO(contraction::describe(p, plan));
      CHECK(written);
    }
    std::size_t fewest = calls(best);
    for (const contraction::Plan& x : candidates) fewest = std::min(fewest, calls(x));
    CHECK(fewest <= fewest_near);
    for (std::size_t x = 0; x < candidates.size(); ++x) {
      for (std::size_t y = 0; y < x; ++y) {
        CHECK(contraction::describe(p, candidates[x]) != contraction::describe(p, candidates[y]));
      }
    }
  }
}

TEST_CASE("cpu kernels: a small problem's search times more candidates, the cheapest by the model among them") {
  // zwktf,zfhap->hwkapt (rand126: 0.04 GFLOP, under a millisecond): with the first call's
  // search time to spend, the candidates go on past kPlansTried with the plans the model ranks
  // next (as many as fit in that time, at most kPlansTriedSmall), no two alike; a problem of
  // 1.5 GFLOP (tccg15) keeps kPlansTried.
  namespace contraction = cpu::contraction;
  constexpr double search_seconds = 20e-3;
  const TwoThreads threads;
  {
    const contraction::Prepared prepared =
        contraction::prepare(sizeof(double), true, {18, 12, 4, 6, 15}, {0, 1, 2, 3, 4}, {18, 15, 5, 6, 8},
                             {0, 4, 5, 6, 7}, {5, 1, 2, 6, 7, 3});
    const contraction::Problem& p = prepared.problem;
    const std::vector<contraction::Plan> few =
        cpu::plan_search::candidate_plans(p, prepared.flops, cpu::plan_search::kPlansTried);
    const std::vector<contraction::Plan> many =
        cpu::plan_search::candidate_plans(p, prepared.flops, cpu::plan_search::kPlansTried, search_seconds);
    REQUIRE(!many.empty());
    REQUIRE(!many.front().naive());
    CHECK(few.size() <= cpu::plan_search::kPlansTried);
    const double fit = std::min(search_seconds / many.front().seconds, double(cpu::plan_search::kPlansTriedSmall));
    if (threads.held) CHECK(fit > double(cpu::plan_search::kPlansTried));  // small enough to search wider
    CHECK(many.size() <= cpu::plan_search::kPlansTriedSmall);
    // The first few are the same as without the wider search.
    for (std::size_t x = 0; x < few.size(); ++x) {
      CHECK(contraction::describe(p, few[x]) == contraction::describe(p, many[x]));
    }
    std::vector<std::string> texts;
    for (const contraction::Plan& x : many) texts.push_back(contraction::describe(p, x));
    for (std::size_t x = 0; x < texts.size(); ++x) {
      for (std::size_t y = 0; y < x; ++y) CHECK(texts[x] != texts[y]);
    }
    // Every plan within kOutputSpread of the cheapest, cheapest first (all_plans has them all).
    std::vector<const contraction::Plan*> near;
    for (const contraction::Plan& plan : contraction::all_plans(p, prepared.flops)) {
      if (!plan.naive() && plan.seconds <= many.front().seconds * cpu::plan_search::kOutputSpread)
        near.push_back(&plan);
    }
    std::stable_sort(near.begin(), near.end(), [](auto* x, auto* y) { return x->seconds < y->seconds; });
    const std::size_t expected = std::min(static_cast<std::size_t>(fit), near.size());
    CHECK(many.size() >= expected);
    // The plans the model ranks first are all among them (the filler takes the cheapest left).
    for (std::size_t x = 0; x + cpu::plan_search::kPlansTried < expected; ++x) {
      const std::string text = contraction::describe(p, *near[x]);
      INFO(text);
      CHECK(std::find(texts.begin(), texts.end(), text) != texts.end());
    }
  }
  {
    const contraction::Prepared prepared =
        contraction::prepare(sizeof(double), true, {170, 161, 170}, {0, 2, 3}, {170, 161}, {3, 1}, {0, 1, 2});
    CHECK(cpu::plan_search::candidate_plans(prepared.problem, prepared.flops, cpu::plan_search::kPlansTried,
                                            search_seconds)
              .size() <= cpu::plan_search::kPlansTried);
  }
}

TEST_CASE_TEMPLATE_DEFINE("cpu kernels: an operand packed chunk by chunk along k gives the right result", T,
                          cpu_kernels_contract_chunks) {
  // acd,dbc->ab (tccg13's shape): b holds k = (c, d) with b between them, so a plan permutes
  // b, whole or (Gemm::k_chunk) chunk by chunk along c while a is read as it is. With c = 7
  // and chunks of 4, the last chunk is shorter. Every plan runs, with beta 0 and with beta
  // that reads c, against the reference.
  std::mt19937 rng(29);
  std::vector<std::size_t> extent_of(26, 1);
  extent_of['a' - 'a'] = 5;
  extent_of['b' - 'a'] = 4;
  extent_of['c' - 'a'] = 7;
  extent_of['d' - 'a'] = 3;
  const Problem p = parse("acd,dbc->ab", extent_of);
  namespace contraction = cpu::contraction;
  const contraction::Prepared prepared =
      contraction::prepare(sizeof(T), true, p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes);
  const std::vector<contraction::Plan>& plans = contraction::all_plans(prepared.problem, prepared.flops);
  bool direct = false, buffered = false;
  for (const contraction::Plan& any : plans) {
    if (!any.gemm() || any.gemm()->k_chunk == 0) continue;
    const contraction::Gemm& plan = *any.gemm();
    CHECK(plan.permute_a != plan.permute_b);
    CHECK(plan.output != contraction::Output::tiled);
    CHECK(plan.k_chunk < prepared.problem.extent[static_cast<std::size_t>(plan.gk.front())]);
    CHECK(contraction::describe(prepared.problem, any).find("at a time") != std::string::npos);
    direct = direct || plan.output == contraction::Output::direct;
    buffered = buffered || plan.output == contraction::Output::buffered;
  }
  CHECK(direct);
  CHECK(buffered);
  CHECK(check_contract<T>(p, rng, T(1), T(0), true) ==
        cpu::contract_plan_count<T>(p.a_ext, p.a_modes, p.b_ext, p.b_modes, p.c_modes, true) + 1);
  CHECK(check_contract<T>(p, rng, T(-2), T(0.5), true) > 1);
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_contract_chunks, Scalars);

TEST_CASE("cpu kernels: a large operand is packed in chunks of a few MiB that read whole cache lines") {
  // tccg13 at full size (b: 170 x 161 x 161 doubles, 35 MB): the model's list holds plans
  // that pack b chunk by chunk along c (its fastest mode), each chunk at most a few MiB and
  // reading runs of 16 or more values of c; the model puts the cheapest of them ahead of
  // every plan that permutes b whole.
  namespace contraction = cpu::contraction;
  const TwoThreads threads;
  const contraction::Prepared prepared =
      contraction::prepare(sizeof(double), true, {170, 161, 170}, {0, 2, 3}, {170, 161, 161}, {3, 1, 2}, {0, 1});
  const contraction::Problem& p = prepared.problem;
  const std::vector<contraction::Plan>& plans = contraction::all_plans(p, prepared.flops);
  double chunked = std::numeric_limits<double>::infinity(), whole = chunked;
  for (const contraction::Plan& any : plans) {
    if (!any.gemm()) continue;
    const contraction::Gemm& plan = *any.gemm();
    if (!plan.permute_b || plan.permute_a || plan.output == contraction::Output::tiled) continue;
    if (plan.k_chunk > 0) {
      INFO(contraction::describe(p, any));
      const std::size_t bytes =
          p.size[contraction::kB] / p.extent[static_cast<std::size_t>(plan.gk.front())] * plan.k_chunk * 8;
      CHECK(bytes <= std::size_t{8} << 20);
      CHECK(plan.k_chunk >= 16);
      chunked = std::min(chunked, any.seconds);
    } else {
      whole = std::min(whole, any.seconds);
    }
  }
  if (threads.held) CHECK(chunked < whole);
}

// Complex contractions: every candidate plan (GEMM plans that read an operand in place, with
// ConjTrans/ConjNoTrans, or lay it out afresh; the plain loops) with either operand, both or
// neither read conjugated, against loops in std::complex<double>.
TEST_CASE_TEMPLATE_DEFINE("cpu kernels: complex contractions with conjugated operands, every plan", T,
                          cpu_kernels_complex_conj) {
  using C = std::complex<double>;
  struct Shape {
    Extents a_ext;
    Modes a_modes;
    Extents b_ext;
    Modes b_modes;
    Modes c_modes;
  };
  // Modes: 0 = i, 1 = j, 2 = k, 3 = l (extents 5, 6, 4, 3).
  const std::size_t ext[] = {5, 6, 4, 3};
  const std::vector<Shape> shapes = {
      {{5, 4}, {0, 2}, {4, 6}, {2, 1}, {0, 1}},                // a(i,k) b(k,j) -> c(i,j)
      {{4, 5}, {2, 0}, {6, 4}, {1, 2}, {1, 0}},                // a(k,i) b(j,k) -> c(j,i)
      {{5, 3, 4}, {0, 3, 2}, {4, 6, 3}, {2, 1, 3}, {1, 0}},    // two summed modes, a permuted
      {{3, 5, 4}, {3, 0, 2}, {4, 3, 6}, {2, 3, 1}, {0, 3, 1}}  // l a batch mode
  };
  std::mt19937 rng(71);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const Shape& sh = shapes[s];
    CAPTURE(s);
    auto fill = [&](const Extents& e) {
      std::size_t n = 1;
      for (std::size_t x : e) n *= x;
      std::vector<T> v(n);
      for (T& x : v) x = T(static_cast<typename T::value_type>(u(rng)), static_cast<typename T::value_type>(u(rng)));
      return v;
    };
    const std::vector<T> a = fill(sh.a_ext), b = fill(sh.b_ext);
    Extents c_ext;
    for (int m : sh.c_modes) c_ext.push_back(ext[m]);
    const std::size_t plans = cpu::contract_plan_count<T>(sh.a_ext, sh.a_modes, sh.b_ext, sh.b_modes, sh.c_modes, true);
    std::vector<std::size_t> plain_calls(plans);  // each plan's kernel calls without conj
    for (int variant = 0; variant < 4; ++variant) {
      const cpu::Conjugated conj{(variant & 1) != 0, (variant & 2) != 0};
      // The reference: sum over every index combination.
      std::size_t c_size = 1;
      for (std::size_t e : c_ext) c_size *= e;
      std::vector<C> expected(c_size, C(0));
      std::size_t idx[4];
      for (idx[0] = 0; idx[0] < ext[0]; ++idx[0]) {
        for (idx[1] = 0; idx[1] < ext[1]; ++idx[1]) {
          for (idx[2] = 0; idx[2] < ext[2]; ++idx[2]) {
            for (idx[3] = 0; idx[3] < ext[3]; ++idx[3]) {
              auto flat = [&](const Modes& modes, const Extents& e) {
                std::size_t f = 0;
                for (std::size_t d = 0; d < modes.size(); ++d) f = f * e[d] + idx[modes[d]];
                return f;
              };
              // Modes on no operand (j for a(i,k) b(k,...)) do not multiply the sum: only the
              // combinations whose unused modes are 0 count.
              bool used[4] = {false, false, false, false};
              for (int m : sh.a_modes) used[m] = true;
              for (int m : sh.b_modes) used[m] = true;
              bool skip = false;
              for (int m = 0; m < 4; ++m) skip = skip || (!used[m] && idx[m] != 0);
              if (skip) continue;
              C x(a[flat(sh.a_modes, sh.a_ext)]), y(b[flat(sh.b_modes, sh.b_ext)]);
              if (conj.a) x = std::conj(x);
              if (conj.b) y = std::conj(y);
              expected[flat(sh.c_modes, c_ext)] += x * y;
            }
          }
        }
      }
      for (std::size_t plan = 0; plan < plans; ++plan) {
        CAPTURE(variant);
        CAPTURE(plan);
        std::vector<T> c(c_size, T(7, 7));
        const std::size_t calls = cpu::contract_with_plan(plan, T(1), a.data(), sh.a_ext, sh.a_modes, b.data(),
                                                          sh.b_ext, sh.b_modes, T(0), c.data(), sh.c_modes, conj)
                                      .calls;
        // A GEMM plan reads a conjugated operand conjugated, in place or from its laid-out copy:
        // no pass of its own (the plain loops alone read a conjugated copy).
        if (variant == 0) {
          plain_calls[plan] = calls;
        } else if (cpu::contract_plan_description<T>(plan, sh.a_ext, sh.a_modes, sh.b_ext, sh.b_modes, sh.c_modes, true)
                       .find("plain loops") == std::string::npos) {
          CHECK(calls == plain_calls[plan]);
        }
        double worst = 0;
        for (std::size_t x = 0; x < c_size; ++x) {
          worst = std::max(worst, std::abs(C(c[x].real(), c[x].imag()) - expected[x]));
        }
        CHECK(worst <= (std::is_same_v<T, std::complex<float>> ? 1e-4 : 1e-12));
      }
    }
  }
}
TEST_CASE_TEMPLATE_APPLY(cpu_kernels_complex_conj, std::tuple<std::complex<float>, std::complex<double>>);
