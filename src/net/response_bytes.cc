#include "src/net/response_bytes.h"

#include <array>
#include <charconv>
#include <string_view>

namespace sluice::net::internal {

void WriteResponseBytes(
    const boost::beast::http::response<boost::beast::http::string_body>& response,
    std::string& out) {
  out.clear();
  const unsigned version = response.version();
  out += "HTTP/";
  out += static_cast<char>('0' + version / 10);
  out += '.';
  out += static_cast<char>('0' + version % 10);
  out += ' ';
  std::array<char, 8> status{};
  const auto [end, ec] = std::to_chars(status.begin(), status.end(), response.result_int());
  out.append(status.begin(), end);
  out += ' ';
  // Beast's reason(): the one set on the message, else the standard one for the status.
  const std::string_view reason = response.reason();
  out.append(reason.data(), reason.size());
  out += "\r\n";
  for (const auto& field : response.base()) {
    const std::string_view name = field.name_string();
    const std::string_view value = field.value();
    out.append(name.data(), name.size());
    out += ": ";
    out.append(value.data(), value.size());
    out += "\r\n";
  }
  out += "\r\n";
  out += response.body();
}

}  // namespace sluice::net::internal
