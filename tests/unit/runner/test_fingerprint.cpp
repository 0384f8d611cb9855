#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness/runner/fingerprint.hpp"
#include "harness/sampling/sampler.hpp"
#include "tests/unit/support/fake_machine.hpp"
#include "tests/unit/support/paths.hpp"

using namespace perfgate::runner;

TEST_CASE("npu-smi info table gives one model per NPU and the tool version", "[runner]") {
  std::ifstream in(perfgate::test::data_dir() + "/fixtures/npu_smi_info_910B2C_with_procs.txt");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  auto inv = perfgate::sampling::npu_smi_inventory(ss.str());
  CHECK(inv.models == std::vector<std::string>{"910B2C", "910B2C"});
  CHECK(inv.tool_version == "23.0.2.1");
}

TEST_CASE("npu-smi output without a table yields nothing", "[runner]") {
  auto inv = perfgate::sampling::npu_smi_inventory("dcmi module initialize failed. ret is -8005\n");
  CHECK(inv.models.empty());
}

TEST_CASE("hostname classes drop the node number", "[runner]") {
  CHECK(hostname_class("node-a-017.cluster.local") == "node-a");
  CHECK(hostname_class("gpu12") == "gpu");
  CHECK(hostname_class("1234") == "1234");
}

TEST_CASE("the fingerprint is JSON and its hash ignores the node's number", "[runner]") {
  perfgate::test::FakeMachine a, b, other_pool;
  a.host = "node-a-01";
  b.host = "node-a-02";
  other_pool.host = "node-b-01";
  auto fp = machine_fingerprint({.python = "", .machine = &a});
  auto j = nlohmann::json::parse(fp.json);
  CHECK(j["cpu_model"] == "Fake CPU @ 2.0GHz");
  CHECK(j["cpu_cores"].get<int>() == 8);
  CHECK(j["memory_gib"].get<double>() == 16);
  CHECK(j["hostname"] == "node-a-01");
  CHECK(j["os"] == "Debian GNU/Linux 12 (bookworm)");
  CHECK_FALSE(j.contains("gpus"));  // no nvidia-smi on this machine
  CHECK_FALSE(j.contains("npus"));
  CHECK(fp.hash.size() == 16);
  CHECK(machine_fingerprint({.python = "", .machine = &b}).hash == fp.hash);
  CHECK(machine_fingerprint({.python = "", .machine = &other_pool}).hash != fp.hash);
}

TEST_CASE("the fingerprint names the accelerators and versions the tools report", "[runner]") {
  perfgate::test::FakeMachine m;
  std::ifstream in(perfgate::test::data_dir() + "/fixtures/npu_smi_info_910B2C_with_procs.txt");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  m.tools["npu-smi info"] = ss.str();
  m.tools["nvidia-smi"] = "NVIDIA A100-SXM4-80GB, 535.104.05\n";
  m.tools["/usr/bin/python3 -c"] = "python 3.11.2\ntorch 2.1.0\ntorch_npu 2.1.0.post3\n";
  m.files["/usr/local/Ascend/driver/version.info"] = "Version=23.0.rc3\n";
  auto j = nlohmann::json::parse(machine_fingerprint({.python = "/usr/bin/python3", .machine = &m}).json);
  CHECK(j["npus"] == nlohmann::json::array({"910B2C", "910B2C"}));
  CHECK(j["npu_smi_version"] == "23.0.2.1");
  CHECK(j["gpus"] == nlohmann::json::array({"NVIDIA A100-SXM4-80GB, 535.104.05"}));
  CHECK(j["torch_npu"] == "2.1.0.post3");
  CHECK(j["ascend_driver"] == "23.0.rc3");
  auto plain = perfgate::test::FakeMachine{};
  CHECK(machine_fingerprint({.python = "", .machine = &plain}).hash !=
        machine_fingerprint({.python = "/usr/bin/python3", .machine = &m}).hash);
}

TEST_CASE("the fingerprint keeps only the probe's version lines and bounds what tools print", "[runner]") {
  perfgate::test::FakeMachine m, same;
  // A torch import that writes a warning to stdout adds no field and leaves
  // the hash as it is without the warning.
  m.tools["/usr/bin/python3 -c"] = "python 3.11.2\nWarning: torch_npu is deprecated here\ntorch 2.1.0\nimported ok\n";
  same.tools["/usr/bin/python3 -c"] = "python 3.11.2\ntorch 2.1.0\n";
  auto fp = machine_fingerprint({.python = "/usr/bin/python3", .machine = &m});
  auto j = nlohmann::json::parse(fp.json);
  CHECK(j["python"] == "3.11.2");
  CHECK(j["torch"] == "2.1.0");
  CHECK_FALSE(j.contains("Warning:"));
  CHECK_FALSE(j.contains("imported"));
  CHECK_FALSE(j.contains("torch_npu"));
  CHECK(fp.hash == machine_fingerprint({.python = "/usr/bin/python3", .machine = &same}).hash);

  // An nvidia-smi printing 1,000 lines of 1,000 bytes: 64 entries of 256 bytes.
  perfgate::test::FakeMachine noisy;
  std::string flood;
  for (int i = 0; i < 1000; ++i) flood += std::string(1000, 'x') + "\n";
  noisy.tools["nvidia-smi"] = flood;
  noisy.files["/proc/cpuinfo"] = "model name\t: " + std::string(100000, 'c') + "\n";
  auto big = nlohmann::json::parse(machine_fingerprint({.python = "", .machine = &noisy}).json);
  REQUIRE(big["gpus"].size() == 64);
  CHECK(big["gpus"][0].get<std::string>().size() == 256);
  CHECK(big["cpu_model"].get<std::string>().size() == 256);
}
