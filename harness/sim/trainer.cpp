#include "harness/sim/trainer.hpp"

#include <unistd.h>
#include <barrier>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "harness/sim/allreduce.hpp"
#include "harness/sim/data_loader.hpp"
#include "harness/sim/host_work.hpp"
#include "harness/sim/kernels.hpp"

namespace perfgate::sim {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Graph mode's compile: this much host work per op (thousands of chain
// steps, host_work.hpp), 15 launches' worth at the default
// --dispatch-work. The first step is then 7-9 steady steps, far above the
// factor of 3 that marks a compile step (stats/steady_state.hpp); at a fifth
// of it the first step was 3.3-4.2 steps and on a loaded machine it fell
// under that factor, so graph mode's cost went uncut.
constexpr double k_compile_work_per_op = 1500;

double host_rss_mb() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  long pages_total = 0, pages_rss = 0;
  if (f) {
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_rss) != 2) pages_rss = 0;
    std::fclose(f);
  }
  return static_cast<double>(pages_rss) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

Storage storage_of(const std::string& p) {
  if (p == "bf16") return Storage::BF16;
  if (p == "fp16") return Storage::F16;
  return Storage::F32;
}

inline float act(float x) { return x * (27.0f + x * x) / (27.0f + 9.0f * x * x); }
inline float dact(float x) {
  float x2 = x * x, d = 27.0f + 9.0f * x2;
  return (729.0f - 162.0f * x2 + 9.0f * x2 * x2) / (d * d);
}

struct StepTimes {
  double data_wait_s = 0, forward_s = 0, backward_s = 0, allreduce_s = 0, optimizer_s = 0, step_s = 0;
  double cpu_s = 0;   // CPU time the whole process spent during the step (every rank and thread)
  double wire_s = 0;  // all-reduce time in all, hidden behind backward or not
  double loss = 0;
};

class Job {
 public:
  explicit Job(const Config& cfg)
      : m_cfg(cfg),
        m_storage(storage_of(cfg.precision)),
        m_fused(cfg.fusion == "on"),
        m_graph(cfg.graph_mode == "graph"),
        m_act_elems(std::max<std::size_t>(static_cast<std::size_t>(cfg.batch) * cfg.width,
                                          static_cast<std::size_t>(cfg.act_mb * 1024 * 1024 / 4 / cfg.layers))),
        m_grads(static_cast<std::size_t>(cfg.ranks)),
        m_barrier(cfg.ranks, Completion{this}) {
    const std::size_t ww = static_cast<std::size_t>(cfg.width) * cfg.width;
    std::mt19937_64 rng(cfg.seed);
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(cfg.width)));
    m_weights.assign(static_cast<std::size_t>(cfg.ranks), {});
    std::vector<std::vector<float>> init(static_cast<std::size_t>(cfg.layers), std::vector<float>(ww));
    for (auto& w : init)
      for (auto& v : w) v = normal(rng);
    for (int r = 0; r < cfg.ranks; ++r) {
      m_weights[static_cast<std::size_t>(r)] = init;  // every rank starts from the same model
      m_grads[static_cast<std::size_t>(r)].assign(static_cast<std::size_t>(cfg.layers), std::vector<float>(ww, 0.0f));
    }
    m_allreduce = std::make_unique<AllReduce>(cfg, m_grads);
  }

  int run(std::FILE* out, bool stdout_protocol);

 private:
  struct Completion {
    Job* job;
    void operator()() noexcept { job->decide_next_step(); }
  };
  void decide_next_step();
  void rank_loop(int rank);
  StepTimes step(int rank, long long s, DataLoader& loader, struct RankState& st);
  // Eager mode launches each op from the host: a fixed amount of host work
  // per launch (--dispatch-work), as a framework's dispatch path is.
  void dispatch(int ops) const {
    if (!m_graph) host_work(ops * m_cfg.dispatch_work);
  }
  void emit(long long s, const StepTimes& t);
  double compile(struct RankState& st);

  const Config& m_cfg;
  Storage m_storage;
  bool m_fused;
  bool m_graph;
  std::size_t m_act_elems;
  std::vector<std::vector<std::vector<float>>> m_weights;  // [rank][layer]
  std::vector<std::vector<std::vector<float>>> m_grads;    // [rank][layer]
  std::unique_ptr<AllReduce> m_allreduce;
  std::barrier<Completion> m_barrier;
  Clock::time_point m_t0 = Clock::now();
  double m_deadline_s = -1;  // seconds from m_t0
  long long m_next_step = 0;
  bool m_go_on = true;
  std::FILE* m_out = nullptr;
  const char* m_prefix = "";  // "PERFGATE " when the protocol goes to stdout
  std::mutex m_out_mu;
  double m_compile_ms = 0;
  long long m_skipped = 0;
  double m_loss_scale = 65536;
  long long m_good_steps = 0;
  double m_last_loss = 0;
  std::vector<std::unique_ptr<char[]>> m_leaked;
  int m_tile = 64;
};

struct RankState {
  std::vector<std::vector<float>> x, y;  // per layer: input and pre-activation output (batch x width)
  std::vector<Activation> act, residual, act_grad;
  std::vector<std::vector<float>> bias;
  std::vector<float> dx, dy, out;
  std::mt19937_64 rng;
};

void Job::decide_next_step() {
  ++m_next_step;
  bool steps_done = m_cfg.steps > 0 && m_next_step >= m_cfg.steps;
  bool time_done = m_deadline_s >= 0 && since(m_t0) >= m_deadline_s;
  m_go_on = !steps_done && !time_done;
}

double Job::compile(RankState& st) {
  // Graph mode's one-time cost, all of it real work: build every op's kernel
  // (a fixed amount of code generation per op, k_compile_work_per_op) and
  // autotune the matmul tile by timing each candidate.
  auto t0 = Clock::now();
  int ops = m_cfg.layers * ((m_fused ? 1 : 4) + (m_fused ? 1 : 3) + 5) + 2;
  host_work(ops * k_compile_work_per_op);
  const int w = m_cfg.width, b = m_cfg.batch;
  double best = 1e9;
  for (int tile : {16, 32, 64, 128, 256}) {
    if (tile > w && tile != 16) continue;
    auto t = Clock::now();
    for (int rep = 0; rep < 3; ++rep) matmul(st.x[0].data(), m_weights[0][0].data(), st.y[0].data(), b, w, w, tile);
    double s = since(t);
    if (s < best) {
      best = s;
      m_tile = tile;
    }
  }
  return since(t0);
}

StepTimes Job::step(int rank, long long s, DataLoader& loader, RankState& st) {
  StepTimes t;
  const int w = m_cfg.width, b = m_cfg.batch, layers = m_cfg.layers;
  auto& weights = m_weights[static_cast<std::size_t>(rank)];
  auto& grads = m_grads[static_cast<std::size_t>(rank)];
  const std::size_t bw = static_cast<std::size_t>(b) * w;
  auto t_start = Clock::now();
  const double cpu_start = rank == 0 ? process_cpu_s() : 0, thread_cpu_start = rank == 0 ? thread_cpu_s() : 0;

  Batch batch = loader.next();
  auto t_data = Clock::now();
  t.data_wait_s = std::chrono::duration<double>(t_data - t_start).count();

  if (m_graph && s == 0) {
    st.x[0] = batch.x;
    double c = compile(st);
    if (rank == 0) m_compile_ms = c * 1e3;
  }
  if (m_graph) host_work(m_cfg.dispatch_work);  // the whole step is one launch

  // Forward.
  const float scale = 0.5f;
  std::vector<float>* in = &batch.x;
  for (int l = 0; l < layers; ++l) {
    auto li = static_cast<std::size_t>(l);
    st.x[li] = *in;
    dispatch(1);
    matmul(st.x[li].data(), weights[li].data(), st.y[li].data(), b, w, w, m_tile);
    dispatch(1);
    st.act[li].fill_from(st.y[li]);
    dispatch(m_fused ? 1 : 4);
    st.act[li].chain_forward(m_fused, st.bias[li], scale, st.residual[li]);
    dispatch(1);
    for (std::size_t i = 0; i < bw; ++i) st.out[i] = act(st.y[li][i]) + 1e-3f * st.act[li].get(i);
    in = &st.out;
    if (l + 1 < layers) st.x[li + 1] = st.out;
  }
  double loss = 0;
  for (std::size_t i = 0; i < bw; ++i) {
    float d = st.out[i] - batch.y[i];
    loss += static_cast<double>(d) * d;
    st.dx[i] = 2.0f * d / static_cast<float>(bw);
  }
  t.loss = loss / static_cast<double>(bw);
  auto t_fwd = Clock::now();
  t.forward_s = std::chrono::duration<double>(t_fwd - t_data).count();

  // Backward, layer by layer from the top; each finished layer joins a bucket.
  const bool fp16 = m_storage == Storage::F16;
  const float grad_scale = fp16 ? static_cast<float>(m_loss_scale) : 1.0f;
  for (int l = layers - 1; l >= 0; --l) {
    auto li = static_cast<std::size_t>(l);
    dispatch(1);
    for (auto& v : st.dx) v *= grad_scale;
    st.act_grad[li].fill_from(st.dx);
    dispatch(m_fused ? 1 : 3);
    st.act[li].chain_backward(m_fused, scale, st.act_grad[li], static_cast<std::size_t>(w));
    dispatch(1);
    for (std::size_t i = 0; i < bw; ++i) st.dy[i] = (st.dx[i] + 1e-3f * st.act_grad[li].get(i)) * dact(st.y[li][i]);
    dispatch(1);
    matmul_at_b(st.x[li].data(), st.dy.data(), grads[li].data(), w, b, w);
    dispatch(1);
    matmul_a_bt(st.dy.data(), weights[li].data(), st.dx.data(), b, w, w);
    if (grad_scale != 1.0f)
      for (auto& v : st.dx) v /= grad_scale;
    m_allreduce->grad_ready(l);
  }
  auto t_bwd = Clock::now();
  t.backward_s = std::chrono::duration<double>(t_bwd - t_fwd).count();

  m_allreduce->wait_done(s);
  auto t_ar = Clock::now();
  t.allreduce_s = std::chrono::duration<double>(t_ar - std::max(t_bwd, m_allreduce->backward_done_at())).count();
  t.wire_s = m_allreduce->last_wire_s();

  // Optimizer: SGD. Unfused eager launches an unscale and an update per layer;
  // fused (NpuFusedSGD-style) launches one op for all of them.
  bool overflow = false;
  if (fp16)
    for (const auto& g : grads)
      for (float v : g)
        if (!std::isfinite(v)) overflow = true;
  dispatch(m_fused ? 1 : 2 * layers);
  if (!overflow) {
    const float lr = 0.05f / grad_scale;
    for (int l = 0; l < layers; ++l) {
      auto& wl = weights[static_cast<std::size_t>(l)];
      const auto& gl = grads[static_cast<std::size_t>(l)];
      for (std::size_t i = 0; i < wl.size(); ++i) wl[i] -= lr * gl[i];
    }
  }
  if (rank == 0 && fp16) {
    // Dynamic loss scaling: halve on overflow (and skip the update), double after 100 clean steps.
    if (overflow) {
      ++m_skipped;
      m_loss_scale = std::max(1.0, m_loss_scale / 2);
      m_good_steps = 0;
    } else if (++m_good_steps % 100 == 0) {
      m_loss_scale *= 2;
    }
  }
  auto t_opt = Clock::now();
  t.optimizer_s = std::chrono::duration<double>(t_opt - t_ar).count();

  // Faults (rank 0 only: the others follow through the all-reduce).
  if (rank == 0) {
    const double cpu_so_far = thread_cpu_s() - thread_cpu_start;
    // From T on the step does F times its work: F times the CPU work it has
    // done so far (run as more host work, which a busy machine stretches as
    // it stretched the step's own) and F times what it waited for (data,
    // storage, the exposed all-reduce: a wait). What a regression of factor
    // F looks like from outside, whatever the step is made of, and the same
    // factor on a quiet or a loaded machine: a spin to a wall-clock deadline
    // overshot by a time slice when preempted (+131 % for F = 1.2 beside
    // eight busy loops).
    if (m_cfg.slowdown_at_s >= 0 && since(m_t0) >= m_cfg.slowdown_at_s && m_cfg.slowdown_factor > 1) {
      const double more = m_cfg.slowdown_factor - 1, waited = std::max(0.0, since(t_start) - cpu_so_far);
      burn_thread_cpu(more * cpu_so_far);
      std::this_thread::sleep_for(std::chrono::duration<double>(more * waited));
    }
    if (m_cfg.noise_cv > 0) {
      std::normal_distribution<double> z(0.0, 1.0);
      burn_thread_cpu(cpu_so_far * m_cfg.noise_cv * std::fabs(z(st.rng)) * 1.25);
    }
    if (m_cfg.stall_every > 0 && s > 0 && s % m_cfg.stall_every == 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(m_cfg.stall_ms));
    if (m_cfg.leak_kb_per_step > 0) {
      auto n = static_cast<std::size_t>(m_cfg.leak_kb_per_step * 1024);
      m_leaked.emplace_back(new char[n]);
      std::memset(m_leaked.back().get(), 1, n);  // touched, so it is resident
    }
    t.cpu_s = process_cpu_s() - cpu_start;
  }
  t.step_s = since(t_start);
  return t;
}

void Job::emit(long long s, const StepTimes& t) {
  std::lock_guard lock(m_out_mu);
  const double samples = static_cast<double>(m_cfg.batch) * m_cfg.ranks;
  std::string loss = std::isfinite(t.loss) ? fmt::format("{:.6g}", t.loss) : "NaN";
  std::fputs(m_prefix, m_out);
  std::fprintf(m_out,
               "{\"step\": %lld, \"t_s\": %.6f, \"step_time_ms\": %.4f, \"throughput\": %.3f, \"data_wait_ms\": %.4f, "
               "\"forward_ms\": %.4f, \"backward_ms\": %.4f, \"allreduce_ms\": %.4f, \"allreduce_total_ms\": %.4f, "
               "\"optimizer_ms\": %.4f, \"cpu_ms\": %.4f, "
               "\"loss\": %s, \"host_rss_mb\": %.2f, \"loss_scale\": %.0f}\n",
               s, since(m_t0), t.step_s * 1e3, samples / t.step_s, t.data_wait_s * 1e3, t.forward_s * 1e3,
               t.backward_s * 1e3, t.allreduce_s * 1e3, t.wire_s * 1e3, t.optimizer_s * 1e3, t.cpu_s * 1e3,
               loss.c_str(), host_rss_mb(), m_storage == Storage::F16 ? m_loss_scale : 1.0);
  std::fflush(m_out);
}

void Job::rank_loop(int rank) {
  RankState st;
  const int w = m_cfg.width, layers = m_cfg.layers;
  const std::size_t bw = static_cast<std::size_t>(m_cfg.batch) * w;
  st.rng.seed(m_cfg.seed + 17 * static_cast<std::uint64_t>(rank));
  st.x.assign(static_cast<std::size_t>(layers), std::vector<float>(bw));
  st.y.assign(static_cast<std::size_t>(layers), std::vector<float>(bw));
  st.bias.assign(static_cast<std::size_t>(layers), std::vector<float>(static_cast<std::size_t>(w), 0.01f));
  for (int l = 0; l < layers; ++l) {
    st.act.emplace_back(m_act_elems, m_storage);
    st.residual.emplace_back(m_act_elems, m_storage);
    st.act_grad.emplace_back(m_act_elems, m_storage);
    std::vector<float> r(bw);
    for (std::size_t i = 0; i < bw; ++i) r[i] = 0.01f * static_cast<float>(i % 7);
    st.residual.back().fill_from(r);
  }
  st.dx.resize(bw);
  st.dy.resize(bw);
  st.out.resize(bw);
  DataLoader loader(m_cfg, rank);
  for (long long s = 0;; ++s) {
    m_barrier.arrive_and_wait();  // all ranks agree whether step s happens
    if (!m_go_on) break;
    if (rank == 0 && m_cfg.crash_at_step == s) {
      std::fprintf(stderr, "perfgate-sim: injected crash at step %lld\n", s);
      std::fflush(stderr);
      std::abort();
    }
    if (rank == 0 && m_cfg.hang_at_step == s) {
      std::fprintf(stderr, "perfgate-sim: injected hang at step %lld\n", s);
      std::fflush(stderr);
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    StepTimes t = step(rank, s, loader, st);
    if (rank == 0) {
      m_last_loss = t.loss;
      emit(s, t);
    }
  }
}

int Job::run(std::FILE* out, bool stdout_protocol) {
  m_out = out;
  if (stdout_protocol) m_prefix = "PERFGATE ";
  m_next_step = -1;
  if (m_cfg.seconds > 0) m_deadline_s = m_cfg.seconds;
  if (const char* d = std::getenv("PERFGATE_DEADLINE")) {
    // A soak's end, as unix seconds: stop cleanly at the first step boundary after it.
    double unix_deadline = std::atof(d);
    double now_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    double left = unix_deadline - now_unix;
    if (unix_deadline > 0) m_deadline_s = m_deadline_s >= 0 ? std::min(m_deadline_s, left) : left;
  }
  std::fputs(m_prefix, out);
  std::fprintf(
      out,
      "{\"meta\": {\"units\": {\"throughput\": \"samples/s\", \"step_time_ms\": \"ms\", \"data_wait_ms\": \"ms\", "
      "\"forward_ms\": \"ms\", \"backward_ms\": \"ms\", \"allreduce_ms\": \"ms\", \"allreduce_total_ms\": \"ms\", "
      "\"optimizer_ms\": \"ms\", \"cpu_ms\": \"ms\", "
      "\"host_rss_mb\": \"MB\", \"act_mb\": \"MB\"}, \"better\": {\"throughput\": \"higher\", \"loss\": \"lower\", "
      "\"loss_scale\": \"none\"}, \"kind\": {\"ranks\": \"fact\", \"buckets\": \"fact\", \"matmul_tile\": \"fact\", "
      "\"act_mb\": \"fact\"}}}\n");
  std::fflush(out);
  std::vector<std::thread> ranks;
  for (int r = 0; r < m_cfg.ranks; ++r) ranks.emplace_back([this, r] { rank_loop(r); });
  for (auto& t : ranks) t.join();
  std::string loss = std::isfinite(m_last_loss) ? fmt::format("{:.6g}", m_last_loss) : "NaN";
  std::fputs(m_prefix, out);
  std::fprintf(out,
               "{\"summary\": {\"compile_ms\": %.3f, \"buckets\": %d, \"ranks\": %d, \"skipped_steps\": %lld, "
               "\"final_loss\": %s, \"matmul_tile\": %d, \"act_mb\": %.1f}}\n",
               m_compile_ms, m_allreduce->bucket_count(), m_cfg.ranks, m_skipped, loss.c_str(), m_tile, m_cfg.act_mb);
  std::fflush(out);
  return 0;
}

}  // namespace

int train(const Config& cfg, std::FILE* out, bool stdout_protocol) {
  Job job(cfg);
  return job.run(out, stdout_protocol);
}

}  // namespace perfgate::sim
