#include "server/json_check.h"

#include <algorithm>
#include <cmath>

namespace hg::server {

bool IsName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

JsonCheck::JsonCheck(const nlohmann::json& body, std::string prefix)
    : body_(body), prefix_(std::move(prefix)) {
  if (!body_.is_object()) Fail("body", "must be a JSON object");
}

void JsonCheck::Fail(const std::string& field, const std::string& reason) {
  if (!error_) error_ = Refusal{400, prefix_ + field, reason};
}

bool JsonCheck::Has(const std::string& key) const {
  return body_.is_object() && body_.contains(key);
}

bool JsonCheck::IsNull(const std::string& key) const { return Has(key) && body_[key].is_null(); }

const nlohmann::json* JsonCheck::Get(const std::string& key, bool required) {
  seen_.insert(key);
  if (error_) return nullptr;
  if (!Has(key) || body_[key].is_null()) {
    if (required) Fail(key, "is required");
    return nullptr;
  }
  return &body_[key];
}

std::optional<std::string> JsonCheck::Str(const std::string& key, bool required, bool name_rule) {
  const auto* v = Get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    Fail(key, "must be a string");
    return std::nullopt;
  }
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > kMaxString) {
    Fail(key, "is longer than 4096 bytes");
    return std::nullopt;
  }
  if (name_rule && !IsName(s)) {
    Fail(key, "must match [A-Za-z0-9._-]{1,64}");
    return std::nullopt;
  }
  return s;
}

std::optional<int64_t> JsonCheck::Int(const std::string& key, bool required, int64_t lo,
                                      int64_t hi) {
  const auto* v = Get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) {
    Fail(key, "must be an integer");
    return std::nullopt;
  }
  // Unsigned values above int64 would wrap: compare as unsigned first.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    Fail(key, "must be at most " + std::to_string(hi));
    return std::nullopt;
  }
  const auto x = v->get<int64_t>();
  if (x < lo) {
    Fail(key, "must be at least " + std::to_string(lo));
    return std::nullopt;
  }
  if (x > hi) {
    Fail(key, "must be at most " + std::to_string(hi));
    return std::nullopt;
  }
  return x;
}

std::optional<double> JsonCheck::Number(const std::string& key, bool required) {
  const auto* v = Get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>())) {
    Fail(key, "must be a number");
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<bool> JsonCheck::Bool(const std::string& key, bool required) {
  const auto* v = Get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    Fail(key, "must be true or false");
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::vector<std::string>> JsonCheck::StrList(const std::string& key, bool required,
                                                           bool name_rule, size_t min_size) {
  const auto* v = Get(key, required);
  if (!v) return std::nullopt;
  if (!v->is_array()) {
    Fail(key, "must be a list of strings");
    return std::nullopt;
  }
  if (v->size() > kMaxList) {
    Fail(key, "has more than 256 entries");
    return std::nullopt;
  }
  if (v->size() < min_size) {
    Fail(key, "must not be empty");
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    const std::string f = key + "[" + std::to_string(i) + "]";
    if (!e.is_string()) {
      Fail(f, "must be a string");
      return std::nullopt;
    }
    const auto& s = e.get_ref<const std::string&>();
    if (s.size() > kMaxString) {
      Fail(f, "is longer than 4096 bytes");
      return std::nullopt;
    }
    if (name_rule && !IsName(s)) {
      Fail(f, "must match [A-Za-z0-9._-]{1,64}");
      return std::nullopt;
    }
    out.push_back(s);
  }
  return out;
}

std::optional<std::map<std::string, std::string>> JsonCheck::StrMap(const std::string& key) {
  const auto* v = Get(key, false);
  if (!v) return std::nullopt;
  if (!v->is_object()) {
    Fail(key, "must be an object of strings");
    return std::nullopt;
  }
  if (v->size() > kMaxList) {
    Fail(key, "has more than 256 entries");
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, e] : v->items()) {
    const std::string f = key + "." + k;
    if (k.empty() || k.size() > kMaxString) {
      Fail(f, "keys must be 1 to 4096 bytes");
      return std::nullopt;
    }
    if (!e.is_string()) {
      Fail(f, "must be a string");
      return std::nullopt;
    }
    if (e.get_ref<const std::string&>().size() > kMaxString) {
      Fail(f, "is longer than 4096 bytes");
      return std::nullopt;
    }
    out[k] = e.get<std::string>();
  }
  return out;
}

const nlohmann::json* JsonCheck::Raw(const std::string& key, const char* type) {
  const auto* v = Get(key, false);
  if (!v) return nullptr;
  const bool ok = std::string(type) == "array" ? v->is_array() : v->is_object();
  if (!ok) {
    Fail(key, std::string("must be an ") + type);
    return nullptr;
  }
  if (v->is_array() && v->size() > 4096) {
    Fail(key, "has more than 4096 entries");
    return nullptr;
  }
  return v;
}

void JsonCheck::Done() {
  if (error_ || !body_.is_object()) return;
  for (const auto& [k, v] : body_.items())
    if (!seen_.count(k)) {
      // Named by itself, a field with an empty name would give a refusal that names no field.
      if (k.empty())
        Fail("body", "has a field with an empty name");
      else
        Fail(k, "unknown field");
      return;
    }
}

}  // namespace hg::server
