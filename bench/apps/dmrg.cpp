// Application benchmark (d): two-site DMRG of the spin-1/2 Heisenberg chain, the program a
// tensor-network physicist writes: an MPO, environments, a Lanczos ground state of each
// two-site block and a truncated SVD, many small contractions and LAPACK calls of new shapes
// in the first sweep.
//
//   app_dmrg [--sites 20] [--bond 64] [--lanczos 4] [--iterations 3]
//
// One iteration is a sweep left to right and back. The MPS starts from app_common's pattern,
// right-canonical (QR from the right); each two-site update:
//   theta(a,s,t,c)  = A(a,s,b) B(b,t,c)
//   H theta         = L(a,w,x) W(w,v,s,p) W(v,y,t,q) R(c,y,z) theta(x,p,q,z)     (Lanczos, m steps)
//   U S Vt          = svd(theta as (a s) x (t c)), at most `bond` values kept
//   L'(b,v,y)       = L(a,w,x) A(a,s,b) W(w,v,s,p) A(x,p,y)                      (and R' alike)
// The checksum is the energy after the last update; bench/apps/dmrg.py is the numpy twin.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

#include <tenex/tenex.hpp>

#include "app_common.hpp"

namespace {

using tenex::Shape;
using T = tenex::Tensor<double>;

T reshaped(const T& t, Shape shape) { return T(std::move(shape), t.to_vector()); }

/// The Heisenberg MPO W(w,v,s,p) (bond 5, lower triangular): H = sum_i S_i . S_i+1.
T heisenberg_mpo() {
  T w(Shape{5, 5, 2, 2});
  auto put = [&](std::size_t a, std::size_t b, double s00, double s01, double s10, double s11) {
    w.at(a, b, 0, 0) = s00;
    w.at(a, b, 0, 1) = s01;
    w.at(a, b, 1, 0) = s10;
    w.at(a, b, 1, 1) = s11;
  };
  put(0, 0, 1, 0, 0, 1);       // identity
  put(1, 0, 0, 1, 0, 0);       // S+
  put(2, 0, 0, 0, 1, 0);       // S-
  put(3, 0, 0.5, 0, 0, -0.5);  // Sz
  put(4, 1, 0, 0, 0.5, 0);     // S-/2
  put(4, 2, 0, 0.5, 0, 0);     // S+/2
  put(4, 3, 0.5, 0, 0, -0.5);  // Sz
  put(4, 4, 1, 0, 0, 1);       // identity
  return w;
}

struct Chain {
  std::size_t sites, bond, lanczos;
  T w = heisenberg_mpo();
  std::vector<T> a;            // a[i](l,s,r)
  std::vector<T> left, right;  // left[i]: sites < i; right[i]: sites >= i
  double energy = 0.0;

  Chain(std::size_t n, std::size_t chi, std::size_t m)
      : sites(n), bond(chi), lanczos(m), a(n), left(n + 1), right(n + 1) {
    std::vector<std::size_t> dims(n + 1, 1);
    for (std::size_t i = 1; i < n; ++i)
      dims[i] = std::min(
          {std::size_t{1} << std::min<std::size_t>(i, 20), std::size_t{1} << std::min<std::size_t>(n - i, 20), chi});
    for (std::size_t i = 0; i < n; ++i) a[i] = apps::pattern({dims[i], 2, dims[i + 1]}, 1.0 + double(i), 0.5);
    right_canonical();
    T edge(Shape{1, 5, 1});
    edge.at(0, 4, 0) = 1.0;
    left[0] = edge;
    T end(Shape{1, 5, 1});
    end.at(0, 0, 0) = 1.0;
    right[n] = end;
    for (std::size_t i = n; i-- > 1;) grow_right(i);
  }

  // QR from the right: each site's transpose factored, R carried into the site on its left.
  void right_canonical() {
    for (std::size_t i = sites; i-- > 1;) {
      const std::size_t l = a[i].shape().extent(0), r = a[i].shape().extent(2);
      T m = reshaped(a[i], {l, 2 * r}), mt, q, rr;
      mt("x,l") = m("l,x");
      tenex::tie(q("x,k"), rr("k,l")) = tenex::qr(mt("x,l"));
      T qt;
      qt("k,x") = q("x,k");
      a[i] = reshaped(qt, {qt.shape().extent(0), 2, r});
      T prev;
      prev("a,s,k") = a[i - 1]("a,s,l") * rr("k,l");
      a[i - 1] = prev;
    }
  }

  void grow_left(std::size_t i) {  // left[i + 1] from left[i] and site i
    left[i + 1]("b,v,y") = left[i]("a,w,x") * a[i]("a,s,b") * w("w,v,s,p") * a[i]("x,p,y");
  }
  void grow_right(std::size_t i) {  // right[i] from right[i + 1] and site i
    right[i]("a,w,x") = a[i]("a,s,b") * w("w,v,s,p") * a[i]("x,p,y") * right[i + 1]("b,v,y");
  }

  T apply(std::size_t i, T& theta) {
    T y;
    y("a,s,t,c") = left[i]("a,w,x") * w("w,v,s,p") * w("v,u,t,q") * right[i + 2]("c,u,z") * theta("x,p,q,z");
    return y;
  }

  static double dot(T& x, T& y) {
    T d;
    d("") = x("a,s,t,c") * y("a,s,t,c");
    return d.at();
  }

  // The lowest eigenvector of H in the Krylov space of theta (m steps of Lanczos).
  T ground_state(std::size_t i, T& theta) {
    std::vector<T> v;
    std::vector<double> alpha, beta;
    T x;
    x("a,s,t,c") = (1.0 / std::sqrt(dot(theta, theta))) * theta("a,s,t,c");
    v.push_back(x);
    for (std::size_t j = 0; j < lanczos; ++j) {
      T y = apply(i, v[j]);
      alpha.push_back(dot(y, v[j]));
      T r;
      if (j == 0) {
        r("a,s,t,c") = y("a,s,t,c") - alpha[j] * v[j]("a,s,t,c");
      } else {
        r("a,s,t,c") = y("a,s,t,c") - alpha[j] * v[j]("a,s,t,c") - beta[j - 1] * v[j - 1]("a,s,t,c");
      }
      const double b = std::sqrt(dot(r, r));
      if (j + 1 == lanczos || b < 1e-12) break;
      beta.push_back(b);
      T next;
      next("a,s,t,c") = (1.0 / b) * r("a,s,t,c");
      v.push_back(next);
    }
    const std::size_t m = alpha.size();
    T tri(Shape{m, m}), vectors, values;
    for (std::size_t j = 0; j < m; ++j) {
      tri.at(j, j) = alpha[j];
      if (j + 1 < m) tri.at(j, j + 1) = tri.at(j + 1, j) = beta[j];
    }
    std::make_pair(vectors("j,k"), values("k")) = tenex::eigen_solve(tri("j,k"));
    energy = values.at(0);
    T psi;
    psi("a,s,t,c") = vectors.at(0, 0) * v[0]("a,s,t,c");
    for (std::size_t j = 1; j < m; ++j) psi("a,s,t,c") += vectors.at(j, 0) * v[j]("a,s,t,c");
    return psi;
  }

  // The two-site update at (i, i + 1); the singular values go right (left to right) or left.
  void update(std::size_t i, bool to_right) {
    T theta;
    theta("a,s,t,c") = a[i]("a,s,b") * a[i + 1]("b,t,c");
    T psi = ground_state(i, theta);
    const std::size_t l = psi.shape().extent(0), r = psi.shape().extent(3);
    T m = reshaped(psi, {2 * l, 2 * r}), u, s, vt;
    {
      auto [uf, sf, vtf] = tenex::svd(m("x,y"), tenex::Truncation{.max_rank = bond});
      u("x,k") = uf;
      s("k") = sf;
      vt("k,y") = vtf;
    }
    const std::size_t k = s.shape().extent(0);
    if (to_right) {
      T sv;
      sv("k,y") = s("k") * vt("k,y");
      a[i] = reshaped(u, {l, 2, k});
      a[i + 1] = reshaped(sv, {k, 2, r});
      grow_left(i);
    } else {
      T us;
      us("x,k") = u("x,k") * s("k");
      a[i] = reshaped(us, {l, 2, k});
      a[i + 1] = reshaped(vt, {k, 2, r});
      grow_right(i + 1);
    }
  }

  void sweep() {
    for (std::size_t i = 0; i + 1 < sites; ++i) update(i, true);
    for (std::size_t i = sites - 1; i-- > 0;) update(i, false);
  }
};

}  // namespace

int main(int argc, char** argv) {
  apps::Options options("app_dmrg", {{"sites", 20}, {"bond", 64}, {"lanczos", 4}, {"iterations", 3}});
  if (!options.parse(argc, argv)) return 2;
  try {
    Chain chain(options["sites"], options["bond"], options["lanczos"]);
    const double chi = double(options["bond"]), n = double(options["sites"]);
    // Per update, mostly the Lanczos matvecs: L W W R theta, about 4 (2 chi)^3 * 5 * 2 each.
    const double flops = 2.0 * n * double(options["lanczos"]) * 8.0 * chi * chi * chi * 2.0 * 5.0 * 2.0;
    apps::run_and_report(
        "dmrg", options, flops, [&] { chain.sweep(); }, [&] { return chain.energy; });
    return 0;
  } catch (const tenex::Error& e) {
    std::fprintf(stderr, "app_dmrg: %s\n", e.what());
    return 1;
  }
}
