// The C identifier sanitizer (exec/c_names.h), fuzzed with RapidCheck: for any byte string the
// result is a valid C/C++ identifier that is not reserved (no leading underscore, no "__", not a
// keyword), it decodes back to the name (so it is injective), and distinct names or prefixes give
// distinct identifiers.

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <regex>

#include "exec/c_names.h"

namespace fp {
namespace {

bool valid_unreserved(const std::string& id) {
  static const std::regex ident("[A-Za-z][A-Za-z0-9_]*");
  return std::regex_match(id, ident) && id.find("__") == std::string::npos && id[0] != '_' &&
         !is_c_or_cpp_keyword(id);
}

rc::Gen<std::string> any_name() {
  return rc::gen::oneOf(rc::gen::arbitrary<std::string>(),
                        rc::gen::container<std::string>(rc::gen::element(
                            '_', 'Z', 'z', '0', '9', 'a', '-', '.', ' ', '\0', '\xff', '\x80', '$')));
}

RC_GTEST_PROP(ExecNames, AlwaysAValidUnreservedIdentifier, ()) {
  const std::string name = *any_name();
  const char prefix = *rc::gen::element('n', 'l', 's');
  const std::string id = c_identifier(prefix, name);
  RC_ASSERT(valid_unreserved(id));
}

RC_GTEST_PROP(ExecNames, DecodesBackToTheName, ()) {
  const std::string name = *any_name();
  const auto back = c_identifier_decode(c_identifier('n', name));
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == name);
}

RC_GTEST_PROP(ExecNames, Injective, ()) {
  const std::string a = *any_name();
  const std::string b = *any_name();
  RC_PRE(a != b);
  RC_ASSERT(c_identifier('l', a) != c_identifier('l', b));
  RC_ASSERT(c_identifier('l', a) != c_identifier('n', a));
}

TEST(ExecNames, KnownSpellings) {
  EXPECT_EQ(c_identifier('n', "row_max"), "n_rowZ_max");
  EXPECT_EQ(c_identifier('n', "Z"), "n_ZZ");
  EXPECT_EQ(c_identifier('l', "a b"), "l_aZ20b");
  EXPECT_EQ(c_identifier('s', ""), "s_");
  EXPECT_EQ(c_identifier('n', "__x"), "n_Z_Z_x");
  EXPECT_FALSE(c_identifier_decode("n_Z41").has_value());  // 'A' is never escaped: not an output
  EXPECT_FALSE(c_identifier_decode("n__").has_value());
}

}  // namespace
}  // namespace fp
