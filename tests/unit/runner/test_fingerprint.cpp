#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/unit/support/paths.hpp"
#include "harness/runner/fingerprint.hpp"

using namespace perfgate::runner;

TEST_CASE("npu-smi info table gives one model per NPU and the tool version", "[runner]") {
  std::ifstream in(perfgate::test::data_dir() + "/fixtures/npu_smi_info_910B2C_with_procs.txt");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  auto inv = npus_from_npu_smi_info(ss.str());
  CHECK(inv.models == std::vector<std::string>{"910B2C", "910B2C"});
  CHECK(inv.tool_version == "23.0.2.1");
}

TEST_CASE("npu-smi output without a table yields nothing", "[runner]") {
  auto inv = npus_from_npu_smi_info("dcmi module initialize failed. ret is -8005\n");
  CHECK(inv.models.empty());
}

TEST_CASE("hostname classes drop the node number", "[runner]") {
  CHECK(hostname_class("node-a-017.cluster.local") == "node-a");
  CHECK(hostname_class("gpu12") == "gpu");
  CHECK(hostname_class("1234") == "1234");
}

TEST_CASE("the fingerprint is JSON and its hash ignores the hostname", "[runner]") {
  auto fp = machine_fingerprint({});
  auto j = nlohmann::json::parse(fp.json);
  CHECK(j.contains("cpu_model"));
  CHECK(j["cpu_cores"].get<int>() >= 1);
  CHECK(fp.hash.size() == 16);
  CHECK(machine_fingerprint({}).hash == fp.hash);
}
