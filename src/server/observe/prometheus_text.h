// The Prometheus text exposition format (version 0.0.4), as every GaugeSource (gauge_source.h)
// and the metrics write it: one place for the # HELP and # TYPE lines and the label escaping, so
// that the families of every room read alike.
//
// Example:
//   AppendCounter(out, "sluice_xds_acks_total", "xDS responses applied and ACKed.", acks);
//   // # HELP sluice_xds_acks_total xDS responses applied and ACKed.
//   // # TYPE sluice_xds_acks_total counter
//   // sluice_xds_acks_total 2
//
// Thread safety: the functions are pure.
#ifndef SLUICE_SERVER_OBSERVE_PROMETHEUS_TEXT_H_
#define SLUICE_SERVER_OBSERVE_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::server {

// AppendFamilyHeader()
//
// Appends the # HELP and # TYPE lines of family `name`, of `type` ("counter", "gauge",
// "histogram"), to `out`.
void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view type,
                        std::string_view help);

// AppendCounter(), AppendGauge()
//
// Append a family of one sample without labels: its header, then "`name` `value`".
void AppendCounter(std::string& out, std::string_view name, std::string_view help, uint64_t value);
void AppendGauge(std::string& out, std::string_view name, std::string_view help, uint64_t value);

// EscapeLabelValue()
//
// Returns `value` as a label value is written between its double quotes: backslash, double quote
// and newline escaped.
std::string EscapeLabelValue(std::string_view value);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_OBSERVE_PROMETHEUS_TEXT_H_
