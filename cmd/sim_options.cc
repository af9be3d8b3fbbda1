#include "cmd/sim_options.h"

#include "cmd/resubmit_flag.h"

namespace hg::cmd {

Result<sim::SimOptions> SimOptionsFrom(const PolicyFlags& tuning, int64_t resubmit_after,
                                       const LoopFlags& loop) {
  sim::SimOptions opt;
  auto config = PolicyConfigFrom(tuning);
  if (!config) return tl::unexpected(config.error());
  opt.policy = *config;
  const auto resubmit = ResubmitAfter(resubmit_after);
  if (!resubmit) return tl::unexpected(resubmit.error());
  opt.resubmit_after = *resubmit;
  if (auto ok = ApplyLoopFlags(loop, &opt); !ok) return tl::unexpected(ok.error());
  return opt;
}

}  // namespace hg::cmd
