// The Krylov solvers for Python: tenex._eigsh and tenex._expm_multiply run tenex::eigsh and
// tenex::expm_multiply with an operator on numpy arrays (matvec(x) -> y), which
// tenex/__init__.py makes from the user's function of tenex Tensors. Each product copies x into
// numpy and y back (O(n), beside the product's own work).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <complex>
#include <string>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "arrays.hpp"
#include "bindings.hpp"

namespace tenex_python {

namespace {

namespace py = pybind11;

/// tenex's operator over the Python function `matvec` of numpy arrays.
template <class T>
auto array_operator(const py::function& matvec) {
  return [&matvec](const tenex::Tensor<T>& x, tenex::Tensor<T>& y) {
    py::object result = matvec(array_from_tensor(x));
    py::array values = py::array::ensure(result);
    if (!values) throw py::type_error("tenex: the operator returned " + py::repr(result).cast<std::string>() +
                                      ", not an array");
    y = tensor_from_array<T>(values);
  };
}

tenex::EigshOptions eigsh_options(std::size_t k, const std::string& which, double tol, std::size_t max_iter,
                                  std::size_t krylov_dim) {
  tenex::EigshOptions options{.k = k, .tol = tol, .max_iter = max_iter, .krylov_dim = krylov_dim};
  if (which == "smallest" || which == "SA") {
    options.which = tenex::EigshOptions::smallest;
  } else if (which == "largest" || which == "LA") {
    options.which = tenex::EigshOptions::largest;
  } else {
    throw py::value_error("tenex.eigsh: which=" + py::repr(py::str(which)).cast<std::string>() +
                          "; use \"smallest\" or \"largest\"");
  }
  return options;
}

py::tuple eigsh(const py::function& matvec, const py::array& x0, std::size_t k, const std::string& which, double tol,
                std::size_t max_iter, std::size_t krylov_dim) {
  const tenex::EigshOptions options = eigsh_options(k, which, tol, max_iter, krylov_dim);
  return with_dtype(dtype_of(x0), [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto [values, vectors] = tenex::eigsh(array_operator<T>(matvec), tensor_from_array<T>(x0), options);
    py::list arrays;
    for (const tenex::Tensor<T>& v : vectors) arrays.append(array_from_tensor(v));
    return py::make_tuple(py::array_t<double>(static_cast<py::ssize_t>(values.size()), values.data()), arrays);
  });
}

py::array expm_multiply(const py::function& matvec, const py::array& x, std::complex<double> t, double tol) {
  return with_dtype(dtype_of(x), [&](auto tag) -> py::array {
    using T = typename decltype(tag)::type;
    T time;
    if constexpr (tenex::is_complex_v<T>) {
      time = T(t);
    } else {
      if (t.imag() != 0) throw py::type_error("tenex.expm_multiply: a complex t needs a complex x");
      time = static_cast<T>(t.real());
    }
    return array_from_tensor(tenex::expm_multiply(array_operator<T>(matvec), tensor_from_array<T>(x), time, tol));
  });
}

}  // namespace

void bind_krylov(py::module_& m) {
  m.def("_eigsh", &eigsh, py::arg("matvec"), py::arg("x0"), py::arg("k"), py::arg("which"), py::arg("tol"),
        py::arg("max_iter"), py::arg("krylov_dim"),
        "tenex::eigsh with an operator on numpy arrays (tenex.eigsh wraps it)");
  m.def("_expm_multiply", &expm_multiply, py::arg("matvec"), py::arg("x"), py::arg("t"), py::arg("tol"),
        "tenex::expm_multiply with an operator on numpy arrays (tenex.expm_multiply wraps it)");
}

}  // namespace tenex_python
