#pragma once
// The rules every subcommand's options follow, in one place so that a new option cannot forget
// them:
//
//  - A numeric option carries one of the validators below. They read the text strictly (decimal
//    integers only: no octal "010", no hex, no silent wrap of "-1" into 2^64 - 1, no saturation of
//    99999999999999999999; finite reals only: no "nan", no "inf") and check a range, so a bad
//    value is a usage error (exit 64) that names the option, the value and what was expected:
//      --timeout: expected a finite number > 0 and <= 1000000, found 'nan'
//    CLI11 would otherwise parse integers with strtoll/strtoull in base 0 and take NaN as a double.
//    Attach them with ->transform(), not ->check(): the integer validators hand CLI11 the value
//    back in plain decimal (check() would give them a copy, and CLI11 would read "010" as 8).
//  - An option that may be repeated (a vector: --set, --input, --only, ...) takes exactly one value
//    each time it is given; otherwise CLI11 lets it swallow the positional arguments after it
//    (`rewrite --set k=v a.fp` lost a.fp).
//
// apply_option_policies() enforces the second rule on every option and checks the first (an
// unvalidated numeric option is a bug in the tool: an internal error at start-up, so the tests
// catch it).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>

namespace fp::cli {

// The validators' CLI11 name, looked for by apply_option_policies().
inline constexpr const char* kNumericCheck = "fp-numeric";

// An integer in [lo, hi], written in decimal.
CLI::Validator signed_in(std::int64_t lo, std::int64_t hi);
CLI::Validator unsigned_in(std::uint64_t lo, std::uint64_t hi);

template <class T>
CLI::Validator integer_in(T lo, T hi) {
  static_assert(std::is_integral_v<T>);
  if constexpr (std::is_signed_v<T>)
    return signed_in(lo, hi);
  else
    return unsigned_in(lo, hi);
}

// Any value of the integer type T (a seed: every 64-bit value is a seed, none beyond it).
template <class T>
CLI::Validator any_integer() {
  return integer_in<T>(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
}

// A finite real number.
CLI::Validator finite();
// A finite real number in (lo, hi] when lo_open, else [lo, hi]; hi_open makes hi exclusive.
CLI::Validator finite_in(double lo, double hi, bool lo_open = false, bool hi_open = false);

// The largest wall-clock limit accepted, in seconds (11.6 days: anything longer is a typo, and
// std::chrono's nanosecond clocks overflow past 292 years).
inline constexpr double kMaxSeconds = 1e6;
// A time limit in seconds: finite, > 0, <= kMaxSeconds.
CLI::Validator seconds();

// A worker-thread count: 1 to max_c_threads() (exec/c_executor.h).
CLI::Validator thread_count();

// One value per occurrence for repeatable options; checks that every numeric option has a
// validator (FP_INTERNAL_CHECK). Applied to `app` and all its subcommands.
void apply_option_policies(CLI::App& app);

}  // namespace fp::cli
