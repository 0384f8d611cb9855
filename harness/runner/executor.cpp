#include "harness/runner/executor.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "harness/runner/slots.hpp"
#include "harness/util/interrupt.hpp"

namespace perfgate::runner {

namespace {

bool interrupted() { return util::interrupt_count() > 0; }

// The slot's device locks, waiting (with a message) while another process
// holds one; nullopt with `ex` filled when Ctrl-C ended the wait or a lock
// file could not be used.
std::optional<DeviceLock> lock_slot(const model::Slot& slot, const ExecutorOptions& opts, Executed& ex) {
  if (slot.devices.empty()) return DeviceLock{};
  auto on_wait = [&](int device, const std::string& path) {
    if (opts.on_wait) opts.on_wait(slot, device, path);
  };
  auto lock =
      DeviceLock::acquire(opts.lock_dir.empty() ? device_lock_dir() : opts.lock_dir, slot, on_wait, interrupted);
  if (lock) return std::move(*lock);
  if (interrupted())
    ex.interrupted = true;
  else
    ex.lock_failure = lock.error();
  return std::nullopt;
}

// Why a slot could not take its devices (Ctrl-C, a lock file), into the run's result.
void keep_lock_failure(const Executed& mine, Executed& ex) {
  ex.interrupted |= mine.interrupted;
  if (!mine.lock_failure) ex.lock_failure = mine.lock_failure;
}

void note_end(TrialEnd end, Executed& ex) {
  if (end == TrialEnd::Interrupted) ex.interrupted = true;
  if (end == TrialEnd::StoreFailed) ex.store_failed = true;
}

}  // namespace

SerialExecutor::SerialExecutor(model::Slot slot, ExecutorOptions opts)
    : m_slot(std::move(slot)), m_opts(std::move(opts)) {}

Executed SerialExecutor::execute(const model::Plan&, const std::vector<std::size_t>& indexes,
                                 const RunTrialFn& run_trial) {
  Executed ex;
  for (std::size_t index : indexes) {
    if (interrupted()) {
      ex.interrupted = true;
      break;
    }
    auto lock = lock_slot(m_slot, m_opts, ex);
    if (!lock) break;
    TrialEnd end = run_trial(index, m_slot);
    note_end(end, ex);
    if (end != TrialEnd::Done) break;
  }
  return ex;
}

SlottedExecutor::SlottedExecutor(std::vector<model::Slot> slots, ExecutorOptions opts)
    : m_slots(std::move(slots)), m_opts(std::move(opts)) {}

Executed SlottedExecutor::execute(const model::Plan& plan, const std::vector<std::size_t>& indexes,
                                  const RunTrialFn& run_trial) {
  std::mutex mu;  // guards everything below
  std::vector<std::size_t> pending = indexes;
  // Per slot: how many trials of each configuration it has started.
  std::vector<std::map<std::size_t, int>> runs_on_slot(m_slots.size());
  bool stop = false;
  Executed ex;

  auto work = [&](std::size_t s) {
    const model::Slot& slot = m_slots[s];
    while (true) {
      {
        std::lock_guard lock(mu);
        if (stop || pending.empty()) return;
      }
      if (interrupted()) {
        std::lock_guard lock(mu);
        ex.interrupted = true;
        stop = true;
        return;
      }
      // Devices first, then the trial: a slot that waits for another
      // perfgate takes no trial the free slots could run meanwhile.
      Executed mine;
      auto devices = lock_slot(slot, m_opts, mine);
      std::size_t index = 0;
      {
        std::lock_guard lock(mu);
        if (!devices) {
          keep_lock_failure(mine, ex);
          stop = true;
          return;
        }
        if (stop || pending.empty()) return;
        std::size_t k = pick_trial(plan, pending, runs_on_slot[s]);
        index = pending[k];
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
        ++runs_on_slot[s][plan.trials.at(index).case_index];
      }
      TrialEnd end = run_trial(index, slot);
      if (end != TrialEnd::Done) {
        std::lock_guard lock(mu);
        note_end(end, ex);
        stop = true;
        return;
      }
    }
  };

  std::vector<std::thread> threads;
  threads.reserve(m_slots.size());
  for (std::size_t s = 0; s < m_slots.size(); ++s) threads.emplace_back(work, s);
  for (auto& t : threads) t.join();
  return ex;
}

QueueExecutor::QueueExecutor(std::vector<model::Slot> slots, ExecutorOptions opts, QueueSource source)
    : m_slots(slots.empty() ? std::vector<model::Slot>{model::Slot{}} : std::move(slots)),
      m_opts(std::move(opts)),
      m_source(std::move(source)) {}

Executed QueueExecutor::execute(const model::Plan& plan, const std::vector<std::size_t>&, const RunTrialFn& run_trial) {
  std::mutex mu;  // guards ex, stop and the queue calls
  bool stop = false;
  Executed ex;
  auto work = [&](std::size_t s) {
    const model::Slot& slot = m_slots[s];
    while (true) {
      {
        std::lock_guard lock(mu);
        if (stop) return;
      }
      if (interrupted()) {
        std::lock_guard lock(mu);
        ex.interrupted = stop = true;
        return;
      }
      Executed mine;
      auto devices = lock_slot(slot, m_opts, mine);
      std::optional<std::size_t> index;
      {
        std::lock_guard lock(mu);
        if (!devices) {
          keep_lock_failure(mine, ex);
          stop = true;
          return;
        }
        if (stop) return;
        auto c = m_source.claim();
        if (!c) {
          ex.queue_failure = c.error();
          stop = true;
          return;
        }
        index = *c;
        if (index && *index >= plan.trials.size()) {
          ex.queue_failure =
              Error::harness(fmt::format("the queue names trial {} of a plan of {}", *index, plan.trials.size()));
          stop = true;
          return;
        }
      }
      if (!index) {
        devices->release();
        Expected<bool> more = false;
        {
          std::lock_guard lock(mu);
          more = m_source.may_come();
          if (!more) {
            ex.queue_failure = more.error();
            stop = true;
            return;
          }
        }
        if (!*more) return;
        // Wait for another worker's lease to run out, a slice at a time so Ctrl-C ends the wait.
        for (double waited = 0; waited < m_source.poll_s && !interrupted(); waited += 0.05)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      TrialEnd end = run_trial(*index, slot);
      if (end != TrialEnd::Done) {
        std::lock_guard lock(mu);
        note_end(end, ex);
        stop = true;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(m_slots.size());
  for (std::size_t s = 0; s < m_slots.size(); ++s) threads.emplace_back(work, s);
  for (auto& t : threads) t.join();
  return ex;
}

std::unique_ptr<Executor> make_local_executor(std::vector<model::Slot> slots, ExecutorOptions opts) {
  if (slots.size() <= 1)
    return std::make_unique<SerialExecutor>(slots.empty() ? model::Slot{} : std::move(slots.front()), std::move(opts));
  return std::make_unique<SlottedExecutor>(std::move(slots), std::move(opts));
}

}  // namespace perfgate::runner
