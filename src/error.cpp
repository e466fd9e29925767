#include <ember/core/error.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace ember {
namespace {

void default_handler(const char* message) {
  std::fputs("ember: ", stderr);
  std::fputs(message, stderr);
  std::fputc('\n', stderr);
  std::abort();
}

std::atomic<ErrorHandler> g_handler{&default_handler};

}  // namespace

ErrorHandler set_error_handler(ErrorHandler handler) noexcept {
  return g_handler.exchange(handler ? handler : &default_handler);
}

namespace detail {

void raise_error(std::string message) {
#if EMBER_HAS_EXCEPTIONS
  throw Error(std::move(message));
#else
  g_handler.load()(message.c_str());
  std::abort();
#endif
}

void raise_error_cstr(const char* message) { raise_error(std::string(message)); }

std::string vformat_or_raise(fmt::string_view format, fmt::format_args args) {
#if EMBER_HAS_EXCEPTIONS
  try {
    return fmt::vformat(format, args);
  } catch (const fmt::format_error& e) {
    // A format string the compile-time check never saw (a user's own EMBER_CHECK or a header's
    // EMBER_FORMAT in a build without EMBER_CHECKED_FORMATS): reported with the text that was meant.
    raise_error(fmt::format("[ember] malformed format string \"{}\": {}", format, e.what()));
  }
#else
  // Only checked format strings get here (error.hpp: builds without exceptions always check).
  return fmt::vformat(format, args);
#endif
}

void raise_formatted(fmt::string_view format, fmt::format_args args) { raise_error(vformat_or_raise(format, args)); }

}  // namespace detail
}  // namespace ember
