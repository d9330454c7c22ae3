// CheckAnalysis(): worked examples of analysis.h, run by `lease_error check-analysis` (and by
// bench/lease_error.sh before its sweeps): a fixed window at its bound, one over, a call straddling
// a window edge, under-admission, a sliding log and a token bucket at their bounds (with call
// latencies that would fake an excess if timing were read naively) and over them.
#ifndef SLUICE_BENCH_LEASE_ERROR_ANALYSIS_CHECK_H_
#define SLUICE_BENCH_LEASE_ERROR_ANALYSIS_CHECK_H_

namespace sluice::lease_error {

// CheckAnalysis()
//
// Returns true when every example gives the E and U it should; else false, each failure on stderr.
bool CheckAnalysis();

}  // namespace sluice::lease_error

#endif  // SLUICE_BENCH_LEASE_ERROR_ANALYSIS_CHECK_H_
