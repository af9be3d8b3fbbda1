#include "core/function_ref.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace hg {
namespace {

// What PlanPreemption and ChooseReservation rely on: the callee calls the caller's own lambda,
// whose captures it sees (and may change) by reference, not a copy of it.
int SumOver(FunctionRef<int(size_t)> f, size_t n) {
  int sum = 0;
  for (size_t i = 0; i < n; ++i) sum += f(i);
  return sum;
}

TEST(FunctionRef, CallsTheCallersLambdaWithItsCaptures) {
  const std::vector<int> v{3, 5, 7};
  EXPECT_EQ(SumOver([&](size_t i) { return v[i]; }, v.size()), 15);
}

TEST(FunctionRef, StateTheLambdaChangesIsTheCallersNotACopys) {
  int calls = 0;
  auto counting = [&calls](size_t i) {
    ++calls;
    return static_cast<int>(i);
  };
  EXPECT_EQ(SumOver(counting, 4), 0 + 1 + 2 + 3);
  EXPECT_EQ(calls, 4);
  // A lambda with state of its own: the second call sees what the first one left.
  auto memo = [seen = 0](size_t i) mutable { return seen += static_cast<int>(i); };
  EXPECT_EQ(SumOver(memo, 3), 0 + 1 + 3);
  EXPECT_EQ(memo(0), 3);  // the referenced object itself moved on
}

bool IsEven(size_t i) { return i % 2 == 0; }

TEST(FunctionRef, TakesAFunctionPointerAndConvertsItsResult) {
  bool (*even)(size_t) = IsEven;
  const FunctionRef<bool(size_t)> ref = even;
  EXPECT_TRUE(ref(4));
  EXPECT_FALSE(ref(7));
  // The result converts as std::function's would: a bool counted as an int.
  EXPECT_EQ(SumOver(even, 5), 3);
}

}  // namespace
}  // namespace hg
