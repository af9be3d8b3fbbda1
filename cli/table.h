// Aligned text tables for people: a header row, columns padded to the widest cell, two spaces
// between columns, numeric columns right-aligned, no trailing spaces.
#pragma once

#include <string>
#include <vector>

namespace hg::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Right-aligns column `col` (numbers).
  Table& AlignRight(size_t col);
  // Adds a row; a row shorter than the header is padded with empty cells.
  void Add(std::vector<std::string> row);
  size_t rows() const { return rows_.size(); }
  // The table, one line per row, each ending in '\n'.
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// Number formatting shared by the tables: "12.5", "3", "-" for a missing value.
std::string FormatNumber(double v, int decimals = 1);

}  // namespace hg::cli
