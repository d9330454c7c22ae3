#include "src/server/store_gauges.h"

#include "src/server/observe/prometheus_text.h"

namespace sluice::server {
namespace {

void AppendRedisFamilies(const RedisStoreStats& r, std::string& out) {
  AppendCounter(out, "sluice_redis_script_calls_total", "Script calls made to Redis.",
                r.script_calls);
  AppendCounter(out, "sluice_redis_noscript_resends_total",
                "Calls resent because Redis lacked the script or function library.",
                r.noscript_resends);
  AppendCounter(out, "sluice_redis_connects_total",
                "Redis connections established (reconnects included).", r.connects);
  AppendCounter(out, "sluice_redis_connect_failures_total",
                "Redis connection attempts that failed.", r.connect_failures);
  AppendCounter(out, "sluice_redis_disconnects_total", "Established Redis connections lost.",
                r.disconnects);
}

void AppendLeaseFamilies(const LeaseStats& l, std::string& out) {
  AppendCounter(out, "sluice_lease_local_admits_total",
                "Decisions admitted from a lease, no Redis call.", l.local_admits);
  AppendCounter(out, "sluice_lease_local_denials_total",
                "Decisions denied from memory until the retry_after Redis gave.", l.local_denials);
  AppendCounter(out, "sluice_lease_calls_total", "Leasing script calls made for a decision.",
                l.lease_calls);
  AppendCounter(out, "sluice_lease_refills_total", "Leasing script calls made in the background.",
                l.refills);
  AppendCounter(out, "sluice_lease_refill_errors_total", "Background leasing calls that failed.",
                l.refill_errors);
  AppendCounter(out, "sluice_lease_exact_calls_total", "Decisions passed on as plain script calls.",
                l.exact_calls);
  AppendCounter(out, "sluice_lease_grants_total", "Grants of at least one unit.", l.grants);
  AppendCounter(out, "sluice_lease_units_granted_total", "Units granted to this instance.",
                l.units_granted);
  AppendCounter(out, "sluice_lease_units_expired_total", "Granted units whose lease ended unspent.",
                l.units_expired);
  AppendCounter(out, "sluice_lease_refunds_total", "Refund script calls.", l.refunds);
  AppendCounter(out, "sluice_lease_units_refunded_total", "Units given back to Redis.",
                l.units_refunded);
  AppendCounter(out, "sluice_lease_units_refunded_ending_total",
                "Units given back from leases about to end unspent.", l.units_refunded_ending);
  AppendGauge(out, "sluice_lease_keys", "Keys with a lease, a denial or a rate held.", l.keys);
  AppendGauge(out, "sluice_lease_instances_seen",
              "Instances counted as leaseholders at the last announcement (0: none answered).",
              l.instances_seen);
}

void AppendMemoryFamilies(const MemoryStoreStats& m, std::string& out) {
  AppendGauge(out, "sluice_memory_store_entries", "Entries in the memory store.", m.entries);
  AppendGauge(out, "sluice_memory_store_bytes",
              "Bytes the memory store counts against --memory-store-max-bytes.", m.bytes);
  AppendCounter(out, "sluice_memory_store_expired_total", "Entries removed after they expired.",
                m.expired);
  AppendCounter(out, "sluice_memory_store_evicted_total", "Live entries evicted to make room.",
                m.evicted);
  AppendCounter(out, "sluice_memory_store_denied_for_room_total",
                "New keys refused because the store was full.", m.denied_for_room);
}

}  // namespace

void AppendStoreFamilies(const StoreState& state, std::string& out) {
  if (state.redis_connected.has_value()) {
    AppendGauge(out, "sluice_redis_connected", "1 when a Redis connection is ready, else 0.",
                *state.redis_connected ? 1 : 0);
  }
  AppendGauge(out, "sluice_store_breaker_open",
              "1 while the failure policy's circuit breaker skips the store, else 0.",
              state.breaker_open ? 1 : 0);
  AppendCounter(out, "sluice_store_breaker_opens_total", "Times the circuit breaker opened.",
                state.breaker_opens);
  AppendCounter(out, "sluice_store_breaker_closes_total",
                "Times a probe succeeded and the breaker closed.", state.breaker_closes);
  if (state.redis.has_value()) {
    AppendRedisFamilies(*state.redis, out);
    if (state.redis->leases) AppendLeaseFamilies(state.redis->lease, out);
  }
  if (state.memory.has_value()) AppendMemoryFamilies(*state.memory, out);
}

StoreGauges::StoreGauges(const FailurePolicyStore& policy, const Store* backend)
    : policy_(policy),
      redis_(dynamic_cast<const RedisStore*>(backend)),
      memory_(dynamic_cast<const MemoryStore*>(backend)) {}

StoreState StoreGauges::ReadStoreState() const {
  const FailureStats failure = policy_.Stats();
  StoreState state{.breaker_open = failure.breaker_open,
                   .breaker_opens = failure.breaker_opens,
                   .breaker_closes = failure.breaker_closes};
  if (redis_ != nullptr) {
    state.redis = redis_->Stats();
    state.redis_connected = state.redis->connects > state.redis->disconnects;
  }
  if (memory_ != nullptr) state.memory = memory_->Stats();
  return state;
}

void StoreGauges::AppendPrometheus(std::string& out) const {
  AppendStoreFamilies(ReadStoreState(), out);
}

}  // namespace sluice::server
