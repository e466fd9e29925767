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
/// Formats `format` with fmt's type-erased `args` and raises the result. A malformed format
/// string (possible only where the check below was off) raises an Error that quotes it.
[[noreturn]] void raise_formatted(fmt::string_view format, fmt::format_args args);
/// fmt::vformat, except that a malformed format string raises an Error that quotes it (as
/// raise_formatted does) instead of letting fmt::format_error out.
std::string vformat_or_raise(fmt::string_view format, fmt::format_args args);

/// What EMBER_CHECK and EMBER_FAIL call in users' programs: the format string is read at run
/// time, when a check fails. fmt's compile-time check of every message (its consteval
/// format_string) was 8% of the compile of a 20-line program that includes <ember/ember.hpp>
/// (cc1plus instructions, 9.54 G -> 8.76 G), spent on code that runs only to report an error.
template <class... Args>
[[noreturn]] void raise_fmt(fmt::string_view format, const Args&... args) {
  raise_formatted(format, fmt::make_format_args(args...));
}

/// What they call where EMBER_CHECKED_FORMATS is defined: fmt checks each message against its
/// arguments at compile time. Ember's own build (library, tests, examples, benchmarks) defines
/// it, so every message that build instantiates is checked there; users who want their own
/// EMBER_CHECK messages checked define it too. Builds without exceptions always check: a
/// malformed message could not be reported through the error handler there (libfmt would
/// throw through code compiled without exceptions).
///
/// The two paths differ only in when the format string is validated, never in the message or
/// the behaviour, so inline code compiled both ways (the library's copy and a user's) is
/// interchangeable; keep it that way.
template <class... Args>
[[noreturn]] void raise_fmt_checked(fmt::format_string<Args...> format, const Args&... args) {
  raise_formatted(format, fmt::make_format_args(args...));
}

/// fmt::format with the format string read at run time, for EMBER_FORMAT in users' builds.
template <class... Args>
std::string format_runtime(fmt::string_view format, const Args&... args) {
  return vformat_or_raise(format, fmt::make_format_args(args...));
}
}  // namespace detail

}  // namespace ember

#if defined(EMBER_CHECKED_FORMATS) || !EMBER_HAS_EXCEPTIONS
#define EMBER_DETAIL_RAISE_FMT ::ember::detail::raise_fmt_checked
/// EMBER_FORMAT("p={}, eps={}", p, eps): fmt::format for the headers' text (module reprs, the
/// parts of messages), checked at compile time where the messages are (see raise_fmt_checked).
#define EMBER_FORMAT(...) ::fmt::format(__VA_ARGS__)
#else
#define EMBER_DETAIL_RAISE_FMT ::ember::detail::raise_fmt
#define EMBER_FORMAT(...) ::ember::detail::format_runtime(__VA_ARGS__)
#endif

/// EMBER_CHECK(cond, "[op] expected {}, got {}", a, b): fails with a formatted message.
#define EMBER_CHECK(cond, ...)                 \
  do {                                         \
    if (EMBER_UNLIKELY(!(cond))) {             \
      EMBER_DETAIL_RAISE_FMT(__VA_ARGS__);     \
    }                                          \
  } while (0)

/// EMBER_FAIL("[op] ...", args...): unconditional failure.
#define EMBER_FAIL(...) EMBER_DETAIL_RAISE_FMT(__VA_ARGS__)

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
