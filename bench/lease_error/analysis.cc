#include "bench/lease_error/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice::lease_error {
namespace {

// An excess below this is rounding in the doubles of the interval bound, not an admission.
constexpr double kEpsilon = 1e-6;

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Range add, range max over positions 0..n-1.
class MaxAddTree {
 public:
  explicit MaxAddTree(const std::vector<double>& values)
      : n_(values.size()), max_(4 * std::max<size_t>(n_, 1)), add_(max_.size(), 0) {
    if (n_ > 0) Build(1, 0, n_ - 1, values);
  }
  void Add(size_t l, size_t r, double v) { Add(1, 0, n_ - 1, l, r, v); }
  double Max(size_t l, size_t r) const { return Max(1, 0, n_ - 1, l, r); }

 private:
  void Build(size_t node, size_t lo, size_t hi, const std::vector<double>& values) {
    if (lo == hi) {
      max_[node] = values[lo];
      return;
    }
    const size_t mid = (lo + hi) / 2;
    Build(2 * node, lo, mid, values);
    Build(2 * node + 1, mid + 1, hi, values);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }
  void Add(size_t node, size_t lo, size_t hi, size_t l, size_t r, double v) {
    if (r < lo || hi < l) return;
    if (l <= lo && hi <= r) {
      max_[node] += v;
      add_[node] += v;
      return;
    }
    const size_t mid = (lo + hi) / 2;
    Add(2 * node, lo, mid, l, r, v);
    Add(2 * node + 1, mid + 1, hi, l, r, v);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  double Max(size_t node, size_t lo, size_t hi, size_t l, size_t r) const {
    if (r < lo || hi < l) return -std::numeric_limits<double>::infinity();
    if (l <= lo && hi <= r) return max_[node];
    const size_t mid = (lo + hi) / 2;
    return std::max(Max(2 * node, lo, mid, l, r), Max(2 * node + 1, mid + 1, hi, l, r)) +
           add_[node];
  }

  size_t n_;
  std::vector<double> max_;
  std::vector<double> add_;
};

bool IsWindowAlgorithm(Algorithm a) {
  return a == Algorithm::kFixedWindow || a == Algorithm::kSlidingWindow;
}

// The window of an admitted window decision, or nullopt when it cannot be placed.
std::optional<int64_t> WindowOf(const Record& r, const Limit& limit) {
  const int64_t p = limit.period.count();
  const int64_t first = FloorDiv(r.send_us, p);
  const int64_t last = FloorDiv(r.recv_us, p);
  if (first == last) return first;
  // Straddles an edge: the decision's reset_after names its window's end (the fixed window's
  // end is W + P; the sliding window's state lasts until W + 2P once the decision counted).
  const int64_t mid = r.send_us + (r.recv_us - r.send_us) / 2;
  const int64_t end = FloorDiv(mid + r.reset_after_us + p / 2, p);
  const int64_t w = end - (limit.algorithm == Algorithm::kFixedWindow ? 1 : 2);
  if (w >= first && w <= last) return w;
  return std::nullopt;
}

// E of an interval bound: for every group of admitted decisions that certainly lies within one
// interval, its excess over base + rate * (latest answer - earliest issue), attributed to the
// window of its earliest issue. `strict`: the interval is shorter than P (the sliding log);
// otherwise at most P.
void IntervalExcess(const std::vector<const Record*>& admitted, int64_t t0, double base,
                    double rate, int64_t p, bool strict, int64_t first_window,
                    std::vector<WindowStat>& windows) {
  const size_t n = admitted.size();
  if (n == 0 || windows.empty()) return;
  std::vector<size_t> by_send(n);
  std::iota(by_send.begin(), by_send.end(), 0);
  std::sort(by_send.begin(), by_send.end(),
            [&](size_t a, size_t b) { return admitted[a]->send_us < admitted[b]->send_us; });
  std::vector<size_t> position(n);
  std::vector<int64_t> send(n);
  std::vector<double> start_value(n);
  for (size_t i = 0; i < n; ++i) {
    position[by_send[i]] = i;
    send[i] = admitted[by_send[i]]->send_us;
    start_value[i] = rate * static_cast<double>(send[i] - t0);
  }
  // value[i] = rate * (s_i - t0) + #(answered so far, issued at or after s_i)
  MaxAddTree tree(start_value);
  std::vector<size_t> by_recv(n);
  std::iota(by_recv.begin(), by_recv.end(), 0);
  std::sort(by_recv.begin(), by_recv.end(),
            [&](size_t a, size_t b) { return admitted[a]->recv_us < admitted[b]->recv_us; });
  for (size_t j : by_recv) {
    const int64_t r = admitted[j]->recv_us;
    tree.Add(0, position[j], 1);
    const int64_t earliest = strict ? r - p + 1 : r - p;
    const size_t lo = std::lower_bound(send.begin(), send.end(), earliest) - send.begin();
    const size_t end = std::upper_bound(send.begin(), send.end(), r) - send.begin();
    size_t piece = lo;
    while (piece < end) {
      // One window's part of [lo, end): its groups' excess is that window's.
      const int64_t w = FloorDiv(send[piece], p);
      const size_t piece_end = std::min(
          end, static_cast<size_t>(std::lower_bound(send.begin() + static_cast<ptrdiff_t>(piece),
                                                    send.end(), (w + 1) * p) -
                                   send.begin()));
      const double excess =
          tree.Max(piece, piece_end - 1) - rate * static_cast<double>(r - t0) - base;
      // A group issued just before the run's first window (or after its last) counts there.
      const int64_t k =
          std::clamp<int64_t>(w - first_window, 0, static_cast<int64_t>(windows.size()) - 1);
      if (excess > windows[k].e) windows[k].e = excess;
      piece = piece_end;
    }
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

std::string BoundText(const Limit& limit) {
  switch (limit.algorithm) {
    case Algorithm::kFixedWindow:
    case Algorithm::kSlidingWindow:
      return "admitted per aligned window <= L";
    case Algorithm::kSlidingLog:
      return "admitted in every (a, a+P] <= L";
    case Algorithm::kTokenBucket:
    case Algorithm::kGcra:
      return absl::StrCat(
          "admitted in every [a, b], b-a <= P, <= C + L(b-a)/P + 1 (C = ", limit.Capacity(), ")");
  }
  return "";
}

Analysis Analyze(const Limit& limit, int64_t start_us, int64_t end_us,
                 std::vector<Record> records) {
  Analysis out;
  const int64_t p = limit.period.count();
  out.period_us = p;
  out.limit = limit.limit;
  std::erase_if(records, [](const Record& r) { return (r.flags & Record::kValid) == 0; });
  std::sort(records.begin(), records.end(),
            [](const Record& a, const Record& b) { return a.send_us < b.send_us; });
  out.decisions = std::move(records);

  const int64_t first = FloorDiv(start_us, p);
  const int64_t last = FloorDiv(end_us - 1, p);
  for (int64_t w = first; w <= last; ++w) out.windows.push_back({.start_us = w * p});
  auto window = [&](int64_t w) -> WindowStat* {
    const int64_t k = w - first;
    return k >= 0 && k < static_cast<int64_t>(out.windows.size()) ? &out.windows[k] : nullptr;
  };

  std::vector<const Record*> admitted;
  for (const Record& r : out.decisions) {
    if (WindowStat* w = window(FloorDiv(r.send_us, p))) ++w->offered;
    if ((r.flags & Record::kAllowed) == 0) continue;
    admitted.push_back(&r);
    if (IsWindowAlgorithm(limit.algorithm)) {
      const std::optional<int64_t> w = WindowOf(r, limit);
      if (!w) {
        ++out.ambiguous;
        // Counted where it was answered, for U only.
        if (WindowStat* u = window(FloorDiv(r.recv_us, p))) ++u->admitted;
        continue;
      }
      if (WindowStat* s = window(*w)) ++s->admitted;
    } else {
      const int64_t mid = r.send_us + (r.recv_us - r.send_us) / 2;
      if (WindowStat* s = window(FloorDiv(mid, p))) ++s->admitted;
    }
  }
  const auto l = static_cast<double>(limit.limit);
  if (IsWindowAlgorithm(limit.algorithm)) {
    // Ambiguous decisions are in `admitted` for U; E counts the placed ones only.
    std::vector<int64_t> placed(out.windows.size(), 0);
    for (const Record* r : admitted) {
      if (std::optional<int64_t> w = WindowOf(*r, limit); w && window(*w)) ++placed[*w - first];
    }
    for (size_t k = 0; k < out.windows.size(); ++k) {
      out.windows[k].e = static_cast<double>(placed[k]) - l;
    }
  } else {
    for (WindowStat& w : out.windows) w.e = 0;
    const int64_t t0 = start_us - 2 * p;
    if (limit.algorithm == Algorithm::kSlidingLog) {
      IntervalExcess(admitted, t0, l, 0, p, /*strict=*/true, first, out.windows);
    } else {
      IntervalExcess(admitted, t0, static_cast<double>(limit.Capacity()) + 1,
                     l / static_cast<double>(p), p, /*strict=*/false, first, out.windows);
    }
  }
  for (WindowStat& w : out.windows) {
    w.e = w.e > kEpsilon ? w.e / l : 0;
    if (w.start_us >= start_us && w.start_us + p <= end_us) {
      const double expected = std::min<double>(static_cast<double>(w.offered), l);
      w.u = std::max(0.0, expected - static_cast<double>(w.admitted)) / l;
    }
  }
  return out;
}

Summary Summarize(const Analysis& analysis, int64_t from_us, int64_t to_us, int64_t windows_from_us,
                  int64_t windows_to_us) {
  Summary s;
  std::vector<double> e;
  std::vector<double> u;
  for (const WindowStat& w : analysis.windows) {
    if (w.start_us < windows_from_us || w.start_us >= windows_to_us) continue;
    e.push_back(w.e);
    if (w.u) u.push_back(*w.u);
  }
  s.windows = static_cast<int>(e.size());
  s.u_windows = static_cast<int>(u.size());
  s.e_max = e.empty() ? 0 : *std::max_element(e.begin(), e.end());
  s.e_p99 = Percentile(e, 0.99);
  s.e_p50 = Percentile(e, 0.50);
  s.u_max = u.empty() ? 0 : *std::max_element(u.begin(), u.end());
  s.u_p99 = Percentile(u, 0.99);
  s.u_p50 = Percentile(u, 0.50);
  std::vector<int64_t> latency;
  std::vector<int64_t> store_latency;
  std::vector<int64_t> policy_latency;
  for (const Record& r : analysis.decisions) {
    if (r.send_us < from_us || r.send_us >= to_us) continue;
    ++s.decisions;
    if (r.flags & Record::kAllowed) ++s.admitted;
    if (r.flags & Record::kError) ++s.errors;
    if (r.flags & Record::kFallback) ++s.fallback;
    latency.push_back(r.recv_us - r.send_us);
    const bool policy = (r.flags & (Record::kError | Record::kFallback)) != 0;
    (policy ? policy_latency : store_latency).push_back(r.recv_us - r.send_us);
  }
  std::sort(latency.begin(), latency.end());
  s.p50_us = Percentile(latency, 0.50);
  s.p99_us = Percentile(latency, 0.99);
  s.max_us = latency.empty() ? 0 : latency.back();
  std::sort(store_latency.begin(), store_latency.end());
  std::sort(policy_latency.begin(), policy_latency.end());
  s.store_answers = static_cast<int64_t>(store_latency.size());
  s.store_p99_us = Percentile(store_latency, 0.99);
  s.policy_answers = static_cast<int64_t>(policy_latency.size());
  s.policy_p99_us = Percentile(policy_latency, 0.99);
  s.policy_max_us = policy_latency.empty() ? 0 : policy_latency.back();
  if (to_us > from_us && analysis.limit > 0) {
    const double periods =
        static_cast<double>(to_us - from_us) / static_cast<double>(analysis.period_us);
    s.offered_x = static_cast<double>(s.decisions) / periods / static_cast<double>(analysis.limit);
  }
  return s;
}

}  // namespace sluice::lease_error
