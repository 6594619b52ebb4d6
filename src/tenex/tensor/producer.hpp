// Producer: what a pending storage knows of the set that will fill it.
//
// tensor/ sits below the expression layer, so a pending result reaches the linked set
// that produces it through this interface only: reading the result calls flush().
#pragma once

#include <mutex>

namespace tenex::detail {

/// Guards every linked set (the expression layer's LinkedState) and the producer links of
/// pending storages, so that statements built on several threads that share a pending result
/// join one set safely. Recursive: releasing the last handle of a set inside a locked section
/// evaluates the set. Held for bookkeeping only, never while a set is evaluated.
std::recursive_mutex& sets_mutex();

class Producer {
 public:
  /// Evaluates what the producing set has recorded so far; errors go to the results.
  virtual void flush() noexcept = 0;
  /// Whether the extents of its results are decided when it runs (a truncated decomposition's
  /// kept rank): Tensor::shape() of a pending result then runs it first.
  virtual bool decides_extents() const { return false; }

 protected:
  ~Producer() = default;
};

}  // namespace tenex::detail
