// Which store the server's tests run on. By default SQLite, in each test's folder. With
// HOURGLASS_TEST_STORE=postgresql every test starts a PostgreSQL server of its own
// (store/pg_test_server.h) and the server keeps its state there: ctest runs every server test
// once more that way (server/CMakeLists.txt).
#pragma once

#include <cstdlib>
#include <string>

#include "store/pg_test_server.h"

namespace hg::server::testing {

inline bool TestOnPostgresql() {
  const char* s = std::getenv("HOURGLASS_TEST_STORE");
  return s != nullptr && std::string(s) == "postgresql";
}

}  // namespace hg::server::testing
