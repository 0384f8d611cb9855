// The concrete samplers behind make_sampler(): the trial's process tree from
// /proc, the accelerators through npu-smi / nvidia-smi, and suite-declared
// commands read with a regex. A sampler never throws and never fails a
// trial: whatever goes wrong comes back as an Error the session reports once.
//
// Messages name the tool or command and quote what could not be read, but do
// not start with the sampler's name: SamplingSession and the runner put
// "sampler <name>: " in front of every one.

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/exec/capture.hpp"
#include "harness/exec/proc_tree.hpp"
#include "harness/sampling/host_probe.hpp"
#include "harness/sampling/sampler.hpp"
#include "harness/util/environment.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/user_regex.hpp"

namespace perfgate::sampling {
namespace {

// npu-smi info takes 0.2-1 s on a busy 8-card host; five seconds means the
// tool hangs (driver reset, device lost), and the sample is better skipped.
constexpr double k_tool_timeout_s = 5;
// Messages quote this much of output the parser could not read.
constexpr std::size_t k_quote_chars = 120;

// Tools are looked up on every sample (util::find_on_path: a few stat
// calls), so a tool installed while a soak runs is picked up.
using util::find_on_path;

// The first non-blank line, cut to a readable length.
std::string first_line(std::string_view text) {
  for (auto line : util::split(text, '\n')) {
    auto t = std::string(util::trim(line));
    if (t.empty()) continue;
    if (t.size() > k_quote_chars) t = t.substr(0, k_quote_chars) + "...";
    return t;
  }
  return "";
}

// argv with its program found on PATH: the launcher would search PATH
// again; this is the one we checked.
Expected<std::vector<std::string>> resolved(std::vector<std::string> argv) {
  auto exe = find_on_path(argv.front());
  if (!exe) return Error::harness(fmt::format("{} not found on PATH", argv.front()));
  argv.front() = *exe;
  return argv;
}

// Runs a tool without a shell and returns its stdout; empty output is an
// error unless it is an answer (a list of processes with none in it).
Expected<std::string> run_tool(const std::vector<std::string>& command, bool empty_is_answer = false) {
  auto argv = resolved(command);
  if (!argv) return argv.error();
  const std::string shown = util::join(command, " ");
  auto out = exec::capture_output(*argv, k_tool_timeout_s);
  if (!out)
    return Error::harness(
        fmt::format("`{}` failed (non-zero exit, or no answer within {:g} s)", shown, k_tool_timeout_s));
  if (util::trim(*out).empty() && !empty_is_answer) return Error::harness(fmt::format("`{}` printed nothing", shown));
  return std::move(*out);
}

// Runs `body`, turning any exception into an Error: a sampler runs on its
// own thread where an escaping exception would end the harness.
template <typename Body>
Expected<std::vector<Reading>> guarded(Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Error::harness(fmt::format("unexpected failure: {}", e.what()));
  } catch (...) {
    return Error::harness("unexpected failure");
  }
}

// ------------------------------------------------------------------ tools ---

class NpuSmiSampler final : public Sampler {
 public:
  explicit NpuSmiSampler(std::vector<int> devices) : m_devices(std::move(devices)) {}
  std::string_view name() const override { return "npu-smi"; }
  // Only `npu-smi info`: one process launch per sample whatever the card
  // count. The per-card `-t usages` / `-t common` queries would cost two
  // launches per card per sample (16 on an 8-card node) for a few extra keys;
  // a suite that wants one of them (the AI core's current frequency) names
  // it in a `command` sampler.
  Expected<std::vector<Reading>> sample(int) override {
    return guarded([&]() -> Expected<std::vector<Reading>> {
      auto out = run_tool({"npu-smi", "info"});
      if (!out) return out.error();
      auto readings = parse_npu_smi_info(*out);
      if (readings.empty())
        return Error::harness(
            fmt::format("no NPU found in the output of `npu-smi info`; first line: '{}'", first_line(*out)));
      readings = only_devices(std::move(readings), m_devices);
      if (readings.empty())
        return Error::harness(
            fmt::format("`npu-smi info` lists none of this trial's NPUs ({})", util::join_ints(m_devices)));
      return readings;
    });
  }

 private:
  std::vector<int> m_devices;
};

class NvidiaSmiSampler final : public Sampler {
 public:
  explicit NvidiaSmiSampler(std::vector<int> devices) : m_devices(std::move(devices)) {
    std::vector<std::string> names;
    for (const auto& f : nvidia_fields()) names.push_back(f.first);
    m_argv = {"nvidia-smi", "--query-gpu=" + util::join(names, ","), "--format=csv,noheader,nounits"};
  }
  std::string_view name() const override { return "nvidia-smi"; }
  Expected<std::vector<Reading>> sample(int) override {
    return guarded([&]() -> Expected<std::vector<Reading>> {
      auto out = run_tool(m_argv);
      if (!out) return out.error();
      auto readings = parse_nvidia_smi_csv(*out);
      if (readings.empty())
        return Error::harness(
            fmt::format("no GPU found in the output of `nvidia-smi --query-gpu`; first line: '{}'", first_line(*out)));
      readings = only_devices(std::move(readings), m_devices);
      if (readings.empty())
        return Error::harness(
            fmt::format("`nvidia-smi` lists none of this trial's GPUs ({})", util::join_ints(m_devices)));
      return readings;
    });
  }

 private:
  std::vector<std::string> m_argv;
  std::vector<int> m_devices;
};

// ---------------------------------------------------------------- command ---

class CommandSampler final : public Sampler {
 public:
  CommandSampler(std::string label, std::vector<std::string> argv, std::string regex_text, util::UserRegex re,
                 std::vector<std::pair<std::size_t, std::string>> groups)
      : m_label(std::move(label)),
        m_argv(std::move(argv)),
        m_regex_text(std::move(regex_text)),
        m_re(std::move(re)),
        m_groups(std::move(groups)) {}

  std::string_view name() const override { return m_label; }

  // The regex is tried on each line of the output as it arrives, so '^' and
  // '$' anchor to lines (RE2: linear in the line, however long), and nothing
  // bounds the output but the tool's timeout. Each metric takes the first
  // line where its group matched a number. A line over the launcher's 1 MiB
  // line limit arrives cut and is not matched (a cut number would be a wrong
  // one): when no metric was found the message counts such lines, otherwise
  // the sampler's note() does.
  Expected<std::vector<Reading>> sample(int) override {
    return guarded([&]() -> Expected<std::vector<Reading>> {
      auto argv = resolved(m_argv);
      if (!argv) return argv.error();
      std::vector<std::optional<double>> values(m_groups.size());
      std::size_t filled = 0, lines = 0, cut_lines = 0;
      std::string first;
      std::vector<std::string_view> m;
      const exec::OutputLineFn match = [&](std::string_view line, bool cut) {
        ++lines;
        if (first.empty() && !util::trim(line).empty()) first = first_line(line);
        if (cut) {
          ++cut_lines;
          return;
        }
        if (filled == m_groups.size()) return;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!m_re.search(line, m)) return;
        for (std::size_t k = 0; k < m_groups.size(); ++k) {
          if (values[k] || m[m_groups[k].first].data() == nullptr) continue;
          auto s = util::trim(m[m_groups[k].first]);
          // from_chars, not strtod: a suite's numbers must not depend on the locale.
          if (!s.empty() && s.front() == '+') s.remove_prefix(1);
          double v = 0;
          auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
          if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) continue;
          values[k] = v;
          ++filled;
        }
      };
      const std::string shown = util::join(m_argv, " ");
      if (!exec::for_each_output_line(*argv, k_tool_timeout_s, match))
        return Error::harness(
            fmt::format("`{}` failed (non-zero exit, or no answer within {:g} s)", shown, k_tool_timeout_s));
      if (filled == 0) {
        if (first.empty()) return Error::harness(fmt::format("`{}` printed nothing", shown));
        return Error::harness(fmt::format(
            "no line of the output of `{}` matched regex '{}' with a number{}; first line: '{}'", shown, m_regex_text,
            cut_lines == 0 ? std::string()
                           : fmt::format(" ({} of its {} lines {} longer than 1 MiB, cut and not matched)", cut_lines,
                                         lines, cut_lines == 1 ? "was" : "were"),
            first));
      }
      if (cut_lines > 0) {
        m_cut_lines += cut_lines;
        ++m_samples_with_cut_lines;
      }
      std::vector<Reading> readings;
      for (std::size_t k = 0; k < m_groups.size(); ++k)
        if (values[k]) readings.push_back({m_groups[k].second, *values[k]});
      return readings;
    });
  }

  std::string note() const override {
    const std::size_t cut = m_cut_lines, samples = m_samples_with_cut_lines;
    if (cut == 0) return {};
    return fmt::format("{} line{} of the output of `{}` {} longer than 1 MiB, cut and not matched (in {} sample{})",
                       cut, cut == 1 ? "" : "s", util::join(m_argv, " "), cut == 1 ? "was" : "were", samples,
                       samples == 1 ? "" : "s");
  }

 private:
  std::string m_label;
  std::vector<std::string> m_argv;
  std::string m_regex_text;  // as the suite wrote it, for messages
  util::UserRegex m_re;
  std::vector<std::pair<std::size_t, std::string>> m_groups;  // group number -> metric
  // Cut lines in samples that found a metric (a failed sample's error counts its own).
  std::atomic<std::size_t> m_cut_lines{0};
  std::atomic<std::size_t> m_samples_with_cut_lines{0};
};

Expected<std::unique_ptr<Sampler>> make_command_sampler(const SamplerSpec& spec) {
  // Where the suite declared it, when it came from a suite file.
  const std::string at = spec.loc.file.empty() ? std::string() : spec.loc.str() + ": ";
  if (spec.command.empty() || spec.command.front().empty())
    return Error::input(at + "command sampler: 'command' must give the program to run, e.g. [cat, /proc/loadavg]");
  std::string label = spec.name;
  if (label.empty()) {
    const auto& a0 = spec.command.front();
    label = a0.substr(a0.rfind('/') == std::string::npos ? 0 : a0.rfind('/') + 1);
  }
  const auto who = fmt::format("{}command sampler '{}'", at, label);
  if (spec.regex.empty())
    return Error::input(
        fmt::format("{}: 'regex' is missing; give one with a named group per metric, "
                    "e.g. '(?<load1>[0-9.]+)'",
                    who));
  auto re = util::UserRegex::compile(spec.regex);
  if (!re) return Error::input(fmt::format("{}: regex '{}': {}", who, spec.regex, re.error().message));
  const auto names = re->group_names();

  // Which metric each group feeds. metric_names keys are group names or
  // group numbers (the suite's `metrics: [a, b]` list arrives as "1" -> a,
  // "2" -> b). An explicit mapping wins: by name, then by number; a named
  // group nobody mapped feeds the metric of its own name; an unnamed,
  // unmapped group only structures the pattern.
  std::vector<std::string> known;
  for (const auto& n : names)
    if (!n.empty()) known.push_back(n);
  for (const auto& [group, metric] : spec.metric_names) {
    if (metric.empty()) return Error::input(fmt::format("{}: group '{}' is given an empty metric name", who, group));
    if (std::find(known.begin(), known.end(), group) != known.end()) continue;
    bool numeric = !group.empty() && group.size() < 6 && std::all_of(group.begin(), group.end(), [](char ch) {
      return std::isdigit(static_cast<unsigned char>(ch));
    });
    if (!numeric)
      return Error::input(fmt::format("{}: a metric is given for '{}', which is not a group of the regex{}", who, group,
                                      util::did_you_mean(group, known)));
    auto index = static_cast<std::size_t>(std::stoul(group));
    if (index == 0 || index > names.size())
      return Error::input(fmt::format("{}: a metric ('{}') is given for group {}, but regex '{}' has {} group(s)", who,
                                      metric, index, spec.regex, names.size()));
  }
  std::vector<std::pair<std::size_t, std::string>> groups;
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto by_name = names[i].empty() ? spec.metric_names.end() : spec.metric_names.find(names[i]);
    auto by_number = spec.metric_names.find(std::to_string(i + 1));
    if (by_name != spec.metric_names.end())
      groups.emplace_back(i + 1, by_name->second);
    else if (by_number != spec.metric_names.end())
      groups.emplace_back(i + 1, by_number->second);
    else if (!names[i].empty())
      groups.emplace_back(i + 1, names[i]);
  }
  if (groups.empty())
    return Error::input(
        fmt::format("{}: regex '{}' feeds no metric; name its groups (?<metric>...) or list "
                    "one metric per group",
                    who, spec.regex));
  return std::unique_ptr<Sampler>(
      std::make_unique<CommandSampler>(label, spec.command, spec.regex, std::move(*re), std::move(groups)));
}

// ------------------------------------------------------------------- /proc ---

using exec::ProcStat;

}  // namespace

// The trial's processes are the descendants of root_pid (by parent id) plus
// the members of its process group (the launcher makes root_pid a group
// leader): a daemonised helper re-parented to init stays in the group, a
// child that called setsid() stays a descendant. exec::sample_group reads
// the group only, counts no threads and reads every process on the host on
// every call; this sampler needs the tree and runs for a whole soak.
//
// Cost. Reading /proc/<pid>/stat costs 5-12 us per process, and an NPU host
// with 192 cores has a few thousand processes and kernel threads: a full
// scan per sample would cost about 1 % of a core at 1 Hz. Only the first
// sample of a trial scans everything. Later ones read the stat of the known
// members and of pids that are new since the previous scan, and skip pids
// already seen as outsiders: an outsider does not become a member
// (re-parenting goes to an ancestor subreaper or init, never into a tree the
// process was not in; joining the trial's process group takes a deliberate
// setpgid), and pids are handed out cyclically, so a pid is reused only
// after the kernel has gone through pid_max others: its death shows in a
// scan long before, and the reused pid is new to the next one.
//
// RSS is summed over processes, as the launcher's peak_rss_mb is: pages
// shared between forked workers count once per process. CPU includes the
// reaped children's time (cutime/cstime) so that a worker exiting between
// two samples moves its CPU time to its parent instead of losing it.
class ProcTreeSampler final : public Sampler {
 public:
  std::string_view name() const override { return "proc"; }
  // The tree's pids at the last sample.
  const std::vector<int>& members() const { return m_members; }

  Expected<std::vector<Reading>> sample(int root_pid) override {
    return guarded([&]() -> Expected<std::vector<Reading>> { return sample_tree(root_pid); });
  }

 private:
  Expected<std::vector<Reading>> sample_tree(int root_pid) {
    if (root_pid <= 0) return Error::harness(fmt::format("{} is not a process id", root_pid));
    static const long page_bytes = ::sysconf(_SC_PAGESIZE);
    static const long ticks_per_s = ::sysconf(_SC_CLK_TCK);
    if (root_pid != m_root_pid) {  // another trial: nothing known about its tree yet
      m_root_pid = root_pid;
      m_outsiders.clear();
      m_has_previous = false;
    }

    std::vector<int> outsiders;  // of this scan: previous outsiders still alive, then new ones
    std::vector<ProcStat> read;  // candidates: previous members and new pids
    bool scanned = exec::scan_proc([&](int proc_fd, int pid) {
      if (std::binary_search(m_outsiders.begin(), m_outsiders.end(), pid)) {
        outsiders.push_back(pid);
        return;
      }
      if (auto st = exec::read_proc_stat(proc_fd, pid)) read.push_back(*st);  // a pid that just exited is skipped
    });
    if (!scanned) return Error::harness(fmt::format("cannot read /proc: {}", std::strerror(errno)));
    const auto now = std::chrono::steady_clock::now();

    // Members: root_pid, its process group, and everything below them.
    std::unordered_map<int, std::vector<std::size_t>> children;
    for (std::size_t i = 0; i < read.size(); ++i) children[read[i].ppid].push_back(i);
    std::vector<char> member(read.size(), 0);
    std::vector<std::size_t> queue;
    for (std::size_t i = 0; i < read.size(); ++i)
      if (read[i].pid == root_pid || read[i].pgrp == root_pid) {
        member[i] = 1;
        queue.push_back(i);
      }
    while (!queue.empty()) {
      auto i = queue.back();
      queue.pop_back();
      auto it = children.find(read[i].pid);
      if (it == children.end()) continue;
      for (auto c : it->second)
        if (!member[c]) {
          member[c] = 1;
          queue.push_back(c);
        }
    }

    long long rss_pages = 0, threads = 0, cpu_ticks = 0;
    int members = 0, live = 0;
    m_members.clear();
    for (std::size_t i = 0; i < read.size(); ++i) {
      if (!member[i]) {
        outsiders.push_back(read[i].pid);
        continue;
      }
      ++members;
      m_members.push_back(read[i].pid);
      cpu_ticks += read[i].own_cpu_ticks + read[i].child_cpu_ticks;  // a zombie still holds its CPU time until reaped
      if (read[i].state == 'Z') continue;                            // but no memory and no running threads
      ++live;
      rss_pages += read[i].rss_pages;
      threads += read[i].threads;
    }
    std::sort(outsiders.begin(), outsiders.end());
    m_outsiders = std::move(outsiders);

    // The trial has ended (and been reaped) between two samples: nothing to
    // report, and nothing wrong with the sampler either.
    if (members == 0) return std::vector<Reading>{};

    std::vector<Reading> out;
    // A tree of zombies has exited and waits to be reaped: its memory did not
    // fall to 0, it ended (an instrumented perfgate, slower to reap, once
    // stored a 0 MB last sample of a 10 MB workload). Its CPU time is final.
    // So has a tree caught exiting, its memory released before it became a
    // zombie: 0 pages (test_samplers once stored 0.0 after eight samples of
    // a 10.7 MB workload); no process that runs has none.
    if (live > 0 && rss_pages > 0) {
      out.push_back(
          {"host.rss_mb", static_cast<double>(rss_pages) * static_cast<double>(page_bytes) / (1024.0 * 1024.0)});
      out.push_back({"host.threads", static_cast<double>(threads)});
    }
    const double cpu_s = static_cast<double>(cpu_ticks) / static_cast<double>(ticks_per_s);
    if (m_has_previous) {
      const double wall_s = std::chrono::duration<double>(now - m_previous_time).count();
      // Below a millisecond the clock-tick resolution (10 ms) makes the ratio meaningless.
      if (wall_s >= 1e-3) out.push_back({"host.cpu_pct", std::max(0.0, 100.0 * (cpu_s - m_previous_cpu_s) / wall_s)});
    }
    m_has_previous = true;
    m_previous_cpu_s = cpu_s;
    m_previous_time = now;
    return out;
  }

  int m_root_pid = 0;
  std::vector<int> m_outsiders;  // sorted pids seen at the previous scan that are not in the tree
  std::vector<int> m_members;    // pids of the tree at the last scan
  bool m_has_previous = false;
  double m_previous_cpu_s = 0;
  std::chrono::steady_clock::time_point m_previous_time;
};

// host: what else loads the machine while the trial runs. The host probe
// (a fixed piece of work, timed: host.probe_ms), the load average
// (host.load1), the longest a thread that asks to wake every 5 ms woke late
// since the last sample (host.wakeup_late_ms: the machine paused), the share
// of CPU time the hypervisor took (host.steal_pct),
// the CPU used by processes outside the trial's tree and outside perfgate
// (host.other_cpu_pct, % of one CPU), and processes outside the tree that an
// accelerator tool lists on a device (host.device_foreign_procs, where
// npu-smi or nvidia-smi is on PATH and answers). Sampled right before the trial, at the
// suite's interval, and right after it.
class HostSampler final : public Sampler {
 public:
  std::string_view name() const override { return "host"; }
  bool brackets_trial() const override { return true; }

  Expected<std::vector<Reading>> sample(int root_pid) override {
    return guarded([&]() -> Expected<std::vector<Reading>> { return sample_host(root_pid); });
  }

 private:
  Expected<std::vector<Reading>> sample_host(int root_pid) {
    std::vector<Reading> out;
    out.push_back({"host.probe_ms", m_probe.run_ms()});
    // Whether the machine paused everything since the last sample: a soak
    // step that stalled in such a pause is the host's (analysis/soak).
    out.push_back({"host.wakeup_late_ms", m_canary.take_worst_late_ms()});
    if (auto text = exec::read_proc_file("/proc/loadavg"))
      if (auto load1 = parse_loadavg_1m(*text)) out.push_back({"host.load1", *load1});
    // The trial's own CPU: the tree sampler's reading of the same interval.
    // Without one (before the trial, at its first sample, after it ended)
    // other processes' share cannot be told from the trial's own.
    std::optional<double> tree_pct;
    if (root_pid > 0) {
      if (auto tree = m_tree.sample(root_pid))
        for (const auto& r : *tree)
          if (r.metric == "host.cpu_pct") tree_pct = r.value;
    }
    const auto now = std::chrono::steady_clock::now();
    // How long the trial's own threads waited for a CPU (the scheduler's
    // run-queue wait, /proc/<pid>/task/<tid>/schedstat): the direct witness
    // of a host too busy for the trial, even when the host is already
    // saturated and other processes' CPU cannot rise any more.
    if (root_pid > 0 && tree_pct) {
      const double wait_s = tree_run_queue_wait_s();
      if (m_previous_wait_root == root_pid) {
        const double wall_s = std::chrono::duration<double>(now - m_previous_wait_time).count();
        if (wall_s >= 0.05 && wait_s >= m_previous_wait_s)
          out.push_back({"host.trial_cpu_wait_pct", 100.0 * (wait_s - m_previous_wait_s) / wall_s});
      }
      m_previous_wait_root = root_pid;
      m_previous_wait_s = wait_s;
      m_previous_wait_time = now;
    }
    struct rusage self {};
    ::getrusage(RUSAGE_SELF, &self);
    const double self_s = static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
                          1e-6 * static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec);
    std::optional<CpuTicks> ticks;
    if (auto text = exec::read_proc_file("/proc/stat", 512)) ticks = parse_proc_stat_cpu(*text);
    if (ticks && m_previous) {
      static const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
      const double wall_s = std::chrono::duration<double>(now - m_previous_time).count();
      const auto d_busy = static_cast<double>(ticks->busy - m_previous->busy);
      const auto d_steal = static_cast<double>(ticks->steal - m_previous->steal);
      const double d_all = d_busy + d_steal + static_cast<double>(ticks->idle - m_previous->idle);
      if (d_all > 0) out.push_back({"host.steal_pct", 100.0 * d_steal / d_all});
      if (wall_s >= 0.05 && tree_pct) {
        const double busy_pct = 100.0 * d_busy / ticks_per_s / wall_s;
        const double self_pct = 100.0 * (self_s - m_previous_self_s) / wall_s;
        out.push_back({"host.other_cpu_pct", std::max(0.0, busy_pct - *tree_pct - self_pct)});
      }
    }
    if (ticks) {
      m_previous = ticks;
      m_previous_time = now;
      m_previous_self_s = self_s;
    }
    // Linux's pressure stall information: the share of time some task waited
    // for a CPU (kernels from 4.20 with PSI; absent elsewhere).
    if (auto text = exec::read_proc_file("/proc/pressure/cpu")) {
      if (auto total_us = parse_cpu_pressure_total_us(*text)) {
        if (m_previous_pressure_us > 0) {
          const double wall_s = std::chrono::duration<double>(now - m_previous_pressure_time).count();
          if (wall_s >= 0.05 && *total_us >= m_previous_pressure_us)
            out.push_back({"host.cpu_pressure_pct",
                           100.0 * static_cast<double>(*total_us - m_previous_pressure_us) / (1e6 * wall_s)});
        }
        m_previous_pressure_us = *total_us;
        m_previous_pressure_time = now;
      }
    }
    if (auto foreign = foreign_device_processes(root_pid)) out.push_back({"host.device_foreign_procs", *foreign});
    return out;
  }

  // Seconds the tree's threads spent runnable but waiting for a CPU.
  double tree_run_queue_wait_s() const {
    double total_ns = 0;
    for (int pid : m_tree.members()) {
      const std::string dir = fmt::format("/proc/{}/task", pid);
      DIR* d = ::opendir(dir.c_str());
      if (!d) continue;
      while (auto* e = ::readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        if (auto text = exec::read_proc_file(fmt::format("{}/{}/schedstat", dir, e->d_name), 256))
          if (auto waiting_ns = parse_schedstat_wait_ns(*text)) total_ns += static_cast<double>(*waiting_ns);
      }
      ::closedir(d);
    }
    return total_ns * 1e-9;
  }

  // Processes an accelerator tool lists that are not the trial's; nothing
  // when neither tool is installed or none answered (a failed npu-smi is no
  // evidence that the devices are free: no reading rather than a 0).
  std::optional<double> foreign_device_processes(int root_pid) {
    std::vector<DeviceProcess> listed;
    bool answered = false;
    if (find_on_path("npu-smi")) {
      if (auto text = run_tool({"npu-smi", "info"})) {
        answered = true;
        auto p = parse_npu_smi_processes(*text);
        listed.insert(listed.end(), p.begin(), p.end());
      }
    }
    if (find_on_path("nvidia-smi")) {
      // No compute process at all: no output, a valid answer.
      if (auto text = run_tool({"nvidia-smi", "--query-compute-apps=pid,gpu_bus_id", "--format=csv,noheader"},
                               /*empty_is_answer=*/true)) {
        answered = true;
        auto p = parse_nvidia_smi_apps(*text);
        listed.insert(listed.end(), p.begin(), p.end());
      }
    }
    if (!answered) return std::nullopt;
    const auto& mine = m_tree.members();
    int foreign = 0;
    for (const auto& d : listed)
      if (root_pid <= 0 || std::find(mine.begin(), mine.end(), d.pid) == mine.end()) ++foreign;
    return foreign;
  }

  HostProbe m_probe;
  WakeupCanary m_canary;
  ProcTreeSampler m_tree;
  std::optional<CpuTicks> m_previous;
  std::chrono::steady_clock::time_point m_previous_time;
  double m_previous_self_s = 0;
  unsigned long long m_previous_pressure_us = 0;
  std::chrono::steady_clock::time_point m_previous_pressure_time;
  int m_previous_wait_root = 0;
  double m_previous_wait_s = 0;
  std::chrono::steady_clock::time_point m_previous_wait_time;
};

std::vector<Reading> only_devices(std::vector<Reading> readings, const std::vector<int>& devices) {
  if (devices.empty()) return readings;
  std::erase_if(readings, [&](const Reading& r) {
    std::string_view m = r.metric;
    if (!m.starts_with("device.")) return false;
    m.remove_prefix(7);
    // "3.power_w" or "3_1.power_w": the id runs up to the first '.' or '_'.
    int id = 0;
    auto [end, ec] = std::from_chars(m.data(), m.data() + m.size(), id);
    if (ec != std::errc{} || end == m.data() + m.size() || (*end != '.' && *end != '_')) return false;
    return std::find(devices.begin(), devices.end(), id) == devices.end();
  });
  return readings;
}

const std::vector<std::string>& sampler_kinds() {
  static const std::vector<std::string> k_kinds = {"proc", "npu-smi", "nvidia-smi", "command", "host"};
  return k_kinds;
}

Expected<std::unique_ptr<Sampler>> make_sampler(const SamplerSpec& spec) {
  if (spec.kind == "proc") return std::unique_ptr<Sampler>(std::make_unique<ProcTreeSampler>());
  if (spec.kind == "npu-smi") return std::unique_ptr<Sampler>(std::make_unique<NpuSmiSampler>(spec.devices));
  if (spec.kind == "nvidia-smi") return std::unique_ptr<Sampler>(std::make_unique<NvidiaSmiSampler>(spec.devices));
  if (spec.kind == "command") return make_command_sampler(spec);
  if (spec.kind == "host") return std::unique_ptr<Sampler>(std::make_unique<HostSampler>());
  return Error::input(fmt::format("unknown sampler '{}'{}; available: {}", spec.kind,
                                  util::did_you_mean(spec.kind, sampler_kinds()), util::join(sampler_kinds(), ", ")));
}

}  // namespace perfgate::sampling
