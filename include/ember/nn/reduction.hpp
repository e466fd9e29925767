#pragma once
/// How a loss reduces its per-element values: "mean", "sum", "none" (KLDivLoss also
/// "batchmean"). Every loss, its options and its module take a LossReduction.
///
/// Why a type and not std::string_view: ATen codes reductions as integers
/// (at::Reduction::None == 0), so a user porting `mse_loss(x, y, 0)` would hand a string_view a
/// null pointer, and strlen(nullptr) crashes. LossReduction refuses integers (and nullptr) at
/// compile time and a null `const char*` at run time, with an ember::Error.
/// Which names a loss accepts is checked by the loss itself, so the error names the op.

#include <ember/core/error.hpp>
#include <ember/nn/enums.hpp>

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ember::nn {

class LossReduction {
 public:
  /// `{}` is the default of every loss: "mean".
  LossReduction() : name_("mean") {}
  LossReduction(const char* name) : name_(checked(name)) {}   // NOLINT: implicit, as a string
  LossReduction(std::string name) : name_(std::move(name)) {}  // NOLINT
  LossReduction(std::string_view name) : name_(name) {}        // NOLINT
  LossReduction(EnumName name) : name_(name.name) {}           // NOLINT: kSum, Reduction::Sum
  /// ATen's integer codes and nullptr: use "none" / "mean" / "sum", ember::kSum or Reduction::Sum.
  template <class T>
    requires std::is_arithmetic_v<T> || std::is_null_pointer_v<T>
  LossReduction(T) = delete;

  const std::string& str() const { return name_; }
  operator std::string_view() const { return name_; }  // NOLINT: every reduce() reads a view
  friend bool operator==(const LossReduction& r, std::string_view name) { return r.name_ == name; }

 private:
  static const char* checked(const char* name) {
    EMBER_CHECK(name != nullptr, "[reduction] got a null string; pass \"mean\", \"sum\" or \"none\"");
    return name;
  }
  std::string name_;
};

}  // namespace ember::nn
