#pragma once
// The examples' command line: `--flag value` pairs and --help. An example binds each flag to
// a field of its settings, whose value at that moment is the default --help shows. A mistake
// (unknown flag, missing value, a number that does not parse) prints one line and exits with
// status 2, so a typo never runs a long training with a silent default. A flag may name the
// smallest value that makes sense (`--batch 0` is refused like a typo), and numbers must be
// finite. main's body runs inside run_main(), so an error from Ember during the run (an
// unwritable checkpoint path, say) ends it with one line and status 1 rather than an abort.

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace ember_examples {

class Cli {
 public:
  /// `program` starts the usage line; `about` (one or more lines) follows it in --help.
  Cli(std::string program, std::string about) : program_(std::move(program)), about_(std::move(about)) {}

  /// Binds `name value` (e.g. "--epochs", "N") to `target`, which must outlive parse().
  template <class T>
  Cli& flag(std::string name, T& target, std::string metavar, std::string help) {
    flags_.push_back({std::move(name), std::move(metavar), std::move(help), shown(target), &target, std::nullopt});
    return *this;
  }
  /// The same, refusing values below `at_least`.
  template <class T>
  Cli& flag(std::string name, T& target, std::string metavar, std::string help, double at_least) {
    flags_.push_back({std::move(name), std::move(metavar), std::move(help), shown(target), &target, at_least});
    return *this;
  }

  /// Sets the bound fields from argv in order; --help or -h prints the usage and exits 0.
  void parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        print_help();
        std::exit(0);
      }
      const Flag* f = find(arg);
      if (f == nullptr) fail("unknown argument " + std::string(arg) + " (see --help)");
      if (i + 1 >= argc) fail(f->name + " needs a value");
      std::string_view value = argv[++i];
      if (!std::visit([&](auto* target) { return assign(*target, value); }, f->target))
        fail(f->name + " expects " + expected(f->target) + ", got '" + std::string(value) + "'");
      if (f->at_least && std::visit([&](auto* target) { return below(*target, *f->at_least); }, f->target))
        fail(f->name + " must be at least " + shown(*f->at_least) + ", got '" + std::string(value) + "'");
    }
  }

 private:
  using Target = std::variant<int*, uint64_t*, double*, std::string*>;
  struct Flag {
    std::string name, metavar, help, default_text;
    Target target;
    std::optional<double> at_least;
  };

  void print_help() const {
    std::string usage = "usage: " + program_;
    for (const Flag& f : flags_) usage += " [" + f.name + " " + f.metavar + "]";
    std::printf("%s\n%s\n", usage.c_str(), about_.c_str());
    for (const Flag& f : flags_) {
      std::string lhs = f.name + " " + f.metavar;
      std::string def = f.default_text.empty() ? "" : " (default: " + f.default_text + ")";
      std::printf("  %-20s %s%s\n", lhs.c_str(), f.help.c_str(), def.c_str());
    }
  }

  const Flag* find(std::string_view name) const {
    for (const Flag& f : flags_)
      if (f.name == name) return &f;
    return nullptr;
  }

  // Numbers must parse whole: "12x", "" and out-of-range values are errors, not 12 or 0.
  template <class T>
  static bool assign(T& target, std::string_view text) {
    T v{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return false;
    if constexpr (std::is_floating_point_v<T>)
      if (!std::isfinite(v)) return false;  // from_chars reads "nan" and "inf"
    target = v;
    return true;
  }
  static bool assign(std::string& target, std::string_view text) {
    target = text;
    return true;
  }

  template <class T>
  static bool below(const T& v, double at_least) {
    return static_cast<double>(v) < at_least;
  }
  static bool below(const std::string&, double) { return false; }

  static const char* expected(const Target& t) {
    if (std::holds_alternative<int*>(t)) return "an integer";
    if (std::holds_alternative<uint64_t*>(t)) return "a non-negative integer";
    return "a finite number";
  }

  static std::string shown(const std::string& v) { return v; }
  static std::string shown(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
  template <class T>
  static std::string shown(T v) {
    return std::to_string(v);
  }

  [[noreturn]] static void fail(const std::string& message) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(2);
  }

  std::string program_, about_;
  std::vector<Flag> flags_;
};

/// Runs an example's body; an exception ends the program with its message and status 1.
template <class Body>
int run_main(const char* program, Body&& body) {
#if defined(__cpp_exceptions)
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
#else  // -fno-exceptions: Ember's error handler reports and aborts
  (void)program;
  return body();
#endif
}

}  // namespace ember_examples
