#include "cmd/policy_flags.h"

#include <sstream>
#include <string>

namespace hg::cmd {

void AddPolicyFlags(CLI::App* app, PolicyFlags* flags) {
  app->add_option("--quick-headroom", flags->quick_headroom,
                  "Fraction of capacity kept free for debug jobs")
      ->capture_default_str();
  app->add_option("--quick-headroom-max", flags->quick_headroom_max,
                  "Fraction of capacity the debug headroom may grow to while debug jobs wait")
      ->capture_default_str();
  app->add_option("--quick-headroom-quiet", flags->quick_headroom_quiet,
                  "GPUs the debug headroom shrinks to while no debug job runs or waits (-1: it "
                  "never shrinks)")
      ->capture_default_str();
  app->add_option("--live-weight", flags->live_weight,
                  "Seconds of usage that holding one GPU now counts for in the fair-share key")
      ->capture_default_str();
  app->add_option("--window", flags->window,
                  "Seconds of usage the fair-share order looks back over (whole hours, at most "
                  "90 days)")
      ->capture_default_str();
  app->add_option("--large-job-gpus", flags->large_job_gpus,
                  "A budget's blocked job of at least this many GPUs holds back the budget's "
                  "later non-debug jobs (0: off)")
      ->capture_default_str();
  app->add_option("--reservation-preempts-gpus", flags->reservation_preempts_gpus,
                  "A reservation held by a job of at least this many GPUs preempts funded work "
                  "of budgets over their share once its protection ends (0: off)")
      ->capture_default_str();
  app->add_option("--whole-node-reservation-preempts", flags->whole_node_reservation_preempts,
                  "A reservation held by a job that asks for a whole node of the largest size "
                  "preempts funded work of budgets over their share once its protection ends "
                  "(true/false)")
      ->capture_default_str();
  app->add_option("--preempt-below", flags->preempt_below,
                  "A budget's jobs preempt funded work only while it has received less than this "
                  "fraction of what it was owed (1: any amount below)")
      ->capture_default_str();
  app->add_option("--quick-first", flags->quick_first,
                  "Debug jobs of every budget before other funded work; they may preempt work of "
                  "any budget over its share (true/false)")
      ->capture_default_str();
  app->add_option("--debug-stops-own", flags->quick_stops_own,
                  "A debug job may stop work of its own budget past that work's protection "
                  "(true/false)")
      ->capture_default_str();
  app->add_option("--wait-for-spare", flags->wait_for_spare,
                  "A preemptor waits for GPUs that leaving jobs free beyond their own "
                  "preemptors' needs before it stops funded work (true/false)")
      ->capture_default_str();
  app->add_option("--take-back-cooldown", flags->take_back_cooldown,
                  "Seconds during which a budget does not stop, for fair share, work of a budget "
                  "whose job took GPUs from it (0: off)")
      ->capture_default_str();
  app->add_option("--leases", flags->leases,
                  "Sessions with a lease stay protected while their user is active, beyond "
                  "min_runtime (true/false)")
      ->capture_default_str();
  app->add_option("--quick-protect", flags->quick_protect,
                  "Seconds of a debug job's run during which it is not stopped for fair share "
                  "(0: off; at most the min_runtime cap)")
      ->capture_default_str();
  app->add_option("--session-headroom", flags->session_headroom,
                  "Sessions (funded jobs with a lease) may start on the GPUs kept free for debug "
                  "jobs (true/false)")
      ->capture_default_str();
}

Result<PolicyConfig> PolicyConfigFrom(const PolicyFlags& flags) {
  if (flags.live_weight <= 0)
    return tl::unexpected(Error{"--live-weight", "must be positive", {}, 0});
  // The usage ledgers keep hourly buckets; 90 days of them per budget is 2,160 slots.
  if (flags.window < 3600 || flags.window % 3600 != 0 || flags.window > 90 * 86400)
    return tl::unexpected(
        Error{"--window",
              "must be a whole number of hours, from 3600 to 7776000 seconds (90 days)",
              {},
              0});
  if (!(flags.quick_headroom >= 0 && flags.quick_headroom <= 0.5))
    return tl::unexpected(Error{"--quick-headroom", "must be within [0, 0.5]", {}, 0});
  if (!(flags.quick_headroom_max >= flags.quick_headroom && flags.quick_headroom_max <= 1))
    return tl::unexpected(
        Error{"--quick-headroom-max", "must be within [--quick-headroom, 1]", {}, 0});
  if (flags.quick_headroom_quiet < -1)
    return tl::unexpected(
        Error{"--quick-headroom-quiet", "must be >= -1 (-1: the headroom never shrinks)", {}, 0});
  if (flags.large_job_gpus < 0)
    return tl::unexpected(Error{"--large-job-gpus", "must be >= 0 (0: off)", {}, 0});
  if (flags.reservation_preempts_gpus < 0)
    return tl::unexpected(Error{"--reservation-preempts-gpus", "must be >= 0 (0: off)", {}, 0});
  const int64_t cap = DeployedConfig().min_runtime_cap.value();
  if (flags.quick_protect < 0 || flags.quick_protect > cap)
    return tl::unexpected(Error{"--quick-protect",
                                "must be within [0, " + std::to_string(cap) +
                                    "] seconds (0: off; at most the min_runtime cap)",
                                {},
                                0});
  if (flags.take_back_cooldown < 0 || flags.take_back_cooldown > kMaxTakeBackCooldown.value())
    return tl::unexpected(Error{
        "--take-back-cooldown",
        "must be within [0, " + std::to_string(kMaxTakeBackCooldown.value()) + "] seconds (0: off)",
        {},
        0});
  if (!(flags.preempt_below > 0 && flags.preempt_below <= 1))
    return tl::unexpected(Error{"--preempt-below", "must be within (0, 1]", {}, 0});
  PolicyConfig config = DeployedConfig();
  config.quick_headroom = flags.quick_headroom;
  config.quick_headroom_max = flags.quick_headroom_max;
  config.quick_headroom_quiet = flags.quick_headroom_quiet;
  config.live_weight = Seconds(flags.live_weight);
  config.window = Seconds(flags.window);
  config.large_job_gpus = flags.large_job_gpus;
  config.reservation_preempts_gpus = flags.reservation_preempts_gpus;
  config.whole_node_reservation_preempts = flags.whole_node_reservation_preempts;
  config.preempt_below = flags.preempt_below;
  config.quick_first = flags.quick_first;
  config.quick_stops_own = flags.quick_stops_own;
  config.wait_for_spare = flags.wait_for_spare;
  config.take_back_cooldown = Seconds(flags.take_back_cooldown);
  config.leases = flags.leases;
  config.quick_protect = Seconds(flags.quick_protect);
  config.sessions_use_headroom = flags.session_headroom;
  return config;
}

std::string Describe(const PolicyConfig& c) {
  std::ostringstream o;
  o << "quick headroom " << c.quick_headroom << " (grows to " << c.quick_headroom_max
    << ", shrinks to "
    << (c.quick_headroom_quiet >= 0 ? std::to_string(c.quick_headroom_quiet) + " GPUs"
                                    : std::string("-"))
    << " while no debug job runs or waits), live weight " << c.live_weight.value() << " s, window "
    << c.window.value() << " s, large jobs "
    << (c.large_job_gpus > 0 ? std::to_string(c.large_job_gpus) + "+ GPUs" : std::string("off"))
    << ", reservations preempt over-share work for "
    << (c.reservation_preempts_gpus > 0
            ? std::to_string(c.reservation_preempts_gpus) + "+ GPU jobs" +
                  (c.whole_node_reservation_preempts ? " and whole-node jobs" : "")
            : (c.whole_node_reservation_preempts ? "whole-node jobs" : "no job"))
    << ", preempt below " << c.preempt_below << ", debug jobs first "
    << (c.quick_first ? "on" : "off") << ", debug jobs stop their own budget's work "
    << (c.quick_stops_own ? "on" : "off") << ", wait for spare GPUs "
    << (c.wait_for_spare ? "on" : "off") << ", leases " << (c.leases ? "on" : "off")
    << ", debug jobs spared from fair share for " << c.quick_protect.value() << " s"
    << ", sessions on the headroom " << (c.sessions_use_headroom ? "on" : "off")
    << ", take-back cool-down " << c.take_back_cooldown.value() << " s";
  return o.str();
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace hg::cmd
