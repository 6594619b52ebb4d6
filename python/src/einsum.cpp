#include "arrays.hpp"
#include "bindings.hpp"

namespace tenex_python {

void bind_einsum(pybind11::module_& m) { (void)m; }

}  // namespace tenex_python
