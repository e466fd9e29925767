// libFuzzer target: the zip reader (src/io/zip.cpp) and, on each member, the .npy parser.
// Inflation is bounded by max_inflated_size() of the member's compressed bytes, so a
// hostile archive cannot make this allocate more than ~1000x its own size.

#include "npy_format.hpp"
#include "zip.hpp"

#include <ember/core/error.hpp>

#include <vector>

using namespace ember::io::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Source src{"fuzz", "<input>"};
  try {
    const Bytes file{data, size};
    for (const ZipMember& m : read_zip(file, src)) {
      try {
        std::vector<uint8_t> buf;
        Bytes bytes;
        if (m.method == 0) {
          bytes = stored_member(file, m, src);
        } else {
          if (m.size > max_inflated_size(m.compressed_size)) continue;  // load_npz refuses these
          buf.resize(m.size);
          extract_member(file, m, buf.data(), src);
          bytes = {buf.data(), buf.size()};
        }
        (void)parse_npy(bytes, src);
      } catch (const ember::Error&) {
      }
    }
  } catch (const ember::Error&) {
  }
  return 0;
}
