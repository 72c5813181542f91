#pragma once
// Shared helpers of the rewrite-tier and online-softmax tests: parsing checked routines (the lit
// golden files double as unit-test inputs), running the tier with the gate on, counting scans.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/checker.h"
#include "core/ir_visit.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"

namespace fp::ostest {

inline Routine parse_checked(const std::string& text, const std::string& name = "test.fp") {
  Routine r = parse_routine(text, name);
  check_routine_or_throw(r, name);
  return r;
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string lit_path(const std::string& file) {
  return std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit/online_softmax/" + file;
}

// A routine of tests/lit/online_softmax/, parsed and checked.
inline Routine lit_routine(const std::string& file) {
  return parse_checked(read_text_file(lit_path(file)), file);
}

inline Config gate_on() {
  Config c;
  c.set("online_softmax", "true");
  return c;
}

inline RewriteResult rewrite(const Routine& r, const TierOptions& o = {}) {
  return run_tier(r, gate_on(), o);
}

inline int count_kind(const Routine& r, StmtKind k) {
  int n = 0;
  for_each_stmt(r.body, [&](const Stmt& s) { n += s.kind == k; });
  return n;
}

inline ::testing::AssertionResult well_formed(const Routine& r) {
  auto d = check_routine(r);
  if (d.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << d[0].where << " " << d[0].message << "\n" << print_routine(r);
}

}  // namespace fp::ostest
