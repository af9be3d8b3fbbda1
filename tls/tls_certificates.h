#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hg::tls {

// A listener's certificate (with its chain) and private key, read from two PEM files and read
// again when either file changes. A certificate is renewed in place (certbot, cert-manager, a
// site's own CA every few weeks); without this the server and every agent's log service kept
// serving the old one until they were restarted, and clients refused them once it expired.
// Every new handshake is served the pair current at its start (ServeOn); connections already
// open keep theirs.
class TlsCertificates {
 public:
  // Reads the pair. Errors name `cert_field` or `key_field` (the flags that gave the paths).
  static Result<std::unique_ptr<TlsCertificates>> Load(std::string cert_path, std::string key_path,
                                                       std::string cert_field,
                                                       std::string key_field);
  ~TlsCertificates();
  TlsCertificates(const TlsCertificates&) = delete;
  TlsCertificates& operator=(const TlsCertificates&) = delete;

  // Serves the current pair in every handshake on `ctx` from now on. This object must outlive
  // every handshake on `ctx`.
  void ServeOn(SSL_CTX* ctx);

  // Reads the files again if either changed (inode, size or modification time) since they were
  // last read. True: a new pair is served from the next handshake on. An error: the changed files
  // do not hold a certificate and its private key (a renewal half written, a key that belongs to
  // another certificate); the pair served stays, and the error is reported once per change of
  // the files, not on every call.
  Result<bool> ReloadIfChanged();

  // "CN=name, valid until 2026-12-09 10:00:00 UTC": what a log line says of the pair served.
  std::string Describe() const;

 private:
  struct Pair;
  struct Stamp {
    bool ok = false;
    unsigned long dev = 0, ino = 0;
    long long size = 0, mtime_s = 0, mtime_ns = 0;
    friend bool operator==(const Stamp&, const Stamp&) = default;
  };
  TlsCertificates() = default;
  static Stamp StampOf(const std::string& path);
  static Result<std::shared_ptr<const Pair>> Read(const TlsCertificates& files);
  std::shared_ptr<const Pair> Current() const;
  static int OnCertificate(SSL* ssl, void* self);

  std::string cert_path_, key_path_, cert_field_, key_field_;
  Stamp cert_seen_, key_seen_;  // the files as last read, whether or not they held a pair
  mutable std::mutex mu_;       // guards current_: handshakes run on the listener's workers
  std::shared_ptr<const Pair> current_;
};

// ReloadIfChanged, with a log line for an operator: what `listener` serves now, or why the
// renewed files were not taken.
void ReloadAndLog(TlsCertificates& certs, std::string_view listener);

}  // namespace hg::tls
