// The PostgreSQL store's schema and its migrations. Its versions are the SQLite schema's
// (migrations.h): version N holds the same tables and columns in either database, written in
// each one's dialect. Steps are append-only, as there.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "store/pg.h"

namespace hg::store {

// The SQL of each step, oldest first. Version N means steps [0, N) have been applied.
const std::vector<std::string>& PgSchemaSteps();

// The version recorded in the database (0 for an empty one).
Result<int> PgSchemaVersion(pg::Conn& db);

// Applies the missing steps of `steps` in one transaction, under an advisory lock so that server
// replicas opening one database together apply each step once. Refuses a database newer than
// steps.size(). Returns the version reached.
Result<int> PgMigrate(pg::Conn& db, const std::vector<std::string>& steps);
inline Result<int> PgMigrate(pg::Conn& db) { return PgMigrate(db, PgSchemaSteps()); }

}  // namespace hg::store
