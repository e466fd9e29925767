#pragma once
/// Where a tensor's memory lives. A runtime value, as in libtorch: Device::cuda(1).

#include <ember/core/format_text.hpp>
#include <fmt/core.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace ember {

enum class DeviceType : uint8_t { Cpu = 0, Cuda = 1 };
inline constexpr int kNumDeviceTypes = 2;

/// Throws the error of a device index out of range (src/device.cpp).
[[noreturn]] void invalid_device_index(DeviceType type, int index);

class Device {
 public:
  constexpr Device() = default;
  /// cpu takes index 0 only, cuda 0 to 127; anything else is an ember::Error.
  constexpr Device(DeviceType type, int index = 0) : type_(type), index_(static_cast<int8_t>(index)) {  // NOLINT
    if (index < 0 || index > (type == DeviceType::Cpu ? 0 : 127)) invalid_device_index(type, index);
  }
  /// libtorch spells `Device(kCUDA, 1)` with kCUDA a device kind; Ember's kCUDA is cuda:0,
  /// whose kind this takes.
  constexpr Device(Device kind, int index) : Device(kind.type_, index) {}
  /// "cpu" (or "cpu:0"), "cuda" (cuda:0) or "cuda:N", as libtorch's Device("cuda:1"); anything
  /// else is an ember::Error (src/device.cpp).
  Device(std::string_view spec);  // NOLINT: implicit, as libtorch's from std::string
  Device(const std::string& spec) : Device(std::string_view(spec)) {}  // NOLINT
  explicit Device(const char* spec) : Device(std::string_view(spec)) {}

  static constexpr Device cpu() { return {DeviceType::Cpu, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::Cuda, index}; }

  constexpr DeviceType type() const { return type_; }
  constexpr int index() const { return index_; }
  constexpr bool is_cpu() const { return type_ == DeviceType::Cpu; }
  constexpr bool is_cuda() const { return type_ == DeviceType::Cuda; }
  friend constexpr bool operator==(Device a, Device b) { return a.type_ == b.type_ && a.index_ == b.index_; }

  /// "cpu" or "cuda:0".
  std::string str() const { return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index_); }

 private:
  DeviceType type_ = DeviceType::Cpu;
  int8_t index_ = 0;
};

inline constexpr Device kCPU = Device::cpu();
/// The first CUDA device (libtorch's `kCUDA`, as in `t.to(kCUDA)`).
inline constexpr Device kCUDA = Device::cuda(0);

namespace cuda {
/// The number of CUDA devices this process can use: 0 when Ember was built without CUDA, or
/// without a driver or device (never throws). As libtorch's torch::cuda::device_count().
int device_count();
/// Whether a CUDA device can be used (device_count() > 0), as torch::cuda::is_available().
bool is_available();
}  // namespace cuda

/// Streams "cpu" or "cuda:N"; src/print.cpp.
std::ostream& operator<<(std::ostream& os, Device d);

}  // namespace ember

template <>
struct fmt::formatter<ember::Device> {
  constexpr auto parse(fmt::format_parse_context& ctx) { return ctx.begin(); }
  template <class Ctx>
  auto format(const ember::Device& v, Ctx& ctx) const {
    return ember::detail::format_text(v.str(), ctx);
  }
};
