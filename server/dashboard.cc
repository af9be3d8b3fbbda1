#include "server/dashboard.h"

namespace hg::server {
namespace {

// Scripts, styles and API calls from this server only; no inline script, no frames, no form
// posts, no plugins. A job's name or reason that slipped into the page as markup could not run.
constexpr const char* kPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

httplib::Server::Handler Serve(std::string_view body, const char* type) {
  return [body, type](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Security-Policy", kPolicy);
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    // Small, and replaced with the binary: the browser asks again rather than keep a stale copy.
    res.set_header("Cache-Control", "no-cache");
    res.set_content(body.data(), body.size(), type);
  };
}

}  // namespace

void InstallDashboard(httplib::Server& svr) {
  const auto page = Serve(kDashboardHtml, "text/html; charset=utf-8");
  svr.Get("/", page);
  svr.Get("/ui", page);
  svr.Get("/ui/", page);
  svr.Get("/ui/app.js", Serve(kDashboardJs, "text/javascript; charset=utf-8"));
  svr.Get("/ui/app.css", Serve(kDashboardCss, "text/css; charset=utf-8"));
}

}  // namespace hg::server
