// Versioned schema migrations. The database records its version in `schema_version`; step i of
// the list brings version i to i+1 and is applied in its own transaction together with the new
// version number, so a crash leaves the database at one version or the next, never between.
// Steps are append-only: never edit a released step, add a new one.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "store/sqlite.h"

namespace hg::store {

// The SQL of each step, oldest first. Version N means steps [0, N) have been applied.
const std::vector<std::string>& SchemaSteps();
inline int LatestSchemaVersion() { return static_cast<int>(SchemaSteps().size()); }

// The version recorded in the database (0 for a new, empty database).
Result<int> SchemaVersion(sql::Db& db);

// Applies the missing steps of `steps` (SchemaSteps() in production; tests pass their own).
// Refuses a database whose version is newer than steps.size(): an older binary must not write a
// schema it does not know. Returns the version reached.
Result<int> Migrate(sql::Db& db, const std::vector<std::string>& steps);
inline Result<int> Migrate(sql::Db& db) { return Migrate(db, SchemaSteps()); }

}  // namespace hg::store
