#include "sim/generic_trace.h"

namespace hg::sim {

Result<ColumnMap> ParseColumnMap(std::string_view) { return Fail("--map", "not implemented yet"); }
std::optional<int64_t> ParseTraceTime(std::string_view) { return std::nullopt; }
std::optional<int64_t> ParseTraceDuration(std::string_view) { return std::nullopt; }
Result<Scenario> ParseGenericTrace(std::string_view, const std::string&, const GenericOptions&,
                                   GenericStats*) {
  return Fail("--format", "csv/jsonl traces are not implemented yet");
}
Result<Scenario> LoadGenericTrace(const std::string&, const std::string&, const std::string&,
                                  GenericOptions, GenericStats*) {
  return Fail("--format", "csv/jsonl traces are not implemented yet");
}
std::string DescribeGenericMapping(const Scenario&, const GenericOptions&, const GenericStats&) {
  return {};
}

}  // namespace hg::sim
