// tenex — the command-line tool: run, explain and benchmark einsum expressions with tenex.
//
//   tenex einsum "abc,cd,de->abe" --extents a=30,b=20,c=40,d=50,e=10 [--dtype double] [--repeat 5]
//   (--dtype float|double|complex64|complex128)
//   tenex explain "abc,cd,de->abe" --extents a=30,b=20,c=40,d=50,e=10
//   tenex bench cases.tsv [--repeat 3] [--filter NAME]
//
// Everything goes through the public API: each operand is a Tensor filled by fill_random,
// indexed with "a,b,c", the operands are multiplied and the product assigned to the output.
// Usage errors print a message on stderr and exit with status 2; an error of the library while
// running exits with status 1. See docs/explain.md.
#include <cblas.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

constexpr const char* kUsage = R"(usage:
  tenex einsum SPEC --extents a=N,b=N,... [options]   run SPEC, print its plan, time and rate
  tenex explain SPEC --extents a=N,b=N,... [options]  print the plan only (nothing is run)
  tenex bench FILE.tsv [options]                      run a benchmark file, print a table
  tenex --help

SPEC is an einsum with one letter a label: "abc,cd,de->abe" (operands separated by ',',
the result after '->'; without '->' the result is the letters that occur once, in
alphabetical order). Each operand is a tensor of random values (fill_random).

options:
  --extents a=30,b=20,...   the extent of every letter of SPEC (einsum, explain)
  --dtype TYPE              element type: float, double (the default), complex64
                            (std::complex<float>) or complex128 (std::complex<double>)
  --repeat N                runs to time; the best one counts (default 5)
  --passes LIST             sets TENEX_PASSES=LIST for the run (none, all, or names)
  --dot FILE                einsum: the optimized graph of the first run in Graphviz DOT;
                            explain: the graph as built, before the passes
  --filter TEXT             bench: only the cases whose name contains TEXT

FILE.tsv (bench) has one case a line, tab-separated: name, einsum, extents
("a=312,b=312,..."), then optional columns (gflop, group); '#' starts a comment.

The ratio to GEMM is the time of one OpenBLAS GEMM of the same flops (square, 2 m n k
close to the flops of the plan) divided by tenex's time: 1 or more means tenex runs the
expression as fast as the machine runs one GEMM of that size.
)";

/// A usage error: the message goes to stderr, the exit status is 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- the einsum spec ----------------------------------------------------------------------

struct Spec {
  std::string text;
  std::vector<std::string> operands;  // letters of each operand
  std::string result;                 // letters of the result
  std::map<char, std::size_t> extent;
};

bool is_label(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

Spec parse_spec(std::string_view text) {
  Spec spec;
  spec.text = text;
  const std::string where = "tenex: bad spec \"" + std::string(text) + "\": ";
  if (const std::size_t space = text.find_first_of(" \t\n"); space != std::string_view::npos) {
    throw UsageError(where + "a space at position " + std::to_string(space + 1) +
                     "; write the spec without spaces, e.g. \"ij,jk->ik\"");
  }
  if (spec.text.empty())
    throw UsageError(where + "it is empty; write operands then '->' then the result, e.g. \"ij,jk->ik\"");
  const std::size_t arrow = spec.text.find("->");
  const std::string inputs = spec.text.substr(0, arrow);
  std::map<char, int> count;
  std::string operand;
  auto finish = [&] {
    if (operand.empty())
      throw UsageError(where + "an operand has no labels (two commas in a row, or a comma at an end)");
    spec.operands.push_back(operand);
    operand.clear();
  };
  for (char c : inputs) {
    if (c == ',') {
      finish();
    } else if (is_label(c)) {
      operand += c;
      ++count[c];
    } else {
      throw UsageError(where + "'" + std::string(1, c) + "' is not a label; labels are single letters a-z, A-Z");
    }
  }
  finish();
  if (arrow == std::string::npos) {
    for (const auto& [c, n] : count) {
      if (n == 1) spec.result += c;
    }
  } else {
    spec.result = spec.text.substr(arrow + 2);
    if (spec.result.find("->") != std::string::npos) throw UsageError(where + "it has more than one '->'");
    for (std::size_t i = 0; i < spec.result.size(); ++i) {
      const char c = spec.result[i];
      if (!is_label(c)) {
        throw UsageError(where + "'" + std::string(1, c) + "' in the result is not a label; labels are single letters");
      }
      if (!count.count(c)) {
        throw UsageError(where + "the result's label '" + std::string(1, c) + "' is on no operand");
      }
      if (spec.result.find(c) != i) throw UsageError(where + "the result repeats label '" + std::string(1, c) + "'");
    }
  }
  return spec;
}

std::size_t parse_count(const std::string& text, const std::string& what) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value == 0) {
    throw UsageError("tenex: " + what + ": \"" + text + "\" is not a positive whole number");
  }
  return value;
}

/// "a=30,b=20" into spec.extent; every letter of the spec needs one, and only those.
void parse_extents(const std::string& text, Spec& spec) {
  std::map<char, int> used;
  for (const std::string& part : spec.operands) {
    for (char c : part) used[c] = 1;
  }
  std::string spec_letters;
  for (const auto& [c, n] : used) spec_letters += std::string(spec_letters.empty() ? "" : ",") + c;
  if (!text.empty() && text.back() == ',') {
    throw UsageError("tenex: --extents: \"" + text +
                     "\" ends with a comma; write LETTER=EXTENT items separated by "
                     "commas (e.g. a=30,b=20)");
  }
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.size() < 3 || !is_label(item[0]) || item[1] != '=') {
      throw UsageError("tenex: --extents: \"" + item + "\" is not LETTER=EXTENT (e.g. a=30)");
    }
    const char label = item[0];
    if (!used.count(label)) {
      throw UsageError("tenex: --extents: unknown label '" + std::string(1, label) + "': the spec \"" + spec.text +
                       "\" uses " + spec_letters);
    }
    if (spec.extent.count(label)) {
      throw UsageError("tenex: --extents: label '" + std::string(1, label) + "' is given twice");
    }
    spec.extent[label] = parse_count(item.substr(2), "--extents: the extent of '" + std::string(1, label) + "'");
  }
  for (const auto& [c, n] : used) {
    if (!spec.extent.count(c)) {
      throw UsageError("tenex: --extents: no extent for label '" + std::string(1, c) + "' (the spec \"" + spec.text +
                       "\" uses " + spec_letters + ")");
    }
  }
}

/// "abc" -> "a,b,c"
std::string comma_labels(const std::string& letters) {
  std::string out;
  for (char c : letters) {
    if (!out.empty()) out += ',';
    out += c;
  }
  return out;
}

// ---- options ------------------------------------------------------------------------------

struct Options {
  std::string command;
  std::string argument;  // the spec or the file
  std::string extents;
  bool has_extents = false;
  std::string dtype = "double";
  std::size_t repeat = 5;
  std::optional<std::string> passes;
  std::string dot;
  std::string filter;
  bool help = false;
};

Options parse_options(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError("tenex: " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--extents") {
      o.extents = value();
      o.has_extents = true;
    } else if (arg == "--dtype") {
      o.dtype = value();
      if (o.dtype != "float" && o.dtype != "double" && o.dtype != "complex64" && o.dtype != "complex128") {
        throw UsageError("tenex: --dtype: \"" + o.dtype + "\" is not float, double, complex64 or complex128");
      }
    } else if (arg == "--repeat") {
      o.repeat = parse_count(value(), "--repeat");
    } else if (arg == "--passes") {
      o.passes = value();
    } else if (arg == "--dot") {
      o.dot = value();
    } else if (arg == "--filter") {
      o.filter = value();
    } else if (arg.size() > 1 && arg[0] == '-' && arg[1] == '-') {
      throw UsageError("tenex: unknown option " + arg + " (tenex --help lists them)");
    } else {
      positional.push_back(arg);
    }
  }
  if (o.help) return o;
  if (positional.empty()) throw UsageError("tenex: no command; use einsum, explain or bench (tenex --help)");
  o.command = positional[0];
  if (o.command == "help") {
    o.help = true;
    return o;
  }
  if (o.command != "einsum" && o.command != "explain" && o.command != "bench") {
    throw UsageError("tenex: unknown command \"" + o.command + "\"; use einsum, explain or bench (tenex --help)");
  }
  if (positional.size() < 2) {
    throw UsageError("tenex " + o.command + ": missing " + (o.command == "bench" ? "the file" : "the spec"));
  }
  if (positional.size() > 2) throw UsageError("tenex " + o.command + ": unexpected argument \"" + positional[2] + "\"");
  o.argument = positional[1];
  if (o.command != "bench" && !o.has_extents) {
    throw UsageError("tenex " + o.command + ": missing --extents (e.g. --extents a=30,b=20)");
  }
  if (o.command == "bench" && o.has_extents) throw UsageError("tenex bench: --extents comes from the file");
  return o;
}

// ---- running ------------------------------------------------------------------------------

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The operands of a spec, filled with random values (or left as allocated, when `fill` is false).
template <class T>
struct Problem {
  using O = tenex::Tensor<T>;  // the object expressions are built over
  Spec spec;
  std::vector<tenex::Tensor<T>> operands;
  tenex::Tensor<T> result;

  Problem(const Spec& s, bool fill) : spec(s) {
    for (std::size_t i = 0; i < spec.operands.size(); ++i) {
      std::vector<std::size_t> extents;
      for (char c : spec.operands[i]) extents.push_back(spec.extent.at(c));
      operands.emplace_back(tenex::Shape(extents));
      if (fill) tenex::fill_random(operands.back(), 1000 + i);
    }
  }

  /// The statement result(spec.result) = operand 0 * operand 1 * ..., recorded and kept
  /// open by the returned expressions: it runs when they are all gone.
  std::vector<std::unique_ptr<tenex::Expression<O>>> record() {
    std::vector<std::unique_ptr<tenex::Expression<O>>> parts;
    const tenex::Expression<O>* product = nullptr;
    for (std::size_t i = 0; i < operands.size(); ++i) {
      parts.push_back(std::make_unique<tenex::Indexed<O>>(operands[i], comma_labels(spec.operands[i])));
      if (product) parts.push_back(std::make_unique<tenex::Multiplication<O>>(*product, *parts.back()));
      product = parts.back().get();
    }
    tenex::Indexed<O> target(result, comma_labels(spec.result));
    parts.push_back(std::make_unique<tenex::AssignTo<O>>(target, result, *product, tenex::AssignMode::replace));
    return parts;
  }

  /// Runs the statement once; returns its time.
  double run() {
    const auto start = std::chrono::steady_clock::now();
    { auto statement = record(); }
    (void)result.data();  // the set ran when the statement went away; this only checks
    return seconds_since(start);
  }
};

/// Seconds of the best of `repeat` GEMMs of n x n matrices (after one warm-up).
template <class T>
double gemm_seconds(std::size_t n, std::size_t repeat) {
  std::vector<T> a(n * n, T(0.5)), b(n * n, T(0.25)), c(n * n, T(0));
  const int ni = static_cast<int>(n);
  double best = 1e300;
  for (std::size_t r = 0; r <= repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, a.data(), ni, b.data(), ni, 0.0f,
                  c.data(), ni);
    } else if constexpr (tenex::is_complex_v<T>) {
      const T one(1), zero(0);
      if constexpr (std::is_same_v<T, std::complex<float>>) {
        cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, &one, a.data(), ni, b.data(), ni, &zero,
                    c.data(), ni);
      } else {
        cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, &one, a.data(), ni, b.data(), ni, &zero,
                    c.data(), ni);
      }
    } else {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0, a.data(), ni, b.data(), ni, 0.0, c.data(),
                  ni);
    }
    if (r > 0) best = std::min(best, seconds_since(start));
  }
  return best;
}

/// The side n of the square GEMM whose 2 n^3 flops are closest to `flops`.
std::size_t gemm_side(double flops) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(std::cbrt(flops / 2))));
}

struct Timing {
  double flops = 0;  // counted by the backend
  double seconds = 0;
  std::size_t gemm_n = 0;
  double gemm_seconds = 0;
};

template <class T>
Timing time_problem(Problem<T>& problem, std::size_t repeat) {
  Timing t;
  problem.run();  // warm-up: first-touch, plans, threads
  t.flops = tenex::last_run_stats().flops;
  t.seconds = 1e300;
  for (std::size_t r = 0; r < repeat; ++r) t.seconds = std::min(t.seconds, problem.run());
  t.gemm_n = gemm_side(t.flops);
  t.gemm_seconds = gemm_seconds<T>(t.gemm_n, repeat);
  return t;
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string milliseconds(double seconds) { return format("%.3f ms", seconds * 1e3); }

/// A --dot FILE that cannot be written is a usage error (exit status 2), found before anything
/// runs where the folder is missing or FILE is a folder.
void check_dot_path(const std::string& path) {
  const std::filesystem::path file(path);
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) {
    throw UsageError("tenex: --dot: cannot write " + path + ": the folder " + folder.string() +
                     " does not exist; name a file in an existing folder");
  }
  if (std::filesystem::is_directory(file, error)) {
    throw UsageError("tenex: --dot: cannot write " + path + ": it is a folder; name a file");
  }
}

[[noreturn]] void throw_cannot_write_dot(const std::string& path, const std::string& why) {
  throw UsageError("tenex: --dot: cannot write " + path + (why.empty() ? "" : ": " + why));
}

/// Writes the optimized graph of one run of `problem` to `path` (through TENEX_DUMP_GRAPH).
template <class T>
void dump_dot(Problem<T>& problem, const std::string& path) {
  std::string pattern = (std::filesystem::temp_directory_path() / "tenex-cli-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("tenex: --dot: cannot make a temporary folder");
  const std::filesystem::path dir = pattern;
  setenv("TENEX_DUMP_GRAPH", dir.c_str(), 1);
  try {
    problem.run();
  } catch (...) {
    unsetenv("TENEX_DUMP_GRAPH");
    std::filesystem::remove_all(dir);
    throw;
  }
  unsetenv("TENEX_DUMP_GRAPH");
  bool copied = false;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!std::filesystem::copy_file(entry.path(), path, std::filesystem::copy_options::overwrite_existing, error)) {
      break;
    }
    copied = true;
  }
  std::filesystem::remove_all(dir);
  if (error) throw_cannot_write_dot(path, error.message());
  if (!copied) throw std::runtime_error("tenex: --dot: the run wrote no graph");
}

template <class T>
int einsum(const Options& o, const Spec& spec) {
  Problem<T> problem(spec, true);
  {
    auto statement = problem.record();
    std::cout << tenex::explain(*statement.back());
  }  // the statement runs here (a first run, not timed)
  if (!o.dot.empty()) dump_dot(problem, o.dot);
  const Timing t = time_problem(problem, o.repeat);
  std::cout << "\ntime: " << milliseconds(t.seconds) << " (best of " << o.repeat << ")\n";
  // Complex: the backend counts operations on complex numbers (a multiply-add is 2), as the
  // GEMM's 2 n^3 below does; a complex multiply-add is 8 real flops.
  const char* unit = tenex::is_complex_v<T> ? " complex" : "";
  std::cout << "rate: " << format("%.2f", t.flops / t.seconds * 1e-9) << unit << " GFLOP/s (" << format("%.4g", t.flops)
            << unit << " flops counted)\n";
  const char* routine = std::is_same_v<T, float>                 ? "sgemm"
                        : std::is_same_v<T, double>              ? "dgemm"
                        : std::is_same_v<T, std::complex<float>> ? "cgemm"
                                                                 : "zgemm";
  std::cout << "gemm: " << milliseconds(t.gemm_seconds) << " for one " << routine << " m=n=k=" << t.gemm_n << " ("
            << format("%.4g", 2.0 * std::pow(double(t.gemm_n), 3)) << " flops, "
            << format("%.2f", 2.0 * std::pow(double(t.gemm_n), 3) / t.gemm_seconds * 1e-9) << " GFLOP/s)\n";
  std::cout << "ratio to GEMM: " << format("%.2f", t.gemm_seconds / t.seconds)
            << " (GEMM time / tenex time; 1 or more: as fast as one GEMM of the same flops)\n";
  if (!o.dot.empty()) std::cout << "graph: " << o.dot << "\n";
  return 0;
}

template <class T>
int explain_only(const Options& o, const Spec& spec) {
  // The tensors are allocated but not filled, and the statement is never run: the
  // expressions that keep its set open are left to the end of the process.
  auto* problem = new Problem<T>(spec, false);
  auto* statement = new std::vector<std::unique_ptr<tenex::Expression<tenex::Tensor<T>>>>(problem->record());
  std::cout << tenex::explain(*statement->back());
  if (!o.dot.empty()) {
    tenex::OpGraph graph;
    (void)statement->at(statement->size() - 2)->add_to_graph(graph);
    std::ofstream out(o.dot);
    out << graph.to_dot();
    if (!out) throw_cannot_write_dot(o.dot, "");
    std::cout << "graph (as built, before the passes): " << o.dot << "\n";
  }
  std::cout.flush();
  std::_Exit(0);  // leave the recorded statement unrun
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

template <class T>
int bench(const Options& o) {
  std::ifstream in(o.argument);
  if (!in) throw UsageError("tenex bench: cannot open " + o.argument);
  struct Case {
    std::string name;
    Spec spec;
  };
  std::vector<Case> cases;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> fields = split(line, '\t');
    const std::string where = o.argument + ":" + std::to_string(number) + ": ";
    if (fields.size() < 3)
      throw UsageError("tenex bench: " + where + "expected name, einsum and extents, tab-separated");
    try {
      Case c{fields[0], parse_spec(fields[1])};
      parse_extents(fields[2], c.spec);
      if (o.filter.empty() || c.name.find(o.filter) != std::string::npos) cases.push_back(std::move(c));
    } catch (const UsageError& e) {
      throw UsageError("tenex bench: " + where + std::string(e.what()).substr(7));
    }
  }
  if (cases.empty())
    throw UsageError("tenex bench: " + o.argument + " has no case" + (o.filter.empty() ? "" : " matching --filter"));

  std::vector<std::vector<std::string>> rows{{"case", "einsum", "GFLOP", "tenex", "GFLOP/s", "gemm", "ratio"}};
  double log_sum = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    std::cerr << "[" << i + 1 << "/" << cases.size() << "] " << c.name << " " << c.spec.text << std::endl;
    Problem<T> problem(c.spec, true);
    const Timing t = time_problem(problem, o.repeat);
    const double ratio = t.gemm_seconds / t.seconds;
    log_sum += std::log(ratio);
    rows.push_back({c.name, c.spec.text, format("%.3f", t.flops * 1e-9), milliseconds(t.seconds),
                    format("%.2f", t.flops / t.seconds * 1e-9), milliseconds(t.gemm_seconds), format("%.2f", ratio)});
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (std::size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  }
  for (const auto& row : rows) {
    for (std::size_t k = 0; k < row.size(); ++k) {
      const std::string pad(width[k] - row[k].size(), ' ');
      std::cout << (k < 2 ? row[k] + pad : pad + row[k]) << (k + 1 < row.size() ? "  " : "\n");
    }
  }
  std::cout << "geometric mean of the ratio to GEMM over " << cases.size()
            << " cases: " << format("%.2f", std::exp(log_sum / static_cast<double>(cases.size()))) << " (" << o.dtype
            << ", best of " << o.repeat << ")\n";
  return 0;
}

/// The library reads TENEX_PASSES when a set runs, and a bad list fails that set: a set of one
/// element run now makes a bad --passes a usage error, before anything else runs.
void check_passes(const std::string& passes) {
  try {
    tenex::Tensor<float> x(tenex::Shape{1}), y;
    y("i") = 2.0 * x("i");
    y.wait();
  } catch (const tenex::Error& e) {
    std::string why = e.what();
    const std::string prefix = "tenex: TENEX_PASSES=" + passes + ": ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    throw UsageError("tenex: --passes " + passes + ": " + why);
  }
}

template <class T>
int dispatch(const Options& o) {
  if (o.command == "bench") return bench<T>(o);
  Spec spec = parse_spec(o.argument);
  parse_extents(o.extents, spec);
  if (!o.dot.empty()) check_dot_path(o.dot);
  return o.command == "einsum" ? einsum<T>(o, spec) : explain_only<T>(o, spec);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse_options(argc, argv);
    if (o.help) {
      std::cout << kUsage;
      return 0;
    }
    if (o.passes) {
      setenv("TENEX_PASSES", o.passes->c_str(), 1);
      check_passes(*o.passes);
    }
    if (o.dtype == "float") return dispatch<float>(o);
    if (o.dtype == "complex64") return dispatch<std::complex<float>>(o);
    if (o.dtype == "complex128") return dispatch<std::complex<double>>(o);
    return dispatch<double>(o);
  } catch (const UsageError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const tenex::ShapeError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
