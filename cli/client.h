// The CLI's HTTP client of the server (docs/api.md) and the one error type of every command.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tl/expected.hpp>

#include "cli/config.h"
#include "core/error.h"

namespace httplib {
class Client;
}

namespace hg::cli {

using Json = nlohmann::json;

// Exit statuses of the user commands.
inline constexpr int kExitRefused = 1;      // the server refused (4xx/5xx) or answered nonsense
inline constexpr int kExitUsage = 2;        // bad arguments or configuration
inline constexpr int kExitUnreachable = 3;  // no answer from the server

struct CliError {
  int exit_code = kExitRefused;
  std::string field;
  std::string reason;
};

template <class T>
using CliResult = tl::expected<T, CliError>;

inline tl::unexpected<CliError> UsageError(std::string field, std::string reason) {
  return tl::unexpected(CliError{kExitUsage, std::move(field), std::move(reason)});
}
// An hg::Error from argument parsing (duration, config file) as a usage error.
CliError UsageError(const Error& e);

// "hourglass <command>: <field>: <reason>" (no field part when the field is empty).
std::string RenderError(const std::string& command, const CliError& e);

// The CliError for a refusal with status `status` and body `body`: the server's
// {"error": {"field", "reason"}} when the body has it, else the status and the start of the body.
CliError ErrorFromResponse(int status, const std::string& body);

struct HttpResponse {
  int status = 0;
  std::string body;
  std::multimap<std::string, std::string> headers;  // names as the server sent them

  // The value of header `name` (case-insensitive), or "".
  std::string Header(const std::string& name) const;
  // The body parsed as JSON; a refusal (exit 1) when it is not JSON.
  CliResult<Json> JsonBody() const;
};

// One API call a command makes: built from the arguments (testable without a server), then sent.
struct Request {
  std::string method;  // GET, POST, PATCH, DELETE
  std::string path;    // with the query string
  std::optional<Json> body;
  std::map<std::string, std::string> headers = {};  // besides the token's
};

struct ClientOptions {
  int connect_timeout_ms = 3000;
  int read_timeout_ms = 15000;
};

class Client {
 public:
  explicit Client(ClientConfig config, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  const ClientConfig& config() const { return config_; }

  // Sends one request (`method` GET, POST, PATCH or DELETE; `path` with its query string) with
  // the bearer token; `body`, when given, as application/json. A 2xx answer is returned; a 4xx or
  // 5xx answer is a refusal (exit 1) rendered from the server's error body; no answer is exit 3
  // naming the URL.
  CliResult<HttpResponse> Send(const std::string& method, const std::string& path,
                               const std::optional<Json>& body = std::nullopt,
                               const std::map<std::string, std::string>& headers = {});
  CliResult<HttpResponse> Send(const Request& r) {
    return Send(r.method, r.path, r.body, r.headers);
  }
  // Send, then the answer's body as JSON.
  CliResult<Json> Call(const Request& r);

 private:
  ClientConfig config_;
  // One client a server URL (ClientConfig::url); requests go to http_[current_] first.
  std::vector<std::string> urls_;
  std::vector<std::unique_ptr<httplib::Client>> http_;
  size_t current_ = 0;
};

// Percent-encodes a path segment or query value.
std::string UrlEncode(const std::string& s);

}  // namespace hg::cli
