// The thread-safety contract of expressions (docs/reliability.md, "Thread safety"), and what a
// handle may outlive:
// - a pending result used as an operand on several threads joins its set safely (the linked
//   state is locked); every thread sees the right values;
// - an Indexed whose tensor was destroyed throws tenex::Error when assigned to, and still reads
//   the value it captured when used as an operand.
#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"
#include "support/tensors.hpp"

namespace {

using tenex::Indexed;
using tenex::Shape;
using tenex::Tensor;

using tenex_test::Scalars;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kRounds = 60;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kRounds = 60;
#else
constexpr int kRounds = 300;
#endif
#else
constexpr int kRounds = 300;
#endif

using tenex_test::iota_tensor;

template <class T>
Indexed<Tensor<T>> labelled_temporary() {
  Tensor<T> t({2, 3});
  return t("i,j");  // the Indexed outlives t
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("threads: a pending result used as an operand on several threads", T,
                          threads_pending_operand) {
  constexpr int kThreads = 4;
  constexpr int kStatements = 8;
  Tensor<T> a = iota_tensor<T>({3, 4});
  std::atomic<int> bad{0};
  for (int round = 0; round < kRounds; ++round) {
    Tensor<T> c;
    {
      auto held = a("i,j");
      c("i,j") = 2.0 * held;           // pending while `held` lives: its set stays open
      const auto shared = held * 3.0;  // one expression object read by every thread
      std::barrier start(kThreads);
      std::vector<std::thread> threads;
      for (int k = 0; k < kThreads; ++k) {
        threads.emplace_back([&, k] {
          start.arrive_and_wait();
          for (int n = 0; n < kStatements; ++n) {
            Tensor<T> d, e;
            // c is pending (at first): both statements join the set that produces it.
            d("j,i") = c("i,j") + static_cast<double>(k) * a("i,j");
            e("i,j") = shared + c("i,j");
            for (std::size_t i = 0; i < 3; ++i) {
              for (std::size_t j = 0; j < 4; ++j) {
                const double x = static_cast<double>(i * 4 + j);
                if (d.at(j, i) != static_cast<T>((2.0 + k) * x)) ++bad;
                if (e.at(i, j) != static_cast<T>(5.0 * x)) ++bad;
              }
            }
          }
        });
      }
      for (auto& t : threads) t.join();
    }
    for (std::size_t k = 0; k < 12; ++k) {
      if (c.data()[k] != static_cast<T>(2 * k)) ++bad;
    }
  }
  CHECK(bad.load() == 0);
}
TEST_CASE_TEMPLATE_APPLY(threads_pending_operand, Scalars);

TEST_CASE_TEMPLATE_DEFINE("threads: a set another thread is running is waited for, not run twice", T,
                          threads_wait_for_running_set) {
  constexpr int kThreads = 4;
  std::atomic<int> bad{0};
  Tensor<T> a = iota_tensor<T>({40, 40});
  for (int round = 0; round < kRounds; ++round) {
    Tensor<T> c;
    std::vector<Indexed<Tensor<T>>> held;
    held.push_back(a("i,k"));
    c("i,j") = held.back() * a("k,j");  // pending while `held` lives
    std::barrier start(kThreads + 1);
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        // Every thread reads at once: one runs the set, the others wait for it.
        const T* p = std::as_const(c).data();
        // c(0, 0) = sum_k k * 40k = 40 * 20540 and c(0, 1) = c(0, 0) + sum_k k (exact in float too).
        if (c.pending() || p[0] != static_cast<T>(821600) || p[1] != static_cast<T>(821600 + 780)) ++bad;
      });
    }
    start.arrive_and_wait();
    for (auto& t : threads) t.join();
    held.clear();
  }
  CHECK(bad.load() == 0);
}
TEST_CASE_TEMPLATE_APPLY(threads_wait_for_running_set, Scalars);

TEST_CASE_TEMPLATE_DEFINE("handles: an Indexed that outlived its tensor throws as a target", T,
                          handles_dangling_target) {
  Tensor<T> a = iota_tensor<T>({2, 3});
  auto target = labelled_temporary<T>();
  CHECK_THROWS_WITH_AS(target = a("i,j"), doctest::Contains("no longer exists"), tenex::Error);
  CHECK_THROWS_WITH_AS(target = 2.0 * a("i,j"), doctest::Contains("\"i,j\""), tenex::Error);
  CHECK_THROWS_AS(target += a("i,j"), tenex::Error);
  CHECK_THROWS_AS(target -= a("i,j"), tenex::Error);
  CHECK_THROWS_AS(target *= 2.0, tenex::Error);
  CHECK_THROWS_AS(target /= 2.0, tenex::Error);
  // As an operand it holds the value it labelled (zeros), which stays readable.
  Tensor<T> r;
  r("i,j") = target + a("i,j");
  CHECK(r.to_vector() == a.to_vector());
  // Nothing was written anywhere: a keeps its value.
  CHECK(a.to_vector() == iota_tensor<T>({2, 3}).to_vector());
}
TEST_CASE_TEMPLATE_APPLY(handles_dangling_target, Scalars);

TEST_CASE_TEMPLATE_DEFINE("handles: an Indexed of a moved tensor still writes to the object it labelled", T,
                          handles_moved_tensor) {
  Tensor<T> a = iota_tensor<T>({2, 3});
  Tensor<T> t({2, 3});
  auto target = t("i,j");
  Tensor<T> moved = std::move(t);  // t is alive (moved from): the target is t
  target = a("i,j");
  CHECK(t.to_vector() == a.to_vector());
  CHECK(moved.to_vector() == std::vector<T>(6, T(0)));
}
TEST_CASE_TEMPLATE_APPLY(handles_moved_tensor, Scalars);
