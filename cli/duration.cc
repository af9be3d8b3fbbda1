#include "cli/duration.h"

#include <fmt/format.h>

#include <ctime>

namespace hg::cli {

Result<int64_t> ParseDuration(std::string_view text, const std::string& field) {
  constexpr int64_t kMax = int64_t{10} * 366 * 86400;
  const std::string quoted = "'" + std::string(text) + "'";
  const std::string want = " (want e.g. 90s, 30m, 2h, 1d, 1h30m or seconds)";
  if (text.empty()) return Fail(field, "empty duration" + want);
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] < '0' || text[i] > '9') return Fail(field, quoted + " is not a duration" + want);
    int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + (text[i] - '0');
      if (n > kMax) return Fail(field, quoted + " is too long (at most 10 years)");
      ++i;
    }
    int64_t unit = 1;
    if (i == text.size()) {
      // A bare number is seconds, but only alone ("1h30" is ambiguous, so refused).
      if (text.find_first_not_of("0123456789") != std::string_view::npos) {
        return Fail(field, quoted + " ends without a unit" + want);
      }
    } else {
      switch (text[i]) {
        case 's':
          unit = 1;
          break;
        case 'm':
          unit = 60;
          break;
        case 'h':
          unit = 3600;
          break;
        case 'd':
          unit = 86400;
          break;
        default:
          return Fail(field, quoted + " has an unknown unit" + want);
      }
      ++i;
    }
    total += n * unit;
    if (total > kMax) return Fail(field, quoted + " is too long (at most 10 years)");
  }
  return total;
}

std::string FormatDuration(int64_t seconds) {
  if (seconds <= 0) return "0s";
  struct Unit {
    int64_t size;
    char name;
  };
  const Unit units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
  std::string out;
  int parts = 0;
  for (const Unit& u : units) {
    const int64_t n = seconds / u.size;
    if (n > 0 && parts < 2) {
      out += std::to_string(n) + u.name;
      seconds -= n * u.size;
      ++parts;
    } else if (parts > 0) {
      ++parts;  // only adjacent units: "1d" not "1d5s"
    }
  }
  return out;
}

std::string FormatTime(int64_t epoch_s) {
  if (epoch_s <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

}  // namespace hg::cli
