// The Python module's objects: tenex.Tensor and lazy (objects_tensor.cpp), the expressions and
// their operators (objects_expr.cpp), the algebra's functions (objects_algebra.cpp).
#include "objects.hpp"
#include "bindings.hpp"

namespace tenex_python {

void bind_objects(py::module_& m) {
  bind_expressions(m);
  bind_tensor(m);
  bind_algebra(m);
}

}  // namespace tenex_python
