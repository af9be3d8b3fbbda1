#include "core/merged_queue.h"

#include <gtest/gtest.h>

#include <deque>
#include <vector>

namespace hg {
namespace {

struct Lists {
  std::deque<JobSpec> specs;  // stable addresses
  std::vector<PendingJob> funded, unfunded;
  // Appends job `id` queued at `t` to `list`; id 0 appends a hole.
  void Add(std::vector<PendingJob>& list, int64_t id, int64_t t) {
    if (id == 0) {
      list.push_back(PendingJob{nullptr, Seconds(t), 1});
      return;
    }
    JobSpec s;
    s.id = JobId(id);
    specs.push_back(s);
    list.push_back(PendingJob{&specs.back(), Seconds(t), 1});
  }
  std::vector<int64_t> Walk() const {
    std::vector<int64_t> ids;
    MergedQueue q(funded, unfunded);
    while (const PendingJob* p = q.Next()) ids.push_back(p->spec->id.value());
    return ids;
  }
};

TEST(MergedQueue, InterleavesBothListsByQueueTimeThenId) {
  Lists l;
  l.Add(l.funded, 1, 10);
  l.Add(l.funded, 4, 30);
  l.Add(l.funded, 5, 30);
  l.Add(l.unfunded, 2, 20);
  l.Add(l.unfunded, 3, 30);  // same time as 4 and 5: the lower id first, whichever list
  l.Add(l.unfunded, 6, 40);
  EXPECT_EQ(l.Walk(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(MergedQueue, SkipsHolesAnywhere) {
  Lists l;
  l.Add(l.funded, 0, 5);
  l.Add(l.funded, 7, 10);
  l.Add(l.funded, 0, 15);
  l.Add(l.unfunded, 0, 1);
  l.Add(l.unfunded, 8, 12);
  l.Add(l.unfunded, 0, 20);
  EXPECT_EQ(l.Walk(), (std::vector<int64_t>{7, 8}));
}

TEST(MergedQueue, EitherListMayBeEmpty) {
  Lists l;
  EXPECT_TRUE(l.Walk().empty());
  l.Add(l.unfunded, 9, 3);
  l.Add(l.unfunded, 10, 4);
  EXPECT_EQ(l.Walk(), (std::vector<int64_t>{9, 10}));
}

}  // namespace
}  // namespace hg
