// libFuzzer's flag spelling for `flashproof fuzz` (libfuzzer_flags.h).
#include "fuzz/libfuzzer_flags.h"

#include <algorithm>

namespace fp::fuzz {

const std::vector<std::string>& libfuzzer_flag_names() {
  static const std::vector<std::string> names = {"runs",          "max_total_time", "seed",
                                                 "jobs",          "workers",        "artifact_prefix",
                                                 "merge",         "minimize_crash", "print_final_stats",
                                                 "timeout"};
  return names;
}

std::vector<std::string> respell_libfuzzer_flags(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  const auto sub = std::find_if(out.begin() + std::min<std::ptrdiff_t>(1, out.size()), out.end(),
                                [](const std::string& a) { return a.empty() || a[0] != '-'; });
  if (sub == out.end() || *sub != "fuzz") return out;
  for (auto it = sub + 1; it != out.end(); ++it) {
    std::string& a = *it;
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || a[1] == '-') continue;
    const std::string name = a.substr(1, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 1);
    const auto& names = libfuzzer_flag_names();
    if (std::find(names.begin(), names.end(), name) != names.end()) a = "-" + a;
  }
  return out;
}

}  // namespace fp::fuzz
