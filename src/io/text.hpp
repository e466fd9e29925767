#pragma once
// Small text helpers shared by the file formats: UTF-8 checks, JSON string escaping, and
// quoting of untrusted names for error messages.

#include <cstdint>
#include <string>
#include <string_view>

namespace ember::io::detail {

/// Length of the well-formed UTF-8 sequence starting s (1-4), or 0 when it is not one
/// (overlong forms, surrogates and code points above U+10FFFF are not well formed).
size_t utf8_sequence_length(std::string_view s);
bool is_utf8(std::string_view s);
void append_code_point(std::string& out, uint32_t cp);

/// `s` as a JSON string literal, escaped the way serde_json (the reference safetensors
/// writer) escapes: \" \\ \b \f \n \r \t, other bytes below 0x20 as \u00xx, the rest as is.
void append_json_string(std::string& out, std::string_view s);

/// An untrusted name made safe to print: quoted, control bytes and invalid UTF-8 as \xNN,
/// cut after `max` bytes (paths are given in full).
std::string quoted(std::string_view s, size_t max = 80);
/// One byte for a syntax message: 'x' or 0xNN.
std::string quote_byte(char c);

}  // namespace ember::io::detail
