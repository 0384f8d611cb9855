#pragma once
// Where perfgate's own files are, wherever it was built or installed, so a
// shipped suite finds perfgate-sim and the torch workloads and `--profile
// ascend-910b` finds its profile without naming a checkout's build folder.
//
//   build tree:  <build>/perfgate, <build>/perfgate-sim, <build>/workloads -> scripts/workloads
//   installed:   <prefix>/bin/perfgate, <prefix>/libexec/perfgate/{perfgate-sim,workloads/},
//                <prefix>/share/perfgate/{suites,configs/...}

#include <string>

namespace perfgate::util {

// The running perfgate's own path (/proc/self/exe); "perfgate" if unreadable.
std::string self_executable();

// {perfgate_libexec}: PERFGATE_LIBEXEC if set; the executable's folder when
// perfgate-sim is beside it (a build tree); else <prefix>/libexec/perfgate.
std::string libexec_dir();

// <prefix>/share/perfgate when perfgate runs installed (PERFGATE_DATA
// overrides); empty in a build tree, whose suites and configs are the checkout's.
std::string data_dir();

}  // namespace perfgate::util
