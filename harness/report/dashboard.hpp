#pragma once
// The static dashboard (docs/dashboard.md): data files written from the
// store plus the embedded page, into one self-contained directory.

#include <functional>
#include <string>

#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::report {

struct DashboardOptions {
  std::string out_dir;
  std::string db_label;                              // shown in the page header
  int max_runs = 1000;                               // newest runs included
  std::size_t soak_points = 2000;                    // per drawn series of a soak
  std::function<void(const std::string&)> progress;  // one line per stage; may be empty
};

struct DashboardStats {
  int runs = 0, suites = 0, soaks = 0;
  long long bytes = 0;         // written in all
  long long soak_samples = 0;  // raw samples read for the soak pages
};

Expected<DashboardStats> write_dashboard(store::Store& st, const DashboardOptions& opt);

// "bucket_mb=25 x" -> "bucket_mb%3D25%20x": URL components of anchors.
std::string url_component(std::string_view s);
// "https://ci/dash/" or "https://ci/dash" -> "https://ci/dash/index.html"; a URL naming an .html file stays.
std::string dashboard_index_url(const std::string& url);
// The anchor of a run's page and of a trend view, relative to the dashboard's index.html.
std::string run_anchor(long long run_id);
std::string trend_anchor(const std::string& suite, const std::string& metric, const std::string& config_label);

}  // namespace perfgate::report
