// Strict reading of a JSON request body: every getter checks presence, type and range, the first
// mistake is kept (field and reason), and Done() refuses fields nobody asked for, so a typo never
// silently does nothing. Getters return a default after a mistake, so call sites stay flat.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/requests.h"

namespace hg::server {

inline constexpr size_t kMaxString = 4096;
inline constexpr size_t kMaxList = 256;

class JsonCheck {
 public:
  // `prefix` is prepended to field names in errors ("health." for a nested object).
  explicit JsonCheck(const nlohmann::json& body, std::string prefix = "");

  bool ok() const { return !error_; }
  const std::optional<Refusal>& error() const { return error_; }
  void Fail(const std::string& field, const std::string& reason);

  bool Has(const std::string& key) const;
  bool IsNull(const std::string& key) const;
  // `name_rule`: [A-Za-z0-9._-]{1,64}.
  std::optional<std::string> Str(const std::string& key, bool required, bool name_rule = false);
  std::optional<int64_t> Int(const std::string& key, bool required, int64_t lo, int64_t hi);
  std::optional<double> Number(const std::string& key, bool required);
  std::optional<bool> Bool(const std::string& key, bool required);
  std::optional<std::vector<std::string>> StrList(const std::string& key, bool required,
                                                  bool name_rule, size_t min_size = 0);
  std::optional<std::map<std::string, std::string>> StrMap(const std::string& key);
  // The raw value of an array or object field, after checking its type ("array" or "object").
  const nlohmann::json* Raw(const std::string& key, const char* type);
  // Refuses fields that no getter asked for.
  void Done();

 private:
  const nlohmann::json* Get(const std::string& key, bool required);

  const nlohmann::json& body_;
  std::string prefix_;
  std::set<std::string> seen_;
  std::optional<Refusal> error_;
};

bool IsName(const std::string& s);

}  // namespace hg::server
