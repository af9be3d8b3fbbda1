// What both stores share: the JSON text columns (command, env, labels) and the early return on a
// failed Result.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace hg::store {

// Returns the error of a failed Result (an lvalue or a temporary) from the enclosing function.
#define HG_TRY(expr)                                        \
  do {                                                      \
    auto&& hg_try_r = (expr);                               \
    if (!hg_try_r) return tl::unexpected(hg_try_r.error()); \
  } while (0)

// nlohmann throws on malformed text and on invalid UTF-8; these turn both into errors that name
// the field, at the adapter.
Result<std::string> EncodeList(const std::vector<std::string>& v, const char* field);
Result<std::string> EncodeMap(const std::map<std::string, std::string>& m, const char* field);
Result<std::vector<std::string>> DecodeList(const std::string& text, const char* field);
Result<std::map<std::string, std::string>> DecodeMap(const std::string& text, const char* field);

}  // namespace hg::store
