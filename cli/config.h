// Where the CLI talks to and as whom: HOURGLASS_URL / HOURGLASS_TOKEN, or a small config file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace hg::cli {

inline constexpr const char* kDefaultUrl = "http://127.0.0.1:8080";

struct ClientConfig {
  // One server, or several separated by commas (an active server and its standbys): a request
  // goes to the one that answered last and moves on to the next when a server cannot be reached.
  std::string url = kDefaultUrl;
  std::string token;  // empty: requests go without Authorization (the server says 401)
  // https: the PEM CA (or certificate) the server's certificate is checked against; empty: the
  // system's CAs.
  std::string ca_file;
  std::string config_file;  // the file that was read, "" if none (for messages)
};

// The URLs of a `url` (comma-separated), each without its trailing slashes.
std::vector<std::string> SplitUrls(const std::string& url);

// Parses a config file: `url=...`, `token=...` and `ca_file=...` lines; blank lines and `#`
// comments are ignored; spaces around `=` and the value are trimmed; an optional pair of double
// quotes around the value is removed (so a TOML-style `url = "http://..."` works too). Any other
// key is refused with its line, so a typo never silently does nothing.
Result<ClientConfig> ParseConfigFile(const std::string& text, const std::string& path);

// Resolves the configuration from the environment `env` (HOURGLASS_URL, HOURGLASS_TOKEN,
// HOURGLASS_CA_FILE, HOURGLASS_CONFIG, HOME). Per field, the environment wins over the file, and
// the file over the default URL. The file is $HOURGLASS_CONFIG when set (it must exist), else
// $HOME/.hourglass when it exists.
Result<ClientConfig> ResolveConfig(const std::map<std::string, std::string>& env);

}  // namespace hg::cli
