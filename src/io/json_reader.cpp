#include "json_reader.hpp"

#include "text.hpp"

#include <ember/core/error.hpp>

namespace ember::io::detail {

void JsonReader::fail(std::string_view what) const { fail_at(pos_, what); }

void JsonReader::fail_at(size_t pos, std::string_view what) const {
  EMBER_FAIL("{}JSON {} at byte {}", prefix_, what, pos);
}

std::string JsonReader::syntax_error(std::string_view expected) const {
  return fmt::format("syntax error: expected {}, got {}", expected, quote_byte(text_[pos_]));
}

void JsonReader::skip_ws() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++pos_;
  }
}

char JsonReader::peek() {
  skip_ws();
  if (pos_ >= text_.size()) fail("ends early: expected a value");
  return text_[pos_];
}

size_t JsonReader::position() {
  skip_ws();
  return pos_;
}

void JsonReader::expect(char c, const char* expected) {
  skip_ws();
  if (pos_ >= text_.size()) fail(fmt::format("ends early: expected {}", expected));
  if (text_[pos_] != c) fail(syntax_error(expected));
  ++pos_;
}

bool JsonReader::accept(char c) {
  skip_ws();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

void JsonReader::end() {
  skip_ws();
  if (pos_ != text_.size()) fail(fmt::format("syntax error: {} after the end of the object", quote_byte(text_[pos_])));
}

uint32_t JsonReader::hex4() {
  if (text_.size() - pos_ < 4) fail("ends early inside a \\u escape");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = text_[pos_++];
    uint32_t d;
    if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
    else fail(fmt::format("syntax error: {} is not a hex digit in a \\u escape", quote_byte(c)));
    v = v * 16 + d;
  }
  return v;
}

// After a backslash: one escape, appended to `out` as UTF-8.
void JsonReader::append_utf8(std::string& out) {
  if (pos_ >= text_.size()) fail("ends early inside an escape");
  char c = text_[pos_++];
  switch (c) {
    case '"': out += '"'; return;
    case '\\': out += '\\'; return;
    case '/': out += '/'; return;
    case 'b': out += '\b'; return;
    case 'f': out += '\f'; return;
    case 'n': out += '\n'; return;
    case 'r': out += '\r'; return;
    case 't': out += '\t'; return;
    case 'u': break;
    default: fail(fmt::format("syntax error: invalid escape \\{}", quote_byte(c)));
  }
  uint32_t cp = hex4();
  if (cp >= 0xDC00 && cp <= 0xDFFF) fail(fmt::format("string has an unpaired surrogate \\u{:04x}", cp));
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
      fail(fmt::format("string has an unpaired surrogate \\u{:04x}", cp));
    pos_ += 2;
    uint32_t lo = hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) fail(fmt::format("string has an unpaired surrogate \\u{:04x}", cp));
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  append_code_point(out, cp);
}

std::string JsonReader::string() {
  expect('"', "a string");
  std::string out;
  for (;;) {
    if (pos_ >= text_.size()) fail("ends early inside a string");
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (c == '\\') {
      ++pos_;
      append_utf8(out);
    } else if (c < 0x20) {
      fail(fmt::format("string holds the control byte 0x{:02x} unescaped", c));
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++pos_;
    } else {
      size_t n = utf8_sequence_length(text_.substr(pos_));
      if (n == 0) fail("string is not valid UTF-8");
      out.append(text_.data() + pos_, n);
      pos_ += n;
    }
  }
}

uint64_t JsonReader::u64() {
  skip_ws();
  size_t start = pos_;
  auto digit = [&] { return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; };
  // The JSON number grammar first, so that "01" or "1." are syntax errors, not schema errors.
  bool negative = pos_ < text_.size() && text_[pos_] == '-';
  if (negative) ++pos_;
  if (!digit()) {
    if (pos_ >= text_.size()) fail("ends early: expected a number");
    fail(fmt::format("syntax error: expected a number, got {}", quote_byte(text_[pos_])));
  }
  bool leading_zero = text_[pos_] == '0';
  while (digit()) ++pos_;
  if (leading_zero && pos_ - start - negative > 1) fail_at(start, "syntax error: number with a leading zero");
  bool integral = true;
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (!digit()) fail("syntax error: expected a digit after '.'");
    while (digit()) ++pos_;
    integral = false;
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (!digit()) fail("syntax error: expected a digit in an exponent");
    while (digit()) ++pos_;
    integral = false;
  }
  std::string_view tok = text_.substr(start, pos_ - start);
  if (negative || !integral) fail_at(start, fmt::format("expected a non-negative integer, got {}", tok));
  uint64_t v = 0;
  for (char c : tok) {
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v))
      fail_at(start, fmt::format("integer {} does not fit in 64 bits", tok));
  }
  return v;
}

}  // namespace ember::io::detail
