// A small CSV reader and writer for the simulator's input files (and later trace adapters).
// Dialect: comma-separated; a field may be double-quoted ("" inside quotes is one quote); spaces
// around unquoted fields are trimmed; lines whose first non-blank character is '#' and blank lines
// are skipped; CRLF and a UTF-8 byte order mark are tolerated. A record is one physical line:
// quoted fields cannot span lines, which keeps every error on the line the user sees.
#pragma once

#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>

#include "core/error.h"

namespace hg::sim {

struct CsvSplitError {
  size_t column = 0;  // 0-based index of the field where the line went wrong
  std::string reason;
};

// Splits one line (without its line break) into fields.
tl::expected<std::vector<std::string>, CsvSplitError> SplitCsvLine(std::string_view line);

struct CsvRecord {
  int line = 0;  // 1-based physical line
  std::vector<std::string> fields;
};

// A header line and the records under it. Every record has exactly header.size() fields.
struct CsvTable {
  std::vector<std::string> header;
  int header_line = 0;
  std::vector<CsvRecord> records;

  // Index of a header column, or -1.
  int Column(std::string_view name) const;
};

// Reads a table: the first non-comment line is the header (names must be non-empty and unique).
// Errors carry `file` and the line; a bad field in a record names its header column; a record
// with too few fields names the first missing column.
Result<CsvTable> ParseCsvTable(std::string_view text, const std::string& file);

// Quotes a field when reading it back would otherwise change it (comma, quote, leading '#',
// surrounding spaces). Fields must not contain line breaks (see CsvFieldWritable).
std::string CsvQuote(std::string_view field);
bool CsvFieldWritable(std::string_view field);
// Joins fields into one line (without the line break).
std::string CsvJoin(const std::vector<std::string>& fields);

}  // namespace hg::sim
