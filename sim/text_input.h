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

// The physical lines of a text, numbered from 1. A UTF-8 byte order mark at the start is dropped,
// and so is the '\r' of a "\r\n" line break, so a file saved on Windows reads the same.
class TextLines {
 public:
  explicit TextLines(std::string_view text);
  // The next line without its line break; false after the last one (a final line break does not
  // start another, empty line).
  bool Next(std::string_view* line);
  // The number of the line Next returned last.
  int number() const { return number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int number_ = 0;
};

// An error at `line` (1-based; 0: the file as a whole) of `file`, naming `field`.
Error At(const std::string& file, int line, std::string field, std::string reason);

// The whole file as text; errors: "path: no such file", "is a directory", unreadable.
Result<std::string> ReadTextFile(const std::string& path);

// The whole of `s` as a base-10 integer; nullopt for anything else (signs allowed, no spaces).
std::optional<int64_t> ToInt(std::string_view s);
// The whole of `s` as a finite number; nullopt for anything else.
std::optional<double> ToNumber(std::string_view s);

}  // namespace hg::sim
