// Helpers shared by the tests of the Redis store on a real Redis Cluster.
#ifndef SLUICE_TESTS_STORE_REDIS_CLUSTER_TEST_SUPPORT_H_
#define SLUICE_TESTS_STORE_REDIS_CLUSTER_TEST_SUPPORT_H_

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "sluice/key.h"
#include "sluice/limit.h"

#include "src/store/redis/client/cluster/cluster_slot.h"
#include "src/store/redis/redis_keys.h"
#include "tests/testing/redis_cluster.h"

namespace sluice::testing {

// TagsOnDistinctPrimaries()
//
// Returns the tags "<prefix>0", "<prefix>1", ... of the first `n` found whose keys (the store's
// default key prefix) are served by `n` different primaries of `cluster`; fewer when it has fewer.
inline std::vector<std::string> TagsOnDistinctPrimaries(RedisCluster& cluster,
                                                        const std::string& prefix, size_t n) {
  const RedisKeyScheme keys = *RedisKeyScheme::Create(kDefaultKeyPrefix);
  std::vector<std::string> tags;
  std::vector<int> ports;
  for (int i = 0; tags.size() < n && i < 1000; ++i) {
    const std::string tag = prefix + std::to_string(i);
    const int slot = ClusterHashSlot(keys.StateKey(TaggedKey(tag, "x"), Algorithm::kFixedWindow));
    absl::StatusOr<int> port = cluster.PrimaryForSlot(slot);
    if (!port.ok() || std::find(ports.begin(), ports.end(), *port) != ports.end()) continue;
    ports.push_back(*port);
    tags.push_back(tag);
  }
  return tags;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_STORE_REDIS_CLUSTER_TEST_SUPPORT_H_
