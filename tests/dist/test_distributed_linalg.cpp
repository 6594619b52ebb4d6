// Matrix functions on the distributed backend (inverse: p?getrf + p?getri, solve: p?gesv,
// pow(a, double): p?syevd / p?heevd and one p?gemm) and sparse maps (masks), for float, double,
// complex<float> and complex<double>, on the grids of test_distributed.cpp (blocks of 2 or 3:
// partial edge blocks). Each result against the CPU backend's and by its identity; the error
// paths (singular, not positive definite, not symmetric, non-finite) as the same
// tenex::NumericalError on every rank, with the CPU's message where the CPU names it alike.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "support.hpp"
#include "tenex/tenex.hpp"

using tenex::BackendKind;
using tenex::Shape;
using tenex::Tensor;
using tenex::dist::Context;
using tenex::dist::DistributedTensor;
using tenex_test::dist::world_size;

namespace {


/// The grids of support.hpp, and a second block size on one rank and a 4 x 1 grid on four.
std::vector<tenex::dist::ContextOptions> grids() { return tenex_test::dist::grids({{1, {1, 1, 3}}, {4, {4, 1, 2}}}); }

struct OnDistributed {
  OnDistributed() { tenex::set_default_backend(BackendKind::distributed); }
  ~OnDistributed() { tenex::set_default_backend(BackendKind::cpu); }
};

template <class C>
Tensor<C> random(Shape shape, std::uint64_t seed) {
  Tensor<C> t(std::move(shape));
  tenex::fill_random(t, seed);
  return t;
}

/// The relative tolerance of results of element type C (well-conditioned matrices of order < 10).
template <class C>
double tolerance() {
  return std::is_same_v<C, float> || std::is_same_v<C, std::complex<float>> ? 2e-4 : 1e-11;
}

/// Elements of this rank's part of `d` that differ from `reference` by more than tol * (1 +
/// |reference|) (and a shape mismatch), summed over the ranks.
template <class C>
std::size_t mismatches(const DistributedTensor<C>& d, const Tensor<C>& reference, double tol) {
  unsigned long long mine = tenex_test::dist::local_mismatches(d, reference, tol), all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return static_cast<std::size_t>(all);
}

template <class C>
C conj_of(C x) {
  if constexpr (tenex::is_complex_v<C>) {
    return std::conj(x);
  } else {
    return x;
  }
}

template <class C>
Tensor<C> identity(std::size_t n) {
  Tensor<C> eye({n, n});
  for (std::size_t i = 0; i < n; ++i) eye.at(i, i) = C(1);
  return eye;
}

/// A random matrix plus n on the diagonal: invertible, condition number near 1.
template <class C>
Tensor<C> general(std::size_t n, std::uint64_t seed) {
  Tensor<C> a = random<C>({n, n}, seed);
  for (std::size_t i = 0; i < n; ++i) a.at(i, i) += C(static_cast<float>(n));
  return a;
}

/// g g^H + n I: symmetric (Hermitian) positive definite.
template <class C>
Tensor<C> hpd(std::size_t n, std::uint64_t seed) {
  Tensor<C> g = random<C>({n, n}, seed);
  Tensor<C> h({n, n});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      C s = i == j ? C(static_cast<float>(n)) : C(0);
      for (std::size_t k = 0; k < n; ++k) s += g.at(i, k) * conj_of(g.at(j, k));
      h.at(i, j) = s;
    }
  }
  for (std::size_t i = 0; i < n; ++i) h.at(i, i) = C(std::real(h.at(i, i)));
  return h;
}

/// Whether every rank has the same text (rank 0's, broadcast and compared).
bool same_on_every_rank(const std::string& text) {
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root(static_cast<std::size_t>(length), '\0');
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) root = text;
  MPI_Bcast(root.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  int mine = root == text, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

/// The NumericalError message of running `f` (empty when it throws none, "other" when it
/// throws something else).
template <class F>
std::string numerical_error(F&& f) {
  try {
    f();
  } catch (const tenex::NumericalError& e) {
    return e.what();
  } catch (...) {
    return "other";
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE_TEMPLATE("dist linalg: inverse, solve and pow(a, double) match the CPU backend and their identities", C,
                   float, double, std::complex<float>, std::complex<double>) {
  using D = DistributedTensor<C>;
  const double tol = tolerance<C>();
  const std::size_t n = 7;
  Tensor<C> a = general<C>(n, 31), h = hpd<C>(n, 32), b = random<C>({n}, 33), bm = random<C>({n, 5}, 34),
            b3 = random<C>({3, n, 4}, 35), eye = identity<C>(n);
  // The CPU backend's results.
  Tensor<C> r_inv, r_x, r_x2, r_xm, r_x3, r_half, r_mhalf, r_3half, r_minus2;
  r_inv("i,j") = tenex::inverse(a("i,j"));
  r_x("j") = tenex::solve(a("i,j"), b("i"));
  r_x2("i") = tenex::solve(a("i,j"), b("j"));  // the second label: x = a^-1 b all the same
  r_xm("j,r") = tenex::solve(a("i,j"), bm("i,r"));
  r_x3("p,j,q") = tenex::solve(a("i,j"), b3("p,i,q"));
  r_half("i,j") = tenex::pow(h("i,j"), 0.5);
  r_mhalf("i,j") = tenex::pow(h("i,j"), -0.5);
  r_3half("i,j") = tenex::pow(h("i,j"), 1.5);
  r_minus2("i,j") = tenex::pow(a("i,j"), -2);  // inverse, then a product
  for (const auto& options : grids()) {
    CAPTURE(options.grid_rows);
    CAPTURE(options.grid_cols);
    CAPTURE(options.block_size);
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    D da = D::from_replicated(ctx, a), dh = D::from_replicated(ctx, h), db = D::from_replicated(ctx, b),
      dbm = D::from_replicated(ctx, bm), db3 = D::from_replicated(ctx, b3);
    D inv(ctx), x(ctx), x2(ctx), xm(ctx), x3(ctx), half(ctx), mhalf(ctx), three_half(ctx), minus2(ctx);
    inv("i,j") = tenex::inverse(da("i,j"));
    x("j") = tenex::solve(da("i,j"), db("i"));
    x2("i") = tenex::solve(da("i,j"), db("j"));
    xm("j,r") = tenex::solve(da("i,j"), dbm("i,r"));
    x3("p,j,q") = tenex::solve(da("i,j"), db3("p,i,q"));
    half("i,j") = tenex::pow(dh("i,j"), 0.5);
    mhalf("i,j") = tenex::pow(dh("i,j"), -0.5);
    three_half("i,j") = tenex::pow(dh("i,j"), 1.5);
    minus2("i,j") = tenex::pow(da("i,j"), -2);
    CHECK(mismatches(inv, r_inv, tol) == 0);
    CHECK(mismatches(x, r_x, tol) == 0);
    CHECK(mismatches(x2, r_x2, tol) == 0);
    CHECK(mismatches(xm, r_xm, tol) == 0);
    CHECK(mismatches(x3, r_x3, tol) == 0);
    CHECK(mismatches(half, r_half, tol * 10) == 0);
    CHECK(mismatches(mhalf, r_mhalf, tol * 10) == 0);
    CHECK(mismatches(three_half, r_3half, tol * 10) == 0);
    CHECK(mismatches(minus2, r_minus2, tol) == 0);
    // The identities, computed on the distributed backend too.
    D a_inv(ctx), ax(ctx), axm(ctx), ax3(ctx), half2(ctx), half_mhalf(ctx), half3(ctx);
    a_inv("i,k") = da("i,j") * inv("j,k");
    ax("i") = da("i,j") * x("j");
    axm("i,r") = da("i,j") * xm("j,r");
    ax3("p,i,q") = da("i,j") * x3("p,j,q");
    half2("i,k") = half("i,j") * half("j,k");
    half_mhalf("i,k") = half("i,j") * mhalf("j,k");
    half3("i,k") = half2("i,j") * half("j,k");
    CHECK(mismatches(a_inv, eye, tol) == 0);
    CHECK(mismatches(ax, b, tol) == 0);
    CHECK(mismatches(axm, bm, tol) == 0);
    CHECK(mismatches(ax3, b3, tol) == 0);
    CHECK(mismatches(half2, h, tol * 10) == 0);
    CHECK(mismatches(half_mhalf, eye, tol * 10) == 0);
    CHECK(mismatches(half3, r_3half, tol * 10) == 0);
    // The power is exactly symmetric (Hermitian), as on the CPU.
    Tensor<C> hf = half.gather_all();
    bool mirrored = true;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) mirrored = mirrored && hf.at(i, j) == conj_of(hf.at(j, i));
    }
    CHECK(mirrored);
    // The p?syevr (p?heevr) path, which eigen_solve takes when p?syevd's query fails.
    setenv("TENEX_DIST_FORCE_SYEVR", "1", 1);
    D half_evr(ctx);
    half_evr("i,j") = tenex::pow(dh("i,j"), 0.5);
    CHECK(mismatches(half_evr, r_half, tol * 10) == 0);
    unsetenv("TENEX_DIST_FORCE_SYEVR");
  }
}

TEST_CASE_TEMPLATE(
    "dist linalg: singular, indefinite, asymmetric and non-finite matrices are the same "
    "NumericalError on every rank",
    C, float, double, std::complex<float>, std::complex<double>) {
  using D = DistributedTensor<C>;
  using R = tenex::real_type_t<C>;
  const std::size_t n = 6;
  // Row 3 is zero: an exactly zero pivot. Rank 2 (a(i,j) = i + j): singular to working precision.
  const auto zero_row = [](const std::vector<std::size_t>& i) {
    return i[0] == 3 ? C(0) : C(static_cast<float>(i[0] == i[1] ? 4 : 1)) + C(static_cast<float>(i[1]) / 8);
  };
  const auto rank_two = [](const std::vector<std::size_t>& i) { return C(static_cast<float>(i[0] + i[1])); };
  // Diagonal: one eigenvalue -1 (not positive semidefinite), or 0 (singular for negative powers).
  const auto indefinite = [](const std::vector<std::size_t>& i) {
    return i[0] == i[1] ? C(i[0] == 4 ? -1.0f : 2.0f + static_cast<float>(i[0])) : C(0);
  };
  const auto semidefinite = [](const std::vector<std::size_t>& i) {
    return i[0] == i[1] ? C(i[0] == 2 ? 0.0f : 1.0f + static_cast<float>(i[0])) : C(0);
  };
  // Symmetric but for one element above the diagonal.
  const auto asymmetric = [](const std::vector<std::size_t>& i) {
    if (i[0] == 1 && i[1] == 4) return C(0.75f);
    return i[0] == i[1] ? C(4.0f + static_cast<float>(i[0])) : C(0.125f);
  };
  const auto with_nan = [](const std::vector<std::size_t>& i) {
    if (i[0] == 2 && i[1] == 3) return C(std::numeric_limits<R>::quiet_NaN());
    return i[0] == i[1] ? C(3.0f) : C(0);
  };
  // The CPU backend's messages where the distributed backend words them alike.
  auto on_cpu = [&](auto make, auto op) {
    Tensor<C> m({n, n});
    std::vector<std::size_t> index(2);
    for (index[0] = 0; index[0] < n; ++index[0]) {
      for (index[1] = 0; index[1] < n; ++index[1]) m.at(index[0], index[1]) = make(index);
    }
    return numerical_error([&] {
      Tensor<C> r;
      op(r, m);
      r.wait();
    });
  };
  const auto pow_half = [](auto& r, auto& m) { r("i,j") = tenex::pow(m("i,j"), 0.5); };
  const auto pow_mhalf = [](auto& r, auto& m) { r("i,j") = tenex::pow(m("i,j"), -0.5); };
  const auto invert = [](auto& r, auto& m) { r("i,j") = tenex::inverse(m("i,j")); };
  const std::string cpu_indefinite = on_cpu(indefinite, pow_half), cpu_semidefinite = on_cpu(semidefinite, pow_mhalf),
                    cpu_nan = on_cpu(with_nan, invert);
  CAPTURE(cpu_indefinite);
  CAPTURE(cpu_semidefinite);
  CAPTURE(cpu_nan);
  REQUIRE(contains(cpu_indefinite, "not positive semidefinite"));
  REQUIRE(contains(cpu_semidefinite, "singular"));
  REQUIRE(contains(cpu_nan, "non-finite entry (nan) at (2, 3)"));
  for (const auto& options : grids()) {
    CAPTURE(options.grid_rows);
    CAPTURE(options.grid_cols);
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    D ones(ctx, {n}, [](auto&) { return C(1); });
    auto distributed = [&](auto make, auto op) {
      D m(ctx, {n, n}, make);
      return numerical_error([&] {
        D r(ctx);
        op(r, m);
        r.gather_all();
      });
    };
    const std::string zero_pivot = distributed(zero_row, invert);
    CHECK(contains(zero_pivot, "is singular"));
    CHECK(contains(zero_pivot, "is exactly zero"));
    CHECK(same_on_every_rank(zero_pivot));
    const std::string near = distributed(rank_two, invert);
    CHECK(contains(near, "is singular"));
    CHECK(same_on_every_rank(near));
    const std::string solve_zero = numerical_error([&] {
      D m(ctx, {n, n}, zero_row);
      D x(ctx);
      x("j") = tenex::solve(m("i,j"), ones("i"));
      x.gather_all();
    });
    CHECK(contains(solve_zero, "solve: "));
    CHECK(contains(solve_zero, "is singular"));
    CHECK(same_on_every_rank(solve_zero));
    const std::string not_psd = distributed(indefinite, pow_half);
    CHECK(not_psd == cpu_indefinite);
    CHECK(same_on_every_rank(not_psd));
    const std::string singular_power = distributed(semidefinite, pow_mhalf);
    CHECK(singular_power == cpu_semidefinite);
    CHECK(same_on_every_rank(singular_power));
    const std::string asym = distributed(asymmetric, pow_half);
    CHECK(contains(asym, tenex::is_complex_v<C> ? "is not Hermitian" : "is not symmetric"));
    CHECK(same_on_every_rank(asym));
    const std::string nan = distributed(with_nan, invert);
    CHECK(nan == cpu_nan);
    CHECK(same_on_every_rank(nan));
    // The semidefinite matrix has a fractional power of positive exponent (its zero stays 0).
    D semi(ctx, {n, n}, semidefinite);
    D root(ctx);
    root("i,j") = tenex::pow(semi("i,j"), 0.5);
    Tensor<C> rf = root.gather_all();
    CHECK(std::abs(rf.at(2, 2)) < 1e-6);
    CHECK(std::abs(rf.at(3, 3) - C(std::sqrt(R(4)))) < 1e-5);
    // Still usable afterwards.
    D sum(ctx);
    sum("i,j") = semi("i,j") + semi("i,j");
    CHECK(sum.gather_all().at(5, 5) == C(12));
  }
}

TEST_CASE_TEMPLATE("dist linalg: sparse maps zero what they exclude, element-wise on each rank's blocks", C, float,
                   double, std::complex<float>, std::complex<double>) {
  using D = DistributedTensor<C>;
  Tensor<C> a = random<C>({5, 7}, 41), b = random<C>({7, 6}, 42);
  tenex::SparseMap map;  // i -> j
  map.insert({0}, {{1}, {4}});
  map.insert({2}, {{0}, {1}, {2}, {5}});
  map.insert({4}, {{3}});
  tenex::SparseMap pair;  // (i, k) -> j over three modes
  pair.insert({1, 2}, {{0}, {2}});
  pair.insert({3, 6}, {{5}});
  Tensor<C> r_masked, r_product, r_three;
  {
    auto x = a("i,k") * 2.0;
    x.set_sparse_map("i", "k", map);
    r_masked("i,k") = x;
  }
  {
    auto y = a("i,k") * b("k,j");
    y.set_sparse_map("i", "j", map);
    r_product("i,j") = y;
  }
  {
    auto z = a("i,k") * b("k,j");
    z.set_sparse_map("i,k", "j", pair);
    r_three("i,k,j") = z;
  }
  // The reference by its definition: the dense values where the map allows, zero elsewhere.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t k = 0; k < 7; ++k) {
      const bool allowed = map.allows({i}, {k});
      kept += allowed;
      CHECK(r_masked.at(i, k) == (allowed ? a.at(i, k) * C(2) : C(0)));
    }
  }
  CHECK(kept == 7);
  for (const auto& options : grids()) {
    CAPTURE(options.grid_rows);
    CAPTURE(options.grid_cols);
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    D da = D::from_replicated(ctx, a), db = D::from_replicated(ctx, b);
    D masked(ctx), product(ctx), three(ctx);
    {
      auto x = da("i,k") * 2.0;
      x.set_sparse_map("i", "k", map);
      masked("i,k") = x;
    }
    {
      auto y = da("i,k") * db("k,j");
      y.set_sparse_map("i", "j", map);
      product("i,j") = y;
    }
    {
      auto z = da("i,k") * db("k,j");
      z.set_sparse_map("i,k", "j", pair);
      three("i,k,j") = z;
    }
    CHECK(mismatches(masked, r_masked, 0.0) == 0);
    CHECK(mismatches(product, r_product, tolerance<C>()) == 0);
    CHECK(mismatches(three, r_three, tolerance<C>()) == 0);
  }
}
