#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/sampling/sampler.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/readings.hpp"
#include "tests/unit/support/temp_dir.hpp"

namespace s = perfgate::sampling;
using perfgate::model::Better;

using perfgate::test::value;

namespace {

std::string data(const std::string& name) {
  auto text = perfgate::test::read_file(perfgate::test::data_dir() + "/sampling/" + name);
  REQUIRE_FALSE(text.empty());
  return text;
}

// "device.3.temp_c" -> "3"
std::set<std::string> devices(const std::vector<s::Reading>& r) {
  std::set<std::string> out;
  for (const auto& x : r) {
    auto a = x.metric.find('.');
    auto b = x.metric.find('.', a + 1);
    out.insert(x.metric.substr(a + 1, b - a - 1));
  }
  return out;
}

}  // namespace

TEST_CASE("npu-smi info: the captured 910B2C table with a process table", "[sampling]") {
  auto r = s::parse_npu_smi_info(data("npu_smi_info_910B2C_with_procs.txt"));
  CHECK(devices(r) == std::set<std::string>{"0", "1"});  // the process row "0 0 | 124528" is no device
  CHECK(value(r, "device.0.power_w") == 88.6);
  CHECK(value(r, "device.0.temp_c") == 51);
  CHECK(value(r, "device.0.health_ok") == 1);
  CHECK(value(r, "device.0.aicore_pct") == 0);
  CHECK(value(r, "device.0.hbm_used_mb") == 20701);  // five digits: "20701/ 65536"
  CHECK(value(r, "device.0.hbm_total_mb") == 65536);
  CHECK(value(r, "device.1.power_w") == 99.6);
  CHECK(value(r, "device.1.temp_c") == 50);
  CHECK(value(r, "device.1.hbm_used_mb") == 20687);
  // DDR "Memory-Usage" is "0 / 0" on 910B: no memory there, no series.
  CHECK_FALSE(value(r, "device.0.memory_used_mb"));
  CHECK_FALSE(value(r, "device.0.memory_total_mb"));
  CHECK(r.size() == 12);
}

TEST_CASE("npu-smi info: eight 910B3 cards with five-digit HBM use", "[sampling]") {
  auto r = s::parse_npu_smi_info(data("npu_smi_info_910B3_8card.txt"));
  CHECK(devices(r) == std::set<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"});
  CHECK(value(r, "device.0.hbm_used_mb") == 59985);
  CHECK(value(r, "device.3.hbm_used_mb") == 61234);
  CHECK(value(r, "device.7.hbm_used_mb") == 58765);
  CHECK(value(r, "device.7.hbm_total_mb") == 65536);
  CHECK(value(r, "device.7.power_w") == 352.5);
  CHECK(value(r, "device.7.temp_c") == 55);
  CHECK(value(r, "device.5.aicore_pct") == 95);
  CHECK(r.size() == 8 * 6);
  // Readings come in table order.
  CHECK(r.front().metric == "device.0.power_w");
  CHECK(r.back().metric.starts_with("device.7."));
}

TEST_CASE("npu-smi info: 310P3 Duo cards without HBM, with NA cells", "[sampling]") {
  auto r = s::parse_npu_smi_info(data("npu_smi_info_310P3_duo.txt"));
  // Two chips per NPU: "<npu>_<chip>".
  CHECK(devices(r) == std::set<std::string>{"1_0", "1_1", "2_0", "2_1"});
  CHECK(value(r, "device.1_0.memory_used_mb") == 1528);
  CHECK(value(r, "device.1_0.memory_total_mb") == 44280);
  CHECK(value(r, "device.1_1.memory_used_mb") == 1338);
  CHECK(value(r, "device.1_1.aicore_pct") == 12);
  CHECK(value(r, "device.2_1.memory_total_mb") == 43693);
  // NPU-level cells belong to every chip of the NPU.
  CHECK(value(r, "device.1_0.temp_c") == 53);
  CHECK(value(r, "device.1_1.temp_c") == 53);
  CHECK(value(r, "device.2_0.health_ok") == 0);  // Warning
  CHECK(value(r, "device.1_1.health_ok") == 1);
  // "NA" is no reading; there is no HBM column at all.
  CHECK_FALSE(value(r, "device.1_0.power_w"));
  CHECK_FALSE(value(r, "device.2_1.aicore_pct"));
  for (const auto& x : r) CHECK(x.metric.find("hbm") == std::string::npos);
}

TEST_CASE("npu-smi info: columns are found from the header, whatever their order", "[sampling]") {
  auto r = s::parse_npu_smi_info(data("npu_smi_info_other_layout.txt"));
  CHECK(devices(r) == std::set<std::string>{"4", "5"});
  CHECK(value(r, "device.4.temp_c") == 61);
  CHECK(value(r, "device.4.power_w") == 345.2);
  CHECK(value(r, "device.4.hbm_used_mb") == 12345);
  CHECK(value(r, "device.4.aicore_pct") == 77);
  CHECK(value(r, "device.5.hbm_used_mb") == 65000);
  CHECK(value(r, "device.5.aicore_pct") == 100);
  CHECK_FALSE(value(r, "device.4.memory_used_mb"));
}

TEST_CASE("npu-smi info: missing columns and blank cells leave those readings out", "[sampling]") {
  auto r = s::parse_npu_smi_info(data("npu_smi_info_missing_columns.txt"));
  CHECK(devices(r) == std::set<std::string>{"0", "1"});
  CHECK(value(r, "device.0.temp_c") == 44);
  CHECK(value(r, "device.0.aicore_pct") == 3);
  CHECK(value(r, "device.0.hbm_used_mb") == 2048);
  CHECK_FALSE(value(r, "device.0.power_w"));     // no Power(W) column
  CHECK_FALSE(value(r, "device.1.temp_c"));      // NA
  CHECK_FALSE(value(r, "device.1.aicore_pct"));  // blank: the HBM value must not land here
  CHECK(value(r, "device.1.hbm_used_mb") == 4096);
  CHECK(value(r, "device.1.health_ok") == 0);  // Alarm
}

TEST_CASE("npu-smi info: truncated output keeps the complete chips", "[sampling]") {
  auto r = s::parse_npu_smi_info(data("npu_smi_info_910B3_truncated.txt"));
  CHECK(devices(r) == std::set<std::string>{"0", "1"});
  CHECK(value(r, "device.1.hbm_used_mb") == 60012);

  // Cut anywhere: never a reading that is not in the full table, never a throw.
  auto full_text = data("npu_smi_info_910B3_8card.txt");
  auto full = s::parse_npu_smi_info(full_text);
  for (std::size_t n = 0; n < full_text.size(); n += 7) {
    for (const auto& x : s::parse_npu_smi_info(std::string_view(full_text).substr(0, n))) {
      auto v = value(full, x.metric);
      REQUIRE(v);
      CHECK(*v == x.value);
    }
  }
}

TEST_CASE("npu-smi info: CRLF line ends and 'No running processes found'", "[sampling]") {
  auto r = s::parse_npu_smi_info(data("npu_smi_info_910B2C_idle_crlf.txt"));
  CHECK(devices(r) == std::set<std::string>{"0"});
  CHECK(value(r, "device.0.hbm_used_mb") == 3385);
  CHECK(value(r, "device.0.power_w") == 72.1);
  CHECK(value(r, "device.0.temp_c") == 40);

  // The captured table with CRLF reads the same as with LF.
  auto lf = data("npu_smi_info_910B2C_with_procs.txt");
  std::string crlf;
  for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  auto a = s::parse_npu_smi_info(lf);
  auto b = s::parse_npu_smi_info(crlf);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].metric == b[i].metric);
    CHECK(a[i].value == b[i].value);
  }
}

TEST_CASE("npu-smi info: NPU rows without separators between them", "[sampling]") {
  const char* text =
      "| NPU   Name     | Health  | Power(W)  Temp(C)  |\n"
      "| Chip           | Bus-Id  | AICore(%) HBM-Usage(MB) |\n"
      "+================+=========+==================+\n"
      "| 0     910B     | OK      | 70.5      40       |\n"
      "| 0              | 0000:01 | 5         100  / 32768 |\n"
      "| 1     910B     | OK      | 71.5      41       |\n"
      "| 0              | 0000:02 | 6         200  / 32768 |\n";
  auto r = s::parse_npu_smi_info(text);
  CHECK(devices(r) == std::set<std::string>{"0", "1"});
  CHECK(value(r, "device.1.power_w") == 71.5);
  CHECK(value(r, "device.1.hbm_used_mb") == 200);
  CHECK(value(r, "device.1.aicore_pct") == 6);
}

TEST_CASE("npu-smi info: output without a device table gives nothing", "[sampling]") {
  CHECK(s::parse_npu_smi_info("").empty());
  CHECK(s::parse_npu_smi_info("dcmi module initialize failed. ret is -8005\n").empty());
  // A process table alone (its header starts with "NPU" too) is no device table.
  CHECK(s::parse_npu_smi_info("| NPU     Chip   | Process id | Process name | Process memory(MB) |\n"
                              "| 0       0      | 124528     | python3.8    | 17400              |\n")
            .empty());
  // Headers but no rows.
  auto text = data("npu_smi_info_910B3_8card.txt");
  CHECK(s::parse_npu_smi_info(text.substr(0, text.find("+====="))).empty());
}

TEST_CASE("nvidia-smi csv: noheader,nounits lines, unsupported values missing", "[sampling]") {
  auto r = s::parse_nvidia_smi_csv(data("nvidia_smi_noheader_nounits_2gpu.txt"));
  CHECK(devices(r) == std::set<std::string>{"0", "1"});
  CHECK(value(r, "device.0.util_pct") == 97);
  CHECK(value(r, "device.0.memory_busy_pct") == 41);
  CHECK(value(r, "device.0.memory_used_mb") == 80123);
  CHECK(value(r, "device.0.memory_total_mb") == 97887);
  CHECK(value(r, "device.0.temp_c") == 71);
  CHECK(value(r, "device.0.power_w") == 563.2);
  CHECK(value(r, "device.0.sm_freq_mhz") == 2617);
  CHECK(value(r, "device.0.memory_freq_mhz") == 14001);
  CHECK(value(r, "device.1.sm_freq_mhz") == 345);
  CHECK_FALSE(value(r, "device.1.power_w"));          // [N/A]
  CHECK_FALSE(value(r, "device.1.memory_freq_mhz"));  // [Not Supported]
}

TEST_CASE("nvidia-smi csv: the captured query with its header and units", "[sampling]") {
  auto r = s::parse_nvidia_smi_csv(data("nvidia_smi_query_csv_rtxpro6000.txt"));
  CHECK(value(r, "device.0.util_pct") == 1);
  CHECK(value(r, "device.0.memory_busy_pct") == 0);
  CHECK(value(r, "device.0.temp_c") == 35);
  CHECK(value(r, "device.0.power_w") == 91.74);
  CHECK(value(r, "device.0.memory_used_mb") == 1533);
  CHECK(value(r, "device.0.memory_total_mb") == 97887);
  CHECK(r.size() == 6);  // name, power.limit, fan.speed, clock reasons are not queried fields
}

TEST_CASE("nvidia-smi csv: errors and cut lines are no GPU", "[sampling]") {
  CHECK(s::parse_nvidia_smi_csv("").empty());
  CHECK(s::parse_nvidia_smi_csv("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
            .empty());
  auto text = data("nvidia_smi_noheader_nounits_2gpu.txt");
  auto r = s::parse_nvidia_smi_csv(text.substr(0, text.find('\n') + 8));  // second line cut
  CHECK(devices(r) == std::set<std::string>{"0"});
  // CRLF
  auto r2 = s::parse_nvidia_smi_csv("97, 41, 80123, 97887, 71, 563.20, 2617, 14001\r\n");
  CHECK(value(r2, "device.0.memory_freq_mhz") == 14001);
}

TEST_CASE("nvidia-smi fields name distinct metrics with units", "[sampling]") {
  std::set<std::string> suffixes;
  for (const auto& [field, suffix] : s::nvidia_fields()) {
    CHECK(suffixes.insert(suffix).second);
    CHECK_FALSE(s::sampler_metric_info("device.0." + suffix).unit.empty());
  }
}

TEST_CASE("sampler metric units and directions", "[sampling]") {
  auto check = [](const char* metric, const char* unit, Better better) {
    auto m = s::sampler_metric_info(metric);
    INFO(metric);
    CHECK(m.name == metric);
    CHECK(m.unit == unit);
    CHECK(m.better == better);
  };
  check("device.0.hbm_used_mb", "MB", Better::Lower);
  check("device.0.hbm_total_mb", "MB", Better::None);
  check("device.0.hbm_capacity_mb", "MB", Better::None);
  check("host.rss_mb", "MB", Better::Lower);
  check("device.0.hbm_usage_pct", "%", Better::Lower);
  check("device.0.aicore_pct", "%", Better::None);
  check("host.cpu_pct", "%", Better::None);
  check("device.1_0.power_w", "W", Better::Lower);
  check("device.0.temp_c", "C", Better::Lower);
  check("device.0.aicore_freq_mhz", "MHz", Better::None);
  check("host.threads", "", Better::None);
  check("device.0.health_ok", "", Better::Higher);
  check("latency_ms", "ms", Better::Lower);  // a command sampler's own metric: the usual inference
}

TEST_CASE("only_devices keeps the trial's own cards and everything not about a device", "[sampling]") {
  std::vector<s::Reading> r = {{"device.0.power_w", 1},      {"device.3.power_w", 2}, {"device.3_1.temp_c", 3},
                               {"device.12.hbm_used_mb", 4}, {"host.rss_mb", 5},      {"device.x.odd", 6}};
  auto kept = s::only_devices(r, {3, 12});
  std::vector<std::string> names;
  for (const auto& k : kept) names.push_back(k.metric);
  CHECK(names == std::vector<std::string>{"device.3.power_w", "device.3_1.temp_c", "device.12.hbm_used_mb",
                                          "host.rss_mb", "device.x.odd"});
  CHECK(s::only_devices(r, {}).size() == r.size());
  // The 8-card table sampled for the trial on npu 5: only device.5 series.
  auto table = s::parse_npu_smi_info(data("npu_smi_info_910B3_8card.txt"));
  auto mine = s::only_devices(table, {5});
  REQUIRE_FALSE(mine.empty());
  for (const auto& m : mine) CHECK(m.metric.rfind("device.5.", 0) == 0);
}

TEST_CASE("npu-smi info: the process table lists pid and NPU, chip ids past 0 as N_chip", "[sampling]") {
  auto two = s::parse_npu_smi_processes(data("npu_smi_info_910B2C_with_procs.txt"));
  REQUIRE(two.size() == 1);
  CHECK(two[0].device == "0");
  CHECK(two[0].pid == 124528);

  auto eight = s::parse_npu_smi_processes(data("npu_smi_info_910B3_8card.txt"));
  REQUIRE(eight.size() == 8);
  for (std::size_t i = 0; i < eight.size(); ++i) {
    CHECK(eight[i].device == std::to_string(i));
    CHECK(eight[i].pid == 2913211 + static_cast<int>(i));
  }
  // "No running processes found in NPU N" rows, CRLF line ends.
  CHECK(s::parse_npu_smi_processes(data("npu_smi_info_910B2C_idle_crlf.txt")).empty());
  CHECK(s::parse_npu_smi_processes(data("npu_smi_info_310P3_duo.txt")).empty());
  // A Duo card's second chip; rows before the process header, a pid that is
  // no number, 0 or negative are no process.
  const char* text =
      "| 0     0      | 4242          | python3  | 10 |\n"
      "| NPU   Chip   | Process id    | Process name | Process memory(MB) |\n"
      "| 1     1      | 5151          | python3  | 20 |\n"
      "| 2     0      | x51           | python3  | 20 |\n"
      "| 3     0      | 0             | python3  | 20 |\n"
      "| 4     0      | -7            | python3  | 20 |\n"
      "| 5     0      | 6161          | python3  | 20 |\n";
  auto rows = s::parse_npu_smi_processes(text);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].device == "1_1");
  CHECK(rows[0].pid == 5151);
  CHECK(rows[1].device == "5");
  CHECK(rows[1].pid == 6161);
  CHECK(s::parse_npu_smi_processes("").empty());
}

TEST_CASE("nvidia-smi --query-compute-apps: pid and bus id per line", "[sampling]") {
  // --query-compute-apps=pid,gpu_bus_id --format=csv,noheader: nothing at
  // all when no process runs.
  auto rows = s::parse_nvidia_smi_apps(
      "31337, 00000000:17:00.0\n"
      "31338, 00000000:65:00.0\r\n"
      "No devices were found\n"
      "pid, gpu_bus_id\n"
      "4711\n");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].pid == 31337);
  CHECK(rows[0].device == "00000000:17:00.0");
  CHECK(rows[1].pid == 31338);
  CHECK(rows[1].device == "00000000:65:00.0");
  CHECK(rows[2].pid == 4711);
  CHECK(rows[2].device.empty());
  CHECK(s::parse_nvidia_smi_apps("").empty());
  CHECK(s::parse_nvidia_smi_apps("-3, 00000000:17:00.0\n0, x\n").empty());
}

TEST_CASE("host readers: loadavg, CPU pressure and a thread's run-queue wait", "[sampling]") {
  // Captured on Debian 12 (kernel 6.1): /proc/loadavg, /proc/pressure/cpu
  // and /proc/self/schedstat.
  CHECK(s::parse_loadavg_1m("0.75 1.31 1.83 1/84 2772\n") == 0.75);
  CHECK_FALSE(s::parse_loadavg_1m(""));
  CHECK_FALSE(s::parse_loadavg_1m("nan 1 1 1/1 1\n"));
  CHECK_FALSE(s::parse_loadavg_1m("0,75 1,31\n"));  // never read through a locale
  const char* pressure =
      "some avg10=0.24 avg60=2.57 avg300=4.70 total=2734829505\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
  CHECK(s::parse_cpu_pressure_total_us(pressure) == 2734829505ull);
  CHECK_FALSE(s::parse_cpu_pressure_total_us("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"));
  CHECK_FALSE(s::parse_cpu_pressure_total_us("some avg10=0.24 total=x\n"));
  CHECK(s::parse_schedstat_wait_ns("2544343 508187 2\n") == 508187ull);
  CHECK_FALSE(s::parse_schedstat_wait_ns("2544343\n"));
  CHECK_FALSE(s::parse_schedstat_wait_ns("2544343 -5 2\n"));
}
