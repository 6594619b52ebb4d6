// The CUDA backend's decompositions on cuSOLVER: cholesky (potrf), eigen_solve (syevd, sygvd),
// qr (geqrf, orgqr) and svd (gesvd), each checking the device's info value as LAPACK's is.
#include "tenex/backend/cuda/cuda_backend.hpp"

#include <string>
#include <vector>

#include "tenex/backend/cuda/check.hpp"
#include "tenex/error.hpp"

namespace tenex::detail::cuda_impl {

template <class T>
void CudaBackend<T>::check_info(const int* info, const char* routine, std::size_t n) {
  int value = 0;
  TENEX_CUDA_CALL(runtime, cudaMemcpyAsync(&value, info, sizeof(int), cudaMemcpyDeviceToHost, stream()));
  TENEX_CUDA_CALL(runtime, cudaStreamSynchronize(stream()));
  if (value == 0) return;
  const std::string name = std::string(is_double ? "cusolverDnD" : "cusolverDnS") + routine;
  if (value < 0) {
    throw InternalError("tenex: cuda: " + name + " reports an illegal argument " + std::to_string(-value) +
                        " (a tenex bug)");
  }
  std::string what;
  const std::string r = routine;
  if (r == "potrf") {
    what = "the leading minor of order " + std::to_string(value) + " is not positive definite";
  } else if (r == "sygvd" && static_cast<std::size_t>(value) > n) {
    what =
        "the leading minor of order " + std::to_string(value - static_cast<int>(n)) + " of b is not positive definite";
  } else {
    what = std::to_string(value) + " values did not converge";
  }
  throw NumericalError("tenex: " + name + " failed (info = " + std::to_string(value) + "): " + what);
}

template <class T>
KernelCount CudaBackend<T>::run_cholesky(const CholeskyParams& params, const KernelArgs<T>& args) {
  enter_node(args);
  const std::size_t n = args.node.extents[0];
  const int ni = static_cast<int>(n);
  T* l = args.out.data;
  if (n > 0) {
    // The factor of a^T when `upper`: a transposed into the output first.
    if (params.upper) {
      rearrange({args.operands[0].data, {"i", "j"}, {n, n}}, l, {"j", "i"}, {n, n});
    } else {
      copy(l, args.operands[0].data, n * n);
    }
    // Row-major lower triangle = column-major upper: potrf(UPPER) gives a = U^T U, and U read
    // row-major is the lower factor L.
    int lwork = 0;
    TENEX_CUDA_CALL(cusolver,
                    potrf_size(static_cast<T*>(nullptr), solver(), CUBLAS_FILL_MODE_UPPER, ni, l, ni, &lwork));
    Workspace<T> work(lwork);
    TENEX_CUDA_CALL(cusolver, potrf(static_cast<T*>(nullptr), solver(), CUBLAS_FILL_MODE_UPPER, ni, l, ni, work.data(),
                                    lwork, work.info()));
    check_info(work.info(), "potrf", n);
    long long rows = static_cast<long long>(n), cols = rows;
    int upper = 1;
    void* arguments[] = {&l, &rows, &cols, &upper};
    launch_utility("tenex_zero_triangle", rows * cols, arguments);
  }
  leave_node(args.out.data);
  const double nd = static_cast<double>(n);
  return {nd * nd * nd / 3.0, 2};
}

template <class T>
KernelCount CudaBackend<T>::run_eigen_solve(const EigenSolveParams&, const KernelArgs<T>& args) {
  enter_node(args);
  const std::size_t n = decomposition_matrix(args.node.params, args.node.extents).n;
  const int ni = static_cast<int>(n);
  const bool generalized = args.operands.size() == 2;
  T* vectors = args.out.data;
  T* values = args.out.data + packed_factor_offset(OpKind::eigen_solve, 1, n, n);
  if (n > 0) {
    // Row-major lower triangle = column-major upper; the column-major vectors are transposed
    // into the row-major output (eigenvectors as columns).
    Buffer w = scratch<T>(n * n);
    T* wd = static_cast<T*>(w.data());
    copy(wd, args.operands[0].data, n * n);
    int lwork = 0;
    Buffer bcopy;
    if (generalized) {
      bcopy = scratch<T>(n * n);
      copy(static_cast<T*>(bcopy.data()), args.operands[1].data, n * n);
      TENEX_CUDA_CALL(
          cusolver, sygvd_size(static_cast<T*>(nullptr), solver(), CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_MODE_VECTOR,
                               CUBLAS_FILL_MODE_UPPER, ni, wd, ni, static_cast<T*>(bcopy.data()), ni, values, &lwork));
      Workspace<T> work(lwork);
      TENEX_CUDA_CALL(cusolver, sygvd(static_cast<T*>(nullptr), solver(), CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_MODE_VECTOR,
                                      CUBLAS_FILL_MODE_UPPER, ni, wd, ni, static_cast<T*>(bcopy.data()), ni, values,
                                      work.data(), lwork, work.info()));
      check_info(work.info(), "sygvd", n);
    } else {
      TENEX_CUDA_CALL(cusolver, syevd_size(static_cast<T*>(nullptr), solver(), CUSOLVER_EIG_MODE_VECTOR,
                                           CUBLAS_FILL_MODE_UPPER, ni, wd, ni, values, &lwork));
      Workspace<T> work(lwork);
      TENEX_CUDA_CALL(cusolver, syevd(static_cast<T*>(nullptr), solver(), CUSOLVER_EIG_MODE_VECTOR,
                                      CUBLAS_FILL_MODE_UPPER, ni, wd, ni, values, work.data(), lwork, work.info()));
      check_info(work.info(), "syevd", n);
    }
    rearrange({wd, {"j", "i"}, {n, n}}, vectors, {"i", "j"}, {n, n});
    long long rows = static_cast<long long>(n), k = rows, ld = rows, none = 0;
    T* paired = nullptr;
    void* arguments[] = {&vectors, &rows, &k, &ld, &paired, &none};
    launch_utility("tenex_fix_signs", k, arguments);
  }
  leave_node(args.out.data);
  const double nd = static_cast<double>(n);
  return {generalized ? 34.0 * nd * nd * nd / 3.0 : 9.0 * nd * nd * nd, 3};
}

template <class T>
KernelCount CudaBackend<T>::run_qr(const QrParams&, const KernelArgs<T>& args) {
  enter_node(args);
  const auto [m, n] = decomposition_matrix(args.node.params, args.node.extents);
  const std::size_t k = std::min(m, n);
  T* q = args.out.data;
  T* r = args.out.data + packed_factor_offset(OpKind::qr, 1, m, n);
  if (m > 0 && n > 0) {
    const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
    // Column-major m x n copy of the row-major a.
    Buffer w = scratch<T>(m * n);
    T* wd = static_cast<T*>(w.data());
    rearrange({args.operands[0].data, {"i", "j"}, {m, n}}, wd, {"j", "i"}, {n, m});
    Buffer tau = scratch<T>(k);
    int lwork_qr = 0, lwork_q = 0;
    TENEX_CUDA_CALL(cusolver, geqrf_size(static_cast<T*>(nullptr), solver(), mi, ni, wd, mi, &lwork_qr));
    TENEX_CUDA_CALL(cusolver, orgqr_size(static_cast<T*>(nullptr), solver(), mi, ki, ki, wd, mi,
                                         static_cast<T*>(tau.data()), &lwork_q));
    Workspace<T> work(std::max(lwork_qr, lwork_q));
    TENEX_CUDA_CALL(cusolver, geqrf(static_cast<T*>(nullptr), solver(), mi, ni, wd, mi, static_cast<T*>(tau.data()),
                                    work.data(), lwork_qr, work.info()));
    // R (k x n, row-major): element (i, j) of the column-major result, lower part zeroed.
    rearrange({wd, {"j", "i"}, {n, m}}, r, {"i", "j"}, {k, n});  // reads the first k rows
    long long rows = static_cast<long long>(k), cols = static_cast<long long>(n);
    int upper = 0;
    void* zero_args[] = {&r, &rows, &cols, &upper};
    launch_utility("tenex_zero_triangle", rows * cols, zero_args);
    TENEX_CUDA_CALL(cusolver, orgqr(static_cast<T*>(nullptr), solver(), mi, ki, ki, wd, mi, static_cast<T*>(tau.data()),
                                    work.data(), lwork_q, work.info()));
    check_info(work.info(), "orgqr", k);
    rearrange({wd, {"j", "i"}, {n, m}}, q, {"i", "j"}, {m, k});
    long long mm = static_cast<long long>(m), kk = static_cast<long long>(k), nn = static_cast<long long>(n);
    void* fix_args[] = {&q, &mm, &kk, &r, &nn};
    launch_utility("tenex_fix_qr", kk, fix_args);
  }
  leave_node(args.out.data);
  const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  return {2 * md * nd * kd - 2 * kd * kd * kd / 3 + 2 * md * kd * kd - 2 * kd * kd * kd / 3, 5};
}

template <class T>
KernelCount CudaBackend<T>::run_svd(const SvdParams&, const KernelArgs<T>& args) {
  enter_node(args);
  const auto [m, n] = decomposition_matrix(args.node.params, args.node.extents);
  const std::size_t k = std::min(m, n);
  T* u = args.out.data;
  T* s = args.out.data + packed_factor_offset(OpKind::svd, 1, m, n);
  T* vt = args.out.data + packed_factor_offset(OpKind::svd, 2, m, n);
  if (k > 0) {
    // cuSOLVER's gesvd needs rows >= cols. Wide a (m <= n): its row-major data is the
    // column-major n x m matrix x = a^T = U_x S V_x^T, so u = V_x (= VT_x read row-major) and
    // vt = U_x^T (= U_x read row-major): no transposes. Tall a: transposed to column-major first.
    const bool wide = m <= n;
    const std::size_t rows = wide ? n : m, cols = wide ? m : n;  // of the column-major x
    Buffer x = scratch<T>(m * n);
    T* xd = static_cast<T*>(x.data());
    if (wide) {
      copy(xd, args.operands[0].data, m * n);
    } else {
      rearrange({args.operands[0].data, {"i", "j"}, {m, n}}, xd, {"j", "i"}, {n, m});
    }
    Buffer ux = scratch<T>(rows * k), vtx = scratch<T>(k * cols);
    const int ri = static_cast<int>(rows), ci = static_cast<int>(cols), ki = static_cast<int>(k);
    int lwork = 0;
    TENEX_CUDA_CALL(cusolver, gesvd_size(static_cast<T*>(nullptr), solver(), ri, ci, &lwork));
    Workspace<T> work(lwork);
    Buffer rwork = scratch<T>(k);
    TENEX_CUDA_CALL(cusolver, gesvd(static_cast<T*>(nullptr), solver(), 'S', 'S', ri, ci, xd, ri, s,
                                    static_cast<T*>(ux.data()), ri, static_cast<T*>(vtx.data()), ki, work.data(), lwork,
                                    static_cast<T*>(rwork.data()), work.info()));
    check_info(work.info(), "gesvd", k);
    if (wide) {
      copy(u, static_cast<const T*>(vtx.data()), m * k);  // u (m x k) = VT_x (k x m column-major)
      copy(vt, static_cast<const T*>(ux.data()), k * n);  // vt (k x n) = U_x (n x k column-major)
    } else {
      rearrange({static_cast<const T*>(ux.data()), {"j", "i"}, {k, m}}, u, {"i", "j"}, {m, k});
      rearrange({static_cast<const T*>(vtx.data()), {"j", "i"}, {n, k}}, vt, {"i", "j"}, {k, n});
    }
    long long mm = static_cast<long long>(m), kk = static_cast<long long>(k), ld = kk, nn = static_cast<long long>(n);
    void* fix_args[] = {&u, &mm, &kk, &ld, &vt, &nn};
    launch_utility("tenex_fix_signs", kk, fix_args);
  }
  leave_node(args.out.data);
  const double big = static_cast<double>(std::max(m, n)), small = static_cast<double>(k);
  return {14 * big * small * small + 8 * small * small * small, 3};
}

#define TENEX_INSTANTIATE_CUDA_LINALG(T)                                                               \
  template void CudaBackend<T>::check_info(const int*, const char*, std::size_t);                      \
  template KernelCount CudaBackend<T>::run_cholesky(const CholeskyParams&, const KernelArgs<T>&);      \
  template KernelCount CudaBackend<T>::run_eigen_solve(const EigenSolveParams&, const KernelArgs<T>&); \
  template KernelCount CudaBackend<T>::run_qr(const QrParams&, const KernelArgs<T>&);                  \
  template KernelCount CudaBackend<T>::run_svd(const SvdParams&, const KernelArgs<T>&);
TENEX_INSTANTIATE_CUDA_LINALG(float)
TENEX_INSTANTIATE_CUDA_LINALG(double)
#undef TENEX_INSTANTIATE_CUDA_LINALG

}  // namespace tenex::detail::cuda_impl
