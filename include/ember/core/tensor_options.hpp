#pragma once
/// Options for factories: `zeros({2, 3}, TensorOptions().dtype(DType::F64))`, or a bare
/// DType or Device: `zeros({2, 3}, DType::F64)`.

#include <ember/core/device.hpp>
#include <ember/core/dtype.hpp>

#include <optional>

namespace ember {

struct TensorOptions {
  TensorOptions() = default;
  TensorOptions(DType t) : dtype_(t) {}   // NOLINT: implicit, as in libtorch
  TensorOptions(Device d) : device_(d) {}  // NOLINT

  TensorOptions dtype(DType t) const {
    TensorOptions o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r = true) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }

  DType dtype_or(DType fallback) const { return dtype_.value_or(fallback); }
  Device device_or(Device fallback) const { return device_.value_or(fallback); }
  bool has_dtype() const { return dtype_.has_value(); }
  bool get_requires_grad() const { return requires_grad_; }

 private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};

}  // namespace ember
