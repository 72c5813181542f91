// libFuzzer harness for the .npy reader (core/npy.h), built with -DFLASHPROOF_LIBFUZZER=ON
// (docs/fuzzing.md, "libFuzzer harnesses").
//
// Properties, for every byte string:
//  - parse_npy either returns a tensor or throws fp::UserError(kExitMalformed) naming the source
//    (never a huge allocation: a declared shape is checked against the bytes before allocating);
//  - a tensor read is consistent (cells = product of dims) and round-trips: serialize_npy ->
//    parse_npy gives the same precision, dims and cells (bitwise; NaN = NaN).
// A violation aborts (fuzz/libfuzzer/harness_support.h).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "core/npy.h"
#include "core/tensor.h"
#include "fuzz/libfuzzer/harness_support.h"

namespace {
const std::string kSource = "fuzz.npy";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using fp::fuzz::harness_fail;
  const fp::fuzz::InputScope scope;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fp::Tensor t;
  try {
    t = fp::parse_npy(bytes, kSource);
  } catch (...) {
    fp::fuzz::expect_malformed_input_error(kSource, false);
    return 0;
  }
  // The product of the dims, computed without overflow: a zero dimension makes it 0 whatever the
  // others are (the harness itself overflowed on (551615, …, 0, …) before this).
  bool empty = false;
  for (std::int64_t d : t.dims) {
    if (d < 0) harness_fail("negative dimension", std::to_string(d));
    empty = empty || d == 0;
  }
  std::int64_t cells = empty ? 0 : 1;
  for (std::int64_t d : t.dims)
    if (!empty && __builtin_mul_overflow(cells, d, &cells)) harness_fail("the cell count overflows", "");
  if (cells != t.size()) harness_fail("cell count differs from the product of the dims", std::to_string(t.size()));
  fp::Tensor back;
  try {
    back = fp::parse_npy(fp::serialize_npy(t), "serialized.npy");
  } catch (const std::exception& e) {
    harness_fail("a tensor read does not read back after serialize_npy", e.what());
  }
  if (back.prec != t.prec || back.dims != t.dims || back.data.size() != t.data.size())
    harness_fail("serialize -> parse changes the precision or shape", "");
  for (std::size_t i = 0; i < t.data.size(); ++i)
    if (!fp::same_value(back.data[i], t.data[i])) harness_fail("serialize -> parse changes a cell", std::to_string(i));
  return 0;
}
