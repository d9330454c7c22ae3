// Helpers for middleware tests: requests that own their strings, and a store that records the keys
// it is asked about.
#ifndef SLUICE_TESTS_HTTP_HTTP_TEST_UTIL_H_
#define SLUICE_TESTS_HTTP_HTTP_TEST_UTIL_H_

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

#include "sluice/http/middleware.h"
#include "sluice/http/middleware_config.h"
#include "sluice/http/request.h"
#include "sluice/store.h"
#include "sluice/store_wrapper.h"

namespace sluice::http::testing {

// A request whose strings live as long as it does.
struct TestRequest {
  std::string method = "GET";
  std::string path = "/";
  std::string peer = "192.0.2.7";
  std::vector<std::pair<std::string, std::string>> headers{};
  std::string route_template{};

  TestRequest& Header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

// Holds the header views of a TestRequest for one call.
class ViewOf {
 public:
  explicit ViewOf(const TestRequest& r) {
    for (const auto& [name, value] : r.headers) fields_.push_back({name, value});
    view_ = RequestView{.method = r.method,
                        .path = r.path,
                        .route_template = r.route_template,
                        .headers = fields_,
                        .peer_address = r.peer};
  }
  const RequestView& view() const { return view_; }

 private:
  std::vector<HeaderField> fields_;
  RequestView view_;
};

inline Verdict Send(Middleware& middleware, const TestRequest& request) {
  return middleware.Decide(ViewOf(request).view());
}

inline std::string HeaderOr(const Verdict& v, std::string_view name, std::string fallback = "-") {
  const std::string* value = v.FindHeader(name);
  return value != nullptr ? *value : fallback;
}

inline std::shared_ptr<const MiddlewareConfig> Rules(std::string_view yaml) {
  absl::StatusOr<std::shared_ptr<const MiddlewareConfig>> config =
      ParseMiddlewareConfig(yaml, "test.yaml");
  if (!config.ok()) {
    ADD_FAILURE() << config.status();
    return nullptr;
  }
  return *std::move(config);
}

// Forwards to another store and records every key of every CheckAll.
class RecordingStore final : public StoreWrapper {
 public:
  explicit RecordingStore(Store& target) : StoreWrapper(target) {}

  std::vector<std::string> keys() const {
    absl::MutexLock lock(&mu_);
    return keys_;
  }

  std::string_view Name() const override { return "recording"; }

 protected:
  void Decide(std::span<const LimitCheck> checks, MultiDecisionCallback done) override {
    for (const LimitCheck& c : checks) Record(c.key);
    DecideOn(inner(), checks, std::move(done));
  }

 private:
  void Record(std::string_view key) {
    absl::MutexLock lock(&mu_);
    if (std::find(keys_.begin(), keys_.end(), key) == keys_.end()) keys_.emplace_back(key);
  }

  mutable absl::Mutex mu_;
  std::vector<std::string> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::http::testing

#endif  // SLUICE_TESTS_HTTP_HTTP_TEST_UTIL_H_
