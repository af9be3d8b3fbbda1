#include "tls/tls_certificates.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "tls/test_certs.h"

namespace hg::tls {
namespace {

class TlsCertificatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(certs_.Make("site") && certs_.Make("renewed") && certs_.Make("other"))
        << "openssl could not make the test certificates";
    // The files the listener is configured with start as a copy of site's.
    TestCerts::Replace(certs_.Cert("site"), certs_.Cert("live"));
    TestCerts::Replace(certs_.Key("site"), certs_.Key("live"));
  }
  Result<std::unique_ptr<TlsCertificates>> LoadLive() {
    return TlsCertificates::Load(certs_.Cert("live"), certs_.Key("live"), "--tls-cert",
                                 "--tls-key");
  }
  TestCerts certs_;
};

TEST_F(TlsCertificatesTest, LoadNamesTheFlagAndTheReasonOfEachBadPair) {
  struct Case {
    std::string cert, key, field, says;
  };
  const std::vector<Case> cases{
      {certs_.Cert("none"), certs_.Key("site"), "--tls-cert", "cannot read"},
      {certs_.Key("site"), certs_.Key("site"), "--tls-cert", "holds no PEM certificate"},
      {certs_.Cert("site"), certs_.Key("none"), "--tls-key", "cannot read"},
      {certs_.Cert("site"), certs_.Cert("site"), "--tls-key", "holds no PEM private key"},
      {certs_.Cert("site"), certs_.Key("other"), "--tls-cert", "does not go with the private key"},
  };
  for (const Case& c : cases) {
    auto loaded = TlsCertificates::Load(c.cert, c.key, "--tls-cert", "--tls-key");
    ASSERT_FALSE(loaded) << c.cert << " " << c.key;
    EXPECT_EQ(loaded.error().field, c.field) << loaded.error().ToString();
    EXPECT_NE(loaded.error().reason.find(c.says), std::string::npos) << loaded.error().ToString();
  }
  auto good = TlsCertificates::Load(certs_.Cert("site"), certs_.Key("site"), "a", "b");
  ASSERT_TRUE(good) << good.error().ToString();
  EXPECT_NE((*good)->Describe().find("CN=site, valid until 20"), std::string::npos)
      << (*good)->Describe();
}

TEST_F(TlsCertificatesTest, ReadsThePairAgainOnlyWhenItsFilesChange) {
  auto c = LoadLive();
  ASSERT_TRUE(c) << c.error().ToString();
  TlsCertificates& live = **c;
  auto same = live.ReloadIfChanged();
  ASSERT_TRUE(same);
  EXPECT_FALSE(*same);
  TestCerts::Replace(certs_.Cert("renewed"), certs_.Cert("live"));
  TestCerts::Replace(certs_.Key("renewed"), certs_.Key("live"));
  auto renewed = live.ReloadIfChanged();
  ASSERT_TRUE(renewed) << renewed.error().ToString();
  EXPECT_TRUE(*renewed);
  EXPECT_NE(live.Describe().find("CN=renewed"), std::string::npos) << live.Describe();
  auto again = live.ReloadIfChanged();
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
}

// A renewal writes the certificate and the key one after the other: between the two the files do
// not make a pair. The pair served stays, the error is told once, and the pair is taken once the
// key follows.
TEST_F(TlsCertificatesTest, AHalfWrittenRenewalKeepsThePairServedAndIsToldOnce) {
  auto c = LoadLive();
  ASSERT_TRUE(c) << c.error().ToString();
  TlsCertificates& live = **c;
  TestCerts::Replace(certs_.Cert("renewed"), certs_.Cert("live"));
  auto half = live.ReloadIfChanged();
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().field, "--tls-cert");
  EXPECT_NE(half.error().reason.find("does not go with"), std::string::npos);
  EXPECT_NE(live.Describe().find("CN=site"), std::string::npos) << live.Describe();
  auto told = live.ReloadIfChanged();
  ASSERT_TRUE(told) << told.error().ToString();
  EXPECT_FALSE(*told);
  TestCerts::Replace(certs_.Key("renewed"), certs_.Key("live"));
  auto whole = live.ReloadIfChanged();
  ASSERT_TRUE(whole) << whole.error().ToString();
  EXPECT_TRUE(*whole);
  EXPECT_NE(live.Describe().find("CN=renewed"), std::string::npos) << live.Describe();
}

// Over real HTTPS: a client that trusts only the renewed certificate is refused until the
// listener has read it, and served after, with no restart; one that trusts only the old
// certificate is refused from then on.
TEST_F(TlsCertificatesTest, AListenerServesTheRenewedCertificateWithoutARestart) {
  auto c = LoadLive();
  ASSERT_TRUE(c) << c.error().ToString();
  TlsCertificates& live = **c;
  httplib::SSLServer server(certs_.Cert("live").c_str(), certs_.Key("live").c_str());
  ASSERT_TRUE(server.is_valid());
  live.ServeOn(server.ssl_context());
  server.Get("/ping", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("pong", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread listening([&] { server.listen_after_bind(); });
  auto get = [&](const std::string& ca) {
    httplib::Client client("https://127.0.0.1:" + std::to_string(port));
    client.set_ca_cert_path(ca.c_str());
    client.set_connection_timeout(5, 0);
    auto res = client.Get("/ping");
    return res && res->status == 200 && res->body == "pong";
  };
  EXPECT_TRUE(get(certs_.Cert("site")));
  EXPECT_FALSE(get(certs_.Cert("renewed")));
  TestCerts::Replace(certs_.Cert("renewed"), certs_.Cert("live"));
  TestCerts::Replace(certs_.Key("renewed"), certs_.Key("live"));
  EXPECT_FALSE(get(certs_.Cert("renewed"))) << "served before the listener read the files";
  auto reloaded = live.ReloadIfChanged();
  ASSERT_TRUE(reloaded) << reloaded.error().ToString();
  EXPECT_TRUE(*reloaded);
  EXPECT_TRUE(get(certs_.Cert("renewed")));
  EXPECT_FALSE(get(certs_.Cert("site")));
  server.stop();
  listening.join();
}

}  // namespace
}  // namespace hg::tls
