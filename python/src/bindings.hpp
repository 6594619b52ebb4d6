// The pieces of the Python module `tenex._tenex`; module.cpp calls each once.
#pragma once

#include <pybind11/pybind11.h>

namespace tenex_python {

/// tenex.Error and its subclasses, and the translation of the C++ exceptions to them: a binding
/// throws tenex::Error (or a subclass) and Python sees the matching class with the same message.
void bind_errors(pybind11::module_& m);
/// tenex.einsum.
void bind_einsum(pybind11::module_& m);
/// tenex.contract_path and tenex.PathInfo.
void bind_contract_path(pybind11::module_& m);
/// tenex.Tensor, the expressions, lazy(), the algebra's functions, explain, set_backend,
/// set_memory_limit.
void bind_objects(pybind11::module_& m);
/// tenex._eigsh, tenex._expm_multiply (krylov.cpp): the Krylov solvers over numpy operators.
void bind_krylov(pybind11::module_& m);

}  // namespace tenex_python
