// The distributed backend (dist_backend.hpp): its values and storages, what it supports, the
// inputs, outputs and reductions, and the plugin's entry. Its kernels by kind: dist_contract.cpp,
// dist_elementwise.cpp, dist_linalg.cpp; their shared helpers: dist_kernels.hpp.
#include "tenex/backend/dist/dist_backend.hpp"

#include "tenex/backend/dist/dist_kernels.hpp"
#include "tenex/backend/plugin.hpp"

namespace tenex::dist::detail {

using namespace kernels;  // NOLINT: this file's own helpers

template <class T>
Buffer make_value_buffer(std::shared_ptr<DistMatrix<T>> value) {
  Buffer b = new_handle<T>(value->local.size() * sizeof(T));
  static_cast<DistValue<T>*>(b.data())->parts = {std::move(value)};
  return b;
}

template <class T>
const DistValue<T>* distributed_value(Storage<T>& storage) {
  if (!storage.device_copy_valid() || !is_handle(storage.device_copy().data())) return nullptr;
  return static_cast<const DistValue<T>*>(storage.device_copy().data());
}

namespace {
template <class T>
std::set<const Tensor<T>*>& proxies() {
  static auto* set = new std::set<const Tensor<T>*>;
  return *set;
}
std::mutex proxies_mutex;
}  // namespace

template <class T>
void register_proxy(const Tensor<T>* proxy) {
  std::lock_guard<std::mutex> lock(proxies_mutex);
  proxies<T>().insert(proxy);
}
template <class T>
void unregister_proxy(const Tensor<T>* proxy) {
  std::lock_guard<std::mutex> lock(proxies_mutex);
  proxies<T>().erase(proxy);
}

namespace {
template <class T>
bool is_proxy_storage(const Storage<T>& storage) {
  std::lock_guard<std::mutex> lock(proxies_mutex);
  for (const Tensor<T>* p : proxies<T>()) {
    if (tenex::detail::Access::storage(*p).get() == &storage) return true;
  }
  return false;
}
}  // namespace

template <class T>
bool DistBackend<T>::supports(const OpNode& node, std::string& why) const {
  // Every op kind runs here (docs/distributed.md) but decompositions over label groups; only a
  // missing Context is refused besides.
  if (!current_context()) {
    why = "no tenex::dist::Context is alive; make one on every rank first";
    return false;
  }
  if (packed_factor_count(node.kind) != 0 && node.extents.size() != 2) {
    why = "a decomposition over label groups (an operand of rank " + std::to_string(node.extents.size()) +
          ") is not distributed; decompose a matrix (rank 2)";
    return false;
  }
  return true;
}

template <class T>
Buffer DistBackend<T>::allocate(std::size_t bytes) {
  return new_handle<T>(bytes);
}

template <class T>
View<const T> DistBackend<T>::read(Storage<T>& storage) {
  const DistContext& ctx = context();
  Buffer& copy = storage.device_copy();
  if (storage.device_copy_valid() && is_handle(copy.data())) {
    return View<const T>{static_cast<const T*>(copy.data()), storage.shape().size(), tenex::detail::Device::host};
  }
  // A tensor every rank holds in full (SPMD): each keeps its own blocks, no messages. The
  // handle stays in the storage's device copy, marked invalid (rebuilt at every read: a
  // write through Tensor::data() would not tell us).
  const T* host = storage.elements();
  MatrixPtr<T> m;
  agreed(ctx, [&] {
    if (!host && storage.shape().size() != 0) {
      throw Error("tenex: distributed backend: a tensor operand has no value on this rank");
    }
    m = make_canonical<T>(ctx, storage.shape().extents());
    if (!is_handle(copy.data())) copy = new_handle<T>(storage.shape().size() * sizeof(T));
  });
  if (host) scatter_local(ctx, host, *m);
  static_cast<DistValue<T>*>(copy.data())->parts = {m};
  storage.set_device_copy_valid(false);
  return View<const T>{static_cast<const T*>(copy.data()), storage.shape().size(), tenex::detail::Device::host};
}

template <class T>
void DistBackend<T>::write(Storage<T>& storage, Buffer&& buffer) {
  const DistContext& ctx = context();
  if (is_proxy_storage(storage)) {
    storage.device_copy() = std::move(buffer);
    storage.set_device_copy_valid(true);
    return;
  }
  // A plain Tensor target: every rank gets the whole value.
  const DistValue<T>& value = *static_cast<const DistValue<T>*>(buffer.data());
  std::vector<T> full = gather(ctx, *value.parts.at(0), -1);
  agreed(ctx, [&] { storage.allocate(); });
  std::copy(full.begin(), full.end(), storage.elements());
}

template <class T>
KernelCount DistBackend<T>::run_input(const InputParams&, const KernelArgs<T>&) {
  throw InternalError("tenex: distributed backend: an input node is not a kernel");
}

template <class T>
KernelCount DistBackend<T>::run_output(const OutputParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  set_out(args, {in_canonical(ctx, operand(args, 0), params.operand_labels, args.node.labels, args.node.extents)});
  return {0, 1};
}

template <class T>
KernelCount DistBackend<T>::run_reduce(const ReduceParams&, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const Labels& operand_labels = args.operand_nodes[0]->labels;
  if (args.node.labels.empty() &&
      std::set<std::string>(operand_labels.begin(), operand_labels.end()).size() == operand_labels.size()) {
    // A sum of every element to a scalar (not a trace: no label repeats): each rank sums its own
    // elements, then one MPI_Allreduce (a summing remap would send every element to the rank
    // that holds the scalar).
    const DistMatrix<T>& a = *operand(args, 0);
    T local = T(0);
    for (int c = 0; c < a.local_cols; ++c) {
      const T* column = a.local.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(a.lld());
      for (int r = 0; r < a.local_rows; ++r) local += column[r];
    }
    T total = local;
    MPI_Allreduce(&local, &total, 1, mpi_type<T>(), MPI_SUM, ctx.comm);
    MatrixPtr<T> s = allocate_canonical<T>(ctx, {});
    if (!s->local.empty()) s->local[0] = total;
    set_out(args, {s});
    double elements = 1;
    for (std::size_t e : args.operand_nodes[0]->extents) elements *= static_cast<double>(e);
    return {elements, 1};
  }
  set_out(args,
          {in_canonical(ctx, operand(args, 0), args.operand_nodes[0]->labels, args.node.labels, args.node.extents)});
  return {0, 1};
}

#define TENEX_INSTANTIATE_DIST_BACKEND(T)                               \
  template class DistBackend<T>;                                        \
  template Buffer make_value_buffer<T>(std::shared_ptr<DistMatrix<T>>); \
  template const DistValue<T>* distributed_value<T>(Storage<T>&);       \
  template void register_proxy<T>(const Tensor<T>*);                    \
  template void unregister_proxy<T>(const Tensor<T>*);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_DIST_BACKEND)
#undef TENEX_INSTANTIATE_DIST_BACKEND

}  // namespace tenex::dist::detail

namespace {
int dist_available() { return tenex::dist::detail::current_context() != nullptr ? 1 : 0; }
}  // namespace

// The plugin's one export (tenex/backend/plugin.hpp): the registry loads libtenex_dist.so (already
// loaded in a program that links it for tenex::dist::Context) and registers this entry when a
// set asks for the distributed backend.
extern "C" __attribute__((visibility("default"))) const TenexBackendPlugin* tenex_backend_plugin_entry(void) {
  static const TenexBackendPlugin entry{
      TENEX_BACKEND_ABI_VERSION,
      tenex::plugin::kOpKinds,
      "distributed",
      TENEX_VERSION_STRING,
      TENEX_ELEMENT_ALL,
      &dist_available,
      &tenex::plugin::create_backend<tenex::dist::detail::DistBackend, TENEX_ELEMENT_ALL>};
  return &entry;
}
