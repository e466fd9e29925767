// libFuzzer target: the safetensors header parser (src/io/safetensors_format.cpp) on any bytes.
// Beyond "no crash, no sanitizer report, only ember::Error": a file that parses must keep
// every tensor inside the input, and writing its header back must parse to the same layout.

#include "safetensors_format.hpp"

#include <ember/core/error.hpp>

#include <cstdlib>
#include <string>

using namespace ember::io::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Source src{"fuzz", "<input>"};
  SafetensorsLayout l;
  try {
    l = parse_safetensors({data, size}, src);
  } catch (const ember::Error&) {
    return 0;
  }
  volatile uint8_t sink = 0;
  for (const SafetensorsEntry& e : l.tensors) {
    const uint8_t* p = data + l.data_start + e.begin;
    for (uint64_t i = 0; i < e.end - e.begin; ++i) sink = sink + p[i];  // ASan: in bounds?
    try {
      if (e.dtype == ember::DType::Bool) check_bool_bytes(p, e.end - e.begin, src, e.name);
    } catch (const ember::Error&) {
    }
  }
  std::string again = safetensors_header(l.tensors, l.metadata);
  again.append(reinterpret_cast<const char*>(data + l.data_start), size - l.data_start);
  SafetensorsLayout r = parse_safetensors({reinterpret_cast<const uint8_t*>(again.data()), again.size()}, src);
  if (r.tensors.size() != l.tensors.size() || r.metadata != l.metadata) std::abort();
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const SafetensorsEntry &a = l.tensors[i], &b = r.tensors[i];
    if (a.name != b.name || a.dtype != b.dtype || !(a.shape == b.shape) || a.begin != b.begin || a.end != b.end)
      std::abort();
  }
  return 0;
}
