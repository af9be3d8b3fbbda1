// The HTTP routes of docs/api.md on an httplib::Server: authentication, strict JSON validation
// (unknown fields, types, ranges, lengths), and calls into State.
#pragma once

#include <httplib.h>

#include <functional>

#include "server/state.h"

namespace hg::server {

inline constexpr size_t kMaxBodyBytes = 1 << 20;

// Installs every route on `svr`; `state` must outlive it.
void InstallRoutes(httplib::Server& svr, State& state);

}  // namespace hg::server
