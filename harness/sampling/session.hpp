#pragma once
// Runs a trial's samplers while it lives, each on its own thread at the
// suite's interval, and hands their readings to whoever drains them (the
// runner's collector, on its own thread, which writes them to the store).

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/sampling/sampler.hpp"

namespace perfgate::sampling {

struct TimedReading {
  double t_s = 0;  // seconds since the session started
  Reading reading;
};

class SamplingSession {
 public:
  SamplingSession(std::vector<std::unique_ptr<Sampler>> samplers, double interval_s);
  ~SamplingSession();
  SamplingSession(const SamplingSession&) = delete;
  SamplingSession& operator=(const SamplingSession&) = delete;

  // Samplers that bracket the trial (the host probe) sample once now, before
  // the trial's process exists; times count from here.
  void before_start();
  // Starts one thread per sampler watching `root_pid`; the first sample is taken at once.
  void start(int root_pid);
  // Stops and joins the threads (a sample in flight finishes first); samplers
  // that bracket the trial sample once more.
  void stop();
  // Readings gathered since the last call, in the order they were taken.
  std::vector<TimedReading> drain();
  // One line per sampler that failed at least once (its first message and how
  // often), and one per sampler whose samples left something out (its note).
  std::vector<std::string> warnings() const;
  bool empty() const { return m_samplers.empty(); }

 private:
  struct Slot {
    std::unique_ptr<Sampler> sampler;
    std::string first_error;
    int errors = 0;
    int samples = 0;
  };
  void loop(Slot& slot, int pid);
  void take(Slot& slot, int pid);

  std::vector<Slot> m_samplers;
  double m_interval_s;
  double m_t0 = 0;
  bool m_t0_set = false;
  int m_pid = 0;
  bool m_stopped = false;
  mutable std::mutex m_mu;
  std::condition_variable m_cv;
  bool m_stop = false;
  std::vector<TimedReading> m_pending;
  std::vector<std::thread> m_threads;
};

}  // namespace perfgate::sampling
