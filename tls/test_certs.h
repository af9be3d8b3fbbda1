// Certificates for tests: self-signed, for 127.0.0.1 and localhost, each its own CA, made with the
// openssl command in a temporary folder that goes with the object.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace hg::tls {

class TestCerts {
 public:
  TestCerts() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hg-certs-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) dir_ = tmpl;
  }
  ~TestCerts() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  TestCerts(const TestCerts&) = delete;
  TestCerts& operator=(const TestCerts&) = delete;

  // Writes <name>.pem and <name>.key (a P-256 key: fast to make) with CN=<name>.
  bool Make(const std::string& name) const {
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-subj /CN=" +
        name + " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + Key(name) +
        " -out " + Cert(name) + " > /dev/null 2>&1";
    return !dir_.empty() && std::system(cmd.c_str()) == 0;
  }
  std::string Cert(const std::string& name) const { return dir_ + "/" + name + ".pem"; }
  std::string Key(const std::string& name) const { return dir_ + "/" + name + ".key"; }
  const std::string& dir() const { return dir_; }

  // Puts file `from` where `to` is, as a renewal does: a new file renamed over the old one.
  static void Replace(const std::string& from, const std::string& to) {
    std::filesystem::copy_file(from, to + ".new",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(to + ".new", to);
  }

 private:
  std::string dir_;
};

}  // namespace hg::tls
