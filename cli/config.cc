#include "cli/config.h"

#include <fstream>
#include <sstream>
#include <string_view>

namespace hg::cli {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

Error FileError(const std::string& path, int line, std::string field, std::string reason) {
  return Error{std::move(field), std::move(reason), path, line};
}

const std::string* Find(const std::map<std::string, std::string>& env, const std::string& key) {
  const auto it = env.find(key);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

}  // namespace

std::vector<std::string> SplitUrls(const std::string& url) {
  std::vector<std::string> out;
  size_t from = 0;
  for (;;) {
    const size_t comma = url.find(',', from);
    std::string one = url.substr(from, comma == std::string::npos ? comma : comma - from);
    while (!one.empty() && (one.back() == '/' || one.back() == ' ')) one.pop_back();
    while (!one.empty() && one.front() == ' ') one.erase(0, 1);
    if (!one.empty()) out.push_back(std::move(one));
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

Result<ClientConfig> ParseConfigFile(const std::string& text, const std::string& path) {
  ClientConfig config;
  config.config_file = path;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string_view s = Trim(raw);
    if (s.empty() || s.front() == '#') continue;
    const size_t eq = s.find('=');
    if (eq == std::string_view::npos) {
      return tl::unexpected(FileError(path, line, "", "expected key=value"));
    }
    const std::string key(Trim(s.substr(0, eq)));
    std::string_view value = Trim(s.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    if (key == "url") {
      config.url = std::string(value);
    } else if (key == "token") {
      config.token = std::string(value);
    } else if (key == "ca_file") {
      config.ca_file = std::string(value);
    } else {
      return tl::unexpected(FileError(path, line, key.empty() ? "key" : key,
                                      "unknown key (known: url, token, ca_file)"));
    }
    if (value.empty()) return tl::unexpected(FileError(path, line, key, "empty value"));
  }
  return config;
}

Result<ClientConfig> ResolveConfig(const std::map<std::string, std::string>& env) {
  ClientConfig config;
  std::string path;
  bool must_exist = false;
  if (const std::string* p = Find(env, "HOURGLASS_CONFIG")) {
    path = *p;
    must_exist = true;
  } else if (const std::string* home = Find(env, "HOME")) {
    path = *home + "/.hourglass";
  }
  if (!path.empty()) {
    std::ifstream f(path);
    if (f) {
      std::ostringstream text;
      text << f.rdbuf();
      auto parsed = ParseConfigFile(text.str(), path);
      if (!parsed) return tl::unexpected(parsed.error());
      config = *parsed;
    } else if (must_exist) {
      return tl::unexpected(
          Error{"HOURGLASS_CONFIG", "cannot read the config file " + path, "", 0});
    }
  }
  if (const std::string* url = Find(env, "HOURGLASS_URL")) config.url = *url;
  if (const std::string* token = Find(env, "HOURGLASS_TOKEN")) config.token = *token;
  if (const std::string* ca = Find(env, "HOURGLASS_CA_FILE")) config.ca_file = *ca;
  const std::vector<std::string> urls = SplitUrls(config.url);
  if (urls.empty()) return tl::unexpected(Error{"url", "is empty", config.config_file, 0});
  for (const std::string& url : urls) {
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
      return tl::unexpected(
          Error{"url", "'" + url + "' is not an http:// or https:// URL", config.config_file, 0});
    }
    if (!config.ca_file.empty() && url.rfind("https://", 0) != 0) {
      return tl::unexpected(
          Error{"ca_file", "only for https:// urls (one is " + url + ")", config.config_file, 0});
    }
  }
  config.url.clear();
  for (const std::string& url : urls) config.url += (config.url.empty() ? "" : ",") + url;
  return config;
}

}  // namespace hg::cli
