#pragma once
/// Reading what the PyTorch golden fixtures (tests/data/autograd_golden.txt,
/// tests/data/nn_golden/modules.txt, tests/data/optim/*.txt) have in common. They are all
/// line-oriented text written by the tools/gen_*golden.py scripts: blank lines and lines starting
/// with '#' are comments, the first other line is the header "<magic> <version>", and every later
/// line is a keyword and its fields. read_golden does that part once, so each loader holds only
/// its own records, and every refusal names the file and line the same way ("PATH:LINE: why"),
/// which is what one needs to find a bad line after regenerating a fixture.

#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace ember::test {

/// Reads one line after the header: its keyword, the rest of the line, and its number (a case
/// keeps the line it starts on, so that a failing case can say where it is). Returns why the line
/// is refused, or "" when it is fine.
using GoldenRecord = std::function<std::string(const std::string& key, std::istringstream& rest, int line)>;

/// Reads the fixture at `path`: checks the header "<magic> <version>", then hands each later line
/// to `record`, stopping at the first refusal. At the end of the file `complete` says why what was
/// read is not a whole fixture (e.g. no closing 'total' line: a truncated file must not pass as a
/// smaller one), or "". Returns "" when the file was read whole; else "cannot open PATH" or
/// "PATH:LINE: why", where LINE counts every line (comments too) and is the last one for
/// `complete`'s refusals and for a file without a header.
inline std::string read_golden(const std::string& path, const std::string& magic, int version,
                               const GoldenRecord& record, const std::function<std::string()>& complete) {
  std::ifstream in(path);
  if (!in) return "cannot open " + path;
  const std::string header = "'" + magic + " " + std::to_string(version) + "'";
  std::string text, why;
  int line = 0;
  bool have_header = false;
  auto at_line = [&](const std::string& w) { return path + ":" + std::to_string(line) + ": " + w; };
  while (std::getline(in, text)) {
    ++line;
    if (text.empty() || text[0] == '#') continue;
    std::istringstream ls(text);
    std::string key;
    ls >> key;
    if (!have_header) {
      int v = 0;
      if (key != magic || !(ls >> v) || v != version) return at_line("expected the header " + header);
      have_header = true;
    } else if (why = record(key, ls, line); !why.empty()) {
      return at_line(why);
    }
  }
  why = have_header ? complete() : "empty file (expected the header " + header + ")";
  return why.empty() ? why : at_line(why);
}

}  // namespace ember::test
