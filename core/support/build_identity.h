#pragma once
// The identity of the running build, for keys of results that a different build might compute
// differently (cached verdicts, verify/proof_cache.h): a fixed bug then invalidates the old
// verdicts without anyone bumping a version by hand.
//
// It is the GNU build-id note of the running executable ("gnu-build-id:<hex>"; the linker hashes
// the code into it, and Debian's gcc always passes --build-id), else the SHA-256 of
// /proc/self/exe ("exe-sha256:<hex>", computed once), else a random value per process
// ("unidentified:<hex>"), so that a build that cannot name itself never reuses another's results.

#include <string>

namespace fp {

const std::string& build_identity();

}  // namespace fp
