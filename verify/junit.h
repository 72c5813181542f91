#pragma once
// JUnit XML, one writer for every report that offers it (verify's verdicts, diff's outputs): the
// caller turns its results into test cases; the counts and the layout are written here.
//
//   <testsuites name=… tests failures errors skipped [time]>
//     <testsuite name=… (the same counts)>
//       <testcase classname=… name=… [time]/>                          passed, nothing to say
//       <testcase …><system-out>TEXT</system-out></testcase>            passed
//       <testcase …><failure [type=…] message=…>TEXT</failure></testcase>
//       <testcase …><error [type=…] message=…>TEXT</error></testcase>
//       <testcase …><skipped message=…/></testcase>
// (each child on a line of its own). Every attribute and text is escaped with xml_escape.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp::verify {

struct JUnitCase {
  std::string classname;
  std::string name;
  std::optional<double> seconds;  // time="…" when known
  enum class Outcome : std::uint8_t { Passed, Failed, Error, Skipped } outcome = Outcome::Passed;
  std::string type;     // the failure's or error's type attribute (none when empty)
  std::string message;  // the failure's, error's or skip's message
  std::string text;     // the failure's or error's text, or a passed case's system-out (none when empty)
};

struct JUnitReport {
  std::string name;               // of the testsuites: the tool and subcommand
  std::string suite;              // of the one testsuite: what was checked
  std::optional<double> seconds;  // time="…" on both when known
  std::vector<JUnitCase> cases;
};

std::string junit_xml(const JUnitReport& report);

// Text for an XML attribute or element: & < > " ' escaped, other control characters except
// newline and tab written as character references.
std::string xml_escape(const std::string& s);

}  // namespace fp::verify
