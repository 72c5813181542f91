#include "core/memory_limit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/diagnostic.h"

namespace fp {

namespace {

constexpr std::int64_t kMaxLimit = std::int64_t{1} << 62;
// cgroup files say "no limit" with a huge number (v1: LONG_MAX rounded to a page).
constexpr std::int64_t kCgroupUnlimited = std::int64_t{1} << 60;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Bytes in one unit ("", "k", "kb", "kib", ...), or 0 for an unknown unit.
std::int64_t unit_bytes(const std::string& unit) {
  static const std::pair<const char*, int> kUnits[] = {{"", 0},  {"b", 0}, {"k", 1},
                                                       {"m", 2}, {"g", 3}, {"t", 4}};
  for (const auto& [prefix, power] : kUnits) {
    const std::string p = prefix;
    if (unit == p || (!p.empty() && p != "b" && (unit == p + "b" || unit == p + "ib")))
      return std::int64_t{1} << (10 * power);
  }
  return 0;
}

// The first number in a one-line file, or nullopt ("max" in cgroup v2 means no limit).
std::optional<std::int64_t> read_number_file(const std::string& path) {
  std::ifstream f(path);
  std::string word;
  if (!(f >> word)) return std::nullopt;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || ptr != word.data() + word.size() || v <= 0 || v >= kCgroupUnlimited)
    return std::nullopt;
  return v;
}

std::optional<std::int64_t> mem_available() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string key;
    std::int64_t kib = 0;
    if (in >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<std::int64_t>(pages) * page;
  return std::nullopt;
}

// The limit of this process's memory cgroup (v2 "0::/path", v1 a line naming "memory").
std::optional<std::int64_t> cgroup_limit() {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  std::optional<std::int64_t> best;
  auto consider = [&](std::optional<std::int64_t> v) {
    if (v && (!best || *v < *best)) best = v;
  };
  while (std::getline(f, line)) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      consider(read_number_file("/sys/fs/cgroup" + path + "/memory.max"));
      consider(read_number_file("/sys/fs/cgroup/memory.max"));  // a namespaced container's own root
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      consider(read_number_file("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"));
      consider(read_number_file("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    }
  }
  return best;
}

}  // namespace

std::string format_bytes(std::int64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

std::optional<MemoryLimit> parse_memory_limit(std::string_view text) {
  const std::string t = lower(text);
  if (t == "unlimited" || t == "none") return MemoryLimit{std::nullopt, "--max-memory unlimited"};
  std::size_t digits = 0;
  while (digits < t.size() && (std::isdigit(static_cast<unsigned char>(t[digits])) || t[digits] == '.'))
    ++digits;
  double number = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + digits, number);
  if (digits == 0 || ec != std::errc() || ptr != t.data() + digits) return std::nullopt;
  std::string unit = t.substr(digits);
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  const std::int64_t scale = unit_bytes(unit);
  const double bytes = std::floor(number * static_cast<double>(scale));
  if (scale == 0 || !(bytes >= 1) || bytes > static_cast<double>(kMaxLimit)) return std::nullopt;
  return MemoryLimit{static_cast<std::int64_t>(bytes), fmt::format("--max-memory {}", text)};
}

MemoryLimit default_memory_limit() {
  const std::optional<std::int64_t> available = mem_available(), cgroup = cgroup_limit();
  if (!available && !cgroup)
    return MemoryLimit{std::nullopt, "no limit: the available memory could not be read"};
  const bool by_cgroup = cgroup && (!available || *cgroup < *available);
  const std::int64_t base = by_cgroup ? *cgroup : *available;
  return MemoryLimit{base / 5 * 4, fmt::format("80% of the {} {}", format_bytes(base),
                                               by_cgroup ? "this process's memory cgroup allows"
                                                         : "available (MemAvailable)")};
}

MemoryLimit resolve_memory_limit(const std::string& flag) {
  if (flag.empty()) return default_memory_limit();
  if (auto l = parse_memory_limit(flag)) return *l;
  throw UserError(
      kExitUsage, "", 0, 0,
      fmt::format("--max-memory: expected a size like 512M, 8G or 1.5T, or 'unlimited', found '{}'", flag));
}

}  // namespace fp
