#pragma once
/// Options structs with fluent setters, as libtorch's TORCH_ARG:
///   struct LinearOptions { EMBER_ARG(int64_t, in_features); EMBER_ARG(bool, bias) = true; };
///   LinearOptions(4, 2).bias(false)
/// declares a private member `bias_`, a setter `bias(v)` returning the options and a getter `bias()`.

#include <ember/nn/enums.hpp>

#include <utility>

#define EMBER_ARG(T, name)                        \
 public:                                          \
  auto& name(const T& new_##name) & {             \
    this->name##_ = new_##name;                   \
    return *this;                                 \
  }                                               \
  auto&& name(const T& new_##name) && {           \
    this->name##_ = new_##name;                   \
    return std::move(*this);                      \
  }                                               \
  const T& name() const noexcept { return name##_; } \
  T& name() noexcept { return name##_; }          \
                                                  \
 private:                                         \
  T name##_
