// tenex::last_truncation(): what the last truncated decomposition of this thread kept. The
// executor records it (detail::set_last_truncation) when it reads a truncated node's result.
#include "tenex/truncation.hpp"

#include "tenex/last_truncation.hpp"

namespace tenex {

namespace {
TruncationResult& last() {
  thread_local TruncationResult result;
  return result;
}
}  // namespace

TruncationResult last_truncation() { return last(); }

namespace detail {
void set_last_truncation(const TruncationResult& result) noexcept { last() = result; }
}  // namespace detail

}  // namespace tenex
