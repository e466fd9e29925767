#pragma once
/// The body of Ember's fmt formatters (Shape, DType, Device, Tensor): copies the text to the
/// format context's output.
///
/// Not fmt::format_to(ctx.out(), "{}", text): that calls fmt::detail::vformat_to<char>, which
/// a program's formatters instantiate but libfmt exports, and GCC and clang mangle its
/// signature differently (the std::conditional in it). A clang-compiled program could then not
/// link against a GCC-built libfmt (Debian's) as soon as it formatted an Ember value.

#include <string_view>

namespace ember::detail {

template <class Ctx>
auto format_text(std::string_view text, Ctx& ctx) {
  auto out = ctx.out();
  for (char c : text) *out++ = c;
  return out;
}

}  // namespace ember::detail
