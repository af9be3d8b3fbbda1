#include "cmd/jobs_flag.h"

#include <algorithm>
#include <thread>

namespace hg::cmd {

void AddJobsFlag(CLI::App* app, int* jobs) {
  app->add_option("--jobs", *jobs,
                  "Policies simulated at once, each on its own core (0: one per core)")
      ->capture_default_str();
}

Result<int> ThreadsFor(int jobs) {
  if (jobs < 0) return tl::unexpected(Error{"--jobs", "must be 0 (one per core) or more", {}, 0});
  if (jobs > 0) return jobs;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace hg::cmd
