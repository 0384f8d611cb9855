// The soak report's text and Markdown: a failed trial says why in one line,
// the line a reader needs (the last of the stderr it quotes).
#include <catch2/catch.hpp>

#include "harness/report/soak_reporter.hpp"

using namespace perfgate;

TEST_CASE("soak report: a failed trial's error is its first clause and the last stderr line", "[report]") {
  analysis::SoakReport r;
  r.run.id = 5;
  r.run.suite = "soak";
  analysis::TrialSoak t;
  t.trial_id = 130;
  t.workload = "torch-train";
  t.status = "failed";
  t.error =
      "exited with code 1; last lines of stderr:\n  File \"torch_common.py\", line 138, in resolve_device\n"
      "    import torch\nModuleNotFoundError: No module named 'torch'\n";
  r.trials.push_back(t);
  const std::string why = "exited with code 1: ModuleNotFoundError: No module named 'torch'";
  CHECK_THAT(report::soak_table(r), Catch::Contains("trial 130 · torch-train · failed") && Catch::Contains(why));
  CHECK_THAT(report::soak_markdown(r), Catch::Contains(why));
  // One line, the error as it was when it has no quoted stderr.
  r.trials[0].error = "timed out after 10 s";
  CHECK_THAT(report::soak_table(r), Catch::Contains("\n  timed out after 10 s\n"));
}
