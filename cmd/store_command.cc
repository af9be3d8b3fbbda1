#include "cmd/store_command.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "store/copy.h"
#include "store/pg_store.h"
#include "store/sqlite_backup.h"
#include "store/sqlite_store.h"

namespace hg::cmd {
namespace {

namespace fs = std::filesystem;

struct Args {
  std::string from_data, from_database, to_data, to_database;
};

struct BackupArgs {
  std::string data, to;
};

int Fail(const std::string& what, const char* sub = "copy") {
  std::fprintf(stderr, "hourglass store %s: %s\n", sub, what.c_str());
  return 2;
}

std::string DbFile(const std::string& dir) { return dir + "/hourglass.db"; }

// Both ends are opened as a server opens them (exclusive): the copy is refused while a server
// runs on either, and no server starts on either until it is done.
Result<std::unique_ptr<store::Store>> OpenEnd(const std::string& data,
                                              const std::string& database) {
  if (!database.empty()) {
    store::PgStoreOptions o;
    o.connections = 1;
    o.exclusive = true;
    return store::OpenPgStore(database, o);
  }
  store::SqliteStoreOptions o;
  o.exclusive = true;
  return store::OpenSqliteStore(DbFile(data), o);
}

// A SQLite file the copy created and did not fill goes again: a refused copy changes nothing.
void RemoveCreated(const std::string& dir) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) fs::remove(DbFile(dir) + suffix, ec);
}

int Run(const Args& a) {
  const bool from_sqlite = !a.from_data.empty();
  const bool to_sqlite = !a.to_data.empty();
  if (from_sqlite == !a.from_database.empty())
    return Fail("give the source as exactly one of --from-data DIR and --from-database CONNINFO");
  if (to_sqlite == !a.to_database.empty())
    return Fail("give the target as exactly one of --to-data DIR and --to-database CONNINFO");
  std::error_code ec;
  if (from_sqlite && to_sqlite &&
      fs::weakly_canonical(a.from_data, ec) == fs::weakly_canonical(a.to_data, ec))
    return Fail("--to-data: the same folder as --from-data");
  if (!from_sqlite && !to_sqlite && a.from_database == a.to_database)
    return Fail("--to-database: the same database as --from-database");
  if (from_sqlite && !fs::exists(DbFile(a.from_data)))
    return Fail("--from-data: no hourglass.db in " + a.from_data);

  const auto began = std::chrono::steady_clock::now();
  auto from = OpenEnd(a.from_data, a.from_database);
  if (!from) return Fail("the source: " + from.error().ToString());
  bool created = false;
  if (to_sqlite) {
    fs::create_directories(a.to_data, ec);
    if (ec) return Fail("--to-data: cannot create " + a.to_data + ": " + ec.message());
    created = !fs::exists(DbFile(a.to_data));
  }
  auto to = OpenEnd(a.to_data, a.to_database);
  if (!to) {
    if (created) RemoveCreated(a.to_data);
    return Fail("the target: " + to.error().ToString());
  }
  auto copied = store::CopyStore(**from, **to);
  to->reset();
  if (!copied) {
    if (created) RemoveCreated(a.to_data);
    return Fail(copied.error().ToString());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const std::string source = from_sqlite ? DbFile(a.from_data) : "the PostgreSQL database";
  const std::string target = to_sqlite ? DbFile(a.to_data) : "the PostgreSQL database";
  std::printf("copied %s from %s to %s in %.1f s; read back equal\n", copied->Summary().c_str(),
              source.c_str(), target.c_str(), seconds);

  // The admin token's plain text lives in the server's --data, not in the store.
  const std::string token = from_sqlite ? a.from_data + "/admin.token" : "";
  if (!token.empty() && fs::exists(token)) {
    if (to_sqlite && !fs::exists(a.to_data + "/admin.token")) {
      fs::copy_file(token, a.to_data + "/admin.token", ec);
      if (ec) return Fail("cannot copy " + token + " to " + a.to_data + ": " + ec.message());
      std::printf("copied %s beside it\n", token.c_str());
    } else if (!to_sqlite) {
      std::printf(
          "the admin token stays in %s: start the server on PostgreSQL with --data %s, "
          "or copy that file into its --data\n",
          token.c_str(), a.from_data.c_str());
    }
  } else if (to_sqlite && !fs::exists(a.to_data + "/admin.token")) {
    std::printf("copy admin.token from the old server's --data into %s\n", a.to_data.c_str());
  }
  return 0;
}

int RunBackup(const BackupArgs& a) {
  const auto began = std::chrono::steady_clock::now();
  if (!fs::exists(DbFile(a.data))) return Fail("--data: no hourglass.db in " + a.data, "backup");
  auto jobs = store::BackupSqlite(DbFile(a.data), a.to);
  if (!jobs) return Fail(jobs.error().ToString(), "backup");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::error_code ec;
  std::printf(
      "backed up %s to %s (%lld jobs, %lld bytes) in %.1f s; to restore, give a new server a "
      "--data holding it as hourglass.db, with %s/admin.token\n",
      DbFile(a.data).c_str(), a.to.c_str(), static_cast<long long>(*jobs),
      static_cast<long long>(fs::file_size(a.to, ec)), seconds, a.data.c_str());
  return 0;
}

}  // namespace

void AddStoreCommand(CLI::App& app, int& exit_code) {
  CLI::App* group = app.add_subcommand("store", "the server's durable state");
  group->require_subcommand(1);
  auto args = std::make_shared<Args>();
  CLI::App* copy = group->add_subcommand(
      "copy",
      "copy a site's whole state (jobs with their ids and history, budgets and audit, tokens, "
      "nodes) into a new, empty store, with no server running on either; e.g. from SQLite to "
      "PostgreSQL");
  copy->add_option("--from-data", args->from_data, "the source: a server's --data (SQLite)");
  copy->add_option("--from-database", args->from_database,
                   "the source: a PostgreSQL connection string or postgresql:// URL");
  copy->add_option("--to-data", args->to_data,
                   "the target: a --data folder for the new server (SQLite; created if missing)");
  copy->add_option("--to-database", args->to_database,
                   "the target: a PostgreSQL connection string or URL (an empty database)");
  copy->callback([args, &exit_code] { exit_code = Run(*args); });

  auto backup_args = std::make_shared<BackupArgs>();
  CLI::App* backup = group->add_subcommand(
      "backup",
      "write a consistent copy of a SQLite store to a new file, while its server runs (on "
      "PostgreSQL use pg_dump)");
  backup->add_option("--data", backup_args->data, "the server's --data")->required();
  backup->add_option("--to", backup_args->to, "the new file (never overwritten)")->required();
  backup->callback([backup_args, &exit_code] { exit_code = RunBackup(*backup_args); });
}

}  // namespace hg::cmd
