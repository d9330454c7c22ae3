#include "src/store/redis/client/cluster/cluster_slot.h"

namespace sluice {
namespace {

// CRC16-CCITT (XModem), the checksum of Redis Cluster's key slots (src/crc16.c).
uint16_t Crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (unsigned char c : bytes) {
    crc ^= static_cast<uint16_t>(c) << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

}  // namespace

uint16_t ClusterHashSlot(std::string_view redis_key) {
  // As keyHashSlot() in Redis's cluster.c: the first '{', and the first '}' after it.
  const size_t open = redis_key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = redis_key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      redis_key = redis_key.substr(open + 1, close - open - 1);
    }
  }
  return Crc16(redis_key) & (kClusterSlots - 1);
}

}  // namespace sluice
