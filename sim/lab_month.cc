// lab-month: the design's reference workload, a contended month of an AI lab.
//
// Calendar. 30 days from a Monday 00:00 (day 0); days 5-6, 12-13, 19-20 and 26-27 are weekends.
// Human arrivals follow kWorkdayHours (peaks 9-12 and 13-17 h), weekends carry a fraction of a
// weekday's volume.
//
// Cluster. 128 nodes "n000".."n127" of 8 GPUs = 1,024 GPUs, in 8 blocks "b0".."b7" of 16 nodes.
// Capacity over the month: 1,024 GPUs x 30 days = 737,280 GPU-hours.
//
// Budget tree (fixed; only the workload and events depend on the seed).
//   programs   language 5, multimodal 3, science 2 (each with a program lead)
//   projects   12: language {pretrain 4, posttrain 3, evals 1 (limit 64 GPUs), safety 2, data 1.5},
//              multimodal {vision 3, video 2, speech 1 (limit 96 GPUs), robotics 2},
//              science {climate 2, bio 2, materials 1}; the first researcher leads the project
//   researchers 60 leaves "<project>.<person>", 3-8 per project, share 1 each.
// Every researcher has an activity factor (log-normal, sigma 0.5, normalised to mean 1, clamped
// to 0.3-2.5) that scales their debug, batch and interactive rates.
//
// Classes (rates per researcher are for an activity factor of 1):
//   debug        1 GPU (70%) or 2; 2-30 min (log-normal, median 8 min); min_runtime 0-5 min;
//                max_runtime 1 h; grace 30 s; not resumable; tier 2; researcher's leaf.
//                6 per working day (x0.25 on weekends): about 8,000 jobs, <1% of capacity.
//   batch        85% single node (1, 2, 4, 8 GPUs), 15% multi-node (16, 24, 32 GPUs, 8 per node);
//                1-12 h (median 3.5 h); min_runtime 30 min-2 h; 50% resumable with a checkpoint
//                every 30-60 min; tier 2 (60%) or 1; 3% carry a user priority 1-5; charged to the
//                researcher (85%) or the project. Submitted in groups of 1-3 similar jobs,
//                4 groups per working day (x0.3 on weekends): about 11,500 jobs, ~45% of capacity.
//   training     64-512 GPUs (8 per node), 1-5 days (median 2.5 d); min_runtime 4-8 h; resumable,
//                checkpoint every hour; grace 300 s; tier 2; charged to a project without a limit.
//                Each program offers kTrainingFraction (0.55) of capacity times its program share
//                (+-15%), so 25-40 jobs in all (about a dozen for language, a handful for
//                science), ~55% of capacity. Each program's first run is queued in the first hour.
//   interactive  1, 2 or 4 GPUs; sessions of 1-10 h (median 3 h); min_runtime = min(duration,
//                8 h); max_runtime 12 h; a lease of 30 min; a quarter parked (their user leaves
//                after 30-70% of the session, which stays open); not resumable; tier 1;
//                researcher's leaf.
//                0.8 per working day (x0.15 on weekends): about 1,100 sessions, ~1% of capacity.
//   sweep        unfunded (no budget): campaigns of 10-600 jobs (median 90) submitted within
//                1-30 min, all with one GPU count (1, 2, 4, 8) and durations around a campaign
//                median (1.5-4 h; jobs 30 min-6 h); resumable, checkpoint every 15-30 min,
//                min_runtime 0, grace 60 s, tier 0. Campaigns are drawn until they offer
//                kSweepFraction (1.45) of capacity; four of them are queued in the first half hour
//                so the month starts with a backlog. About 70,000 jobs.
// Offered demand (sum of gpus x duration), seeds 1-30: funded 0.96-1.08x capacity, unfunded
// 1.45x, total 2.41-2.53x; 88,000-95,000 jobs (the calibration test in lab_month_test.cc prints
// seeds 1-3). Job ids are 1..N in submission order.
//
// Events.
//   node failures    1% of nodes a day (a Poisson process, 1.28 a day), each on a random node
//                    that is neither failed nor drained at the time: 80% kHealthFail repaired
//                    after 2-12 h, 20% kNodeLost repaired after 4-24 h (repairs after the end of
//                    the month are left out).
//   operator drains  1-2 nodes drained on a weekday with a 4 h deadline, undrained 12-36 h later.
//   share changes    2-3 leads change the share of a program or project (x0.5, x1.5 or x2)
//                    between days 5 and 25.
#include "sim/lab_month.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "sim/rng.h"

namespace hg::sim {
namespace {

constexpr int64_t kMinute = 60;
constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;
constexpr int kDays = 30;
constexpr int kNodes = 128;
constexpr int kGpusPerNode = 8;
constexpr int kNodesPerBlock = 16;
constexpr double kCapacityGpuSeconds =
    static_cast<double>(kNodes) * kGpusPerNode * static_cast<double>(kDays * kDay);

// Calibration (see the header comment).
constexpr double kDebugPerDay = 6.0;
constexpr double kDebugWeekend = 0.25;
constexpr double kBatchGroupsPerDay = 4.0;
constexpr double kBatchWeekend = 0.3;
constexpr double kInteractivePerDay = 0.8;
constexpr double kInteractiveWeekend = 0.15;
constexpr int64_t kSessionLease = 30 * 60;
constexpr double kParkedSessions = 0.25;
constexpr double kTrainingFraction = 0.55;
constexpr double kSweepFraction = 1.45;
constexpr int kBacklogCampaigns = 4;
constexpr double kFailuresPerNodeDay = 0.01;

struct ProgramDef {
  const char* name;
  double share;
  const char* lead;
};
struct ProjectDef {
  const char* name;
  size_t program;
  double share;
  int people;
  std::optional<int32_t> limit;
};

constexpr std::array<ProgramDef, 3> kPrograms = {{
    {"language", 5, "maria"},
    {"multimodal", 3, "kenji"},
    {"science", 2, "fatima"},
}};

const std::array<ProjectDef, 12> kProjects = {{
    {"pretrain", 0, 4, 8, std::nullopt},
    {"posttrain", 0, 3, 7, std::nullopt},
    {"evals", 0, 1, 4, 64},
    {"safety", 0, 2, 5, std::nullopt},
    {"data", 0, 1.5, 4, std::nullopt},
    {"vision", 1, 3, 7, std::nullopt},
    {"video", 1, 2, 5, std::nullopt},
    {"speech", 1, 1, 3, 96},
    {"robotics", 1, 2, 4, std::nullopt},
    {"climate", 2, 2, 5, std::nullopt},
    {"bio", 2, 2, 5, std::nullopt},
    {"materials", 2, 1, 3, std::nullopt},
}};

constexpr std::array<const char*, 60> kPeople = {
    "alice", "bruno",  "chen",   "dana",   "elif",  "farid", "greta", "hiro",  "ines",   "jonas",
    "kavya", "liam",   "mei",    "nadia",  "omar",  "priya", "quinn", "rosa",  "sven",   "tariq",
    "uma",   "victor", "wen",    "xavier", "yara",  "zoe",   "aaron", "bea",   "carlos", "dmitri",
    "emma",  "felix",  "gita",   "hana",   "ivan",  "jia",   "kofi",  "lena",  "marco",  "nia",
    "oscar", "paula",  "raj",    "sara",   "tomas", "ulla",  "vera",  "will",  "ximena", "yusuf",
    "zara",  "amir",   "bianca", "cyrus",  "diego", "eva",   "finn",  "grace", "hugo",   "isla",
};

// Relative arrival intensity per hour of a working day (local time).
constexpr std::array<double, 24> kWorkdayHours = {
    0.2, 0.1, 0.1, 0.1, 0.1, 0.2, 0.4, 0.8, 1.5, 2.5, 3.0, 3.0,
    2.2, 2.8, 3.0, 3.0, 2.8, 2.3, 1.6, 1.1, 0.8, 0.6, 0.5, 0.3,
};
// Sweeps are launched around the clock, more often in the afternoon and before people leave.
constexpr std::array<double, 24> kSweepHours = {
    0.6, 0.5, 0.4, 0.4, 0.4, 0.4, 0.5, 0.6, 0.8, 1.0, 1.2, 1.2,
    1.1, 1.3, 1.4, 1.5, 1.6, 1.8, 2.0, 1.8, 1.4, 1.1, 0.9, 0.7,
};

// Streams of the root generator, one per part, so the parts do not shift each other.
enum Stream : uint64_t {
  kStreamPeople = 1,
  kStreamDebug,
  kStreamBatch,
  kStreamInteractive,
  kStreamTraining,
  kStreamSweep,
  kStreamDrains,
  kStreamFailures,
  kStreamShares,
  kStreamSessions,
};

bool IsWeekend(int64_t day) { return day % 7 >= 5; }

int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

// Seconds from a real number of seconds, clamped to [lo, hi].
Seconds Secs(double s, int64_t lo, int64_t hi) { return Seconds(Clamp(std::llround(s), lo, hi)); }

// A time of day `day` drawn from an hourly profile.
Seconds TimeInDay(Rng& rng, int64_t day, const std::array<double, 24>& hours) {
  const auto hour = static_cast<int64_t>(rng.Choice(hours));
  return Seconds(day * kDay + hour * kHour + rng.UniformInt(0, kHour - 1));
}

// A time in days [first, last) drawn from an hourly profile, weekend days weighted `weekend`.
Seconds TimeInMonth(Rng& rng, int64_t first, int64_t last, const std::array<double, 24>& hours,
                    double weekend) {
  std::vector<double> days;
  for (int64_t d = first; d < last; ++d) days.push_back(IsWeekend(d) ? weekend : 1.0);
  const int64_t day = first + static_cast<int64_t>(rng.Choice(days));
  return TimeInDay(rng, day, hours);
}

template <class T, size_t N>
T Pick(Rng& rng, const std::array<T, N>& values, const std::array<double, N>& weights) {
  return values[rng.Choice(weights)];
}

struct Researcher {
  std::string leaf;  // "<project>.<person>"
  size_t project = 0;
  double activity = 1.0;
};

SimJob NewJob(Seconds submit, const char* job_class) {
  SimJob j;
  j.spec.submit = submit;
  j.spec.job_class = job_class;
  return j;
}

std::vector<BudgetSpec> MakeBudgets() {
  std::vector<BudgetSpec> out;
  for (const ProgramDef& p : kPrograms) {
    out.push_back(BudgetSpec{p.name, "", p.share, std::nullopt, {p.lead}, 0});
  }
  size_t person = 0;
  for (const ProjectDef& pr : kProjects) {
    out.push_back(
        BudgetSpec{pr.name, kPrograms[pr.program].name, pr.share, pr.limit, {kPeople[person]}, 0});
    for (int i = 0; i < pr.people; ++i, ++person) {
      out.push_back(BudgetSpec{
          std::string(pr.name) + "." + kPeople[person], pr.name, 1.0, std::nullopt, {}, 0});
    }
  }
  assert(person == kPeople.size());
  return out;
}

std::vector<Researcher> MakeResearchers(Rng rng) {
  std::vector<Researcher> out;
  size_t person = 0;
  for (size_t p = 0; p < kProjects.size(); ++p) {
    for (int i = 0; i < kProjects[p].people; ++i, ++person) {
      out.push_back(Researcher{std::string(kProjects[p].name) + "." + kPeople[person], p,
                               rng.LogNormal(1.0, 0.5)});
    }
  }
  // Normalise to mean 1 so the calibration does not swing with the draw, then clamp outliers.
  double sum = 0;
  for (const Researcher& r : out) sum += r.activity;
  for (Researcher& r : out) {
    r.activity = std::clamp(r.activity * static_cast<double>(out.size()) / sum, 0.3, 2.5);
  }
  return out;
}

void AddDebug(Rng rng, const std::vector<Researcher>& people, std::vector<SimJob>& jobs) {
  for (const Researcher& r : people) {
    for (int64_t d = 0; d < kDays; ++d) {
      const int n = rng.Poisson(kDebugPerDay * r.activity * (IsWeekend(d) ? kDebugWeekend : 1.0));
      for (int i = 0; i < n; ++i) {
        SimJob j = NewJob(TimeInDay(rng, d, kWorkdayHours), "debug");
        j.spec.gpus = Gpus(rng.Bernoulli(0.7) ? 1 : 2);
        j.duration = Secs(rng.LogNormal(8.0 * kMinute, 0.7), 2 * kMinute, 30 * kMinute);
        j.spec.min_runtime = Seconds(rng.UniformInt(0, 10) * 30);
        j.spec.max_runtime = Seconds(kHour);
        j.spec.grace = Seconds(30);
        j.spec.tier = 2;
        j.budget = r.leaf;
        jobs.push_back(std::move(j));
      }
    }
  }
}

void AddBatch(Rng rng, const std::vector<Researcher>& people, double scale,
              std::vector<SimJob>& jobs) {
  for (const Researcher& r : people) {
    for (int64_t d = 0; d < kDays; ++d) {
      const double mean =
          scale * kBatchGroupsPerDay * r.activity * (IsWeekend(d) ? kBatchWeekend : 1.0);
      const int groups = rng.Poisson(mean);
      for (int g = 0; g < groups; ++g) {
        // A group is one submission script: same shape, similar lengths, seconds apart.
        const Seconds at = TimeInDay(rng, d, kWorkdayHours);
        const bool multi = rng.Bernoulli(0.15);
        const int32_t gpus = multi ? Pick<int32_t, 3>(rng, {16, 24, 32}, {60, 15, 25})
                                   : Pick<int32_t, 4>(rng, {1, 2, 4, 8}, {20, 20, 30, 30});
        const double median = rng.LogNormal(3.5 * kHour, 0.6);
        const bool resumable = rng.Bernoulli(0.5);
        const std::string budget =
            rng.Bernoulli(0.15) ? std::string(kProjects[r.project].name) : r.leaf;
        const int tier = rng.Bernoulli(0.6) ? 2 : 1;
        const int priority = rng.Bernoulli(0.03) ? static_cast<int>(rng.UniformInt(1, 5)) : 0;
        const auto size = rng.UniformInt(1, 3);
        for (int64_t i = 0; i < size; ++i) {
          SimJob j = NewJob(
              Seconds(std::min(at.value() + i * rng.UniformInt(1, 20), int64_t{kDays} * kDay - 1)),
              "batch");
          j.spec.gpus = Gpus(gpus);
          j.spec.gpus_per_node = Gpus(multi ? kGpusPerNode : 0);
          j.duration = Secs(rng.LogNormal(median, 0.3), kHour, 12 * kHour);
          j.spec.min_runtime = Seconds(rng.UniformInt(6, 24) * 5 * kMinute);
          j.spec.resumable = resumable;
          j.checkpoint_interval =
              resumable ? Seconds(rng.UniformInt(6, 12) * 5 * kMinute) : Seconds(0);
          j.spec.tier = tier;
          j.spec.priority = priority;
          j.budget = budget;
          jobs.push_back(std::move(j));
        }
      }
    }
  }
}

void AddInteractive(Rng rng, const std::vector<Researcher>& people, std::vector<SimJob>& jobs) {
  for (const Researcher& r : people) {
    for (int64_t d = 0; d < kDays; ++d) {
      const double mean =
          kInteractivePerDay * r.activity * (IsWeekend(d) ? kInteractiveWeekend : 1.0);
      const int n = rng.Poisson(mean);
      for (int i = 0; i < n; ++i) {
        SimJob j = NewJob(TimeInDay(rng, d, kWorkdayHours), "interactive");
        j.spec.gpus = Gpus(Pick<int32_t, 3>(rng, {1, 2, 4}, {45, 30, 25}));
        j.duration = Secs(rng.LogNormal(3.0 * kHour, 0.6), kHour, 10 * kHour);
        j.spec.min_runtime = std::min(j.duration, Seconds(8 * kHour));
        j.spec.max_runtime = Seconds(12 * kHour);
        j.spec.tier = 1;
        j.budget = r.leaf;
        jobs.push_back(std::move(j));
      }
    }
  }
}

// Interactive sessions hold a lease, and a share of them is parked: the user leaves partway and
// the session stays open until it ends. Drawn from a stream of its own after every job exists,
// so the jobs themselves are those of the scenario without leases.
void AddSessionActivity(Rng rng, std::vector<SimJob>& jobs) {
  for (SimJob& j : jobs) {
    if (j.spec.job_class != "interactive") continue;
    j.spec.lease = Seconds(kSessionLease);
    if (rng.Bernoulli(kParkedSessions))
      j.idle_after = Seconds(static_cast<int64_t>(static_cast<double>(j.duration.value()) *
                                                  rng.UniformReal(0.3, 0.7)));
  }
}

void AddTraining(Rng rng, double scale, std::vector<SimJob>& jobs) {
  double program_share_sum = 0;
  for (const ProgramDef& p : kPrograms) program_share_sum += p.share;
  for (size_t prog = 0; prog < kPrograms.size(); ++prog) {
    // Projects that may train: those of the program without a limit (a limit below the job's
    // size would leave it pending forever).
    std::vector<size_t> projects;
    std::vector<double> weights;
    for (size_t p = 0; p < kProjects.size(); ++p) {
      if (kProjects[p].program == prog && !kProjects[p].limit) {
        projects.push_back(p);
        weights.push_back(kProjects[p].share);
      }
    }
    const double target = scale * kTrainingFraction * kCapacityGpuSeconds * kPrograms[prog].share /
                          program_share_sum * rng.UniformReal(0.85, 1.15);
    double offered = 0;
    bool first = true;
    // Stop when what is left would not pay for the smallest run (64 GPUs for half a day).
    while (target - offered >= 64.0 * 0.5 * kDay) {
      const double left = target - offered;
      int32_t gpus = Pick<int32_t, 4>(rng, {64, 128, 256, 512}, {20, 30, 30, 20});
      // Shrink the last runs so the program's training demand lands near its target.
      while (gpus > 64 && static_cast<double>(gpus) * kDay > left) gpus /= 2;
      const double wanted = rng.LogNormal(2.5 * kDay, 0.45);
      const double fits = std::max(static_cast<double>(kDay), left / gpus);
      SimJob j = NewJob(first ? Seconds(rng.UniformInt(0, kHour - 1))
                              : TimeInMonth(rng, 0, kDays - 2, kWorkdayHours, 0.2),
                        "training");
      first = false;
      j.spec.gpus = Gpus(gpus);
      j.spec.gpus_per_node = Gpus(kGpusPerNode);
      j.duration = Secs(std::min(wanted, fits), kDay, 5 * kDay);
      j.spec.min_runtime = Seconds(rng.UniformInt(8, 16) * 30 * kMinute);
      j.spec.resumable = true;
      j.checkpoint_interval = Seconds(kHour);
      j.spec.grace = Seconds(300);
      j.spec.tier = 2;
      j.budget = kProjects[projects[rng.Choice(weights)]].name;
      offered += GpuSeconds(j.spec.gpus, j.duration);
      jobs.push_back(std::move(j));
    }
  }
}

void AddSweeps(Rng rng, std::vector<SimJob>& jobs) {
  const double target = kSweepFraction * kCapacityGpuSeconds;
  double offered = 0;
  for (int campaign = 0; offered < target; ++campaign) {
    const Seconds start = campaign < kBacklogCampaigns
                              ? Seconds(rng.UniformInt(0, 30 * kMinute))
                              : TimeInMonth(rng, 0, kDays, kSweepHours, 0.6);
    const int32_t gpus = Pick<int32_t, 4>(rng, {1, 2, 4, 8}, {10, 15, 30, 45});
    const double median = rng.UniformReal(1.5 * kHour, 4.0 * kHour);
    const int64_t spread = rng.UniformInt(1, 30) * kMinute;
    const auto checkpoint = Seconds(rng.UniformInt(15, 30) * kMinute);
    const auto size = Clamp(std::llround(rng.LogNormal(90, 0.8)), 10, 600);
    for (int64_t i = 0; i < size && offered < target; ++i) {
      SimJob j = NewJob(
          Seconds(std::min(start.value() + rng.UniformInt(0, spread), int64_t{kDays} * kDay - 1)),
          "sweep");
      j.spec.gpus = Gpus(gpus);
      j.duration = Secs(rng.LogNormal(median, 0.35), 30 * kMinute, 6 * kHour);
      j.spec.min_runtime = Seconds(0);
      j.spec.resumable = true;
      j.checkpoint_interval = checkpoint;
      j.spec.grace = Seconds(60);
      j.spec.tier = 0;
      offered += GpuSeconds(j.spec.gpus, j.duration);
      jobs.push_back(std::move(j));
    }
  }
}

// Intervals during which a node is out of service (failed or drained by an operator); a node is
// never failed or drained again inside one.
class Downtime {
 public:
  explicit Downtime(size_t nodes) : spans_(nodes) {}
  bool Free(size_t node, int64_t from, int64_t to) const {
    for (const auto& [a, b] : spans_[node]) {
      if (from < b && a < to) return false;
    }
    return true;
  }
  void Add(size_t node, int64_t from, int64_t to) { spans_[node].push_back({from, to}); }

 private:
  std::vector<std::vector<std::pair<int64_t, int64_t>>> spans_;
};

std::string NodeName(size_t i) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "n%03zu", i);
  return buf;
}

void AddDrains(Rng rng, Downtime& down, std::vector<TimedEvent>& events) {
  const auto n = rng.UniformInt(1, 2);
  for (int64_t k = 0; k < n; ++k) {
    size_t node = rng.Index(kNodes);
    const Seconds at = TimeInMonth(rng, 2, kDays - 4, kWorkdayHours, 0.0);
    const int64_t back = at.value() + rng.UniformInt(12, 36) * kHour;
    while (!down.Free(node, at.value(), back)) node = rng.Index(kNodes);
    down.Add(node, at.value(), back);
    events.push_back(TimedEvent{at, EventKind::kDrain, NodeName(node), 0, Seconds(4 * kHour),
                                "operator: firmware and driver update", 0});
    events.push_back(TimedEvent{Seconds(back), EventKind::kUndrain, NodeName(node), 0, std::nullopt,
                                "operator: update done", 0});
  }
}

constexpr std::array<const char*, 4> kHealthReasons = {
    "health check: GPU fell off the bus (XID 79)",
    "health check: uncorrectable ECC errors",
    "health check: NVLink errors",
    "health check: GPU temperature over limit",
};

void AddFailures(Rng rng, Downtime& down, std::vector<TimedEvent>& events) {
  const double mean_gap = static_cast<double>(kDay) / (kFailuresPerNodeDay * kNodes);
  const int64_t end = int64_t{kDays} * kDay;
  double t = rng.Exponential(mean_gap);
  for (; t < static_cast<double>(end); t += rng.Exponential(mean_gap)) {
    const int64_t at = std::llround(t);
    const bool lost = rng.Bernoulli(0.2);
    const int64_t repair =
        at + (lost ? rng.UniformInt(4 * kHour, 24 * kHour) : rng.UniformInt(2 * kHour, 12 * kHour));
    std::vector<size_t> candidates;
    for (size_t n = 0; n < kNodes; ++n) {
      if (down.Free(n, at, repair)) candidates.push_back(n);
    }
    if (candidates.empty()) continue;
    const size_t node = candidates[rng.Index(candidates.size())];
    down.Add(node, at, repair);
    const char* why =
        lost ? "agent stopped reporting" : kHealthReasons[rng.Index(kHealthReasons.size())];
    events.push_back(TimedEvent{Seconds(at), lost ? EventKind::kNodeLost : EventKind::kHealthFail,
                                NodeName(node), 0, std::nullopt, why, 0});
    if (repair < end) {
      events.push_back(TimedEvent{Seconds(repair), EventKind::kRepair, NodeName(node), 0,
                                  std::nullopt, lost ? "node found and rebooted" : "GPU reseated",
                                  0});
    }
  }
}

void AddShareChanges(Rng rng, const std::vector<BudgetSpec>& budgets,
                     std::vector<TimedEvent>& events) {
  // Programs and projects: the budgets leads rebalance during a month.
  std::vector<const BudgetSpec*> candidates;
  for (const BudgetSpec& b : budgets) {
    if (!b.leads.empty()) candidates.push_back(&b);
  }
  const auto n = rng.UniformInt(2, 3);
  for (int64_t k = 0; k < n; ++k) {
    const size_t i = rng.Index(candidates.size());
    const BudgetSpec* b = candidates[i];
    candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(i));
    const double factor = Pick<double, 3>(rng, {0.5, 1.5, 2.0}, {1, 1, 1});
    events.push_back(TimedEvent{TimeInMonth(rng, 5, 25, kWorkdayHours, 0.0),
                                EventKind::kBudgetShare, b->name, b->share * factor, std::nullopt,
                                "lead " + b->leads.front() + ": rebalance " + b->name, 0});
  }
}

}  // namespace

Scenario MakeLabMonth(uint64_t seed, const LabMonthOptions& options) {
  const Rng root(seed);
  Scenario s;
  s.name = kLabMonthName;
  s.end = kLabMonthEnd;
  for (size_t i = 0; i < kNodes; ++i) {
    s.nodes.push_back(
        NodeSpec{NodeName(i), kGpusPerNode, "b" + std::to_string(i / kNodesPerBlock), 0});
  }
  s.budgets = MakeBudgets();

  const std::vector<Researcher> people = MakeResearchers(root.Fork(kStreamPeople));
  AddDebug(root.Fork(kStreamDebug), people, s.jobs);
  AddBatch(root.Fork(kStreamBatch), people, options.funded_scale, s.jobs);
  AddInteractive(root.Fork(kStreamInteractive), people, s.jobs);
  AddTraining(root.Fork(kStreamTraining), options.funded_scale, s.jobs);
  AddSweeps(root.Fork(kStreamSweep), s.jobs);
  // Generation order breaks ties between equal submit times, so ids are deterministic.
  std::stable_sort(s.jobs.begin(), s.jobs.end(),
                   [](const SimJob& a, const SimJob& b) { return a.spec.submit < b.spec.submit; });
  for (size_t i = 0; i < s.jobs.size(); ++i) s.jobs[i].spec.id = JobId(static_cast<int64_t>(i + 1));
  AddSessionActivity(root.Fork(kStreamSessions), s.jobs);

  Downtime down(kNodes);
  AddDrains(root.Fork(kStreamDrains), down, s.events);
  AddFailures(root.Fork(kStreamFailures), down, s.events);
  AddShareChanges(root.Fork(kStreamShares), s.budgets, s.events);
  std::stable_sort(s.events.begin(), s.events.end(),
                   [](const TimedEvent& a, const TimedEvent& b) { return a.at < b.at; });
  return s;
}

}  // namespace hg::sim
