#include "src/server/fd_limit.h"

#include <cstdint>

#include "gtest/gtest.h"
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::server {
namespace {

// Verifies the soft limit is raised to the hard one. In a forked child, so that the test process
// keeps its limits: the child lowers its soft limit to 64 under a hard limit of 256, raises it,
// and reports through its exit status.
TEST(FdLimit, RaisesTheSoftLimitToTheHardLimit) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit limit{.rlim_cur = 64, .rlim_max = 256};
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(10);
    absl::StatusOr<FdLimit> raised = RaiseFdLimit();
    if (!raised.ok()) _exit(11);
    if (raised->soft_before != 64 || raised->soft != 256 || raised->hard != 256) _exit(12);
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur != 256) _exit(13);
    // Already at the hard limit: nothing changes.
    raised = RaiseFdLimit();
    _exit(raised.ok() && raised->soft_before == 256 && raised->soft == 256 ? 0 : 14);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(FdLimit, BudgetIsAQuarterBetweenOneAnd10000) {
  EXPECT_EQ(FdBudget(128), 32u);
  EXPECT_EQ(FdBudget(1024), 256u);
  EXPECT_EQ(FdBudget(3), 1u);
  EXPECT_EQ(FdBudget(39'999), 9'999u);
  EXPECT_EQ(FdBudget(40'000), 10'000u);
  EXPECT_EQ(FdBudget(UINT64_MAX), 10'000u);
}

}  // namespace
}  // namespace sluice::server
