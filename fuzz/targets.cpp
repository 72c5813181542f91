// The registry of fuzzing targets (target.h).
#include "fuzz/target.h"

namespace fp::fuzz {

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {parse_target(), exec_target(), rewrite_target(), verify_target()};
  return all;
}

const Target* find_target(const std::string& name) {
  for (const Target& t : targets())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace fp::fuzz
