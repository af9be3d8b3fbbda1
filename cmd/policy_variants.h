// The policies one `hourglass sim` or `hourglass sim compare` run measures side by side: those
// named by --policies, all with the command's tuning flags, and the settings named by --variant,
// each a policy under its own label with flags of its own. A lead weighing a setting before
// rolling it out sees it beside the setting deployed today, in one table and one report.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cmd/policy_flags.h"
#include "core/error.h"
#include "core/policy.h"

namespace hg::cmd {

// `--variant 'LABEL=POLICY --flag value ...'`: POLICY (a name --policies knows) configured by the
// command's tuning flags, then the variant's own, reported as LABEL.
struct PolicyVariant {
  std::string label;
  std::string policy;
  PolicyConfig config;
};

// The variant `text` describes, starting from `base` (the command's tuning flags). An error names
// --variant, the label when it was read, and what is wrong: the label's form, an unknown policy,
// a flag that is not a policy flag, or a value out of its range.
Result<PolicyVariant> ParseVariant(const std::string& text, const PolicyFlags& base);

// What a run measures: the policies in report order, and the configuration each runs with.
struct PolicyLineup {
  std::vector<std::unique_ptr<Policy>> policies;
  std::vector<PolicyConfig> configs;
  // One line per variant, "LABEL: POLICY with <every knob>", for the printed mapping.
  std::string described;
};

// --policies' names with `config`, then each --variant; labels and names must all differ.
Result<PolicyLineup> MakeLineup(const std::string& names, const std::vector<std::string>& variants,
                                const PolicyFlags& tuning, const PolicyConfig& config);

}  // namespace hg::cmd
