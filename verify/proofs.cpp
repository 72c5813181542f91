#include "verify/proofs.h"

#include "verify/online_softmax/proofs.h"

namespace fp::verify {

std::vector<Checker> member_checkers() {
  // One line per member: its proof folder's checkers.
  const std::vector<std::vector<Checker>> members = {
      online_softmax_checkers(),
  };
  std::vector<Checker> out;
  for (const auto& m : members) out.insert(out.end(), m.begin(), m.end());
  return out;
}

}  // namespace fp::verify
