#pragma once
// The flashproof binary that is running, for the replay scripts it writes: a case must replay with
// "the flashproof that wrote it, not whatever is on PATH". main() records /proc/self/exe; a library
// caller (a unit test) may record its own choice; empty means unknown, and scripts then use PATH.

#include <string>

namespace fp {

// Records `path` (called once at start-up, before any thread runs).
void set_flashproof_executable(std::string path);
const std::string& flashproof_executable();

// The absolute path of this process's executable (/proc/self/exe), or empty when unreadable.
std::string running_executable();

// POSIX sh lines setting FLASHPROOF to the recorded binary, or to `flashproof` (found on PATH, with
// a note on standard error) when that file no longer exists or none was recorded. A replay script
// runs "$FLASHPROOF" ... after them.
std::string replay_script_preamble();

}  // namespace fp
