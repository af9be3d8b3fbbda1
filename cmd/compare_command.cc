#include "cmd/compare_command.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cmd/jobs_flag.h"
#include "cmd/loop_flags.h"
#include "cmd/policy_flags.h"
#include "cmd/policy_variants.h"
#include "cmd/resubmit_flag.h"
#include "cmd/sim_options.h"
#include "cmd/trace_flags.h"
#include "core/policy.h"
#include "sim/engine.h"
#include "sim/html_report.h"
#include "sim/lab_month.h"
#include "sim/progress.h"
#include "sim/run_all.h"
#include "sim/svg_chart.h"
#include "sim/trace.h"

namespace hg::cmd {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultPolicies =
    "hourglass,priority,fifo-backfill,slurm-multifactor,kueue-quota";

struct CompareArgs {
  std::string workload;
  std::string scenario;
  uint64_t seed = 1;
  std::string policies = kDefaultPolicies;
  TraceFlags trace_flags;  // --format, --map, --oversubscription, ...
  double end_days = 0;
  std::string cluster, budgets;  // csv/jsonl traces
  std::string html;
  std::string json;
  bool quiet = false;
  int64_t resubmit_after = -1;  // --resubmit-after (-1: never)
  LoopFlags loop;               // --interval, --cycle-while-waiting
  int jobs = 0;                 // --jobs: policies simulated at once (0: one per core)
  bool trace_tuned = false;     // a trace-only option was given
  PolicyFlags tuning;
  std::vector<std::string> variants;  // --variant, repeatable
};

// An output path is checked before the (minutes long) runs, so a typo fails at once and nothing
// is written: its directory must exist.
Result<void> CheckOutput(const std::string& option, const std::string& path) {
  if (path.empty()) return {};
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) return Fail(option, "'" + path + "' is a directory");
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec))
    return Fail(option, "directory '" + dir.string() + "' does not exist");
  return {};
}

// The loaders name their inputs by role ("workload", "oversubscription"); the user knows them as
// this command's options and paths.
Error WithOptions(Error e, const CompareArgs& a) {
  if (e.field == "--trace") e.field = "--workload";
  e = WithFlagNames(std::move(e));
  if (e.file == "workload") e.file = a.workload;
  if (e.file == "cluster") e.file = a.cluster.empty() ? a.workload : a.cluster;
  if (e.file == "budgets") e.file = a.budgets.empty() ? a.workload : a.budgets;
  return e;
}

struct Input {
  sim::Scenario scenario;
  std::string mapping;
};

Result<Input> LoadInput(const CompareArgs& a) {
  Input in;
  if (!a.scenario.empty()) {
    if (!a.workload.empty())
      return Fail("--scenario", "give either --scenario or --workload, not both");
    if (a.scenario != sim::kLabMonthName)
      return Fail("--scenario", "unknown scenario '" + a.scenario + "' (known: lab-month)");
    if (a.trace_tuned)
      return Fail("--format/--oversubscription/--unfunded-fraction/--debug-max-minutes/--map",
                  "apply only to a trace given with --workload");
    in.scenario = sim::MakeLabMonth(a.seed);
    in.mapping = "";
  } else {
    if (a.workload.empty()) return Fail("--workload", "give --workload FILE or --scenario NAME");
    sim::TraceOptions to = TraceOptionsFrom(a.trace_flags, a.workload, a.seed);
    to.cluster = a.cluster;
    to.budgets = a.budgets;
    auto t = sim::LoadTrace(to);
    if (!t) return tl::unexpected(WithOptions(t.error(), a));
    in.scenario = std::move(t->scenario);
    in.mapping = std::move(t->mapping);
  }
  if (a.end_days > 0) in.scenario.end = Seconds(static_cast<int64_t>(a.end_days * 86400));
  return in;
}

int RunCompare(const CompareArgs& a) {
  auto fail = [](const Error& e) {
    std::cerr << "hourglass sim compare: " << e.ToString() << "\n";
    return 2;
  };
  if (auto ok = CheckTraceFlags(a.trace_flags); !ok) return fail(ok.error());
  if (auto ok = CheckEndDays(a.end_days); !ok) return fail(ok.error());
  if (auto ok = CheckOutput("--html", a.html); !ok) return fail(ok.error());
  if (auto ok = CheckOutput("--json", a.json); !ok) return fail(ok.error());
  if (!a.html.empty() && !a.json.empty() && fs::path(a.html) == fs::path(a.json))
    return fail(Fail("--json", "must differ from --html").value());

  const auto threads = ThreadsFor(a.jobs);
  if (!threads) return fail(threads.error());
  auto options = SimOptionsFrom(a.tuning, a.resubmit_after, a.loop);
  if (!options) return fail(options.error());
  sim::SimOptions opt = std::move(*options);
  auto lineup = MakeLineup(a.policies, a.variants, a.tuning, opt.policy);
  if (!lineup) return fail(lineup.error());
  const std::vector<std::unique_ptr<Policy>>& policies = lineup->policies;
  if (policies.size() > sim::svg::kColours)
    return fail(Fail(a.variants.empty() ? "--policies" : "--variant",
                     "at most " + std::to_string(sim::svg::kColours) +
                         " runs in one report, so that each keeps a colour of its own (got " +
                         std::to_string(policies.size()) + ")")
                    .value());

  auto in = LoadInput(a);
  if (!in) return fail(in.error());
  if (auto ok = sim::Validate(in->scenario, opt.policy); !ok)
    return fail(WithOptions(ok.error(), a));

  sim::Comparison cmp;
  cmp.mapping = in->mapping;
  if (const std::string loop = DescribeLoop(a.loop); !loop.empty())
    cmp.mapping += (cmp.mapping.empty() ? "" : "\n") + loop;
  sim::ProgressLine progress(std::cerr, !a.quiet && isatty(2) != 0);
  if (!lineup->described.empty())
    cmp.mapping += (cmp.mapping.empty() ? "" : "\n") + lineup->described;
  auto results = sim::SimulateAllShowingProgress(
      in->scenario, policies, *threads, opt, progress,
      [&](size_t i, sim::SimOptions& run) { run.policy = lineup->configs[i]; });
  for (auto& r : results) {
    if (!r) return fail(r.error());
    cmp.runs.push_back(std::move(*r));
  }

  // Render everything first, then write: a failure to write one file is reported, and the
  // terminal output is complete either way.
  std::cout << sim::RenderCompareReport(cmp);
  auto write = [&](const std::string& option, const std::string& path, const std::string& text) {
    if (path.empty()) return 0;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return fail(Fail(option, "cannot write '" + path + "'").value());
    std::cerr << "wrote " << path << "\n";
    return 0;
  };
  if (!a.html.empty()) {
    if (int rc = write("--html", a.html, sim::RenderCompareHtml(cmp)); rc != 0) return rc;
  }
  if (!a.json.empty()) {
    if (int rc = write("--json", a.json, sim::RenderCompareJson(cmp)); rc != 0) return rc;
  }
  return 0;
}

}  // namespace

void AddCompareCommand(CLI::App& sim, int& exit_code) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmp = sim.add_subcommand(
      "compare", "Compare policies on one workload: a table, an HTML report with charts, JSON");
  cmp->add_option("--workload", args->workload,
                  "Trace: a file, or the openb directory (formats in docs/formats.md)");
  const TraceFlagOptions trace_opts = AddTraceFlags(cmp, &args->trace_flags);
  auto* cluster = cmp->add_option("--cluster", args->cluster, "csv/jsonl: cluster CSV (optional)");
  auto* budgets = cmp->add_option("--budgets", args->budgets, "csv/jsonl: budget TOML (optional)");
  cmp->add_option("--scenario", args->scenario, "Built-in scenario instead of a trace: lab-month");
  cmp->add_option("--seed", args->seed,
                  "Seed of the built-in scenario, or of the trace's researcher assignment")
      ->capture_default_str();
  cmp->add_option("--policies", args->policies, "Comma-separated policy names")
      ->capture_default_str();
  cmp->add_option("--variant", args->variants,
                  "Also run 'LABEL=POLICY --flag value ...': POLICY with these policy flags on "
                  "top of the others, reported as LABEL (repeatable)");
  cmp->add_option("--end-days", args->end_days, "Evaluate until this day (default: the input's)");
  cmp->add_option("--html", args->html, "Write the HTML report (charts inline) to FILE");
  cmp->add_option("--json", args->json, "Write the report's data as JSON to FILE");
  cmp->add_flag("--quiet", args->quiet, "No progress line");
  AddJobsFlag(cmp, &args->jobs);
  AddResubmitFlag(cmp, &args->resubmit_after);
  AddLoopFlags(cmp, &args->loop);
  AddPolicyFlags(cmp, &args->tuning);
  cmp->callback([args, trace_opts, cluster, budgets, &exit_code] {
    args->trace_tuned = trace_opts.LoadTuned() || args->trace_flags.FormatGiven() ||
                        cluster->count() + budgets->count() > 0;
    exit_code = RunCompare(*args);
    // Ends the parse here: without it `sim`'s callback would run a plain simulation next.
    throw CLI::RuntimeError(exit_code);
  });
}

}  // namespace hg::cmd
