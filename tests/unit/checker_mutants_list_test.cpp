// The checker mutants' list (tests/mutation/checker_mutants.json, scripts/mutants, docs/verify.md
// "Checker mutants") stays usable as the code changes: every entry applies to the sources as they
// are (its text found exactly once), names tests that exist, and every registered checker — the
// product's and the toy member's — has at least one mutant of a decision it stands on, so a checker
// added later comes with its mutants.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "verify/checkers.h"
#include "verify/toy_double_negation/proofs.h"

namespace fp::verify {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = FLASHPROOF_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json mutants() {
  return nlohmann::json::parse(read(kRoot / "tests/mutation/checker_mutants.json")).at("mutants");
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CheckerMutants, EveryMutantAppliesToTheSourcesAsTheyAre) {
  const nlohmann::json list = mutants();
  EXPECT_GE(list.size(), 25u);
  std::set<std::string> ids;
  for (const auto& m : list) {
    const std::string id = m.at("id");
    EXPECT_TRUE(ids.insert(id).second) << id << " twice";
    const std::string file = m.at("file"), find = m.at("find"), replace = m.at("replace");
    ASSERT_TRUE(fs::exists(kRoot / file)) << id << ": " << file;
    EXPECT_EQ(occurrences(read(kRoot / file), find), 1u) << id << ": its text is not found exactly once in " << file;
    EXPECT_NE(find, replace) << id;
    EXPECT_FALSE(std::string(m.at("kills")).empty()) << id << " names no test";
  }
}

// Every test a mutant names is a test of this binary (a filter matching none would pass vacuously).
TEST(CheckerMutants, EveryNamedTestExists) {
  std::set<std::string> tests;
  for (const auto& e : fs::directory_iterator(kRoot / "tests/unit")) {
    const std::string text = read(e.path());
    const std::regex test_re("TEST(_F|_P)?\\((\\w+), (\\w+)\\)");
    for (std::sregex_iterator it(text.begin(), text.end(), test_re), end; it != end; ++it)
      tests.insert((*it)[2].str() + "." + (*it)[3].str());
  }
  for (const auto& m : mutants()) {
    std::stringstream filters(std::string(m.at("kills")));
    for (std::string f; std::getline(filters, f, ':');) {
      const std::regex glob(std::regex_replace(std::regex_replace(f, std::regex("\\."), "\\."), std::regex("\\*"), ".*"));
      bool any = false;
      for (const auto& t : tests) any = any || std::regex_match(t, glob);
      EXPECT_TRUE(any) << m.at("id") << ": no test matches " << f;
    }
  }
}

TEST(CheckerMutants, EveryRegisteredCheckerHasAMutant) {
  ScopedCheckerRegistration toy(toy_double_negation_checkers());
  std::set<std::string> covered;
  for (const auto& m : mutants())
    for (const auto& c : m.at("covers")) covered.insert(c.get<std::string>());
  EXPECT_TRUE(covered.count("engine"));
  for (const std::string& id : checker_ids()) EXPECT_TRUE(covered.count(id)) << "no mutant of checker " << id;
}

}  // namespace
}  // namespace fp::verify
