#pragma once
/// Ember's single error path: EMBER_CHECK throws ember::Error, or, in builds without
/// exceptions (-fno-exceptions or EMBER_NO_EXCEPTIONS), calls an installable handler.
/// The library's own checks follow how *it* was built: a program compiled with
/// -fno-exceptions needs an Ember configured with -Dexceptions=false (whose ember_dep,
/// pkg-config file and CMake package pass EMBER_NO_EXCEPTIONS on); linked against the default
/// library, a failed check inside it throws, which such a program cannot catch (abort).
/// Messages start with the op in brackets: "[add] shapes [2, 3] and [4] cannot broadcast".

#include <ember/core/config.hpp>

#include <fmt/core.h>

#include <string>
#if EMBER_HAS_EXCEPTIONS
#include <exception>
#endif

namespace ember {

#if EMBER_HAS_EXCEPTIONS
/// The one exception type Ember throws. what() names the op and the offending values.
class Error : public std::exception {
 public:
  explicit Error(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};
#endif

/// Called with the message when a check fails in a build without exceptions. It must not
/// return; if it does, Ember aborts.
using ErrorHandler = void (*)(const char* message);

/// Installs `handler` for builds without exceptions and returns the previous one.
/// The default prints the message to stderr and aborts.
ErrorHandler set_error_handler(ErrorHandler handler) noexcept;

namespace detail {
/// Throws ember::Error (or calls the handler). Out of line so that checks stay small.
[[noreturn]] void raise_error(std::string message);
[[noreturn]] void raise_error_cstr(const char* message);
}  // namespace detail

}  // namespace ember

/// EMBER_CHECK(cond, "[op] expected {}, got {}", a, b): fails with a formatted message.
#define EMBER_CHECK(cond, ...)                                \
  do {                                                        \
    if (EMBER_UNLIKELY(!(cond))) {                            \
      ::ember::detail::raise_error(::fmt::format(__VA_ARGS__)); \
    }                                                         \
  } while (0)

/// EMBER_FAIL("[op] ...", args...): unconditional failure.
#define EMBER_FAIL(...) ::ember::detail::raise_error(::fmt::format(__VA_ARGS__))

/// Internal invariants: checked in debug builds only.
#ifdef NDEBUG
#define EMBER_ASSERT(cond) ((void)0)
#else
#define EMBER_ASSERT(cond)                                                         \
  do {                                                                             \
    if (EMBER_UNLIKELY(!(cond))) {                                                 \
      ::ember::detail::raise_error_cstr("[internal] assertion failed: " #cond); \
    }                                                                              \
  } while (0)
#endif
