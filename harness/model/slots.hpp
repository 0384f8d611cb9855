#pragma once
// Device slots of one node: the places a trial may run alone
// (../shared/DESIGN.md, "Execution"). `slots:` in a suite or profile, or
// `--slots`, describes them, e.g. {kind: npu, devices: [0-7], per_trial: 1}.

#include <string>
#include <vector>

#include "harness/model/source_loc.hpp"

namespace perfgate::model {

struct SlotsSpec {
  // npu (ASCEND_RT_VISIBLE_DEVICES), cuda (CUDA_VISIBLE_DEVICES), cpu (a CPU
  // set through sched_setaffinity), or any other kind with `env` naming the
  // variable that takes the device list.
  std::string kind = "cpu";
  std::vector<int> devices;  // device ids, or CPU numbers for kind cpu; empty: one slot, no devices
  int per_trial = 1;         // devices (or CPUs) each trial gets
  std::string env;           // the variable for a kind perfgate does not know
  SourceLoc loc;             // where the suite or profile said it
};

// One slot: its place among the node's slots and the devices it holds.
struct Slot {
  int index = 0;
  std::string kind;
  std::vector<int> devices;
  std::string env;  // the variable the devices are exported in; empty for cpu
};

}  // namespace perfgate::model
