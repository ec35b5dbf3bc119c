// Whether this test binary runs under a sanitizer (ASan, TSan, MSan: several times slower, with
// terabytes of shadow memory reserved): the slowest tests run a reduced size there (they keep
// every case and path, with fewer tokens or rounds), and memory caps cannot apply.
#pragma once

namespace augur::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// `full` in a regular build, `sanitized` under a sanitizer.
template <typename T>
constexpr T full_or_sanitized(T full, T sanitized) {
  return kSanitizedBuild ? sanitized : full;
}

}  // namespace augur::testing
