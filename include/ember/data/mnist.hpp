#pragma once
/// MNIST and Fashion-MNIST: readers of the IDX files they ship as, gzip-compressed or not.
///
///   auto train = data::load_mnist("data/fashion-mnist", /*train=*/true);  // images u8 [60000, 28, 28]
///   data::TensorDataset ds({train.images, train.labels});              // labels i64 [60000]
///
/// IDX (LeCun et al.): a 4-byte magic (two zero bytes, a type code, the rank), the rank's
/// dimensions as big-endian u32, then the elements, big-endian, row-major. Every field is
/// checked; an error names the file and the field ("magic", "type", "rank", "dim 1", "data",
/// "gzip") with the values found.

#include <ember/ember.hpp>

#include <string>

namespace ember::data {

/// The tensor an IDX file holds, in its element type: u8 (0x08), i8 (0x09), i16 (0x0B, read
/// as i32: Ember has no i16), i32 (0x0C), f32 (0x0D), f64 (0x0E). A file that starts with the
/// gzip magic is decompressed first.
Tensor read_idx(const std::string& path);

/// Images and labels of one split.
struct MnistData {
  Tensor images;  ///< u8 [N, rows, cols] (28 x 28 for MNIST and Fashion-MNIST)
  Tensor labels;  ///< i64 [N]
};

/// Reads an images file (u8, rank 3) and a labels file (u8, rank 1) with the same N.
MnistData read_mnist(const std::string& images_path, const std::string& labels_path);

/// Reads the split `train` (else t10k) from `root`, which holds the standard file names
/// (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-...), each with or without ".gz".
/// Fashion-MNIST uses the same names.
MnistData load_mnist(const std::string& root, bool train = true);

}  // namespace ember::data
