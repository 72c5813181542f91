#pragma once
// How a diff plan that reads a routine's structure (verify/accumulation_bound.h, members' plans)
// gives up: decline(...) throws a PlanDecline whose text becomes the
// plan's `why`, caught once at the plan's entry point.

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace fp::verify {

struct PlanDecline : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void decline(fmt::format_string<Args...> f, Args&&... args) {
  throw PlanDecline(fmt::format(f, std::forward<Args>(args)...));
}

// `derive()` (a plan, which may decline), or nullopt with the decline's text in `why`.
template <typename Derive>
auto plan_or_why(Derive derive, std::string* why) -> decltype(derive()) {
  try {
    return derive();
  } catch (const PlanDecline& d) {
    if (why) *why = d.what();
    return std::nullopt;
  }
}

}  // namespace fp::verify
