// The web dashboard: a read-only page (the queue with each job's reason and estimated start, the
// running jobs with their protection, the budgets' owed and delivered GPU-hours, the nodes) that
// reads the /v1 API in the browser with the reader's own token. The page itself is public and
// holds no data; server/ui/ has its sources, built into the binary.
#pragma once

#include <httplib.h>

#include <string_view>

namespace hg::server {

// GET / and /ui/ (the page), /ui/app.js, /ui/app.css. Each reply carries a Content-Security-Policy
// that lets the page load and call only this server.
void InstallDashboard(httplib::Server& svr);

// The embedded sources (server/ui/*, copied in at configure time).
extern const std::string_view kDashboardHtml;
extern const std::string_view kDashboardJs;
extern const std::string_view kDashboardCss;

}  // namespace hg::server
