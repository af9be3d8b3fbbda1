#include "agent/log_retention.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "agent/test_util.h"

namespace hg::agent {
namespace {

constexpr int64_t kDayMs = 86'400'000;
constexpr int64_t kNowMs = 1'800'000'000'000;

// Writes `bytes` bytes to `path` and sets its modification time to `at_ms`.
void WriteAt(const std::string& path, int64_t at_ms, size_t bytes = 10) {
  std::ofstream(path) << std::string(bytes, 'x');
  const timespec t{static_cast<time_t>(at_ms / 1000), 0};
  const timespec times[2] = {t, t};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// Old logs of ended runs go; recent ones, those of a run still going (however quiet), and files
// that are not job logs stay.
TEST(PruneLogs, RemovesOnlyOldLogsOfEndedRuns) {
  testing::TempDir dir;
  const std::string d = dir.path();
  WriteAt(d + "/7.1.stdout", kNowMs - 20 * kDayMs, 100);
  WriteAt(d + "/7.1.stderr", kNowMs - 20 * kDayMs, 5);
  WriteAt(d + "/7.2.stdout", kNowMs - 1 * kDayMs);        // recent
  WriteAt(d + "/8.1.stdout", kNowMs - 30 * kDayMs);       // old, but the run goes on
  WriteAt(d + "/notes.txt", kNowMs - 90 * kDayMs);        // not a job log
  WriteAt(d + "/9.x.stdout", kNowMs - 90 * kDayMs);       // not a job log's name
  WriteAt(d + "/10.1.stdout.bak", kNowMs - 90 * kDayMs);  // nor this

  const PruneResult r = PruneLogs(d, kNowMs, 14 * kDayMs, [](int64_t job, int64_t attempt) {
    return job == 8 && attempt == 1;
  });
  EXPECT_EQ(r.files, 2);
  EXPECT_EQ(r.bytes, 105);
  namespace fs = std::filesystem;
  EXPECT_FALSE(fs::exists(d + "/7.1.stdout"));
  EXPECT_FALSE(fs::exists(d + "/7.1.stderr"));
  for (const char* kept :
       {"7.2.stdout", "8.1.stdout", "notes.txt", "9.x.stdout", "10.1.stdout.bak"})
    EXPECT_TRUE(fs::exists(d + "/" + kept)) << kept;
}

TEST(PruneLogs, AMissingFolderRemovesNothing) {
  const PruneResult r = PruneLogs("/nonexistent/hourglass/logs", kNowMs, kDayMs,
                                  [](int64_t, int64_t) { return false; });
  EXPECT_EQ(r.files, 0);
}

}  // namespace
}  // namespace hg::agent
