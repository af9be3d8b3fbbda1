// Durations on the command line ("90s", "30m", "2h", "1d", "1h30m", or plain seconds) and in
// tables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hg::cli {

// Seconds of `text`: one or more <number><unit> parts with unit s, m, h or d, or a bare number of
// seconds. Negative, empty, malformed or absurdly large (> 10 years) values are refused; the
// error's field is `field`.
Result<int64_t> ParseDuration(std::string_view text, const std::string& field);

// Compact human form: 0s, 45s, 5m, 1h30m, 2d4h (the two largest non-zero units, rounded down).
std::string FormatDuration(int64_t seconds);

// "2026-12-02 16:00:00Z" (UTC) for seconds since the Unix epoch; "-" for 0 or less.
std::string FormatTime(int64_t epoch_s);

}  // namespace hg::cli
