#pragma once
/// Element types, their names and sizes, and PyTorch's type-promotion rules.

#include <ember/core/format_text.hpp>
#include <ember/core/half.hpp>

#include <fmt/core.h>

#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace ember {

/// Runtime element type of a tensor. The order is the promotion lattice within a category.
enum class DType : uint8_t { Bool, U8, I8, I32, I64, F16, BF16, F32, F64 };

inline constexpr int kNumDTypes = 9;

namespace detail {
// Tables at namespace scope: a table local to a constexpr function is rebuilt on every call.
inline constexpr std::string_view kDTypeNames[] = {"bool", "u8", "i8", "i32", "i64", "f16", "bf16", "f32", "f64"};
inline constexpr std::string_view kDTypeTorchNames[] = {"bool",    "uint8",    "int8",    "int32",  "int64",
                                                        "float16", "bfloat16", "float32", "float64"};
inline constexpr int64_t kItemSizes[] = {1, 1, 1, 4, 8, 2, 2, 4, 8};
}  // namespace detail

/// Short names as used in printing and errors ("f32"), and PyTorch's ("float32").
constexpr std::string_view dtype_name(DType t) { return detail::kDTypeNames[static_cast<int>(t)]; }
constexpr std::string_view dtype_torch_name(DType t) { return detail::kDTypeTorchNames[static_cast<int>(t)]; }

/// Streams the dtype's name (`std::cout << t.dtype()`, as libtorch's); src/print.cpp.
std::ostream& operator<<(std::ostream& os, DType t);

constexpr int64_t itemsize(DType t) { return detail::kItemSizes[static_cast<int>(t)]; }

constexpr bool is_floating(DType t) { return t >= DType::F16; }
constexpr bool is_integral(DType t, bool include_bool = false) {
  return (t >= DType::U8 && t <= DType::I64) || (include_bool && t == DType::Bool);
}
constexpr bool is_reduced_float(DType t) { return t == DType::F16 || t == DType::BF16; }

/// PyTorch's promote_types: bool < integers < floats; u8 with i8 gives i16 in PyTorch,
/// which Ember lacks, so it gives i32 (the next wider signed type Ember has); f16 with
/// bf16 gives f32.
constexpr DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::U8 && b == DType::I8) || (a == DType::I8 && b == DType::U8)) return DType::I32;
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) return DType::F32;
  return a > b ? a : b;
}

/// Whether in-place ops may write a `from` result into a `to` tensor, as torch::can_cast: not
/// floating into integers, not anything but bool into bool.
constexpr bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  return from == DType::Bool || to != DType::Bool;
}

/// The default floating dtype (torch.get_default_dtype()).
inline constexpr DType kDefaultFloat = DType::F32;

/// libtorch's names for the dtypes, for code written against it: zeros({2, 3}, kFloat32),
/// t.to(kLong).
inline constexpr DType kBool = DType::Bool;
inline constexpr DType kUInt8 = DType::U8, kByte = DType::U8;
inline constexpr DType kInt8 = DType::I8, kChar = DType::I8;
inline constexpr DType kInt32 = DType::I32, kInt = DType::I32;
inline constexpr DType kInt64 = DType::I64, kLong = DType::I64;
inline constexpr DType kFloat16 = DType::F16, kHalf = DType::F16;
inline constexpr DType kBFloat16 = DType::BF16;
inline constexpr DType kFloat32 = DType::F32, kFloat = DType::F32;
inline constexpr DType kFloat64 = DType::F64, kDouble = DType::F64;

/// Compile-time mapping C++ type <-> DType.
template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::U8; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::I8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::I32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::I64; };
template <> struct dtype_of<Half> { static constexpr DType value = DType::F16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::BF16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <class T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

/// Calls f.template operator()<T>() with the C++ type of `t`.
/// Usage: visit_dtype(t, [&]<class T>() { ... });
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f.template operator()<bool>();
    case DType::U8: return f.template operator()<uint8_t>();
    case DType::I8: return f.template operator()<int8_t>();
    case DType::I32: return f.template operator()<int32_t>();
    case DType::I64: return f.template operator()<int64_t>();
    case DType::F16: return f.template operator()<Half>();
    case DType::BF16: return f.template operator()<BFloat16>();
    case DType::F32: return f.template operator()<float>();
    case DType::F64: break;
  }
  return f.template operator()<double>();
}

}  // namespace ember

template <>
struct fmt::formatter<ember::DType> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <class Ctx>
  auto format(const ember::DType& v, Ctx& ctx) const {
    return ember::detail::format_text(ember::dtype_name(v), ctx);
  }
};
