#include "sim/run_all.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>
#include <system_error>
#include <thread>

namespace hg::sim {

std::vector<Result<SimResult>> SimulateAll(const Scenario& sc,
                                           std::span<const std::unique_ptr<Policy>> policies,
                                           int threads,
                                           const std::function<SimOptions(size_t)>& options_for,
                                           const std::function<void(size_t)>& finished) {
  std::vector<Result<SimResult>> results(policies.size(),
                                         tl::unexpected(Error{"simulation", "not run", {}, 0}));
  std::atomic<size_t> next{0};
  // Each worker takes the next run not yet taken; results land in their own slots, so no two
  // threads write the same element.
  auto work = [&] {
    for (size_t i = next++; i < policies.size(); i = next++) {
      try {
        const SimOptions opt = options_for(i);
        results[i] = Simulate(sc, *policies[i], opt);
      } catch (const std::exception& e) {
        results[i] = tl::unexpected(
            Error{"simulation", std::string(policies[i]->name()) + ": " + e.what(), {}, 0});
      }
      if (finished) finished(i);
    }
  };
  const size_t n = std::min(policies.size(), static_cast<size_t>(std::max(1, threads)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running (and this one) take every run
    }
  }
  work();  // the calling thread runs too
  for (std::thread& t : pool) t.join();
  return results;
}

std::vector<Result<SimResult>> SimulateAllShowingProgress(
    const Scenario& sc, std::span<const std::unique_ptr<Policy>> policies, int threads,
    const SimOptions& base, ProgressLine& progress,
    const std::function<void(size_t, SimOptions&)>& extra) {
  auto results = SimulateAll(
      sc, policies, threads,
      [&](size_t i) {
        SimOptions run = base;
        const std::string policy(policies[i]->name());
        run.progress = [&progress, &sc, policy](Seconds t, int64_t events) {
          progress.Update(policy, t, sc.end, events);
        };
        if (extra) extra(i, run);
        return run;
      },
      [&](size_t i) { progress.Finish(policies[i]->name()); });
  progress.Done();
  return results;
}

}  // namespace hg::sim
