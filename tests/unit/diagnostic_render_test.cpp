// Rendering diagnostics (core/diagnostic_render.h): clang's layout, the source line with a caret
// under the column, colour only when asked. The command-line behaviour is in
// tests/lit/core/diagnostic-caret.test and diagnostic-colour.test.

#include "core/diagnostic_render.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/diagnostic.h"

namespace fp {
namespace {

TEST(DiagnosticRender, LocatedErrorHasPrefixSourceLineAndCaret) {
  remember_source("<mem-a>", "routine r {\n  o[i = a[i] + 1\n}\n");
  const std::string text =
      render_diagnostic(DiagnosticText{Severity::Error, "<mem-a>", 2, 13, "expected ']' after index"}, false);
  EXPECT_EQ(text,
            "<mem-a>:2:13: error: expected ']' after index\n"
            "  o[i = a[i] + 1\n"
            "            ^\n");
}

TEST(DiagnosticRender, UnlocatedErrorsNameTheFileOrTheProgram) {
  EXPECT_EQ(render_diagnostic(DiagnosticText{Severity::Error, "x.npy", 0, 0, "bad magic"}, false),
            "x.npy: error: bad magic\n");
  EXPECT_EQ(render_diagnostic(DiagnosticText{Severity::Warning, "", 0, 0, "gate off"}, false),
            "flashproof: warning: gate off\n");
  EXPECT_EQ(render_diagnostic(DiagnosticText{Severity::Note, "", 0, 0, "see --help"}, false),
            "flashproof: note: see --help\n");
}

TEST(DiagnosticRender, ColourFollowsClangsScheme) {
  remember_source("<mem-b>", "abc\n");
  const std::string text = render_diagnostic(DiagnosticText{Severity::Error, "<mem-b>", 1, 2, "bad"}, true);
  EXPECT_EQ(text,
            "\033[1m<mem-b>:1:2: \033[1;31merror: \033[0m\033[1mbad\033[0m\n"
            "abc\n"
            "\033[1;32m ^\033[0m\n");
  const std::string warn = render_diagnostic(DiagnosticText{Severity::Warning, "", 0, 0, "w"}, true);
  EXPECT_NE(warn.find("\033[1;35mwarning: "), std::string::npos) << warn;
}

TEST(DiagnosticRender, ColourOnlyOnATerminalWithoutNoColor) {
  EXPECT_TRUE(color_wanted(true, nullptr, "xterm"));
  EXPECT_TRUE(color_wanted(true, "", nullptr));  // NO_COLOR set but empty does not count
  EXPECT_FALSE(color_wanted(true, "1", "xterm"));
  EXPECT_FALSE(color_wanted(false, nullptr, "xterm"));
  EXPECT_FALSE(color_wanted(true, nullptr, "dumb"));
}

TEST(DiagnosticRender, SnippetExpandsTabsAndEscapesUnprintableBytes) {
  SourceSnippet s = make_snippet("\tx = y", 6);
  EXPECT_EQ(s.line, "        x = y");
  EXPECT_EQ(s.caret, "            ^");
  s = make_snippet(std::string("ab\0\xff"
                               "c",
                               5),
                   5);
  EXPECT_EQ(s.line, "ab<00><FF>c");
  EXPECT_EQ(s.caret, "          ^");
  // A UTF-8 character is one column; a column past the end points just after the line.
  s = make_snippet("\xc3\xa9t\xc3\xa9", 4);
  EXPECT_EQ(s.caret, "  ^");
  s = make_snippet("abc", 9);
  EXPECT_EQ(s.caret, "   ^");
}

TEST(DiagnosticRender, SourceLineIsReadBackFromTheFile) {
  const auto path =
      std::filesystem::temp_directory_path() / ("fp-render-" + std::to_string(::getpid()) + ".fp");
  std::ofstream(path) << "one\r\ntwo\nthree";
  std::string line;
  ASSERT_TRUE(source_line(path.string(), 2, line));
  EXPECT_EQ(line, "two");
  ASSERT_TRUE(source_line(path.string(), 3, line));
  EXPECT_EQ(line, "three");
  EXPECT_FALSE(source_line(path.string(), 4, line));
  std::filesystem::remove(path);
  // A missing file leaves the snippet out rather than failing.
  EXPECT_EQ(render_diagnostic(DiagnosticText{Severity::Error, path.string(), 1, 1, "m"}, false),
            path.string() + ":1:1: error: m\n");
}

TEST(DiagnosticRender, WhatStaysTheOneLineMachineForm) {
  UserError e(kExitMalformed, "a.fp", 3, 14, "expected ']' after index");
  EXPECT_STREQ(e.what(), "a.fp:3:14: expected ']' after index");
}

}  // namespace
}  // namespace fp
