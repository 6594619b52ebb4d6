#include "arrays.hpp"
#include "bindings.hpp"

namespace tenex_python {

void bind_objects(pybind11::module_& m) { (void)m; }

}  // namespace tenex_python
