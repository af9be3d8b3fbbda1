#include "cmd/trace_flags.h"

#include <cmath>

namespace hg::cmd {

bool TraceFlagOptions::LoadTuned() const {
  return oversubscription->count() + unfunded_fraction->count() + debug_max_minutes->count() > 0;
}

TraceFlagOptions AddTraceFlags(CLI::App* app, TraceFlags* flags) {
  TraceFlagOptions o;
  // Given or not is told by their values (TraceFlags::FormatGiven), not by their counts.
  app->add_option("--format", flags->format, "Trace format: " + std::string(sim::kTraceFormats))
      ->capture_default_str();
  app->add_option("--map", flags->map,
                  "csv/jsonl trace: FIELD=COLUMN,... e.g. submit=Submit,duration=Elapsed,"
                  "gpus=AllocTRES:gres/gpu,budget=Account");
  o.oversubscription =
      app->add_option("--oversubscription", flags->oversubscription,
                      "Trace: mean offered load / cluster GPUs (csv/jsonl: only without --cluster)")
          ->capture_default_str();
  o.unfunded_fraction = app->add_option("--unfunded-fraction", flags->unfunded_fraction,
                                        "Philly trace: share of non-debug jobs made unfunded")
                            ->capture_default_str();
  o.debug_max_minutes = app->add_option("--debug-max-minutes", flags->debug_max_minutes,
                                        "Philly trace: a 1-GPU job this short or shorter is debug")
                            ->capture_default_str();
  return o;
}

Result<void> CheckTraceFlags(const TraceFlags& flags) {
  if (!std::isfinite(flags.oversubscription) || flags.oversubscription <= 0)
    return Fail("--oversubscription", "must be a number > 0 (mean offered load / GPUs)");
  if (!(flags.unfunded_fraction >= 0 && flags.unfunded_fraction <= 1))
    return Fail("--unfunded-fraction", "must be within [0, 1]");
  if (flags.debug_max_minutes < 0) return Fail("--debug-max-minutes", "must be >= 0");
  return {};
}

Result<void> CheckEndDays(double end_days) {
  if (!std::isfinite(end_days) || end_days < 0) return Fail("--end-days", "must be a number >= 0");
  return {};
}

sim::TraceOptions TraceOptionsFrom(const TraceFlags& flags, const std::string& path,
                                   uint64_t seed) {
  sim::TraceOptions t;
  t.path = path;
  t.format = flags.format;
  t.map = flags.map;
  t.seed = seed;
  t.oversubscription = flags.oversubscription;
  t.debug_max_minutes = flags.debug_max_minutes;
  t.unfunded_fraction = flags.unfunded_fraction;
  return t;
}

sim::PhillyOptions PhillyOptionsFrom(const TraceFlags& flags, uint64_t seed) {
  sim::PhillyOptions p;
  p.oversubscription = flags.oversubscription;
  p.debug_max_minutes = flags.debug_max_minutes;
  p.unfunded_fraction = flags.unfunded_fraction;
  p.seed = seed;
  return p;
}

Error WithFlagNames(Error e) {
  if (e.field == "oversubscription") e.field = "--oversubscription";
  if (e.field == "unfunded_fraction") e.field = "--unfunded-fraction";
  if (e.field == "debug_max_minutes") e.field = "--debug-max-minutes";
  return e;
}

}  // namespace hg::cmd
