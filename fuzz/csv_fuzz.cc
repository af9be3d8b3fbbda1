// The CSV reader under every input file: ParseCsvTable either refuses the text with an error that
// names the file, or returns a table whose records all have the header's width, in line order.
// A record whose fields can be written back (CsvFieldWritable) reads back the same after
// CsvJoin, so the scenario files the simulator writes can be replayed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "sim/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto table = hg::sim::ParseCsvTable(text, "f.csv");
  if (!table) {
    FUZZ_CHECK(table.error().file == "f.csv");
    FUZZ_CHECK(!table.error().reason.empty());
    return 0;
  }
  FUZZ_CHECK(!table->header.empty());
  int last_line = table->header_line;
  for (const hg::sim::CsvRecord& r : table->records) {
    FUZZ_CHECK(r.fields.size() == table->header.size());
    FUZZ_CHECK(r.line > last_line);
    last_line = r.line;
    bool writable = true;
    for (const auto& f : r.fields) writable = writable && hg::sim::CsvFieldWritable(f);
    if (!writable) continue;
    auto back = hg::sim::SplitCsvLine(hg::sim::CsvJoin(r.fields));
    FUZZ_CHECK(back.has_value());
    FUZZ_CHECK(*back == r.fields);
  }
  return 0;
}
