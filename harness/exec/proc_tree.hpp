#pragma once
// Resource use of a process group read from /proc (Linux).

#include <sys/types.h>

namespace perfgate::exec {

struct GroupUsage {
  int processes = 0;
  double rss_mb = 0;   // sum of resident set sizes
  double cpu_s = 0;    // sum of user + system time of the live members
};

// Scans /proc for members of process group `pgid`.
GroupUsage sample_group(pid_t pgid);

}  // namespace perfgate::exec
