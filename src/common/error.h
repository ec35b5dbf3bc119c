// augur's error hierarchy: exceptions that carry context (see design/STYLE.md).
// Real errors are rare and end a request; expected outcomes are return values.
#pragma once

#include <stdexcept>
#include <string>

namespace augur {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A file (GGUF, prompt list, ...) is malformed: names the file, offset and expectation.
struct FormatError : Error {
  using Error::Error;
};

// Valid input that this build cannot run (architecture, tensor type, option combination).
struct Unsupported : Error {
  using Error::Error;
};

// A user-supplied option or argument is out of range or inconsistent.
struct InvalidArgument : Error {
  using Error::Error;
};

[[noreturn]] void check_failed(const char* cond, const char* why, const char* file, int line);

}  // namespace augur

// For programmer errors only, never for user input.
#define AUGUR_CHECK(cond, why)                                          \
  do {                                                                  \
    if (!(cond)) ::augur::check_failed(#cond, why, __FILE__, __LINE__); \
  } while (0)
