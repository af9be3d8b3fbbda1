// Reading what users hand the simulator: whole files, strict numbers, and errors that name the
// file, line and field. Shared by the scenario files and every trace adapter, so a mistake reads
// the same whichever reader found it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hg::sim {

// An error at `line` (1-based; 0: the file as a whole) of `file`, naming `field`.
Error At(const std::string& file, int line, std::string field, std::string reason);

// The whole file as text; errors: "path: no such file", "is a directory", unreadable.
Result<std::string> ReadTextFile(const std::string& path);

// The whole of `s` as a base-10 integer; nullopt for anything else (signs allowed, no spaces).
std::optional<int64_t> ToInt(std::string_view s);
// The whole of `s` as a finite number; nullopt for anything else.
std::optional<double> ToNumber(std::string_view s);

}  // namespace hg::sim
