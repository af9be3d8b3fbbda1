#include "cmd/sim_command.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cmd/compare_command.h"
#include "cmd/jobs_flag.h"
#include "cmd/loop_flags.h"
#include "cmd/policy_flags.h"
#include "cmd/policy_variants.h"
#include "cmd/resubmit_flag.h"
#include "cmd/sim_options.h"
#include "cmd/trace_flags.h"
#include "core/policy.h"
#include "sim/engine.h"
#include "sim/lab_month.h"
#include "sim/philly.h"
#include "sim/progress.h"
#include "sim/report.h"
#include "sim/run_all.h"
#include "sim/scenario_io.h"
#include "sim/trace.h"

namespace hg::cmd {
namespace {

struct SimArgs {
  std::string scenario;
  uint64_t seed = 1;
  std::string policies = "hourglass,priority";
  std::string json;
  std::string decisions;
  std::string cluster, budgets, workload, events;
  std::string write_dir;
  std::string philly;
  std::string trace;
  TraceFlags trace_flags;    // --format, --map, --oversubscription, ...
  bool trace_tuned = false;  // --oversubscription, --unfunded-fraction or --debug-max-minutes given
  double end_days = 0;
  double funded_scale = 1.0;  // lab-month's LabMonthOptions::funded_scale
  LoopFlags loop;             // --interval, --cycle-while-waiting
  PolicyFlags tuning;
  std::vector<std::string> variants;  // --variant, repeatable
  bool quiet = false;
  int64_t resubmit_after = -1;  // --resubmit-after (-1: never)
  int jobs = 0;                 // --jobs: policies simulated at once (0: one per core)
  bool explain = false;
  std::vector<int64_t> explain_jobs;  // empty: every job
};

// Maps the engine's file tokens ("workload", ...) to the paths the user gave.
Error WithPath(Error e, const SimArgs& a) {
  if (!a.philly.empty() || !a.trace.empty()) {
    // The scenario's parts all come from the trace; the adapter's option names become flags.
    const std::string& trace = a.philly.empty() ? a.trace : a.philly;
    if (e.file == "cluster" || e.file == "budgets" || e.file == "workload") e.file = trace;
    e = WithFlagNames(std::move(e));
  }
  if (e.file == "cluster") e.file = a.cluster;
  if (e.file == "budgets") e.file = a.budgets;
  if (e.file == "workload") e.file = a.workload;
  if (e.file == "events") e.file = a.events;
  return e;
}

// `mapping` receives how a trace became the scenario (empty for scenario files).
Result<sim::Scenario> LoadScenario(const SimArgs& a, std::string& mapping) {
  sim::Scenario sc;
  if (a.funded_scale != 1.0 && a.scenario.empty())
    return Fail("--funded-scale", "applies only to --scenario lab-month");
  if (a.trace_tuned && a.philly.empty() && a.trace.empty())
    return Fail("--oversubscription/--unfunded-fraction/--debug-max-minutes",
                "apply only to a trace; give --trace FILE or --philly FILE");
  if (a.trace.empty() && a.trace_flags.FormatGiven())
    return Fail("--format/--map", "apply only to a trace; give --trace FILE");
  if (!a.trace.empty()) {
    // A csv/jsonl trace may take its cluster and budget tree from --cluster and --budgets.
    if (!a.philly.empty() || !a.scenario.empty() || !a.workload.empty() || !a.events.empty())
      return Fail("--trace", "give either --trace or --philly or --scenario or the scenario files");
    sim::TraceOptions t = TraceOptionsFrom(a.trace_flags, a.trace, a.seed);
    t.cluster = a.cluster;
    t.budgets = a.budgets;
    auto loaded = sim::LoadTrace(t);
    if (!loaded) return tl::unexpected(loaded.error());
    sc = std::move(loaded->scenario);
    mapping = std::move(loaded->mapping);
  } else if (!a.philly.empty()) {
    if (!a.scenario.empty() || !a.cluster.empty() || !a.workload.empty() || !a.budgets.empty() ||
        !a.events.empty())
      return Fail("--philly", "give either --philly or --scenario or the scenario files");
    const sim::PhillyOptions po = PhillyOptionsFrom(a.trace_flags, a.seed);
    auto p = sim::LoadPhilly(a.philly, po);
    if (!p) return tl::unexpected(p.error());
    sc = std::move(*p);
    mapping = sim::DescribeMapping(sc, po);
  } else if (!a.scenario.empty()) {
    if (a.scenario != sim::kLabMonthName)
      return Fail("--scenario", "unknown scenario '" + a.scenario + "' (known: lab-month)");
    if (!a.cluster.empty() || !a.workload.empty() || !a.budgets.empty())
      return Fail("--scenario", "give either --scenario or --cluster/--budgets/--workload files");
    sc = sim::MakeLabMonth(a.seed, sim::LabMonthOptions{a.funded_scale});
  } else {
    if (a.cluster.empty() || a.budgets.empty() || a.workload.empty())
      return Fail("--cluster/--budgets/--workload",
                  "give --scenario NAME or all three scenario files");
    auto nodes = sim::ReadCluster(a.cluster);
    if (!nodes) return tl::unexpected(nodes.error());
    auto budgets = sim::ReadBudgets(a.budgets);
    if (!budgets) return tl::unexpected(budgets.error());
    auto jobs = sim::ReadWorkload(a.workload);
    if (!jobs) return tl::unexpected(jobs.error());
    sc.name = a.workload;
    sc.nodes = std::move(*nodes);
    sc.budgets = std::move(*budgets);
    sc.jobs = std::move(*jobs);
    if (!a.events.empty()) {
      auto ev = sim::ReadEvents(a.events);
      if (!ev) return tl::unexpected(ev.error());
      sc.events = std::move(*ev);
    }
    Seconds last{0};
    for (const auto& j : sc.jobs) last = std::max(last, j.spec.submit);
    sc.end = last + Days(1);
  }
  if (a.end_days > 0) sc.end = Seconds(static_cast<int64_t>(a.end_days * 86400));
  return sc;
}

int RunSim(const SimArgs& a) {
  auto fail = [&](const Error& e) {
    std::cerr << "hourglass sim: " << WithPath(e, a).ToString() << "\n";
    return 2;
  };
  if (a.explain && a.decisions.empty())
    return fail(Error{"--explain", "needs --decisions FILE to write the reasons to", {}, 0});
  if (!a.explain_jobs.empty() && a.decisions.empty())
    return fail(Error{"--explain-jobs", "needs --decisions FILE to write the reasons to", {}, 0});
  const auto threads = ThreadsFor(a.jobs);
  if (!threads) return fail(threads.error());
  auto options = SimOptionsFrom(a.tuning, a.resubmit_after, a.loop);
  if (!options) return fail(options.error());
  sim::SimOptions opt = std::move(*options);
  if (auto ok = CheckTraceFlags(a.trace_flags); !ok) return fail(ok.error());
  if (auto ok = CheckEndDays(a.end_days); !ok) return fail(ok.error());
  if (!(a.funded_scale > 0 && a.funded_scale <= 4))
    return fail(Error{"--funded-scale", "must be within (0, 4]", {}, 0});
  std::string mapping;
  auto sc = LoadScenario(a, mapping);
  if (!sc) return fail(sc.error());
  opt.explain = a.explain || !a.explain_jobs.empty();
  if (!a.explain) {
    opt.explain_jobs = a.explain_jobs;
    std::sort(opt.explain_jobs.begin(), opt.explain_jobs.end());
  }
  if (auto ok = sim::Validate(*sc, opt.policy); !ok) return fail(ok.error());
  auto lineup = MakeLineup(a.policies, a.variants, a.tuning, opt.policy);
  if (!lineup) return fail(lineup.error());
  const std::vector<std::unique_ptr<Policy>>& policies = lineup->policies;
  if (!a.write_dir.empty()) {
    if (auto ok = sim::WriteScenario(*sc, a.write_dir); !ok) return fail(ok.error());
    const std::string d = a.write_dir;
    std::cerr << "wrote scenario files to " << d << "; replay with:\n  hourglass sim --cluster "
              << d << "/cluster.csv --budgets " << d << "/budgets.toml --workload " << d
              << "/workload.csv --events " << d << "/events.csv --end-days "
              << static_cast<double>(sc->end.value()) / 86400.0 << "\n";
  }
  // Results from a trace are only meaningful with what the adapter invented next to them.
  std::cerr << mapping << lineup->described;
  // One decision log per run, written in the policies' order after all have ended: the file is
  // the same bytes however many run at once.
  std::vector<std::ostringstream> logs(policies.size());
  std::vector<sim::SimResult> runs;
  sim::ProgressLine progress(std::cerr, !a.quiet && isatty(2) != 0);
  auto results = sim::SimulateAllShowingProgress(
      *sc, policies, *threads, opt, progress, [&](size_t i, sim::SimOptions& run) {
        run.policy = lineup->configs[i];
        if (a.decisions.empty()) return;
        const std::string policy(policies[i]->name());
        run.decision_log = [&log = logs[i], policy](const sim::DecisionLogEntry& e) {
          nlohmann::json j = {{"policy", policy},     {"t", e.at.value()}, {"action", e.action},
                              {"job", e.job.value()}, {"node", e.node},    {"reason", e.reason}};
          if (e.estimated_start != kNever) j["estimated_start"] = e.estimated_start.value();
          log << j.dump() << "\n";
        };
      });
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i]) return fail(results[i].error());
    runs.push_back(std::move(*results[i]));
  }
  std::cout << sim::RenderTable(runs);
  if (!a.decisions.empty()) {
    std::ofstream out(a.decisions, std::ios::binary | std::ios::trunc);
    for (const std::ostringstream& log : logs) out << log.str();
    if (!out) return fail(Error{"--decisions", "cannot write '" + a.decisions + "'", {}, 0});
  }
  if (!a.json.empty()) {
    std::ofstream out(a.json, std::ios::binary | std::ios::trunc);
    out << sim::RenderJson(runs);
    if (!out) return fail(Error{"--json", "cannot write '" + a.json + "'", {}, 0});
  }
  return 0;
}

}  // namespace

void AddSimCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SimArgs>();
  CLI::App* sim = app.add_subcommand("sim", "simulate a workload under one or more policies");
  sim->add_option("--scenario", args->scenario, "Built-in scenario: lab-month");
  sim->add_option("--seed", args->seed,
                  "Seed of the built-in scenario, or of --philly's researcher assignment");
  sim->add_option("--policies", args->policies, "Comma-separated policy names")
      ->capture_default_str();
  sim->add_option("--variant", args->variants,
                  "Also run 'LABEL=POLICY --flag value ...': POLICY with these policy flags on "
                  "top of the others, reported as LABEL (repeatable)");
  sim->add_option("--json", args->json, "Write the JSON report to FILE");
  sim->add_option("--decisions", args->decisions,
                  "Write every decision with its reason to FILE (JSON lines)");
  sim->add_option("--cluster", args->cluster, "Cluster CSV (name,gpus,block)");
  sim->add_option("--budgets", args->budgets, "Budget tree TOML");
  sim->add_option("--workload", args->workload, "Workload CSV");
  sim->add_option("--events", args->events, "Timed events CSV");
  sim->add_option("--write-scenario", args->write_dir, "Also write the scenario as files to DIR");
  sim->add_option("--end-days", args->end_days, "Evaluate until this day (default: scenario's)");
  sim->add_option("--funded-scale", args->funded_scale,
                  "lab-month: scale the funded offered load (batch and training) by F, 1 as "
                  "documented");
  AddLoopFlags(sim, &args->loop);
  AddPolicyFlags(sim, &args->tuning);
  sim->add_option("--philly", args->philly,
                  "Microsoft Philly trace CSV (timestamp,duration,num_gpus,cluster); budgets, "
                  "classes and cluster size are derived and printed");
  sim->add_option("--trace", args->trace,
                  "Trace file (or the openb directory); the mapping is derived and printed");
  const TraceFlagOptions trace_opts = AddTraceFlags(sim, &args->trace_flags);
  sim->add_flag("--quiet", args->quiet, "No progress line");
  AddJobsFlag(sim, &args->jobs);
  AddResubmitFlag(sim, &args->resubmit_after);
  sim->add_flag("--explain", args->explain,
                "Also write to --decisions why each job waits and what is reserved, whenever "
                "that changes, not when only a count of free GPUs moves (asks the policy for "
                "reasons in every cycle: slower)");
  sim->add_option("--explain-jobs", args->explain_jobs,
                  "Like --explain, for these job ids only (comma-separated), and faster: a "
                  "month of lab-month explained for every job is about 100 MB")
      ->delimiter(',');
  AddCompareCommand(*sim, exit_code);
  sim->callback([args, trace_opts, &exit_code] {
    args->trace_tuned = trace_opts.LoadTuned();
    exit_code = RunSim(*args);
  });
}

}  // namespace hg::cmd
