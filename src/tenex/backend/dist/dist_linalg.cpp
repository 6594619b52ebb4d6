// The distributed backend's linear algebra through ScaLAPACK: inverse, solve, matrix powers,
// Cholesky, eigen_solve, QR and SVD, with the CPU backend's checks (dist_backend.hpp).
#include "tenex/backend/dist/dist_kernels.hpp"

namespace tenex::dist::detail {

using namespace kernels;  // NOLINT: this file's own helpers

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


#define TENEX_INSTANTIATE_DIST_LINALG(T)                                                               \
  template KernelCount DistBackend<T>::run_inverse(const InverseParams&, const KernelArgs<T>&);        \
  template KernelCount DistBackend<T>::run_solve(const SolveParams&, const KernelArgs<T>&);            \
  template KernelCount DistBackend<T>::run_spd_pow(const SpdPowParams&, const KernelArgs<T>&);         \
  template KernelCount DistBackend<T>::run_cholesky(const CholeskyParams&, const KernelArgs<T>&);      \
  template KernelCount DistBackend<T>::run_eigen_solve(const EigenSolveParams&, const KernelArgs<T>&); \
  template KernelCount DistBackend<T>::run_qr(const QrParams&, const KernelArgs<T>&);                  \
  template KernelCount DistBackend<T>::run_svd(const SvdParams&, const KernelArgs<T>&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_DIST_LINALG)
#undef TENEX_INSTANTIATE_DIST_LINALG

}  // namespace tenex::dist::detail
