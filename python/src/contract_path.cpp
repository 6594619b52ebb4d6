// tenex.contract_path(subscripts, *operands, shapes=False, optimize="auto", memory_limit=None):
// the contraction tree tenex's optimizer chooses for an einsum, without evaluating it, returned
// as opt_einsum.contract_path returns it: (path, info), `path` opt_einsum's linear form and
// `info` a tenex.PathInfo, whose str() is a table like opt_einsum's.
//
// The subscripts are einsum's (subscripts.hpp), so the labels are the user's characters; the
// optimizer sees tenex's names for them, and what it reports (the sliced labels, the table) is
// turned back into those characters.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"
#include "subscripts.hpp"
#include "tenex/contraction_path.hpp"

namespace tenex_python {

namespace {

using Pairs = std::vector<std::pair<std::size_t, std::size_t>>;

/// What tenex.contract_path returns besides the path: opt_einsum's PathInfo, in the user's labels.
struct PathInfo {
  Pairs path;            // the pairs of opt_einsum's linear form
  py::list linear_path;  // opt_einsum's linear form as Python sees it: (0,) for a single operand
  Pairs ssa_path;        // inputs 0..n-1, step i makes n + i
  double opt_cost = 0;
  double naive_cost = 0;
  double speedup = 1;
  double largest_intermediate = 0;
  double peak = 0;
  std::vector<std::string> sliced;
  double slices = 1;
  std::string method;
  double seconds = 0;
  std::string eq;  // "ab,bc->ac": the output written out, '...' axes as unused characters
  std::string input_subscripts;
  std::string output_subscript;
  py::object shapes;                             // a tuple of the operands' shapes
  std::map<std::string, std::size_t> size_dict;  // each label's extent
  std::vector<std::size_t> scale_list;           // labels each step loops over (one slice)
  std::vector<double> size_list;                 // elements each step makes (one slice)
  std::string text;
};

std::string scientific(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3e", x);
  return buffer;
}

/// `s` (UTF-8) right-aligned in `width` characters.
std::string padded_left(const std::string& s, std::size_t width) {
  std::size_t characters = 0;
  for (char c : s) characters += (static_cast<unsigned char>(c) & 0xc0) != 0x80 ? 1 : 0;
  return characters >= width ? s : std::string(width - characters, ' ') + s;
}

/// The steps of `path` over the labels of `parsed`: scale_list, size_list and the table.
void describe_steps(const Subscripts& parsed, const std::vector<std::vector<int>>& terms_in,
                    const std::vector<double>& extent, const std::vector<bool>& sliced, PathInfo& info) {
  std::vector<std::vector<int>> terms = terms_in;
  auto written = [&](const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += parsed.symbols[static_cast<std::size_t>(id)];
    return s;
  };
  std::vector<bool> in_output(parsed.names.size(), false);
  for (int id : parsed.output) in_output[static_cast<std::size_t>(id)] = true;

  const bool any_sliced = !info.sliced.empty();
  std::string rows;
  for (const auto& [first, second] : info.path) {
    if (first >= terms.size() || second >= terms.size() || first == second) break;  // not a path of these terms
    const std::vector<int> a = terms[first];
    const std::vector<int> b = terms[second];
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(std::max(first, second)));
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(std::min(first, second)));
    std::vector<int> both = a;
    for (int id : b) {
      if (std::find(both.begin(), both.end(), id) == both.end()) both.push_back(id);
    }
    std::vector<int> kept;
    std::string sliced_here;
    std::size_t loops = 0;
    double size = 1;
    double loop_size = 1;
    bool summed = false;
    for (int id : both) {
      const auto i = static_cast<std::size_t>(id);
      bool needed = in_output[i];
      for (std::size_t t = 0; t < terms.size() && !needed; ++t) {
        needed = std::find(terms[t].begin(), terms[t].end(), id) != terms[t].end();
      }
      if (sliced[i]) {
        sliced_here += parsed.symbols[i];
      } else {
        ++loops;
        loop_size *= extent[i];
        if (needed) size *= extent[i];
        summed = summed || !needed;
      }
      if (needed) kept.push_back(id);
    }
    if (terms.empty()) kept = parsed.output;  // the last step makes the result, in the output's order
    info.scale_list.push_back(loops);
    info.size_list.push_back(size);
    terms.push_back(kept);

    const std::string current = written(a) + "," + written(b) + "->" + written(kept);
    std::string remaining = "...";
    if (terms.size() <= 20) {  // opt_einsum's rule: the remaining terms of small networks only
      remaining.clear();
      for (std::size_t t = 0; t < terms.size(); ++t) {
        if (t > 0) remaining += ',';
        remaining += written(terms[t]);
      }
      remaining += "->" + info.output_subscript;
    }
    rows += "\n" + padded_left(std::to_string(loops), 4) + "   " +
            padded_left(scientific(loop_size * (summed ? 2 : 1)), 12) + "   " + padded_left(current, 22) + "    " +
            remaining;
    if (any_sliced) rows += "    sliced: " + (sliced_here.empty() ? std::string("-") : sliced_here);
  }

  std::string text;
  text += "  Complete contraction:  " + info.eq + "\n";
  text += "         Naive scaling:  " + std::to_string(parsed.names.size()) + "\n";
  const std::size_t optimized_scaling =
      info.scale_list.empty() ? 0 : *std::max_element(info.scale_list.begin(), info.scale_list.end());
  text += "     Optimized scaling:  " + std::to_string(optimized_scaling) + "\n";
  text += "      Naive FLOP count:  " + scientific(info.naive_cost) + "\n";
  text += "  Optimized FLOP count:  " + scientific(info.opt_cost) + "\n";
  text += "   Theoretical speedup:  " + scientific(info.speedup) + "\n";
  text += "  Largest intermediate:  " + scientific(info.largest_intermediate) + " elements\n";
  text += "           Peak memory:  " + scientific(info.peak) + " elements\n";
  if (any_sliced) {
    std::string labels;
    for (const std::string& label : info.sliced) {
      if (!labels.empty()) labels += ' ';
      labels += label;
    }
    text += "         Sliced labels:  " + labels + " (" + scientific(info.slices) +
            " slices; the memory and the rows are one slice's)\n";
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3g", info.seconds);
  text += "                Method:  " + info.method + " (" + seconds + " s)\n";
  text += std::string(80, '-') + "\n";
  text += "scaling        flops                 current    remaining\n";
  text += std::string(80, '-');
  info.text = text + rows;
}

/// Each operand's shape: a sequence of ints when `shapes`, else its .shape (numpy.asarray's for
/// an object without one). The arrays themselves are never read.
std::vector<std::vector<py::ssize_t>> shapes_of(const std::vector<py::object>& operands, bool shapes) {
  std::vector<std::vector<py::ssize_t>> result;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    py::object shape;
    if (shapes) {
      shape = operands[k];
    } else if (py::hasattr(operands[k], "shape")) {
      shape = operands[k].attr("shape");
    } else {
      shape = as_array(operands[k]).attr("shape");
    }
    if (!py::isinstance<py::sequence>(shape) || py::isinstance<py::str>(shape)) {
      throw py::type_error("tenex.contract_path: operand " + std::to_string(k) +
                           (shapes ? " is not a shape (a tuple of ints; shapes=True)" : " has no shape"));
    }
    std::vector<py::ssize_t> extents;
    for (py::handle extent : py::reinterpret_borrow<py::sequence>(shape)) {
      if (py::isinstance<py::bool_>(extent) || !py::hasattr(extent, "__index__")) {
        throw py::type_error("tenex.contract_path: operand " + std::to_string(k) + "'s shape holds " +
                             py::repr(extent).cast<std::string>() + ", not an int");
      }
      const auto e = py::reinterpret_borrow<py::object>(extent).attr("__index__")().cast<py::ssize_t>();
      if (e < 0) throw py::value_error("tenex.contract_path: operand " + std::to_string(k) + " has a negative extent");
      extents.push_back(e);
    }
    result.push_back(std::move(extents));
  }
  return result;
}

std::string optimize_choice(const py::object& optimize) {
  const char* choices = "'auto', 'greedy', 'dp' (or its alias 'optimal') and 'hyper'";
  if (!py::isinstance<py::str>(optimize)) {
    throw py::value_error("tenex.contract_path: optimize=" + py::repr(optimize).cast<std::string>() +
                          "; the choices are " + choices);
  }
  const auto name = optimize.cast<std::string>();
  if (name == "optimal") return "dp";
  if (name == "auto" || name == "greedy" || name == "dp" || name == "hyper") return name;
  throw py::value_error("tenex.contract_path: optimize='" + name + "'; the choices are " + choices);
}

py::tuple contract_path(const py::args& args, bool shapes, const py::object& optimize, const py::object& memory_limit,
                        const py::object& seconds) {
  std::string subscripts;
  std::vector<py::object> operands;
  if (args.size() > 0 && py::isinstance<py::str>(args[0])) {
    subscripts = args[0].cast<std::string>();
    for (std::size_t k = 1; k < args.size(); ++k) operands.push_back(py::reinterpret_borrow<py::object>(args[k]));
  } else if (is_interleaved(args)) {
    std::tie(subscripts, operands) = from_interleaved(args, "tenex.contract_path");
  } else {
    throw py::type_error(
        "tenex.contract_path: give the subscripts (a str) and the operands (or their shapes, with "
        "shapes=True), or numpy's interleaved form");
  }
  tenex::ContractPathOptions options;
  options.optimize = optimize_choice(optimize);

  const std::vector<std::vector<py::ssize_t>> operand_shapes = shapes_of(operands, shapes);
  std::vector<py::ssize_t> ranks;
  for (const auto& shape : operand_shapes) ranks.push_back(static_cast<py::ssize_t>(shape.size()));
  const SubscriptParser parser("tenex.contract_path", subscripts);
  const Subscripts parsed = parser.parse(ranks);

  const std::vector<py::ssize_t> extent = label_extents(parsed, parser, operand_shapes);

  // The network: each operand's labels once (a repeated label, a diagonal, costs as one).
  std::vector<std::vector<int>> terms;
  std::vector<std::vector<std::string>> inputs;
  for (const std::vector<int>& axes : parsed.inputs) {
    std::vector<int> term;
    for (int id : axes) {
      if (std::find(term.begin(), term.end(), id) == term.end()) term.push_back(id);
    }
    std::vector<std::string> labels;
    for (int id : term) labels.push_back(parsed.names[static_cast<std::size_t>(id)]);
    terms.push_back(std::move(term));
    inputs.push_back(std::move(labels));
  }
  std::vector<std::string> output;
  for (int id : parsed.output) output.push_back(parsed.names[static_cast<std::size_t>(id)]);
  std::map<std::string, std::size_t> extents;
  std::map<std::string, std::size_t> symbol_of;
  for (std::size_t id = 0; id < parsed.names.size(); ++id) {
    extents[parsed.names[id]] = static_cast<std::size_t>(extent[id]);
    symbol_of[parsed.names[id]] = id;
  }

  if (py::isinstance<py::str>(memory_limit) && memory_limit.cast<std::string>() == "max_input") {
    double largest = 1;
    for (const auto& shape : operand_shapes) {
      double size = 1;
      for (py::ssize_t e : shape) size *= static_cast<double>(e);
      largest = std::max(largest, size);
    }
    options.memory_limit = largest;
  } else if (!memory_limit.is_none()) {
    const bool number = !py::isinstance<py::bool_>(memory_limit) &&
                        (py::isinstance<py::int_>(memory_limit) || py::isinstance<py::float_>(memory_limit) ||
                         py::hasattr(memory_limit, "__index__") || py::hasattr(memory_limit, "__float__"));
    const double limit = number ? memory_limit.cast<double>() : 0;
    if (!number || !(limit >= 1)) {
      throw py::value_error("tenex.contract_path: memory_limit=" + py::repr(memory_limit).cast<std::string>() +
                            "; give the elements the largest intermediate may hold (>= 1), 'max_input' or None");
    }
    options.memory_limit = limit;
  }
  if (!seconds.is_none()) {
    if (py::isinstance<py::bool_>(seconds) || !py::hasattr(seconds, "__float__")) {
      throw py::type_error("tenex.contract_path: seconds must be a number (or None)");
    }
    options.seconds = seconds.cast<double>();
    if (!(options.seconds >= 0)) throw py::value_error("tenex.contract_path: seconds must be >= 0 (or None)");
  }

  tenex::ContractPathInfo found;
  {
    py::gil_scoped_release release;
    found = tenex::contract_path(inputs, output, extents, options);
  }

  PathInfo info;
  info.path = found.path;
  info.ssa_path = found.ssa_path;
  info.opt_cost = found.opt_cost;
  info.naive_cost = found.naive_cost;
  info.speedup = found.naive_cost / std::max(found.opt_cost, 1.0);
  info.largest_intermediate = found.largest_intermediate;
  info.peak = found.peak;
  info.slices = found.slices;
  info.method = found.method;
  info.seconds = found.seconds;
  std::vector<bool> sliced(parsed.names.size(), false);
  for (const std::string& label : found.sliced) {
    const auto at = symbol_of.find(label);
    if (at == symbol_of.end()) {
      info.sliced.push_back(label);
      continue;
    }
    sliced[at->second] = true;
    info.sliced.push_back(parsed.symbols[at->second]);
  }
  for (std::size_t k = 0; k < terms.size(); ++k) {
    if (k > 0) info.input_subscripts += ',';
    for (int id : parsed.inputs[k]) info.input_subscripts += parsed.symbols[static_cast<std::size_t>(id)];
  }
  for (int id : parsed.output) info.output_subscript += parsed.symbols[static_cast<std::size_t>(id)];
  info.eq = info.input_subscripts + "->" + info.output_subscript;
  py::tuple shape_tuples(operand_shapes.size());
  for (std::size_t k = 0; k < operand_shapes.size(); ++k) shape_tuples[k] = py::tuple(py::cast(operand_shapes[k]));
  info.shapes = shape_tuples;
  std::vector<double> extent_values(parsed.names.size());
  for (std::size_t id = 0; id < parsed.names.size(); ++id) {
    info.size_dict[parsed.symbols[id]] = static_cast<std::size_t>(extent[id]);
    extent_values[id] = static_cast<double>(extent[id]);
  }
  describe_steps(parsed, terms, extent_values, sliced, info);

  // opt_einsum's path of a single operand is one step, (0,), which opt_einsum.contract then runs.
  if (terms.size() == 1) info.linear_path.append(py::make_tuple(0));
  for (const auto& [first, second] : info.path) info.linear_path.append(py::make_tuple(first, second));
  py::list path = info.linear_path;
  return py::make_tuple(path, py::cast(std::move(info)));
}

}  // namespace

void bind_contract_path(py::module_& m) {
  py::class_<PathInfo>(m, "PathInfo", R"doc(What tenex.contract_path found (opt_einsum's PathInfo).

str(info) is a table: the complete contraction, the naive and optimized FLOP counts, the speedup,
the largest intermediate, then one row per step (its scaling and flops; the sliced labels when
any). The costs follow opt_einsum's convention (its opt_cost of the same path).)doc")
      .def_readonly("path", &PathInfo::linear_path, "opt_einsum's linear form: the positions of each step's pair")
      .def_readonly("ssa_path", &PathInfo::ssa_path, "inputs 0..n-1, step i makes n + i")
      .def_readonly("opt_cost", &PathInfo::opt_cost, "flops of the path (all slices together)")
      .def_readonly("naive_cost", &PathInfo::naive_cost, "flops of one loop over every label")
      .def_readonly("speedup", &PathInfo::speedup, "naive_cost / opt_cost")
      .def_readonly("largest_intermediate", &PathInfo::largest_intermediate,
                    "elements of the largest intermediate (one slice's when sliced)")
      .def_readonly("peak", &PathInfo::peak, "elements of the intermediates held at once (one slice)")
      .def_readonly("sliced", &PathInfo::sliced, "the labels sliced to fit memory_limit, as written")
      .def_readonly("slices", &PathInfo::slices, "the number of slices")
      .def_readonly("method", &PathInfo::method, "the method that found the path")
      .def_readonly("seconds", &PathInfo::seconds, "search time")
      .def_readonly("eq", &PathInfo::eq, "the contraction with its output written out")
      .def_readonly("input_subscripts", &PathInfo::input_subscripts)
      .def_readonly("output_subscript", &PathInfo::output_subscript)
      .def_readonly("shapes", &PathInfo::shapes, "the operands' shapes")
      .def_readonly("size_dict", &PathInfo::size_dict, "each label's extent")
      .def_readonly("scale_list", &PathInfo::scale_list, "per step, the labels it loops over")
      .def_readonly("size_list", &PathInfo::size_list, "per step, the elements it makes")
      .def("__str__", [](const PathInfo& info) { return info.text; })
      .def("__repr__", [](const PathInfo& info) { return info.text; });

  m.def("contract_path", &contract_path, py::arg("shapes") = false, py::arg("optimize") = "auto",
        py::arg("memory_limit") = py::none(), py::arg("seconds") = py::none(),
        R"doc(contract_path(subscripts, *operands, shapes=False, optimize="auto", memory_limit=None, seconds=None)

The contraction tree tenex would use for einsum(subscripts, *operands), as opt_einsum.contract_path
returns it: (path, info), `path` a list of pairs (opt_einsum's linear form, which
opt_einsum.contract(..., optimize=path) takes) and `info` a tenex.PathInfo (opt_cost, naive_cost,
largest_intermediate, peak, sliced, slices, method, seconds; print(info) for the table). Nothing is
evaluated. `operands`: arrays (only their shapes are read) or, with shapes=True, shape tuples.
`optimize`: "auto", "greedy", "dp" ("optimal": its alias) or "hyper". `memory_limit`: the
elements the largest intermediate may hold (or "max_input"); beyond it labels are sliced.
`seconds`: the search budget (None: tenex's default). Bad subscripts raise tenex.ShapeError.)doc");
}

}  // namespace tenex_python
