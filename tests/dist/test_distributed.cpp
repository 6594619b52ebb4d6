// The distributed backend against the CPU backend: every rank builds the same sets (SPMD)
// and checks its own elements. Several process grids per rank count (square and not), with
// blocks of 2 or 3 so that ragged extents leave partial edge blocks.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "support.hpp"
#include "tenex/tenex.hpp"

using tenex::BackendKind;
using tenex::Shape;
using tenex::Tensor;
using tenex::dist::Context;
using tenex::dist::DistributedTensor;
using tenex_test::dist::grids;
using tenex_test::dist::offset;
using tenex_test::dist::world_size;
using DT = DistributedTensor<double>;

namespace {

/// Sets run on the distributed backend while it lives.
struct OnDistributed {
  OnDistributed() { tenex::set_default_backend(BackendKind::distributed); }
  ~OnDistributed() { tenex::set_default_backend(BackendKind::cpu); }
};

Tensor<double> random(Shape shape, std::uint64_t seed) {
  Tensor<double> t(std::move(shape));
  tenex::fill_random(t, seed);
  return t;
}

/// Elements of this rank's part of `d` that differ from `reference` (and a shape mismatch).
std::size_t mismatches(const DT& d, const Tensor<double>& reference, double tol = 1e-10) {
  return tenex_test::dist::local_mismatches(d, reference, tol);
}

double max_abs_difference(const Tensor<double>& a, const Tensor<double>& b) {
  if (!(a.shape() == b.shape())) return 1e300;
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a.data()[k] - b.data()[k]));
  return worst;
}

Tensor<double> spd(std::size_t n, std::uint64_t seed) {
  Tensor<double> a = random({n, n}, seed), s;
  s("i,j") = a("i,k") * a("j,k");
  Tensor<double> eye({n, n});
  for (std::size_t i = 0; i < n; ++i) eye.at(i, i) = static_cast<double>(n);
  Tensor<double> r;
  r("i,j") = s("i,j") + eye("i,j");
  return r;
}

}  // namespace

TEST_CASE("dist: a context makes the grid it is asked for") {
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    CHECK(ctx.size() == world_size());
    CHECK(ctx.grid_rows() * ctx.grid_cols() == ctx.size());
    CHECK(ctx.block_size() == options.block_size);
    CHECK(tenex::dist::context_available());
  }
  tenex::dist::ContextOptions wrong{world_size() + 1, 1, 4};
  CHECK_THROWS_AS(Context(MPI_COMM_WORLD, wrong), tenex::Error);
}

TEST_CASE("dist: tensors from functions, local data and replicated data gather back") {
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    const Shape shape{5, 3, 7};
    auto f = [](const std::vector<std::size_t>& i) { return 100.0 * i[0] + 10.0 * i[1] + i[2]; };
    DT a(ctx, shape, f);
    Tensor<double> full = a.gather_all();
    CHECK(full.shape() == shape);
    CHECK(full.at(4, 2, 6) == 426.0);
    CHECK(full.at(1, 0, 3) == 103.0);
    Tensor<double> on_root = a.gather(0);
    CHECK(on_root.size() == (ctx.rank() == 0 ? shape.size() : 0));
    // From local data: the same layout.
    std::vector<double> local = a.local_data();
    CHECK(local.size() == DT::local_rows_of(ctx, shape) * DT::local_cols_of(ctx, shape));
    DT b = DT::from_local(ctx, shape, local);
    CHECK(max_abs_difference(b.gather_all(), full) == 0.0);
    DT c = DT::from_replicated(ctx, full);
    CHECK(mismatches(c, full) == 0);
    // A wrong local size on one rank is an error on every rank.
    std::vector<double> wrong = local;
    if (ctx.rank() == ctx.size() - 1) wrong.push_back(1.0);
    CHECK_THROWS_AS(DT::from_local(ctx, shape, wrong), tenex::ShapeError);
  }
}

TEST_CASE("dist: reading a tensor that was never given a value is an error on every rank") {
  Context ctx(MPI_COMM_WORLD, grids().front());
  DT never(ctx);
  CHECK_THROWS_WITH_AS(never.gather_all(), doctest::Contains("no value yet"), tenex::Error);
  CHECK_THROWS_WITH_AS(never.gather(0), doctest::Contains("no value yet"), tenex::Error);
  CHECK_THROWS_WITH_AS(never.local_data(), doctest::Contains("no value yet"), tenex::Error);
  // It can still be assigned afterwards.
  const OnDistributed on;
  never("i") = DT(ctx, Shape{4}, [](const std::vector<std::size_t>& i) { return 1.0 + i[0]; })("i");
  CHECK(never.gather_all().at(3) == 4.0);
}

TEST_CASE("dist: contractions match the CPU backend") {
  Tensor<double> a = random({7, 5}, 1), b = random({5, 9}, 2), at = random({5, 7}, 3), bt = random({9, 5}, 4);
  Tensor<double> x = random({3, 4, 5}, 5), y = random({3, 5, 6}, 6);
  Tensor<double> q1 = random({6, 3, 4}, 7), q2 = random({6, 2, 5}, 8);
  Tensor<double> r_ab, r_atb, r_abt, r_ji, r_batch, r_four, r_full, r_acc;
  r_ab("i,j") = a("i,k") * b("k,j");
  r_atb("i,j") = at("k,i") * b("k,j");
  r_abt("i,j") = a("i,k") * bt("j,k");
  r_ji("j,i") = a("i,k") * b("k,j");
  r_batch("p,i,j") = x("p,i,k") * y("p,k,j");
  r_four("i,a,j,b") = q1("Q,i,a") * q2("Q,j,b");
  r_full("") = a("i,k") * at("k,i");
  r_acc = r_ab;
  r_acc("i,j") += 2.0 * a("i,k") * b("k,j");
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DT da = DT::from_replicated(ctx, a), db = DT::from_replicated(ctx, b), dat = DT::from_replicated(ctx, at),
       dbt = DT::from_replicated(ctx, bt), dx = DT::from_replicated(ctx, x), dy = DT::from_replicated(ctx, y),
       dq1 = DT::from_replicated(ctx, q1), dq2 = DT::from_replicated(ctx, q2);
    DT c(ctx), c_atb(ctx), c_abt(ctx), c_ji(ctx), c_batch(ctx), c_four(ctx), c_full(ctx), c_acc(ctx);
    c("i,j") = da("i,k") * db("k,j");
    c_atb("i,j") = dat("k,i") * db("k,j");
    c_abt("i,j") = da("i,k") * dbt("j,k");
    c_ji("j,i") = da("i,k") * db("k,j");
    c_batch("p,i,j") = dx("p,i,k") * dy("p,k,j");
    c_four("i,a,j,b") = dq1("Q,i,a") * dq2("Q,j,b");
    c_full("") = da("i,k") * dat("k,i");
    c_acc = DT::from_replicated(ctx, r_ab);
    c_acc("i,j") += 2.0 * da("i,k") * db("k,j");
    CHECK(mismatches(c, r_ab) == 0);
    CHECK(mismatches(c_atb, r_atb) == 0);
    CHECK(mismatches(c_abt, r_abt) == 0);
    CHECK(mismatches(c_ji, r_ji) == 0);
    CHECK(mismatches(c_batch, r_batch) == 0);
    CHECK(mismatches(c_four, r_four) == 0);
    CHECK(mismatches(c_full, r_full) == 0);
    CHECK(mismatches(c_acc, r_acc) == 0);
    // Plain tensors in and out: every rank gets the whole result.
    Tensor<double> plain;
    plain("i,j") = a("i,k") * b("k,j");
    CHECK(max_abs_difference(plain, r_ab) < 1e-12);
    CHECK(tenex::last_run_stats().flops == doctest::Approx(2.0 * 7 * 9 * 5));
    // Views of the caller's memory in and out, like plain tensors: a strided operand (b stored
    // transposed) and a contiguous target.
    std::vector<double> bt_mem = bt.to_vector(), out_mem(7 * 9, -1.0);
    tenex::TensorView<double> vb(bt_mem.data(), {5, 9}, {1, 5}), vout(out_mem.data(), {7, 9});
    vout("i,j") = a("i,k") * vb("k,j");
    vout.wait();
    CHECK(max_abs_difference(Tensor<double>(tenex::Shape{7, 9}, out_mem), r_abt) < 1e-12);
  }
}

TEST_CASE("dist: element-wise work and reductions match the CPU backend") {
  Tensor<double> a = random({6, 5}, 11), b = random({5, 6}, 12), e = random({6}, 13), f = random({5}, 14);
  Tensor<double> t = random({4, 3, 5}, 15);
  Tensor<double> r_add, r_sub, r_div, r_scale, r_exp, r_sum, r_max, r_norm, r_total, r_slice, r_chip, r_diag, r_perm,
      r_map, r_min;
  r_add("i,j") = a("i,j") + 2.0 * b("j,i");
  r_sub("i,j") = e("i") - f("j");
  r_div("i,j") = a("i,j") / (e("i") - f("j") + 3.0);
  r_scale("i,j") = -3.0 * a("i,j");
  r_exp("i,j") = tenex::exp(a("i,j")) + tenex::sqrt(tenex::abs(b("j,i")));
  r_sum("i") = tenex::sum(t("i,j,k"), "j,k");
  r_max("j") = tenex::max_over(t("i,j,k"), "i,k");
  r_min("") = tenex::min_over(a("i,j"), "i,j");
  r_norm("") = tenex::norm2(a("i,j"));
  r_total("") = tenex::sum(t("i,j,k"), "i,j,k");
  r_slice = Tensor<double>();
  r_slice("i,j,k") = tenex::slice(t("i,j,k"), {1, 0, 2}, {4, 2, 5});
  r_chip("i,k") = tenex::chip(t("i,j,k"), "j", 1);
  Tensor<double> sq = random({5, 5}, 16);
  r_diag("i") = sq("i,i");
  r_perm("k,i,j") = t("i,j,k");
  r_map("i,j") = tenex::map(a("i,j"), "cube", [](double v) { return v * v * v; });
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DT da = DT::from_replicated(ctx, a), db = DT::from_replicated(ctx, b), de = DT::from_replicated(ctx, e),
       df = DT::from_replicated(ctx, f), dt = DT::from_replicated(ctx, t), dsq = DT::from_replicated(ctx, sq);
    DT add(ctx), sub(ctx), div(ctx), scale(ctx), ex(ctx), sum(ctx), mx(ctx), mn(ctx), norm(ctx), total(ctx), slice(ctx),
        chip(ctx), diag(ctx), perm(ctx), mapped(ctx);
    add("i,j") = da("i,j") + 2.0 * db("j,i");
    sub("i,j") = de("i") - df("j");
    div("i,j") = da("i,j") / (de("i") - df("j") + 3.0);
    scale("i,j") = -3.0 * da("i,j");
    ex("i,j") = tenex::exp(da("i,j")) + tenex::sqrt(tenex::abs(db("j,i")));
    sum("i") = tenex::sum(dt("i,j,k"), "j,k");
    mx("j") = tenex::max_over(dt("i,j,k"), "i,k");
    mn("") = tenex::min_over(da("i,j"), "i,j");
    norm("") = tenex::norm2(da("i,j"));
    total("") = tenex::sum(dt("i,j,k"), "i,j,k");
    slice("i,j,k") = tenex::slice(dt("i,j,k"), {1, 0, 2}, {4, 2, 5});
    chip("i,k") = tenex::chip(dt("i,j,k"), "j", 1);
    diag("i") = dsq("i,i");
    perm("k,i,j") = dt("i,j,k");
    mapped("i,j") = tenex::map(da("i,j"), "cube", [](double v) { return v * v * v; });
    CHECK(mismatches(add, r_add) == 0);
    CHECK(mismatches(sub, r_sub) == 0);
    CHECK(mismatches(div, r_div) == 0);
    CHECK(mismatches(scale, r_scale) == 0);
    CHECK(mismatches(ex, r_exp) == 0);
    CHECK(mismatches(sum, r_sum) == 0);
    CHECK(mismatches(mx, r_max) == 0);
    CHECK(mismatches(mn, r_min) == 0);
    CHECK(mismatches(norm, r_norm) == 0);
    CHECK(mismatches(total, r_total) == 0);
    CHECK(mismatches(slice, r_slice) == 0);
    CHECK(mismatches(chip, r_chip) == 0);
    CHECK(mismatches(diag, r_diag) == 0);
    CHECK(mismatches(perm, r_perm) == 0);
    CHECK(mismatches(mapped, r_map) == 0);
  }
}

namespace {

/// Elements of this rank's part of `d` that differ from `reference`, NaN equal to NaN.
std::size_t nan_mismatches(const DT& d, const Tensor<double>& reference) {
  if (!(d.shape() == reference.shape())) return 1000000;
  std::size_t bad = 0;
  d.for_each_local([&](const std::vector<std::size_t>& index, double v) {
    const double r = reference.data()[offset(reference.shape(), index)];
    const bool same = std::isnan(r) ? std::isnan(v) : (v == r || std::abs(v - r) <= 1e-12 * (1 + std::abs(r)));
    if (!same) ++bad;
  });
  return bad;
}

/// f applied to every element of `a` (and `b`): the reference loop.
template <class F>
Tensor<double> elementwise(const Tensor<double>& a, const Tensor<double>& b, F f) {
  Tensor<double> r(a.shape());
  for (std::size_t k = 0; k < a.size(); ++k) r.data()[k] = f(a.data()[k], b.data()[k]);
  return r;
}

}  // namespace

TEST_CASE("dist: NaN and Inf follow numpy's rules, as on every backend") {
  // numpy's rules written out: NaN propagates through maximum, minimum, sign, clip and the
  // max and min reductions, whichever side it is on.
  auto maximum = [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? b : a); };
  auto minimum = [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (b < a ? b : a); };
  const double nan = NAN, inf = INFINITY;
  Tensor<double> a(Shape{4, 5}, {nan, 1,    -2,   inf, 0,     //
                                 3,   -inf, nan,  0.5, -0.0,  //
                                 2,   -1,   4,    -3,  1,     //
                                 0,   inf,  -inf, nan, 2});
  Tensor<double> b(Shape{4, 5}, {1,   nan, -3,  -inf, 0,     //
                                 2,   0,   nan, 1,    inf,   //
                                 nan, -2,  5,   -4,   0.25,  //
                                 1,   -5,  3,   2,    -1});
  const Tensor<double> want_max = elementwise(a, b, maximum), want_min = elementwise(a, b, minimum);
  const Tensor<double> want_sign = elementwise(a, b, [](double x, double) {
    return std::isnan(x) ? NAN : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
  });
  const Tensor<double> want_clamp = elementwise(a, b, [](double x, double) {
    return std::isnan(x) ? NAN : x < -1 ? -1.0 : 1 < x ? 1.0 : x;
  });
  const Tensor<double> want_erf = elementwise(a, b, [](double x, double) { return std::erf(x); });
  const Tensor<double> want_div = elementwise(a, b, [](double x, double y) { return x / y; });
  Tensor<double> want_row_max(Shape{4}), want_row_min(Shape{4}), want_all_max(Shape{}), want_all_min(Shape{});
  want_all_max.data()[0] = -inf;
  want_all_min.data()[0] = inf;
  for (std::size_t i = 0; i < 4; ++i) {
    want_row_max.data()[i] = -inf;
    want_row_min.data()[i] = inf;
    for (std::size_t j = 0; j < 5; ++j) {
      want_row_max.data()[i] = maximum(want_row_max.data()[i], b.at(i, j));
      want_row_min.data()[i] = minimum(want_row_min.data()[i], b.at(i, j));
      want_all_max.data()[0] = maximum(want_all_max.data()[0], a.at(i, j));
      want_all_min.data()[0] = minimum(want_all_min.data()[0], a.at(i, j));
    }
  }
  CHECK(want_row_max.at(3) == 3.0);  // a row of b without NaN, beside rows with one
  CHECK(std::isnan(want_row_max.at(0)));
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DT da = DT::from_replicated(ctx, a), db = DT::from_replicated(ctx, b);
    DT mx(ctx), mn(ctx), mx_reversed(ctx), sign(ctx), clamp(ctx), erf(ctx), div(ctx), row_max(ctx), row_min(ctx),
        all_max(ctx), all_min(ctx);
    mx("i,j") = tenex::max(da("i,j"), db("i,j"));
    mx_reversed("i,j") = tenex::max(db("i,j"), da("i,j"));
    mn("i,j") = tenex::min(da("i,j"), db("i,j"));
    sign("i,j") = tenex::sign(da("i,j"));
    clamp("i,j") = tenex::clamp(da("i,j"), -1.0, 1.0);
    erf("i,j") = tenex::erf(da("i,j"));
    div("i,j") = da("i,j") / db("i,j");
    row_max("i") = tenex::max_over(db("i,j"), "j");
    row_min("i") = tenex::min_over(db("i,j"), "j");
    all_max("") = tenex::max_over(da("i,j"), "i,j");
    all_min("") = tenex::min_over(da("i,j"), "i,j");
    CHECK(nan_mismatches(mx, want_max) == 0);
    CHECK(nan_mismatches(mx_reversed, want_max) == 0);
    CHECK(nan_mismatches(mn, want_min) == 0);
    CHECK(nan_mismatches(sign, want_sign) == 0);
    CHECK(nan_mismatches(clamp, want_clamp) == 0);
    CHECK(nan_mismatches(erf, want_erf) == 0);
    CHECK(nan_mismatches(div, want_div) == 0);
    CHECK(nan_mismatches(row_max, want_row_max) == 0);
    CHECK(nan_mismatches(row_min, want_row_min) == 0);
    CHECK(nan_mismatches(all_max, want_all_max) == 0);
    CHECK(nan_mismatches(all_min, want_all_min) == 0);
  }
}

TEST_CASE("dist: decompositions by their residuals") {
  const std::size_t n = 9;
  Tensor<double> a = spd(n, 21), b = spd(n, 22), g = random({11, 7}, 23), w = random({6, 10}, 24);
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    for (int syevr = 0; syevr < 2; ++syevr) {
      setenv("TENEX_DIST_FORCE_SYEVR", syevr ? "1" : "0", 1);
      OnDistributed on;
      DT da = DT::from_replicated(ctx, a), db = DT::from_replicated(ctx, b), dg = DT::from_replicated(ctx, g),
         dw = DT::from_replicated(ctx, w);
      DT l(ctx), v(ctx), e(ctx), gv(ctx), ge(ctx), q(ctx), r(ctx), qw(ctx), rw(ctx), u(ctx), s(ctx), vt(ctx);
      l("i,j") = tenex::cholesky(da("i,j"));
      std::make_pair(v("i,j"), e("j")) = tenex::eigen_solve(da("i,j"));
      std::make_pair(gv("i,j"), ge("j")) = tenex::eigen_solve(da("i,j"), db("i,j"));
      tenex::tie(q("i,k"), r("k,j")) = tenex::qr(dg("i,j"));
      tenex::tie(qw("i,k"), rw("k,j")) = tenex::qr(dw("i,j"));
      auto [su, ss, svt] = tenex::svd(dg("i,j"));
      u("i,k") = su;
      s("k") = ss;
      vt("k,j") = svt;
      // Residuals, computed on the distributed backend too.
      DT llt(ctx), av(ctx), ve(ctx), bv(ctx), qr_(ctx), qtq(ctx), qrw(ctx), usv(ctx),
          eye(ctx, {7, 7}, [](auto&i) { return i[0] == i[1] ? 1.0 : 0.0; });
      llt("i,j") = l("i,k") * l("j,k");
      av("i,j") = da("i,k") * v("k,j");
      ve("i,j") = v("i,j") * e("j");
      bv("i,j") = db("i,k") * gv("k,j") * ge("j");
      DT agv(ctx);
      agv("i,j") = da("i,k") * gv("k,j");
      qr_("i,j") = q("i,k") * r("k,j");
      qtq("k,l") = q("i,k") * q("i,l");
      qrw("i,j") = qw("i,k") * rw("k,j");
      usv("i,j") = u("i,k") * s("k") * vt("k,j");
      tenex::set_default_backend(BackendKind::cpu);
      Tensor<double> eye7({7, 7});
      for (std::size_t i = 0; i < 7; ++i) eye7.at(i, i) = 1.0;
      CHECK(mismatches(llt, a, 1e-9) == 0);
      CHECK(max_abs_difference(av.gather_all(), ve.gather_all()) < 1e-8);
      CHECK(max_abs_difference(agv.gather_all(), bv.gather_all()) < 1e-8);
      CHECK(mismatches(qr_, g, 1e-9) == 0);
      CHECK(mismatches(qtq, eye7, 1e-9) == 0);
      CHECK(mismatches(qrw, w, 1e-9) == 0);
      CHECK(mismatches(usv, g, 1e-9) == 0);
      // Upper triangle of the Cholesky factor is zero; eigenvalues ascend; singular values descend.
      Tensor<double> lf = l.gather_all(), ef = e.gather_all(), sf = s.gather_all();
      CHECK(lf.at(0, n - 1) == 0.0);
      for (std::size_t k = 1; k < n; ++k) CHECK(ef.at(k - 1) <= ef.at(k));
      for (std::size_t k = 1; k < 7; ++k) CHECK(sf.at(k - 1) >= sf.at(k));
    }
    unsetenv("TENEX_DIST_FORCE_SYEVR");
  }
}

TEST_CASE("dist: remaps in many small rounds match the CPU backend") {
  // Each rank keeps its own elements in place and sends the rest in rounds; a round size of
  // a few elements makes every remap below take many rounds.
  setenv("TENEX_DIST_REMAP_ROUND_BYTES", "200", 1);
  Tensor<double> a = random({5, 7, 9}, 51), b = random({9, 7, 4}, 52);
  Tensor<double> r_perm, r_sum, r_max, r_contract, r_slice;
  r_perm("k,i,j") = a("i,j,k");
  r_sum("j") = tenex::sum(a("i,j,k"), "i,k");
  r_max("i,k") = tenex::max_over(a("i,j,k"), "j");
  r_contract("i,l") = a("i,j,k") * b("k,j,l");
  r_slice("i,j,k") = tenex::slice(a("i,j,k"), {1, 2, 3}, {4, 7, 8});
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DT da = DT::from_replicated(ctx, a), db = DT::from_replicated(ctx, b);
    DT perm(ctx), sum(ctx), max(ctx), contract(ctx), sliced(ctx);
    perm("k,i,j") = da("i,j,k");
    sum("j") = tenex::sum(da("i,j,k"), "i,k");
    max("i,k") = tenex::max_over(da("i,j,k"), "j");
    contract("i,l") = da("i,j,k") * db("k,j,l");
    sliced("i,j,k") = tenex::slice(da("i,j,k"), {1, 2, 3}, {4, 7, 8});
    CHECK(mismatches(perm, r_perm) == 0);
    CHECK(mismatches(sum, r_sum) == 0);
    CHECK(mismatches(max, r_max) == 0);
    CHECK(mismatches(contract, r_contract) == 0);
    CHECK(mismatches(sliced, r_slice) == 0);
  }
  unsetenv("TENEX_DIST_REMAP_ROUND_BYTES");
}

TEST_CASE("dist: inner products and full reductions, as plain loops give them") {
  // A product to a scalar runs as local products and one MPI_Allreduce (the second operand
  // remapped to the first's layout); a fused full reduction reduces without storing its space.
  Tensor<double> a = random({5, 7, 9}, 61), b = random({9, 5, 7}, 62);
  double dot = 0, squares = 0, energy = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 7; ++j) {
      for (std::size_t k = 0; k < 9; ++k) {
        dot += a.at(i, j, k) * b.at(k, i, j);
        squares += a.at(i, j, k) * a.at(i, j, k);
        energy += a.at(i, j, k) * (2.0 * a.at(i, j, k) - b.at(k, i, j)) / (1.5 + a.at(i, j, k) * a.at(i, j, k));
      }
    }
  }
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DT da = DT::from_replicated(ctx, a), db = DT::from_replicated(ctx, b);
    Tensor<double> e_dot, e_same, e_fused;
    e_dot("") = da("i,j,k") * db("k,i,j");
    e_same("") = 3.0 * da("i,j,k") * da("i,j,k");
    e_fused("") = da("i,j,k") * (2.0 * da("i,j,k") - db("k,i,j")) / (1.5 + tenex::square(da("i,j,k")));
    CHECK(e_dot.at() == doctest::Approx(dot).epsilon(1e-12));
    CHECK(e_same.at() == doctest::Approx(3.0 * squares).epsilon(1e-12));
    CHECK(e_fused.at() == doctest::Approx(energy).epsilon(1e-12));
  }
}

TEST_CASE("dist: a failure on one rank is a tenex::Error on every rank") {
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    // Not positive definite: p?potrf's info is global.
    DT bad(ctx, {6, 6}, [](auto& i) { return i[0] == i[1] ? (i[0] == 4 ? -1.0 : 2.0) : 0.0; });
    DT l(ctx);
    l("i,j") = tenex::cholesky(bad("i,j"));
    CHECK_THROWS_AS(l.gather_all(), tenex::NumericalError);
    // A callable that throws on the ranks that hold element (3, 2) only.
    DT a(ctx, {7, 5}, [](auto& i) { return 10.0 * i[0] + i[1]; });
    DT m(ctx);
    m("i,j") = tenex::map(a("i,j"), "picky", [](double v) {
      if (v == 32.0) throw std::runtime_error("picky: 32 is not allowed");
      return v;
    });
    bool threw = false;
    std::string message;
    try {
      m.gather_all();
    } catch (const tenex::Error& e) {
      threw = true;
      message = e.what();
    }
    CHECK(threw);
    CHECK(message.find("32 is not allowed") != std::string::npos);
    // A singular matrix (7 x 7 of rank 5): p?getrf's pivots and p?gecon's estimate are global.
    DT inv(ctx);
    inv("i,j") = tenex::inverse(a("i,k") * a("j,k"));
    bool singular = false;
    try {
      inv.gather_all();
    } catch (const tenex::NumericalError& e) {
      singular = std::string(e.what()).find("is singular") != std::string::npos;
    }
    CHECK(singular);
    // Still usable afterwards.
    DT c(ctx);
    c("i,j") = a("i,k") * a("j,k");
    CHECK(c.gather_all().at(1, 1) == doctest::Approx(10 * 10 + 11 * 11 + 12 * 12 + 13 * 13 + 14 * 14));
  }
}

TEST_CASE("dist: wait() runs the pending set on every rank and rethrows its error there") {
  Tensor<double> a = random({7, 5}, 41), b = random({5, 9}, 42);
  Tensor<double> reference;
  reference("i,j") = a("i,k") * b("k,j");
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DT da = DT::from_replicated(ctx, a), db = DT::from_replicated(ctx, b), c(ctx);
    {
      auto ab = da("i,k") * db("k,j");  // a named handle keeps the set open
      c("i,j") = ab;
      CHECK(c.pending());
      c.wait();  // runs what the set has recorded so far, collectively
      CHECK_FALSE(c.pending());
      CHECK(mismatches(c, reference) == 0);
    }
    CHECK_NOTHROW(c.wait());  // nothing pending: a no-op
    // p?potrf fails (a global info): every rank gets the same NumericalError, at every wait.
    DT bad(ctx, {6, 6}, [](auto& i) { return i[0] == i[1] ? (i[0] == 4 ? -1.0 : 2.0) : 0.0; });
    DT l(ctx);
    {
      auto factor = tenex::cholesky(bad("i,j"));
      l("i,j") = factor;
      CHECK_THROWS_WITH_AS(l.wait(), doctest::Contains("cholesky"), tenex::NumericalError);
    }
    CHECK_THROWS_AS(l.wait(), tenex::NumericalError);
    CHECK_FALSE(l.pending());
    // A callable that throws on the rank holding element (2, 3) only: the same error, with
    // that rank's text, on every rank.
    DT m(ctx);
    {
      auto picky = tenex::map(da("i,j"), "picky", [&](double v) {
        if (v == a.at(2, 3)) throw std::runtime_error("picky: element (2, 3) is not allowed");
        return v;
      });
      m("i,j") = picky;
    }
    CHECK_THROWS_WITH_AS(m.wait(), doctest::Contains("element (2, 3) is not allowed"), tenex::Error);
    // The objects stay usable.
    c("i,j") = 2.0 * da("i,k") * db("k,j");
    c.wait();
    CHECK(c.gather_all().at(6, 8) == doctest::Approx(2.0 * reference.at(6, 8)));
  }
  Context ctx(MPI_COMM_WORLD, grids().front());
  DT from(ctx, {2, 2}), to(std::move(from));
  CHECK_THROWS_WITH_AS(from.wait(), doctest::Contains("moved from"), tenex::Error);
}

TEST_CASE("dist: a fault on one rank in the new paths is the same tenex::Error on every rank") {
  const int last = world_size() - 1;
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    // A tensor made from a function that throws on the rank holding element (3, 2) only.
    auto f = [](const std::vector<std::size_t>& i) {
      if (i[0] == 3 && i[1] == 2) throw std::runtime_error("no element (3, 2) here");
      return 1.0 * i[0] + i[1];
    };
    CHECK_THROWS_WITH_AS(DT(ctx, {7, 5}, f), doctest::Contains("no element (3, 2) here"), tenex::Error);
    // A fused full reduction (evaluated without storing its space) whose callable throws on
    // one rank.
    DT a(ctx, {7, 5}, [](auto& i) { return 10.0 * i[0] + i[1]; });
    Tensor<double> total;
    total("") = tenex::sum(tenex::map(a("i,j"), "picky",
                                      [](double v) {
                                        if (v == 32.0) throw std::runtime_error("picky: 32 is not allowed");
                                        return v;
                                      }),
                           "i,j");
    CHECK_THROWS_WITH_AS(total.wait(), doctest::Contains("32 is not allowed"), tenex::Error);
    // Out of memory on the last rank in the last round of a remap of many rounds: every rank
    // gets the same BackendError, no rank is left in the exchange.
    setenv("TENEX_DIST_REMAP_ROUND_BYTES", "200", 1);
    const std::string failing = std::to_string(last);
    setenv("TENEX_DIST_FAIL_REMAP_ON_RANK", failing.c_str(), 1);
    DT permuted(ctx);
    permuted("j,i") = a("i,j");
    if (world_size() > 1) {
      const std::string expected = "out of memory on rank " + failing;
      CHECK_THROWS_WITH_AS(permuted.wait(), doctest::Contains(expected.c_str()), tenex::BackendError);
    } else {
      CHECK_NOTHROW(permuted.wait());  // one rank permutes in place: no rounds, no buffers
    }
    unsetenv("TENEX_DIST_FAIL_REMAP_ON_RANK");
    // Usable afterwards, and the rounds give the right elements.
    permuted("j,i") = a("i,j");
    std::size_t bad = 0;
    permuted.for_each_local([&](const std::vector<std::size_t>& i, double v) {
      if (v != 10.0 * i[1] + i[0]) ++bad;
    });
    CHECK(bad == 0);
    unsetenv("TENEX_DIST_REMAP_ROUND_BYTES");
  }
}

TEST_CASE("dist: distributed tensors need the distributed backend") {
  Context ctx(MPI_COMM_WORLD, grids().front());
  DT a(ctx, {3, 3});
  tenex::set_default_backend(BackendKind::cpu);
  CHECK_THROWS_AS(a("i,j"), tenex::BackendError);
}

TEST_CASE("dist: float tensors, and statements linked into one set") {
  using DF = DistributedTensor<float>;
  Tensor<float> a({8, 6}), b({6, 8});
  tenex::fill_random(a, 31);
  tenex::fill_random(b, 32);
  Tensor<float> r_c, r_d;
  {
    auto ab = a("i,k") * b("k,j");
    r_c("i,j") = ab;
    r_d("i,j") = r_c("i,k") * r_c("k,j") + 2.0 * r_c("j,i");
  }
  for (const auto& options : grids()) {
    Context ctx(MPI_COMM_WORLD, options);
    OnDistributed on;
    DF da = DF::from_replicated(ctx, a), db = DF::from_replicated(ctx, b), c(ctx), d(ctx);
    {
      auto ab = da("i,k") * db("k,j");
      c("i,j") = ab;
      d("i,j") = c("i,k") * c("k,j") + 2.0 * c("j,i");
    }  // one set: c is produced and read in it
    std::size_t bad = 0;
    const Tensor<float>& ref = r_d;
    d.for_each_local([&](const std::vector<std::size_t>& i, float v) {
      const float r = ref.data()[i[0] * 8 + i[1]];
      if (std::abs(v - r) > 1e-4f * (1 + std::abs(r))) ++bad;
    });
    CHECK(bad == 0);
    CHECK(c.gather_all().at(3, 5) == doctest::Approx(r_c.at(3, 5)).epsilon(1e-5));
  }
}

TEST_CASE("dist: the distributed backend needs a live Context") {
  CHECK_FALSE(tenex::dist::context_available());
  CHECK_THROWS_AS(tenex::set_default_backend(BackendKind::distributed), tenex::BackendError);
  {
    Context ctx(MPI_COMM_WORLD, grids().front());
    CHECK_NOTHROW(tenex::set_default_backend(BackendKind::distributed));
    tenex::set_default_backend(BackendKind::cpu);
  }
  CHECK_FALSE(tenex::dist::context_available());
}
