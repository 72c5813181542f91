#pragma once
// A directory of outputs that belong together (a counterexample case: routines, inputs, outputs,
// replay.sh) appears whole or not at all: its files are written into a hidden staging directory
// beside the target, each one through an AtomicFile (checked writes, fsync), and commit() renames
// the staging directory onto the target. A directory already there under the target's name (an
// earlier case) is exchanged atomically with the new one (renameat2 RENAME_EXCHANGE; on a file
// system without it, moved aside first) and then removed.
//
// Errors are UserErrors naming the final path, never the staging one: 73 when the staging
// directory or a subdirectory cannot be created or a file other than a directory holds the target's
// name, 74 when a write or the rename fails. On any failure (or destruction without commit) the
// staging directory is removed and the target is left as it was.

#include <sys/types.h>

#include <memory>
#include <string>

#include "core/support/atomic_file.h"

namespace fp {

class AtomicDirectory {
 public:
  // Creates the target's missing parents and the staging directory.
  explicit AtomicDirectory(std::string path);
  ~AtomicDirectory();
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;

  // A new file `relative` (e.g. "inputs/q.npy") of the case: commit it, then commit the directory.
  std::unique_ptr<AtomicFile> open(const std::string& relative, mode_t mode = 0666);
  void write_file(const std::string& relative, std::string_view bytes, mode_t mode = 0666);
  void make_subdirectory(const std::string& relative);
  // Renames the staging directory onto the target. Call once, after every file is committed.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& staging_path() const { return staging_; }

 private:
  std::string final_name(const std::string& relative) const { return path_ + "/" + relative; }
  void replace_existing();

  std::string path_;
  std::string staging_;
  bool committed_ = false;
};

}  // namespace fp
