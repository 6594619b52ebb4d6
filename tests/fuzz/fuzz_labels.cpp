// libFuzzer target: the label parser, through every public entry point that reads label
// strings. Any input either works or throws tenex::Error with a message; nothing else may
// happen (no other exception, no InternalError, no crash, no sanitizer report), and a
// statement that throws leaves its target unchanged.
//
// Input: byte 0 chooses the entry point and the operands' extents; the rest is up to three
// label strings separated by '|':
//   0 t(L0) read into a fresh target        5 c(L0) = a(L1) + b(L2)
//   1 Shape s(L0) into a Shape target       6 c(L0) += a(L1), then *= and -= forms
//   2 c(L0) = a(L1) * b(L2)                 7 sum / max_over / min_over(a(L1), L2) into c(L0)
//   3 chip(a(L1), L2, 0) into c(L0)         8 set_sparse_map(L1, L2) on a(L0)
//   4 Shape product c(L0) = a(L1) * b(L2)
//
//   ./fuzz_labels corpus/fuzz_labels          # docs/reliability.md
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::Tensor;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_labels: %s\n", what.c_str());
  std::abort();
}

std::size_t count_labels(std::string_view text) {
  std::size_t n = 1;
  for (char c : text) n += c == ',';
  return n;
}

/// A tensor whose rank is the number of labels in `text` (so that the labels, not the rank,
/// decide), capped at 4, each extent 1 + (seed + mode) % 3.
Tensor<double> tensor_for(std::string_view text, unsigned seed) {
  std::size_t rank = count_labels(text);
  if (text.find_first_not_of(" \t") == std::string_view::npos) rank = 0;
  if (rank > 4) rank = 4;
  std::vector<std::size_t> extents;
  for (std::size_t m = 0; m < rank; ++m) extents.push_back(1 + (seed + m) % 3);
  Tensor<double> t{Shape(extents)};
  tenex::fill_random(t, seed);
  return t;
}

Shape shape_for(std::string_view text, unsigned seed) {
  std::size_t rank = count_labels(text);
  if (text.find_first_not_of(" \t") == std::string_view::npos) rank = 0;
  if (rank > 4) rank = 4;
  std::vector<std::size_t> extents;
  for (std::size_t m = 0; m < rank; ++m) extents.push_back(1 + (seed + m) % 3);
  return Shape(extents);
}

/// Runs one entry point; a thrown tenex::Error is fine, anything else is a finding.
void run(unsigned mode, unsigned seed, const std::vector<std::string>& l) {
  Tensor<double> a = tensor_for(l[1], seed), b = tensor_for(l[2], seed + 1);
  Tensor<double> c({2});
  tenex::fill_random(c, 7);
  const std::vector<double> before = c.to_vector();
  const Shape c_shape = c.shape();
  bool threw = false;
  try {
    switch (mode) {
      case 0: {
        Tensor<double> t = tensor_for(l[0], seed), out;
        out(l[0]) = t(l[0]);
        (void)out.to_vector();
        return;
      }
      case 1: {
        Shape s = shape_for(l[0], seed), out;
        out(l[0]) = s(l[0]);
        return;
      }
      case 2: c(l[0]) = a(l[1]) * b(l[2]); break;
      case 3: c(l[0]) = tenex::chip(a(l[1]), l[2], 0); break;
      case 4: {
        Shape sa = shape_for(l[1], seed), sb = shape_for(l[2], seed + 1), out;
        out(l[0]) = sa(l[1]) * sb(l[2]);
        return;
      }
      case 5: c(l[0]) = a(l[1]) + b(l[2]); break;
      case 6:
        c(l[0]) += a(l[1]);
        c(l[0]) *= b(l[2]);
        c(l[0]) -= 0.5;
        break;
      case 7:
        switch (seed % 3) {
          case 0: c(l[0]) = tenex::sum(a(l[1]), l[2]); break;
          case 1: c(l[0]) = tenex::max_over(a(l[1]), l[2]); break;
          default: c(l[0]) = tenex::min_over(a(l[1]), l[2]); break;
        }
        break;
      default: {
        tenex::SparseMap map;
        map.insert({0}, {{0}});
        Tensor<double> t = tensor_for(l[0], seed), out;
        auto operand = t(l[0]);
        operand.set_sparse_map(l[1], l[2], map);
        out(l[0]) = operand;
        (void)out.to_vector();
        return;
      }
    }
    (void)c.to_vector();
  } catch (const tenex::InternalError& e) {
    fail(std::string("InternalError (a library bug): ") + e.what());
  } catch (const tenex::Error& e) {
    if (std::string_view(e.what()).empty()) fail("tenex::Error with an empty message");
    threw = true;
  } catch (const std::exception& e) {
    fail(std::string("an exception that is not tenex::Error: ") + e.what());
  } catch (...) {
    fail("an exception that is not a std::exception");
  }
  // A statement that throws where it is written changes nothing (mode 6: the first of its
  // statements may have run; only check single statements).
  if (threw && mode != 6) {
    try {
      if (!(c.shape() == c_shape) || c.to_vector() != before) fail("a statement that threw changed its target");
    } catch (const tenex::Error&) {
      // An error at evaluation is rethrown on read: the target holds it, which is allowed.
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 4096) return 0;
  const unsigned mode = data[0] % 9;
  const unsigned seed = data[0] / 9;
  std::vector<std::string> labels(3);
  std::size_t part = 0;
  for (std::size_t i = 1; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '|' && part < 2) {
      ++part;
      continue;
    }
    labels[part] += c;
  }
  run(mode, seed, labels);
  return 0;
}
