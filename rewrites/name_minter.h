#pragma once
// Fresh names for the locals a rewrite introduces. A minted name is derived from the names of the
// nodes it stands for (so rewritten code reads well) and made unique against every identifier the
// routine already uses — node, local, carried and loop names and index symbols — by a numeric
// suffix. Minting is a pure function of the routine and the request order, so rewriting the same
// routine twice prints the same text.

#include <string>
#include <unordered_set>

#include "core/ir.h"

namespace fp {

class NameMinter {
 public:
  explicit NameMinter(const Routine& r);
  // `base` if unused, else base_2, base_3, ...; the result is reserved.
  std::string mint(const std::string& base);
  bool used(const std::string& name) const { return used_.count(name) > 0; }

 private:
  std::unordered_set<std::string> used_;
};

}  // namespace fp
