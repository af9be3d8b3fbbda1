#include "store/sqlite_backup.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "store/columns.h"
#include "store/sqlite.h"

namespace hg::store {
namespace {

namespace fs = std::filesystem;

// fsync of a file, or of a folder (so that a new file's name is durable too).
Result<void> SyncPath(const std::string& path, bool folder) {
  const int fd = ::open(path.c_str(), (folder ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return Fail(path, "cannot open it to sync");
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Fail(path, "cannot sync it to disk");
  return {};
}

// After VACUUM INTO made `to`: syncs and checks it; returns its jobs' count.
Result<int64_t> SyncAndCheck(const std::string& to) {
  HG_TRY(SyncPath(to, false));
  const fs::path parent = fs::absolute(fs::path(to)).parent_path();
  HG_TRY(SyncPath(parent.string(), true));
  auto copy = sql::Db::Open(to, SQLITE_OPEN_READONLY);
  HG_TRY(copy);
  auto check = copy->Prepare("PRAGMA integrity_check");
  HG_TRY(check);
  auto row = check->Step();
  HG_TRY(row);
  if (!*row || check->Text(0) != "ok")
    return Fail(to, "the backup fails SQLite's integrity check: " + (*row ? check->Text(0) : ""));
  auto count = copy->Prepare("SELECT count(*) FROM jobs");
  HG_TRY(count);
  row = count->Step();
  HG_TRY(row);
  return *row ? count->Int64(0) : 0;
}

}  // namespace

Result<int64_t> BackupSqlite(const std::string& db_path, const std::string& to) {
  std::error_code ec;
  if (!fs::exists(db_path, ec)) return Fail(db_path, "no such database");
  if (fs::exists(to, ec)) return Fail(to, "exists already; a backup never overwrites a file");
  {
    // Not SQLITE_OPEN_CREATE: a mistyped --data must not make an empty database to back up.
    auto db = sql::Db::Open(db_path, SQLITE_OPEN_READWRITE);
    HG_TRY(db);
    // The server's writer holds the write lock only while it commits; wait for it.
    HG_TRY(db->Exec("PRAGMA busy_timeout = 10000"));
    auto vacuum = db->Prepare("VACUUM INTO ?1");
    HG_TRY(vacuum);
    // VACUUM INTO refuses a file that appeared meanwhile: only what it made is removed below.
    HG_TRY(vacuum->Bind(1, to).Run());
  }
  auto done = SyncAndCheck(to);
  if (!done) fs::remove(to, ec);
  return done;
}

}  // namespace hg::store
