// Calendar times in trace files: "YYYY-MM-DD HH:MM:SS" in UTC, read without the C library's
// locale- and timezone-dependent functions, so a trace reads the same on every machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hg::sim {

// Seconds since the Unix epoch; nullopt unless `s` is exactly that form and a real calendar time.
// With `allow_t`, a 'T' may separate date and time (ISO 8601) as well as a space.
std::optional<int64_t> ParseUtcDateTime(std::string_view s, bool allow_t);

}  // namespace hg::sim
