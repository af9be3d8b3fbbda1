// A workload job for hand-made test scenarios: funded when `budget` is set (class "batch"),
// unfunded otherwise (class "sweep"), with a 60 s grace period. Tests adjust the rest.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "sim/scenario.h"

namespace hg::sim {

inline SimJob TestJob(int64_t id, int64_t submit, int32_t gpus, std::string budget,
                      int64_t duration) {
  SimJob j;
  j.spec.id = JobId(id);
  j.spec.submit = Seconds(submit);
  j.spec.gpus = Gpus(gpus);
  j.spec.job_class = budget.empty() ? "sweep" : "batch";
  j.spec.grace = Seconds(60);
  j.budget = std::move(budget);
  j.duration = Seconds(duration);
  return j;
}

}  // namespace hg::sim
