#include "harness/runner/collector.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <sys/stat.h>

#include <fmt/format.h>

#include "harness/stats/descriptive.hpp"
#include "harness/stats/trend.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::runner {

TrialCollector::TrialCollector(store::Store& store, long long trial_id, std::string metrics_path, model::Warmup warmup)
    : m_store(store), m_warmup(warmup), m_registry(*this), m_parser(m_registry), m_writer(store, trial_id) {
  m_metrics_file.path = std::move(metrics_path);
}

TrialCollector::~TrialCollector() = default;

TrialCollector::TailedFile::~TailedFile() {
  if (f) std::fclose(f);
}

namespace {

// Size, change time and inode: changes when a process writes the file.
std::string file_state(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}:{}.{}:{}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_ino);
}

}  // namespace

void TrialCollector::TailedFile::skip_existing() {
  f = std::fopen(path.c_str(), "rb");
  if (!f) return;
  struct stat st {};
  if (::fstat(::fileno(f), &st) == 0) inode = st.st_ino;
  std::fseek(f, 0, SEEK_END);
}

void TrialCollector::TailedFile::poll(const std::function<void(std::string_view, bool)>& on_line) {
  if (path.empty()) return;
  struct stat now {};
  bool exists = ::stat(path.c_str(), &now) == 0;
  if (f && exists && inode != 0 && now.st_ino != inode) {
    // Replaced: finish what the old file held, then read the new one from its start.
    std::fclose(f);
    f = nullptr;
  }
  if (!f) {
    f = std::fopen(path.c_str(), "rb");
    if (!f) return;  // not written yet
    struct stat st {};
    if (::fstat(::fileno(f), &st) == 0) inode = st.st_ino;
  } else if (exists && static_cast<long long>(now.st_size) < static_cast<long long>(std::ftell(f))) {
    std::fseek(f, 0, SEEK_SET);  // truncated and written again
  }
  static thread_local std::vector<char> buf(1 << 20);
  while (true) {
    std::size_t n = std::fread(buf.data(), 1, buf.size(), f);
    if (n == 0) break;
    lines.feed(std::string_view(buf.data(), n), on_line);
    if (n < buf.size()) break;
  }
  std::clearerr(f);  // EOF now is not EOF forever: the workload keeps appending
}

Status TrialCollector::attach_output_parser(const model::MetricsSpec& spec, bool written_during_trial) {
  auto p = metrics::make_output_parser(spec, m_registry);
  if (!p) return p.error();
  m_output = std::move(*p);
  if (m_output->reads_lines() && !spec.file.empty()) {
    m_log_file.path = spec.file;
    m_log_file.skip_existing();
  } else if (!m_output->reads_lines()) {
    m_whole_file = spec.file;
    if (written_during_trial) m_whole_file_before = file_state(spec.file);
  }
  return Ok{};
}

void TrialCollector::on_stdout_line(std::string_view line, bool oversized, double t_s) {
  m_parser.feed_stdout_line(line, oversized, t_s);
  if (m_output && m_output->reads_lines() && m_log_file.path.empty())
    m_output->feed_line(line, metrics::LineSource::Stdout, oversized, t_s);
}

void TrialCollector::on_stderr_line(std::string_view line, bool oversized, double t_s) {
  if (m_output && m_output->reads_lines() && m_log_file.path.empty())
    m_output->feed_line(line, metrics::LineSource::Stderr, oversized, t_s);
}

void TrialCollector::tail_files(double t_s) {
  m_metrics_file.poll([&](std::string_view line, bool oversized) { m_parser.feed_file_line(line, oversized, t_s); });
  if (m_output)
    m_log_file.poll([&](std::string_view line, bool oversized) {
      m_output->feed_line(line, metrics::LineSource::File, oversized, t_s);
    });
}

long long TrialCollector::malformed_count() const {
  return m_parser.malformed_count() + (m_output ? m_output->malformed_count() : 0);
}

void TrialCollector::on_start(int pid) {
  if (m_sampling) m_sampling->start(pid);
}

void TrialCollector::drain_sampling() {
  if (!m_sampling) return;
  for (auto& tr : m_sampling->drain()) {
    auto it = m_sampled_index.find(tr.reading.metric);
    if (it == m_sampled_index.end()) {
      Sampled s;
      s.info = sampling::sampler_metric_info(tr.reading.metric);
      if (m_store_status) {
        auto sid = m_store.metric_id(s.info);
        if (sid)
          s.store_id = *sid;
        else
          m_store_status = sid.error();
      }
      it = m_sampled_index.emplace(tr.reading.metric, m_sampled.size()).first;
      m_sampled.push_back(std::move(s));
    }
    auto& s = m_sampled[it->second];
    double v = tr.reading.value;
    if (m_progress) m_latest_sampled[tr.reading.metric] = v;
    if (!std::isfinite(v)) continue;
    if (s.store_id >= 0) m_pending.push_back({s.store_id, s.moments.n, tr.t_s, v});
    s.moments.add(v);
  }
}

void TrialCollector::close_window(double t_s) {
  Progress p;
  p.t_s = t_s;
  p.steps = m_steps;
  p.last_step_t_s = m_steps > 0 ? m_last_step_t : -1;
  if (m_primary_id >= 0) p.primary = m_series[static_cast<std::size_t>(m_primary_id)].info.name;
  if (!m_window_values.empty()) {
    p.window_value = stats::median(m_window_values);
    m_window_t.push_back(t_s - m_window_s / 2);
    m_window_medians.push_back(p.window_value);
    m_window_values.clear();
  }
  if (!m_window_medians.empty()) p.first_window_value = m_window_medians.front();
  if (!m_window_throughput.empty()) {
    p.throughput = stats::median(m_window_throughput);
    m_window_throughput.clear();
  }
  // A drift from a few windows is noise extrapolated to an hour: shown from
  // ten windows on.
  if (m_window_medians.size() >= k_min_drift_windows && p.first_window_value != 0) {
    auto slope = stats::theil_sen(m_window_t, m_window_medians);
    p.drift_pct_per_h = slope.slope * 3600.0 / p.first_window_value * 100.0;
  }
  for (const auto& [k, v] : m_latest_sampled) p.sampled.emplace_back(k, v);
  m_progress(p);
}

void TrialCollector::on_tick(double t_s, bool final) {
  tail_files(t_s);
  if (final && m_sampling) m_sampling->stop();
  drain_sampling();
  // Arrival time of the latest step, to the tick: what a hang is measured from.
  if (m_steps != m_steps_seen) {
    m_steps_seen = m_steps;
    m_last_step_t = t_s;
  }
  if (m_hang_after_s > 0 && m_stop.empty() && !final) {
    double since = m_steps > 0 ? m_last_step_t : 0;
    if (t_s - since >= m_hang_after_s)
      m_stop = m_steps > 0
                   ? fmt::format("hang: no step record for {:.0f} s (the last, step {} of {}, arrived at {:.1f} s)",
                                 t_s - since, m_last_step_no, m_steps, m_last_step_t)
                   : fmt::format("hang: no step record in the first {:.0f} s", t_s);
  }
  if (m_progress && m_window_s > 0) {
    if (m_window_end == 0) m_window_end = m_window_s;
    while (t_s >= m_window_end) {
      close_window(m_window_end);
      m_window_end += m_window_s;
    }
  }
  if (final) {
    m_metrics_file.lines.finish(
        [&](std::string_view line, bool oversized) { m_parser.feed_file_line(line, oversized, t_s); });
    if (m_output) {
      m_log_file.lines.finish([&](std::string_view line, bool oversized) {
        m_output->feed_line(line, metrics::LineSource::File, oversized, t_s);
      });
      // A whole-file format the trial did not write would report an earlier trial's numbers.
      if (m_whole_file.empty() || m_whole_file_before.empty() || file_state(m_whole_file) != m_whole_file_before)
        m_output->finish(t_s);
      else
        m_stale_note =
            fmt::format("{} was not written during the trial; its earlier content was not read", m_whole_file);
    }
    flush();
    if (auto st = m_writer.drain(); !st && m_store_status) m_store_status = st;
    return;
  }
  if (m_pending.size() >= k_flush_rows || t_s - m_last_flush_t >= k_flush_interval_s) {
    flush();
    m_last_flush_t = t_s;
  }
}

void TrialCollector::flush() {
  m_writer.submit(m_pending);
  m_pending.reserve(k_flush_rows);
}

void TrialCollector::on_new_metric(int id, std::string_view name) {
  if (static_cast<std::size_t>(id) >= m_series.size()) m_series.resize(static_cast<std::size_t>(id) + 1);
  auto& s = m_series[static_cast<std::size_t>(id)];
  s.info = model::MetricInfo::inferred(name);
  if (auto it = std::find(m_primary_names.begin(), m_primary_names.end(), name); it != m_primary_names.end()) {
    const auto rank = static_cast<std::size_t>(it - m_primary_names.begin());
    if (rank < m_primary_rank) {
      if (m_primary_id != id) m_window_values.clear();
      m_primary_id = id;
      m_primary_rank = rank;
    }
  }
  if (name == "throughput") m_throughput_id = id;
  if (name == k_auto_lead) m_lead_id = id;
  if (!m_store_status) return;
  auto sid = m_store.metric_id(s.info);
  if (!sid) {
    m_store_status = sid.error();
    return;
  }
  s.store_id = *sid;
}

long long TrialCollector::harness_metric_id(std::string_view name, std::string_view unit) {
  auto info = model::MetricInfo::inferred(name);
  info.unit = std::string(unit);
  info.better = model::Better::Lower;
  if (!m_store_status) return -1;
  auto sid = m_store.metric_id(info);
  if (!sid) {
    m_store_status = sid.error();
    return -1;
  }
  return *sid;
}

stats::StepSeries& TrialCollector::values_of(Series& s) {
  if (!s.values) {
    stats::WarmupRule rule;
    switch (m_warmup.kind) {
      case model::Warmup::Kind::None:
        rule.kind = stats::WarmupRule::Kind::None;
        break;
      case model::Warmup::Kind::Steps:
        rule.kind = stats::WarmupRule::Kind::Steps;
        break;
      case model::Warmup::Kind::Seconds:
        rule.kind = stats::WarmupRule::Kind::Seconds;
        break;
      case model::Warmup::Kind::Auto:
        rule.kind = stats::WarmupRule::Kind::Auto;
        break;
    }
    rule.amount = m_warmup.amount;
    // A fixed seed: the same trial gives the same summary.
    s.values = std::make_unique<stats::StepSeries>(rule);
    // warmup: auto: the step times find the cut; every other series waits for it.
    if (rule.kind == stats::WarmupRule::Kind::Auto && s.info.name != k_auto_lead) s.values->defer_to_trial();
  }
  return *s.values;
}

int TrialCollector::auto_leader() const {
  // The step times decide where the trial's steady state starts.
  return m_lead_id >= 0 && m_series[static_cast<std::size_t>(m_lead_id)].values ? m_lead_id : -1;
}

void TrialCollector::on_step(long long step, double t_s, const std::vector<std::pair<int, double>>& values) {
  if (m_steps == 0) m_first_step_arrival = t_s;
  ++m_steps;
  m_last_step_no = step;
  m_last_step_arrival = t_s;
  if (m_progress) {
    // The primary series of the progress line: the named one once reported, the first metric until then.
    for (const auto& [id, v] : values) {
      if (m_primary_id < 0) m_primary_id = id;
      if (!std::isfinite(v)) continue;
      if (id == m_primary_id) m_window_values.push_back(v);
      if (id == m_throughput_id) m_window_throughput.push_back(v);
    }
  }
  const bool automatic = m_warmup.kind == model::Warmup::Kind::Auto;
  for (const auto& [id, v] : values) {
    auto& s = m_series[static_cast<std::size_t>(id)];
    auto& series = values_of(s);
    if (!s.first_value_seen) {
      s.first_value_seen = true;
      s.first_value = v;
    }
    series.add(t_s, v);
    if (s.store_id >= 0) m_pending.push_back({s.store_id, step, t_s, v});
  }
  if (automatic && !m_auto_cut_shared) {
    // Once the step times resolve their warm-up (their window is full), the
    // others take the same cut.
    int lead = auto_leader();
    if (lead >= 0 && m_series[static_cast<std::size_t>(lead)].values->resolved()) share_auto_cut(lead);
  }
  // Batches stay small whatever feeds them: a flood on stdout arrives between
  // ticks, and a batch held until the next tick grew to 100 MB.
  if (m_pending.size() >= k_flush_rows) flush();
}

void TrialCollector::share_auto_cut(int lead) {
  m_auto_cut_shared = true;
  const auto& state = m_series[static_cast<std::size_t>(lead)].values->steady_state();
  if (!state) return;
  m_auto_state = *state;
  for (std::size_t i = 0; i < m_series.size(); ++i)
    if (static_cast<int>(i) != lead && m_series[i].values) m_series[i].values->resolve(state->steady_start, *state);
}

void TrialCollector::on_summary(int metric_id, double value) {
  auto& s = m_series[static_cast<std::size_t>(metric_id)];
  if (s.has_summary && s.info.fact && s.summary_value != value) s.summary_varied = true;
  s.has_summary = true;
  s.summary_value = value;
}

void TrialCollector::on_meta_unit(int metric_id, std::string_view unit) {
  auto& s = m_series[static_cast<std::size_t>(metric_id)];
  s.info.unit = std::string(unit);
  s.meta_changed = true;
}

void TrialCollector::on_meta_fact(int metric_id) {
  auto& s = m_series[static_cast<std::size_t>(metric_id)];
  s.info.fact = true;
  s.meta_changed = true;
}

void TrialCollector::on_meta_better(int metric_id, model::Better better) {
  auto& s = m_series[static_cast<std::size_t>(metric_id)];
  s.info.better = better;
  s.meta_changed = true;
}

TrialCollector::Result TrialCollector::finish() {
  Result r;
  r.steps = m_steps;
  r.first_step_arrival_s = m_first_step_arrival;
  r.last_step_arrival_s = m_steps > 0 ? m_last_step_arrival : -1;
  if (m_warmup.kind == model::Warmup::Kind::Auto) {
    // The step times decide the cut of every series (else each its own);
    // the trial reports the class of the series that decided.
    int lead = auto_leader();
    if (lead >= 0 && !m_auto_cut_shared) {
      auto& leader = *m_series[static_cast<std::size_t>(lead)].values;
      auto state = leader.classify();
      leader.resolve(state.steady_start, state);
      share_auto_cut(lead);
    }
    if (lead < 0)
      for (auto& s : m_series)
        if (s.values && s.values->count() > 0) {
          m_auto_state = s.values->classify(s.info.better != model::Better::Higher);
          break;
        }
    if (m_auto_state) {
      r.steady_class = std::string(stats::to_string(m_auto_state->kind));
      r.steady_start = static_cast<long long>(m_auto_state->steady_start);
      r.compile_steps = static_cast<long long>(m_auto_state->compile_steps);
    }
  }
  for (const auto& s : m_series) {
    if (s.store_id < 0 || (!s.has_summary && (!s.values || s.values->count() == 0))) continue;
    (s.info.fact ? r.facts : r.measured).push_back(s.info.name);
  }
  for (auto& s : m_series) {
    if (s.meta_changed && m_store_status) {
      auto sid = m_store.metric_id(s.info);
      if (!sid) m_store_status = sid.error();
    }
    if (s.store_id < 0) continue;
    if (s.has_summary) {
      model::MetricSummary m;
      m.metric = s.info.name;
      m.n_total = m.n_steady = 1;
      m.mean = m.median = m.p90 = m.p99 = m.min = m.max = m.value = s.summary_value;
      m.is_scalar = true;
      if (s.summary_varied)
        r.notes.push_back(fmt::format("{} was reported with different values; the last, {}, is kept", s.info.name,
                                      util::format_value(s.summary_value)));
      r.summaries.push_back(m);
      r.summary_metric_ids.push_back(s.store_id);
      continue;
    }
    if (!s.values || s.values->count() == 0) continue;
    const auto sum = s.values->finish(s.info.better != model::Better::Higher);
    if (s.info.fact && sum.n_steady > 0 && sum.min != sum.max)
      r.notes.push_back(fmt::format("{} is a fact but changed within the trial: {} to {}", s.info.name,
                                    util::format_value(sum.min), util::format_value(sum.max)));
    if (sum.n_nonfinite > 0)
      r.notes.push_back(
          fmt::format("{} of {} values of {} were NaN or infinite", sum.n_nonfinite, sum.n_total, s.info.name));
    if (sum.n_steady == 0) {
      if (sum.n_nonfinite < sum.n_total) {
        r.notes.push_back(fmt::format("warm-up ({}) excluded all {} steps of {}; no steady-state summary",
                                      m_warmup.str(), sum.n_total, s.info.name));
      } else {
        // Every value was NaN/Inf: keep the metric with a NaN value, so a
        // comparison sees a broken trial rather than a metric that vanished.
        model::MetricSummary m;
        m.metric = s.info.name;
        m.n_total = sum.n_total;
        m.mean = m.median = m.p90 = m.p99 = m.min = m.max = m.stddev = m.value = std::nan("");
        r.summaries.push_back(m);
        r.summary_metric_ids.push_back(s.store_id);
      }
      continue;
    }
    model::MetricSummary m;
    m.metric = s.info.name;
    m.n_total = sum.n_total;
    m.n_steady = sum.n_steady;
    m.mean = sum.mean;
    m.median = sum.median;
    m.p90 = sum.p90;
    m.p99 = sum.p99;
    m.min = sum.min;
    m.max = sum.max;
    m.stddev = sum.stddev;
    // Rates: time-weighted (harmonic) mean, i.e. total work over total time, so
    // a stall weighs what it cost. Times and the rest: the median, robust to stalls.
    m.value = s.info.better == model::Better::Higher ? sum.harmonic : sum.median;
    if (sum.sampled)
      r.notes.push_back(fmt::format("quantiles of {} come from a uniform sample of {} of its {} steady values",
                                    s.info.name, stats::StepSeries::k_max_kept, sum.n_steady));
    r.summaries.push_back(m);
    r.summary_metric_ids.push_back(s.store_id);
  }
  // Sampler series: peak for memory (what runs out), mean for the rest (utilisation, power).
  for (const auto& s : m_sampled) {
    const auto& mo = s.moments;
    if (s.store_id < 0 || mo.n == 0) continue;
    model::MetricSummary m;
    m.metric = s.info.name;
    m.n_total = m.n_steady = mo.n;
    m.mean = mo.mean;
    m.min = mo.min;
    m.max = mo.max;
    m.stddev = mo.stddev();
    m.value = model::is_memory_metric(m.metric) ? mo.max : mo.mean;
    m.median = m.p90 = m.p99 = m.value;
    r.summaries.push_back(m);
    r.summary_metric_ids.push_back(s.store_id);
  }
  if (m_sampling)
    for (auto& w : m_sampling->warnings()) r.notes.push_back(std::move(w));
  // First-step (compile) time as its own metric, unless the workload reported it.
  bool has_first = std::any_of(r.summaries.begin(), r.summaries.end(),
                               [](const auto& m) { return m.metric == model::harness_metric::first_step_ms; });
  if (!has_first) {
    for (const auto& s : m_series)
      if (s.info.name == "step_time_ms" && s.first_value_seen && std::isfinite(s.first_value)) {
        model::MetricSummary m;
        m.metric = std::string(model::harness_metric::first_step_ms);
        m.n_total = m.n_steady = 1;
        m.mean = m.median = m.p90 = m.p99 = m.min = m.max = m.value = s.first_value;
        m.is_scalar = true;
        long long id = harness_metric_id(m.metric, "ms");
        if (id >= 0) {
          r.summaries.push_back(m);
          r.summary_metric_ids.push_back(id);
        }
      }
  }
  auto report_malformed = [&](long long count, const std::vector<metrics::MalformedLine>& kept, std::string_view what) {
    if (count == 0 || kept.empty()) return;
    const auto& b = kept.front();
    std::string where = b.line_no > 0 ? fmt::format("{} line {}", metrics::to_string(b.source), b.line_no)
                                      : std::string(metrics::to_string(b.source));
    r.notes.push_back(fmt::format("{} {} skipped; first: {}: {} ({})", count, what, where, b.reason, b.excerpt));
  };
  report_malformed(m_parser.malformed_count(), m_parser.malformed(), "malformed metric line(s)");
  if (m_output) {
    report_malformed(m_output->malformed_count(), m_output->malformed(), "log line(s) recognised but unreadable");
    for (const auto& n : m_output->notes()) r.notes.push_back(n);
    if (!m_stale_note.empty()) r.notes.push_back(m_stale_note);
  }
  return r;
}

}  // namespace perfgate::runner
