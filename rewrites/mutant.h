#pragma once
// Planted bugs of a rewrite (its mutants): each one a real rewritten routine — the target of one
// of the shape's obligations — with one bug the rewrite could plausibly make. A shape lists them
// beside itself (ShapeInfo::mutants, rewrites/member.h); verify's soundness tests and the fuzzing
// campaigns require every one of them to come out `refuted` — never unknown, never proved. A
// change that is semantically equivalent to the correct target is not a bug and is not listed
// (e.g. swapping the operands of max, which is commutative bit for bit).

#include <functional>
#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"

namespace fp {

struct Mutant {
  std::string id;
  std::string description;
  Routine tgt;
};

// The mutants of one application's target: `tgt` is the routine after the application (its round
// with only this shape enabled), `app` the application (statement positions locate what it emitted).
using MutantsOf = std::function<std::vector<Mutant>(const Routine& tgt, const Application& app)>;

}  // namespace fp
