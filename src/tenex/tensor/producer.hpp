// Producer: what a pending storage knows of the set that will fill it.
//
// tensor/ sits below the expression layer, so a pending result reaches the linked set
// that produces it through this interface only: reading the result calls flush().
#pragma once

namespace tenex::detail {

class Producer {
 public:
  /// Evaluates what the producing set has recorded so far; errors go to the results.
  virtual void flush() noexcept = 0;

 protected:
  ~Producer() = default;
};

}  // namespace tenex::detail
