// httplib serves a kept-alive connection on one worker thread for as long as it stays open, idle
// or not. Browsers keep their connections open (the dashboard polls every 5 s with several
// requests at once), so the server closes idle ones after a second: otherwise a few open
// dashboards would hold the worker pool, and agents' heartbeats would queue behind them.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <vector>

#include "server/test_harness.h"

namespace hg::server::testing {
namespace {

TEST(KeepAlive, IdleConnectionsDoNotHoldTheWorkersForLong) {
  ServerOptions o;
  o.threads = 2;
  Harness h(o);
  // Two clients that keep their connections open and go idle: both workers are theirs.
  std::vector<std::unique_ptr<httplib::Client>> idle;
  for (int i = 0; i < 2; ++i) {
    idle.push_back(std::make_unique<httplib::Client>("127.0.0.1", h.server().Port()));
    idle.back()->set_keep_alive(true);
    auto r = idle.back()->Get("/healthz");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
  }
  // A third request waits for a worker: until an idle connection is closed.
  httplib::Client next("127.0.0.1", h.server().Port());
  next.set_read_timeout(15, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = next.Get("/healthz");
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // About a second; httplib's default keep-alive (5 s) would make it about five.
  EXPECT_LT(waited, 3000);
}

}  // namespace
}  // namespace hg::server::testing
