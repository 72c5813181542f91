#include "verify/junit.h"

#include <fmt/format.h>

namespace fp::verify {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += fmt::format("&#{};", static_cast<int>(c));
        else
          out += c;
    }
  }
  return out;
}

namespace {

std::string time_attribute(const std::optional<double>& seconds) {
  return seconds ? fmt::format(" time=\"{:.3f}\"", *seconds) : "";
}

// The case's one child element, or "" for a passed case with nothing to say.
std::string outcome_element(const JUnitCase& c) {
  using Outcome = JUnitCase::Outcome;
  switch (c.outcome) {
    case Outcome::Passed:
      return c.text.empty() ? "" : "<system-out>" + xml_escape(c.text) + "</system-out>";
    case Outcome::Skipped:
      return fmt::format("<skipped message=\"{}\"/>", xml_escape(c.message));
    case Outcome::Failed:
    case Outcome::Error:
      break;
  }
  const char* tag = c.outcome == Outcome::Failed ? "failure" : "error";
  std::string open =
      fmt::format("<{}{} message=\"{}\"", tag, c.type.empty() ? "" : " type=\"" + xml_escape(c.type) + "\"",
                  xml_escape(c.message));
  return c.text.empty() ? open + "/>" : fmt::format("{}>{}</{}>", open, xml_escape(c.text), tag);
}

}  // namespace

std::string junit_xml(const JUnitReport& r) {
  int failures = 0, errors = 0, skipped = 0;
  for (const auto& c : r.cases) {
    failures += c.outcome == JUnitCase::Outcome::Failed;
    errors += c.outcome == JUnitCase::Outcome::Error;
    skipped += c.outcome == JUnitCase::Outcome::Skipped;
  }
  const std::string counts =
      fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"{}", r.cases.size(), failures,
                  errors, skipped, time_attribute(r.seconds));
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"{}\" {}>\n", xml_escape(r.name), counts);
  out += fmt::format("  <testsuite name=\"{}\" {}>\n", xml_escape(r.suite), counts);
  for (const auto& c : r.cases) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\"{}", xml_escape(c.classname),
                       xml_escape(c.name), time_attribute(c.seconds));
    const std::string child = outcome_element(c);
    out += child.empty() ? "/>\n" : fmt::format(">\n      {}\n    </testcase>\n", child);
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace fp::verify
