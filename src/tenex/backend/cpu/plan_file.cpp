// The plan store shared by every thread, and the plan file (tenex/plans.hpp): save_plans,
// load_plans, plan_file_status, TENEX_PLAN_FILE.
//
// The file is text, one item a line:
//   tenex-plans 1                 the format and its version
//   version 0.9.0                 the tenex that wrote it
//   cpu <model name>              /proc/cpuinfo's
//   isa avx512f|avx2|baseline
//   threads 2                     OpenMP threads of the process that wrote it
//   probe <version> <isa> <simd> gemm <float> <double> gett <float> <double> copy <bytes/s> cpu <model>
//                                 the machine probe (machine.hpp): rates of one core, 0 where
//                                 not probed; at most one, itself keyed (a foreign or corrupt
//                                 one is ignored, the plans still loaded)
//   plan <shape key> <index> <plan identity>   (zero or more)
//   tree <network key> <path>     (zero or more) a contraction tree the order pass chose
//                                 (graph/contraction_tree/tree_store.hpp)
//   end <plans>                   a truncated file lacks it
// A file written for another CPU, instruction set, thread count or version is foreign: it is
// not read. A plan's index is its place in all_plans; its identity (its description without the
// model's time) is checked when the plan is first used, and a plan that no longer matches is
// dropped.
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "tenex/backend/cpu/machine.hpp"
#include "tenex/backend/cpu/plan_search.hpp"
#include "tenex/backend/cpu/shared_machine.hpp"
#include "tenex/config.hpp"
#include "tenex/error.hpp"
#include "tenex/graph/contraction_tree/tree_store.hpp"
#include "tenex/plans.hpp"
#include "tenex/settings.hpp"

namespace tenex {
namespace detail::cpu::plan_search {
namespace {

constexpr const char* kMagic = "tenex-plans 1";

struct Machine {
  std::string version = TENEX_VERSION_STRING, cpu = machine::probe_key().cpu, isa = machine::probe_key().isa;
  int threads = configured_threads();  // not the one a busy machine's set runs on for a while
};

struct Parsed {
  Machine machine;
  machine::Rates rates;
  bool probe = false;         // a probe entry was read and matches this machine
  std::string probe_problem;  // else why one was ignored
  std::vector<std::pair<std::string, StoredPlan>> plans;
  std::vector<std::pair<std::string, tree::Path>> trees;
};

// A probe entry: read into `out` where it is whole and made on this machine, else the reason
// it is ignored.
void parse_probe(std::istringstream& fields, std::size_t number, Parsed& out) {
  machine::ProbeKey key;
  std::string gemm, gett, copy, cpu;
  machine::Rates rates;
  fields >> key.version >> key.isa >> key.simd >> gemm >> rates.gemm[0] >> rates.gemm[1] >> gett >> rates.gett[0] >>
      rates.gett[1] >> copy >> rates.copy >> cpu;
  std::getline(fields >> std::ws, key.cpu);
  const double values[] = {rates.gemm[0], rates.gemm[1], rates.gett[0], rates.gett[1], rates.copy};
  const bool numbers = std::all_of(std::begin(values), std::end(values),
                                   [](double x) { return std::isfinite(x) && x >= 0 && x < 1e15; });
  if (!fields || gemm != "gemm" || gett != "gett" || copy != "copy" || cpu != "cpu" || key.cpu.empty() || !numbers ||
      (rates.gemm[0] > 0) != (rates.gett[0] > 0) || (rates.gemm[1] > 0) != (rates.gett[1] > 0)) {
    out.probe_problem = "probe entry at line " + std::to_string(number) + " ignored (corrupt)";
    return;
  }
  const machine::ProbeKey here = machine::probe_key();
  std::string other;
  if (key.version != here.version) other = "tenex " + key.version;
  if (key.isa != here.isa) other = "instruction set " + key.isa;
  if (key.simd != here.simd) other = "SIMD target " + key.simd + ", this is " + here.simd;
  if (key.cpu != here.cpu) other = "CPU '" + key.cpu + "'";
  if (!other.empty()) {
    out.probe_problem = "probe entry at line " + std::to_string(number) + " ignored (foreign: " + other + ")";
    return;
  }
  out.rates = rates;
  out.probe = true;
  out.probe_problem.clear();
}

// `text` quoted for a message, its control characters (a stray '\r', a tab) made visible and a
// long text cut: what a status says was found must look different from what was expected.
std::string shown(const std::string& text) {
  constexpr std::size_t longest = 80;
  std::string out = "'";
  for (std::size_t x = 0; x < text.size() && x < longest; ++x) {
    const auto c = static_cast<unsigned char>(text[x]);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      const char digits[] = "0123456789abcdef";
      out += std::string("\\x") + digits[c >> 4] + digits[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + (text.size() > longest ? "'..." : "'");
}

// The first line's problem: another format version (a number other than 1) is foreign, anything
// else is corrupt, and both say what was found.
std::string first_line_problem(const std::string& line) {
  constexpr std::size_t prefix = std::char_traits<char>::length("tenex-plans ");
  const std::string rest = line.rfind("tenex-plans ", 0) == 0 ? line.substr(prefix) : std::string();
  const bool number = !rest.empty() && rest.size() < 10 &&
                      std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (number && std::stoi(rest) != 1) return "foreign (line 1: format " + rest + "; this tenex reads format 1 only)";
  return std::string("corrupt at line 1 (") + (rest.empty() ? "not a tenex plan file: " : "") + "expected '" + kMagic +
         "', found " + shown(line) + ")";
}

// The whole file, or the reason it is not read ("corrupt at line L: ..."). Lines may end in
// "\r\n" (a file that passed through a Windows editor or checkout): the '\r' is dropped.
std::string parse(std::istream& in, Parsed& out) {
  std::string line;
  std::size_t number = 0;
  auto corrupt = [&](const std::string& why) { return "corrupt at line " + std::to_string(number) + " (" + why + ")"; };
  auto next = [&] {
    ++number;
    if (!std::getline(in, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  };
  if (!next()) return corrupt("empty file");
  if (line != kMagic) return first_line_problem(line);
  const char* header[] = {"version ", "cpu ", "isa ", "threads "};
  std::string values[4];
  for (int x = 0; x < 4; ++x) {
    if (!next()) return corrupt(std::string("truncated: expected '") + header[x] + "...'");
    if (line.rfind(header[x], 0) != 0) {
      return corrupt(std::string("expected '") + header[x] + "...', found " + shown(line));
    }
    values[x] = line.substr(std::strlen(header[x]));
  }
  out.machine.version = values[0];
  out.machine.cpu = values[1];
  out.machine.isa = values[2];
  try {
    std::size_t used = 0;
    out.machine.threads = std::stoi(values[3], &used);
    if (used != values[3].size()) return corrupt("bad thread count " + shown(values[3]));
  } catch (const std::exception&) {
    number = 5;
    return corrupt("bad thread count " + shown(values[3]));
  }
  while (next()) {
    std::istringstream fields(line);
    std::string word;
    fields >> word;
    if (word == "probe") {
      parse_probe(fields, number, out);
    } else if (word == "rate") {
      // An earlier build's GEMM rate alone: the probe measures more, so it is not taken.
    } else if (word == "plan") {
      std::string key;
      long long index = -1;
      fields >> key >> index;
      std::string identity;
      std::getline(fields >> std::ws, identity);
      if (!fields || key.empty() || index < 0 || identity.empty()) return corrupt("bad plan " + shown(line));
      out.plans.push_back({key, StoredPlan{static_cast<std::size_t>(index), identity, Origin::loaded}});
    } else if (word == "tree") {
      std::string key, text;
      fields >> key >> text;
      std::optional<tree::Path> path = tree::parse_path(text);
      if (!fields || key.empty() || !path) return corrupt("bad tree " + shown(line));
      out.trees.emplace_back(key, std::move(*path));
    } else if (word == "end") {
      long long count = -1;
      fields >> count;
      if (!fields || count != static_cast<long long>(out.plans.size())) {
        return corrupt("plan count does not match: " + shown(line) + " after " + std::to_string(out.plans.size()) +
                       (out.plans.size() == 1 ? " plan" : " plans"));
      }
      if (next()) return corrupt("text after the end: " + shown(line));
      return "";
    } else {
      return corrupt("unknown line " + shown(line));
    }
  }
  return corrupt("truncated: no end line");
}

// The header line (as parse numbers them) that says the file was written for another machine,
// and what it says against what this process is; empty where the file is this machine's.
std::string foreign(const Machine& file, const Machine& here) {
  if (file.version != here.version) return "line 2: written for tenex " + file.version + ", this is " + here.version;
  if (file.cpu != here.cpu) return "line 3: written for CPU " + shown(file.cpu) + ", this is " + shown(here.cpu);
  if (file.isa != here.isa) return "line 4: written for instruction set " + file.isa + ", this is " + here.isa;
  if (file.threads != here.threads) {
    return "line 5: written for " + std::to_string(file.threads) + " threads, this process runs " +
           std::to_string(here.threads);
  }
  return "";
}

std::size_t load_into(Store& shared, const std::string& path) {
  auto fail = [&](const std::string& why) {
    const std::lock_guard<std::mutex> lock(shared.mutex);
    shared.file_status = "plan file " + path + ": " + why + "; nothing loaded";
    return std::size_t{0};
  };
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) return fail("missing");
  if (status.type() == std::filesystem::file_type::directory) return fail("unreadable (a directory)");
  std::ifstream in(path);
  if (!in) return fail(std::string("unreadable (") + std::strerror(errno) + ")");
  Parsed parsed;
  const std::string problem = parse(in, parsed);
  if (!problem.empty()) return fail(problem);
  const std::string other = foreign(parsed.machine, Machine{});
  if (!other.empty()) return fail("foreign (" + other + ")");
  {
    const std::lock_guard<std::mutex> lock(shared.mutex);
    if (parsed.probe) shared.rates = parsed.rates;
    for (auto& [key, plan] : parsed.plans) shared.plans[key] = std::move(plan);
    for (const auto& [key, path] : parsed.trees) tree::remember_tree(key, path);
    shared.file_status =
        "plan file " + path + ": loaded " + std::to_string(parsed.plans.size()) +
        (parsed.plans.size() == 1 ? " plan" : " plans") +
        (parsed.trees.empty() ? "" : ", " + std::to_string(parsed.trees.size()) + " contraction trees") +
        (parsed.probe ? " and the machine probe" : "") +
        (parsed.probe_problem.empty() ? "" : "; " + parsed.probe_problem);
  }
  store_changed();
  return parsed.plans.size();
}

void save_from(Store& shared, const std::string& path, const Machine& here) {
  std::ostringstream text;
  text.precision(17);
  text << kMagic << "\nversion " << here.version << "\ncpu " << here.cpu << "\nisa " << here.isa << "\nthreads "
       << here.threads << "\n";
  std::size_t count = 0;
  {
    const std::lock_guard<std::mutex> lock(shared.mutex);
    const machine::Rates& r = shared.rates;
    if (r.gemm[0] > 0 || r.gemm[1] > 0) {
      const machine::ProbeKey key = machine::probe_key();
      text << "probe " << key.version << " " << key.isa << " " << key.simd << " gemm " << r.gemm[0] << " " << r.gemm[1]
           << " gett " << r.gett[0] << " " << r.gett[1] << " copy " << r.copy << " cpu " << key.cpu << "\n";
    }
    for (const auto& [key, plan] : shared.plans) {
      text << "plan " << key << " " << plan.index << " " << plan.identity << "\n";
      ++count;
    }
  }
  for (const auto& [key, path] : tree::remembered_trees())
    text << "tree " << key << " " << tree::path_text(path) << "\n";
  text << "end " << count << "\n";
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text.str();
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      out.close();
      std::remove(temporary.c_str());
      throw Error("tenex::save_plans: cannot write " + temporary + " (" + why + "); name a file in a writable folder");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error("tenex::save_plans: cannot replace " + path + " (" + why + "); name a file in a writable folder");
  }
}

Store& raw_store() {
  static Store shared;
  return shared;
}

// TENEX_PLAN_FILE's writer: destroyed (and the file written) when the process ends normally,
// before the store it reads (made first). Never throws, never prints.
// The machine is described when the file is loaded, not while the process ends.
struct FileWriter {
  std::string path;
  Machine machine;
  ~FileWriter() {
    try {
      save_from(raw_store(), path, machine);
    } catch (...) {  // a file that cannot be written is left as it was
    }
  }
};

}  // namespace

Store& store() {
  Store& shared = raw_store();
  static const bool loaded = [] {
    const char* path = setting(Setting::plan_file);
    if (path && *path) {
      load_into(raw_store(), path);
      static FileWriter writer{path, Machine{}};
    }
    return true;
  }();
  (void)loaded;
  return shared;
}

}  // namespace detail::cpu::plan_search

void save_plans(const std::string& path) {
  if (path.empty()) throw Error("tenex::save_plans: empty path; name the file to write");
  detail::cpu::plan_search::save_from(detail::cpu::plan_search::store(), path, detail::cpu::plan_search::Machine{});
}

std::size_t load_plans(const std::string& path) {
  return detail::cpu::plan_search::load_into(detail::cpu::plan_search::store(), path);
}

std::string plan_file_status() {
  namespace search = detail::cpu::plan_search;
  const search::Settings settings = search::read_settings();
  std::string text = std::string("plan search: ") + search::mode_name(settings.mode);
  if (!settings.unknown.empty()) {
    text += " (TENEX_PLAN_SEARCH=" + settings.unknown + " names no mode: estimate, amortized or measure)";
  }
  text += "\n";
  search::Store& shared = search::store();
  {
    const std::lock_guard<std::mutex> lock(shared.mutex);
    text += shared.file_status.empty() ? std::string("plan file: none read") : shared.file_status;
    text += "; " + std::to_string(shared.plans.size()) + (shared.plans.size() == 1 ? " plan" : " plans") + " held\n";
  }
  const std::string rates = search::rates_text();
  if (!rates.empty()) text += rates + "\n";
  return text;
}

}  // namespace tenex
