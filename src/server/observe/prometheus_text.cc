#include "src/server/observe/prometheus_text.h"

#include "absl/strings/str_cat.h"

#include "src/util/strings.h"

namespace sluice::server {

using ::sluice::internal::AbslView;

void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view type,
                        std::string_view help) {
  absl::StrAppend(&out, "# HELP ", AbslView(name), " ", AbslView(help), "\n# TYPE ", AbslView(name),
                  " ", AbslView(type), "\n");
}

void AppendCounter(std::string& out, std::string_view name, std::string_view help, uint64_t value) {
  AppendFamilyHeader(out, name, "counter", help);
  absl::StrAppend(&out, AbslView(name), " ", value, "\n");
}

void AppendGauge(std::string& out, std::string_view name, std::string_view help, uint64_t value) {
  AppendFamilyHeader(out, name, "gauge", help);
  absl::StrAppend(&out, AbslView(name), " ", value, "\n");
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace sluice::server
