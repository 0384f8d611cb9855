#include "harness/runner/slots.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "harness/util/file_lock.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::runner {
namespace fs = std::filesystem;

Expected<std::vector<int>> parse_device_list(std::string_view text) {
  std::vector<int> out;
  if (util::trim(text).empty()) return Error::input("an empty device list");
  for (const std::string& part_text : util::split(text, ',')) {
    std::string_view part = part_text;
    auto dash = part.find('-');
    std::optional<long> lo, hi;
    if (dash == std::string_view::npos)
      lo = hi = util::parse_non_negative(part);
    else {
      lo = util::parse_non_negative(part.substr(0, dash));
      hi = util::parse_non_negative(part.substr(dash + 1));
    }
    if (!lo || !hi || *lo > *hi)
      return Error::input(
          fmt::format("device list '{}': '{}' is not a device id or a range like 0-7", text, util::trim(part)));
    // A device id is an int in the environment a trial gets, and no node has
    // more than a few dozen devices: an id past this is a typo, and the
    // range's loop below cannot step past the largest long (the fuzzer's
    // "0-9223372036854775807" did).
    if (*hi > k_max_device_id)
      return Error::input(fmt::format("device list '{}': device id {} is larger than {}, the largest perfgate takes",
                                      text, *hi, k_max_device_id));
    if (*hi - *lo > 4096)
      return Error::input(fmt::format("device list '{}': range '{}' is too large", text, util::trim(part)));
    for (long d = *lo; d <= *hi; ++d) out.push_back(static_cast<int>(d));
  }
  std::vector<int> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end())
    return Error::input(fmt::format("device list '{}' names device {} twice", text, *dup));
  return sorted;
}

std::string device_env_name(const model::SlotsSpec& spec) {
  if (!spec.env.empty()) return spec.env;
  if (spec.kind == "npu") return "ASCEND_RT_VISIBLE_DEVICES";
  if (spec.kind == "cuda" || spec.kind == "gpu") return "CUDA_VISIBLE_DEVICES";
  return "";
}

Expected<std::vector<model::Slot>> make_slots(const model::SlotsSpec& spec) {
  std::vector<model::Slot> slots;
  const std::string env = device_env_name(spec);
  if (spec.kind != "cpu" && env.empty())
    return Error::input(
        fmt::format("slots of kind '{}': perfgate knows npu, cuda and cpu; name the variable that "
                    "takes the device list with env:",
                    spec.kind));
  if (spec.per_trial < 1)
    return Error::input(fmt::format("slots: per_trial must be at least 1, not {}", spec.per_trial));
  if (spec.devices.empty()) {
    slots.push_back(model::Slot{0, spec.kind, {}, env});
    return slots;
  }
  const std::size_t per = static_cast<std::size_t>(spec.per_trial);
  if (spec.devices.size() % per != 0)
    return Error::input(fmt::format("slots: {} {} device(s) do not divide into groups of per_trial {} ({} left over)",
                                    spec.devices.size(), spec.kind, per, spec.devices.size() % per));
  for (std::size_t i = 0; i < spec.devices.size(); i += per) {
    model::Slot s;
    s.index = static_cast<int>(slots.size());
    s.kind = spec.kind;
    s.devices.assign(spec.devices.begin() + static_cast<std::ptrdiff_t>(i),
                     spec.devices.begin() + static_cast<std::ptrdiff_t>(i + per));
    s.env = env;
    slots.push_back(std::move(s));
  }
  return slots;
}

std::map<std::string, std::string> slot_environment(const model::Slot& slot) {
  std::map<std::string, std::string> env;
  env["PERFGATE_SLOT"] = std::to_string(slot.index);
  env["PERFGATE_SLOT_DEVICES"] = util::join_ints(slot.devices);
  if (!slot.env.empty() && !slot.devices.empty()) env[slot.env] = util::join_ints(slot.devices);
  return env;
}

std::string device_lock_dir() {
  if (const char* d = std::getenv("PERFGATE_LOCK_DIR"); d && *d) return d;
  return "/tmp/perfgate-locks";
}

std::size_t pick_trial(const model::Plan& plan, const std::vector<std::size_t>& pending,
                       const std::map<std::size_t, int>& runs_on_slot) {
  std::size_t best = 0;
  int best_runs = -1;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const std::size_t case_index = plan.trials.at(pending[i]).case_index;
    auto it = runs_on_slot.find(case_index);
    const int runs = it == runs_on_slot.end() ? 0 : it->second;
    if (best_runs < 0 || runs < best_runs) {
      best = i;
      best_runs = runs;
      if (runs == 0) break;  // nothing beats a configuration new to this slot; plan order breaks ties
    }
  }
  return best;
}

void DeviceLock::release() { m_locks.clear(); }

namespace {

// Locks every device of the slot, in device order (two perfgates asking for
// overlapping slots cannot each hold what the other waits for).
Expected<std::vector<util::FileLock>> lock_devices(const std::string& dir, const model::Slot& slot, bool wait,
                                                   const std::function<void(int, const std::string&)>& on_wait,
                                                   const std::function<bool()>& give_up) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return Error::harness(fmt::format("cannot create the device lock folder {}: {}", dir, ec.message()));
    // Every user's perfgate locks here; the sticky bit keeps them from removing each other's files.
    ::chmod(dir.c_str(), 01777);
  }
  std::vector<int> ids = slot.devices;
  std::sort(ids.begin(), ids.end());
  std::vector<util::FileLock> locks;  // what was taken is let go on an error
  for (int id : ids) {
    const std::string path = (fs::path(dir) / fmt::format("{}-{}.lock", slot.kind, id)).string();
    util::FileLock::WaitOptions wo;
    wo.wait = wait;
    wo.what = fmt::format("{} {}", slot.kind, id);
    wo.give_up = give_up;
    if (on_wait) wo.on_wait = [&on_wait, id, path] { on_wait(id, path); };
    auto lock = util::FileLock::acquire(path, wo);
    if (!lock) return lock.error();
    locks.push_back(std::move(*lock));
  }
  return locks;
}

}  // namespace

Expected<DeviceLock> DeviceLock::acquire(const std::string& dir, const model::Slot& slot,
                                         const std::function<void(int, const std::string&)>& on_wait,
                                         const std::function<bool()>& give_up) {
  auto locks = lock_devices(dir, slot, true, on_wait, give_up);
  if (!locks) return locks.error();
  DeviceLock lock;
  lock.m_locks = std::move(*locks);
  return lock;
}

Expected<DeviceLock> DeviceLock::try_acquire(const std::string& dir, const model::Slot& slot) {
  auto locks = lock_devices(dir, slot, false, {}, {});
  if (!locks) return locks.error();
  DeviceLock lock;
  lock.m_locks = std::move(*locks);
  return lock;
}

}  // namespace perfgate::runner
