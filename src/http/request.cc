#include "sluice/http/request.h"

namespace sluice::http {
namespace {

char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

std::optional<std::string_view> RequestView::Header(std::string_view name) const {
  for (const HeaderField& field : headers) {
    if (EqualsIgnoreAsciiCase(field.name, name)) return field.value;
  }
  return std::nullopt;
}

const std::string* Verdict::FindHeader(std::string_view name) const {
  for (const ResponseHeader& header : headers) {
    if (EqualsIgnoreAsciiCase(header.name, name)) return &header.value;
  }
  return nullptr;
}

}  // namespace sluice::http
