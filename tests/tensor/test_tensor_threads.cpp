// The thread-safety contract of Tensor (docs/reliability.md, "Thread safety"): any number of
// threads may read one tensor at once through every accessor, the non-const data() and at()
// included, also while its storage is shared with a copy or held by an expression (the
// non-const accessors then copy the storage once, and no thread frees what another reads);
// threads may copy it and use it as an operand while others read it through the const accessors.
//
// Before the fix, two threads reading through the non-const at() both swapped the shared
// storage: AddressSanitizer reported a heap-use-after-free within a few thousand rounds.
#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <cstddef>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"
#include "support/tensors.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;

using tenex_test::Scalars;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kRounds = 1000;  // sanitizers run each round ~10x slower
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kRounds = 1000;
#else
constexpr int kRounds = 3000;
#endif
#else
constexpr int kRounds = 3000;
#endif

using tenex_test::iota_tensor;

// Runs `rounds` rounds: `prepare` on this thread, then every reader at once (released together by
// a barrier), then `check` on this thread. Readers count what they saw wrong in `bad`.
void run_rounds(int rounds, const std::function<void()>& prepare, const std::vector<std::function<void()>>& readers,
                const std::function<void()>& check) {
  std::barrier sync(static_cast<std::ptrdiff_t>(readers.size() + 1));
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (const auto& read : readers) {
    threads.emplace_back([&sync, &stop, &read] {
      for (;;) {
        sync.arrive_and_wait();  // round prepared
        if (stop.load()) return;
        read();
        sync.arrive_and_wait();  // round read
      }
    });
  }
  for (int r = 0; r < rounds; ++r) {
    prepare();
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    check();
  }
  stop.store(true);
  sync.arrive_and_wait();
  for (auto& t : threads) t.join();
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("threads: several threads read a shared tensor through the non-const at() and data()", T,
                          tensor_threads_nonconst_read) {
  const Tensor<T> reference = iota_tensor<T>({3, 5});
  std::atomic<int> bad{0};
  Tensor<T> a;
  Tensor<T> copy;
  auto read_at = [&] {
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 5; ++j) {
        if (a.at(i, j) != static_cast<T>(i * 5 + j)) ++bad;
      }
    }
  };
  auto read_data = [&] {
    const T* p = a.data();
    for (std::size_t k = 0; k < 15; ++k) {
      if (p[k] != static_cast<T>(k)) ++bad;
    }
    if (a.to_vector() != reference.to_vector()) ++bad;
  };
  SUBCASE("the storage is shared with a copy") {
    run_rounds(
        kRounds,
        [&] {
          a = iota_tensor<T>({3, 5});
          copy = a;
        },
        {read_at, read_data, read_at}, [&] {});
    // The copy kept its value and a has a storage of its own to write to.
    a.at(0, 0) = 100;
    CHECK(copy.at(0, 0) == 0);
  }
  SUBCASE("the storage is held by a pending expression") {
    Tensor<T> c;
    std::vector<tenex::Indexed<Tensor<T>>> held;
    run_rounds(
        kRounds,
        [&] {
          held.clear();
          a = iota_tensor<T>({3, 5});
          held.push_back(a("i,j"));  // holds a's storage, and keeps c's set open
          c("i,j") = 2.0 * held.back();
        },
        {read_at, read_data}, [&] {});
    held.clear();
    for (std::size_t k = 0; k < 15; ++k) CHECK(c.data()[k] == static_cast<T>(2 * k));
  }
  SUBCASE("readers copy the tensor and use it as an operand while others read through const accessors") {
    // (While a thread copies or captures the tensor, the others read it through the const
    // accessors: a non-const access then would copy the storage again, and a reference taken
    // before might dangle. See the contract in docs/reliability.md.)
    auto read_const = [&] {
      const Tensor<T>& view = a;
      for (std::size_t i = 0; i < 3; ++i) {
        for (std::size_t j = 0; j < 5; ++j) {
          if (view.at(i, j) != static_cast<T>(i * 5 + j)) ++bad;
        }
      }
      if (view.data()[14] != static_cast<T>(14)) ++bad;
    };
    run_rounds(
        kRounds,
        [&] {
          a = iota_tensor<T>({3, 5});
          a.at(0, 0) = 0;  // a non-const access before the round: the storage is private now
        },
        {read_const, read_const,
         [&] {
           Tensor<T> mine = a;  // a copy made while the others read
           Tensor<T> twice;
           twice("i,j") = a("i,j") + mine("i,j");
           for (std::size_t k = 0; k < 15; ++k) {
             if (twice.data()[k] != static_cast<T>(2 * k)) ++bad;
           }
         },
         [&] {
           if (a.to_vector() != reference.to_vector()) ++bad;
         }},
        [&] {});
    // After the round, a is written alone: its copies keep their values.
    Tensor<T> kept = a;
    a.at(2, 4) = 100;
    CHECK(kept.at(2, 4) == 14);
  }
  CHECK(bad.load() == 0);
}
TEST_CASE_TEMPLATE_APPLY(tensor_threads_nonconst_read, Scalars);

TEST_CASE_TEMPLATE_DEFINE("threads: several threads read one pending result", T, tensor_threads_pending_read) {
  std::atomic<int> bad{0};
  Tensor<T> a = iota_tensor<T>({4, 4});
  Tensor<T> c;
  std::vector<tenex::Indexed<Tensor<T>>> held;
  run_rounds(
      kRounds / 4,
      [&] {
        held.clear();
        held.push_back(a("j,i"));
        c("i,j") = held.back() * 3.0;  // pending while `held` lives
        if (!c.pending()) ++bad;
      },
      {[&] {
         // The first reader runs the set, the others wait for it.
         if (c.at(1, 2) != static_cast<T>(3 * 9)) ++bad;
       },
       [&] {
         if (std::as_const(c).data()[4] != static_cast<T>(3)) ++bad;
       },
       [&] {
         c.wait();
         if (c.pending()) ++bad;
       }},
      [&] {});
  CHECK(bad.load() == 0);
}
TEST_CASE_TEMPLATE_APPLY(tensor_threads_pending_read, Scalars);
