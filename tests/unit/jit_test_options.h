#pragma once
// The executor options the exec tests share: a JIT cache of their own under /tmp (the private
// cache refuses it unless it is this user's and private) and two threads.

#include <unistd.h>

#include <string>

#include "exec/executor.h"

namespace fp::testing {

inline ExecOptions jit_test_options() {
  ExecOptions o;
  o.cache_dir = "/tmp/flashproof-test-jit-" + std::to_string(getuid());
  o.threads = 2;
  return o;
}

}  // namespace fp::testing
