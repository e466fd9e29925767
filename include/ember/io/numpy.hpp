#pragma once
/// NumPy's .npy and .npz files.
///
///   ember::Tensor x = ember::io::load_npy("x.npy");
///   ember::io::save_npy("y.npy", y);
///   auto arrays = ember::io::load_npz("data.npz");                  // TensorDict, archive order
///   ember::io::save_npz("out.npz", {{"x", x}, {"y", y}}, /*compress=*/true);
///
/// dtypes: '<f8' '<f4' '<f2' '<i8' '<i4' '|i1' '|u1' '|b1' (f64 f32 f16 i64 i32 i8 u8 bool);
/// read also as '=f4' (native, little-endian here) and, for the 1-byte types, with any byte
/// order mark ('<u1', as cnpy writes). Big-endian data is refused.
/// bf16 has no numpy dtype: saving it fails (convert it first). .npy versions 1.0, 2.0 and
/// 3.0 are read; a fortran_order array loads as a column-major view (a transposed layout, no
/// copy). load_npy maps the file like load_safetensors does (the tensor views it when the
/// data is aligned). An .npz is a zip archive of <name>.npy members, stored or deflated
/// (zip64 archives are read); a stored member whose data is aligned is viewed in place like
/// a .npy, others are copied out (deflated ones inflated). Files are written atomically
/// (temporary file, fsync, rename), .npy byte-identical to what np.save writes; Ember writes
/// .npz archives without zip64, so members and archives of 4 GiB or more are refused.
/// Malformed files fail with an ember::Error naming the file and the field.

#include <ember/io/tensor_dict.hpp>

#include <optional>
#include <string>

namespace ember::io {

namespace detail {
detail::TensorRef load_npy(const std::string& path, std::optional<DType> to);
void save_npy(const std::string& path, const ember::detail::TensorImpl& t);
detail::NamedTensors load_npz(const std::string& path, std::optional<DType> to);
void save_npz(const std::string& path, const detail::NamedTensors& tensors, bool compress);
}  // namespace detail

/// The array in `path`, converted to `to` when given.
template <class P = DefaultPolicy>
BasicTensor<P> load_npy(const std::string& path, std::optional<DType> to = {}) {
  return BasicTensor<P>(detail::load_npy(path, to));
}

/// Writes `t` as an .npy file; a column-major (transposed) tensor is written with
/// fortran_order True, as np.save does.
template <class P>
void save_npy(const std::string& path, const BasicTensor<P>& t) {
  detail::save_npy(path, t.impl());
}

/// Every array of the archive, in archive order, named without the ".npy" suffix.
template <class P = DefaultPolicy>
BasicTensorDict<P> load_npz(const std::string& path, std::optional<DType> to = {}) {
  return BasicTensorDict<P>(detail::load_npz(path, to));
}

/// Writes the arrays as <name>.npy members, deflated when `compress` (np.savez_compressed).
template <class P = DefaultPolicy>
void save_npz(const std::string& path, const BasicTensorDict<P>& tensors, bool compress = false) {
  detail::save_npz(path, tensors.refs(), compress);
}

}  // namespace ember::io
