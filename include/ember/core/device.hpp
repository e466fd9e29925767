#pragma once
/// Where a tensor's memory lives. A runtime value, as in libtorch: Device::cuda(1).

#include <ember/core/format_text.hpp>
#include <fmt/core.h>

#include <cstdint>
#include <iosfwd>
#include <string>

namespace ember {

enum class DeviceType : uint8_t { Cpu = 0, Cuda = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::Cpu;
  int8_t index = 0;

  static constexpr Device cpu() { return {DeviceType::Cpu, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::Cuda, static_cast<int8_t>(index)}; }

  constexpr bool is_cpu() const { return type == DeviceType::Cpu; }
  constexpr bool is_cuda() const { return type == DeviceType::Cuda; }
  friend constexpr bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }

  /// "cpu" or "cuda:0".
  std::string str() const { return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index); }
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
