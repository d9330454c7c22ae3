#include "src/server/rlqs/max_min_share.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sluice {

std::chrono::seconds QuotaTtl(std::chrono::microseconds report_interval) {
  const int64_t us = std::max<int64_t>(report_interval.count(), 0);
  // Overflow is impossible for any interval a stream can observe (it is capped by the caller),
  // but clamp first anyway so a bogus value still lands in range.
  const int64_t capped = std::min<int64_t>(us, kMaxQuotaTtl.count() * 1000000);
  const int64_t seconds = (3 * capped + 999999) / 1000000;
  return std::clamp(std::chrono::seconds(seconds), kMinQuotaTtl, kMaxQuotaTtl);
}

uint64_t QuotaMaxTokens(uint64_t granted, uint64_t last_max_tokens, bool saturated) {
  if (saturated && last_max_tokens > 0 && granted > last_max_tokens) return last_max_tokens;
  return granted;
}

absl::Status ValidateQuotaReport(const QuotaReport& report) {
  if (report.bucket.empty() || report.bucket.size() > kMaxQuotaBucketBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("quota report: bucket must be 1 to ", kMaxQuotaBucketBytes, " bytes"));
  }
  if (report.client.empty() || report.client.size() > kMaxQuotaClientBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("quota report: client must be 1 to ", kMaxQuotaClientBytes, " bytes"));
  }
  if (report.limit > kMaxQuotaLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("quota report: limit must be at most ", kMaxQuotaLimit));
  }
  if (report.ttl < kMinQuotaTtl || report.ttl > kMaxQuotaTtl) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quota report: ttl must be in [", kMinQuotaTtl.count(), "s, ", kMaxQuotaTtl.count(), "s]"));
  }
  return absl::OkStatus();
}

namespace internal {

std::map<std::string, uint64_t> MaxMinShares(const QuotaRecords& records, uint64_t limit) {
  std::vector<std::pair<uint64_t, const std::string*>> order;
  order.reserve(records.size());
  for (const auto& [client, record] : records) order.emplace_back(record.demand, &client);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  std::map<std::string, uint64_t> shares;
  uint64_t remaining = limit;
  for (size_t i = 0; i < order.size(); ++i) {
    const uint64_t equal = remaining / (order.size() - i);
    const uint64_t share = std::min(order[i].first, equal);
    shares[*order[i].second] = share;
    remaining -= share;
  }
  return shares;
}

QuotaShare DecideQuotaShare(QuotaRecords& records, const QuotaReport& report, int64_t now_us) {
  std::erase_if(records, [now_us](const auto& entry) { return entry.second.ends_us <= now_us; });
  const uint64_t demand = std::min(report.demand, kMaxQuotaDemand);
  QuotaShare share{.ttl = report.ttl};
  const bool known = records.contains(report.client);
  if (!known && records.size() >= kMaxQuotaClients) {
    // A full bucket: the newcomer is told to deny, and nothing about it is kept.
    share.clients = records.size();
    for (const auto& [client, record] : records) {
      share.demand += record.demand;
      share.granted_total += record.granted;
    }
    return share;
  }
  QuotaClientRecord& mine = records[report.client];
  // A top-up of a live record keeps the demand it was reported with (the same value) and its
  // grant unless it can rise; otherwise it is a report.
  const bool raise_only = report.top_up && known;
  mine.demand = demand;
  const uint64_t fair = MaxMinShares(records, report.limit)[report.client];
  uint64_t others = 0;
  for (const auto& [client, record] : records) {
    if (client != report.client) others += record.granted;
  }
  const uint64_t free = report.limit > others ? report.limit - others : 0;
  const uint64_t granted = std::min(fair, free);
  if (!raise_only || granted > mine.granted) {
    mine.granted = granted;
    mine.ends_us = now_us + std::chrono::microseconds(report.ttl + kQuotaDeliveryGrace).count();
  }
  share.wanted = fair;
  share.granted = mine.granted;
  share.clients = records.size();
  for (const auto& [client, record] : records) {
    share.demand += record.demand;
    share.granted_total += record.granted;
  }
  return share;
}

}  // namespace internal
}  // namespace sluice
