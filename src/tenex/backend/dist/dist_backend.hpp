// The distributed backend: every value is a handle (DistValue) onto block-cyclic matrices
// on the grid of the current dist::Context; kernels are collective (SPMD: every rank runs
// the same graph in the same order).
#pragma once

#include <memory>

#include "tenex/backend/backend_interface.hpp"
#include "tenex/backend/dist/dist_matrix.hpp"
#include "tenex/backend/registry.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex::dist::detail {

using tenex::detail::Backend;
using tenex::detail::Buffer;
using tenex::detail::KernelArgs;
using tenex::detail::KernelCount;
using tenex::detail::Storage;
using tenex::detail::View;

template <class T>
class DistBackend final : public Backend<T> {
 public:
  std::string_view name() const override { return "distributed"; }
  tenex::detail::Device device() const override { return tenex::detail::Device::host; }
  /// Its values are not whole on this process: a node supports() declines fails the set.
  tenex::detail::BackendCapabilities capabilities() const override {
    tenex::detail::BackendCapabilities c;
    c.host_fallback = false;
    return c;
  }
  bool supports(const OpNode& node, std::string& why) const override;
  Buffer allocate(std::size_t bytes) override;
  View<const T> read(Storage<T>& storage) override;
  void write(Storage<T>& storage, Buffer&& buffer) override;

#define TENEX_DIST_METHOD(kind, arity, Params) \
  KernelCount run_##kind(const Params& params, const KernelArgs<T>& args) override;
  TENEX_FOR_EACH_OP(TENEX_DIST_METHOD)
#undef TENEX_DIST_METHOD
};

/// A buffer holding a handle onto `value` (what allocate() returns, filled).
template <class T>
Buffer make_value_buffer(std::shared_ptr<DistMatrix<T>> value);
/// The distributed value a storage holds (a DistributedTensor's), or null.
template <class T>
const DistValue<T>* distributed_value(Storage<T>& storage);

/// DistributedTensor's proxies: results assigned to them stay distributed (no host copy).
template <class T>
void register_proxy(const Tensor<T>* proxy);
template <class T>
void unregister_proxy(const Tensor<T>* proxy);

}  // namespace tenex::dist::detail
