// The house's rule for members (docs/architecture.md, "A member lives in two rooms"): a member's
// code lives in its rewrite folder (rewrites/<member>/) and its proof folder (verify/<member>/),
// registered with one line each (rewrites/members.cpp, verify/proofs.cpp); no other source of the
// library, the executors, the pipeline, the command line or fuzzing names a member, its shapes, its
// claims, its checkers or its config keys. And only the smt/ folders see the solver.
//
// The names come from the registry (every product member, and the toy member registered here), so
// a new member is covered without editing this test.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "rewrites/members.h"
#include "rewrites/toy_double_negation/toy_double_negation.h"
#include "verify/checkers.h"
#include "verify/checkers/builtin.h"
#include "verify/toy_double_negation/proofs.h"

namespace fp {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = FLASHPROOF_SOURCE_DIR;
// The folders of the product's layers (tests, benchmarks and documentation may name members).
const char* const kLayers[] = {"core", "frontend", "rewrites", "exec", "pipeline", "verify", "tools", "fuzz"};
// The two registration files, where one line per member names it.
const char* const kRegistrations[] = {"rewrites/members.cpp", "verify/proofs.cpp"};

// A pattern matching `name` as a whole name, with its word separators spelled any way: '-', '_',
// ' ', '.' or none ("online-softmax", "online_softmax", "online softmax", "OnlineSoftmax"). A name
// of one word must also not run on into another ("strip" is not "strip-mined").
std::string loose(const std::string& name) {
  std::string out;
  bool one_word = true;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.' || c == ' ') {
      out += "[-_ .]?";
      one_word = false;
    } else if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    } else {
      out += std::string("\\") + c;
    }
  }
  const std::string edge = one_word ? "[^A-Za-z0-9_-]" : "[^A-Za-z0-9]";
  return "(^|" + edge + ")" + out + "(" + edge + "|$)";
}

// Everything that names a member: its id and gate, its config keys, its shapes (whole and after
// the member's prefix), its claims, and the checkers its claims name that the engine does not own.
std::vector<std::string> member_names(const Member& m) {
  std::set<std::string> engine_checkers;
  for (auto make : {verify::bitwise_checker, verify::relative_checker, verify::loop_permutation_lift_checker})
    engine_checkers.insert(make().id);
  std::set<std::string> names{m.id, m.gate};
  for (const auto& k : m.config_keys) names.insert(k.name);
  for (const auto& s : m.shapes) {
    names.insert(s.id);
    names.insert(s.id.substr(s.id.find('.') + 1));
    for (const auto& c : s.claims) {
      names.insert(c.id);
      if (!engine_checkers.count(c.checker)) names.insert(c.checker);
    }
  }
  return {names.begin(), names.end()};
}

// The folder of a member in a layer: its id with '-' as '_' ("online-softmax" -> online_softmax).
std::string room_of(const Member& m) {
  std::string r = m.id;
  std::replace(r.begin(), r.end(), '-', '_');
  return r;
}

bool is_source(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".in" || ext == ".cmake" ||
         p.filename() == "CMakeLists.txt";
}

struct Hit {
  std::string file, member, line;
  int number = 0;
};

// `text` in lower case without word separators: a line can name `name` only if its squeezed form
// contains the name's (a cheap filter before the regex).
std::string squeezed(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != '-' && c != '_' && c != '.' && c != ' ') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct MemberPattern {
  const Member* member;
  std::vector<std::string> keys;  // the names, squeezed
  std::regex names;
};

// Every source file under `root`'s layer folders that names a member outside its rooms.
std::vector<Hit> names_outside_rooms(const fs::path& root, const std::vector<const Member*>& members) {
  std::vector<MemberPattern> patterns;
  std::vector<std::string> rooms;
  for (const Member* m : members) {
    std::string alternatives;
    std::vector<std::string> keys;
    for (const auto& n : member_names(*m)) {
      alternatives += (alternatives.empty() ? "" : "|") + loose(n);
      keys.push_back(squeezed(n));
    }
    patterns.push_back(MemberPattern{m, keys, std::regex(alternatives, std::regex::icase)});
    rooms.push_back("rewrites/" + room_of(*m) + "/");
    rooms.push_back("verify/" + room_of(*m) + "/");
  }
  std::vector<Hit> hits;
  for (const char* layer : kLayers) {
    if (!fs::is_directory(root / layer)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / layer)) {
      if (!e.is_regular_file() || !is_source(e.path())) continue;
      const std::string rel = fs::relative(e.path(), root).generic_string();
      if (std::any_of(rooms.begin(), rooms.end(), [&](const std::string& r) { return rel.rfind(r, 0) == 0; }))
        continue;
      const bool registration = std::find(std::begin(kRegistrations), std::end(kRegistrations), rel) !=
                                std::end(kRegistrations);
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const std::string flat = squeezed(line);
        for (const auto& [m, keys, re] : patterns) {
          if (std::none_of(keys.begin(), keys.end(), [&](const std::string& k) { return flat.find(k) != std::string::npos; }))
            continue;
          if (!std::regex_search(line, re)) continue;
          // A registration file names each member on its include and its list entries only.
          const std::regex entry("^#include \"(rewrites|verify)/" + room_of(*m) + "/[a-z_]+\\.h\"$|^ +" +
                                 room_of(*m) + "_(member|checkers|pair_recognizer)\\(\\),$");
          if (registration && std::regex_search(line, entry)) continue;
          hits.push_back(Hit{rel, m->id, line, n});
        }
      }
    }
  }
  return hits;
}

std::vector<const Member*> every_member() {
  std::vector<const Member*> out;
  for (const auto& m : tier_members()) out.push_back(&m);
  return out;
}

TEST(GenericLayers, NameNoMemberShapeClaimCheckerOrKeyOutsideTheMembersRooms) {
  ScopedMemberRegistration toy(toy_double_negation_member());
  const std::vector<const Member*> members = every_member();
  ASSERT_GE(members.size(), 2u);
  for (const Hit& h : names_outside_rooms(kRoot, members))
    ADD_FAILURE() << h.file << ":" << h.number << " names " << h.member << ": " << h.line;
}

// The test itself can fail: a generic file that names a member is caught. The file is planted in
// a tree of its own, never in the sources (the scan above runs beside this test under ctest -j).
TEST(GenericLayers, TheScanCatchesAMemberNamedInAGenericFile) {
  ScopedMemberRegistration toy(toy_double_negation_member());
  const fs::path root = fs::temp_directory_path() / ("flashproof-planted-" + std::to_string(::getpid()));
  fs::create_directories(root / "verify");
  {
    std::ofstream out(root / "verify" / "planted_name_for_test.h");
    out << "// reads the toy-double-negation.strip shape's claim\n";
  }
  const std::vector<Hit> hits = names_outside_rooms(root, every_member());
  fs::remove_all(root);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].file, "verify/planted_name_for_test.h");
  EXPECT_EQ(hits[0].member, "toy-double-negation");
}

// Only the smt/ folders (the engine's and each member's) include the solver's header; CMake links
// Z3 into their library alone (verify/CMakeLists.txt).
TEST(GenericLayers, OnlyTheSmtFoldersIncludeTheSolver) {
  const std::regex z3_include("#include\\s*[<\"]z3(\\+\\+)?\\.h[>\"]");
  for (const char* layer : kLayers)
    for (const auto& e : fs::recursive_directory_iterator(kRoot / layer)) {
      if (!e.is_regular_file() || !is_source(e.path())) continue;
      const std::string rel = fs::relative(e.path(), kRoot).generic_string();
      const bool smt_folder = rel.rfind("verify/", 0) == 0 && rel.find("/smt/") != std::string::npos;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        if (std::regex_search(line, z3_include)) {
          EXPECT_TRUE(smt_folder) << rel << ":" << n << " includes the solver outside an smt/ folder";
        }
      }
    }
}

}  // namespace
}  // namespace fp
