// Option validators and policies (tools/option_checks.h).
#include "tools/option_checks.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/diagnostic.h"
#include "exec/c_executor.h"

namespace fp::cli {

namespace {

// The text as a decimal integer of type T (an optional '-' for signed T, then digits), or false.
template <class T>
bool parse_decimal(const std::string& s, T& out) {
  if (s.empty()) return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  const bool plus = *first == '+';  // "+3" is a way to write 3; "+-3" is not
  if (plus) ++first;
  if (first == last || (*first == '-' && (plus || !std::is_signed_v<T>))) return false;
  auto [end, ec] = std::from_chars(first, last, out, 10);
  return ec == std::errc() && end == last;
}

template <class T>
CLI::Validator integer_validator(T lo, T hi) {
  const std::string range = fmt::format("{}..{}", lo, hi);
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        T v{};
        if (!parse_decimal(s, v) || v < lo || v > hi)
          return fmt::format("expected an integer from {} to {}, found '{}'", lo, hi, s);
        // CLI11 converts with strtoll/strtoull in base 0 ("010" is 8): hand it plain decimal.
        s = fmt::format("{}", v);
        return {};
      },
      range, kNumericCheck);
}

std::string real_range_text(double lo, double hi, bool lo_open, bool hi_open) {
  constexpr double kMax = std::numeric_limits<double>::max();
  const std::string low = lo == -kMax ? "" : fmt::format("{} {}", lo_open ? ">" : ">=", lo);
  const std::string high = hi == kMax ? "" : fmt::format("{} {}", hi_open ? "<" : "<=", hi);
  return low.empty() || high.empty() ? low + high : low + " and " + high;
}

}  // namespace

CLI::Validator signed_in(std::int64_t lo, std::int64_t hi) {
  return integer_validator<std::int64_t>(lo, hi);
}

CLI::Validator unsigned_in(std::uint64_t lo, std::uint64_t hi) {
  return integer_validator<std::uint64_t>(lo, hi);
}

CLI::Validator finite_in(double lo, double hi, bool lo_open, bool hi_open) {
  const std::string range = real_range_text(lo, hi, lo_open, hi_open);
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
        // ERANGE: the text is a number a double cannot hold (1e400, or 1e-400 which would
        // silently become 0).
        const bool out_of_range = errno == ERANGE;
        const bool parsed = !s.empty() && end == s.c_str() + s.size();
        if (!parsed || out_of_range || !std::isfinite(v) || (lo_open ? v <= lo : v < lo) ||
            (hi_open ? v >= hi : v > hi))
          return fmt::format("expected a finite number{}{}, found '{}'{}", range.empty() ? "" : " ", range, s,
                             parsed && out_of_range ? " (beyond the range of normal doubles)" : "");
        return {};
      },
      range, kNumericCheck);
}

CLI::Validator finite() {
  constexpr double kMax = std::numeric_limits<double>::max();
  return finite_in(-kMax, kMax).description("finite");
}

CLI::Validator seconds() {
  return finite_in(0, kMaxSeconds, /*lo_open=*/true)
      .description(fmt::format("seconds in (0, {}]", kMaxSeconds));
}

CLI::Validator thread_count() {
  const int cap = max_c_threads();
  return CLI::Validator(
      [cap](std::string& s) -> std::string {
        int v = 0;
        if (!parse_decimal(s, v) || v < 1 || v > cap)
          return fmt::format(
              "expected a thread count from 1 to {} (the larger of 256 and 4 x the {} hardware threads), "
              "found '{}'",
              cap, hardware_threads(), s);
        s = fmt::format("{}", v);
        return {};
      },
      fmt::format("1..{}", cap), kNumericCheck);
}

namespace {

bool numeric_type(const CLI::Option& o) {
  const std::string t = o.get_type_name();
  for (const char* kind : {"INT", "UINT", "FLOAT", "NUMBER"})
    if (t.rfind(kind, 0) == 0) return true;
  return false;
}

bool has_numeric_check(CLI::Option& o) {
  try {
    o.get_validator(kNumericCheck);
    return true;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

}  // namespace

void apply_option_policies(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    if (o->nonpositional() && o->get_items_expected_max() > 1) o->allow_extra_args(false);
    FP_INTERNAL_CHECK(!numeric_type(*o) || has_numeric_check(*o),
                      "option {} of '{}' is numeric but has no range check (tools/option_checks.h)",
                      o->get_name(), app.get_name());
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) apply_option_policies(*sub);
}

}  // namespace fp::cli
