#pragma once
/// A number of any kind, as passed to `add(t, 2)` or `full(shape, 1.5)`. Like PyTorch's
/// Python scalars it is weakly typed: it takes part in promotion by category only
/// (an f16 tensor plus 2.5 stays f16; an i32 tensor plus 2.5 becomes f32).

#include <ember/core/dtype.hpp>
#include <ember/core/error.hpp>

#include <cstdint>
#include <type_traits>

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : Scalar(int64_t{0}) {}
  template <class T>
    requires std::is_arithmetic_v<T>
  Scalar(T v) {  // NOLINT: implicit on purpose, as in libtorch
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v ? 1 : 0;
    } else if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))
        EMBER_CHECK(v <= static_cast<T>(INT64_MAX), "[Scalar] {} does not fit int64, the widest integer dtype", v);
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
    } else {
      kind_ = Kind::Float;
      d_ = static_cast<double>(v);
    }
  }
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}       // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}   // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0; }

  // libtorch's spellings.
  double toDouble() const { return to_double(); }
  float toFloat() const { return static_cast<float>(to_double()); }
  int64_t toLong() const { return to_int(); }
  int toInt() const { return static_cast<int>(to_int()); }
  bool toBool() const { return to_bool(); }
  bool isFloatingPoint() const { return is_floating(); }
  bool isIntegral(bool include_bool) const { return is_integral() || (include_bool && is_bool()); }
  bool isBoolean() const { return is_bool(); }

  /// The value converted to T (bool: nonzero).
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_int());
    else return static_cast<T>(static_cast<float>(to_double()));
  }

  /// The dtype a tensor made from this scalar alone would have.
  DType default_dtype() const {
    return kind_ == Kind::Float ? kDefaultFloat : kind_ == Kind::Int ? DType::I64 : DType::Bool;
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

template <> inline double Scalar::to<double>() const { return to_double(); }
template <> inline float Scalar::to<float>() const { return static_cast<float>(to_double()); }

namespace detail {
/// Fails naming `op` when v does not fit dtype t, by PyTorch's checked_convert: an integer
/// outside t's range (unsigned types also take -max..-1, which wrap, as PyTorch allows), a
/// finite float beyond a floating type's largest value, or a float into an integer type that
/// is NaN, infinite or outside [lowest, max] (-0.5 into u8 too). Bool takes anything. Used
/// where a number becomes an element: fill_, full, masked_fill, index_put_ with a number,
/// item<T>().
void check_scalar_fits(Scalar v, DType t, const char* op);
}  // namespace detail

/// Result dtype of (tensor of dtype t) op (scalar s), by PyTorch's rule: the scalar only
/// raises the category (bool -> int -> float), never the width within a category.
constexpr DType promote_with_scalar(DType t, Scalar::Kind k) {
  if (k == Scalar::Kind::Float && !is_floating(t)) return kDefaultFloat;
  if (k == Scalar::Kind::Int && t == DType::Bool) return DType::I64;
  return t;
}

}  // namespace ember
