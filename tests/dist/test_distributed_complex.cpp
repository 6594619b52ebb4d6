// Complex tensors on the distributed backend against the CPU backend: every rank builds the
// same sets (SPMD) and checks its own elements. Products with conj on either factor (read in
// place, transposed, swapped, batched, remapped), element-wise work, and the Hermitian linear
// algebra (L L^H = A, H V = V diag(w), Q R, U S V^H), on the grids of test_distributed.cpp.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <string>
#include <vector>

#include "support.hpp"
#include "tenex/tenex.hpp"

using tenex::BackendKind;
using tenex::Shape;
using tenex::Tensor;
using tenex::dist::Context;
using tenex::dist::DistributedTensor;
using tenex_test::dist::grids;
using tenex_test::dist::local_mismatches;
using tenex_test::dist::offset;
using tenex_test::dist::world_size;

namespace {

struct OnDistributed {
  OnDistributed() { tenex::set_default_backend(BackendKind::distributed); }
  ~OnDistributed() { tenex::set_default_backend(BackendKind::cpu); }
};

template <class C>
Tensor<C> random(Shape shape, std::uint64_t seed) {
  Tensor<C> t(std::move(shape));
  tenex::fill_random(t, seed);  // both parts random
  return t;
}

/// The relative tolerance of results of element type C.
template <class C>
double tolerance() {
  return std::is_same_v<C, std::complex<float>> ? 2e-4 : 1e-10;
}

template <class C>
double max_abs_difference(const Tensor<C>& a, const Tensor<C>& b) {
  if (!(a.shape() == b.shape())) return 1e300;
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    worst = std::max(worst, static_cast<double>(std::abs(a.data()[k] - b.data()[k])));
  return worst;
}

/// A Hermitian positive definite matrix: a a^H + n I (on the CPU backend).
template <class C>
Tensor<C> hpd(std::size_t n, std::uint64_t seed) {
  Tensor<C> a = random<C>({n, n}, seed), h;
  h("i,j") = a("i,k") * tenex::conj(a("j,k"));
  for (std::size_t i = 0; i < n; ++i) h.at(i, i) += C(static_cast<float>(n));
  return h;
}

/// The reference of every product: plain loops, c(i,j) = sum_k op(a)(i,k) op(b)(k,j), to
/// check that the CPU backend's results the distributed ones are compared with are right.
template <class C>
Tensor<C> naive_product(const Tensor<C>& a, bool conj_a, const Tensor<C>& b, bool conj_b) {
  const std::size_t m = a.shape().extent(0), k = a.shape().extent(1), n = b.shape().extent(1);
  Tensor<C> c({m, n});
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      C s(0);
      for (std::size_t x = 0; x < k; ++x) {
        const C u = conj_a ? std::conj(a.at(i, x)) : a.at(i, x), v = conj_b ? std::conj(b.at(x, j)) : b.at(x, j);
        s += u * v;
      }
      c.at(i, j) = s;
    }
  }
  return c;
}

}  // namespace

TEST_CASE_TEMPLATE("dist complex: products with conj on either factor match the CPU backend", C, std::complex<float>,
                   std::complex<double>) {
  using DC = DistributedTensor<C>;
  const double tol = tolerance<C>();
  Tensor<C> a = random<C>({7, 5}, 1), b = random<C>({5, 9}, 2), at = random<C>({5, 7}, 3), bt = random<C>({9, 5}, 4);
  Tensor<C> x = random<C>({3, 4, 5}, 5), y = random<C>({3, 5, 6}, 6);
  Tensor<C> q1 = random<C>({6, 3, 4}, 7), q2 = random<C>({6, 2, 5}, 8), sq = random<C>({5, 5}, 9);
  // The references on the CPU backend, statement for statement.
  Tensor<C> r_ca, r_cb, r_cat, r_cbt, r_ji, r_ji2, r_batch, r_four, r_gram, r_scaled, r_acc;
  r_ca("i,j") = tenex::conj(a("i,k")) * b("k,j");  // read in place: conjugated in a copy
  r_cb("i,j") = a("i,k") * tenex::conj(b("k,j"));
  r_cat("i,j") = tenex::conj(at("k,i")) * b("k,j");  // stored transposed: 'C'
  r_cbt("i,j") = a("i,k") * tenex::conj(bt("j,k"));
  r_ji("j,i") = tenex::conj(a("i,k")) * b("k,j");  // C^T = B^T conj(A)^T: operands swap
  r_ji2("j,i") = tenex::conj(at("k,i")) * tenex::conj(b("k,j"));
  r_batch("p,i,j") = tenex::conj(x("p,i,k")) * y("p,k,j");     // batched (p?gemr2d blocks)
  r_four("i,a,j,b") = q1("Q,i,a") * tenex::conj(q2("Q,j,b"));  // remapped operands
  r_gram("i,j") = tenex::conj(sq("k,i")) * sq("k,j");          // one tensor on both sides: a^H a
  r_scaled("i,j") = C(0.5f, -2.0f) * a("i,k") * tenex::conj(b("k,j"));
  r_acc = r_ca;
  r_acc("i,j") += 2.0 * tenex::conj(a("i,k")) * b("k,j");
  // The CPU references against plain loops (conj placement included).
  CHECK(max_abs_difference(r_ca, naive_product(a, true, b, false)) < tol * 10);
  CHECK(max_abs_difference(r_cb, naive_product(a, false, b, true)) < tol * 10);
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DC da = DC::from_replicated(ctx, a), db = DC::from_replicated(ctx, b), dat = DC::from_replicated(ctx, at),
       dbt = DC::from_replicated(ctx, bt), dx = DC::from_replicated(ctx, x), dy = DC::from_replicated(ctx, y),
       dq1 = DC::from_replicated(ctx, q1), dq2 = DC::from_replicated(ctx, q2), dsq = DC::from_replicated(ctx, sq);
    DC ca(ctx), cb(ctx), cat(ctx), cbt(ctx), ji(ctx), ji2(ctx), batch(ctx), four(ctx), gram(ctx), scaled(ctx), acc(ctx);
    ca("i,j") = tenex::conj(da("i,k")) * db("k,j");
    cb("i,j") = da("i,k") * tenex::conj(db("k,j"));
    cat("i,j") = tenex::conj(dat("k,i")) * db("k,j");
    cbt("i,j") = da("i,k") * tenex::conj(dbt("j,k"));
    ji("j,i") = tenex::conj(da("i,k")) * db("k,j");
    ji2("j,i") = tenex::conj(dat("k,i")) * tenex::conj(db("k,j"));
    batch("p,i,j") = tenex::conj(dx("p,i,k")) * dy("p,k,j");
    four("i,a,j,b") = dq1("Q,i,a") * tenex::conj(dq2("Q,j,b"));
    gram("i,j") = tenex::conj(dsq("k,i")) * dsq("k,j");
    scaled("i,j") = C(0.5f, -2.0f) * da("i,k") * tenex::conj(db("k,j"));
    acc = DC::from_replicated(ctx, r_ca);
    acc("i,j") += 2.0 * tenex::conj(da("i,k")) * db("k,j");
    CHECK(local_mismatches(ca, r_ca, tol) == 0);
    CHECK(local_mismatches(cb, r_cb, tol) == 0);
    CHECK(local_mismatches(cat, r_cat, tol) == 0);
    CHECK(local_mismatches(cbt, r_cbt, tol) == 0);
    CHECK(local_mismatches(ji, r_ji, tol) == 0);
    CHECK(local_mismatches(ji2, r_ji2, tol) == 0);
    CHECK(local_mismatches(batch, r_batch, tol) == 0);
    CHECK(local_mismatches(four, r_four, tol) == 0);
    CHECK(local_mismatches(gram, r_gram, tol) == 0);
    CHECK(local_mismatches(scaled, r_scaled, tol) == 0);
    CHECK(local_mismatches(acc, r_acc, tol) == 0);
    // The operands were read, not conjugated in place.
    CHECK(max_abs_difference(da.gather_all(), a) == 0.0);
    CHECK(max_abs_difference(dsq.gather_all(), sq) == 0.0);
    // Plain complex tensors in and out run on the distributed backend too.
    Tensor<C> plain;
    plain("i,j") = tenex::conj(at("k,i")) * b("k,j");
    CHECK(max_abs_difference(plain, r_cat) < tol * 10);
  }
}

TEST_CASE_TEMPLATE("dist complex: element-wise work and sums match the CPU backend", C, std::complex<float>,
                   std::complex<double>) {
  using DC = DistributedTensor<C>;
  const double tol = tolerance<C>();
  Tensor<C> a = random<C>({6, 5}, 11), b = random<C>({5, 6}, 12), e = random<C>({6}, 13), f = random<C>({5}, 14);
  Tensor<C> t = random<C>({4, 3, 5}, 15);
  Tensor<C> r_add, r_div, r_scale, r_fn, r_conj, r_sum, r_total, r_perm, r_map;
  r_add("i,j") = a("i,j") - C(0, 1) * b("j,i");
  r_div("i,j") = a("i,j") / (e("i") - f("j") + 3.0);
  r_scale("i,j") = C(-1.5f, 0.25f) * a("i,j");
  r_fn("i,j") = tenex::exp(a("i,j")) + tenex::sqrt(b("j,i")) * tenex::conj(e("i"));
  r_conj("j,i") = tenex::conj(a("i,j"));
  r_sum("i") = tenex::sum(t("i,j,k"), "j,k");
  r_total("") = t("i,j,k") * tenex::conj(t("i,j,k"));
  r_perm("k,i,j") = t("i,j,k");
  r_map("i,j") = tenex::map(a("i,j"), "square_plus_i", [](C v) { return v * v + C(0, 1); });
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DC da = DC::from_replicated(ctx, a), db = DC::from_replicated(ctx, b), de = DC::from_replicated(ctx, e),
       df = DC::from_replicated(ctx, f), dt = DC::from_replicated(ctx, t);
    DC add(ctx), div(ctx), scale(ctx), fn(ctx), conj(ctx), sum(ctx), total(ctx), perm(ctx), mapped(ctx);
    add("i,j") = da("i,j") - C(0, 1) * db("j,i");
    div("i,j") = da("i,j") / (de("i") - df("j") + 3.0);
    scale("i,j") = C(-1.5f, 0.25f) * da("i,j");
    fn("i,j") = tenex::exp(da("i,j")) + tenex::sqrt(db("j,i")) * tenex::conj(de("i"));
    conj("j,i") = tenex::conj(da("i,j"));
    sum("i") = tenex::sum(dt("i,j,k"), "j,k");
    total("") = dt("i,j,k") * tenex::conj(dt("i,j,k"));
    perm("k,i,j") = dt("i,j,k");
    mapped("i,j") = tenex::map(da("i,j"), "square_plus_i", [](C v) { return v * v + C(0, 1); });
    CHECK(local_mismatches(add, r_add, tol) == 0);
    CHECK(local_mismatches(div, r_div, tol) == 0);
    CHECK(local_mismatches(scale, r_scale, tol) == 0);
    CHECK(local_mismatches(fn, r_fn, tol) == 0);
    CHECK(local_mismatches(conj, r_conj, tol) == 0);
    CHECK(local_mismatches(sum, r_sum, tol) == 0);
    CHECK(local_mismatches(total, r_total, tol) == 0);
    CHECK(local_mismatches(perm, r_perm, tol) == 0);
    CHECK(local_mismatches(mapped, r_map, tol) == 0);
    // |t|^2 summed is real and positive.
    const C norm = total.gather_all().data()[0];
    CHECK(norm.real() > 0);
    CHECK(std::abs(norm.imag()) <= tol * norm.real());
  }
}

TEST_CASE_TEMPLATE("dist complex: Cholesky, Hermitian eigen, QR and SVD match the CPU backend", C, std::complex<float>,
                   std::complex<double>) {
  using DC = DistributedTensor<C>;
  const double tol = std::is_same_v<C, std::complex<float>> ? 2e-3 : 1e-9;
  const std::size_t n = 9;
  Tensor<C> a = hpd<C>(n, 21), b = hpd<C>(n, 22), g = random<C>({11, 7}, 23);
  // The CPU backend's factors: Cholesky's is unique (real positive diagonal), eigenvalues
  // are; eigenvectors are up to a phase, so those are checked by their residuals.
  // Eigenvalues and singular values are real: written to real targets.
  using R = typename C::value_type;
  using DR = DistributedTensor<R>;
  Tensor<C> r_l, r_v, r_gv;
  Tensor<R> r_w, r_gw;
  r_l("i,j") = tenex::cholesky(a("i,j"));
  std::make_pair(r_v("i,j"), r_w("j")) = tenex::eigen_solve(a("i,j"));
  std::make_pair(r_gv("i,j"), r_gw("j")) = tenex::eigen_solve(a("i,j"), b("i,j"));
  Tensor<C> eye({n, n}), eye7({7, 7});
  for (std::size_t i = 0; i < n; ++i) eye.at(i, i) = C(1);
  for (std::size_t i = 0; i < 7; ++i) eye7.at(i, i) = C(1);
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    for (int heevr = 0; heevr < 2; ++heevr) {
      setenv("TENEX_DIST_FORCE_SYEVR", heevr ? "1" : "0", 1);
      OnDistributed on;
      DC da = DC::from_replicated(ctx, a), db = DC::from_replicated(ctx, b), dg = DC::from_replicated(ctx, g);
      DC l(ctx), v(ctx), gv(ctx), q(ctx), r(ctx), u(ctx), vt(ctx);
      DR w(ctx), gw(ctx), s(ctx);
      l("i,j") = tenex::cholesky(da("i,j"));
      std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(da("i,j"));
      std::make_pair(gv("i,j"), gw("j")) = tenex::eigen_solve(da("i,j"), db("i,j"));
      tenex::tie(q("i,k"), r("k,j")) = tenex::qr(dg("i,j"));
      auto [su, ss, svt] = tenex::svd(dg("i,j"));
      u("i,k") = su;
      s("k") = ss;
      vt("k,j") = svt;
      // Residuals, on the distributed backend too.
      // Residuals, on the distributed backend too (the real values enter on the CPU).
      DC llh(ctx), hv(ctx), vhv(ctx), agv(ctx), qr_(ctx), qhq(ctx);
      llh("i,j") = l("i,k") * tenex::conj(l("j,k"));
      hv("i,j") = da("i,k") * v("k,j");
      vhv("i,j") = tenex::conj(v("k,i")) * v("k,j");
      agv("i,j") = da("i,k") * gv("k,j");
      qr_("i,j") = q("i,k") * r("k,j");
      qhq("k,l") = tenex::conj(q("i,k")) * q("i,l");
      tenex::set_default_backend(BackendKind::cpu);
      Tensor<C> vg = v.gather_all(), gvg = gv.gather_all(), ug = u.gather_all(), vtg = vt.gather_all();
      Tensor<R> wg = w.gather_all(), gwg = gw.gather_all(), sg = s.gather_all();
      Tensor<C> vw, bgv, usv;
      vw("i,j") = vg("i,j") * tenex::cast<C>(wg("j"));
      bgv("i,j") = b("i,k") * gvg("k,j") * tenex::cast<C>(gwg("j"));
      usv("i,j") = ug("i,k") * tenex::cast<C>(sg("k")) * vtg("k,j");
      CHECK(local_mismatches(l, r_l, tol) == 0);
      CHECK(local_mismatches(llh, a, tol) == 0);
      CHECK(local_mismatches(w, r_w, tol) == 0);
      CHECK(local_mismatches(gw, r_gw, tol) == 0);
      CHECK(max_abs_difference(hv.gather_all(), vw) < tol * 10 * n);
      CHECK(local_mismatches(vhv, eye, tol) == 0);
      CHECK(max_abs_difference(agv.gather_all(), bgv) < tol * 10 * n);
      CHECK(local_mismatches(qr_, g, tol) == 0);
      CHECK(local_mismatches(qhq, eye7, tol) == 0);
      CHECK(max_abs_difference(usv, g) < tol * 10);
      // Singular values descend; the factor's upper triangle is zero.
      const Tensor<C> lf = l.gather_all();
      for (std::size_t k = 1; k < 7; ++k) CHECK(sg.at(k - 1) >= sg.at(k));
      CHECK(lf.at(0, n - 1) == C(0));
    }
    unsetenv("TENEX_DIST_FORCE_SYEVR");
  }
}

TEST_CASE("dist complex: a matrix that is not Hermitian is a NumericalError on every rank") {
  using C = std::complex<double>;
  using DC = DistributedTensor<C>;
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    // Hermitian but for one element above the diagonal: eigen_solve reads both triangles.
    DC skew(ctx, {6, 6}, [](auto& i) {
      if (i[0] == i[1]) return C(4.0 + static_cast<double>(i[0]), 0);
      if (i[0] == 1 && i[1] == 4) return C(0.5, 0.5);
      return i[0] < i[1] ? C(0.1, 0.2) : C(0.1, -0.2);
    });
    DC v(ctx);
    DistributedTensor<double> w(ctx);
    std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(skew("i,j"));
    bool threw = false;
    try {
      v.gather_all();
    } catch (const tenex::NumericalError& e) {
      threw = std::string(e.what()).find("not Hermitian") != std::string::npos;
    }
    CHECK(threw);
    // An imaginary diagonal, which potrf would drop silently.
    DC imaginary(ctx, {5, 5}, [](auto& i) { return i[0] == i[1] ? C(3.0, i[0] == 2 ? 1.0 : 0.0) : C(0); });
    DC l(ctx);
    l("i,j") = tenex::cholesky(imaginary("i,j"));
    CHECK_THROWS_AS(l.gather_all(), tenex::NumericalError);
    // Not positive definite: p?potrf's info, on every rank.
    DC indefinite(ctx, {6, 6}, [](auto& i) { return i[0] == i[1] ? C(i[0] == 3 ? -1.0 : 2.0) : C(0); });
    DC l2(ctx);
    l2("i,j") = tenex::cholesky(indefinite("i,j"));
    CHECK_THROWS_AS(l2.gather_all(), tenex::NumericalError);
    // Still usable afterwards.
    DC c(ctx);
    c("i,j") = tenex::conj(indefinite("k,i")) * indefinite("k,j");
    CHECK(c.gather_all().at(3, 3) == C(1.0));
  }
}
