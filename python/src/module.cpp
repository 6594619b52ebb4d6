// The extension module tenex._tenex (the package tenex/ re-exports it).
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "tenex/config.hpp"

PYBIND11_MODULE(_tenex, m) {
  m.doc() = "tenex: tensor algebra in Einstein notation (the C++ library's Python bindings)";
  m.attr("__version__") = TENEX_VERSION_STRING;
  tenex_python::bind_errors(m);
  tenex_python::bind_einsum(m);
  tenex_python::bind_contract_path(m);
  tenex_python::bind_objects(m);
  tenex_python::bind_krylov(m);
}
