#include "tls/tls_certificates.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <ctime>

namespace hg::tls {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct ChainFree {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

}  // namespace

struct TlsCertificates::Pair {
  std::unique_ptr<X509, X509Free> cert;
  std::unique_ptr<EVP_PKEY, KeyFree> key;
  std::unique_ptr<STACK_OF(X509), ChainFree> chain;  // the certificates after the first
};

TlsCertificates::~TlsCertificates() = default;

Result<std::unique_ptr<TlsCertificates>> TlsCertificates::Load(std::string cert_path,
                                                               std::string key_path,
                                                               std::string cert_field,
                                                               std::string key_field) {
  std::unique_ptr<TlsCertificates> c(new TlsCertificates());
  c->cert_path_ = std::move(cert_path);
  c->key_path_ = std::move(key_path);
  c->cert_field_ = std::move(cert_field);
  c->key_field_ = std::move(key_field);
  c->cert_seen_ = StampOf(c->cert_path_);
  c->key_seen_ = StampOf(c->key_path_);
  auto pair = Read(*c);
  if (!pair) return tl::unexpected(pair.error());
  c->current_ = std::move(*pair);
  return c;
}

TlsCertificates::Stamp TlsCertificates::StampOf(const std::string& path) {
  struct stat st {};
  // stat follows symbolic links: a renewal that repoints one (certbot's live/ folder) changes the
  // inode seen here.
  if (::stat(path.c_str(), &st) != 0) return Stamp{};
  return Stamp{true,
               static_cast<unsigned long>(st.st_dev),
               static_cast<unsigned long>(st.st_ino),
               static_cast<long long>(st.st_size),
               static_cast<long long>(st.st_mtim.tv_sec),
               static_cast<long long>(st.st_mtim.tv_nsec)};
}

Result<std::shared_ptr<const TlsCertificates::Pair>> TlsCertificates::Read(
    const TlsCertificates& f) {
  // OpenSSL reports failures on a per-thread queue that the listener's own calls read later;
  // whatever this read leaves there is cleared on every path out.
  struct ClearErrors {
    ~ClearErrors() { ERR_clear_error(); }
  } clear;
  auto pair = std::make_shared<Pair>();
  Bio cert_bio(BIO_new_file(f.cert_path_.c_str(), "r"));
  if (!cert_bio) return Fail(f.cert_field_, "cannot read " + f.cert_path_);
  pair->cert.reset(PEM_read_bio_X509_AUX(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!pair->cert) return Fail(f.cert_field_, f.cert_path_ + " holds no PEM certificate");
  pair->chain.reset(sk_X509_new_null());
  while (X509* more = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) {
    if (sk_X509_push(pair->chain.get(), more) == 0) {
      X509_free(more);
      return Fail(f.cert_field_, "out of memory reading " + f.cert_path_);
    }
  }
  Bio key_bio(BIO_new_file(f.key_path_.c_str(), "r"));
  if (!key_bio) return Fail(f.key_field_, "cannot read " + f.key_path_);
  pair->key.reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!pair->key)
    return Fail(f.key_field_, f.key_path_ + " holds no PEM private key (or one with a passphrase)");
  if (X509_check_private_key(pair->cert.get(), pair->key.get()) != 1)
    return Fail(f.cert_field_, "the certificate in " + f.cert_path_ +
                                   " does not go with the private key in " + f.key_path_ + " (" +
                                   f.key_field_ + ")");
  return std::shared_ptr<const Pair>(std::move(pair));
}

std::shared_ptr<const TlsCertificates::Pair> TlsCertificates::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

int TlsCertificates::OnCertificate(SSL* ssl, void* self) {
  const std::shared_ptr<const Pair> p = static_cast<TlsCertificates*>(self)->Current();
  // The connection takes its own references to the certificate, key and chain, so a reload
  // during the handshake frees nothing it uses.
  return SSL_use_cert_and_key(ssl, p->cert.get(), p->key.get(), p->chain.get(), 1) == 1 ? 1 : 0;
}

void TlsCertificates::ServeOn(SSL_CTX* ctx) { SSL_CTX_set_cert_cb(ctx, &OnCertificate, this); }

Result<bool> TlsCertificates::ReloadIfChanged() {
  const Stamp cert = StampOf(cert_path_);
  const Stamp key = StampOf(key_path_);
  if (cert == cert_seen_ && key == key_seen_) return false;
  cert_seen_ = cert;
  key_seen_ = key;
  auto pair = Read(*this);
  if (!pair) return tl::unexpected(pair.error());
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(*pair);
  return true;
}

std::string TlsCertificates::Describe() const {
  const std::shared_ptr<const Pair> p = Current();
  std::string out = "CN=";
  char cn[256] = {0};
  if (X509_NAME_get_text_by_NID(X509_get_subject_name(p->cert.get()), NID_commonName, cn,
                                sizeof cn) > 0)
    out += cn;
  else
    out += "(none)";
  std::tm until{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(p->cert.get()), &until) == 1) {
    char when[64];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &until);
    out += ", valid until ";
    out += when;
  }
  ERR_clear_error();
  return out;
}

void ReloadAndLog(TlsCertificates& certs, std::string_view listener) {
  auto changed = certs.ReloadIfChanged();
  if (!changed)
    spdlog::error("{}: renewed HTTPS certificate not taken, still serving {}: {}", listener,
                  certs.Describe(), changed.error().ToString());
  else if (*changed)
    spdlog::info("{}: HTTPS certificate read again, now serving {}", listener, certs.Describe());
}

}  // namespace hg::tls
