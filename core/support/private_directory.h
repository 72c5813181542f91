#pragma once
// A private directory: a real directory (not a symbolic link), owned by the effective user, and
// writable by neither its group nor others. The caches (core/support/private_cache.h) and the key that
// authenticates their entries (core/support/cache_auth_key.h) live only in such directories, because
// whoever can write to a directory can plant files in it: an object flashproof would load, a
// verdict it would report. Only the last component is checked: replacing it needs write access
// to its parent, and a parent that is a link (a home on another disk) is common and harmless.

#include <string>

namespace fp {

// Creates `dir` and every missing component with mode 0700, then checks it. Returns "" when the
// directory is private, else why not, as a clause that follows "refusing 'DIR': ".
std::string make_private_directory(const std::string& dir);

// Checks `dir` without creating anything: "" when it is private, else why not ("it does not
// exist" among the reasons).
std::string private_directory_problem(const std::string& dir);

// A fresh private directory `$TMPDIR/PREFIXxxxxxx` (else /tmp), named by mkdtemp: nobody can
// predict the name and create it first. Throws UserError(73) when none can be created.
std::string make_fresh_private_directory(const std::string& prefix);

// `dir` without trailing slashes: a trailing slash would make lstat follow a final link.
std::string without_trailing_slashes(std::string dir);

}  // namespace fp
