#include "cmd/cli_commands.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "cli/admin.h"
#include "cli/budgets.h"
#include "cli/client.h"
#include "cli/config.h"
#include "cli/jobs.h"
#include "server/clock.h"

namespace hg::cmd {
namespace {

using cli::CliResult;

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (const char* key :
       {"HOURGLASS_URL", "HOURGLASS_TOKEN", "HOURGLASS_CA_FILE", "HOURGLASS_CONFIG", "HOME"}) {
    if (const char* v = std::getenv(key)) env[key] = v;
  }
  return env;
}

// Resolves the configuration, runs `body` with a client, prints a failure as
// "hourglass <name>: <field>: <reason>" and sets the exit code.
void Run(const std::string& name, int& exit_code,
         const std::function<CliResult<void>(cli::Client&)>& body) {
  auto config = cli::ResolveConfig(Environment());
  if (!config) {
    std::cerr << cli::RenderError(name, cli::UsageError(config.error())) << "\n";
    exit_code = cli::kExitUsage;
    return;
  }
  cli::Client client(*config);
  auto result = body(client);
  std::cout.flush();
  if (!result) {
    std::cerr << cli::RenderError(name, result.error()) << "\n";
    exit_code = result.error().exit_code;
    return;
  }
  exit_code = 0;
}

CLI::App* Command(CLI::App& parent, const std::string& name, const std::string& help, bool& json) {
  CLI::App* sub = parent.add_subcommand(name, help);
  sub->add_flag("--json", json, "print the server's JSON as is (for scripts)");
  return sub;
}

int64_t NowSeconds() {
  const server::SystemClock clock;
  return clock.NowMs() / 1000;
}

void AddJobCommands(CLI::App& app, int& exit_code) {
  {
    auto a = std::make_shared<cli::SubmitArgs>();
    auto json = std::make_shared<bool>(false);
    auto* sub =
        Command(app, "submit", "submit a job: hourglass submit [options] -- command ...", *json);
    sub->add_option("--name", a->name, "job name");
    sub->add_option("--idempotency-key", a->idempotency_key,
                    "name this submission: sent again with the same key, it finds the job the "
                    "first attempt made instead of making another (default: a random key)");
    sub->add_option("--budget", a->budget, "budget to charge (default: unfunded)");
    sub->add_option("--gpus", a->gpus, "GPUs in all")->capture_default_str();
    sub->add_option("--gpus-per-node", a->gpus_per_node, "GPUs on each node (gangs)");
    sub->add_option("--min-runtime", a->min_runtime, "protected run time (90s, 30m, 2h, 1d)");
    sub->add_option("--max-runtime", a->max_runtime, "stop after this long");
    sub->add_option("--lease", a->lease,
                    "a session's lease: protected while `hourglass touch` reports it in use "
                    "within this long, until --max-runtime (e.g. 30m)");
    sub->add_flag("--resumable", a->resumable, "may be requeued and restarted after preemption");
    sub->add_option("--class", a->job_class, "job class, e.g. batch or debug");
    sub->add_option("--grace", a->grace, "time between SIGTERM and SIGKILL");
    sub->add_option("--priority", a->priority, "priority within the budget");
    sub->add_option("--env", a->env, "K=V in the job's environment (repeatable)");
    sub->add_option("--cwd", a->cwd, "working directory (default: the current one)");
    sub->add_option("command", a->command, "the command, after --");
    sub->callback([a, json, &exit_code] {
      if (a->cwd.empty()) a->cwd = std::filesystem::current_path().string();
      Run("submit", exit_code,
          [&](cli::Client& c) { return cli::RunSubmit(c, *a, *json, std::cout); });
    });
  }
  {
    auto a = std::make_shared<cli::JobsArgs>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(app, "jobs", "list jobs, newest first", *json);
    sub->add_flag("--all", a->all, "every state, finished jobs too");
    sub->add_option("--state", a->state, "pending, running, done or all");
    sub->add_option("--user", a->user, "only this user's jobs");
    sub->add_option("--limit", a->limit, "at most this many");
    sub->add_option("--before", a->before,
                    "only jobs with smaller ids (the next page: the last id shown)");
    sub->callback([a, json, &exit_code] {
      Run("jobs", exit_code, [&](cli::Client& c) { return cli::RunJobs(c, *a, *json, std::cout); });
    });
  }
  {
    auto id = std::make_shared<int64_t>(0);
    auto json = std::make_shared<bool>(false);
    auto* sub =
        Command(app, "show", "a job: state, reason, estimated start, attempts, events", *json);
    sub->add_option("id", *id, "job id")->required();
    sub->callback([id, json, &exit_code] {
      Run("show", exit_code,
          [&](cli::Client& c) { return cli::RunShow(c, *id, *json, std::cout); });
    });
  }
  {
    auto id = std::make_shared<int64_t>(0);
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(app, "cancel", "cancel a job (a running one gets its grace period)", *json);
    sub->add_option("id", *id, "job id")->required();
    sub->callback([id, json, &exit_code] {
      Run("cancel", exit_code,
          [&](cli::Client& c) { return cli::RunCancel(c, *id, *json, std::cout); });
    });
  }
  {
    auto id = std::make_shared<int64_t>(0);
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(app, "touch",
                        "report a session (a job with --lease) in use: it stays protected for "
                        "another lease",
                        *json);
    sub->add_option("id", *id, "job id")->required();
    sub->callback([id, json, &exit_code] {
      Run("touch", exit_code,
          [&](cli::Client& c) { return cli::RunTouch(c, *id, *json, std::cout); });
    });
  }
  {
    auto a = std::make_shared<cli::LogsArgs>();
    auto* sub = app.add_subcommand("logs", "a job's output");
    sub->add_option("id", a->id, "job id")->required();
    sub->add_flag("-f,--follow", a->follow, "keep printing until the attempt ends");
    sub->add_flag("--stderr", a->stderr_stream, "stderr instead of stdout");
    sub->add_option("--attempt", a->attempt, "attempt number (default: the last)");
    sub->callback([a, &exit_code] {
      Run("logs", exit_code, [&](cli::Client& c) {
        server::SystemClock clock;
        std::mutex mu;
        std::condition_variable cv;
        auto pause = [&] {
          std::unique_lock<std::mutex> lock(mu);
          clock.WaitUntil(lock, cv, clock.NowMs() + 500);
        };
        return cli::RunLogs(c, *a, std::cout, pause);
      });
    });
  }
}

void AddBudgetCommands(CLI::App& app, int& exit_code) {
  {
    auto json = std::make_shared<bool>(false);
    auto* sub =
        Command(app, "budgets",
                "the budget tree: share, entitled GPUs, 7-day usage, owed vs delivered", *json);
    sub->callback([json, &exit_code] {
      Run("budgets", exit_code,
          [&](cli::Client& c) { return cli::RunBudgets(c, *json, std::cout); });
    });
  }
  auto* budget = app.add_subcommand(
      "budget", "change, add or delete a budget, or read its history of changes");
  budget->require_subcommand(1);
  {
    auto a = std::make_shared<cli::BudgetSetArgs>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(*budget, "set", "change a budget's share, limit, leads or members", *json);
    sub->add_option("name", a->name, "budget name")->required();
    sub->add_option("--share", a->share, "relative share among its siblings");
    sub->add_option("--limit", a->limit, "GPU cap, or none");
    sub->add_option("--lead", a->lead, "+user adds a lead, -user removes one (repeatable)")
        ->allow_extra_args(false);
    sub->add_option("--member", a->member, "+user adds a member, -user removes one (repeatable)")
        ->allow_extra_args(false);
    sub->callback([a, json, &exit_code] {
      Run("budget set", exit_code,
          [&](cli::Client& c) { return cli::RunBudgetSet(c, *a, *json, std::cout); });
    });
  }
  {
    auto a = std::make_shared<cli::BudgetAddArgs>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(*budget, "add", "add a budget under a parent", *json);
    sub->add_option("name", a->name, "budget name")->required();
    sub->add_option("--parent", a->parent, "parent budget (default: top level, admins only)");
    sub->add_option("--share", a->share, "relative share among its siblings")
        ->capture_default_str();
    sub->add_option("--limit", a->limit, "GPU cap, or none");
    sub->add_option("--lead", a->leads, "a lead (repeatable)")->allow_extra_args(false);
    sub->add_option("--member", a->members, "a member (repeatable)")->allow_extra_args(false);
    sub->callback([a, json, &exit_code] {
      Run("budget add", exit_code,
          [&](cli::Client& c) { return cli::RunBudgetAdd(c, *a, *json, std::cout); });
    });
  }
  {
    auto name = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    auto* sub =
        Command(*budget, "delete",
                "delete a budget that has no children and no pending or running jobs", *json);
    sub->add_option("name", *name, "budget name")->required();
    sub->callback([name, json, &exit_code] {
      Run("budget delete", exit_code,
          [&](cli::Client& c) { return cli::RunBudgetDelete(c, *name, *json, std::cout); });
    });
  }
  {
    auto b = std::make_shared<std::optional<std::string>>();
    auto json = std::make_shared<bool>(false);
    auto* sub =
        Command(*budget, "history",
                "every change to the budgets: when, who, the field, old and new value", *json);
    sub->add_option("name", *b, "only this budget's changes");
    sub->callback([b, json, &exit_code] {
      Run("budget history", exit_code,
          [&](cli::Client& c) { return cli::RunAudit(c, *b, *json, std::cout); });
    });
  }
  {
    auto b = std::make_shared<std::optional<std::string>>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(app, "usage", "owed and delivered GPU-hours, per day, last 7 days", *json);
    sub->add_option("--budget", *b, "only this budget's subtree");
    sub->callback([b, json, &exit_code] {
      Run("usage", exit_code,
          [&](cli::Client& c) { return cli::RunUsage(c, *b, *json, std::cout); });
    });
  }
}

void AddAdminCommands(CLI::App& app, int& exit_code) {
  {
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(app, "nodes", "nodes, their state and jobs", *json);
    sub->callback([json, &exit_code] {
      Run("nodes", exit_code, [&](cli::Client& c) { return cli::RunNodes(c, *json, std::cout); });
    });
  }
  {
    auto a = std::make_shared<cli::DrainArgs>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(app, "drain", "drain a node under the contract (admin)", *json);
    sub->add_option("node", a->node, "node name")->required();
    sub->add_option("--deadline", a->deadline, "stop protected jobs after this long (e.g. 2h)");
    sub->add_option("--reason", a->reason, "why (shown to users)");
    sub->callback([a, json, &exit_code] {
      Run("drain", exit_code,
          [&](cli::Client& c) { return cli::RunDrain(c, *a, NowSeconds(), *json, std::cout); });
    });
  }
  {
    auto node = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(app, "undrain", "return a node to service (admin)", *json);
    sub->add_option("node", *node, "node name")->required();
    sub->callback([node, json, &exit_code] {
      Run("undrain", exit_code,
          [&](cli::Client& c) { return cli::RunUndrain(c, *node, *json, std::cout); });
    });
  }
  {
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(app, "whoami", "who the token belongs to, their budgets and leads", *json);
    sub->callback([json, &exit_code] {
      Run("whoami", exit_code, [&](cli::Client& c) { return cli::RunWhoami(c, *json, std::cout); });
    });
  }
  auto* principal = app.add_subcommand("principal", "users, admins and agents (admin)");
  principal->require_subcommand(1);
  {
    auto a = std::make_shared<cli::PrincipalAddArgs>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(*principal, "add", "add a principal and print its token once", *json);
    sub->add_option("name", a->name, "principal name")->required();
    sub->add_option("--role", a->role, "user, admin or agent")->capture_default_str();
    sub->callback([a, json, &exit_code] {
      Run("principal add", exit_code,
          [&](cli::Client& c) { return cli::RunPrincipalAdd(c, *a, *json, std::cout); });
    });
  }
  auto* token = app.add_subcommand("token", "bearer tokens: new (admin), list, revoke");
  token->require_subcommand(1);
  {
    auto name = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    auto* sub =
        Command(*token, "new", "give a principal another token, printed once (admin)", *json);
    sub->add_option("name", *name, "principal name")->required();
    sub->callback([name, json, &exit_code] {
      Run("token new", exit_code,
          [&](cli::Client& c) { return cli::RunTokenNew(c, *name, *json, std::cout); });
    });
  }
  {
    auto name = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(*token, "list", "a principal's tokens by id (default: yours)", *json);
    sub->add_option("name", *name, "principal name (an admin may name anyone)");
    sub->callback([name, json, &exit_code] {
      Run("token list", exit_code,
          [&](cli::Client& c) { return cli::RunTokenList(c, *name, *json, std::cout); });
    });
  }
  {
    auto name = std::make_shared<std::string>();
    auto id = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    auto* sub = Command(*token, "revoke",
                        "revoke a token at once and for good (yours, or anyone's as admin)", *json);
    sub->add_option("name", *name, "principal name")->required();
    sub->add_option("id", *id, "the token's id, as `hourglass token list` shows it")->required();
    sub->callback([name, id, json, &exit_code] {
      Run("token revoke", exit_code,
          [&](cli::Client& c) { return cli::RunTokenRevoke(c, *name, *id, *json, std::cout); });
    });
  }
}

}  // namespace

void AddCliCommands(CLI::App& app, int& exit_code) {
  AddJobCommands(app, exit_code);
  AddBudgetCommands(app, exit_code);
  AddAdminCommands(app, exit_code);
}

}  // namespace hg::cmd
