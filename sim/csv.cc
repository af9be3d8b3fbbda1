#include "sim/csv.h"

#include <set>

#include "sim/text_input.h"

namespace hg::sim {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

tl::expected<std::vector<std::string>, CsvSplitError> SplitCsvLine(std::string_view line) {
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = line.size();
  while (true) {
    const size_t column = out.size();
    while (i < n && IsBlank(line[i])) ++i;
    std::string field;
    if (i < n && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < n) {
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        field += line[i++];
      }
      if (!closed)
        return tl::unexpected(CsvSplitError{column, "quoted field is not closed by '\"'"});
      while (i < n && IsBlank(line[i])) ++i;
      if (i < n && line[i] != ',')
        return tl::unexpected(CsvSplitError{
            column, "unexpected text after the closing quote (a quoted field must end at ',')"});
    } else {
      const size_t start = i;
      while (i < n && line[i] != ',') ++i;
      std::string_view raw = Trim(line.substr(start, i - start));
      // A stray quote usually means a field was meant to be quoted; refuse rather than guess.
      if (raw.find('"') != std::string_view::npos)
        return tl::unexpected(CsvSplitError{
            column,
            "a '\"' inside an unquoted field; quote the whole field and write \"\" for "
            "each quote in it"});
      field.assign(raw);
    }
    out.push_back(std::move(field));
    if (i >= n) break;
    ++i;  // the comma; a trailing comma yields a final empty field
  }
  return out;
}

int CsvTable::Column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

Result<CsvTable> ParseCsvTable(std::string_view text, const std::string& file) {
  CsvTable table;
  bool have_header = false;
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) {
    const int line_no = lines.number();
    std::string_view trimmed = Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;

    auto split = SplitCsvLine(line);
    if (!have_header) {
      if (!split)
        return tl::unexpected(At(file, line_no, "",
                                 "header column " + std::to_string(split.error().column + 1) +
                                     ": " + split.error().reason));
      std::set<std::string, std::less<>> seen;
      for (size_t c = 0; c < split->size(); ++c) {
        const std::string& name = (*split)[c];
        if (name.empty())
          return tl::unexpected(
              At(file, line_no, "", "header column " + std::to_string(c + 1) + " has no name"));
        if (!seen.insert(name).second)
          return tl::unexpected(At(file, line_no, name, "column appears twice in the header"));
      }
      table.header = std::move(*split);
      table.header_line = line_no;
      have_header = true;
      continue;
    }
    if (!split) {
      const size_t c = split.error().column;
      std::string field = c < table.header.size() ? table.header[c] : "";
      return tl::unexpected(At(file, line_no, std::move(field), split.error().reason));
    }
    if (split->size() < table.header.size())
      return tl::unexpected(At(file, line_no, table.header[split->size()],
                               "missing: the line has " + std::to_string(split->size()) +
                                   " fields, the header " + std::to_string(table.header.size()) +
                                   " (" + CsvJoin(table.header) + ")"));
    if (split->size() > table.header.size())
      return tl::unexpected(At(file, line_no, "",
                               "too many fields: the line has " + std::to_string(split->size()) +
                                   ", the header " + std::to_string(table.header.size()) + " (" +
                                   CsvJoin(table.header) + ")"));
    table.records.push_back(CsvRecord{line_no, std::move(*split)});
  }
  if (!have_header) return tl::unexpected(At(file, 1, "", "no header line: the file is empty"));
  return table;
}

bool CsvFieldWritable(std::string_view field) {
  return field.find('\n') == std::string_view::npos && field.find('\r') == std::string_view::npos;
}

std::string CsvQuote(std::string_view field) {
  const bool needs =
      field.find_first_of(",\"") != std::string_view::npos ||
      (!field.empty() && (IsBlank(field.front()) || IsBlank(field.back()) || field.front() == '#'));
  if (!needs) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string CsvJoin(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    out += CsvQuote(fields[i]);
  }
  return out;
}

}  // namespace hg::sim
