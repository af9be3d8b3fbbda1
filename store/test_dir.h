// A fresh directory under /tmp for one test's SQLite files, removed afterwards.
#pragma once

#include <stdlib.h>

#include <cassert>
#include <filesystem>
#include <string>

namespace hg::store {

class TestDir {
 public:
  TestDir() {
    std::string tmpl = "/tmp/hg_store_XXXXXX";
    const char* made = mkdtemp(tmpl.data());
    assert(made != nullptr);
    path_ = made ? made : "";
  }
  ~TestDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace hg::store
