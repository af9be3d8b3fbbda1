#include "cli/json_util.h"

#include "cli/duration.h"
#include "cli/table.h"

namespace hg::cli {

std::string Text(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "-";
  const Json& v = j[key];
  if (v.is_string()) return v.get<std::string>().empty() ? "-" : v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return FormatNumber(v.get<double>());
  if (v.is_null()) return "-";
  return v.dump();
}

double Number(const Json& j, const char* key, double fallback) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return fallback;
  return j[key].get<double>();
}

int64_t Int(const Json& j, const char* key, int64_t fallback) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return fallback;
  return j[key].get<int64_t>();
}

std::string Time(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return "-";
  return FormatTime(j[key].get<int64_t>());
}

std::string Joined(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_array() || j[key].empty()) return "-";
  std::string out;
  for (const Json& v : j[key]) {
    if (!out.empty()) out += ",";
    out += v.is_string() ? v.get<std::string>() : v.dump();
  }
  return out;
}

}  // namespace hg::cli
