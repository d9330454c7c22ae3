#include "src/net/response_bytes.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

namespace sluice::net::internal {
namespace {

namespace bhttp = boost::beast::http;
using Response = bhttp::response<bhttp::string_body>;

// What Beast's own serializer writes for `response` (operator<< runs it).
std::string BeastBytes(const Response& response) {
  std::ostringstream out;
  out << response;
  return out.str();
}

std::string OurBytes(const Response& response) {
  std::string out = "left over from the previous answer";
  WriteResponseBytes(response, out);
  return out;
}

Response Prepared(Response response) {
  response.prepare_payload();
  return response;
}

TEST(ResponseBytesTest, AnAnswerWithFieldsAndABody) {
  Response response(bhttp::status::ok, 11);
  response.set(bhttp::field::content_type, "application/json");
  response.set(bhttp::field::server, "sluiced");
  response.body() = R"({"overallCode":"OK"})";
  response = Prepared(std::move(response));
  EXPECT_EQ(OurBytes(response),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nServer: sluiced\r\n"
            "Content-Length: 20\r\n\r\n{\"overallCode\":\"OK\"}");
  EXPECT_EQ(OurBytes(response), BeastBytes(response));
}

TEST(ResponseBytesTest, MatchesBeastsSerializer) {
  std::vector<Response> cases;
  {
    Response r(bhttp::status::too_many_requests, 11);  // Fields repeated, custom names, empty.
    r.insert("RateLimit-Policy", "100;w=60");
    r.insert("X-Custom", "");
    r.insert(bhttp::field::set_cookie, "a=1");
    r.insert(bhttp::field::set_cookie, "b=2");
    r.set(bhttp::field::retry_after, "7");
    r.body() = "too many";
    cases.push_back(Prepared(std::move(r)));
  }
  {
    Response r(bhttp::status::ok, 10);  // HTTP/1.0 kept alive: a Connection field.
    r.keep_alive(true);
    r.body() = "x";
    cases.push_back(Prepared(std::move(r)));
  }
  {
    Response r(bhttp::status::ok, 11);  // HTTP/1.1 closing.
    r.keep_alive(false);
    cases.push_back(Prepared(std::move(r)));
  }
  {
    Response r(bhttp::status::no_content, 11);  // No body, no Content-Length.
    cases.push_back(Prepared(std::move(r)));
  }
  {
    Response r(bhttp::status::bad_request, 11);  // A reason of its own.
    r.reason("Nope");
    r.body() = std::string(5000, 'b');
    cases.push_back(Prepared(std::move(r)));
  }
  {
    Response r(static_cast<bhttp::status>(299), 11);  // A status without a standard reason.
    cases.push_back(Prepared(std::move(r)));
  }
  for (const Response& response : cases) {
    SCOPED_TRACE(BeastBytes(response).substr(0, 40));
    EXPECT_EQ(OurBytes(response), BeastBytes(response));
  }
}

}  // namespace
}  // namespace sluice::net::internal
