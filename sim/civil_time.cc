#include "sim/civil_time.h"

namespace hg::sim {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

std::optional<int64_t> ParseUtcDateTime(std::string_view s, bool allow_t) {
  constexpr std::string_view kForm = "dddd-dd-dd dd:dd:dd";
  if (s.size() != kForm.size()) return std::nullopt;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool digit = s[i] >= '0' && s[i] <= '9';
    const bool sep_ok = s[i] == kForm[i] || (allow_t && i == 10 && s[i] == 'T');
    if (kForm[i] == 'd' ? !digit : !sep_ok) return std::nullopt;
  }
  auto num = [&](size_t pos, size_t len) {
    int64_t v = 0;
    for (size_t i = pos; i < pos + len; ++i) v = v * 10 + (s[i] - '0');
    return v;
  };
  const int64_t y = num(0, 4), mo = num(5, 2), d = num(8, 2);
  const int64_t h = num(11, 2), mi = num(14, 2), se = num(17, 2);
  constexpr int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12) return std::nullopt;
  const int64_t month_days = kDays[mo - 1] + (mo == 2 && IsLeap(y) ? 1 : 0);
  if (d < 1 || d > month_days || h > 23 || mi > 59 || se > 59) return std::nullopt;
  return DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
}

}  // namespace hg::sim
