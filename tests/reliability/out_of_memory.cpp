// An allocation that fails during evaluation becomes a tenex::Error on the set's results, never a
// crash: run under `ulimit -v 2097152` (2 GiB of address space) by ctest
// (reliability_out_of_memory), it evaluates sets that need far more and checks that each read
// rethrows a tenex::Error naming the shortage, that tensors stay usable, and that later sets run.
// Exits 0 when every check holds; prints what failed (it is a test program, not the library).
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "out_of_memory: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// Reads `t`, expecting the evaluation's error; returns its message ("" if none was thrown).
template <class T>
std::string error_on_read(const tenex::Tensor<T>& t) {
  try {
    t.wait();
  } catch (const tenex::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    check(false, std::string("a read threw a non-tenex exception: ") + e.what());
    return "?";
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

int main() {
  using tenex::Shape;
  using tenex::Tensor;
  constexpr std::size_t n = std::size_t{1} << 15;  // an n x n result of doubles: 8 GiB

  Tensor<double> a(Shape{n}), b(Shape{n});
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);

  // 1. A result that cannot be allocated: the error is stored and rethrown on every read.
  {
    Tensor<double> outer;
    outer("i,j") = a("i") * b("j");
    const std::string message = error_on_read(outer);
    check(!message.empty(), "an 8 GiB result under a 2 GiB address space did not fail");
    check(contains(message, "out of memory"), "the message does not say out of memory: " + message);
    check(error_on_read(outer) == message, "a second read does not rethrow the same error");
    std::printf("1. %s\n", message.c_str());
  }

  // 2. Two statements of one set, the second too large.
  {
    Tensor<double> small, big;
    {
      auto x = a("i");  // one handle: both statements are one set
      small("i") = 2.0 * x;
      big("i,j") = x * b("j");
    }
    check(!error_on_read(big).empty(), "an 8 GiB result did not fail");
    // The other result was written before the failure (then it is right), or has the error.
    if (error_on_read(small).empty()) {
      bool right = true;
      for (std::size_t i = 0; i < n; ++i) right = right && small.data()[i] == 2.0 * a.data()[i];
      check(right, "the other result of the failed set is wrong");
    }
  }

  // 3. An intermediate that cannot be allocated (the outer product, reduced afterwards).
  {
    Tensor<double> s;
    s("i") = (a("i") * b("j") + 1.0) * b("j");
    const std::string message = error_on_read(s);
    std::printf("3. %s\n", message.empty() ? "(ran: the optimizer fused the intermediate away)" : message.c_str());
    if (message.empty()) {
      // Fused: then the value must be right.
      double sum_b = 0, sum_b2 = 0;
      for (std::size_t j = 0; j < n; ++j) {
        sum_b += b.data()[j];
        sum_b2 += b.data()[j] * b.data()[j];
      }
      const double want = a.data()[0] * sum_b2 + sum_b;
      check(std::abs(s.at(0) - want) <= 1e-8 * (1 + std::abs(want)), "the fused reduction is wrong");
    }
  }

  // 4. A tensor too large to construct: a tenex::Error at once.
  try {
    Tensor<double> huge(Shape{n, n});
    check(false, "an 8 GiB tensor was constructed under a 2 GiB address space");
  } catch (const tenex::Error& e) {
    std::printf("4. %s\n", e.what());
  }

  // 5. The library still works: inputs unchanged, a small set runs.
  {
    Tensor<double> d;
    d("i") = 2.0 * a("i") + b("i");
    bool right = true;
    for (std::size_t i = 0; i < n; ++i) right = right && d.data()[i] == 2.0 * a.data()[i] + b.data()[i];
    check(right, "a small set after the failures computed a wrong value");
  }

  if (failures == 0) std::printf("out_of_memory: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
