// tenex's functions in Python, by their C++ names: element-wise functions, reductions, casts,
// decompositions and matrix functions, explain, the backend and the memory limit.
#include <pybind11/stl.h>

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <tenex/ir.hpp>

#include "objects.hpp"

namespace tenex_python {

namespace {

// f(x) for x of e's own type, the result an Expr keeping e's Tensors.
template <class F>
Expr apply(const Expr& e, F f) {
  return with_expr(e, [&](const auto& x) { return make_expr(f(x), e.keep); });
}

// Both operands promoted to one dtype, then f(x, y).
template <class F>
Expr apply2(const Expr& a, const Expr& b, F f) {
  const Dtype dtype = promoted(a.dtype(), b.dtype());
  const Expr x = cast_to(a, dtype);
  const Expr y = cast_to(b, dtype);
  return with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return make_expr(f(expression_of<T>(x), expression_of<T>(y)), joined(x.keep, y.keep));
  });
}

// A real value of each element (real, imag, abs, arg); `real_case` gives it for a real e.
template <class Complex, class Real>
Expr complex_part(const Expr& e, Complex complex_case, Real real_case) {
  return with_dtype(e.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (tenex::is_complex_v<T>) {
      return make_expr(complex_case(expression_of<T>(e)), e.keep);
    } else {
      return make_expr(real_case(expression_of<T>(e)), e.keep);
    }
  });
}

// The factors of one decomposition as a tuple, grouped: assigned in turn outside lazy(), they
// run as one set once the last is assigned.
py::tuple as_tuple(std::vector<Expr> items) {
  const std::shared_ptr<Group> group = make_group(items.size());
  for (Expr& item : items) item.group = group;
  py::tuple t(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) t[i] = py::cast(std::move(items[i]));
  return t;
}

/// tenex.set_backend: a built-in backend or a plugin's, by name; a name no backend has is a
/// ValueError (naming the places looked in for a plugin), any other failure a tenex.Error.
void set_backend(const std::string& name) {
  try {
    tenex::set_default_backend(std::string_view(name));
  } catch (const tenex::BackendError& e) {
    if (std::string_view(e.what()).find("names no backend") == std::string_view::npos) throw;
    throw py::value_error("tenex.set_backend: \"" + name + "\" is no backend (\"cpu\", \"cuda\", \"auto\" or a " +
                          "backend plugin's name): " + e.what());
  }
}

}  // namespace

void bind_algebra(py::module_& m) {
  // ---- element-wise functions of one operand, same dtype
#define TENEX_PYTHON_UNARY(name, doc) \
  m.def(                              \
      #name, [](const Expr& e) { return apply(e, [](const auto& x) { return tenex::name(x); }); }, py::arg("e"), doc)
  TENEX_PYTHON_UNARY(exp, "e^x element by element");
  TENEX_PYTHON_UNARY(log, "The natural logarithm element by element");
  TENEX_PYTHON_UNARY(sqrt, "The square root element by element");
  TENEX_PYTHON_UNARY(square, "x*x element by element");
  TENEX_PYTHON_UNARY(sin, "sin element by element");
  TENEX_PYTHON_UNARY(cos, "cos element by element");
  TENEX_PYTHON_UNARY(tanh, "tanh element by element");
  TENEX_PYTHON_UNARY(erf, "The error function element by element");
  TENEX_PYTHON_UNARY(sign, "-1, 0 or 1 element by element (NaN for NaN)");
  TENEX_PYTHON_UNARY(reciprocal, "1/x element by element");
  TENEX_PYTHON_UNARY(conj, "The complex conjugate element by element (a real expression's own value)");
#undef TENEX_PYTHON_UNARY

  // ---- real values of complex elements (the real dtype of the same precision)
  m.def(
      "abs",
      [](const Expr& e) {
        return complex_part(
            e, [](const auto& x) { return tenex::abs(x); }, [](const auto& x) { return tenex::abs(x); });
      },
      py::arg("e"), "|x| element by element; real for a complex expression");
  m.def(
      "real",
      [](const Expr& e) {
        return complex_part(
            e, [](const auto& x) { return tenex::real(x); }, [](const auto& x) { return 1.0 * x; });
      },
      py::arg("e"), "The real part element by element (a real expression's own value)");
  m.def(
      "imag",
      [](const Expr& e) {
        return complex_part(
            e, [](const auto& x) { return tenex::imag(x); }, [](const auto& x) { return 0.0 * x; });
      },
      py::arg("e"), "The imaginary part element by element (zero for a real expression)");
  m.def(
      "arg",
      [](const Expr& e) {
        return complex_part(
            e, [](const auto& x) { return tenex::arg(x); },
            [](const auto& x) {
              using Object = typename std::decay_t<decltype(x)>::object_type;
              return tenex::Unary<Object>(x, tenex::FusedOp::arg);
            });
      },
      py::arg("e"), "The argument in (-pi, pi] element by element (0 or pi for a real expression)");
  m.def(
      "norm2", [](const Expr& e) { return apply(e, [](const auto& x) { return tenex::norm2(x); }); }, py::arg("e"),
      "The Frobenius norm, rank 0 (real for a complex expression)");

  // ---- with parameters, two operands, reductions
  m.def(
      "power", [](const Expr& e, double p) { return apply(e, [&](const auto& x) { return tenex::power(x, p); }); },
      py::arg("e"), py::arg("p"), "x^p element by element (tenex.pow is the matrix power)");
  m.def(
      "clamp",
      [](const Expr& e, double lo, double hi) {
        return apply(e, [&](const auto& x) { return tenex::clamp(x, lo, hi); });
      },
      py::arg("e"), py::arg("lo"), py::arg("hi"), "x limited to [lo, hi] element by element");
  m.def(
      "max",
      [](const Expr& a, const Expr& b) {
        return apply2(a, b, [](const auto& x, const auto& y) { return tenex::max(x, y); });
      },
      py::arg("a"), py::arg("b"), "The element-wise maximum, matched and broadcast by label (NaN wins)");
  m.def(
      "min",
      [](const Expr& a, const Expr& b) {
        return apply2(a, b, [](const auto& x, const auto& y) { return tenex::min(x, y); });
      },
      py::arg("a"), py::arg("b"), "The element-wise minimum, matched and broadcast by label (NaN wins)");
  m.def(
      "sum",
      [](const Expr& e, const std::string& labels) {
        return apply(e, [&](const auto& x) { return tenex::sum(x, labels); });
      },
      py::arg("e"), py::arg("labels"), "The sum over the labels given (\"j,k\"); the result has the others");
  m.def(
      "max_over",
      [](const Expr& e, const std::string& labels) {
        return apply(e, [&](const auto& x) { return tenex::max_over(x, labels); });
      },
      py::arg("e"), py::arg("labels"), "The maximum over the labels given");
  m.def(
      "min_over",
      [](const Expr& e, const std::string& labels) {
        return apply(e, [&](const auto& x) { return tenex::min_over(x, labels); });
      },
      py::arg("e"), py::arg("labels"), "The minimum over the labels given");
  m.def(
      "cast", [](const Expr& e, const py::object& dtype) { return cast_to(e, dtype_from(dtype)); }, py::arg("e"),
      py::arg("dtype"), "e in another dtype (float32 <-> float64, real -> complex, complex64 <-> complex128)");

  // ---- matrix functions and decompositions
  m.def(
      "cholesky", [](const Expr& a) { return apply(a, [](const auto& x) { return tenex::cholesky(x); }); },
      py::arg("a"), "The lower Cholesky factor L of a Hermitian positive definite a (a = L L^H), labelled like a");
  m.def(
      "inverse", [](const Expr& a) { return apply(a, [](const auto& x) { return tenex::inverse(x); }); }, py::arg("a"),
      "The inverse of a square matrix, labelled like a");
  m.def(
      "solve",
      [](const Expr& a, const Expr& b) {
        return apply2(a, b, [](const auto& x, const auto& y) { return tenex::solve(x, y); });
      },
      py::arg("a"), py::arg("b"), "x with a x = b (b's mode labelled like one of a's is solved)");
  m.def(
      "pow",
      [](const Expr& a, const py::object& n) {
        if (py::isinstance<py::int_>(n)) {
          const int k = n.cast<int>();
          return apply(a, [&](const auto& x) { return tenex::pow(x, k); });
        }
        const double p = n.cast<double>();
        return apply(a, [&](const auto& x) { return tenex::pow(x, p); });
      },
      py::arg("a"), py::arg("n"),
      "The matrix power: an int n (negative: of the inverse), or a real p of a symmetric positive "
      "(semi)definite a");
  m.def(
      "slice",
      [](const Expr& a, std::vector<std::size_t> lo, std::vector<std::size_t> hi) {
        return apply(a, [&](const auto& x) { return tenex::slice(x, lo, hi); });
      },
      py::arg("a"), py::arg("lo"), py::arg("hi"), "The half-open block [lo, hi) of every mode; labels kept");
  m.def(
      "chip",
      [](const Expr& a, const std::string& label, std::size_t index) {
        return apply(a, [&](const auto& x) { return tenex::chip(x, label, index); });
      },
      py::arg("a"), py::arg("label"), py::arg("index"), "a with the mode `label` fixed at `index` (that mode dropped)");

  py::class_<tenex::Truncation>(m, "Truncation",
                                "What a truncated svd or eigen_solve keeps: at most max_rank values (0: no cap), "
                                "dropping the smallest whose squares sum to at most cutoff times the total")
      .def(py::init([](std::size_t max_rank, double cutoff) {
             return tenex::Truncation{max_rank, cutoff};
           }),
           py::kw_only(), py::arg("max_rank") = 0, py::arg("cutoff") = 0.0)
      .def_readwrite("max_rank", &tenex::Truncation::max_rank)
      .def_readwrite("cutoff", &tenex::Truncation::cutoff)
      .def("__repr__", [](const tenex::Truncation& t) {
        return "tenex.Truncation(max_rank=" + std::to_string(t.max_rank) +
               ", cutoff=" + py::repr(py::float_(t.cutoff)).cast<std::string>() + ")";
      });
  py::class_<tenex::TruncationResult>(m, "TruncationResult", "What the last truncated decomposition kept")
      .def_readonly("rank", &tenex::TruncationResult::rank)
      .def_readonly("discarded_weight", &tenex::TruncationResult::discarded_weight)
      .def("__iter__",
           [](const tenex::TruncationResult& r) { return py::iter(py::make_tuple(r.rank, r.discarded_weight)); })
      .def("__repr__", [](const tenex::TruncationResult& r) {
        return "tenex.TruncationResult(rank=" + std::to_string(r.rank) +
               ", discarded_weight=" + py::repr(py::float_(r.discarded_weight)).cast<std::string>() + ")";
      });
  m.def("last_truncation", &tenex::last_truncation,
        "What the last truncated decomposition run on this thread kept: (rank, discarded_weight)");

  m.def(
      "eigen_solve",
      [](const Expr& a, const std::optional<Expr>& b, const std::optional<tenex::Truncation>& truncation) {
        if (b && truncation)
          throw py::value_error("tenex.eigen_solve: a truncation applies to the standard problem only");
        const Expr a2 = b ? cast_to(a, promoted(a.dtype(), b->dtype())) : a;
        return with_dtype(a2.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          const auto& x = expression_of<T>(a2);
          if (b) {
            const Expr b2 = cast_to(*b, a2.dtype());
            const std::vector<py::object> keep = joined(a2.keep, b2.keep);
            auto [vectors, values] = tenex::eigen_solve(x, expression_of<T>(b2));
            return as_tuple({make_expr(std::move(vectors), keep), make_expr(std::move(values), keep)});
          }
          auto [vectors, values] = truncation ? tenex::eigen_solve(x, *truncation) : tenex::eigen_solve(x);
          return as_tuple({make_expr(std::move(vectors), a2.keep), make_expr(std::move(values), a2.keep)});
        });
      },
      py::arg("a"), py::arg("b") = py::none(), py::arg("truncation") = py::none(),
      "(vectors, values) of a symmetric (Hermitian) a, values ascending and real, vectors as columns; with b "
      "(symmetric positive definite) the generalized problem a v = w b v. Assign them in one line: "
      "V[\"i,k\"], w[\"k\"] = tenex.eigen_solve(H[\"i,j\"])");
  // Over label groups: the modes `rows` names are the rows, the rest the columns (listed before
  // the matrix forms, which pybind11 tries next when `rows` is not a string).
  m.def(
      "eigen_solve",
      [](const Expr& a, const std::string& rows, const std::optional<tenex::Truncation>& truncation) {
        return with_expr(a, [&](const auto& x) {
          auto [vectors, values] = truncation ? tenex::eigen_solve(x, rows, *truncation) : tenex::eigen_solve(x, rows);
          return as_tuple({make_expr(std::move(vectors), a.keep), make_expr(std::move(values), a.keep)});
        });
      },
      py::arg("a"), py::arg("rows"), py::arg("truncation") = py::none(),
      "(vectors, values) of a Hermitian a of any rank seen as a square matrix, its modes `rows` names (\"a,b\") "
      "the rows: V[\"a,b,k\"], w[\"k\"] = tenex.eigen_solve(H[\"a,b,c,d\"], \"a,b\")");
  m.def(
      "qr",
      [](const Expr& a, const std::string& rows) {
        return with_expr(a, [&](const auto& x) {
          auto [q, r] = tenex::qr(x, rows);
          return as_tuple({make_expr(std::move(q), a.keep), make_expr(std::move(r), a.keep)});
        });
      },
      py::arg("a"), py::arg("rows"),
      "(Q, R) of a of any rank seen as a matrix, its modes `rows` names (\"a,s\") the rows: "
      "Q[\"a,s,k\"], R[\"k,t,b\"] = tenex.qr(theta[\"a,s,t,b\"], \"a,s\")");
  m.def(
      "svd",
      [](const Expr& a, const std::string& rows, const std::optional<tenex::Truncation>& truncation) {
        return with_expr(a, [&](const auto& x) {
          auto [u, s, vt] = truncation ? tenex::svd(x, rows, *truncation) : tenex::svd(x, rows);
          return as_tuple(
              {make_expr(std::move(u), a.keep), make_expr(std::move(s), a.keep), make_expr(std::move(vt), a.keep)});
        });
      },
      py::arg("a"), py::arg("rows"), py::arg("truncation") = py::none(),
      "(U, S, Vt), the thin SVD of a of any rank seen as a matrix, its modes `rows` names (\"a,s\") the rows: "
      "U[\"a,s,k\"], S[\"k\"], Vt[\"k,t,b\"] = tenex.svd(theta[\"a,s,t,b\"], \"a,s\", truncation=...)");
  m.def(
      "qr",
      [](const Expr& a) {
        return with_expr(a, [&](const auto& x) {
          auto [q, r] = tenex::qr(x);
          return as_tuple({make_expr(std::move(q), a.keep), make_expr(std::move(r), a.keep)});
        });
      },
      py::arg("a"), "(Q, R), the reduced QR factorization: Q[\"i,k\"], R[\"k,j\"] = tenex.qr(A[\"i,j\"])");
  m.def(
      "svd",
      [](const Expr& a, const std::optional<tenex::Truncation>& truncation) {
        return with_expr(a, [&](const auto& x) {
          auto [u, s, vt] = truncation ? tenex::svd(x, *truncation) : tenex::svd(x);
          return as_tuple(
              {make_expr(std::move(u), a.keep), make_expr(std::move(s), a.keep), make_expr(std::move(vt), a.keep)});
        });
      },
      py::arg("a"), py::arg("truncation") = py::none(),
      "(U, S, Vt), the thin SVD, S descending and real: U[\"i,k\"], S[\"k\"], Vt[\"k,j\"] = tenex.svd(A[\"i,j\"])");

  // ---- introspection and control
  m.def(
      "explain",
      [](const std::optional<Expr>& e) -> std::string {
        if (!e) return tenex::explain();
        return with_expr(*e, [](const auto& x) { return tenex::explain(x); });
      },
      py::arg("e") = py::none(),
      "The plan evaluating e would run (nothing is evaluated), or with no argument the plan of the last set run on "
      "this thread");
  m.def(
      "plan",
      [](const Expr& e) {
        const std::vector<tenex::PlanStep> steps = with_expr(e, [](const auto& x) { return tenex::plan_of(x); });
        py::list out;
        for (const tenex::PlanStep& s : steps) {
          py::dict step;
          step["operation"] = s.operation;
          step["kernel"] = s.kernel;
          step["operands"] = py::cast(s.operands);
          step["result"] = s.result;
          step["flops"] = s.flops;
          step["bytes"] = s.bytes;
          out.append(std::move(step));
        }
        return out;
      },
      py::arg("e"),
      "The plan explain(e) prints, as data: a list of dicts (operation, kernel, operands, result, flops, bytes), one "
      "per step in execution order; nothing is evaluated");
  m.def("set_backend", &set_backend, py::arg("name"),
        "The backend of the sets made from now on: \"cpu\", \"cuda\", \"auto\" (CUDA where a device exists) or a "
        "backend plugin's name (found on TENEX_PLUGIN_PATH)");
  m.def("backend_names", &tenex::backend_names,
        "The backends this process can name: the built-in ones and the plugins on TENEX_PLUGIN_PATH");
  m.def("default_backend_name", &tenex::default_backend_name, "The name of the backend new sets run on");
  m.def("cuda_available", &tenex::cuda_available, "Whether a CUDA device exists at run time");
  m.def("set_memory_limit", &tenex::set_memory_limit, py::arg("bytes"),
        "A cap on the intermediates of each set, in bytes; 0: none");
}

}  // namespace tenex_python
