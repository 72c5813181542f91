// libFuzzer harness for the `.fp` parser (core/text_parser.h), built with
// -DFLASHPROOF_LIBFUZZER=ON (docs/fuzzing.md, "libFuzzer harnesses"). The property is the `parse`
// target's (fuzz/text_round_trip.h): any text parses or gets a located diagnostic (65); a parsed
// routine the checker rejects gets located problems; a well-formed one round-trips through the
// text. A violation aborts (fuzz/libfuzzer/harness_support.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/libfuzzer/harness_support.h"
#include "fuzz/text_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fp::fuzz::InputScope scope;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto f = fp::fuzz::check_fp_text(text, "fuzz.fp"))
    fp::fuzz::harness_fail(f->kind, f->message + (f->printed.empty() ? "" : "\n" + f->printed));
  return 0;
}
