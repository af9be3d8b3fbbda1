// Lenient readers of the server's JSON for rendering: a missing or null field shows as "-" rather
// than failing the whole table (an older or newer server may add or drop a column).
#pragma once

#include <cstdint>
#include <string>

#include "cli/client.h"

namespace hg::cli {

// The field as display text: strings as is, numbers formatted, bools yes/no, null/missing "-".
std::string Text(const Json& j, const char* key);
// The field as a number, or `fallback`.
double Number(const Json& j, const char* key, double fallback = 0);
int64_t Int(const Json& j, const char* key, int64_t fallback = 0);
// The field as a UTC time, "-" when null/missing.
std::string Time(const Json& j, const char* key);
// A list of strings joined with ","; "-" when empty.
std::string Joined(const Json& j, const char* key);

}  // namespace hg::cli
