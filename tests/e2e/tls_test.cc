// HTTPS, as a site deploys it so that tokens never cross the network in clear: the server serves
// only HTTPS with its certificate, agents and the CLI check that certificate against the site's
// CA file, and a client that cannot check it (another CA, plain HTTP) gets nothing.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/e2e/cluster.h"
#include "tls/test_certs.h"

namespace hg::e2e {
namespace {

using namespace std::chrono_literals;

// The site's certificate and another site's.
class Certs : public tls::TestCerts {
 public:
  Certs() { ok_ = Make("site") && Make("other"); }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

TEST(E2eTls, AgentsAndTheCliWorkOverHttpsAndUncheckedClientsGetNothing) {
  Certs certs;
  ASSERT_TRUE(certs.ok()) << "openssl could not make the test certificates";
  Cluster c(200, 3,
            {"--tls-cert", certs.Cert("site"), "--tls-key", certs.Key("site"), "--agents-ca-file",
             certs.Cert("site")},
            certs.Cert("site"));
  EXPECT_NE(c.ServerOutput().find("listening on https://"), std::string::npos) << c.ServerOutput();
  // Registers and heartbeats over HTTPS, checking the certificate, and serves its logs over
  // HTTPS, which the server checks in turn.
  AgentOptions n1 = Node("n1", 2);
  n1.extra_args = {"--logs-tls-cert", certs.Cert("site"), "--logs-tls-key", certs.Key("site")};
  c.AddAgent(n1);
  const std::string alice = c.AddPrincipal("alice", "user");
  const int64_t id =
      c.Submit(Json{{"gpus", 1}, {"command", {"echo", "over tls"}}, {"cwd", c.dir()}}, alice);
  ASSERT_TRUE(c.WaitState(id, "succeeded")) << c.Job(id).dump();
  auto [rc, out] = c.Cli({"show", std::to_string(id)}, alice);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("succeeded"), std::string::npos) << out;
  auto [logs_rc, logs] = c.Cli({"logs", std::to_string(id)}, alice);
  EXPECT_EQ(logs_rc, 0) << logs;
  EXPECT_NE(logs.find("over tls"), std::string::npos) << logs;

  // An agent whose log service is plain HTTP is not sent its token: its logs are refused, with
  // what to do.
  c.StopAgent("n1");
  ASSERT_TRUE(WaitFor([&] {
    const Response nodes = c.Admin("GET", "/v1/nodes");
    for (const Json& n : nodes.body["nodes"])
      if (n["name"] == "n1") return n["state"] == "lost";
    return false;
  }));
  c.AddAgent(Node("n2", 2));
  const int64_t plain_logs =
      c.Submit(Json{{"gpus", 1}, {"command", {"echo", "in clear"}}, {"cwd", c.dir()}}, alice);
  ASSERT_TRUE(c.WaitState(plain_logs, "succeeded")) << c.Job(plain_logs).dump();
  const Response refused_logs =
      c.Call("GET", "/v1/jobs/" + std::to_string(plain_logs) + "/logs", std::nullopt, alice);
  EXPECT_EQ(refused_logs.status, 502) << refused_logs.raw;
  EXPECT_NE(refused_logs.raw.find("--logs-tls-cert"), std::string::npos) << refused_logs.raw;

  // Plain HTTP to the HTTPS port: no answer.
  httplib::Client plain("http://127.0.0.1:" + std::to_string(c.port()));
  plain.set_connection_timeout(2, 0);
  plain.set_read_timeout(2, 0);
  auto res = plain.Get("/healthz");
  EXPECT_TRUE(!res || res->status != 200);
  // A client that checks against another CA refuses the server.
  httplib::Client other(c.url());
  other.set_ca_cert_path(certs.Cert("other"));
  auto refused = other.Get("/healthz");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), httplib::Error::SSLServerVerification);
  const std::string cli_out = certs.dir() + "/cli.out";
  const std::string cmd = "HOURGLASS_URL=" + c.url() + " HOURGLASS_TOKEN=" + alice +
                          " HOURGLASS_CA_FILE=" + certs.Cert("other") + " " + HOURGLASS_BIN +
                          " jobs > " + cli_out + " 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE(ReadFile(cli_out).find("TLS handshake failed"), std::string::npos) << ReadFile(cli_out);
}

// Whether a client that trusts only `ca` gets an answer from the server.
bool Trusted(const Cluster& c, const std::string& ca) {
  httplib::Client client(c.url());
  client.set_ca_cert_path(ca.c_str());
  client.set_connection_timeout(5, 0);
  auto res = client.Get("/healthz");
  return res && res->status == 200;
}

// A certificate renewed in place (its files replaced, as certbot or a site's CA tooling does) is
// served without a restart; a renewal caught half written (a new certificate beside the old key)
// is refused with a log line, and the old pair kept until the key follows.
TEST(E2eTls, ARenewedCertificateIsServedWithoutARestart) {
  Certs certs;
  ASSERT_TRUE(certs.ok() && certs.Make("renewed")) << "openssl could not make the certificates";
  tls::TestCerts::Replace(certs.Cert("site"), certs.Cert("live"));
  tls::TestCerts::Replace(certs.Key("site"), certs.Key("live"));
  // The cluster's own clients (agents, the CLI, the test's calls) trust both, as a site's clients
  // trust its CA whichever certificate it signed.
  const std::string both = certs.dir() + "/both.pem";
  {
    std::ofstream out(both);
    out << ReadFile(certs.Cert("site")) << ReadFile(certs.Cert("renewed"));
  }
  Cluster c(200, 3, {"--tls-cert", certs.Cert("live"), "--tls-key", certs.Key("live")}, both);
  c.AddAgent(Node("n1", 1));
  const std::string alice = c.AddPrincipal("alice", "user");
  ASSERT_TRUE(Trusted(c, certs.Cert("site")));
  ASSERT_FALSE(Trusted(c, certs.Cert("renewed")));

  tls::TestCerts::Replace(certs.Cert("renewed"), certs.Cert("live"));
  ASSERT_TRUE(WaitFor([&] {
    return c.ServerOutput().find("renewed HTTPS certificate not taken") != std::string::npos;
  })) << c.ServerOutput();
  EXPECT_NE(c.ServerOutput().find("--tls-cert: the certificate in " + certs.Cert("live") +
                                  " does not go with the private key"),
            std::string::npos)
      << c.ServerOutput();
  EXPECT_TRUE(Trusted(c, certs.Cert("site")));
  EXPECT_FALSE(Trusted(c, certs.Cert("renewed")));

  tls::TestCerts::Replace(certs.Key("renewed"), certs.Key("live"));
  ASSERT_TRUE(WaitFor([&] { return Trusted(c, certs.Cert("renewed")); })) << c.ServerOutput();
  EXPECT_FALSE(Trusted(c, certs.Cert("site")));
  EXPECT_NE(c.ServerOutput().find("now serving CN=renewed"), std::string::npos) << c.ServerOutput();
  // The server was not restarted: work goes on as before.
  const int64_t id =
      c.Submit(Json{{"gpus", 1}, {"command", {"echo", "renewed"}}, {"cwd", c.dir()}}, alice);
  EXPECT_TRUE(c.WaitState(id, "succeeded")) << c.Job(id).dump();
  EXPECT_EQ(c.ServerProcess().running(), true);
}

// A certificate that does not go with its key, or half of the pair, is refused at start with the
// flag named, before the store is opened.
TEST(E2eTls, AServerWithABadCertificatePairDoesNotStart) {
  Certs certs;
  ASSERT_TRUE(certs.ok()) << "openssl could not make the test certificates";
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  const std::vector<Case> cases{
      {{"--tls-cert", certs.Cert("site"), "--tls-key", certs.Key("other")}, "--tls-cert"},
      {{"--tls-cert", certs.Cert("site")}, "--tls-key: HTTPS needs both"},
      {{"--tls-cert", certs.dir() + "/none.pem", "--tls-key", certs.Key("site")},
       "--tls-cert: cannot read"},
  };
  int n = 0;
  for (const Case& k : cases) {
    const std::string data = certs.dir() + "/data" + std::to_string(++n);
    std::vector<std::string> argv{HOURGLASS_BIN, "server",   "--data",
                                  data,          "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), k.flags.begin(), k.flags.end());
    Process server(argv, data + "-run");
    ASSERT_TRUE(WaitFor([&] { return !server.running(); }, 10s)) << server.Output();
    EXPECT_TRUE(WIFEXITED(server.status()) && WEXITSTATUS(server.status()) == 2) << server.Output();
    EXPECT_NE(server.Output().find(k.says), std::string::npos) << server.Output();
    EXPECT_FALSE(FileExists(data + "/hourglass.db")) << server.Output();
  }
}

}  // namespace
}  // namespace hg::e2e
