#pragma once
/// Options for factories: `zeros({2, 3}, TensorOptions().dtype(DType::F64))`, or a bare
/// DType or Device: `zeros({2, 3}, DType::F64)`, or libtorch's builders: `ember::dtype(kFloat64)`.

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
  TensorOptions requires_grad(bool r) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }

  /// The getters, as libtorch's: the dtype (the default float when unset), the device (cpu
  /// when unset), whether factories make leaves that require grad.
  DType dtype() const { return dtype_.value_or(kDefaultFloat); }
  Device device() const { return device_.value_or(kCPU); }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  DType dtype_or(DType fallback) const { return dtype_.value_or(fallback); }
  Device device_or(Device fallback) const { return device_.value_or(fallback); }

 private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};

/// libtorch's option builders: `zeros({2}, ember::dtype(kFloat64).requires_grad(true))`,
/// `randn({3}, ember::requires_grad())`.
inline TensorOptions dtype(DType t) { return TensorOptions(t); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace ember
