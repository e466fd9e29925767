// Loading and saving .npy and .npz files: the formats are in npy_format.cpp and zip.cpp.

#include <ember/io/numpy.hpp>

#include "npy_format.hpp"
#include "tensor_bytes.hpp"
#include "text.hpp"
#include "zip.hpp"

namespace ember::io::detail {
namespace {

constexpr std::string_view kSuffix = ".npy";

void check_npy_dtype(DType t, const Source& src, std::string_view what) {
  EMBER_CHECK(npy_descr(t).has_value(), "{}{}: {} has no .npy dtype (numpy has no bfloat16); convert it first, e.g. "
              "t.to(DType::F32)", src.prefix(), what, t);
}

// Header and data of one array, in the order a .npy file holds them.
template <class Sink>
void write_npy(const TensorImpl& t, Sink&& sink) {
  const bool fortran = is_column_major_only(t);
  const std::string header = npy_header(t.dtype, t.sizes, fortran);
  sink(header.data(), header.size());
  for_tensor_bytes(t, fortran, sink);
}

uint64_t npy_size(const TensorImpl& t) {
  const uint64_t data = static_cast<uint64_t>(t.numel * itemsize(t.dtype));
  return npy_header(t.dtype, t.sizes, is_column_major_only(t)).size() + data;
}

}  // namespace

TensorRef load_npy(const std::string& path, std::optional<DType> to) {
  const Source src{"load_npy", path};
  BlobRef file = map_file(path, src.op);
  NpyLayout l = parse_npy(file->bytes(), src);
  return tensor_from_bytes(file, file->data + l.data_offset, l.dtype, l.shape, l.fortran_order, to, src, "data");
}

void save_npy(const std::string& path, const ember::detail::TensorImpl& t) {
  const Source src{"save_npy", path};
  check_npy_dtype(t.dtype, src, "tensor");
  AtomicWriter out(path, src.op);
  write_npy(t, [&](const void* p, size_t n) { out.write(p, n); });
  out.commit();
}

NamedTensors load_npz(const std::string& path, std::optional<DType> to) {
  const Source src{"load_npz", path};
  BlobRef file = map_file(path, src.op);
  std::vector<ZipMember> members = read_zip(file->bytes(), src);
  NamedTensors out;
  out.reserve(members.size());
  for (const ZipMember& m : members) {
    EMBER_CHECK(m.name.size() >= kSuffix.size() && m.name.compare(m.name.size() - kSuffix.size(), kSuffix.size(),
                                                                  kSuffix) == 0,
                "{}member {} is not an .npy file (its name lacks the .npy suffix)", src.prefix(), quoted(m.name));
    // Errors inside a member name both the archive and the member: 'a.npz/x.npy'.
    const std::string label = path + "/" + m.name;
    const Source msrc{src.op, label};
    BlobRef owner = file;
    Bytes bytes;
    if (m.method == 0) {
      bytes = stored_member(file->bytes(), m, src);
    } else {
      EMBER_CHECK(m.size <= max_inflated_size(m.compressed_size),
                  "{}member {}: declares {} bytes from {} compressed bytes, more than deflate can produce (a "
                  "decompression bomb?)", src.prefix(), quoted(m.name), m.size, m.compressed_size);
      owner = alloc_blob(m.size, msrc);
      extract_member(file->bytes(), m, owner->data, src);
      bytes = owner->bytes();
    }
    NpyLayout l = parse_npy(bytes, msrc);
    out.emplace_back(m.name.substr(0, m.name.size() - kSuffix.size()),
                     tensor_from_bytes(owner, bytes.data() + l.data_offset, l.dtype, l.shape, l.fortran_order, to, msrc,
                                       "data"));
  }
  return out;
}

void save_npz(const std::string& path, const NamedTensors& tensors, bool compress) {
  const Source src{"save_npz", path};
  for (const auto& [name, t] : tensors) {
    check_npy_dtype(t->dtype, src, "tensor " + quoted(name));
    EMBER_CHECK(is_utf8(name), "{}tensor name {} is not UTF-8", src.prefix(), quoted(name));
  }
  AtomicWriter out(path, src.op);
  ZipWriter zip(out, src);
  for (const auto& [name, t] : tensors) {
    zip.begin(name + std::string(kSuffix), compress, npy_size(*t));
    write_npy(*t, [&](const void* p, size_t n) { zip.write(p, n); });
    zip.end();
  }
  zip.finish();
  out.commit();
}

}  // namespace ember::io::detail
