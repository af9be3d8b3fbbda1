#include "cli/client.h"

#include <fmt/format.h>
#include <httplib.h>
#include <strings.h>

namespace hg::cli {
namespace {

// httplib's error names ("Connection", "Read") in words a user can act on.
std::string TransportError(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection refused or no route (is the server running there?)";
    case httplib::Error::ConnectionTimeout:
      return "timed out connecting";
    case httplib::Error::Read:
      return "no answer (the connection closed or the read timed out)";
    case httplib::Error::Write:
      return "could not send the request";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification:
      return "TLS handshake failed";
    default:
      return httplib::to_string(e);
  }
}

}  // namespace

CliError UsageError(const Error& e) {
  return CliError{kExitUsage, e.field, [&] {
                    // Keep the file and line of config-file errors in the reason: the field is
                    // printed apart.
                    if (e.file.empty()) return e.reason;
                    return e.line > 0
                               ? fmt::format("{} (file {}, line {})", e.reason, e.file, e.line)
                               : fmt::format("{} (file {})", e.reason, e.file);
                  }()};
}

std::string RenderError(const std::string& command, const CliError& e) {
  std::string out = "hourglass " + command + ": ";
  if (!e.field.empty()) out += e.field + ": ";
  out += e.reason;
  return out;
}

CliError ErrorFromResponse(int status, const std::string& body) {
  try {
    const Json j = Json::parse(body);
    if (j.is_object() && j.contains("error") && j["error"].is_object()) {
      const Json& e = j["error"];
      CliError out{kExitRefused, "", ""};
      if (e.contains("field") && e["field"].is_string()) out.field = e["field"].get<std::string>();
      if (e.contains("reason") && e["reason"].is_string()) {
        out.reason = e["reason"].get<std::string>();
      }
      if (out.reason.empty()) out.reason = fmt::format("refused (HTTP {})", status);
      return out;
    }
  } catch (const Json::exception&) {
    // Not the documented error shape: fall through to the raw rendering.
  }
  std::string excerpt = body.substr(0, 200);
  for (char& c : excerpt) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!excerpt.empty() && excerpt.back() == ' ') excerpt.pop_back();
  return CliError{kExitRefused, "server",
                  excerpt.empty() ? fmt::format("HTTP {}", status)
                                  : fmt::format("HTTP {}: {}", status, excerpt)};
}

std::string HttpResponse::Header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

CliResult<Json> HttpResponse::JsonBody() const {
  if (body.empty()) return Json::object();  // e.g. a bare 200 to a cancel
  try {
    return Json::parse(body);
  } catch (const Json::exception&) {
    return tl::unexpected(CliError{kExitRefused, "server", "the answer is not JSON"});
  }
}

Client::Client(ClientConfig config, ClientOptions options)
    : config_(std::move(config)), urls_(SplitUrls(config_.url)) {
  if (urls_.empty()) urls_.push_back(config_.url);  // refused as not valid by Send
  for (const std::string& url : urls_) {
    auto http = std::make_unique<httplib::Client>(url);
    if (!config_.ca_file.empty()) http->set_ca_cert_path(config_.ca_file);
    http->set_connection_timeout(options.connect_timeout_ms / 1000,
                                 (options.connect_timeout_ms % 1000) * 1000);
    http->set_read_timeout(options.read_timeout_ms / 1000, (options.read_timeout_ms % 1000) * 1000);
    http->set_write_timeout(options.read_timeout_ms / 1000,
                            (options.read_timeout_ms % 1000) * 1000);
    // One short connection per command: the server's thread pool is shared by everyone.
    http->set_keep_alive(false);
    // httplib writes a request's headers and body separately; without this, Nagle's algorithm
    // and the server's delayed ACK add about 40 ms to every submission.
    http->set_tcp_nodelay(true);
    http_.push_back(std::move(http));
  }
}

Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

CliResult<HttpResponse> Client::Send(const std::string& method, const std::string& path,
                                     const std::optional<Json>& body,
                                     const std::map<std::string, std::string>& extra) {
  for (size_t i = 0; i < http_.size(); ++i)
    if (!http_[i]->is_valid())
      return UsageError("url", "'" + urls_[i] + "' is not a valid server URL");
  httplib::Headers headers(extra.begin(), extra.end());
  if (!config_.token.empty()) headers.emplace("Authorization", "Bearer " + config_.token);
  const std::string payload = body ? body->dump() : std::string();
  const char* type = "application/json";
  if (method != "GET" && method != "POST" && method != "PATCH" && method != "DELETE") {
    return UsageError("method", "unsupported HTTP method " + method);
  }
  auto send = [&](httplib::Client& http) {
    if (method == "GET") return http.Get(path, headers);
    if (method == "POST") return http.Post(path, headers, payload, type);
    if (method == "PATCH") return http.Patch(path, headers, payload, type);
    return http.Delete(path, headers, payload, type);
  };
  // Only a server that could not be connected to is passed over: it never saw the request. A
  // request that was sent and got no answer is not sent again elsewhere (it may have been done).
  httplib::Result res = send(*http_[current_]);
  std::string unreached = urls_[current_];
  for (size_t tried = 1; !res && res.error() == httplib::Error::Connection && tried < http_.size();
       ++tried) {
    const size_t next = (current_ + 1) % http_.size();
    res = send(*http_[next]);
    current_ = next;
    unreached += ", " + urls_[next];
  }
  if (!res) {
    return tl::unexpected(CliError{
        kExitUnreachable, "server",
        fmt::format("cannot reach {}: {}",
                    res.error() == httplib::Error::Connection ? unreached : urls_[current_],
                    TransportError(res.error()))});
  }
  if (res->status < 200 || res->status > 299) {
    CliError e = ErrorFromResponse(res->status, res->body);
    if (res->status == 401 && config_.token.empty()) {
      e.reason += " (no token: set HOURGLASS_TOKEN or token= in ~/.hourglass)";
    }
    return tl::unexpected(e);
  }
  HttpResponse out;
  out.status = res->status;
  out.body = res->body;
  for (const auto& [k, v] : res->headers) out.headers.emplace(k, v);
  return out;
}

CliResult<Json> Client::Call(const Request& r) {
  auto res = Send(r);
  if (!res) return tl::unexpected(res.error());
  return res->JsonBody();
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace hg::cli
