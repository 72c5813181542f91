#include "tools/memory_preflight.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/memory_limit.h"

namespace fp::cli {

void add_max_memory_option(CLI::App& sub, std::string& value) {
  sub.add_option(
         "--max-memory", value,
         "Refuse a run whose buffers need more than SIZE (512M, 8G, 1.5T or unlimited; default 80% of "
         "the memory available)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return parse_memory_limit(v)
                       ? ""
                       : "expected a size like 512M, 8G or 1.5T, or 'unlimited', found '" + v + "'";
          },
          "SIZE"));
}

RunMemory verify_run_memory(const std::vector<verify::Task>& tasks, int jobs) {
  std::vector<RunMemory> each;
  for (const verify::Task& t : tasks)
    each.push_back(combine(
        {estimate_run_memory(t.src, "interp", {}), estimate_run_memory(t.tgt, "interp", {}, true)}, ""));
  std::sort(each.begin(), each.end(),
            [](const RunMemory& a, const RunMemory& b) { return a.bytes > b.bytes; });
  each.resize(std::min<std::size_t>(each.size(), static_cast<std::size_t>(std::max(jobs, 1))));
  return combine(std::move(each),
                 fmt::format("verify's interpreter trials: source and target of {} obligation{} at "
                             "once, every node as f64 cells",
                             std::max(jobs, 1), jobs > 1 ? "s" : ""));
}

void preflight_memory(const RunMemory& need, const std::string& flag, const std::string& what) {
  check_run_memory(need, resolve_memory_limit(flag), what);
}

}  // namespace fp::cli
