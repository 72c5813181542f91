#pragma once
// Whether the tests run under AddressSanitizer (scripts/test --sanitize). A few tests measure what
// ASan changes by design — its allocator's redzones inflate memory growth, and it aborts on an
// allocation that fails instead of throwing std::bad_alloc — and check those figures only in the
// plain build.

namespace fp::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace fp::testing
