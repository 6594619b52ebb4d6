// tenex.Error and its subclasses, one per C++ exception class of tenex/error.hpp, and the
// translator that turns every tenex::Error leaving a binding into the matching Python exception
// with the C++ message. ShapeError is also a ValueError and NumericalError an ArithmeticError,
// so code written for numpy's exceptions catches them.
#include <Python.h>

#include <exception>
#include <string>

#include "bindings.hpp"
#include "tenex/error.hpp"

namespace tenex_python {

namespace py = pybind11;

namespace {

// The classes, made once when the module is imported; the module holds a reference to each,
// and these keep their own (never released: a translator may run until the interpreter ends).
PyObject* error_class = nullptr;
PyObject* shape_error_class = nullptr;
PyObject* numerical_error_class = nullptr;
PyObject* backend_error_class = nullptr;
PyObject* internal_error_class = nullptr;

PyObject* make_class(py::module_& m, const char* name, const char* doc, py::handle bases) {
  const std::string qualified = std::string("tenex.") + name;  // __module__ "tenex", as users import it
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

// Raises the Python exception of a C++ exception of `kind` (the test of the translation: the
// classes other than ShapeError need a failing decomposition or a missing device otherwise).
void raise_for_test(const std::string& kind, const std::string& message) {
  if (kind == "Error") throw tenex::Error(message);
  if (kind == "ShapeError") throw tenex::ShapeError(message);
  if (kind == "NumericalError") throw tenex::NumericalError(message);
  if (kind == "BackendError") throw tenex::BackendError(message);
  if (kind == "InternalError") throw tenex::InternalError(message);
  throw py::value_error("tenex._raise_for_test: no C++ exception class " + kind);
}

}  // namespace

void bind_errors(py::module_& m) {
  error_class = make_class(m, "Error", "Base of every exception tenex raises (C++ tenex::Error).", PyExc_Exception);
  shape_error_class =
      make_class(m, "ShapeError",
                 "Labels, subscripts, ranks or extents that do not fit together (C++ tenex::ShapeError); a ValueError.",
                 py::make_tuple(py::handle(error_class), py::handle(PyExc_ValueError)));
  numerical_error_class =
      make_class(m, "NumericalError",
                 "A numerical routine failed: a matrix that is not positive definite, a solver that did not converge "
                 "(C++ tenex::NumericalError); an ArithmeticError.",
                 py::make_tuple(py::handle(error_class), py::handle(PyExc_ArithmeticError)));
  backend_error_class = make_class(
      m, "BackendError",
      "A backend could not be used or failed: no CUDA device, out of memory (C++ tenex::BackendError).", error_class);
  internal_error_class =
      make_class(m, "InternalError",
                 "A broken invariant inside tenex: a bug, please report it (C++ tenex::InternalError).", error_class);

  // Most derived first: a catch of tenex::Error would also take the subclasses.
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const tenex::ShapeError& e) {
      PyErr_SetString(shape_error_class, e.what());
    } catch (const tenex::NumericalError& e) {
      PyErr_SetString(numerical_error_class, e.what());
    } catch (const tenex::BackendError& e) {
      PyErr_SetString(backend_error_class, e.what());
    } catch (const tenex::InternalError& e) {
      PyErr_SetString(internal_error_class, e.what());
    } catch (const tenex::Error& e) {
      PyErr_SetString(error_class, e.what());
    }
  });

  m.def("_raise_for_test", &raise_for_test, py::arg("kind"), py::arg("message"),
        "Throws the C++ exception tenex::<kind>(message) (tests of the translation).");
}

}  // namespace tenex_python
