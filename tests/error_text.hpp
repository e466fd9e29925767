#pragma once
// Error-message checks shared by the test binaries: what an ember::Error says, and
// CHECK_ERROR(expr, "part", ...), which fails when expr does not throw one whose message holds
// every part.

#include <doctest/doctest.h>
#include <ember/core/error.hpp>

#include <exception>
#include <string>

namespace ember_test {

/// Runs f, which must throw ember::Error, and returns what() ("<no error>" when f returns).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<not an ember::Error: ") + e.what() + ">";
  }
  return "<no error>";
}

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace ember_test

#define CHECK_ERROR(expr, ...)                                                                              \
  do {                                                                                                      \
    std::string msg_ = ::ember_test::error_of([&] { (void)(expr); });                                       \
    for (const char* part_ : {__VA_ARGS__})                                                                 \
      CHECK_MESSAGE(::ember_test::has(msg_, part_), #expr " -> '" << msg_ << "' lacks '" << part_ << "'"); \
  } while (0)
