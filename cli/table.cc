#include "cli/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace hg::cli {
namespace {

// Display width of UTF-8 text: count code points, not bytes (the tree drawing uses none, but
// budget and user names may).
size_t Width(const std::string& s) {
  size_t n = 0;
  for (const unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

}  // namespace

Table& Table::AlignRight(size_t col) {
  if (right_.size() <= col) right_.resize(col + 1, false);
  right_[col] = true;
  return *this;
}

void Table::Add(std::vector<std::string> row) {
  row.resize(std::max(row.size(), header_.size()));
  rows_.push_back(std::move(row));
}

std::string Table::Render() const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], Width(row[i]));
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t i = 0; i < row.size(); ++i) {
      const size_t pad = width[i] - Width(row[i]);
      const bool right = i < right_.size() && right_[i];
      if (i > 0) out += "  ";
      if (right) out.append(pad, ' ');
      out += row[i];
      if (!right) out.append(pad, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string FormatNumber(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  if (std::fabs(v - std::round(v)) < 1e-9)
    return fmt::format("{}", static_cast<int64_t>(std::round(v)));
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace hg::cli
