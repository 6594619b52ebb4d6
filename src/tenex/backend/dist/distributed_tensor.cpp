#include "tenex/dist/distributed_tensor.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "tenex/backend/backend.hpp"
#include "tenex/backend/dist/dist_backend.hpp"
#include "tenex/backend/dist/scalapack.hpp"
#include "tenex/error.hpp"
#include "tenex/labels.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::dist {

using tenex::detail::Access;

namespace {

using detail::DistContext;
using detail::DistMatrix;

template <class T>
std::shared_ptr<Tensor<T>> proxy_holding(std::shared_ptr<DistMatrix<T>> m, const Shape& shape) {
  auto storage = std::make_shared<tenex::detail::Storage<T>>(shape, tenex::detail::Storage<T>::Init::deferred);
  storage->device_copy() = detail::make_value_buffer<T>(std::move(m));
  storage->set_device_copy_valid(true);
  auto proxy = std::make_shared<Tensor<T>>();
  Access::set_storage(*proxy, std::move(storage));
  return proxy;
}

int local_count(const DistContext& ctx, const Shape& shape, bool rows) {
  const std::size_t split = detail::canonical_split(shape.rank());
  std::size_t n = 1;
  for (std::size_t k = rows ? 0 : split; k < (rows ? split : shape.rank()); ++k) n *= shape.extent(k);
  const int global = detail::checked_int(n, rows ? "rows" : "columns"), zero = 0;
  return numroc_(&global, &ctx.block, rows ? &ctx.myrow : &ctx.mycol, &zero, rows ? &ctx.prow : &ctx.pcol);
}

}  // namespace

template <class T>
DistributedTensor<T>::DistributedTensor(const Context& context, std::shared_ptr<Tensor<T>> proxy)
    : context_(context), proxy_(std::move(proxy)) {
  detail::register_proxy<T>(proxy_.get());
}

template <class T>
DistributedTensor<T>::DistributedTensor(const Context& context)
    : DistributedTensor(context, std::make_shared<Tensor<T>>()) {}

template <class T>
DistributedTensor<T>::DistributedTensor(const Context& context, Shape shape)
    : DistributedTensor(context, shape, [](const Index&) { return T(0); }) {}

template <class T>
DistributedTensor<T>::DistributedTensor(const Context& context, Shape shape, const std::function<T(const Index&)>& f)
    : context_(context) {
  const DistContext& ctx = *Access::dist_context(context);
  std::shared_ptr<DistMatrix<T>> m;
  detail::agreed(ctx, [&] {
    m = detail::make_canonical<T>(ctx, shape.extents());
    // The row modes' indices of each local row, worked out once (not per element).
    const std::size_t split = m->split, rank = shape.rank();
    std::vector<std::size_t> row_modes(static_cast<std::size_t>(m->local_rows) * split);
    Index index;
    for (int r = 0; r < m->local_rows; ++r) {
      m->tensor_index(m->global_row(ctx, r), 0, index);
      std::copy(index.begin(), index.begin() + static_cast<std::ptrdiff_t>(split),
                row_modes.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * split));
    }
    index.assign(rank, 0);
    for (int c = 0; c < m->local_cols; ++c) {
      m->tensor_index(0, m->global_col(ctx, c), index);
      T* column = m->local.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(m->lld());
      for (int r = 0; r < m->local_rows; ++r) {
        const std::size_t* modes = row_modes.data() + static_cast<std::size_t>(r) * split;
        for (std::size_t k = 0; k < split; ++k) index[k] = modes[k];
        column[r] = f(index);
      }
    }
  });
  proxy_ = proxy_holding<T>(std::move(m), shape);
  detail::register_proxy<T>(proxy_.get());
}

template <class T>
DistributedTensor<T> DistributedTensor<T>::from_local(const Context& context, Shape shape, std::vector<T> local) {
  const DistContext& ctx = *Access::dist_context(context);
  std::shared_ptr<DistMatrix<T>> m;
  detail::agreed(ctx, [&] {
    m = detail::make_canonical<T>(ctx, shape.extents());
    if (local.size() != m->local.size()) {
      throw ShapeError("tenex: DistributedTensor::from_local: rank " + std::to_string(ctx.rank) + " gave " +
                       std::to_string(local.size()) + " elements for a tensor of extents " +
                       tenex::detail::format_extents(shape.extents()) + " whose local part there is " +
                       std::to_string(m->local_rows) + " x " + std::to_string(m->local_cols) + " = " +
                       std::to_string(m->local.size()) + " elements (local_rows_of x local_cols_of)");
    }
    m->local = std::move(local);
  });
  return DistributedTensor(context, proxy_holding<T>(std::move(m), shape));
}

template <class T>
DistributedTensor<T> DistributedTensor<T>::from_replicated(const Context& context, const Tensor<T>& full) {
  const DistContext& ctx = *Access::dist_context(context);
  std::shared_ptr<DistMatrix<T>> m;
  detail::agreed(ctx, [&] {
    m = detail::make_canonical<T>(ctx, full.shape().extents());
    if (full.size() != 0) detail::scatter_local(ctx, full.data(), *m);
  });
  return DistributedTensor(context, proxy_holding<T>(std::move(m), full.shape()));
}

template <class T>
DistributedTensor<T>::~DistributedTensor() {
  if (proxy_) detail::unregister_proxy<T>(proxy_.get());
}

template <class T>
DistributedTensor<T>::DistributedTensor(DistributedTensor&& o) noexcept
    : context_(o.context_), proxy_(std::move(o.proxy_)) {}

template <class T>
DistributedTensor<T>& DistributedTensor<T>::operator=(DistributedTensor&& o) noexcept {
  if (this != &o) {
    if (proxy_) detail::unregister_proxy<T>(proxy_.get());
    context_ = o.context_;
    proxy_ = std::move(o.proxy_);
  }
  return *this;
}

namespace {

template <class T>
void check_alive(const std::shared_ptr<Tensor<T>>& proxy) {
  if (!proxy) throw Error("tenex: DistributedTensor: this object was moved from; assign it a value first");
}

}  // namespace

template <class T>
const Shape& DistributedTensor<T>::shape() const {
  check_alive(proxy_);
  return proxy_->shape();
}

template <class T>
std::size_t DistributedTensor<T>::row_modes() const {
  return detail::canonical_split(shape().rank());
}

namespace {

/// The distributed value of `proxy` (evaluating it first); a value computed on another
/// backend (every rank holds it in full) is distributed here.
template <class T>
std::shared_ptr<DistMatrix<T>> matrix_of(const Context& context, const std::shared_ptr<Tensor<T>>& proxy) {
  check_alive(proxy);
  proxy->wait();
  const char* const no_value =
      "tenex: DistributedTensor: no value yet; assign it (c(\"i,j\") = ...) or build it from data";
  auto storage = Access::storage(*proxy);
  // Never assigned: the same on every rank (the program is SPMD), so no agreement is needed.
  if (!storage) throw Error(no_value);
  if (const auto* value = detail::distributed_value<T>(*storage)) return value->parts.at(0);
  const DistContext& ctx = *Access::dist_context(context);
  std::shared_ptr<DistMatrix<T>> m;
  detail::agreed(ctx, [&] {
    if (!storage->elements() && storage->shape().size() != 0) throw Error(no_value);
    m = detail::make_canonical<T>(ctx, storage->shape().extents());
    if (storage->elements()) detail::scatter_local(ctx, storage->elements(), *m);
  });
  return m;
}

}  // namespace

template <class T>
std::size_t DistributedTensor<T>::local_rows() const {
  return static_cast<std::size_t>(matrix_of(context_, proxy_)->local_rows);
}
template <class T>
std::size_t DistributedTensor<T>::local_cols() const {
  return static_cast<std::size_t>(matrix_of(context_, proxy_)->local_cols);
}
template <class T>
std::vector<T> DistributedTensor<T>::local_data() const {
  return matrix_of(context_, proxy_)->local;
}

template <class T>
typename DistributedTensor<T>::Index DistributedTensor<T>::global_index(std::size_t local_row,
                                                                        std::size_t local_col) const {
  auto m = matrix_of(context_, proxy_);
  if (local_row >= static_cast<std::size_t>(m->local_rows) || local_col >= static_cast<std::size_t>(m->local_cols)) {
    throw Error("tenex: DistributedTensor::global_index: local element (" + std::to_string(local_row) + ", " +
                std::to_string(local_col) + ") is outside this rank's " + std::to_string(m->local_rows) + " x " +
                std::to_string(m->local_cols) + " part");
  }
  Index index;
  const DistContext& ctx = *Access::dist_context(context_);
  m->tensor_index(m->global_row(ctx, static_cast<int>(local_row)), m->global_col(ctx, static_cast<int>(local_col)),
                  index);
  return index;
}

template <class T>
void DistributedTensor<T>::for_each_local(const std::function<void(const Index&, T)>& f) const {
  auto m = matrix_of(context_, proxy_);
  const DistContext& ctx = *Access::dist_context(context_);
  Index index;
  for (int c = 0; c < m->local_cols; ++c) {
    const auto gc = m->global_col(ctx, c);
    for (int r = 0; r < m->local_rows; ++r) {
      m->tensor_index(m->global_row(ctx, r), gc, index);
      f(index, m->local[static_cast<std::size_t>(c) * m->lld() + r]);
    }
  }
}

template <class T>
Tensor<T> DistributedTensor<T>::gather(int root) const {
  auto m = matrix_of(context_, proxy_);
  const DistContext& ctx = *Access::dist_context(context_);
  if (root < 0 || root >= ctx.size) {
    throw Error("tenex: DistributedTensor::gather: root " + std::to_string(root) + " is not a rank of the " +
                std::to_string(ctx.size) + "-rank context");
  }
  std::vector<T> full = detail::gather(ctx, *m, root);
  if (ctx.rank != root) return Tensor<T>(Shape{0});
  return Tensor<T>(Shape(m->extents), std::move(full));
}

template <class T>
Tensor<T> DistributedTensor<T>::gather_all() const {
  auto m = matrix_of(context_, proxy_);
  std::vector<T> full = detail::gather(*Access::dist_context(context_), *m, -1);
  return Tensor<T>(Shape(m->extents), std::move(full));
}

template <class T>
bool DistributedTensor<T>::pending() const {
  check_alive(proxy_);
  return proxy_->pending();
}

template <class T>
void DistributedTensor<T>::wait() const {
  check_alive(proxy_);
  // The backend agrees on every failure inside the set, so a stored error is the same on
  // every rank and each rethrows it here.
  proxy_->wait();
}

template <class T>
Indexed<Tensor<T>> DistributedTensor<T>::operator()(std::string_view labels) {
  check_alive(proxy_);
  if (default_backend() != BackendKind::distributed) {
    throw BackendError("tenex: DistributedTensor(\"" + std::string(labels) +
                       "\"): a distributed tensor takes part in sets on the distributed backend only; call "
                       "tenex::set_default_backend(tenex::BackendKind::distributed) (or TENEX_BACKEND=distributed) "
                       "first, or gather it into a Tensor");
  }
  return (*proxy_)(labels);
}

template <class T>
std::size_t DistributedTensor<T>::local_rows_of(const Context& context, const Shape& shape) {
  return static_cast<std::size_t>(local_count(*Access::dist_context(context), shape, true));
}
template <class T>
std::size_t DistributedTensor<T>::local_cols_of(const Context& context, const Shape& shape) {
  return static_cast<std::size_t>(local_count(*Access::dist_context(context), shape, false));
}

#define TENEX_INSTANTIATE_DISTRIBUTED_TENSOR(T) template class DistributedTensor<T>;
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_DISTRIBUTED_TENSOR)
#undef TENEX_INSTANTIATE_DISTRIBUTED_TENSOR

}  // namespace tenex::dist
