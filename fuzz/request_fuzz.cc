// The HTTP API's request bodies (server/requests.h). The bytes are parsed as JSON the way the
// server does (a parse error is a normal 400 there) and every request parser reads the value.
// A refusal is a 400 that names a field and a reason; a non-object is refused as "body". What
// is accepted is within the ranges of docs/api.md, has read every field (one more field is
// refused by its name), and a job reads back the same from the fields it was read into.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "server/json_check.h"
#include "server/requests.h"

namespace {

using hg::server::IsName;
using hg::server::Reply;
using nlohmann::json;

bool InRange(int64_t v, int64_t lo, int64_t hi) { return lo <= v && v <= hi; }

bool AllNames(const std::optional<std::vector<std::string>>& names) {
  if (!names) return true;
  for (const auto& n : names.value())
    if (!IsName(n)) return false;
  return true;
}

// True when the parser accepted `body`. Otherwise the refusal must be the user's mistake, named.
// Accepted, `body` must have been an object of known fields: with one field more it is refused
// by that field's name.
template <class T, class Parse>
bool Accepted(const Reply<T>& r, const json& body, Parse parse) {
  if (!r) {
    FUZZ_CHECK(r.error().status == 400);
    FUZZ_CHECK(!r.error().field.empty());
    FUZZ_CHECK(!r.error().reason.empty());
    if (!body.is_object()) FUZZ_CHECK(r.error().field == "body");
    return false;
  }
  FUZZ_CHECK(body.is_object());
  json more = body;
  more["\x01unknown"] = 0;
  const auto again = parse(more);
  FUZZ_CHECK(!again && again.error().field == "\x01unknown");
  return true;
}

void CheckJob(const json& body) {
  const auto j = hg::server::ParseJobRequest(body);
  if (!Accepted(j, body, hg::server::ParseJobRequest)) return;
  FUZZ_CHECK(InRange(j->gpus, 1, 1 << 20));
  FUZZ_CHECK(InRange(j->gpus_per_node, 0, 1 << 20));
  FUZZ_CHECK(InRange(j->min_runtime_s, 0, int64_t{1} << 40));
  FUZZ_CHECK(!j->max_runtime_s || InRange(*j->max_runtime_s, 1, int64_t{1} << 40));
  FUZZ_CHECK(InRange(j->lease_s, 0, int64_t{1} << 40));
  FUZZ_CHECK(InRange(j->grace_s, 0, int64_t{1} << 40));
  FUZZ_CHECK(InRange(j->priority, -1000000, 1000000));
  FUZZ_CHECK(IsName(j->name) && IsName(j->job_class));
  FUZZ_CHECK(j->budget.empty() || IsName(j->budget));
  FUZZ_CHECK(!j->command.empty() && j->command.size() <= hg::server::kMaxList);
  FUZZ_CHECK(j->env.size() <= hg::server::kMaxList);
  FUZZ_CHECK(j->cwd.size() <= hg::server::kMaxString);
  const json written = hg::server::JobRequestBody(*j);
  const auto back = hg::server::ParseJobRequest(written);
  FUZZ_CHECK(back.has_value() && hg::server::JobRequestBody(*back) == written);
}

void CheckBudgetChange(const hg::server::BudgetChange& ch, const json& body) {
  FUZZ_CHECK(!ch.share || (std::isfinite(*ch.share) && *ch.share > 0));
  FUZZ_CHECK(ch.set_limit == body.contains("limit"));
  FUZZ_CHECK(!ch.limit || InRange(*ch.limit, 0, 1 << 30));
  FUZZ_CHECK(AllNames(ch.leads) && AllNames(ch.members));
}

void CheckBudgets(const json& body) {
  if (const auto b = hg::server::ParseBudgetCreate(body);
      Accepted(b, body, hg::server::ParseBudgetCreate)) {
    FUZZ_CHECK(IsName(b->name) && b->change.share.has_value());
    FUZZ_CHECK(!b->change.parent || IsName(*b->change.parent));
    CheckBudgetChange(b->change, body);
  }
  if (const auto ch = hg::server::ParseBudgetPatch(body);
      Accepted(ch, body, hg::server::ParseBudgetPatch)) {
    FUZZ_CHECK(!ch->parent.has_value());
    CheckBudgetChange(*ch, body);
  }
}

void CheckAttempts(const std::vector<hg::server::AttemptRef>& running) {
  for (const auto& a : running) FUZZ_CHECK(a.job >= 1 && InRange(a.attempt, 1, 1 << 30));
}

void CheckAgents(const json& body) {
  if (const auto r = hg::server::ParseRegistration(body);
      Accepted(r, body, hg::server::ParseRegistration)) {
    FUZZ_CHECK(IsName(r->node) && InRange(r->gpus, 0, 1024) && r->token.empty());
    CheckAttempts(r->running);
  }
  if (const auto hb = hg::server::ParseHeartbeat(body);
      Accepted(hb, body, hg::server::ParseHeartbeat)) {
    FUZZ_CHECK(IsName(hb->node) && hb->token.empty());
    CheckAttempts(hb->running);
    for (const auto& [a, cpu] : hb->cpu_s) {
      FUZZ_CHECK(std::isfinite(cpu) && cpu >= 0);
      FUZZ_CHECK(std::find(hb->running.begin(), hb->running.end(), a) != hb->running.end());
    }
    for (const auto& x : hb->exited) {
      FUZZ_CHECK(x.job >= 1 && InRange(x.attempt, 1, 1 << 30));
      FUZZ_CHECK(!x.exit_code || InRange(*x.exit_code, -1000, 1000));
      FUZZ_CHECK(!x.signal || InRange(*x.signal, 0, 1000));
    }
  }
}

void CheckOthers(const json& body) {
  if (const auto p = hg::server::ParsePrincipalRequest(body);
      Accepted(p, body, hg::server::ParsePrincipalRequest))
    FUZZ_CHECK(IsName(p->name) && p->role.size() <= hg::server::kMaxString);
  if (const auto d = hg::server::ParseDrainRequest(body);
      Accepted(d, body, hg::server::ParseDrainRequest))
    FUZZ_CHECK(!d->deadline_at || InRange(*d->deadline_at, 0, int64_t{1} << 40));
  const auto empty = hg::server::ParseEmptyBody(body);
  FUZZ_CHECK(empty.has_value() == (body.is_object() && body.empty()));
  Accepted(empty, body, hg::server::ParseEmptyBody);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  json body;
  try {
    body = json::parse(data, data + size);
  } catch (const json::exception&) {
    return 0;  // the server's 400 "invalid JSON"
  }
  // The server hands only objects to the parsers; the others must still be refused, not crash.
  CheckJob(body);
  CheckBudgets(body);
  CheckAgents(body);
  CheckOthers(body);
  return 0;
}
