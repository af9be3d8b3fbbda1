// An exclusive lock on a file, held for the object's lifetime: the SQLite store's "one server per
// database", as PostgreSQL's advisory lock is the PostgreSQL store's.
//
// It is flock(2) on a file of its own beside the database: the kernel drops it when the holder's
// last descriptor closes, so a server killed with SIGKILL leaves no stale lock behind, and it does
// not mix with the POSIX locks SQLite takes on the database file itself.
#pragma once

#include <string>

#include "core/error.h"

namespace hg::store {

class FileLock {
 public:
  // Creates `path` (0600) when missing and locks it. A lock another process (or another FileLock
  // of this one) holds is refused at once, with `held_reason` as the error's reason.
  static Result<FileLock> TryLock(const std::string& path, const std::string& held_reason);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace hg::store
