#pragma once
// A plain text table: columns sized to their content, numbers right-aligned.

#include <string>
#include <vector>

namespace perfgate::report {

class TextTable {
 public:
  enum class Align { Left, Right };
  void columns(std::vector<std::string> headers, std::vector<Align> align);
  void row(std::vector<std::string> cells);
  void separator();  // a blank line between groups
  std::string render() const;
  std::string render_markdown() const;

 private:
  std::vector<std::string> m_headers;
  std::vector<Align> m_align;
  std::vector<std::vector<std::string>> m_rows;  // an empty row is a separator
};

// Markdown cell text: escapes '|', and HTML-escapes '<', '>', '&' (renderers accept raw HTML).
std::string markdown_escape(std::string_view s);
// "930.1", "12345", "0.0123": about four significant digits without exponents.
std::string format_value(double v);
// "930.1 samples/s" or "34.20 ms".
std::string format_with_unit(double v, std::string_view unit);
std::string format_percent(double fraction);  // 0.0123 -> "1.2%"
std::string format_utc(double unix_s);        // "2026-11-29 17:03 UTC"

}  // namespace perfgate::report
