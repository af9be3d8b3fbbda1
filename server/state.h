// The server's domain, without HTTP: queue, running jobs, nodes, budgets and usage ledgers in
// memory, every change written to the Store before it is acted on or acknowledged. The policy is
// driven the way sim/engine.cc drives it, with the wall clock (seconds since the Unix epoch).
//
// Thread-safety: every public method takes the one mutex, except that Submit commits the job to
// the store outside it (so concurrent submissions can share a group commit).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tl/expected.hpp>
#include <vector>

#include "core/budget_tree.h"
#include "core/policy.h"
#include "core/usage_ledger.h"
#include "server/clock.h"
#include "server/requests.h"
#include "store/store.h"

namespace hg::server {

struct StateOptions {
  std::string policy = "hourglass";
  PolicyConfig config = DeployedConfig();
  int64_t heartbeat_s = 1;
  int64_t lost_after_s = 10;
  // The waiting timer (State::Tick): also a cycle on each multiple of this while a job waits,
  // whether or not anything changed. 0: none, cycles on changes and wake-ups only, the
  // simulator's default loop; the scheduling tick: `hourglass sim --cycle-while-waiting`; a
  // multiple T of it: `hourglass sim --timer T/1000`.
  int64_t timer_ms = 0;
  // While a job waits, the longest the loop goes without a cycle (0: no bound): a cycle on the
  // first tick this long after the last one if nothing brought one sooner (`hourglass sim
  // --max-gap`, in seconds).
  int64_t max_gap_ms = 300000;
  // Why each job waits (and when it may start) is worked out by a pass over the whole queue in a
  // cycle: on every cycle while at most `explain_queue_below` jobs wait, and once the queue is
  // longer, on the first cycle at least `explain_every_ms` after the last one that explained.
  // A count of cycles would not bound the lag: cycles run on changes, at most max_gap apart.
  size_t explain_queue_below = 2000;
  int64_t explain_every_ms = 30000;
  // How long an ended job stays in memory. Older ones leave it (checked hourly; at start they
  // are not loaded) and stay in the store, where GET /v1/jobs/{id}, its events and logs, the
  // history lists and a retried submission's key find them: a server that runs for years holds
  // what is active, not every job it ever ran.
  int64_t keep_ended_s = 7 * 86400;
  // Budgets imported on first start only (when the store has none).
  std::vector<BudgetSpec> initial_budgets;
};

class State {
 public:
  // Loads everything from the store (recovery). Fails on store errors or an unknown policy.
  static Result<std::unique_ptr<State>> Open(store::Store& store, Clock& clock,
                                             StateOptions options);
  ~State();

  const StateOptions& options() const { return opt_; }

  // --- principals -------------------------------------------------------------------------
  static constexpr size_t kTokenIdChars = 12;
  // The principal of a token (cached: principals are never deleted, and a revoked token leaves
  // the cache with its revocation), or nullopt.
  Result<std::optional<store::PrincipalRecord>> Authenticate(const std::string& token);
  // Creates the principal if missing and gives it a new token; returns the token.
  Reply<std::string> CreatePrincipal(const std::string& name, const std::string& role);
  Reply<std::string> NewTokenFor(const std::string& name);
  Reply<nlohmann::json> PrincipalsJson();
  // A principal's tokens, each named by an id (the first kTokenIdChars hex digits of its hash:
  // the token itself is never kept), and their revocation, audited. An admin may list and revoke
  // anyone's; a user or agent only their own (a token that leaked).
  // `current`: the token of the request, marked in the list so a user knows which one they use.
  Reply<nlohmann::json> TokensJson(const store::PrincipalRecord& who, const std::string& name,
                                   const std::string& current);
  Reply<nlohmann::json> RevokeToken(const store::PrincipalRecord& who, const std::string& name,
                                    const std::string& id);
  nlohmann::json WhoAmI(const store::PrincipalRecord& who);
  // First start: an "admin" principal with a fresh token, returned once; nullopt if it exists.
  Result<std::optional<std::string>> EnsureAdmin();

  // --- jobs ---------------------------------------------------------------------------------
  // `job` holds the request's fields (and the client's Idempotency-Key in submit_key); id,
  // user, state and times are set here. A key this user already submitted with returns that job
  // (replayed), whatever happened to it since; with another request it is refused (409).
  struct Submitted {
    int64_t id = 0;
    bool replayed = false;
    std::string state;  // the job's state now: "pending" unless replayed
  };
  Reply<Submitted> Submit(const store::PrincipalRecord& who, store::JobRecord job);
  Reply<nlohmann::json> JobJson(const store::PrincipalRecord& who, int64_t id);
  // {"jobs": [...], "total": N}: the jobs in `state` ("" pending and running), newest first or
  // with `oldest_first` oldest first, with ids below `before_id` (0: any), at most `limit` (0:
  // all); `total` counts every match. Ended jobs ("done", "all") are read from the store, which
  // keeps every one; memory keeps a week of them (StateOptions::keep_ended_s).
  Reply<nlohmann::json> JobsJson(const store::PrincipalRecord& who, const std::string& state,
                                 const std::string& user, int64_t limit, bool oldest_first = false,
                                 int64_t before_id = 0);
  Reply<nlohmann::json> JobEventsJson(const store::PrincipalRecord& who, int64_t id);
  Reply<nlohmann::json> Cancel(const store::PrincipalRecord& who, int64_t id);
  // The user of a running session (a job with a lease) is active now, by the injected clock:
  // stored before the reply, which is the job's view with the protected_until it buys.
  Reply<nlohmann::json> ReportActivity(const store::PrincipalRecord& who, int64_t id);
  // Where the logs of an attempt are: the agent's logs_url and node; attempt 0 = the latest.
  struct LogSource {
    std::string logs_url;
    std::string token;  // the agent's, for its log service
    int32_t attempt = 0;
    bool done = false;
  };
  Reply<LogSource> LogsOf(const store::PrincipalRecord& who, int64_t id, int32_t attempt);

  // --- budgets and usage ----------------------------------------------------------------------
  nlohmann::json BudgetsJson();
  Reply<nlohmann::json> CreateBudget(const store::PrincipalRecord& who, const std::string& name,
                                     const BudgetChange& change);
  Reply<nlohmann::json> PatchBudget(const store::PrincipalRecord& who, const std::string& name,
                                    const BudgetChange& change);
  Reply<nlohmann::json> DeleteBudget(const store::PrincipalRecord& who, const std::string& name);
  Reply<nlohmann::json> AuditJson(const std::string& budget);
  Reply<nlohmann::json> UsageJson(const std::string& budget);

  // --- nodes and agents ---------------------------------------------------------------------
  nlohmann::json NodesJson();
  Reply<nlohmann::json> Drain(const std::string& node, const std::string& reason,
                              std::optional<int64_t> deadline_at);
  Reply<nlohmann::json> Undrain(const std::string& node);
  Reply<nlohmann::json> Register(const Registration& r);
  // Returns the orders for the node.
  Reply<nlohmann::json> OnHeartbeat(const Heartbeat& hb);

  // --- the scheduling loop ------------------------------------------------------------------
  // One tick of the loop (server/scheduler.h calls it on every multiple of the interval): marks
  // the nodes whose heartbeats stopped as lost, then runs one policy cycle and applies its
  // decisions if something changed since the last cycle, a protection, lease, max_runtime or
  // drain deadline ended since, or the waiting timer is due: the loop `hourglass sim` runs by
  // default (sim/engine.cc). Returns whether a cycle ran. Store failures are returned (the
  // decisions not yet applied are dropped, and the next tick runs a cycle to decide again).
  Result<bool> Tick();
  std::string MetricsText();

 private:
  struct Impl;
  explicit State(std::unique_ptr<Impl> impl, StateOptions opt);
  std::unique_ptr<Impl> impl_;
  StateOptions opt_;
};

}  // namespace hg::server
