#pragma once
// Executors decide where and when the trials of a plan run; what running one
// trial means (spec, launch, collector, store) is the caller's function and
// the same for all of them (../shared/DESIGN.md, "Execution"):
// - SerialExecutor: one trial at a time, in the plan's seeded order, on one
//   slot (which may hold devices: `--slots npu:3` on a shared node).
// - SlottedExecutor: one thread per slot of the node; a freed slot takes the
//   pending trial whose configuration it has run least (pick_trial), so the
//   run keeps its interleaving and no configuration sits on one device.
// Both hold a slot's device locks for the whole trial, stop taking trials on
// Ctrl-C (every running trial ends through its launcher) or when a trial
// reports that the store failed, and never start a trial twice.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/model/plan.hpp"
#include "harness/model/slots.hpp"
#include "harness/util/error.hpp"

namespace perfgate::runner {

// How one trial ended, as far as the executor cares.
enum class TrialEnd { Done, Interrupted, StoreFailed };

// Runs plan.trials[index] on `slot`. Called from the executor's threads,
// several at once for a SlottedExecutor.
using RunTrialFn = std::function<TrialEnd(std::size_t index, const model::Slot& slot)>;

struct ExecutorOptions {
  std::string lock_dir;  // device lock files; see device_lock_dir()
  // A message for the user when a slot's device is held by another process.
  std::function<void(const model::Slot& slot, int device, const std::string& lock_path)> on_wait;
};

struct Executed {
  bool interrupted = false;
  bool store_failed = false;
  Status lock_failure = Ok{};   // a device lock that could not be taken (not a wait)
  Status queue_failure = Ok{};  // the fleet queue could not be read
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs the trials `indexes` (into plan.trials, in plan order) and returns
  // once none is running.
  virtual Executed execute(const model::Plan& plan, const std::vector<std::size_t>& indexes,
                           const RunTrialFn& run_trial) = 0;
};

class SerialExecutor final : public Executor {
 public:
  SerialExecutor(model::Slot slot, ExecutorOptions opts);
  Executed execute(const model::Plan& plan, const std::vector<std::size_t>& indexes,
                   const RunTrialFn& run_trial) override;

 private:
  model::Slot m_slot;
  ExecutorOptions m_opts;
};

class SlottedExecutor final : public Executor {
 public:
  SlottedExecutor(std::vector<model::Slot> slots, ExecutorOptions opts);
  Executed execute(const model::Plan& plan, const std::vector<std::size_t>& indexes,
                   const RunTrialFn& run_trial) override;

 private:
  std::vector<model::Slot> m_slots;
  ExecutorOptions m_opts;
};

// A fleet worker's executor: the trials come from the run's queue in the
// database (claimed one at a time, whatever `indexes` says), one thread per
// slot of the node; a slot takes its devices first, then a claim. When
// nothing is pending but trials may still come back (another worker's lease
// may run out), it polls; it returns when the queue has nothing left.
struct QueueSource {
  // The next trial (index into plan.trials) claimed for this worker, or
  // nullopt when none is pending now.
  std::function<Expected<std::optional<std::size_t>>()> claim;
  // Whether a trial may still become pending (others hold claims).
  std::function<Expected<bool>()> may_come;
  double poll_s = 1;
};

class QueueExecutor final : public Executor {
 public:
  QueueExecutor(std::vector<model::Slot> slots, ExecutorOptions opts, QueueSource source);
  Executed execute(const model::Plan& plan, const std::vector<std::size_t>& indexes,
                   const RunTrialFn& run_trial) override;

 private:
  std::vector<model::Slot> m_slots;
  ExecutorOptions m_opts;
  QueueSource m_source;
};

// The executor for a node's slots: serial for one, slotted for more.
std::unique_ptr<Executor> make_local_executor(std::vector<model::Slot> slots, ExecutorOptions opts);

}  // namespace perfgate::runner
