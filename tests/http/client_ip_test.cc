// Tests of client IP resolution (reliability.md T17): forwarding headers are believed only from
// trusted proxies, read right to left, and nothing a client writes left of the first untrusted hop
// can change the answer or break the parser.
#include "sluice/http/client_ip.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::http {
namespace {

IpAddress Ip(std::string_view text) {
  std::optional<IpAddress> ip = ParseIpAddress(text);
  EXPECT_TRUE(ip.has_value()) << text;
  return ip.value_or(IpAddress{});
}

ClientIpOptions Trusting(std::vector<std::string> cidrs,
                         ForwardedHeader header = ForwardedHeader::kXForwardedFor) {
  ClientIpOptions options{.trusted_proxies = {}, .header = header};
  for (const std::string& c : cidrs) options.trusted_proxies.push_back(ParseCidr(c).value());
  return options;
}

std::string Resolve(const ClientIpOptions& options, std::string_view peer,
                    std::vector<HeaderField> headers) {
  std::optional<IpAddress> ip = ResolveClientIp(options, peer, headers);
  return ip ? ip->ToString() : "none";
}

TEST(ParseIpAddress, AcceptsCanonicalForms) {
  EXPECT_EQ(Ip("192.0.2.7").ToString(), "192.0.2.7");
  EXPECT_FALSE(Ip("192.0.2.7").v6);
  EXPECT_EQ(Ip("2001:DB8:0:0:0:0:0:1").ToString(), "2001:db8::1");
  EXPECT_TRUE(Ip("2001:db8::1").v6);
  // IPv4-mapped (dual-stack sockets) is read as IPv4, so CIDRs and keys see one address.
  EXPECT_EQ(Ip("::ffff:192.0.2.7"), Ip("192.0.2.7"));
}

TEST(ParseIpAddress, RejectsEverythingElse) {
  for (std::string_view bad :
       {"", "1.2.3", "1.2.3.4.5", "01.2.3.4", "256.1.1.1", "1.2.3.4 ", " 1.2.3.4", "::g",
        "fe80::1%eth0", "[::1]", "1.2.3.4:80", "unknown", "_hidden", "0x7f.1.1.1",
        "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255:1"}) {
    EXPECT_FALSE(ParseIpAddress(bad).has_value()) << bad;
  }
  EXPECT_FALSE(ParseIpAddress(std::string(10'000, '1')).has_value());
}

TEST(Cidr, ParsesAndContains) {
  Cidr ten = ParseCidr("10.0.0.0/8").value();
  EXPECT_TRUE(ten.Contains(Ip("10.255.0.1")));
  EXPECT_FALSE(ten.Contains(Ip("11.0.0.1")));
  EXPECT_FALSE(ten.Contains(Ip("2001:db8::1")));
  Cidr v6 = ParseCidr("2001:db8::/32").value();
  EXPECT_TRUE(v6.Contains(Ip("2001:db8:ffff::1")));
  EXPECT_FALSE(v6.Contains(Ip("2001:db9::1")));
  EXPECT_FALSE(v6.Contains(Ip("10.0.0.1")));
  EXPECT_TRUE(ParseCidr("::1").value().Contains(Ip("::1")));
  EXPECT_TRUE(ParseCidr("0.0.0.0/0").value().Contains(Ip("203.0.113.9")));
}

TEST(Cidr, RejectsHostBitsAndBadPrefixes) {
  EXPECT_THAT(ParseCidr("10.0.0.1/8").status().message(), ::testing::HasSubstr("10.0.0.0/8"));
  for (std::string_view bad : {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/8x", "::/129",
                               "garbage", "10.0.0.0/0008"}) {
    EXPECT_FALSE(ParseCidr(bad).ok()) << bad;
  }
}

TEST(ResolveClientIp, DefaultTrustsNobody) {
  EXPECT_EQ(Resolve({}, "10.0.0.1", {{"X-Forwarded-For", "198.51.100.7"}}), "10.0.0.1");
  EXPECT_EQ(Resolve({}, "10.0.0.1", {{"Forwarded", "for=198.51.100.7"}}), "10.0.0.1");
}

TEST(ResolveClientIp, IgnoresForwardedHeadersFromUntrustedPeer) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  EXPECT_EQ(Resolve(options, "203.0.113.5", {{"X-Forwarded-For", "198.51.100.7, 10.0.0.2"}}),
            "203.0.113.5");
}

TEST(ResolveClientIp, UsesRightMostUntrustedHopFromTrustedProxy) {
  ClientIpOptions options = Trusting({"10.0.0.0/8", "2001:db8:ff::/48"});
  EXPECT_EQ(Resolve(options, "10.0.0.1",
                    {{"X-Forwarded-For", "6.6.6.6, 198.51.100.7, 10.0.0.3, 10.0.0.2"}}),
            "198.51.100.7");
  EXPECT_EQ(Resolve(options, "2001:db8:ff::1", {{"x-forwarded-for", "2001:db8:1::5"}}),
            "2001:db8:1::5");
  // A dual-stack listener reports an IPv4 proxy as IPv4-mapped IPv6.
  EXPECT_EQ(Resolve(options, "::ffff:10.0.0.1", {{"X-Forwarded-For", "198.51.100.7"}}),
            "198.51.100.7");
}

TEST(ResolveClientIp, MergesHeaderLinesInOrder) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  EXPECT_EQ(Resolve(options, "10.0.0.1",
                    {{"X-Forwarded-For", "1.1.1.1"},
                     {"Host", "example.com"},
                     {"X-Forwarded-For", "2.2.2.2, 10.0.0.3"}}),
            "2.2.2.2");
  EXPECT_EQ(Resolve(options, "10.0.0.1",
                    {{"X-Forwarded-For", "1.1.1.1"}, {"X-Forwarded-For", "10.0.0.3"}}),
            "1.1.1.1");
}

TEST(ResolveClientIp, AllTrustedHopsGiveLeftMost) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", "10.0.0.9, 10.0.0.3"}}), "10.0.0.9");
  EXPECT_EQ(Resolve(options, "10.0.0.1", {}), "10.0.0.1");
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", ""}}), "10.0.0.1");
}

TEST(ResolveClientIp, UnparsableHopStopsTheWalkAtThePeer) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  // The hop our proxy wrote is garbage: no leftward fallback to what the client wrote.
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", "198.51.100.7, unknown"}}),
            "10.0.0.1");
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", "198.51.100.7, 10.0.0.2, ::zz"}}),
            "10.0.0.1");
}

TEST(ResolveClientIp, GarbageLeftOfTheClientIsNeverRead) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  for (std::string junk :
       {std::string("garbage[[\"\\"), std::string(100'000, ','), std::string(1 << 20, 'x'),
        std::string("\0\r\n", 3), std::string("for=\"unterminated")}) {
    EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", junk + ", 198.51.100.7"}}),
              "198.51.100.7");
    ClientIpOptions fwd = Trusting({"10.0.0.0/8"}, ForwardedHeader::kForwarded);
    EXPECT_EQ(Resolve(fwd, "10.0.0.1", {{"Forwarded", junk + ", for=198.51.100.7"}}),
              "198.51.100.7");
  }
}

TEST(ResolveClientIp, AcceptsPortsAndBrackets) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", "198.51.100.7:8080"}}),
            "198.51.100.7");
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", "[2001:db8::7]:443"}}),
            "2001:db8::7");
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", "[2001:db8::7]"}}), "2001:db8::7");
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", " \t2001:db8::7 \t"}}),
            "2001:db8::7");
  // The peer may come with a port or brackets from some frameworks.
  EXPECT_EQ(Resolve(options, "[::1]:5000", {}), "::1");
  EXPECT_EQ(Resolve(options, "10.0.0.1:5000", {{"X-Forwarded-For", "198.51.100.7"}}),
            "198.51.100.7");
}

TEST(ResolveClientIp, MalformedHeadersFallBackToThePeer) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  for (std::string_view bad :
       {"[2001:db8::7", "[2001:db8::7]x", "[2001:db8::7]:", "[2001:db8::7]:99999999",
        "198.51.100.7:", "198.51.100.7:http", "198.51.100.7:80:80", "[198.51.100.7]x",
        "\"198.51.100.7\"", "fe80::1%eth0", "::ffff:198.51.100.7:80", "1.2.3.4/24", "\xff\xfe\x00",
        "for=198.51.100.7"}) {
    EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", bad}}), "10.0.0.1") << bad;
  }
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", std::string(1 << 20, '9')}}),
            "10.0.0.1");
  EXPECT_EQ(Resolve(options, "not an address", {{"X-Forwarded-For", "1.2.3.4"}}), "none");
  EXPECT_EQ(Resolve(options, "", {}), "none");
}

TEST(ResolveClientIp, BoundsTheWalk) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  std::string hops = "198.51.100.7";
  for (int i = 0; i < 40; ++i) hops += ", 10.0.0.2";
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", hops}}), "10.0.0.1");
  options.max_hops = 64;
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", hops}}), "198.51.100.7");
}

TEST(ResolveClientIp, ReadsForwardedElements) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"}, ForwardedHeader::kForwarded);
  EXPECT_EQ(
      Resolve(options, "10.0.0.1", {{"Forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43"}}),
      "192.0.2.60");
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"Forwarded", "For=\"[2001:db8:cafe::17]:4711\""}}),
            "2001:db8:cafe::17");
  EXPECT_EQ(Resolve(options, "10.0.0.1",
                    {{"Forwarded", "for=192.0.2.43, for=198.51.100.17;by=10.0.0.1, for=10.0.0.5"}}),
            "198.51.100.17");
  // A comma inside a quoted value does not split elements.
  EXPECT_EQ(
      Resolve(options, "10.0.0.1",
              {{"Forwarded", "for=192.0.2.43;host=\"a,b\", for=198.51.100.9;host=\"x,\\\"y\""}}),
      "198.51.100.9");
  // Obfuscated or unknown nodes, and elements without `for`, stop the walk.
  for (std::string_view stop :
       {"for=unknown", "for=_hidden", "proto=https", "for=1.2.3.4;for=5.6.7.8",
        "for=\"[2001:db8::1]:_port\"x", "for="}) {
    EXPECT_EQ(
        Resolve(options, "10.0.0.1", {{"Forwarded", "for=198.51.100.7, " + std::string(stop)}}),
        "10.0.0.1")
        << stop;
  }
  EXPECT_EQ(Resolve(options, "10.0.0.1", {{"Forwarded", "for=\"[2001:db8::1]:_port\""}}),
            "2001:db8::1");
}

TEST(ResolveClientIp, ReadsOnlyTheConfiguredHeader) {
  // A proxy that appends to X-Forwarded-For passes the client's own Forwarded through untouched.
  ClientIpOptions xff = Trusting({"10.0.0.0/8"});
  EXPECT_EQ(
      Resolve(xff, "10.0.0.1", {{"Forwarded", "for=6.6.6.6"}, {"X-Forwarded-For", "198.51.100.7"}}),
      "198.51.100.7");
  ClientIpOptions fwd = Trusting({"10.0.0.0/8"}, ForwardedHeader::kForwarded);
  EXPECT_EQ(
      Resolve(fwd, "10.0.0.1", {{"Forwarded", "for=198.51.100.7"}, {"X-Forwarded-For", "6.6.6.6"}}),
      "198.51.100.7");
}

TEST(ResolveClientIp, ThousandForgedLeftMostValuesGiveOneClient) {
  ClientIpOptions options = Trusting({"10.0.0.0/8"});
  std::mt19937 rng(17);
  for (int i = 0; i < 1000; ++i) {
    const std::string forged =
        absl::StrCat(rng() % 256, ".", rng() % 256, ".", rng() % 256, ".", rng() % 256);
    ASSERT_EQ(Resolve(options, "10.0.0.1", {{"X-Forwarded-For", forged + ", 198.51.100.7"}}),
              "198.51.100.7");
  }
}

// A simple model of the X-Forwarded-For walk over a fully split header, to compare with the
// right-to-left scanner on random input.
std::string ModelXff(const ClientIpOptions& options, const std::string& peer,
                     const std::vector<std::string>& lines) {
  std::optional<IpAddress> p = ParseIpAddress(peer);
  if (!options.Trusted(*p)) return peer;
  std::vector<std::string> hops;
  for (const std::string& line : lines) {
    size_t start = 0;
    for (;;) {
      const size_t comma = line.find(',', start);
      hops.push_back(
          line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  std::optional<IpAddress> last;
  size_t count = 0;
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    if (++count > options.max_hops) return peer;
    std::string hop = *it;
    hop.erase(0, hop.find_first_not_of(" \t") == std::string::npos ? hop.size()
                                                                   : hop.find_first_not_of(" \t"));
    while (!hop.empty() && (hop.back() == ' ' || hop.back() == '\t')) hop.pop_back();
    if (hop.empty()) continue;
    std::optional<IpAddress> ip = ParseForwardedHop(ForwardedHeader::kXForwardedFor, hop);
    if (!ip) return peer;
    if (!options.Trusted(*ip)) return ip->ToString();
    last = ip;
  }
  return last ? last->ToString() : peer;
}

// Verifies on random headers, built from fragments that parsers trip over, that the
// X-Forwarded-For scanner agrees with the split-everything model, that the Forwarded parser
// never crashes, and that for both headers a prefix added by the client never changes the answer
// once an untrusted hop sits to its right.
TEST(ResolveClientIp, RandomizedHeadersAgreeWithModelAndResistPrefixes) {
  const std::vector<std::string> fragments = {"10.0.0.2",
                                              "10.0.0.3:80",
                                              "198.51.100.7",
                                              "203.0.113.9:443",
                                              "[2001:db8::1]:8080",
                                              "2001:db8::2",
                                              "[::1]",
                                              "::ffff:10.0.0.4",
                                              "unknown",
                                              "_hidden",
                                              "for=",
                                              "for=10.0.0.2",
                                              "for=198.51.100.8",
                                              "for=\"[2001:db8::3]:1\"",
                                              ";",
                                              "\"",
                                              "\\",
                                              "[",
                                              "]",
                                              ":",
                                              ",",
                                              ", ",
                                              " ",
                                              "\t",
                                              "=",
                                              "x",
                                              "300.1.1.1",
                                              "1.2.3",
                                              "\x01",
                                              "\xff",
                                              "%eth0",
                                              "proto=http",
                                              "by=x"};
  ClientIpOptions xff = Trusting({"10.0.0.0/8", "::1/128"});
  ClientIpOptions fwd = Trusting({"10.0.0.0/8", "::1/128"}, ForwardedHeader::kForwarded);
  std::mt19937 rng(20240611);
  for (int round = 0; round < 20'000; ++round) {
    std::vector<std::string> lines(1 + rng() % 3);
    for (std::string& line : lines) {
      const size_t n = rng() % 8;
      for (size_t i = 0; i < n; ++i) line += fragments[rng() % fragments.size()];
    }
    std::vector<HeaderField> xff_fields;
    std::vector<HeaderField> fwd_fields;
    for (const std::string& line : lines) {
      xff_fields.push_back({"X-Forwarded-For", line});
      fwd_fields.push_back({"Forwarded", line});
    }
    const std::string peer = rng() % 4 == 0 ? "203.0.113.1" : "10.0.0.1";
    ASSERT_EQ(Resolve(xff, peer, xff_fields), ModelXff(xff, peer, lines)) << lines[0];
    (void)Resolve(fwd, peer, fwd_fields);  // Must not crash; checked under ASan/UBSan.

    const std::string& prefix = lines[0];
    const std::string xff_value = prefix + ",198.51.100.7, 10.0.0.2";
    ASSERT_EQ(Resolve(xff, "10.0.0.1", {{"X-Forwarded-For", xff_value}}), "198.51.100.7") << prefix;
    const std::string fwd_value = prefix + ",for=198.51.100.7, for=10.0.0.2";
    const std::vector<HeaderField> fwd_client = {{"Forwarded", fwd_value}};
    // Even an unbalanced quote in the prefix, which would swallow the elements after it when
    // read left to right, cannot reach the elements our proxies wrote.
    ASSERT_EQ(Resolve(fwd, "10.0.0.1", fwd_client), "198.51.100.7") << prefix;
  }
}

}  // namespace
}  // namespace sluice::http
