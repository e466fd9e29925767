#include "atomic_file.hpp"

#include "io/atomic_writer.hpp"

namespace ember::detail {

void write_file_atomic(const std::string& path, const void* data, size_t size, const char* op) {
  io::detail::AtomicWriter out(path, op);
  out.write(data, size);
  out.commit();
}

}  // namespace ember::detail
