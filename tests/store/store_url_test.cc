#include "sluice/store_url.h"

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(StoreUrl, ParsesMemory) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("memory");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->kind, StoreUrl::Kind::kMemory);
  EXPECT_EQ(url->Redacted(), "memory");
}

TEST(StoreUrl, ParsesValidRedisUrls) {
  struct Case {
    std::string input;
    std::string host;
    int port;
    bool tls;
    std::string username;
    std::string password;
    int db;
  };
  const Case cases[] = {
      {"redis://localhost", "localhost", 6379, false, "", "", 0},
      {"redis://127.0.0.1:6380", "127.0.0.1", 6380, false, "", "", 0},
      {"redis://127.0.0.1:6380/", "127.0.0.1", 6380, false, "", "", 0},
      {"REDIS://Cache.Internal:1/15", "Cache.Internal", 1, false, "", "", 15},
      {"redis://:s3cret@host", "host", 6379, false, "", "s3cret", 0},
      {"redis://limiter:s3cret@host:7000/2", "host", 7000, false, "limiter", "s3cret", 2},
      {"redis://u%40corp:p%40ss%3Aw%2Frd@h", "h", 6379, false, "u@corp", "p@ss:w/rd", 0},
      {"redis://[::1]:6381/3", "::1", 6381, false, "", "", 3},
      {"redis://[2001:db8::7]", "2001:db8::7", 6379, false, "", "", 0},
      {"rediss://:pw@redis.example.com", "redis.example.com", 6379, true, "", "pw", 0},
      {"redis://host:65535", "host", 65535, false, "", "", 0},
      {"redis://host:", "host", 6379, false, "", "", 0},
  };
  for (const Case& c : cases) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(c.input);
    ASSERT_TRUE(url.ok()) << c.input << ": " << url.status();
    EXPECT_EQ(url->kind, StoreUrl::Kind::kRedis) << c.input;
    EXPECT_EQ(url->host, c.host) << c.input;
    EXPECT_EQ(url->port, c.port) << c.input;
    EXPECT_EQ(url->tls, c.tls) << c.input;
    EXPECT_EQ(url->username, c.username) << c.input;
    EXPECT_EQ(url->password, c.password) << c.input;
    EXPECT_EQ(url->db, c.db) << c.input;
  }
}

TEST(StoreUrl, ParsesQueryParameters) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(
      "rediss://limiter@h:1/4?password_file=/run/secrets/redis&timeout_ms=15"
      "&connect_timeout_ms=250&connections=4&tls_verify=false&tls_ca_file=/etc/ca.pem"
      "&tls_cert_file=/etc/c.pem&tls_key_file=/etc/k.pem&tls_server_name=redis.internal");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->username, "limiter");
  EXPECT_EQ(url->password, "");
  EXPECT_EQ(url->password_file, "/run/secrets/redis");
  EXPECT_EQ(url->command_timeout, std::chrono::milliseconds(15));
  EXPECT_EQ(url->connect_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(url->connections, 4);
  EXPECT_FALSE(url->tls_verify);
  EXPECT_EQ(url->tls_ca_file, "/etc/ca.pem");
  EXPECT_EQ(url->tls_cert_file, "/etc/c.pem");
  EXPECT_EQ(url->tls_key_file, "/etc/k.pem");
  EXPECT_EQ(url->tls_server_name, "redis.internal");
  // The canonical form parses back to the same URL.
  absl::StatusOr<StoreUrl> again = ParseStoreUrl(url->Redacted());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *url);
}

TEST(StoreUrl, DefaultsWhenParametersAreAbsent) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://h");
  ASSERT_TRUE(url.ok());
  EXPECT_FALSE(url->command_timeout.has_value());
  EXPECT_FALSE(url->connect_timeout.has_value());
  EXPECT_FALSE(url->connections.has_value());
  EXPECT_TRUE(url->tls_verify);
}

TEST(StoreUrl, LeaseParameters) {
  for (const char* kind : {"redis://h:6379", "rediss://h:6379", "redis-cluster://h:7000",
                           "redis-sentinel://s:26379/mymaster"}) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(absl::StrCat(kind, "?lease=true"));
    ASSERT_TRUE(url.ok()) << kind << ": " << url.status();
    EXPECT_TRUE(url->lease) << kind;
  }
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(
      "redis://h:6379?lease=true&lease_refresh_ms=200&lease_ttl_ms=800&lease_max_units=64");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->lease_refresh, std::chrono::milliseconds(200));
  EXPECT_EQ(url->lease_ttl, std::chrono::milliseconds(800));
  EXPECT_EQ(url->lease_max_units, 64);
  EXPECT_EQ(url->Redacted(),
            "redis://h:6379?lease=true&lease_refresh_ms=200&lease_ttl_ms=800&lease_max_units=64");
  EXPECT_FALSE(ParseStoreUrl("redis://h:6379")->lease);
  EXPECT_FALSE(ParseStoreUrl("redis://h:6379?lease=maybe").ok());
  EXPECT_FALSE(ParseStoreUrl("redis://h:6379?lease_ttl_ms=100").ok());
  EXPECT_FALSE(ParseStoreUrl("redis://h:6379?lease=true&lease_ttl_ms=0").ok());
}

TEST(StoreUrl, FunctionsParameterForcesEvalsha) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://h:6379?functions=false");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_FALSE(url->functions);
  EXPECT_EQ(url->Redacted(), "redis://h:6379?functions=false");
  EXPECT_TRUE(ParseStoreUrl("redis://h:6379?functions=true")->functions);
  EXPECT_TRUE(ParseStoreUrl("redis://h:6379")->functions);
  EXPECT_FALSE(ParseStoreUrl("redis://h:6379?functions=maybe").ok());
}

TEST(StoreUrl, RejectsInvalidUrls) {
  struct Case {
    std::string input;
    std::string message;  // A substring of the error.
  };
  const Case cases[] = {
      {"", "expected \"memory\""},
      {"mem", "expected \"memory\""},
      {"http://host", "expected \"memory\""},
      {"redis:/host", "expected \"memory\""},
      {"redis://", "missing host"},
      {"redis://:6379", "missing host"},
      {"redis://host:0", "port must be an integer in [1, 65535]"},
      {"redis://host:65536", "port must be an integer in [1, 65535]"},
      {"redis://host:abc", "malformed port"},
      {"redis://host/x", "database (the path) must be an integer"},
      {"redis://host/-1", "database (the path) must be an integer"},
      {"redis://host/1/2", "database (the path) must be an integer"},
      {"redis://host#frag", "fragment"},
      {"redis://host?timeout_ms=0", "timeout_ms must be an integer in [1, 3600000]"},
      {"redis://host?timeout_ms=fast", "timeout_ms must be an integer"},
      {"redis://host?connect_timeout_ms=-5", "connect_timeout_ms must be"},
      {"redis://host?connections=0", "connections must be an integer in [1, 64]"},
      {"redis://host?connections=65", "connections must be an integer in [1, 64]"},
      {"redis://host?timeout=5", "unknown parameter \"timeout\""},
      {"redis://host?tls_verify=false", "tls_* parameters need rediss://"},
      {"rediss://host?tls_verify=maybe", "tls_verify must be true or false"},
      {"rediss://host?tls_cert_file=/c.pem", "tls_cert_file and tls_key_file go together"},
      {"redis://user@host", "a user name needs a password"},
      {"redis://@host", "empty user information"},
      {"redis://host?password_file=", "password_file is empty"},
      {"redis://:pw@host?password_file=/f", "either in the URL or in password_file"},
      {"redis://[::1", "invalid store URL"},
      {"redis://host:6379:1", "malformed port"},
      {"redis://user:pw@@host", "percent-encode reserved characters"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(c.input);
    ASSERT_FALSE(url.ok()) << c.input << " parsed";
    EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument) << c.input;
    EXPECT_THAT(url.status().message(), HasSubstr(c.message)) << c.input;
  }
}

// Verifies that no error or log form ever contains the password, including when the URL is
// malformed around it.
TEST(StoreUrl, NeverRevealsThePassword) {
  const std::string secret = "Sup3rS3cretPw";
  const std::string inputs[] = {
      "redis://:" + secret + "@host:0",
      "redis://user:" + secret + "@host/notadb",
      "redis://user:" + secret + "@@host",
      "redis://user:" + secret + "@host?bogus=1",
      "redis://:" + secret + "@host?password_file=/f",
      "redis://user:" + secret + "@[::1",
      "redis://user:" + secret + "@host#frag",
      "http://user:" + secret + "@host",
  };
  for (const std::string& input : inputs) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(input);
    ASSERT_FALSE(url.ok()) << "parsed";
    EXPECT_THAT(std::string(url.status().message()), Not(HasSubstr(secret)));
  }
  absl::StatusOr<StoreUrl> good = ParseStoreUrl("rediss://limiter:" + secret + "@[::1]:6380/2");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->Redacted(), "rediss://limiter:***@[::1]:6380/2");
  EXPECT_THAT(good->Redacted(), Not(HasSubstr(secret)));
  EXPECT_EQ(good->HostPort(), "[::1]:6380");
}

// Regression (found by fuzz/store_url_fuzzer.cc): a password with an unencoded '/' ends the
// authority early, so "user:123/abc@host" read as host "user", port 123 and database path
// "/abc@host", and the database error quoted the rest of the password.
TEST(StoreUrl, PasswordWithUnencodedSlashIsNotQuotedInErrors) {
  const std::string inputs[] = {
      "redis://user:123/S3cret@host:6379/0",
      "redis://user:99999/S3cret@host",
      "redis://:1/S3cret@host",
  };
  for (const std::string& input : inputs) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(input);
    ASSERT_FALSE(url.ok()) << input << " parsed";
    EXPECT_THAT(url.status().message(), HasSubstr("percent-encode")) << input;
    EXPECT_THAT(std::string(url.status().message()), Not(HasSubstr("S3cret"))) << input;
    EXPECT_THAT(std::string(url.status().message()), Not(HasSubstr("\""))) << input;
  }
}

// Regression: a password with an unencoded '?' or '#' ends the authority there, as '/' does, and
// the rest of it fell into the query or the fragment. "user:123?S3cret@host" read as host "user",
// port 123 and parameter "S3cret@host", which the "unknown parameter" error quoted; the port
// error quoted "1234567", the database error "4x5", and "u:123?tls_server_name=S3cret@h" even
// parsed, with the secret in tls_server_name and so in Redacted(). Every such URL is refused by
// one error that quotes nothing.
TEST(StoreUrl, PasswordWithUnencodedQuestionMarkOrHashIsNeverQuotedOrLogged) {
  const std::vector<std::string> inputs = {
      "redis://user:pa?S3cret@host:6379/0",
      "redis://:p#S3cret@h",
      "redis://user:S3c?ret@host",
      "redis://:S3c#ret@host",
      "redis://user:123?S3cret@host",
      "redis://user:1234567?S3cret@host",
      "redis://user:123?timeout_ms=S3cret@host",
      "redis://user:1/4x5?S3cret@host",
      "rediss://u:123?tls_server_name=S3cret@h",
      "redis://u:6379?password_file=S3cret@h",
      "redis://u:6379?password_file=/run/x&S3cret@h",
      "redis://u:12?@h",
      "redis://u:12#S3cret@h",
      "redis://:1#S3cret@h",
  };
  for (const std::string& input : inputs) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(input);
    ASSERT_FALSE(url.ok()) << input << " parsed as " << url->Redacted();
    EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument) << input;
    EXPECT_THAT(url.status().message(), HasSubstr("'@' after the host")) << input;
    EXPECT_THAT(url.status().message(), HasSubstr("percent-encode")) << input;
    EXPECT_THAT(std::string(url.status().message()), Not(HasSubstr("S3c"))) << input;
    EXPECT_THAT(std::string(url.status().message()), Not(HasSubstr("\""))) << input;
  }
}

// Verifies that a percent-encoded '?', '#' or '@' in the password parses and is never logged, and
// that a '?' in a parameter value is data: no parameter is called "password", and an unknown
// parameter's value is not quoted.
TEST(StoreUrl, PasswordWithEncodedQuestionMarkHashOrAtParses) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("rediss://u:p%3Fq%23r%40s@h?timeout_ms=5");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->username, "u");
  EXPECT_EQ(url->password, "p?q#r@s");
  EXPECT_EQ(url->host, "h");
  EXPECT_EQ(url->command_timeout, std::chrono::milliseconds(5));
  EXPECT_EQ(url->Redacted(), "rediss://u:***@h:6379?timeout_ms=5");

  absl::StatusOr<StoreUrl> param = ParseStoreUrl("redis://h?password=se?cret");
  ASSERT_FALSE(param.ok());
  EXPECT_EQ(param.status().message(), "invalid store URL: unknown parameter \"password\"");
}

// Verifies that a parameter value holding '@' is written "%40" (a raw '@' after the host is
// refused) and that Redacted() writes it back that way, so the redacted form still parses.
TEST(StoreUrl, AtSignInParameterValueMustBeEncoded) {
  absl::StatusOr<StoreUrl> raw = ParseStoreUrl("redis://h?password_file=/run/redis@prod/pw");
  ASSERT_FALSE(raw.ok());
  EXPECT_THAT(raw.status().message(), HasSubstr("'@' in parameter values as %40"));

  absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://h?password_file=/run/redis%40prod/pw");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->password_file, "/run/redis@prod/pw");
  EXPECT_EQ(url->Redacted(), "redis://h:6379?password_file=/run/redis%40prod/pw");
  absl::StatusOr<StoreUrl> again = ParseStoreUrl(url->Redacted());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *url);
}

// Regression (found by fuzz/store_url_fuzzer.cc): Redacted() wrote the decoded user name and
// parameter values as they were, so "u%40corp" came out as "u@corp" and no longer parsed.
TEST(StoreUrl, RedactedFormEncodesUserNameAndParameterValues) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(
      "rediss://u%40corp%3Ax@h?password_file=/run/a%26b%3Dc%2B%20d&tls_ca_file=/ca%23.pem");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->username, "u@corp:x");
  EXPECT_EQ(url->password_file, "/run/a&b=c+ d");
  EXPECT_EQ(url->tls_ca_file, "/ca#.pem");
  EXPECT_EQ(url->Redacted(),
            "rediss://u%40corp%3Ax@h:6379?password_file=/run/a%26b%3Dc%2B%20d"
            "&tls_ca_file=/ca%23.pem");
  absl::StatusOr<StoreUrl> again = ParseStoreUrl(url->Redacted());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *url);

  absl::StatusOr<StoreUrl> with_password = ParseStoreUrl("redis://u%3Ax:p%40ss@h");
  ASSERT_TRUE(with_password.ok()) << with_password.status();
  EXPECT_EQ(with_password->Redacted(), "redis://u%3Ax:***@h:6379");
}

// Regression (found by fuzz/store_url_fuzzer.cc): a host name decoded from escapes ("h%2Fx") was
// accepted although no resolver takes it and Redacted() could not write it back.
TEST(StoreUrl, RejectsHostNamesWithReservedCharacters) {
  for (const std::string input :
       {"redis://h%2Fx", "redis://a%3Ab:1", "redis://h%20x", "redis://%7E"}) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(input);
    ASSERT_FALSE(url.ok()) << input << " parsed";
    EXPECT_THAT(url.status().message(), HasSubstr("host name may hold only")) << input;
  }
  absl::StatusOr<StoreUrl> url = ParseStoreUrl("redis://Redis_1.cache-a%2Dz:1");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "Redis_1.cache-a-z");
}

TEST(StoreUrl, RedactedFormIsCanonical) {
  EXPECT_EQ(ParseStoreUrl("redis://h")->Redacted(), "redis://h:6379");
  EXPECT_EQ(ParseStoreUrl("redis://:p@h/0")->Redacted(), "redis://:***@h:6379");
  EXPECT_EQ(ParseStoreUrl("redis://u@h?password_file=/f&timeout_ms=9")->Redacted(),
            "redis://u@h:6379?password_file=/f&timeout_ms=9");
}

TEST(StoreUrl, ParsesClusterUrlsWithEverySeed) {
  absl::StatusOr<StoreUrl> url =
      ParseStoreUrl("redis-cluster://u:p%40ss@10.0.0.1:7000,node-b:7001,[::1]:7002?timeout_ms=15");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->kind, StoreUrl::Kind::kRedisCluster);
  EXPECT_FALSE(url->tls);
  EXPECT_EQ(url->username, "u");
  EXPECT_EQ(url->password, "p@ss");
  ASSERT_EQ(url->nodes.size(), 3u);
  EXPECT_EQ(url->nodes[0], (StoreUrl::Node{.host = "10.0.0.1", .port = 7000}));
  EXPECT_EQ(url->nodes[1], (StoreUrl::Node{.host = "node-b", .port = 7001}));
  EXPECT_EQ(url->nodes[2], (StoreUrl::Node{.host = "::1", .port = 7002}));
  EXPECT_EQ(url->host, "10.0.0.1");
  EXPECT_EQ(url->port, 7000);
  EXPECT_EQ(url->command_timeout, std::chrono::milliseconds(15));
  EXPECT_EQ(url->Redacted(),
            "redis-cluster://u:***@10.0.0.1:7000,node-b:7001,[::1]:7002?timeout_ms=15");

  absl::StatusOr<StoreUrl> tls = ParseStoreUrl("rediss-cluster://h:7000?tls_verify=false");
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->kind, StoreUrl::Kind::kRedisCluster);
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->Redacted(), "rediss-cluster://h:7000?tls_verify=false");
}

TEST(StoreUrl, ParsesSentinelUrls) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(
      "redis-sentinel://:data%2Fpw@s1:26379,s2,s3:26381/mymaster/2?sentinel_password=s%40nt"
      "&sentinel_username=watcher&min_replicas=1&min_replicas_timeout_ms=20");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->kind, StoreUrl::Kind::kRedisSentinel);
  EXPECT_EQ(url->password, "data/pw");
  EXPECT_EQ(url->primary_name, "mymaster");
  EXPECT_EQ(url->db, 2);
  ASSERT_EQ(url->nodes.size(), 3u);
  EXPECT_EQ(url->nodes[1], (StoreUrl::Node{.host = "s2", .port = 26379}));
  EXPECT_EQ(url->sentinel_password, "s@nt");
  EXPECT_EQ(url->sentinel_username, "watcher");
  EXPECT_EQ(url->min_replicas, 1);
  EXPECT_EQ(url->min_replicas_timeout, std::chrono::milliseconds(20));
  // Neither password is ever printed.
  const std::string redacted = url->Redacted();
  EXPECT_THAT(redacted, Not(HasSubstr("data")));
  EXPECT_THAT(redacted, Not(HasSubstr("s@nt")));
  EXPECT_THAT(redacted, Not(HasSubstr("s%40nt")));
  EXPECT_EQ(redacted,
            "redis-sentinel://:***@s1:26379,s2:26379,s3:26381/mymaster/2?min_replicas=1"
            "&min_replicas_timeout_ms=20&sentinel_username=watcher&sentinel_password=***");

  absl::StatusOr<StoreUrl> one = ParseStoreUrl("rediss-sentinel://s1/primary-1?sentinel_tls=false");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(one->tls);
  EXPECT_FALSE(one->sentinel_tls);
  EXPECT_EQ(one->port, StoreUrl::kDefaultSentinelPort);
  EXPECT_EQ(one->db, 0);
}

TEST(StoreUrl, ForNodeKeepsCredentialsAndDropsTopology) {
  absl::StatusOr<StoreUrl> url = ParseStoreUrl(
      "rediss-sentinel://u:pw@s1:26379/main/3?sentinel_password=x&tls_ca_file=/ca.pem");
  ASSERT_TRUE(url.ok()) << url.status();
  const StoreUrl node = url->ForNode("10.1.1.1", 6390);
  EXPECT_EQ(node.kind, StoreUrl::Kind::kRedis);
  EXPECT_EQ(node.host, "10.1.1.1");
  EXPECT_EQ(node.port, 6390);
  EXPECT_EQ(node.username, "u");
  EXPECT_EQ(node.password, "pw");
  EXPECT_EQ(node.db, 3);
  EXPECT_TRUE(node.tls);
  EXPECT_EQ(node.tls_ca_file, "/ca.pem");
  EXPECT_TRUE(node.sentinel_password.empty());
  EXPECT_EQ(node.Redacted(), "rediss://u:***@10.1.1.1:6390/3?tls_ca_file=/ca.pem");
}

TEST(StoreUrl, RejectsBadTopologyUrls) {
  struct Case {
    std::string input;
    std::string message;
  };
  const Case cases[] = {
      {"redis://h1:1,h2:2", "redis:// takes one host"},
      {"redis-cluster://h1:1,,h2:2", "empty host"},
      {"redis-cluster://h1:1,h2:x", "bad host"},
      {"redis-cluster://h1:1/3", "takes no database"},
      {"redis-sentinel://s1:26379", "needs /primary_name"},
      {"redis-sentinel://s1:26379/", "needs /primary_name"},
      {"redis-sentinel://s1/na%20me", "primary_name may hold only"},
      {"redis-sentinel://s1/m/x", "database"},
      {"redis://h?sentinel_password=x", "for redis-sentinel:// URLs only"},
      {"redis-cluster://h:1?sentinel_tls=false", "for redis-sentinel:// URLs only"},
      {"redis-sentinel://s/m?sentinel_tls=false", "sentinel_tls needs rediss-sentinel://"},
      {"redis-sentinel://s/m?sentinel_username=w", "sentinel_username needs"},
      {"redis-sentinel://s/m?sentinel_password=a&sentinel_password_file=/f", "not both"},
      {"redis://h?min_replicas=17", "min_replicas must be"},
      {"redis-clusterx://h", "expected"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(c.input);
    ASSERT_FALSE(url.ok()) << c.input << " parsed";
    EXPECT_TRUE(absl::IsInvalidArgument(url.status())) << c.input;
    EXPECT_THAT(url.status().message(), HasSubstr(c.message)) << c.input;
  }
  // A sentinel password is never quoted in an error.
  absl::StatusOr<StoreUrl> bad =
      ParseStoreUrl("redis-sentinel://s/m?sentinel_password=hunter2&timeout_ms=x");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), Not(HasSubstr("hunter2")));
}

TEST(StoreUrl, TopologyUrlsRoundTripThroughTheirCanonicalForm) {
  for (const std::string input :
       {"redis-cluster://a:1,b:2,c:3", "rediss-cluster://u:p@[::1]:7000,h:7001?connections=2",
        "redis-sentinel://s1:1,s2:2/name/1?sentinel_password_file=/s&min_replicas=2",
        "redis://h?min_replicas_timeout_ms=5"}) {
    absl::StatusOr<StoreUrl> url = ParseStoreUrl(input);
    ASSERT_TRUE(url.ok()) << input << ": " << url.status();
    absl::StatusOr<StoreUrl> again = ParseStoreUrl(url->Redacted());
    ASSERT_TRUE(again.ok()) << url->Redacted() << ": " << again.status();
    StoreUrl expected = *url;
    if (!expected.password.empty()) expected.password = "***";
    EXPECT_EQ(*again, expected) << input;
  }
}

}  // namespace
}  // namespace sluice
