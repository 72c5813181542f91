// libFuzzer harness for the .npy reader (core/npy.h), built with -DFLASHPROOF_LIBFUZZER=ON
// (docs/fuzzing.md, "libFuzzer harnesses").
//
// Properties, for every byte string:
//  - parse_npy either returns a tensor or throws fp::UserError(kExitMalformed) naming the source
//    (never a huge allocation: a declared shape is checked against the bytes before allocating);
//  - a tensor read is consistent (cells = product of dims, values representable at its precision
//    as far as a round trip shows) and round-trips: serialize_npy -> parse_npy gives the same
//    precision, dims and cells (bitwise; NaN = NaN).
// A violated property aborts, so libFuzzer writes the input as crash-<sha1>. An internal error
// (exit 70 through _Exit) is turned into an abort (-Wl,--wrap=_Exit; see fp_parser_fuzzer.cpp).

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "core/diagnostic.h"
#include "core/npy.h"
#include "core/tensor.h"

namespace {

bool g_in_target = false;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "npy_reader_fuzzer: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

const std::string kSource = "fuzz.npy";

}  // namespace

// See fp_parser_fuzzer.cpp: fp::internal_failure's _Exit(70) becomes an abort while the target
// runs, except from libFuzzer's own timeout (inside its SIGALRM handler).
extern "C" [[noreturn]] void __real__Exit(int status);
extern "C" [[noreturn]] void __wrap__Exit(int status) {
  if (g_in_target && status == fp::kExitInternal) {
    sigset_t blocked;
    sigemptyset(&blocked);
    if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) == 0 && !sigismember(&blocked, SIGALRM)) std::abort();
  }
  __real__Exit(status);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  g_in_target = true;
  fp::Tensor t;
  try {
    t = fp::parse_npy(bytes, kSource);
  } catch (const fp::UserError& e) {
    if (e.code() != fp::kExitMalformed) fail("read error with an exit code other than 65", e.what());
    if (e.file() != kSource) fail("read error not naming the source", e.what());
    g_in_target = false;
    return 0;
  } catch (const std::exception& e) {
    fail("parse_npy threw something other than fp::UserError", e.what());
  }

  std::int64_t cells = 1;
  for (std::int64_t d : t.dims) {
    if (d < 0) fail("negative dimension", std::to_string(d));
    cells *= d;
  }
  if (cells != t.size()) fail("cell count differs from the product of the dims", std::to_string(t.size()));

  fp::Tensor back;
  try {
    back = fp::parse_npy(fp::serialize_npy(t), "serialized.npy");
  } catch (const std::exception& e) {
    fail("a tensor read does not read back after serialize_npy", e.what());
  }
  if (back.prec != t.prec || back.dims != t.dims || back.data.size() != t.data.size())
    fail("serialize -> parse changes the precision or shape", "");
  for (std::size_t i = 0; i < t.data.size(); ++i)
    if (!fp::same_value(back.data[i], t.data[i]))
      fail("serialize -> parse changes a cell", std::to_string(i));
  g_in_target = false;
  return 0;
}
