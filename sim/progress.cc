#include "sim/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace hg::sim {

ProgressLine::ProgressLine(std::ostream& out, bool is_terminal, int64_t every)
    : out_(out), enabled_(is_terminal), every_(every) {
  assert(every_ > 0);
}

void ProgressLine::Update(std::string_view policy, Seconds elapsed, Seconds total, int64_t events) {
  if (!enabled_) return;
  std::string text = fmt::format("{} day {:.1f}/{:g}  events {}", policy,
                                 static_cast<double>(elapsed.value()) / 86400.0,
                                 static_cast<double>(total.value()) / 86400.0, HumanCount(events));
  std::lock_guard<std::mutex> lock(mu_);
  auto it =
      std::find_if(runs_.begin(), runs_.end(), [&](const Run& r) { return r.policy == policy; });
  if (it == runs_.end())
    runs_.push_back(Run{std::string(policy), std::move(text)});
  else
    it->text = std::move(text);
  const bool print = calls_ % every_ == 0;
  ++calls_;
  if (print) Print();
}

void ProgressLine::Finish(std::string_view policy) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(runs_, [&](const Run& r) { return r.policy == policy; });
}

void ProgressLine::Print() {
  std::string line;
  for (const Run& r : runs_) {
    if (!line.empty()) line += " | ";
    line += r.text;
  }
  const size_t width = line.size();
  // Blank out what a longer previous line left behind.
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  out_ << '\r' << line << std::flush;
}

void ProgressLine::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  runs_.clear();
  if (!enabled_ || last_width_ == 0) return;
  out_ << '\n' << std::flush;
  last_width_ = 0;
  calls_ = 0;
}

std::string HumanCount(int64_t n) {
  const double v = static_cast<double>(n);
  if (n < 1000) return fmt::format("{}", n);
  // Thresholds sit where rounding to one decimal would print "1000.0k".
  if (n < 999950) return fmt::format("{:.1f}k", v / 1e3);
  if (n < 999950000) return fmt::format("{:.1f}M", v / 1e6);
  return fmt::format("{:.1f}G", v / 1e9);
}

}  // namespace hg::sim
