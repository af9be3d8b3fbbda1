// A PostgreSQL server of a test's own: a fresh cluster in a temporary directory, listening on a
// Unix socket only, stopped and removed when the object goes. Starting one takes about a second
// (initdb without fsync, then pg_ctl start), so every test gets a clean database.
//
// PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` account the
// Debian package creates, and the commands run through runuser.
#pragma once

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#ifndef HG_PG_BINDIR
#define HG_PG_BINDIR "/usr/lib/postgresql/15/bin"
#endif

namespace hg::store {

class PgTestServer {
 public:
  PgTestServer() {
    std::string tmpl = "/tmp/hg_pg_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    if (getuid() == 0) {
      const passwd* pw = getpwnam("postgres");
      if (pw == nullptr) {
        error_ = "running as root needs the 'postgres' account (scripts/setup.sh installs it)";
        return;
      }
      if (chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        error_ = "cannot hand " + dir_ + " to postgres";
        return;
      }
      as_ = "runuser -u postgres -- ";
    }
    const std::string bin = HG_PG_BINDIR;
    if (!Run(as_ + bin + "/initdb -D " + dir_ + "/data -A trust -U hourglass --no-sync -E UTF8 " +
             "--locale=C.UTF-8 > " + dir_ + "/initdb.log 2>&1")) {
      error_ = "initdb failed: " + Slurp(dir_ + "/initdb.log");
      return;
    }
    if (!Start()) error_ = "pg_ctl start failed: " + Slurp(dir_ + "/server.log");
  }

  ~PgTestServer() {
    Stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  PgTestServer(const PgTestServer&) = delete;
  PgTestServer& operator=(const PgTestServer&) = delete;

  // Empty when the server runs; otherwise why it does not.
  const std::string& error() const { return error_; }
  // A libpq connection string for the cluster's `postgres` database.
  std::string Conninfo() const { return "host=" + dir_ + " user=hourglass dbname=postgres"; }
  std::string Conninfo(const std::string& db) const {
    return "host=" + dir_ + " user=hourglass dbname=" + db;
  }

  // A new, empty database in the cluster (for a test that needs more than one).
  bool CreateDatabase(const std::string& name) const {
    return Run(std::string(HG_PG_BINDIR) + "/createdb -h " + dir_ + " -U hourglass " + name +
               " > /dev/null 2>&1");
  }

  // Runs one SQL statement with psql, as an operator would; returns whether it succeeded.
  bool Sql(const std::string& statement) const {
    return Run(std::string(HG_PG_BINDIR) + "/psql -h " + dir_ +
               " -U hourglass -d postgres -v ON_ERROR_STOP=1 -q -c \"" + statement +
               "\" > /dev/null 2>&1");
  }

  // The first row's first column of a query run with psql ("" when it fails).
  std::string Query(const std::string& statement) const {
    const std::string cmd = std::string(HG_PG_BINDIR) + "/psql -h " + dir_ +
                            " -U hourglass -d postgres -tA -c \"" + statement + "\" 2>/dev/null";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[256];
      while (fgets(buf, sizeof buf, p)) out += buf;
      pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  // Stops the server at once (no shutdown checkpoint: as after a crash) or cleanly.
  void Stop(bool immediate = true) {
    if (!running_) return;
    Run(as_ + std::string(HG_PG_BINDIR) + "/pg_ctl -D " + dir_ + "/data -m " +
        (immediate ? "immediate" : "fast") + " -w stop > /dev/null 2>&1");
    running_ = false;
  }
  bool Start() {
    if (running_) return true;
    running_ =
        Run(as_ + std::string(HG_PG_BINDIR) + "/pg_ctl -D " + dir_ + "/data -o \"-k " + dir_ +
            " -c listen_addresses=''\" -w -t 60 -l " + dir_ + "/server.log start > /dev/null");
    return running_;
  }

 private:
  static bool Run(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
  std::string as_;
  std::string error_;
  bool running_ = false;
};

}  // namespace hg::store
