// numpy's einsum subscripts, parsed for operands of given ranks: what tenex.einsum and
// tenex.contract_path read.
//
//   Subscripts s = SubscriptParser("tenex.einsum", "ij,jk").parse({2, 2});
//   s.input_labels;  // {"i,j", "j,k"}: tenex's label lists
//   s.output;        // the implicit output: the labels used once, in character order ("ik")
//
// A label is any letter a-z, A-Z or any character beyond ASCII (opt_einsum.get_symbol's
// symbols, so networks of more than 52 labels can be written). tenex's names for them: the
// letter itself, "_u" and the code point in hex for the others ("_ue9" for 'é'), "_0", "_1", ...
// for the axes '...' stands for (aligned from the right, as numpy broadcasts them).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

namespace tenex_python {

namespace py = pybind11;

struct Subscripts {
  std::vector<std::vector<int>> inputs;   // per operand, the label of each axis (an index of names)
  std::vector<int> output;                // the result's labels
  std::vector<std::string> names;         // each label's tenex name
  std::vector<std::string> symbols;       // each label as the user wrote it (UTF-8); '...' axes: unused symbols
  std::vector<std::string> input_labels;  // tenex's label lists, "i,j"
  std::string output_labels;
};

class SubscriptParser {
 public:
  /// `function` prefixes every message ("tenex.einsum").
  SubscriptParser(std::string function, std::string subscripts);

  /// tenex::ShapeError("<function>("<subscripts>", ...): <what>").
  [[noreturn]] void fail(const std::string& what) const;

  /// The subscripts for operands of `ranks` axes; ShapeError for bad subscripts.
  Subscripts parse(const std::vector<py::ssize_t>& ranks) const;

 private:
  struct Term {
    std::vector<char32_t> letters;
    int ellipsis = -1;  // position of '...' among the letters, -1: none
  };
  Term parse_term(const std::string& text, const std::string& where) const;

  std::string function_;
  std::string subscripts_;
};

/// Each label's extent for operands of `shapes` (one extent per axis): the largest, 1
/// broadcasting against any other (numpy's and opt_einsum's rule). ShapeError (through
/// `parser`) for extents that disagree and for a diagonal of unequal extents.
std::vector<py::ssize_t> label_extents(const Subscripts& parsed, const SubscriptParser& parser,
                                       const std::vector<std::vector<py::ssize_t>>& shapes);

/// numpy's interleaved form, `(op0, sublist0, op1, sublist1, ..., [output_sublist])`, as
/// subscripts and operands: a sublist holds integers >= 0 and Ellipsis; integer k is the
/// character k names in numpy's order ('A'-'Z' for 0-25, 'a'-'z' for 26-51, then characters
/// from U+00C0 on), so the implicit output orders them by their integers, as numpy does.
/// TypeError for a sublist that is not a list or tuple of those.
std::pair<std::string, std::vector<py::object>> from_interleaved(const py::args& args, const std::string& function);

/// True when `args` is in the interleaved form (an operand, then a list or tuple).
bool is_interleaved(const py::args& args);

/// UTF-8 of one code point.
std::string utf8(char32_t code_point);

}  // namespace tenex_python
