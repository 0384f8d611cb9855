#pragma once
// Slots of one node: which devices each holds, what a trial on it is told,
// which pending trial a freed slot takes next, and the per-device lock that
// keeps two perfgate processes on one node off the same device.

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "harness/model/plan.hpp"
#include "harness/model/slots.hpp"
#include "harness/util/error.hpp"
#include "harness/util/file_lock.hpp"

namespace perfgate::runner {

// The largest device id a device list may name.
inline constexpr long k_max_device_id = 65535;
// "0-7", "0,2,4-5": ascending, no repeats. Errors name the bad part.
Expected<std::vector<int>> parse_device_list(std::string_view text);

// The slots of a spec: its devices cut into groups of per_trial, in order.
// Devices that do not fill a last group are an error (a 2-card trial on 7
// cards would leave one idle without saying so). No devices: one slot.
Expected<std::vector<model::Slot>> make_slots(const model::SlotsSpec& spec);

// The variable a kind's devices are exported in ("" for cpu).
std::string device_env_name(const model::SlotsSpec& spec);

// What a trial on `slot` gets in its environment: the device variable with
// the ids joined by commas, and PERFGATE_SLOT / PERFGATE_SLOT_DEVICES.
std::map<std::string, std::string> slot_environment(const model::Slot& slot);

// Which of the pending trials (indexes into plan.trials, in plan order) a
// freed slot takes: the first whose configuration has run least often on
// that slot so far, so every configuration's repeats spread over the slots
// and a slow device cannot pose as a slow configuration. `runs_on_slot`
// counts, per case index, the trials of that case the slot has started.
// Returns an index into `pending`; pending must not be empty.
// Where the device locks live: $PERFGATE_LOCK_DIR, else /tmp/perfgate-locks
// (shared by every user of the node, so created world-writable and sticky).
std::string device_lock_dir();

std::size_t pick_trial(const model::Plan& plan, const std::vector<std::size_t>& pending,
                       const std::map<std::size_t, int>& runs_on_slot);

// Holds a slot's devices for one trial: an exclusive flock on one lock file
// per device (<dir>/<kind>-<id>.lock), taken in ascending order so two
// processes wanting overlapping slots cannot deadlock. The kernel drops the
// locks when the process dies, so a killed perfgate never leaves a device
// held. Move-only; the destructor releases.
class DeviceLock {
 public:
  DeviceLock() = default;

  // Takes every device of the slot, waiting for each. `on_wait` is called
  // once per device another process holds for more than a second (a
  // message for the user: "waiting for npu 3, held by another perfgate").
  // While waiting, `give_up` is asked every 50 ms; true ends the wait with
  // an error (Ctrl-C).
  static Expected<DeviceLock> acquire(const std::string& dir, const model::Slot& slot,
                                      const std::function<void(int device, const std::string& path)>& on_wait = {},
                                      const std::function<bool()>& give_up = {});
  // The same without waiting: an error naming the first device held elsewhere.
  static Expected<DeviceLock> try_acquire(const std::string& dir, const model::Slot& slot);

  bool held() const { return !m_locks.empty(); }
  void release();

 private:
  std::vector<util::FileLock> m_locks;
};

}  // namespace perfgate::runner
