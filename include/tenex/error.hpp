// tenex/error.hpp — the exceptions tenex throws.
//
// Every user error throws tenex::Error (or a subclass) with a message that
// names the operation, the labels and extents involved, and how to fix it.
//
//   try { c("i,j") = a("i,k") * b("j,k,l"); }
//   catch (const tenex::ShapeError& e) { std::puts(e.what()); }
#pragma once

#include <stdexcept>
#include <string>

#include "tenex/export.hpp"

namespace tenex {

/// Base of every exception tenex throws.
class TENEX_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
  ~Error() override;
};

/// Labels, ranks or extents that do not fit together, detected when a
/// statement is written.
class TENEX_API ShapeError : public Error {
 public:
  using Error::Error;
  ~ShapeError() override;
};

/// A numerical routine failed at evaluation time (a matrix that is not
/// positive definite, a solver that did not converge).
class TENEX_API NumericalError : public Error {
 public:
  using Error::Error;
  ~NumericalError() override;
};

/// A backend could not be used or failed (no CUDA device, out of memory).
class TENEX_API BackendError : public Error {
 public:
  using Error::Error;
  ~BackendError() override;
};

/// A broken invariant inside tenex: a bug, please report it.
class TENEX_API InternalError : public Error {
 public:
  using Error::Error;
  ~InternalError() override;
};

}  // namespace tenex
