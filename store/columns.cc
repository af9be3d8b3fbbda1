#include "store/columns.h"

#include <exception>
#include <nlohmann/json.hpp>

namespace hg::store {

Result<std::string> EncodeList(const std::vector<std::string>& v, const char* field) {
  try {
    return nlohmann::json(v).dump();
  } catch (const std::exception& e) {
    return Fail(field, std::string("cannot be stored: ") + e.what());
  }
}

Result<std::string> EncodeMap(const std::map<std::string, std::string>& m, const char* field) {
  try {
    return nlohmann::json(m).dump();
  } catch (const std::exception& e) {
    return Fail(field, std::string("cannot be stored: ") + e.what());
  }
}

Result<std::vector<std::string>> DecodeList(const std::string& text, const char* field) {
  try {
    return nlohmann::json::parse(text).get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    return Fail(field, std::string("corrupt JSON in the database: ") + e.what());
  }
}

Result<std::map<std::string, std::string>> DecodeMap(const std::string& text, const char* field) {
  try {
    return nlohmann::json::parse(text).get<std::map<std::string, std::string>>();
  } catch (const std::exception& e) {
    return Fail(field, std::string("corrupt JSON in the database: ") + e.what());
  }
}

}  // namespace hg::store
