#include <ember/core/error.hpp>

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

}  // namespace detail
}  // namespace ember
