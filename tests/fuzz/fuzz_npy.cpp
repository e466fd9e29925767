// libFuzzer target: the .npy parser (src/io/npy_format.cpp) on any bytes. A file that parses
// must keep its data inside the input, and the header Ember writes for the same array must
// parse to the same dtype, shape and order.

#include "npy_format.hpp"

#include <ember/core/error.hpp>

#include <cstdlib>
#include <string>

using namespace ember::io::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Source src{"fuzz", "<input>"};
  NpyLayout l;
  try {
    l = parse_npy({data, size}, src);
  } catch (const ember::Error&) {
    return 0;
  }
  volatile uint8_t sink = 0;
  for (uint64_t i = 0; i < l.nbytes; ++i) sink = sink + data[l.data_offset + i];  // ASan: in bounds?
  std::string again = npy_header(l.dtype, l.shape, l.fortran_order);
  again.append(reinterpret_cast<const char*>(data + l.data_offset), l.nbytes);
  NpyLayout r = parse_npy({reinterpret_cast<const uint8_t*>(again.data()), again.size()}, src);
  if (r.dtype != l.dtype || !(r.shape == l.shape) || r.fortran_order != l.fortran_order || r.nbytes != l.nbytes ||
      r.data_offset % 64 != 0)
    std::abort();
  return 0;
}
