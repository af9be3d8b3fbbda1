#include "sim/text_input.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace hg::sim {

namespace fs = std::filesystem;

Error At(const std::string& file, int line, std::string field, std::string reason) {
  return Error{std::move(field), std::move(reason), file, line};
}

TextLines::TextLines(std::string_view text) : text_(text) {
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
}

bool TextLines::Next(std::string_view* line) {
  if (pos_ >= text_.size()) return false;
  size_t eol = text_.find('\n', pos_);
  if (eol == std::string_view::npos) eol = text_.size();
  *line = text_.substr(pos_, eol - pos_);
  pos_ = eol + 1;
  ++number_;
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  return true;
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return tl::unexpected(At(path, 0, "", "is a directory, expected a file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const bool exists = fs::exists(path, ec);
    return tl::unexpected(
        At(path, 0, "", exists ? "cannot be opened for reading" : "no such file"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return tl::unexpected(At(path, 0, "", "read failed"));
  return ss.str();
}

std::optional<int64_t> ToInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> ToNumber(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

}  // namespace hg::sim
