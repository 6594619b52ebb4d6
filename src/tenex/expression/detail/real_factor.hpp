// The real values of a decomposition of a complex matrix (Hermitian eigenvalues, singular
// values) as an expression over the real tensor type.
#pragma once

#include <complex>
#include <typeinfo>

#include "tenex/expression/expression.hpp"

namespace tenex::detail {

/// A handle over Tensor<R> on the real part of `factor`, a factor of a complex decomposition
/// whose values are real. The factor is assigned, in its own set (the decomposition's, shared
/// with the complex factors of the call), to a hidden tensor whose real part the new handle's
/// node reads when its set runs: the decomposition runs once for both. `made_by` is the public
/// class the handle is returned as.
template <class R>
Handle real_factor(const Expression<Tensor<std::complex<R>>>& factor, const std::type_info& made_by);

}  // namespace tenex::detail
