// tenex.einsum(subscripts, *operands, out=None): numpy.einsum's subscript language, evaluated as
// one tenex statement, `result(output) = op0(labels0) * op1(labels1) * ...`, so that tenex's
// contraction order, fusion and kernels run. The einsum product and tenex's Einstein convention
// agree: a label the output keeps is kept (matched element by element where several operands
// carry it), every other label is summed, and a label repeated in one operand takes the diagonal.
//
// Letters become one-letter labels ("a", "B"), characters beyond ASCII "_u" and their code point
// (subscripts.hpp), so more than 52 labels can be written; the axes '...' stands for become "_0",
// "_1", ... (aligned from the right, as numpy broadcasts them). numpy's interleaved form,
// einsum(a, [0, 1], b, [1, 2], [0, 2]), is read as the subscripts it stands for. An axis of
// extent 1 whose label has a larger extent elsewhere is broadcast (numpy's rule): the operand
// is read without it.
#include <Python.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "subscripts.hpp"

namespace tenex_python {

namespace {

/// The parsed subscripts for (subscripts, ranks), parsed once. Used with the GIL held only; the
/// caller shares what it holds, so a cache cleared by another thread meanwhile frees nothing in use.
std::shared_ptr<const Subscripts> cached_subscripts(const std::string& subscripts,
                                                    const std::vector<py::ssize_t>& ranks) {
  static std::unordered_map<std::string, std::shared_ptr<const Subscripts>> cache;
  constexpr std::size_t kMaxCached = 4096;  // a program writing subscripts on the fly does not grow it forever
  std::string key = subscripts;
  key += '\0';
  for (py::ssize_t rank : ranks) key += std::to_string(rank) + ',';
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  auto parsed = std::make_shared<const Subscripts>(SubscriptParser("tenex.einsum", subscripts).parse(ranks));
  if (cache.size() >= kMaxCached) cache.clear();
  return cache.emplace(std::move(key), std::move(parsed)).first->second;
}

/// `result(output) = operand0(labels0) * operand1(labels1) * ...`, evaluated without the GIL.
/// The operands are read in place where their memory allows (view_of_array), else copied once;
/// `out` of the result's type is written in place (its memory is the target), else the result
/// is a new array over tenex's memory. Returns the result, or nullopt when it is in `out`.
template <class T>
std::optional<py::array> evaluate(const std::vector<py::array>& arrays, const std::vector<std::string>& labels,
                                  const std::string& output_labels, const std::optional<py::array>& out) {
  std::vector<tenex::Tensor<T>> copies;
  std::vector<tenex::TensorView<T>> views;
  copies.reserve(arrays.size());
  views.reserve(arrays.size());
  std::vector<std::pair<bool, std::size_t>> source;  // (is a view, index)
  for (const py::array& array : arrays) {
    if (std::optional<tenex::TensorView<T>> view = view_of_array<T>(array)) {
      source.emplace_back(true, views.size());
      views.push_back(std::move(*view));
    } else {
      source.emplace_back(false, copies.size());
      copies.push_back(tensor_from_array<T>(array));
    }
  }
  std::optional<tenex::TensorView<T>> out_view;
  if (out) out_view = view_of_array<T>(*out);

  tenex::Tensor<T> result;
  {
    py::gil_scoped_release release;
    {
      std::vector<tenex::Indexed<tenex::Tensor<T>>> operands;
      operands.reserve(arrays.size());
      for (std::size_t k = 0; k < arrays.size(); ++k) {
        const auto [is_view, at] = source[k];
        if (is_view) {
          operands.push_back(views[at](labels[k]));
        } else {
          operands.push_back(copies[at](labels[k]));
        }
      }
      auto assign = [&](const tenex::Expression<tenex::Tensor<T>>& rhs) {
        if (out_view) {
          (*out_view)(output_labels) = rhs;
        } else {
          result(output_labels) = rhs;
        }
      };
      if (operands.size() == 1) {
        assign(operands[0]);
      } else {
        // Every product stays alive until the statement is recorded: the set runs when its last
        // expression object goes.
        std::vector<tenex::Multiplication<tenex::Tensor<T>>> products;
        products.reserve(operands.size() - 1);
        products.push_back(operands[0] * operands[1]);
        for (std::size_t k = 2; k < operands.size(); ++k) products.push_back(products.back() * operands[k]);
        assign(products.back());
      }
    }
    if (out_view) {
      out_view->wait();
    } else {
      result.wait();
    }
  }
  if (out_view) return std::nullopt;
  return array_owning_tensor<T>(std::move(result));
}

/// numpy.result_type(*arrays), numpy.can_cast(from, to, "safe"): the rare cases only (mixed or
/// non-float operands, an `out` of another dtype).
py::dtype result_type(const std::vector<py::array>& arrays) {
  static py::handle function = py::object(py::module_::import("numpy").attr("result_type")).release();
  py::tuple args(arrays.size());
  for (std::size_t k = 0; k < arrays.size(); ++k) args[k] = arrays[k];
  return py::dtype::from_args(function(*args));
}

bool can_cast_safely(const py::dtype& from, const py::dtype& to) {
  static py::handle function = py::object(py::module_::import("numpy").attr("can_cast")).release();
  return function(from, to, "safe").cast<bool>();
}

/// The dtype einsum computes in: the operands' common one (numpy.result_type), or that of `out`,
/// which must be one of the four in native byte order, one the common dtype casts to safely.
/// Taken from the operands as given, before broadcast axes are dropped: numpy casts by value
/// 0-d operands only, never a one-element array (a float64 of shape (1,) makes a float32 einsum
/// float64).
Dtype einsum_dtype(const std::vector<py::array>& arrays, const std::optional<py::array>& out) {
  std::optional<Dtype> dtype = dtype_of_num(arrays[0].dtype().num());
  for (std::size_t k = 1; k < arrays.size() && dtype; ++k) {
    if (dtype_of_num(arrays[k].dtype().num()) != dtype) dtype.reset();
  }
  py::dtype common = dtype ? arrays[0].dtype() : result_type(arrays);
  if (out) {
    const std::optional<Dtype> out_dtype = dtype_of_num(out->dtype().num());
    if (!out_dtype || !with_dtype(*out_dtype, [&](auto tag) {
          return py::isinstance<py::array_t<typename decltype(tag)::type>>(*out);
        })) {
      throw py::type_error("tenex.einsum: out has dtype " + py::str(out->dtype()).cast<std::string>() +
                           "; tenex writes float32, float64, complex64 or complex128 in native byte order");
    }
    if (!can_cast_safely(common, out->dtype())) {
      throw py::type_error("tenex.einsum: cannot write the result, of dtype " + py::str(common).cast<std::string>() +
                           ", to out of dtype " + py::str(out->dtype()).cast<std::string>() +
                           " (numpy's 'safe' casting)");
    }
    return *out_dtype;
  }
  dtype = dtype_of_num(common.num());
  if (!dtype) {
    throw py::type_error("tenex.einsum: the result would be of dtype " + py::str(common).cast<std::string>() +
                         "; tenex computes in float32, float64, complex64 or complex128 (convert the operands with "
                         "astype, or pass out= of one of those)");
  }
  return *dtype;
}

py::object einsum_arrays(const std::string& subscripts, const std::vector<py::object>& objects, const py::object& out) {
  std::vector<py::array> arrays;
  std::vector<py::ssize_t> ranks;
  arrays.reserve(objects.size());
  ranks.reserve(objects.size());
  for (const py::object& object : objects) {
    arrays.push_back(as_array(object));
    ranks.push_back(arrays.back().ndim());
  }
  const std::shared_ptr<const Subscripts> shared = cached_subscripts(subscripts, ranks);
  const Subscripts& parsed = *shared;
  const SubscriptParser parser("tenex.einsum", subscripts);

  // Each label's extent; 1 broadcasts against any other extent, as numpy does.
  std::vector<std::vector<py::ssize_t>> shapes;
  for (const py::array& array : arrays) shapes.emplace_back(array.shape(), array.shape() + array.ndim());
  const std::vector<py::ssize_t> extent = label_extents(parsed, parser, shapes);
  std::optional<py::array> out_array;
  if (!out.is_none()) {
    if (!py::isinstance<py::array>(out)) throw py::type_error("tenex.einsum: out must be a numpy array");
    out_array = py::reinterpret_borrow<py::array>(out);
  }
  const Dtype dtype = einsum_dtype(arrays, out_array);

  std::vector<std::string> broadcast_labels;  // only where an operand has an axis to broadcast
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const std::vector<int>& axes = parsed.inputs[k];
    std::vector<bool> drop(axes.size(), false);
    bool any = false;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      drop[a] = arrays[k].shape(static_cast<py::ssize_t>(a)) == 1 && extent[static_cast<std::size_t>(axes[a])] != 1;
      any = any || drop[a];
    }
    if (!any) continue;
    if (broadcast_labels.empty()) broadcast_labels = parsed.input_labels;
    std::string kept;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      if (drop[a]) continue;
      if (!kept.empty()) kept += ',';
      kept += parsed.names[static_cast<std::size_t>(axes[a])];
    }
    arrays[k] = without_unit_axes(arrays[k], drop);
    broadcast_labels[k] = std::move(kept);
  }
  const std::vector<std::string>& labels = broadcast_labels.empty() ? parsed.input_labels : broadcast_labels;

  std::vector<py::ssize_t> output_shape;
  for (int id : parsed.output) output_shape.push_back(extent[static_cast<std::size_t>(id)]);
  if (out_array) {
    const bool same = out_array->ndim() == static_cast<py::ssize_t>(output_shape.size()) &&
                      std::equal(output_shape.begin(), output_shape.end(), out_array->shape());
    if (!same) {
      std::string expected = "(";
      for (std::size_t d = 0; d < output_shape.size(); ++d) {
        if (d) expected += ", ";  // appended: GCC 12 warns falsely on "" + std::string (bug 105329)
        expected += std::to_string(output_shape[d]);
      }
      expected += output_shape.size() == 1 ? ",)" : ")";
      parser.fail("out has shape " + py::str(out_array->attr("shape")).cast<std::string>() +
                  " but the result has shape " + expected);
    }
    if (!out_array->writeable()) throw py::value_error("tenex.einsum: out is read-only");
  }

  std::optional<py::array> computed = with_dtype(dtype, [&](auto tag) {
    return evaluate<typename decltype(tag)::type>(arrays, labels, parsed.output_labels, out_array);
  });
  if (!computed) return *out_array;  // written in place
  py::array result = *computed;
  if (out_array) {
    out_array->attr("__setitem__")(py::ellipsis(), result);
    return *out_array;
  }
  if (result.ndim() == 0) return result.attr("__getitem__")(py::tuple());  // a numpy scalar, as numpy returns
  return result;
}

/// einsum(subscripts, *operands) or numpy's interleaved einsum(op0, sublist0, op1, ..., [output]).
/// numpy's `optimize` keyword: False, True, "greedy", "optimal", an einsum_path list; tenex
/// orders every product itself, so each is accepted (and checked) and the order is tenex's.
void check_optimize(const py::object& optimize) {
  if (py::isinstance<py::bool_>(optimize) || optimize.is_none() || py::isinstance<py::list>(optimize) ||
      py::isinstance<py::tuple>(optimize)) {
    return;
  }
  if (py::isinstance<py::str>(optimize)) {
    const auto name = optimize.cast<std::string>();
    for (const char* known : {"greedy", "optimal", "auto", "dp", "hyper", "branch-all", "branch-2", "random-greedy"}) {
      if (name == known) return;
    }
    throw py::value_error("tenex.einsum: optimize='" + name + "' is not one of False, True, 'greedy', 'optimal' " +
                          "(numpy's) or 'auto', 'dp', 'hyper' (tenex orders every product itself)");
  }
  throw py::type_error("tenex.einsum: optimize must be a bool, a str or an einsum_path list");
}

/// numpy's `dtype` keyword: the operands converted to it first, each by numpy's 'safe' casting
/// (einsum's default), so the work and the result are in that dtype.
std::vector<py::object> in_dtype(std::vector<py::object> operands, const py::object& dtype) {
  if (dtype.is_none()) return operands;
  const py::dtype target = py::dtype::from_args(dtype);
  for (py::object& operand : operands) {
    py::array a = as_array(operand);
    if (!can_cast_safely(a.dtype(), target)) {
      throw py::type_error("tenex.einsum: cannot cast an operand of dtype " + py::str(a.dtype()).cast<std::string>() +
                           " to dtype " + py::str(py::handle(target)).cast<std::string>() + " (numpy's 'safe' casting)");
    }
    operand = a.attr("astype")(target, py::arg("copy") = false);
  }
  return operands;
}

py::object einsum(const py::args& args, const py::object& out, const py::object& optimize, const py::object& dtype) {
  check_optimize(optimize);
  if (args.size() > 0 && py::isinstance<py::str>(args[0])) {
    std::vector<py::object> operands;
    for (std::size_t k = 1; k < args.size(); ++k) operands.push_back(py::reinterpret_borrow<py::object>(args[k]));
    return einsum_arrays(args[0].cast<std::string>(), in_dtype(std::move(operands), dtype), out);
  }
  if (!is_interleaved(args)) {
    throw py::type_error(
        "tenex.einsum: give the subscripts (a str) and the operands, or numpy's interleaved form "
        "einsum(a, [0, 1], b, [1, 2], [0, 2])");
  }
  auto [subscripts, operands] = from_interleaved(args, "tenex.einsum");
  return einsum_arrays(subscripts, in_dtype(std::move(operands), dtype), out);
}

}  // namespace

void bind_einsum(py::module_& m) {
  m.def("einsum", &einsum, py::arg("out") = py::none(), py::arg("optimize") = false, py::arg("dtype") = py::none(),
        R"doc(einsum(subscripts, *operands, out=None, optimize=False, dtype=None)
einsum(op0, sublist0, op1, sublist1, ..., [sublistout], out=None, optimize=False, dtype=None)

Evaluates the Einstein summation `subscripts` (numpy.einsum's language: "ij,jk->ik", the implicit
output "ij,jk", '...' broadcasting, repeated labels for diagonals and traces) over numpy arrays
(or anything numpy.asarray takes) of float32, float64, complex64 or complex128, as one tenex
statement: tenex chooses the contraction order and the kernels. A label is a letter or any
character beyond ASCII (opt_einsum.get_symbol's), so there may be more than 52. The interleaved
form gives each operand's labels as a list of integers >= 0 (and Ellipsis), as numpy does.
Mixed dtypes promote as numpy.result_type does. Returns a new array (a numpy scalar for a scalar
result), or writes `out` (its shape must be the result's; its dtype one the result casts to
safely) and returns it. Bad subscripts raise tenex.ShapeError (a ValueError). `optimize` is
numpy's keyword (False, True, 'greedy', 'optimal' or an einsum_path list), accepted so numpy code
runs unchanged: tenex orders every product itself (TENEX_ORDER, docs/networks.md). `dtype`, as
numpy's: the operands are cast to it first (safely), and the result has it.)doc");
}

}  // namespace tenex_python
