// The dashboard's files as the server sends them: public, the very files of server/ui/ (the
// embedded copy is current), each with its type and a Content-Security-Policy that confines the
// page to this server. What the page shows is checked in a real browser by
// server/dashboard_browser_test.sh.
#include "server/dashboard.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "server/test_harness.h"

namespace hg::server::testing {
namespace {

// The repository's root: ctest names it; run by hand, this file's own path does.
std::string SourceRoot() {
  if (const char* root = std::getenv("HOURGLASS_SOURCE_DIR")) return root;
  const std::string self = __FILE__;
  return self.substr(0, self.rfind("/server/"));
}

std::string SourceFile(const std::string& rel) {
  std::ifstream in(SourceRoot() + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Dashboard, ThePageAndItsFilesAreServedWithoutATokenUnderAPolicyThatAllowsOnlyThisServer) {
  Harness h;
  httplib::Client cli("127.0.0.1", h.server().Port());
  struct Case {
    const char* path;
    const char* file;
    const char* type;
  };
  for (const Case& c : {Case{"/", "server/ui/index.html", "text/html"},
                        Case{"/ui/", "server/ui/index.html", "text/html"},
                        Case{"/ui/app.js", "server/ui/app.js", "text/javascript"},
                        Case{"/ui/app.css", "server/ui/app.css", "text/css"}}) {
    SCOPED_TRACE(c.path);
    auto r = cli.Get(c.path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    const std::string want = SourceFile(c.file);
    ASSERT_FALSE(want.empty()) << "cannot read " << c.file;
    EXPECT_EQ(r->body, want);
    EXPECT_EQ(r->get_header_value("Content-Type").rfind(c.type, 0), 0u)
        << r->get_header_value("Content-Type");
    const std::string csp = r->get_header_value("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("script-src 'self';"), std::string::npos) << csp;
    EXPECT_NE(csp.find("connect-src 'self';"), std::string::npos) << csp;
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  }
  // The data stays behind the API's tokens.
  auto jobs = cli.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 401);
  auto other = cli.Get("/ui/nothing.js");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
}

// The page takes no script from anywhere but its own file: no inline script or handler that the
// policy would block (and that would tempt a later change to loosen it).
TEST(Dashboard, ThePageHasNoInlineScript) {
  const std::string html(kDashboardHtml);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("<script src=\"/ui/app.js\""), std::string::npos);
  EXPECT_EQ(html.find("onclick"), std::string::npos);
  EXPECT_EQ(html.find("style=\""), std::string::npos);
  const std::string js(kDashboardJs);
  EXPECT_EQ(js.find("innerHTML"), std::string::npos);  // values are set as text only
  EXPECT_EQ(js.find("eval("), std::string::npos);
}

}  // namespace
}  // namespace hg::server::testing
