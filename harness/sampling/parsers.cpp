// Parsers of accelerator monitor output (npu-smi, nvidia-smi) and the units
// of the series samplers produce. Pure functions over text, fixture-tested in
// tests/unit/sampling/test_parsers.cpp against captured output.
//
// The monitors are read by humans first; their layouts drift between driver
// versions. The parsers therefore locate values through the header labels
// the tool prints, tolerate CRLF, truncation and missing cells, and drop
// what they cannot read rather than guess: a missing reading is an absent
// series, a wrong one would be a false regression.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/sampling/sampler.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::sampling {
namespace {

// ---------------------------------------------------------------- helpers ---

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Lines without their '\n' or "\r\n": monitors captured on or through
// Windows tooling, or over a serial console, end lines with CRLF.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// A finite number filling the whole (trimmed) text; "NA", "N/A", "-", ""
// and any text are no number. Monitors print "NA" where a chip has no sensor.
std::optional<double> to_number(std::string_view s) {
  s = util::trim(s);
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A number followed by nothing or by a unit ("91.74 W", "1 %", "1533 MiB"),
// for nvidia-smi run without `nounits`.
std::optional<double> to_number_with_unit(std::string_view s) {
  s = util::trim(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || !std::isfinite(v)) return std::nullopt;
  auto rest = util::trim(std::string_view(end, static_cast<std::size_t>(s.data() + s.size() - end)));
  bool unit_like = std::all_of(rest.begin(), rest.end(), [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '%' || c == '/';
  });
  if (!unit_like) return std::nullopt;
  return v;
}

// ------------------------------------------------------- npu-smi info table ---

// A word of a header cell and the column it starts at, relative to the cell.
struct Label {
  std::string key;  // lower case: "power(w)", "hbm-usage(mb)"
  std::size_t start = 0;
};

// The cells between the '|' of a table row, or nothing when the row is not
// complete (a truncated capture ends in the middle of a row).
std::optional<std::vector<std::string_view>> row_cells(std::string_view line) {
  line = util::trim(line);
  if (line.size() < 2 || line.front() != '|' || line.back() != '|') return std::nullopt;
  line = line.substr(1, line.size() - 2);
  std::vector<std::string_view> cells;
  while (true) {
    auto bar = line.find('|');
    cells.push_back(line.substr(0, bar));
    if (bar == std::string_view::npos) break;
    line.remove_prefix(bar + 1);
  }
  return cells;
}

// Runs of non-blank characters with their starting column.
std::vector<std::pair<std::size_t, std::string_view>> words_of(std::string_view cell) {
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t i = 0;
  while (i < cell.size()) {
    while (i < cell.size() && std::isspace(static_cast<unsigned char>(cell[i]))) ++i;
    std::size_t j = i;
    while (j < cell.size() && !std::isspace(static_cast<unsigned char>(cell[j]))) ++j;
    if (j > i) out.emplace_back(i, cell.substr(i, j - i));
    i = j;
  }
  return out;
}

// Header labels are single words on every driver we have seen (multi-word
// names are joined with '-': "Memory-Usage(MB)", "Bus-Id").
std::vector<Label> labels_of(std::string_view cell) {
  std::vector<Label> out;
  for (auto [start, word] : words_of(cell)) out.push_back({lower(word), start});
  return out;
}

// The values of a data cell, each assigned to one label of the header cell
// above it. Values are the cell's words, except that words around '/' are
// one value: "0    / 0", "1528 / 44280" and "59985/ 65536" (five digits eat
// the space before '/') are all a used/total pair.
std::map<std::string, std::string_view> values_of(std::string_view cell, const std::vector<Label>& labels) {
  struct Group {
    std::size_t start, end;
  };
  std::vector<Group> groups;
  bool join_next = false;
  for (auto [start, word] : words_of(cell)) {
    bool join = !groups.empty() && (join_next || word.front() == '/');
    if (join)
      groups.back().end = start + word.size();
    else
      groups.push_back({start, start + word.size()});
    join_next = word.back() == '/';
  }
  std::map<std::string, std::string_view> out;
  if (labels.empty()) return out;
  // Every column filled: take them in order, which survives a layout whose
  // values do not start exactly under their labels. Otherwise some cell is
  // blank and the values go to the label whose column they start in.
  bool in_order = groups.size() == labels.size();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::size_t li = g;
    if (!in_order) {
      li = 0;
      for (std::size_t k = 0; k < labels.size(); ++k)
        if (labels[k].start <= groups[g].start) li = k;
    }
    out.emplace(labels[li].key, cell.substr(groups[g].start, groups[g].end - groups[g].start));
  }
  return out;
}

// Value of the first label in `row` whose key starts with `prefix`.
std::optional<std::string_view> find_value(const std::vector<std::map<std::string, std::string_view>>& row,
                                           std::string_view prefix) {
  for (const auto& cell : row)
    for (const auto& [key, value] : cell)
      if (key.starts_with(prefix)) return value;
  return std::nullopt;
}

// "20701/ 65536" -> {20701, 65536}; "NA" or a cell without '/' -> what can be read.
std::pair<std::optional<double>, std::optional<double>> used_total(std::string_view s) {
  auto slash = s.find('/');
  if (slash == std::string_view::npos) return {to_number(s), std::nullopt};
  return {to_number(s.substr(0, slash)), to_number(s.substr(slash + 1))};
}

using RowValues = std::vector<std::map<std::string, std::string_view>>;

RowValues row_values(const std::vector<std::string_view>& cells, const std::vector<std::vector<Label>>& layout) {
  RowValues out;
  for (std::size_t i = 0; i < cells.size() && i < layout.size(); ++i) out.push_back(values_of(cells[i], layout[i]));
  return out;
}

// One chip: the NPU row (name, health, power, temperature) and the chip row
// (chip id, AI core use, memory) that follows it.
struct Chip {
  std::optional<long> npu_id;
  std::optional<long> chip_id;
  std::vector<std::pair<std::string, double>> values;  // metric suffix -> value
};

void add(Chip& chip, const char* suffix, std::optional<double> v) {
  if (v) chip.values.emplace_back(suffix, *v);
}

// A memory cell: used and total, unless the chip has no such memory (910B
// prints DDR "Memory-Usage" as "0 / 0"): a constant zero series is noise.
void add_memory(Chip& chip, const char* used_suffix, const char* total_suffix, std::optional<std::string_view> cell) {
  if (!cell) return;
  auto [used, total] = used_total(*cell);
  if (total && *total == 0) return;
  add(chip, used_suffix, used);
  add(chip, total_suffix, total);
}

bool is_device_header(const std::vector<std::vector<Label>>& layout) {
  if (layout.empty() || layout[0].empty() || layout[0][0].key != "npu") return false;
  for (const auto& cell : layout)
    for (const auto& l : cell)
      if (l.key == "health") return true;
  return false;
}

// A row that starts another table (the process table's header) or replaces
// it ("No running processes found in NPU 0"): the device rows are over.
bool ends_device_rows(const std::vector<std::string_view>& cells) {
  auto words = words_of(cells.front());
  if (words.empty()) return false;
  auto first = words.front().second;
  if (iequals(first, "NPU") || iequals(first, "Chip") || iequals(first, "No")) return true;
  for (auto c : cells)
    if (lower(c).find("process") != std::string::npos) return true;
  return false;
}

std::vector<Reading> name_chips(const std::vector<Chip>& chips) {
  // An NPU with several chips (310P Duo cards) names them "<npu>_<chip>";
  // a single-chip NPU keeps its NPU id, which is what npu-smi -i takes.
  std::map<long, int> chips_per_npu;
  for (const auto& c : chips)
    if (c.npu_id) ++chips_per_npu[*c.npu_id];
  std::map<long, int> seen_per_npu;
  std::vector<Reading> out;
  for (std::size_t i = 0; i < chips.size(); ++i) {
    const auto& c = chips[i];
    std::string id;
    if (!c.npu_id) {
      id = std::to_string(i);  // no NPU id printed: table order is all we have
    } else if (chips_per_npu[*c.npu_id] > 1) {
      long chip = c.chip_id ? *c.chip_id : seen_per_npu[*c.npu_id];
      id = fmt::format("{}_{}", *c.npu_id, chip);
    } else {
      id = std::to_string(*c.npu_id);
    }
    if (c.npu_id) ++seen_per_npu[*c.npu_id];
    for (const auto& [suffix, value] : c.values) out.push_back({fmt::format("device.{}.{}", id, suffix), value});
  }
  return out;
}

// ------------------------------------------------------------- nvidia-smi ---

// "utilization.gpu [%]" -> "utilization.gpu" (the header nvidia-smi prints without `noheader`).
std::string_view strip_unit_suffix(std::string_view field) {
  field = util::trim(field);
  auto br = field.find(" [");
  return util::trim(field.substr(0, br));
}

std::vector<std::string_view> split_csv(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    auto comma = line.find(',');
    out.push_back(util::trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

// ----------------------------------------------------------------- public ---

namespace {

// What one walk over an `npu-smi info` table finds: per chip its readings,
// per NPU row the model name, and the tool's version line.
struct NpuSmiTable {
  std::vector<Chip> chips;
  std::vector<std::string> npu_names;
  std::string tool_version;
};

NpuSmiTable walk_npu_smi_table(std::string_view text) {
  NpuSmiTable table;
  enum class State { Searching, HeaderRow2, DeviceRows };
  State state = State::Searching;
  std::vector<std::vector<Label>> layout1, layout2;  // header rows 1 (NPU) and 2 (chip), per cell
  std::size_t health_cell = 0;
  std::optional<RowValues> npu_row;  // the NPU row the next chip rows belong to (views into `text`)
  int rows_since_separator = 0;
  std::vector<Chip> chips;

  for (auto line : lines_of(text)) {
    auto trimmed = util::trim(line);
    if (trimmed.empty()) continue;
    if (trimmed.front() == '+') {
      rows_since_separator = 0;
      continue;
    }
    auto cells = row_cells(trimmed);
    if (!cells) continue;  // not a table row, or cut short by truncation
    // "| npu-smi 23.0.2.1      Version: 23.0.2.1     |" above the table.
    if (auto first = util::trim((*cells)[0]); first.starts_with("npu-smi ")) {
      auto v = first.find("Version:");
      table.tool_version = std::string(util::trim(v == std::string_view::npos ? first.substr(8) : first.substr(v + 8)));
      continue;
    }
    std::vector<std::vector<Label>> labels;
    for (auto c : *cells) labels.push_back(labels_of(c));

    if (is_device_header(labels)) {
      layout1 = std::move(labels);
      for (std::size_t i = 0; i < layout1.size(); ++i)
        for (const auto& l : layout1[i])
          if (l.key == "health") health_cell = i;
      state = State::HeaderRow2;
      npu_row.reset();
      continue;
    }
    if (state == State::HeaderRow2) {
      bool chip_header =
          !labels.empty() && !labels[0].empty() && labels[0][0].key == "chip" && labels.size() == layout1.size();
      state = chip_header ? State::DeviceRows : State::Searching;
      if (chip_header) layout2 = std::move(labels);
      continue;
    }
    if (state != State::DeviceRows) continue;
    if (ends_device_rows(*cells)) {
      state = State::Searching;
      continue;
    }
    if (cells->size() != layout1.size()) continue;  // a row of some other shape

    // The first row after a separator is an NPU row; so is a row whose
    // health cell holds a word (a table without separators between NPUs).
    // Chip rows hold a Bus-Id ("0000:5A:00.0") or "NA" there.
    auto health = util::trim((*cells)[health_cell]);
    bool health_word = !health.empty() && std::isalpha(static_cast<unsigned char>(health.front())) &&
                       !iequals(health, "NA") && health.find(':') == std::string_view::npos;
    bool is_npu_row = rows_since_separator == 0 || health_word;
    ++rows_since_separator;
    if (is_npu_row) {
      npu_row = row_values(*cells, layout1);
      if (auto name = find_value(*npu_row, "name"); name && !name->empty()) table.npu_names.emplace_back(*name);
      continue;
    }
    if (!npu_row) continue;  // a chip row whose NPU row was lost
    auto chip_row = row_values(*cells, layout2);

    Chip chip;
    if (auto id = find_value(*npu_row, "npu")) chip.npu_id = util::parse_non_negative(*id);
    if (auto id = find_value(chip_row, "chip")) chip.chip_id = util::parse_non_negative(*id);
    auto number = [](const RowValues& row, std::string_view prefix) -> std::optional<double> {
      auto v = find_value(row, prefix);
      return v ? to_number(*v) : std::nullopt;
    };
    add(chip, "power_w", number(*npu_row, "power"));
    add(chip, "temp_c", number(*npu_row, "temp"));
    if (auto h = find_value(*npu_row, "health"); h && !h->empty() && !iequals(*h, "NA"))
      add(chip, "health_ok", iequals(*h, "OK") ? 1.0 : 0.0);
    add(chip, "aicore_pct", number(chip_row, "aicore"));
    add_memory(chip, "memory_used_mb", "memory_total_mb", find_value(chip_row, "memory"));
    add_memory(chip, "hbm_used_mb", "hbm_total_mb", find_value(chip_row, "hbm"));
    chips.push_back(std::move(chip));
  }
  table.chips = std::move(chips);
  return table;
}

}  // namespace

std::vector<Reading> parse_npu_smi_info(std::string_view text) { return name_chips(walk_npu_smi_table(text).chips); }

NpuSmiInventory npu_smi_inventory(std::string_view text) {
  auto table = walk_npu_smi_table(text);
  return {std::move(table.npu_names), std::move(table.tool_version)};
}

const std::vector<std::pair<std::string, std::string>>& nvidia_fields() {
  // utilization.memory is the share of time device memory was read or
  // written, not how full it is: hence memory_busy_pct.
  static const std::vector<std::pair<std::string, std::string>> k_fields = {
      {"utilization.gpu", "util_pct"},   {"utilization.memory", "memory_busy_pct"},
      {"memory.used", "memory_used_mb"}, {"memory.total", "memory_total_mb"},
      {"temperature.gpu", "temp_c"},     {"power.draw", "power_w"},
      {"clocks.sm", "sm_freq_mhz"},      {"clocks.mem", "memory_freq_mhz"},
  };
  return k_fields;
}

std::vector<Reading> parse_nvidia_smi_csv(std::string_view text) {
  // Columns are the query fields in order. Output captured without
  // `noheader` starts with the field names, which then say where each field
  // is (and values carry units unless `nounits`); reading that too lets the
  // parser take any captured query, not only the one the sampler sends.
  std::vector<std::string> column_suffix;  // per column: metric suffix, or "" to skip
  for (const auto& f : nvidia_fields()) column_suffix.push_back(f.second);
  bool header_seen = false;
  std::vector<Reading> out;
  int gpu = 0;
  for (auto line : lines_of(text)) {
    if (util::trim(line).empty()) continue;
    auto fields = split_csv(line);
    if (!header_seen && out.empty() && gpu == 0) {
      bool is_header = std::any_of(fields.begin(), fields.end(), [](std::string_view f) {
        auto name = strip_unit_suffix(f);
        return std::any_of(nvidia_fields().begin(), nvidia_fields().end(),
                           [&](const auto& nf) { return nf.first == name; });
      });
      if (is_header) {
        header_seen = true;
        column_suffix.clear();
        for (auto f : fields) {
          auto name = strip_unit_suffix(f);
          auto it = std::find_if(nvidia_fields().begin(), nvidia_fields().end(),
                                 [&](const auto& nf) { return nf.first == name; });
          column_suffix.push_back(it == nvidia_fields().end() ? std::string() : it->second);
        }
        continue;
      }
    }
    if (fields.size() != column_suffix.size()) continue;  // an error message or a cut line, not a GPU
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (column_suffix[i].empty()) continue;
      // "[Not Supported]", "[N/A]" and anything else that is not a number are missing.
      if (auto v = to_number_with_unit(fields[i]))
        out.push_back({fmt::format("device.{}.{}", gpu, column_suffix[i]), *v});
    }
    ++gpu;
  }
  return out;
}

std::vector<DeviceProcess> parse_npu_smi_processes(std::string_view text) {
  // After the header "| NPU  Chip | Process id | Process name | Process memory(MB) |",
  // rows "| 0  0 | 124528 | python3.8 | 17400 |"; "No running processes found" otherwise.
  std::vector<DeviceProcess> out;
  bool in_table = false;
  for (auto raw : util::split(text, '\n')) {
    std::string_view line = util::trim(raw);
    if (line.find("Process id") != std::string_view::npos) {
      in_table = true;
      continue;
    }
    if (!in_table || line.empty() || line.front() != '|') continue;
    auto cells = util::split(line, '|');
    // cells: "", " 0  0 ", " 124528 ", " python ", " 17400 ", ""
    if (cells.size() < 4) continue;
    auto ids = util::split_whitespace(util::trim(cells[1]));
    int pid = 0;
    auto pid_text = util::trim(cells[2]);
    auto [ptr, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
    if (ec != std::errc{} || ptr != pid_text.data() + pid_text.size() || pid <= 0 || ids.empty()) continue;
    std::string device(ids[0]);
    if (ids.size() > 1 && ids[1] != "0") device += "_" + std::string(ids[1]);
    out.push_back({device, pid});
  }
  return out;
}

std::vector<DeviceProcess> parse_nvidia_smi_apps(std::string_view text) {
  std::vector<DeviceProcess> out;
  for (auto raw : util::split(text, '\n')) {
    auto fields = util::split(util::trim(raw), ',');
    if (fields.empty()) continue;
    auto pid_text = util::trim(fields[0]);
    int pid = 0;
    auto [ptr, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
    if (ec != std::errc{} || ptr != pid_text.data() + pid_text.size() || pid <= 0) continue;
    out.push_back({fields.size() > 1 ? std::string(util::trim(fields[1])) : std::string(), pid});
  }
  return out;
}

std::optional<CpuTicks> parse_proc_stat_cpu(std::string_view text) {
  auto nl = text.find('\n');
  auto line = text.substr(0, nl);
  if (!line.starts_with("cpu ")) return std::nullopt;
  auto fields = util::split_whitespace(line);
  // cpu user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is in user already.
  if (fields.size() < 9) return std::nullopt;
  unsigned long long v[8] = {};
  for (int i = 0; i < 8; ++i) {
    auto f = fields[static_cast<std::size_t>(i) + 1];
    auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v[i]);
    if (ec != std::errc{} || ptr != f.data() + f.size()) return std::nullopt;
  }
  CpuTicks t;
  t.busy = v[0] + v[1] + v[2] + v[5] + v[6];
  t.idle = v[3] + v[4];
  t.steal = v[7];
  return t;
}

namespace {

// An unsigned number at the start of `text` (after blanks), alone in its field.
std::optional<unsigned long long> leading_count(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  unsigned long long v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || ptr == text.data()) return std::nullopt;
  if (ptr != text.data() + text.size() && !std::isspace(static_cast<unsigned char>(*ptr))) return std::nullopt;
  return v;
}

}  // namespace

std::optional<double> parse_loadavg_1m(std::string_view text) {
  auto fields = util::split_whitespace(text.substr(0, text.find('\n')));
  if (fields.empty()) return std::nullopt;
  double v = 0;
  const auto f = fields.front();
  auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc{} || ptr != f.data() + f.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

std::optional<unsigned long long> parse_cpu_pressure_total_us(std::string_view text) {
  for (auto line : lines_of(text)) {
    if (!line.starts_with("some ")) continue;
    const auto at = line.find(" total=");
    if (at == std::string_view::npos) return std::nullopt;
    return leading_count(line.substr(at + 7));
  }
  return std::nullopt;
}

std::optional<unsigned long long> parse_schedstat_wait_ns(std::string_view text) {
  auto fields = util::split_whitespace(text.substr(0, text.find('\n')));
  if (fields.size() < 2) return std::nullopt;
  return leading_count(fields[1]);
}

model::MetricInfo sampler_metric_info(std::string_view metric) {
  // Direction: what a regression looks like when the workload is unchanged.
  // More memory, heat or power for the same work is worse (lower). Busy
  // percentages and clocks are consequences, not goals: a faster step may
  // raise or lower them, so they carry no direction (none). Capacities and
  // rated clocks are properties of the device (none). Memory occupancy in
  // percent (*_usage_pct) is memory, so lower.
  auto info = model::MetricInfo::inferred(metric);
  auto ends = [&](std::string_view suffix) { return metric.ends_with(suffix); };
  auto leaf = metric.substr(metric.rfind('.') == std::string_view::npos ? 0 : metric.rfind('.') + 1);
  if (ends("_total_mb") || ends("_capacity_mb")) {
    info.unit = "MB";
    info.better = model::Better::None;
  } else if (ends("_mb")) {
    info.unit = "MB";
    info.better = model::Better::Lower;
  } else if (ends("_usage_pct")) {
    info.unit = "%";
    info.better = model::Better::Lower;
  } else if (ends("_pct")) {
    info.unit = "%";
    info.better = model::Better::None;
  } else if (ends("_w")) {
    info.unit = "W";
    info.better = model::Better::Lower;
  } else if (ends("_c")) {
    info.unit = "C";
    info.better = model::Better::Lower;
  } else if (ends("_mhz")) {
    info.unit = "MHz";
    info.better = model::Better::None;
  } else if (leaf == "probe_ms" || leaf == "wakeup_late_ms") {
    // The host probe: the same work taking longer means the machine is slower;
    // a thread waking later means it paused.
    info.unit = "ms";
    info.better = model::Better::Lower;
  } else if (leaf == "load1" || leaf == "device_foreign_procs" || leaf == "cpu_pressure_pct" ||
             leaf == "other_cpu_pct" || leaf == "steal_pct" || leaf == "trial_cpu_wait_pct") {
    info.unit = "";
    info.better = model::Better::None;
  } else if (leaf == "threads") {
    info.unit = "";
    info.better = model::Better::None;
  } else if (leaf == "health_ok") {
    info.unit = "";
    info.better = model::Better::Higher;
  }
  return info;
}

}  // namespace perfgate::sampling
