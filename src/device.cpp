// Device from text ("cpu", "cuda", "cuda:N"), as libtorch's Device(std::string). Cold code:
// built in the size-optimised library with printing (src/meson.build).
#include <ember/core/device.hpp>
#include <ember/core/error.hpp>

#include <charconv>

namespace ember {

Device::Device(std::string_view spec) {
  auto fail = [&] {
    EMBER_FAIL("[Device] invalid device string '{}': expected 'cpu', 'cuda' or 'cuda:N' (N from 0 to 127)", spec);
  };
  if (spec == "cpu" || spec == "cpu:0") return;
  if (spec.substr(0, 4) != "cuda") fail();
  type_ = DeviceType::Cuda;
  if (spec.size() == 4) return;
  if (spec[4] != ':' || spec.size() == 5) fail();
  const std::string_view digits = spec.substr(5);
  int n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n < 0 || n > 127) fail();
  index_ = static_cast<int8_t>(n);
}

void invalid_device_index(DeviceType type, int index) {
  EMBER_FAIL("[Device] index {} is out of range for a {} device (cpu takes 0, cuda 0 to 127)", index,
             type == DeviceType::Cpu ? "cpu" : "cuda");
}

}  // namespace ember
