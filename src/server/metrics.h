// Forwards to src/server/stats/metrics.h, where Metrics lives now, for store_factory.h alone: that
// file is on its way to src/store/ (issue 19) and is not edited here. Include the stats header.
//
// Thread safety: see src/server/stats/metrics.h.
#ifndef SLUICE_SERVER_METRICS_H_
#define SLUICE_SERVER_METRICS_H_

#include "src/server/stats/metrics.h"  // IWYU pragma: export

#endif  // SLUICE_SERVER_METRICS_H_
