// An online backup of the SQLite store: a consistent copy of the database as of one moment, taken
// while the server runs and writes (SQLite's VACUUM INTO, on a connection of its own beside the
// server's, which WAL lets read while the writer commits). The PostgreSQL store is backed up with
// PostgreSQL's own tools (pg_dump, base backups), which the site already runs.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"

namespace hg::store {

// Writes the database at `db_path` to the new file `to` (refused if it exists: a backup never
// overwrites), syncs it to disk, and checks it (PRAGMA integrity_check). A failed backup leaves
// no file behind. Returns how many jobs the backup holds.
Result<int64_t> BackupSqlite(const std::string& db_path, const std::string& to);

}  // namespace hg::store
