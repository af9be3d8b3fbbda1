#include "core/sorted_on_demand.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace hg {
namespace {

using Item = std::pair<int, int>;  // (rank with many ties, unique id)

bool Less(const Item& a, const Item& b) {
  return a.first != b.first ? a.first > b.first : a.second < b.second;
}

TEST(SortedOnDemand, ReadsTheSameSequenceAsAFullSortAtEverySizeAndPrefix) {
  std::mt19937 rng(7);
  for (const size_t n :
       {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{5000}}) {
    std::vector<Item> items;
    for (size_t i = 0; i < n; ++i)
      items.push_back({static_cast<int>(rng() % 10), static_cast<int>(i)});
    std::shuffle(items.begin(), items.end(), rng);
    std::vector<Item> want = items;
    std::sort(want.begin(), want.end(), Less);
    SortedOnDemand<Item, bool (*)(const Item&, const Item&)> s(items, Less);
    std::vector<Item> got;
    while (const Item* x = s.Next()) got.push_back(*x);
    EXPECT_EQ(got, want) << n;
    // Stopping early gives the sorted prefix.
    SortedOnDemand<Item, bool (*)(const Item&, const Item&)> early(items, Less);
    for (size_t i = 0; i < std::min<size_t>(n, 100); ++i) {
      const Item* x = early.Next();
      ASSERT_NE(x, nullptr);
      EXPECT_EQ(*x, want[i]) << n << " at " << i;
    }
  }
}

}  // namespace
}  // namespace hg
