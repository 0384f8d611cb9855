#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "harness/sampling/session.hpp"

namespace s = perfgate::sampling;

namespace {

// A sampler whose every sample either fails or gives one reading, and that
// may have something to say about what its samples left out.
class ScriptedSampler final : public s::Sampler {
 public:
  ScriptedSampler(std::string name, bool fail, std::string note)
      : m_name(std::move(name)), m_fail(fail), m_note(std::move(note)) {}
  std::string_view name() const override { return m_name; }
  perfgate::Expected<std::vector<s::Reading>> sample(int) override {
    if (m_fail) return perfgate::Error::harness("the tool is gone");
    return std::vector<s::Reading>{{"x", 1.0}};
  }
  std::string note() const override { return m_note; }

 private:
  std::string m_name;
  bool m_fail;
  std::string m_note;
};

}  // namespace

TEST_CASE("sampling session: failures and samplers' notes become warnings, quiet samplers none", "[sampling]") {
  std::vector<std::unique_ptr<s::Sampler>> samplers;
  samplers.push_back(std::make_unique<ScriptedSampler>("quiet", false, ""));
  samplers.push_back(std::make_unique<ScriptedSampler>("broken", true, ""));
  samplers.push_back(std::make_unique<ScriptedSampler>("probe", false, "3 lines were cut"));
  s::SamplingSession session(std::move(samplers), 0.01);
  session.start(0);
  session.stop();
  const auto readings = session.drain();
  CHECK(readings.size() >= 2);  // the first sample of quiet and probe, taken at once
  const auto w = session.warnings();
  REQUIRE(w.size() == 2);
  CHECK_THAT(w[0], Catch::StartsWith("sampler broken: the tool is gone"));
  CHECK(w[1] == "sampler probe: 3 lines were cut");
}
