#pragma once
/// CSV of numbers -> a [rows, columns] f32 or f64 tensor.
///
///   Tensor x = data::read_csv("iris.csv", data::CsvOptions().header(true));
///
/// Fields are numbers as C++ from_chars reads them (1, -2.5, 3e-4, nan, inf), optionally with
/// a leading '+', surrounded by spaces or tabs, or in double quotes; a number too small for
/// the dtype reads as its nearest value (1e-50 as f32 is 0, as numpy), one too large is an
/// error. The delimiter cannot be a character numbers use (digits, letters, . + -). Blank
/// lines are skipped; CRLF line ends and a UTF-8 byte-order mark are accepted. Every row must
/// have as many fields as the first. Errors name the source, the line and the column (both
/// from 1).

#include <ember/ember.hpp>
#include <ember/nn/options.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ember::data {

/// How to read a CSV file, with fluent setters: CsvOptions().delimiter(';').header(true).
struct CsvOptions {
  /// The field separator (',' ';' '\t' ...; not a space, a quote or a digit).
  EMBER_ARG(char, delimiter) = ',';
  /// The first non-blank line holds column names rather than numbers.
  EMBER_ARG(bool, header) = false;
  /// F32 or F64.
  EMBER_ARG(DType, dtype) = DType::F32;
};

/// The numbers and, when the file has a header, the column names.
struct CsvTable {
  Tensor values;                     ///< [rows, columns]
  std::vector<std::string> columns;  ///< empty without a header
};

/// Reads the numbers of the CSV file at `path`.
Tensor read_csv(const std::string& path, const CsvOptions& options = {});
/// Reads the CSV file at `path`, header included.
CsvTable read_csv_table(const std::string& path, const CsvOptions& options = {});
/// Parses CSV text; errors call it `source`.
CsvTable parse_csv(std::string_view text, const CsvOptions& options = {}, std::string_view source = "<text>");

}  // namespace ember::data
