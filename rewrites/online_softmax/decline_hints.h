#pragma once
// What a user can do about each online-softmax decline: the hint a report prints beside the
// decline's sentence (Decline::hint). A hint says how to write the program so that the shape
// matches, or, where the decline is by design (dropout between the probabilities and the value
// pass, a max that is not a softmax), that it is and how to stop the shape from being tried. The
// codes are the shapes' (docs/online_softmax.md lists them); a code without its own hint gets its
// shape's general one.

#include <string>

#include "rewrites/application.h"

namespace fp::osm {

std::string decline_hint(const Decline& d);

}  // namespace fp::osm
