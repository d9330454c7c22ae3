// GaugeSource: what a room holds at the moment it is asked (its connections, its counters, the
// state of a stream), read at each scrape of /metrics rather than pushed as it changes. Each room
// renders its own families: the store chain (src/server/store_gauges.h), the listeners
// (src/server/server_listeners.h), the xDS client (src/server/xds/xds_client.h), the rate limit
// quota service (src/server/grpc/rlqs_grpc_service.h) and the metrics' own series bounds
// (src/server/stats/metrics.h). Metrics::Render() appends them after its counters, through one
// GaugeList that RunServer builds.
//
// Events (a decision, a config load) are ProcessObserver's (process_observer.h), not gauges.
//
// Example:
//   GaugeList gauges({&store_gauges, &listeners, &metrics.SeriesGauges()});
//   metrics.SetGauges(&gauges);
//
// Thread safety: AppendPrometheus() may be called from any thread, while the source is in use.
#ifndef SLUICE_SERVER_OBSERVE_GAUGE_SOURCE_H_
#define SLUICE_SERVER_OBSERVE_GAUGE_SOURCE_H_

#include <string>
#include <utility>
#include <vector>

namespace sluice::server {

class GaugeSource {
 public:
  GaugeSource() = default;
  GaugeSource(const GaugeSource&) = delete;
  GaugeSource& operator=(const GaugeSource&) = delete;
  virtual ~GaugeSource() = default;

  // GaugeSource::AppendPrometheus()
  //
  // Appends the source's families, as they are now, to `out` in the Prometheus text exposition
  // format (version 0.0.4): each family's # HELP and # TYPE lines, then its samples. Called at
  // each scrape; a slow source delays only the scrape.
  virtual void AppendPrometheus(std::string& out) const = 0;
};

// GaugeList: sources rendered one after the other, in the order given; null entries (a room the
// settings leave off) are skipped. The order is the order of the families on /metrics.
//
// Thread safety: thread-safe when each source is; the sources must outlive the list.
class GaugeList final : public GaugeSource {
 public:
  explicit GaugeList(std::vector<const GaugeSource*> sources) : sources_(std::move(sources)) {}

  void AppendPrometheus(std::string& out) const override {
    for (const GaugeSource* s : sources_) {
      if (s != nullptr) s->AppendPrometheus(out);
    }
  }

 private:
  const std::vector<const GaugeSource*> sources_;
};

}  // namespace sluice::server

#endif  // SLUICE_SERVER_OBSERVE_GAUGE_SOURCE_H_
