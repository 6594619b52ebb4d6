// tenex expressions in Python: `a["i,k"] * b["k,j"]`, scalars on either side, mixed dtypes.
#include <pybind11/stl.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "objects.hpp"

namespace tenex_python {

namespace {

using cfloat = std::complex<float>;
using cdouble = std::complex<double>;

// A Python number as tenex takes it: a real double, or a complex one (Python complex,
// numpy.complexfloating).
struct Scalar {
  bool complex = false;
  std::complex<double> value;
};

bool is_complex_scalar(const py::handle& object) {
  if (PyComplex_Check(object.ptr())) return true;
  if (py::isinstance<py::array>(object)) return py::reinterpret_borrow<py::array>(object).dtype().kind() == 'c';
  // Leaked on purpose: a static py::object would be released after the interpreter is gone.
  static const py::handle complexfloating = py::object(py::module_::import("numpy").attr("complexfloating")).release();
  return py::isinstance(object, complexfloating);
}

// False for what is no number (the operator then returns NotImplemented).
bool scalar_of(const py::handle& object, Scalar& scalar) {
  if (py::isinstance<Expr>(object) || py::isinstance<py::str>(object)) return false;
  if (is_complex_scalar(object)) {
    scalar.complex = true;
    scalar.value = object.cast<std::complex<double>>();
    return true;
  }
  if (PyFloat_Check(object.ptr()) || PyLong_Check(object.ptr()) || PyObject_HasAttrString(object.ptr(), "__float__")) {
    if (py::isinstance<py::array>(object) && py::reinterpret_borrow<py::array>(object).ndim() != 0) return false;
    scalar.value = py::float_(py::reinterpret_borrow<py::object>(object)).cast<double>();
    return true;
  }
  return false;
}

// The complex type of the same precision.
Dtype complex_of(Dtype dtype) {
  return (dtype == Dtype::float32 || dtype == Dtype::complex64) ? Dtype::complex64 : Dtype::complex128;
}

enum class Op { add, subtract, multiply, divide };

Expr binary(const Expr& lhs, const Expr& rhs, Op op) {
  const Dtype dtype = promoted(lhs.dtype(), rhs.dtype());
  const Expr a = cast_to(lhs, dtype);
  const Expr b = cast_to(rhs, dtype);
  std::vector<py::object> keep = joined(a.keep, b.keep);
  return with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto& x = expression_of<T>(a);
    const auto& y = expression_of<T>(b);
    switch (op) {
      case Op::add: return make_expr(x + y, std::move(keep));
      case Op::subtract: return make_expr(x - y, std::move(keep));
      case Op::multiply: return make_expr(x * y, std::move(keep));
      case Op::divide: break;
    }
    return make_expr(x / y, std::move(keep));
  });
}

// The dtype of `e op s`: numpy.result_type of an array of e's dtype and the scalar `object`,
// which numpy 1.24 casts by value (float32 stays float32 unless the value needs float64's range,
// as 1e300 does). Where numpy's answer is none of the four (a Python int past int64: object), e's
// precision, complex for a complex s.
Dtype scalar_result_dtype(Dtype dtype, const py::handle& object, const Scalar& s) {
  const Dtype fallback = s.complex ? complex_of(dtype) : dtype;
  if (fallback == Dtype::complex128 || (fallback == Dtype::float64 && !s.complex)) return fallback;  // none wider
  // Leaked on purpose, as complexfloating above.
  static const py::handle result_type = py::object(py::module_::import("numpy").attr("result_type")).release();
  try {
    py::dtype common = py::dtype::from_args(result_type(numpy_dtype(dtype), object));
    if (const std::optional<Dtype> d = dtype_of_num(common.num())) return *d;
  } catch (const py::error_already_set&) {  // numpy takes no such scalar (a Fraction): tenex's rule
  }
  return fallback;
}

// `e op s` (scalar_first: `s op e`), in the dtype of scalar_result_dtype.
Expr with_scalar(const Expr& e, const Scalar& s, const py::handle& object, Op op, bool scalar_first) {
  const Expr operand = cast_to(e, scalar_result_dtype(e.dtype(), object, s));
  return with_dtype(operand.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto& x = expression_of<T>(operand);
    if constexpr (tenex::is_complex_v<T>) {
      if (s.complex) {
        switch (op) {
          case Op::multiply: return make_expr(tenex::Scale<tenex::Tensor<T>>(x, s.value), operand.keep);
          case Op::divide:
            if (scalar_first) {
              return make_expr(tenex::Scale<tenex::Tensor<T>>(tenex::reciprocal(x), s.value), operand.keep);
            }
            return make_expr(x / s.value, operand.keep);
          case Op::add:
          case Op::subtract: break;
        }
        // A rank-0 tensor holding s, broadcast over x's labels.
        tenex::Tensor<T> constant(tenex::Shape{}, std::vector<T>{static_cast<T>(s.value)});
        auto c = constant("");
        if (op == Op::add) return make_expr(x + c, operand.keep);
        if (scalar_first) return make_expr(c - x, operand.keep);
        return make_expr(x - c, operand.keep);
      }
    }
    const double v = s.value.real();
    switch (op) {
      case Op::add: return scalar_first ? make_expr(v + x, operand.keep) : make_expr(x + v, operand.keep);
      case Op::subtract: return scalar_first ? make_expr(v - x, operand.keep) : make_expr(x - v, operand.keep);
      case Op::multiply: return make_expr(v * x, operand.keep);
      case Op::divide: break;
    }
    return scalar_first ? make_expr(v / x, operand.keep) : make_expr(x / v, operand.keep);
  });
}

py::object operate(const Expr& e, const py::object& other, Op op, bool reflected) {
  if (py::isinstance<Expr>(other)) {
    const Expr& o = other.cast<const Expr&>();
    return py::cast(reflected ? binary(o, e, op) : binary(e, o, op));
  }
  Scalar s;
  if (!scalar_of(other, s)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return py::cast(with_scalar(e, s, other, op, reflected));
}

// The labels of one side of a sparse map ("i" or "i,j"): how many.
std::size_t label_count(const std::string& labels) {
  std::size_t n = labels.empty() ? 0 : 1;
  for (char c : labels) n += c == ',' ? 1 : 0;
  return n;
}

std::vector<std::size_t> index_tuple(const py::handle& object) {
  if (py::isinstance<py::tuple>(object) || py::isinstance<py::list>(object)) {
    std::vector<std::size_t> tuple;
    for (const py::handle item : object)
      tuple.push_back(py::int_(py::reinterpret_borrow<py::object>(item)).cast<std::size_t>());
    return tuple;
  }
  return {py::int_(py::reinterpret_borrow<py::object>(object)).cast<std::size_t>()};
}

// A dict {source: [targets]} (ints, or tuples for several modes), or an integer array of
// allowed pairs, one a row: the source indices, then the target indices.
tenex::SparseMap sparse_map_of(const std::string& from, const std::string& to, const py::object& mapping) {
  tenex::SparseMap map;
  if (py::isinstance<py::dict>(mapping)) {
    for (const auto& [source, targets] : mapping.cast<py::dict>()) {
      std::vector<tenex::SparseMap::Index> allowed;
      for (const py::handle target : targets) allowed.push_back(index_tuple(target));
      map.insert(index_tuple(source), allowed);
    }
    return map;
  }
  const std::size_t s = label_count(from);
  const std::size_t t = label_count(to);
  const auto pairs = py::array_t<long long, py::array::c_style | py::array::forcecast>::ensure(mapping);
  if (!pairs || pairs.ndim() != 2 || static_cast<std::size_t>(pairs.shape(1)) != s + t) {
    throw py::value_error(
        "tenex: set_sparse_map takes a dict {source: [targets]} or an integer array of shape (pairs, " +
        std::to_string(s + t) + "): the source indices (" + from + "), then the target indices (" + to +
        ") of each allowed pair");
  }
  std::map<tenex::SparseMap::Index, std::vector<tenex::SparseMap::Index>> rows;
  for (py::ssize_t r = 0; r < pairs.shape(0); ++r) {
    tenex::SparseMap::Index source, target;
    for (std::size_t c = 0; c < s + t; ++c) {
      const long long v = pairs.at(r, static_cast<py::ssize_t>(c));
      if (v < 0) throw py::value_error("tenex: set_sparse_map: a negative index in row " + std::to_string(r));
      (c < s ? source : target).push_back(static_cast<std::size_t>(v));
    }
    rows[source].push_back(target);
  }
  for (const auto& [source, targets] : rows) map.insert(source, targets);
  return map;
}

}  // namespace

std::vector<py::object> joined(const std::vector<py::object>& a, const std::vector<py::object>& b) {
  std::vector<py::object> all = a;
  all.insert(all.end(), b.begin(), b.end());
  return all;
}

py::dtype numpy_dtype(Dtype dtype) {
  return with_dtype(dtype, [](auto tag) { return py::dtype::of<typename decltype(tag)::type>(); });
}

Dtype dtype_from(const py::object& dtype) {
  const py::dtype d = py::dtype::from_args(dtype);
  for (Dtype candidate : {Dtype::float32, Dtype::float64, Dtype::complex64, Dtype::complex128}) {
    if (d.equal(numpy_dtype(candidate))) return candidate;
  }
  throw py::type_error("tenex: dtype " + d.attr("name").cast<std::string>() +
                       " is not supported (float32, float64, complex64 or complex128)");
}

std::string dtype_text(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32: return "float32";
    case Dtype::float64: return "float64";
    case Dtype::complex64: return "complex64";
    case Dtype::complex128: break;
  }
  return "complex128";
}

Dtype promoted(Dtype a, Dtype b) {
  const auto is_complex = [](Dtype d) { return d == Dtype::complex64 || d == Dtype::complex128; };
  const auto is_wide = [](Dtype d) { return d == Dtype::float64 || d == Dtype::complex128; };
  const bool wide = is_wide(a) || is_wide(b);
  if (is_complex(a) || is_complex(b)) return wide ? Dtype::complex128 : Dtype::complex64;
  return wide ? Dtype::float64 : Dtype::float32;
}

Expr cast_to(const Expr& e, Dtype dtype) {
  if (e.dtype() == dtype) return e;
  return with_dtype(dtype, [&](auto to) {
    using U = typename decltype(to)::type;
    return with_dtype(e.dtype(), [&](auto from) -> Expr {
      using V = typename decltype(from)::type;
      if constexpr (tenex::is_complex_v<V> && !tenex::is_complex_v<U>) {
        throw py::type_error("tenex: a " + dtype_text(e.dtype()) + " expression cannot become " + dtype_text(dtype) +
                             ": say which real value you mean (tenex.real, imag, abs or arg)");
      } else {
        return make_expr(tenex::cast<U>(expression_of<V>(e)), e.keep);
      }
    });
  });
}

void bind_expressions(py::module_& m) {
  py::class_<Expr> expr(m, "Expression",
                        "A tenex expression: made by t[\"i,j\"], the operators and tenex's functions; assigned "
                        "to a Tensor by c[\"i,j\"] = expr");
  expr.attr("__array_ufunc__") = py::none();  // numpy scalars on the left defer to the reflected operators
  expr.def_property_readonly(
          "labels", [](const Expr& e) { return with_expr(e, [](const auto& x) { return x.labels(); }); },
          "The free labels of the value, in order")
      .def_property_readonly(
          "shape",
          [](const Expr& e) {
            return with_expr(e, [](const auto& x) {
              py::tuple shape(x.extents().size());
              for (std::size_t d = 0; d < x.extents().size(); ++d) shape[d] = py::int_(x.extents()[d]);
              return shape;
            });
          },
          "The extents matching labels")
      .def_property_readonly("dtype", [](const Expr& e) { return numpy_dtype(e.dtype()); })
      .def("__repr__",
           [](const Expr& e) {
             return with_expr(e, [&](const auto& x) {
               return "tenex.Expression(" + std::string(x.name()) + " " + x.to_string() + ", " + dtype_text(e.dtype()) +
                      ")";
             });
           })
      .def(
          "set_sparse_map",
          [](const Expr& e, const std::string& from, const std::string& to, const py::object& mapping) {
            const tenex::SparseMap map = sparse_map_of(from, to, mapping);
            with_expr(e, [&](const auto& x) { x.set_sparse_map(from, to, map); });
            return e;
          },
          py::arg("source_labels"), py::arg("target_labels"), py::arg("mapping"),
          "Declares, for the whole linked set, which values of the target modes may be non-zero for each value of the "
          "source modes; returns the expression")
      .def("__add__", [](const Expr& e, const py::object& o) { return operate(e, o, Op::add, false); })
      .def("__radd__", [](const Expr& e, const py::object& o) { return operate(e, o, Op::add, true); })
      .def("__sub__", [](const Expr& e, const py::object& o) { return operate(e, o, Op::subtract, false); })
      .def("__rsub__", [](const Expr& e, const py::object& o) { return operate(e, o, Op::subtract, true); })
      .def("__mul__", [](const Expr& e, const py::object& o) { return operate(e, o, Op::multiply, false); })
      .def("__rmul__", [](const Expr& e, const py::object& o) { return operate(e, o, Op::multiply, true); })
      .def("__truediv__", [](const Expr& e, const py::object& o) { return operate(e, o, Op::divide, false); })
      .def("__rtruediv__", [](const Expr& e, const py::object& o) { return operate(e, o, Op::divide, true); })
      .def("__neg__", [](const Expr& e) { return with_expr(e, [&](const auto& x) { return make_expr(-x, e.keep); }); })
      .def("__pos__", [](const Expr& e) { return e; });
}

}  // namespace tenex_python
