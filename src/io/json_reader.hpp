#pragma once
// A strict pull reader for JSON (RFC 8259, no extensions), for the safetensors header.
//
// Why a pull reader and not a document tree: the header of a hostile file may be 100 MB of
// `[1,1,1,...]`; a tree would spend ~100 bytes per value. The caller walks the schema it
// expects and keeps only what it needs, so memory stays proportional to what is kept.
//
// Every failure raises ember::Error as "<prefix>JSON <problem> at byte N". Strings are
// checked to be UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF) and
// \u escapes must pair surrogates. Nesting depth is limited by the caller's schema.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::io::detail {

class JsonReader {
 public:
  /// `prefix` starts every error message, e.g. "[load_safetensors] 'm.safetensors': header: ".
  JsonReader(std::string_view text, std::string prefix) : text_(text), prefix_(std::move(prefix)) {}

  /// Reads an object, calling on_member(key) for each member in document order; on_member
  /// must consume exactly one value. Duplicate keys are the caller's to detect.
  template <class F>
  void object(F&& on_member);
  /// Reads an array, calling on_item(index) for each element; on_item consumes one value.
  template <class F>
  void array(F&& on_item);
  std::string string();
  /// A non-negative integer literal (no sign, fraction or exponent) that fits in 64 bits.
  uint64_t u64();
  /// Checks that only whitespace remains.
  void end();

  /// The next non-space byte without consuming it (failing at the end of the text), so that
  /// a caller can name the value it expected in its own words.
  char peek();
  /// Byte offset of the next token (after whitespace), for the caller's messages.
  size_t position();
  [[noreturn]] void fail(std::string_view what) const;
  [[noreturn]] void fail_at(size_t pos, std::string_view what) const;
  /// "syntax error: expected <what>, got <the next byte>".
  std::string syntax_error(std::string_view expected) const;

 private:
  void skip_ws();
  /// Consumes `c` after whitespace, or fails saying `expected`.
  void expect(char c, const char* expected);
  /// True (and consumes it) when the next non-space byte is `c`.
  bool accept(char c);
  void append_utf8(std::string& out);
  uint32_t hex4();

  std::string_view text_;
  std::string prefix_;
  size_t pos_ = 0;
};

// ---- implementation --------------------------------------------------------------------------

template <class F>
void JsonReader::object(F&& on_member) {
  expect('{', "'{' (an object)");
  if (accept('}')) return;
  for (;;) {
    skip_ws();
    if (pos_ >= text_.size()) fail("ends early: expected a string key");
    if (text_[pos_] != '"') fail(syntax_error("a string key"));
    std::string key = string();
    expect(':', "':' after an object key");
    on_member(key);
    if (accept('}')) return;
    expect(',', "',' or '}' in an object");
  }
}

template <class F>
void JsonReader::array(F&& on_item) {
  expect('[', "'[' (an array)");
  if (accept(']')) return;
  for (size_t i = 0;; ++i) {
    on_item(i);
    if (accept(']')) return;
    expect(',', "',' or ']' in an array");
  }
}

}  // namespace ember::io::detail
