#include "harness/exec/proc_tree.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace perfgate::exec {

GroupUsage sample_group(pid_t pgid) {
  GroupUsage u;
  static const long page = ::sysconf(_SC_PAGESIZE);
  static const long ticks = ::sysconf(_SC_CLK_TCK);
  DIR* d = ::opendir("/proc");
  if (!d) return u;
  char path[300];
  char buf[1024];
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    auto n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // Fields after the command name, which may itself hold spaces and ')'.
    char* p = std::strrchr(buf, ')');
    if (!p) continue;
    p += 2;
    char state = *p;
    // field 3 is state; we want 5 (pgrp), 14 (utime), 15 (stime), 24 (rss).
    long long field[25] = {};
    int idx = 3;
    char* save = nullptr;
    for (char* tok = strtok_r(p, " ", &save); tok && idx <= 24; tok = strtok_r(nullptr, " ", &save), ++idx)
      if (idx != 3) field[idx] = std::strtoll(tok, nullptr, 10);
    if (field[5] != pgid || state == 'Z') continue;  // zombies hold nothing and cannot be killed
    ++u.processes;
    u.rss_mb += static_cast<double>(field[24]) * static_cast<double>(page) / (1024.0 * 1024.0);
    u.cpu_s += static_cast<double>(field[14] + field[15]) / static_cast<double>(ticks);
  }
  ::closedir(d);
  return u;
}

}  // namespace perfgate::exec
