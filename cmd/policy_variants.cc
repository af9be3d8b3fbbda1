#include "cmd/policy_variants.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "cmd/flag_values.h"

namespace hg::cmd {
namespace {

// A policy under a variant's label: the simulator keys its report, the JSON and the decision log
// by name(), so the variant's runs are told apart from the policy's own.
class LabelledPolicy : public Policy {
 public:
  LabelledPolicy(std::string label, std::unique_ptr<Policy> inner)
      : label_(std::move(label)), inner_(std::move(inner)) {}
  std::string_view name() const override { return label_; }
  Decisions Cycle(const Snapshot& snap) const override { return inner_->Cycle(snap); }

 private:
  std::string label_;
  std::unique_ptr<Policy> inner_;
};

// Labels end up in table columns, JSON keys and file names of reports: short and plain.
bool PlainLabel(std::string_view s) {
  if (s.empty() || s.size() > 40) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '+';
  });
}

std::string Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

Result<PolicyVariant> ParseVariant(const std::string& text, const PolicyFlags& base) {
  const auto eq = text.find('=');
  if (eq == std::string::npos)
    return Fail("--variant", "'" + text + "' is not LABEL=POLICY [--flag value ...]");
  PolicyVariant v;
  v.label = Trim(std::string_view(text).substr(0, eq));
  if (!PlainLabel(v.label))
    return Fail("--variant", "label '" + v.label +
                                 "' must be 1-40 letters, digits or any of - _ . + (in '" + text +
                                 "')");
  std::istringstream words(text.substr(eq + 1));
  std::vector<std::string> args;
  for (std::string w; words >> w;) args.push_back(w);
  const std::string where = "--variant " + v.label;
  if (args.empty()) return Fail(where, "names no policy (LABEL=POLICY [--flag value ...])");
  v.policy = args.front();
  if (auto known = MakePolicy(v.policy, DeployedConfig()); !known)
    return Fail(where, known.error().reason);
  // The variant's flags are the policy flags the commands take, read by the same code, so a
  // value a variant accepts is one the server accepts for the rollout.
  PolicyFlags flags = base;
  CLI::App app("variant");
  app.allow_extras();
  AddPolicyFlags(&app, &flags);
  CheckFlagValues(app);
  std::vector<std::string> rest(args.rbegin(), args.rend() - 1);  // CLI11 reads it reversed
  try {
    app.parse(rest);
  } catch (const CLI::ParseError& e) {
    return Fail(where, ParseErrorReason(app, e));
  }
  if (!app.remaining().empty()) {
    std::string extra;
    for (const std::string& w : app.remaining()) extra += (extra.empty() ? "" : " ") + w;
    return Fail(where, "not a policy flag or its value: '" + extra +
                           "' (the flags of `hourglass sim --help` that tune the policy)");
  }
  auto config = PolicyConfigFrom(flags);
  if (!config) return Fail(where, config.error().field + ": " + config.error().reason);
  v.config = *config;
  return v;
}

Result<PolicyLineup> MakeLineup(const std::string& names, const std::vector<std::string>& variants,
                                const PolicyFlags& tuning, const PolicyConfig& config) {
  PolicyLineup out;
  std::set<std::string> taken;
  for (const std::string& name : SplitList(names)) {
    auto p = MakePolicy(name, config);
    if (!p) {
      Error e = p.error();
      e.field = "--policies";
      return tl::unexpected(e);
    }
    if (!taken.insert(name).second) return Fail("--policies", "names '" + name + "' twice");
    out.policies.push_back(std::move(*p));
    out.configs.push_back(config);
  }
  for (const std::string& text : variants) {
    auto v = ParseVariant(text, tuning);
    if (!v) return tl::unexpected(v.error());
    if (!taken.insert(v->label).second)
      return Fail("--variant " + v->label, "label is already the name of another run");
    auto p = MakePolicy(v->policy, v->config);
    if (!p) return tl::unexpected(p.error());
    out.policies.push_back(std::make_unique<LabelledPolicy>(v->label, std::move(*p)));
    out.configs.push_back(v->config);
    out.described += v->label + ": " + v->policy + " with " + Describe(v->config) + "\n";
  }
  if (out.policies.empty())
    return Fail("--policies", "name at least one policy (or give a --variant)");
  return out;
}

}  // namespace hg::cmd
