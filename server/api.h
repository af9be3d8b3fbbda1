// The HTTP routes of docs/api.md on an httplib::Server: authentication, strict JSON validation
// (unknown fields, types, ranges, lengths), and calls into State.
#pragma once

#include <httplib.h>

#include <functional>

#include "server/state.h"

namespace hg::server {

inline constexpr size_t kMaxBodyBytes = 1 << 20;

// How the server reaches the agents' log services (GET /v1/jobs/{id}/logs calls them with the
// agent's token).
struct LogsOptions {
  // The server speaks HTTPS: the agent's token is never sent to an http:// log service, where it
  // would cross the network in clear.
  bool https_only = false;
  std::string agents_ca_file;  // checks https:// log services; empty: the system's CAs
};

// Installs every route on `svr`; `state` must outlive it.
void InstallRoutes(httplib::Server& svr, State& state, const LogsOptions& logs = {});

}  // namespace hg::server
