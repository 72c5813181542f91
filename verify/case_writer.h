#pragma once
// A refuted verdict's counterexample as a runnable case directory:
//   DIR/src.fp, DIR/tgt.fp   the two routines in the text format (with the header comment), the
//                            violated node as their one output, at the reduced sizes when the
//                            extents were shrunk
//   DIR/<input>.npy          the minimized inputs
//   DIR/replay.sh            the replay: flashproof verify --src … --tgt … --claim … --inputs DIR
//                            (exit 1: the claim fails on these inputs), run with the flashproof
//                            binary that wrote the case (core/support/executable_path.h), PATH's only when
//                            that file is gone
//   DIR/README.txt           what differs, and the command
// The directory appears complete or not at all (core/support/atomic_directory.h); a write failure is a
// UserError 73/74 naming the file, and an earlier case of the same name stays until the new one is
// complete.

#include <string>

#include "core/interpreter.h"
#include "verify/compare.h"
#include "verify/verdict.h"

namespace fp::verify {

// Writes the case and returns its description (dir, replay command, summary, extents). `check` is
// the violated check; `origin` the command that produced the verdict (header comment); `extents`
// the sizes `src` and `tgt` were reduced by (verify/size_reduction.h; named in the header and the
// README), empty when they are the obligation's own.
Counterexample write_case(const std::string& dir, const Routine& src, const Routine& tgt,
                          const TensorMap& inputs, const NodeCheck& check, const Mismatch& mismatch,
                          const std::string& origin, const std::vector<ExtentReduction>& extents = {});

// A directory name from an obligation id ("1.some-claim" stays; other characters become _).
std::string sanitize_id(const std::string& id);

}  // namespace fp::verify
