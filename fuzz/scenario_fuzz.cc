// The four scenario files (cluster CSV, budgets TOML, workload CSV, events CSV). The first byte
// picks the reader, the rest is the file. A refusal names the file; what is accepted keeps the
// promises of sim/scenario_io.h: budgets build a tree, the workload is sorted by (submit, id),
// events by time.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/budget_tree.h"
#include "fuzz/fuzz_check.h"
#include "sim/scenario_io.h"

namespace {

// True when `r` holds a value; a refusal must name the file it was read from.
template <class T>
bool Accepted(const hg::Result<T>& r, const char* file) {
  if (!r) FUZZ_CHECK(r.error().file == file);
  return r.has_value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      Accepted(hg::sim::ParseClusterCsv(text, "cluster.csv"), "cluster.csv");
      break;
    case 1:
      if (auto budgets = hg::sim::ParseBudgetsToml(text, "budgets.toml");
          Accepted(budgets, "budgets.toml"))
        FUZZ_CHECK(hg::BudgetTree::Build(*budgets).has_value());
      break;
    case 2:
      if (auto jobs = hg::sim::ParseWorkloadCsv(text, "workload.csv");
          Accepted(jobs, "workload.csv"))
        for (size_t i = 1; i < jobs->size(); ++i) {
          const auto& a = (*jobs)[i - 1].spec;
          const auto& b = (*jobs)[i].spec;
          FUZZ_CHECK(a.submit < b.submit || (a.submit == b.submit && a.id < b.id));
        }
      break;
    default:
      if (auto events = hg::sim::ParseEventsCsv(text, "events.csv"); Accepted(events, "events.csv"))
        for (size_t i = 1; i < events->size(); ++i)
          FUZZ_CHECK((*events)[i - 1].at <= (*events)[i].at);
      break;
  }
  return 0;
}
