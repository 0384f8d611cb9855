#pragma once
// Files the dashboard is made of, carried inside the perfgate binary so a
// dashboard can be written on any machine perfgate runs on: dashboards/
// (HTML, CSS, JavaScript) and Dygraphs from Debian's libjs-dygraphs, embedded
// at build time by cmake/embed_files.cmake.

#include <span>
#include <string_view>

namespace perfgate::report {

struct Asset {
  std::string_view path;  // relative to the output directory: "index.html", "assets/pg-core.js"
  std::string_view bytes;
};

std::span<const Asset> dashboard_assets();

}  // namespace perfgate::report
