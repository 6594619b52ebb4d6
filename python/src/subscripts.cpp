// numpy's einsum subscripts (subscripts.hpp): one parser for tenex.einsum and
// tenex.contract_path, and the conversion of numpy's interleaved form to them.
#include "subscripts.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tenex/error.hpp"

namespace tenex_python {

namespace {

bool is_ascii_letter(char32_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/// tenex's name of a label written as `c`: letters stay, others become identifiers.
std::string tenex_name(char32_t c) {
  if (is_ascii_letter(c)) return std::string(1, static_cast<char>(c));
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (char32_t rest = c; rest != 0; rest >>= 4) hex.insert(hex.begin(), digits[rest & 0xf]);
  return "_u" + hex;
}

/// opt_einsum.get_symbol(i): the 52 letters, then characters from U+00C0 on, skipping surrogates.
char32_t get_symbol(std::size_t i) {
  static const char* letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  if (i < 52) return static_cast<char32_t>(letters[i]);
  if (i >= 55296) return static_cast<char32_t>(i + 2048);
  return static_cast<char32_t>(i + 140);
}

/// The character numpy's interleaved form gives integer k, increasing with k.
char32_t interleaved_symbol(std::size_t k) {
  if (k < 26) return static_cast<char32_t>('A' + k);
  if (k < 52) return static_cast<char32_t>('a' + (k - 26));
  std::size_t c = 0xc0 + (k - 52);
  if (c >= 0xd800) c += 0x800;  // past the surrogates
  return static_cast<char32_t>(c);
}

}  // namespace

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xc0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xe0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (c & 0x3f));
  }
  return s;
}

SubscriptParser::SubscriptParser(std::string function, std::string subscripts)
    : function_(std::move(function)), subscripts_(std::move(subscripts)) {}

void SubscriptParser::fail(const std::string& what) const {
  throw tenex::ShapeError(function_ + "(\"" + subscripts_ + "\", ...): " + what);
}

SubscriptParser::Term SubscriptParser::parse_term(const std::string& text, const std::string& where) const {
  Term term;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == '.') {
      if (text.compare(i, 3, "...") != 0) fail(where + ": a '.' that is not part of '...'");
      if (term.ellipsis >= 0) fail(where + ": '...' appears more than once");
      term.ellipsis = static_cast<int>(term.letters.size());
      i += 2;
      continue;
    }
    if (byte < 0x80) {
      if (!is_ascii_letter(byte)) {
        const std::string shown =
            (byte >= 0x20 && byte < 0x7f) ? std::string(1, static_cast<char>(byte)) : "\\x" + std::to_string(+byte);
        fail(where + ": invalid subscript '" + shown +
             "' (subscripts are the letters a-z and A-Z, characters beyond ASCII, '...', ',' and '->')");
      }
      term.letters.push_back(byte);
      continue;
    }
    // UTF-8, as pybind11 hands over a Python str: the lead byte says how many follow.
    const std::size_t more = byte >= 0xf0 ? 3 : byte >= 0xe0 ? 2 : 1;
    char32_t c = byte & (more == 3 ? 0x07 : more == 2 ? 0x0f : 0x1f);
    if (i + more >= text.size()) fail(where + ": malformed UTF-8");
    for (std::size_t k = 1; k <= more; ++k) c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
    term.letters.push_back(c);
    i += more;
  }
  return term;
}

Subscripts SubscriptParser::parse(const std::vector<py::ssize_t>& ranks) const {
  std::string text;
  for (char c : subscripts_) {
    if (c != ' ') text += c;
  }
  const std::size_t arrow = text.find("->");
  const bool explicit_output = arrow != std::string::npos;
  const std::string inputs = text.substr(0, arrow);
  const std::string output = explicit_output ? text.substr(arrow + 2) : std::string();
  if (explicit_output && output.find("->") != std::string::npos) fail("'->' appears more than once");
  if (ranks.empty()) fail("no operands: give one array per comma-separated term");

  std::vector<std::string> terms;
  for (std::size_t start = 0;;) {
    const std::size_t comma = inputs.find(',', start);
    terms.push_back(inputs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size()) {
    fail("the subscripts name " + std::to_string(terms.size()) + " operand(s) but " + std::to_string(ranks.size()) +
         " were given");
  }

  std::vector<Term> parsed_terms;
  std::vector<py::ssize_t> ellipsis_ranks;
  py::ssize_t broadcast_rank = 0;
  std::map<char32_t, int> count;  // each character's uses, in character order
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const std::string where = "operand " + std::to_string(k) + " (\"" + terms[k] + "\")";
    Term term = parse_term(terms[k], where);
    const auto letters = static_cast<py::ssize_t>(term.letters.size());
    py::ssize_t ellipsis_rank = 0;
    if (term.ellipsis < 0 && letters != ranks[k]) {
      fail(where + " has " + std::to_string(ranks[k]) + " axes but its subscripts name " + std::to_string(letters) +
           (letters < ranks[k] ? " (write '...' for the axes not named)" : ""));
    }
    if (term.ellipsis >= 0) {
      ellipsis_rank = ranks[k] - letters;
      if (ellipsis_rank < 0) {
        fail(where + " has " + std::to_string(ranks[k]) + " axes, fewer than the " + std::to_string(letters) +
             " letters of its subscripts");
      }
    }
    for (char32_t c : term.letters) ++count[c];
    broadcast_rank = std::max(broadcast_rank, ellipsis_rank);
    parsed_terms.push_back(std::move(term));
    ellipsis_ranks.push_back(ellipsis_rank);
  }

  // The labels: the characters in character order, then the '...' axes.
  Subscripts parsed;
  std::map<char32_t, int> id;
  for (const auto& [c, uses] : count) {
    id[c] = static_cast<int>(parsed.names.size());
    parsed.names.push_back(tenex_name(c));
    parsed.symbols.push_back(utf8(c));
  }
  const auto first_axis = static_cast<int>(parsed.names.size());
  for (std::size_t d = 0, i = 0; d < static_cast<std::size_t>(broadcast_rank); ++d) {
    parsed.names.push_back("_" + std::to_string(d));
    char32_t symbol = get_symbol(i++);
    while (count.count(symbol) != 0) symbol = get_symbol(i++);
    parsed.symbols.push_back(utf8(symbol));
  }
  auto join = [&](const std::vector<int>& ids) {
    std::string joined;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) joined += ',';
      joined += parsed.names[static_cast<std::size_t>(ids[i])];
    }
    return joined;
  };

  // The '...' axes of each operand are the last ones of the broadcast axes (numpy aligns them
  // from the right).
  bool any_ellipsis = false;
  for (std::size_t k = 0; k < parsed_terms.size(); ++k) {
    const Term& term = parsed_terms[k];
    std::vector<int> axes;
    for (std::size_t i = 0; i <= term.letters.size(); ++i) {
      if (static_cast<int>(i) == term.ellipsis) {
        any_ellipsis = true;
        for (py::ssize_t d = broadcast_rank - ellipsis_ranks[k]; d < broadcast_rank; ++d) {
          axes.push_back(first_axis + static_cast<int>(d));
        }
      }
      if (i < term.letters.size()) axes.push_back(id.at(term.letters[i]));
    }
    parsed.input_labels.push_back(join(axes));
    parsed.inputs.push_back(std::move(axes));
  }

  if (explicit_output) {
    const Term term = parse_term(output, "the output (\"" + output + "\")");
    std::set<char32_t> seen;
    for (std::size_t i = 0; i <= term.letters.size(); ++i) {
      if (static_cast<int>(i) == term.ellipsis) {
        for (int d = 0; d < broadcast_rank; ++d) parsed.output.push_back(first_axis + d);
      }
      if (i == term.letters.size()) break;
      const char32_t c = term.letters[i];
      if (count.count(c) == 0) fail("the output label '" + utf8(c) + "' appears in no operand");
      if (!seen.insert(c).second) fail("the output label '" + utf8(c) + "' appears twice");
      parsed.output.push_back(id.at(c));
    }
    if (term.ellipsis < 0 && broadcast_rank > 0) {
      fail("the operands have " + std::to_string(broadcast_rank) +
           " broadcast axes ('...') but the output has no '...' to keep them (write \"->..." + output +
           "\", or name those axes with letters)");
    }
  } else {
    // numpy's implicit output: the broadcast axes, then the labels used once, in character order.
    if (any_ellipsis) {
      for (int d = 0; d < broadcast_rank; ++d) parsed.output.push_back(first_axis + d);
    }
    for (const auto& [c, uses] : count) {
      if (uses == 1) parsed.output.push_back(id.at(c));
    }
  }
  parsed.output_labels = join(parsed.output);
  return parsed;
}

bool is_interleaved(const py::args& args) {
  return args.size() >= 2 && !py::isinstance<py::str>(args[0]) &&
         (py::isinstance<py::list>(args[1]) || py::isinstance<py::tuple>(args[1]));
}

std::pair<std::string, std::vector<py::object>> from_interleaved(const py::args& args, const std::string& function) {
  auto sublist = [&](py::handle object, const std::string& what) {
    if (!py::isinstance<py::list>(object) && !py::isinstance<py::tuple>(object)) {
      throw py::type_error(function + ": " + what + " must be a list of integers and Ellipsis (numpy's interleaved " +
                           "form: op0, sublist0, op1, sublist1, ..., [output sublist])");
    }
    std::string text;
    for (py::handle item : py::reinterpret_borrow<py::sequence>(object)) {
      if (item.is(py::ellipsis())) {
        text += "...";
        continue;
      }
      // Python ints and numpy's integers alike; not bool (numpy refuses True as a subscript).
      if (py::isinstance<py::bool_>(item) || !py::hasattr(item, "__index__")) {
        throw py::type_error(function + ": " + what + " holds " + py::repr(item).cast<std::string>() +
                             "; a sublist holds integers >= 0 and Ellipsis");
      }
      const auto k = py::reinterpret_borrow<py::object>(item).attr("__index__")().cast<long long>();
      if (k < 0 || k >= 0x10ffff - 0xc0 - 0x800) {
        throw py::value_error(function + ": " + what + " holds " + std::to_string(k) +
                              "; the integers of a sublist are >= 0 (and below a million)");
      }
      text += utf8(interleaved_symbol(static_cast<std::size_t>(k)));
    }
    return text;
  };
  std::string subscripts;
  std::vector<py::object> operands;
  const std::size_t pairs = args.size() / 2;
  for (std::size_t k = 0; k < pairs; ++k) {
    operands.push_back(py::reinterpret_borrow<py::object>(args[2 * k]));
    if (k > 0) subscripts += ',';
    subscripts += sublist(args[2 * k + 1], "the sublist of operand " + std::to_string(k));
  }
  if (args.size() % 2 == 1) subscripts += "->" + sublist(args[args.size() - 1], "the output sublist");
  return {std::move(subscripts), std::move(operands)};
}

std::vector<py::ssize_t> label_extents(const Subscripts& parsed, const SubscriptParser& parser,
                                       const std::vector<std::vector<py::ssize_t>>& shapes) {
  std::vector<py::ssize_t> extent(parsed.names.size(), -1);
  std::vector<std::size_t> first_operand(extent.size(), 0);
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const std::vector<int>& axes = parsed.inputs[k];
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const py::ssize_t e = shapes[k][a];
      const auto id = static_cast<std::size_t>(axes[a]);
      for (std::size_t b = 0; b < a; ++b) {
        if (axes[b] == axes[a] && shapes[k][b] != e) {
          parser.fail("operand " + std::to_string(k) + " repeats the label '" + parsed.symbols[id] +
                      "' (a diagonal) on axes of extents " + std::to_string(shapes[k][b]) + " and " +
                      std::to_string(e) + "; a diagonal needs equal extents");
        }
      }
      if (extent[id] < 0 || extent[id] == 1) {
        if (extent[id] != e) first_operand[id] = k;
        extent[id] = e;
      } else if (e != 1 && e != extent[id]) {
        parser.fail("the label '" + parsed.symbols[id] + "' has extent " + std::to_string(extent[id]) + " in operand " +
                    std::to_string(first_operand[id]) + " but " + std::to_string(e) + " in operand " +
                    std::to_string(k) + " (extents must be equal, or 1 to broadcast)");
      }
    }
  }
  return extent;
}

}  // namespace tenex_python
