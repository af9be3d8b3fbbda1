#include "cli/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hg::cli {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hg_cli_config_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(ConfigTest, DefaultsWithoutEnvironmentOrFile) {
  const auto c = ResolveConfig({{"HOME", dir_}});
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->url, kDefaultUrl);
  EXPECT_EQ(c->token, "");
  EXPECT_EQ(c->config_file, "");
}

TEST_F(ConfigTest, HomeFileIsRead) {
  Write(".hourglass", "# my cluster\nurl = http://gpu-head:8080/\n\ntoken=hg_home\n");
  const auto c = ResolveConfig({{"HOME", dir_}});
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->url, "http://gpu-head:8080");  // trailing slash dropped
  EXPECT_EQ(c->token, "hg_home");
  EXPECT_EQ(c->config_file, dir_ + "/.hourglass");
}

TEST_F(ConfigTest, EnvironmentWinsOverTheFilePerField) {
  Write(".hourglass", "url=http://from-file:1\ntoken=hg_file\n");
  auto c = ResolveConfig({{"HOME", dir_}, {"HOURGLASS_TOKEN", "hg_env"}});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->url, "http://from-file:1");
  EXPECT_EQ(c->token, "hg_env");
  c = ResolveConfig({{"HOME", dir_}, {"HOURGLASS_URL", "http://from-env:2"}});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->url, "http://from-env:2");
  EXPECT_EQ(c->token, "hg_file");
  // An empty variable counts as unset (`HOURGLASS_TOKEN= hourglass ...`).
  c = ResolveConfig({{"HOME", dir_}, {"HOURGLASS_TOKEN", ""}});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->token, "hg_file");
}

TEST_F(ConfigTest, HourglassConfigReplacesTheHomeFile) {
  Write(".hourglass", "url=http://home:1\ntoken=hg_home\n");
  const std::string other = Write("other.conf", "url = \"http://other:3\"\n");
  const auto c = ResolveConfig({{"HOME", dir_}, {"HOURGLASS_CONFIG", other}});
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->url, "http://other:3");  // quotes removed
  EXPECT_EQ(c->token, "");              // the home file is not read at all
}

TEST_F(ConfigTest, MissingNamedFileIsAnError) {
  const auto c = ResolveConfig({{"HOURGLASS_CONFIG", dir_ + "/nope"}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().field, "HOURGLASS_CONFIG");
  EXPECT_NE(c.error().reason.find(dir_ + "/nope"), std::string::npos);
}

TEST_F(ConfigTest, FileErrorsNameFileLineAndKey) {
  const std::string path = Write("bad.conf", "url=http://x:1\ntokn=hg_typo\n");
  auto c = ResolveConfig({{"HOURGLASS_CONFIG", path}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().ToString(), path + ":2: tokn: unknown key (known: url, token, ca_file)");

  Write("bad2.conf", "url\n");
  c = ResolveConfig({{"HOURGLASS_CONFIG", dir_ + "/bad2.conf"}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().line, 1);

  Write("bad3.conf", "\n\ntoken=\n");
  c = ResolveConfig({{"HOURGLASS_CONFIG", dir_ + "/bad3.conf"}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().line, 3);
  EXPECT_EQ(c.error().field, "token");
}

// The CA file for an https:// server: from the file or HOURGLASS_CA_FILE (which wins), and refused
// beside an http:// url, where it would silently do nothing.
TEST_F(ConfigTest, CaFileIsReadAndOnlyForHttps) {
  Write(".hourglass", "url=https://head:8443\nca_file = /etc/hourglass/ca.pem\n");
  auto c = ResolveConfig({{"HOME", dir_}});
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->ca_file, "/etc/hourglass/ca.pem");
  c = ResolveConfig({{"HOME", dir_}, {"HOURGLASS_CA_FILE", "/tmp/other.pem"}});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->ca_file, "/tmp/other.pem");
  c = ResolveConfig(
      {{"HOME", dir_}, {"HOURGLASS_URL", "http://head:8080"}, {"HOURGLASS_CA_FILE", "/x.pem"}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().field, "ca_file");
}

TEST_F(ConfigTest, UrlMustBeHttp) {
  const auto c = ResolveConfig({{"HOURGLASS_URL", "gpu-head:8080"}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().field, "url");
  EXPECT_TRUE(ResolveConfig({{"HOURGLASS_URL", "https://head"}}).has_value());
}

// A server and its standbys: each URL checked and written back without trailing slashes.
TEST_F(ConfigTest, SeveralUrlsAreCheckedEachAndKeptInOrder) {
  auto c = ResolveConfig({{"HOURGLASS_URL", "http://head1:8080/, http://head2:8080"}});
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->url, "http://head1:8080,http://head2:8080");
  EXPECT_EQ(SplitUrls(c->url),
            (std::vector<std::string>{"http://head1:8080", "http://head2:8080"}));
  c = ResolveConfig({{"HOURGLASS_URL", "http://head1:8080,head2:8080"}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().field, "url");
  EXPECT_NE(c.error().reason.find("'head2:8080'"), std::string::npos) << c.error().reason;
  c = ResolveConfig({{"HOURGLASS_URL", " , "}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().field, "url");
  c = ResolveConfig(
      {{"HOURGLASS_URL", "https://head1:8443,http://head2:8080"}, {"HOURGLASS_CA_FILE", "/x.pem"}});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().field, "ca_file");
}

}  // namespace
}  // namespace hg::cli
