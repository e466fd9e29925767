// CSV of numbers (include/ember/data/csv.hpp).

#include <ember/data/csv.hpp>

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>
#include <type_traits>

namespace ember::data {
namespace {

struct Field {
  std::string_view text;
  int64_t column;  // from 1
  bool quoted;
};

/// Space, and tab unless tab is the delimiter (a TSV's empty first field is not padding).
bool is_blank(char c, char delim) { return c == ' ' || (c == '\t' && delim != '\t'); }

std::string_view trim(std::string_view s, char delim) {
  while (!s.empty() && is_blank(s.front(), delim)) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back(), delim)) s.remove_suffix(1);
  return s;
}

/// Splits one line into fields; a field in double quotes may hold the delimiter ("" is a quote
/// inside it, which only header names can use).
void split_line(std::string_view line, char delim, const char* op, std::string_view source, int64_t lineno,
                std::vector<Field>& out, std::vector<std::string>& unescaped) {
  out.clear();
  size_t i = 0;
  int64_t column = 1;
  for (;;) {
    size_t start = i;
    while (i < line.size() && is_blank(line[i], delim)) ++i;
    if (i < line.size() && line[i] == '"') {
      std::string value;
      ++i;
      for (;;) {
        EMBER_CHECK(i < line.size(), "[{}] {}: line {}, column {}: unterminated quote", op, source, lineno, column);
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            value += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        value += line[i++];
      }
      while (i < line.size() && is_blank(line[i], delim)) ++i;
      EMBER_CHECK(i == line.size() || line[i] == delim,
                  "[{}] {}: line {}, column {}: unexpected '{}' after a quoted field", op, source, lineno, column,
                  line[i]);
      unescaped.push_back(std::move(value));
      out.push_back({std::string_view(), column, true});
    } else {
      while (i < line.size() && line[i] != delim) ++i;
      out.push_back({trim(line.substr(start, i - start), delim), column, false});
    }
    if (i >= line.size()) break;
    ++i;  // the delimiter
    ++column;
  }
}

/// The value of a number that from_chars found out of T's range, when it is out of range
/// because it is too close to zero (read through a wider type, or 0 when even that
/// underflows); nullopt when it is too large.
template <class T>
std::optional<T> underflowed(std::string_view body) {
  using Wide = std::conditional_t<std::is_same_v<T, float>, double, long double>;
  Wide w{};
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), w);
  if (ec == std::errc() && end == body.data() + body.size()) {
    if (std::abs(w) >= 1) return std::nullopt;
    return static_cast<T>(w);
  }
  // Out of range for the wide type too: the exponent's sign says which way.
  size_t e = body.find_first_of("eE");
  if (e == std::string_view::npos || e + 1 >= body.size() || body[e + 1] != '-') return std::nullopt;
  return body[0] == '-' ? -T(0) : T(0);
}

template <class T>
T parse_number(std::string_view s, const char* op, std::string_view source, int64_t lineno, int64_t column) {
  EMBER_CHECK(!s.empty(), "[{}] {}: line {}, column {}: empty field", op, source, lineno, column);
  std::string_view body = s;
  // from_chars takes no '+'; accept one, but not before another sign.
  if (body.size() > 1 && body[0] == '+' && body[1] != '-' && body[1] != '+') body.remove_prefix(1);
  T v{};
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ec == std::errc::result_out_of_range && end == body.data() + body.size()) {
    // Too small for T reads as T's nearest value (a subnormal or a signed zero), as numpy and
    // strtod do; too large is an error.
    std::optional<T> tiny = underflowed<T>(body);
    EMBER_CHECK(tiny.has_value(), "[{}] {}: line {}, column {}: '{}' is out of range for {}", op, source, lineno,
                column, s, dtype_of_v<T>);
    return *tiny;
  }
  EMBER_CHECK(ec == std::errc() && end == body.data() + body.size(),
              "[{}] {}: line {}, column {}: '{}' is not a number", op, source, lineno, column, s);
  return v;
}

template <class T>
CsvTable parse(std::string_view text, const CsvOptions& o, std::string_view source, const char* op) {
  if (text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0) text.remove_prefix(3);  // UTF-8 BOM
  CsvTable table;
  std::vector<T> values;
  std::vector<Field> fields;
  std::vector<std::string> unescaped;
  int64_t columns = -1, first_line = 0, rows = 0, lineno = 0;
  bool need_header = o.header();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line, o.delimiter()).empty()) continue;
    unescaped.clear();
    split_line(line, o.delimiter(), op, source, lineno, fields, unescaped);
    auto n = static_cast<int64_t>(fields.size());
    if (columns < 0) {
      columns = n;
      first_line = lineno;
    } else {
      EMBER_CHECK(n == columns, "[{}] {}: line {} has {} fields, expected {} as on line {}", op, source, lineno, n,
                  columns, first_line);
    }
    size_t q = 0;
    if (need_header) {
      for (const Field& f : fields) table.columns.emplace_back(f.quoted ? std::string_view(unescaped[q++]) : f.text);
      need_header = false;
      continue;
    }
    for (const Field& f : fields)
      values.push_back(
          parse_number<T>(f.quoted ? trim(unescaped[q++], o.delimiter()) : f.text, op, source, lineno, f.column));
    ++rows;
  }
  if (columns < 0) columns = 0;
  table.values = empty({rows, columns}, TensorOptions(dtype_of_v<T>));
  if (!values.empty()) std::memcpy(table.values.raw_data(), values.data(), values.size() * sizeof(T));
  return table;
}

CsvTable parse_as(std::string_view text, const CsvOptions& o, std::string_view source, const char* op) {
  char d = o.delimiter();
  // Letters are refused too: they occur in numbers (1e5, nan, inf).
  EMBER_CHECK(d != '"' && d != ' ' && d != '\n' && d != '\r' && d != '.' && d != '-' && d != '+' &&
                  !(d >= '0' && d <= '9') && !(d >= 'a' && d <= 'z') && !(d >= 'A' && d <= 'Z') && d != '\0',
              "[{}] {}: delimiter '{}' cannot separate numbers", op, source, d);
  EMBER_CHECK(o.dtype() == DType::F32 || o.dtype() == DType::F64, "[{}] {}: dtype must be f32 or f64, got {}", op,
              source, o.dtype());
  return o.dtype() == DType::F32 ? parse<float>(text, o, source, op) : parse<double>(text, o, source, op);
}

}  // namespace

CsvTable parse_csv(std::string_view text, const CsvOptions& options, std::string_view source) {
  return parse_as(text, options, source, "parse_csv");
}

CsvTable read_csv_table(const std::string& path, const CsvOptions& options) {
  std::error_code ec;
  EMBER_CHECK(!std::filesystem::is_directory(path, ec), "[read_csv] '{}': is a directory", path);
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "[read_csv] '{}': cannot open the file", path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EMBER_CHECK(!f.bad(), "[read_csv] '{}': read error", path);
  return parse_as(text, options, path, "read_csv");
}

Tensor read_csv(const std::string& path, const CsvOptions& options) { return read_csv_table(path, options).values; }

}  // namespace ember::data
