// The bytes of an HTTP/1.x response, in one buffer: what BeastServer writes for each answer.
//
// Beast's serializer hands the socket a view over the status line, each field and the body, and
// walking that view cost about a quarter of BeastServer's CPU per request (bench/floor.sh http,
// docs/PERFORMANCE.md); the same bytes appended to a buffer the connection keeps are one plain
// write. They are byte for byte what the serializer writes for a message whose payload is
// prepared (Content-Length set): the tests compare the two.
#ifndef SLUICE_SRC_HTTP_RESPONSE_BYTES_H_
#define SLUICE_SRC_HTTP_RESPONSE_BYTES_H_

#include <string>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sluice::net::internal {

// Replaces `out` with `response`'s status line, fields and body. Chunked transfer coding is not
// written: call prepare_payload() first, as BeastServer does.
void WriteResponseBytes(
    const boost::beast::http::response<boost::beast::http::string_body>& response,
    std::string& out);

}  // namespace sluice::net::internal

#endif  // SLUICE_SRC_HTTP_RESPONSE_BYTES_H_
