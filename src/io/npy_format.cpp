#include "npy_format.hpp"

#include "text.hpp"

#include <ember/core/error.hpp>

#include <limits>
#include <optional>

namespace ember::io::detail {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// Indexed by DType (Bool, U8, I8, I32, I64, F16, BF16, F32, F64); empty: no numpy dtype.
constexpr std::string_view kDescr[] = {"|b1", "|u1", "|i1", "<i4", "<i8", "<f2", "", "<f4", "<f8"};

// The header is a Python literal; this reads the subset numpy writes (a dict of str keys,
// str, True/False and tuples of non-negative ints), nothing that needs evaluating.
class DictReader {
 public:
  DictReader(std::string_view text, std::string pre) : t_(text), pre_(std::move(pre)) {}

  [[noreturn]] void fail(std::string_view what) const {
    EMBER_FAIL("{}header: {}{} at byte {} of {}", pre_, pos_ >= t_.size() ? "ends early: " : "", what, pos_,
               quoted(t_));
  }
  void ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }
  char peek() {
    ws();
    return pos_ < t_.size() ? t_[pos_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(pos_ < t_.size() ? fmt::format("expected '{}', got {}", c, quote_byte(t_[pos_]))
                                           : fmt::format("ends early: expected '{}'", c));
    ++pos_;
  }
  std::string str() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    size_t start = ++pos_;
    while (pos_ < t_.size() && t_[pos_] != q) {
      unsigned char c = static_cast<unsigned char>(t_[pos_]);
      if (c < 0x20 || c >= 0x7f || c == '\\') fail("unsupported character in a string");
      ++pos_;
    }
    if (pos_ >= t_.size()) fail("ends early inside a string");
    return std::string(t_.substr(start, pos_++ - start));
  }
  bool boolean() {
    ws();
    if (t_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (t_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  int64_t integer() {
    ws();
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') {
      if (__builtin_mul_overflow(v, int64_t{10}, &v) || __builtin_add_overflow(v, int64_t(t_[pos_] - '0'), &v))
        fail("dimension does not fit in int64");
      ++pos_;
    }
    if (pos_ == start) fail("expected a non-negative integer");
    if (t_[start] == '0' && pos_ - start > 1) fail("integer with a leading zero");
    return v;
  }
  // A tuple of ints: "()", "(3,)", "(2, 3)", "(2, 3,)"; "(3)" is an int in Python, not a tuple.
  Shape tuple() {
    expect('(');
    Shape s;
    bool trailing_comma = false;
    while (peek() != ')') {
      if (s.size() >= kMaxRank) fail(fmt::format("shape has more than {} dims", kMaxRank));
      s.push_back(integer());
      trailing_comma = peek() == ',';
      if (trailing_comma) ++pos_;
      else if (peek() != ')') fail("expected ',' or ')' in the shape tuple");
    }
    ++pos_;
    if (s.size() == 1 && !trailing_comma) fail("shape (n) is a number, not a tuple: a 1-d shape is written (n,)");
    return s;
  }
  void end() {
    ws();
    if (pos_ != t_.size()) fail("unexpected data after the dict");
  }
  size_t pos_ = 0;

 private:
  std::string_view t_;
  std::string pre_;
};

}  // namespace

std::optional<std::string_view> npy_descr(DType t) {
  std::string_view d = kDescr[static_cast<int>(t)];
  return d.empty() ? std::nullopt : std::optional<std::string_view>(d);
}

NpyLayout parse_npy(Bytes file, const Source& src) {
  const std::string pre = src.prefix();
  EMBER_CHECK(file.size() >= kMagicLen + 2 && std::memcmp(file.data(), kMagic, kMagicLen) == 0,
              "{}not a .npy file: it does not start with the magic \\x93NUMPY", pre);
  const int major = file[6], minor = file[7];
  EMBER_CHECK((major == 1 || major == 2 || major == 3) && minor == 0,
              "{}unsupported .npy format version {}.{} (Ember reads 1.0, 2.0 and 3.0)", pre, major, minor);
  const size_t len_size = major == 1 ? 2 : 4;
  EMBER_CHECK(file.size() >= kMagicLen + 2 + len_size,
              "{}file is {} bytes, too short for the header length (truncated?)", pre, file.size());
  const uint64_t hlen = major == 1 ? le16(file.data() + 8) : le32(file.data() + 8);
  const uint64_t start = kMagicLen + 2 + len_size;
  EMBER_CHECK(hlen <= kMaxNpyHeader, "{}header length {} exceeds the limit of {} bytes", pre, hlen, kMaxNpyHeader);
  EMBER_CHECK(hlen <= file.size() - start, "{}header length {} runs past the end of the file ({} bytes; truncated?)",
              pre, hlen, file.size());

  NpyLayout out;
  out.data_offset = start + hlen;
  std::string_view text(reinterpret_cast<const char*>(file.data() + start), hlen);
  DictReader r(text, pre);
  std::string descr;
  bool has_descr = false, has_fortran = false, has_shape = false;
  r.expect('{');
  while (r.peek() != '}') {
    size_t key_pos = r.pos_;
    std::string key = r.str();
    r.expect(':');
    bool* seen = key == "descr"           ? &has_descr
                 : key == "fortran_order" ? &has_fortran
                 : key == "shape"         ? &has_shape
                                          : nullptr;
    if (!seen) {
      r.pos_ = key_pos;
      r.fail(fmt::format("unknown key {} (a .npy header has exactly descr, fortran_order and shape)", quoted(key)));
    }
    if (*seen) {
      r.pos_ = key_pos;
      r.fail(fmt::format("key {} appears twice", quoted(key)));
    }
    *seen = true;
    if (key == "descr") descr = r.str();
    else if (key == "fortran_order") out.fortran_order = r.boolean();
    else out.shape = r.tuple();
    if (r.peek() == ',') ++r.pos_;
    else if (r.peek() != '}') r.fail("expected ',' or '}' in the dict");
  }
  ++r.pos_;
  r.end();
  EMBER_CHECK(has_descr, "{}header: missing key 'descr'", pre);
  EMBER_CHECK(has_fortran, "{}header: missing key 'fortran_order'", pre);
  EMBER_CHECK(has_shape, "{}header: missing key 'shape'", pre);

  // numpy reads '<u1', '>i1', '=b1' (cnpy writes those) as '|u1' and so on, and '=' as the
  // host's order, little-endian wherever Ember runs: compare in its own spelling.
  std::string canonical = descr;
  if (canonical.size() >= 2 && (canonical[0] == '<' || canonical[0] == '=' || canonical[0] == '|' ||
                                canonical[0] == '>')) {
    bool one_byte = canonical.substr(1) == "b1" || canonical.substr(1) == "u1" || canonical.substr(1) == "i1";
    if (one_byte) canonical[0] = '|';
    else if (canonical[0] == '=') canonical[0] = '<';
  }
  bool found = false;
  for (int i = 0; i < kNumDTypes && !found; ++i) {
    if (!kDescr[i].empty() && kDescr[i] == canonical) {
      out.dtype = static_cast<DType>(i);
      found = true;
    }
  }
  if (!found) {
    EMBER_CHECK(descr.empty() || descr[0] != '>',
                "{}header: descr {} is big-endian; Ember reads little-endian data only", pre, quoted(descr));
    EMBER_FAIL("{}header: descr {} has no Ember dtype (Ember reads <f8 <f4 <f2 <i8 <i4 |i1 |u1 |b1)", pre,
               quoted(descr));
  }
  const std::optional<int64_t> numel = product_of_dims(out.shape);  // a zero anywhere: empty
  EMBER_CHECK(numel.has_value(), "{}header: shape {} has more elements than int64 can count", pre, out.shape);
  int64_t nbytes = 0;
  EMBER_CHECK(!__builtin_mul_overflow(*numel, itemsize(out.dtype), &nbytes),
              "{}header: shape {} of {} has more bytes than int64 can count", pre, out.shape, descr);
  out.nbytes = static_cast<uint64_t>(nbytes);
  const uint64_t have = file.size() - out.data_offset;
  EMBER_CHECK(have == out.nbytes, "{}data is {} bytes, but shape {} of {} needs {}{}", pre, have, out.shape, descr,
              out.nbytes, have < out.nbytes ? " (truncated?)" : "");
  return out;
}

std::string npy_header(DType dtype, IntArrayRef shape, bool fortran_order) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': (", kDescr[static_cast<int>(dtype)],
                                 fortran_order ? "True" : "False");
  for (size_t i = 0; i < shape.size(); ++i) dict += fmt::format("{}{}", i ? ", " : "", shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  // numpy leaves room to rewrite the growing axis in place (GROWTH_AXIS_MAX_DIGITS = 21).
  if (!shape.empty()) dict.append(21 - std::to_string(shape[fortran_order ? shape.size() - 1 : 0]).size(), ' ');
  const size_t hlen = dict.size() + 1;  // + '\n'
  for (size_t len_size : {size_t{2}, size_t{4}}) {
    size_t pad = 64 - (kMagicLen + 2 + len_size + hlen) % 64;
    if (len_size == 2 && hlen + pad > 0xFFFF) continue;  // too long for version 1.0
    std::string out(kMagic, kMagicLen);
    out += static_cast<char>(len_size == 2 ? 1 : 2);
    out += '\0';
    if (len_size == 2) put_le16(out, static_cast<uint16_t>(hlen + pad));
    else put_le32(out, static_cast<uint32_t>(hlen + pad));
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  return {};  // unreachable: kMaxRank bounds the header far below 4 GiB
}

}  // namespace ember::io::detail
