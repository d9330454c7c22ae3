#include "sluice/http/beast.h"

namespace sluice::http {

boost::beast::http::response<boost::beast::http::string_body> MakeRejection(const Verdict& verdict,
                                                                            unsigned version,
                                                                            bool keep_alive) {
  namespace bhttp = boost::beast::http;
  bhttp::response<bhttp::string_body> response(static_cast<bhttp::status>(verdict.status), version);
  for (const ResponseHeader& header : verdict.headers) response.set(header.name, header.value);
  if (!verdict.content_type.empty()) {
    response.set(bhttp::field::content_type, verdict.content_type);
  }
  response.body() = verdict.body;
  response.keep_alive(keep_alive);
  response.prepare_payload();
  return response;
}

}  // namespace sluice::http
