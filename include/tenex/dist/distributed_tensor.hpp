// tenex/dist/distributed_tensor.hpp — a tensor spread over the ranks of a dist::Context.
//
// A DistributedTensor holds a tensor of any rank as a 2-D block-cyclic matrix
// (ScaLAPACK's layout): its first row_modes() modes, flattened row-major, index
// the rows, the others the columns; each rank keeps its blocks, column-major.
// It takes part in expressions like a Tensor, on BackendKind::distributed:
//
//   tenex::dist::DistributedTensor<double> a(ctx, {n, n}, [](auto& i) { return i[0] + 0.5 * i[1]; });
//   tenex::dist::DistributedTensor<double> c(ctx);
//   c("i,j") = a("i,k") * a("j,k");          // every rank, same statement; p?gemm
//   tenex::Tensor<double> full = c.gather();  // on rank 0 (extents {0} elsewhere); collective
//
// Every constructor and gather() is collective: all ranks of the context call it. T is
// float, double, std::complex<float> or std::complex<double>.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "tenex/dist/context.hpp"
#include "tenex/expression/indexed.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex::dist {

template <class T>
class TENEX_API DistributedTensor {
 public:
  using Index = std::vector<std::size_t>;
  /// No value yet: a valid assignment target.
  explicit DistributedTensor(const Context& context);
  /// Zero-filled.
  DistributedTensor(const Context& context, Shape shape);
  /// Element at global index i is f(i) (f is called for this rank's elements only).
  DistributedTensor(const Context& context, Shape shape, const std::function<T(const Index&)>& f);
  /// From this rank's local block-cyclic part (local_rows() x local_cols(), column-major, as
  /// local_rows_of/local_cols_of say). A wrong size on any rank is a tenex::Error on all.
  static DistributedTensor from_local(const Context& context, Shape shape, std::vector<T> local);
  /// Distributes a tensor every rank holds in full (each rank keeps its own blocks).
  static DistributedTensor from_replicated(const Context& context, const Tensor<T>& full);

  ~DistributedTensor();
  DistributedTensor(DistributedTensor&&) noexcept;
  DistributedTensor& operator=(DistributedTensor&&) noexcept;
  DistributedTensor(const DistributedTensor&) = delete;
  DistributedTensor& operator=(const DistributedTensor&) = delete;

  /// Known once assigned.
  const Shape& shape() const;
  /// Modes flattened into the matrix rows: (rank + 1) / 2.
  std::size_t row_modes() const;
  /// This rank's local matrix; waits for a pending result (collectively: call on all ranks).
  std::size_t local_rows() const;
  std::size_t local_cols() const;
  std::vector<T> local_data() const;
  /// The global index of local element (row, col).
  Index global_index(std::size_t local_row, std::size_t local_col) const;
  /// Calls f(global index, value) for each local element.
  void for_each_local(const std::function<void(const Index&, T)>& f) const;
  /// The whole tensor on `root` (elsewhere a Tensor of extents {0}, no elements). Collective.
  Tensor<T> gather(int root = 0) const;
  /// The whole tensor on every rank. Collective.
  Tensor<T> gather_all() const;

  /// True while this tensor is the pending result of a set that has not run yet.
  bool pending() const;
  /// Runs the set that produces this tensor now (a no-op when it has run) and rethrows the
  /// error that set stored, as the same tenex::Error (subclass kept) on every rank.
  /// Collective: a set runs on all ranks together, so call it on every rank, before reading
  /// the result on one of them:
  ///   c.wait();                                    // every rank
  ///   if (ctx.rank() == 0) use(c.local_data());    // now a local read
  void wait() const;

  /// Labels this tensor in an expression (as Tensor::operator()).
  Indexed<Tensor<T>> operator()(std::string_view labels);

  /// Rows and columns of the local matrix of `shape` on `context` for this rank.
  static std::size_t local_rows_of(const Context& context, const Shape& shape);
  static std::size_t local_cols_of(const Context& context, const Shape& shape);

 private:
  explicit DistributedTensor(const Context& context, std::shared_ptr<Tensor<T>> proxy);
  void resolve() const;
  Context context_;
  // The Tensor the expressions see; its storage holds this rank's part (the backend's
  // value handle), and no host elements.
  std::shared_ptr<Tensor<T>> proxy_;
};

#define TENEX_DECLARE_DISTRIBUTED_TENSOR(T) extern template class DistributedTensor<T>;
TENEX_FOR_EACH_SCALAR(TENEX_DECLARE_DISTRIBUTED_TENSOR)
#undef TENEX_DECLARE_DISTRIBUTED_TENSOR

}  // namespace tenex::dist
