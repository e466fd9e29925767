#pragma once
/// nn::utils::rnn: batches of sequences of different lengths, as libtorch's.
///   auto packed = rnn::pack_padded_sequence(padded, lengths, /*batch_first=*/true,
///                                           /*enforce_sorted=*/false);
///   auto [out, state] = lstm->forward_with_packed_input(packed);
///   auto [y, y_lengths] = rnn::pad_packed_sequence(out, /*batch_first=*/true);
/// A PackedSequence holds the time steps one after another, each with the rows of the
/// sequences still running: `data` (sum of lengths, *), `batch_sizes` (the rows per step, on
/// the CPU), and the order in which the sequences were sorted, longest first.

#include <ember/core/factories.hpp>
#include <ember/core/tensor_methods.hpp>
#include <ember/ops/shape_ops.hpp>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::nn::utils::rnn {

template <class P = DefaultPolicy>
class BasicPackedSequence {
 public:
  using TensorT = BasicTensor<P>;
  BasicPackedSequence() = default;
  /// `sorted_indices` (the batch's rows in the order packed) and its inverse
  /// `unsorted_indices` are undefined when the sequences came sorted.
  /// Given sorted_indices alone, unsorted_indices is its inverse (as libtorch's).
  BasicPackedSequence(TensorT data, TensorT batch_sizes, TensorT sorted_indices = {}, TensorT unsorted_indices = {})
      : data_(std::move(data)),
        batch_sizes_(std::move(batch_sizes)),
        sorted_indices_(std::move(sorted_indices)),
        unsorted_indices_(std::move(unsorted_indices)) {
    EMBER_CHECK(batch_sizes_.defined() && batch_sizes_.dim() == 1 && batch_sizes_.device() == Device::cpu() &&
                    (batch_sizes_.dtype() == DType::I64 || batch_sizes_.dtype() == DType::I32),
                "[PackedSequence] batch_sizes must be a 1-d integer tensor on the CPU, got {}",
                batch_sizes_.defined() ? EMBER_FORMAT("{} of shape {} on {}", batch_sizes_.dtype(), batch_sizes_.sizes(),
                                                     batch_sizes_.device())
                                       : std::string("none"));
    if (!sorted_indices_.defined()) {
      EMBER_CHECK(!unsorted_indices_.defined(), "[PackedSequence] unsorted_indices without sorted_indices");
      return;
    }
    const int64_t batch = batch_sizes_.numel() == 0 ? 0 : batch_size_list()[0];
    EMBER_CHECK(sorted_indices_.dim() == 1 && sorted_indices_.dtype() == DType::I64 && sorted_indices_.numel() == batch &&
                    (!unsorted_indices_.defined() || unsorted_indices_.sizes() == sorted_indices_.sizes()),
                "[PackedSequence] sorted_indices and unsorted_indices must be i64 permutations of the {} sequences, "
                "got shapes {} and {}",
                batch, sorted_indices_.sizes(), unsorted_indices_.defined() ? unsorted_indices_.sizes() : Shape{});
    if (!unsorted_indices_.defined()) {
      TensorT order = sorted_indices_.to(Device::cpu()).contiguous();
      std::vector<int64_t> inverse(static_cast<size_t>(batch), -1);
      for (int64_t k = 0; k < batch; ++k) {
        const int64_t i = order.template data_ptr<int64_t>()[k];
        EMBER_CHECK(i >= 0 && i < batch && inverse[static_cast<size_t>(i)] < 0,
                    "[PackedSequence] sorted_indices is not a permutation of 0..{}", batch - 1);
        inverse[static_cast<size_t>(i)] = k;
      }
      TensorT inv = empty<P>({batch}, TensorOptions(DType::I64));
      std::copy(inverse.begin(), inverse.end(), inv.template data_ptr<int64_t>());
      unsorted_indices_ = inv.to(sorted_indices_.device());
    }
  }
  const TensorT& data() const { return data_; }
  const TensorT& batch_sizes() const { return batch_sizes_; }
  const TensorT& sorted_indices() const { return sorted_indices_; }
  const TensorT& unsorted_indices() const { return unsorted_indices_; }
  bool is_sorted() const { return !sorted_indices_.defined(); }
  /// The data on another device (the batch sizes stay on the CPU, as PyTorch's).
  BasicPackedSequence to(Device device) const {
    auto move = [&](const TensorT& t) { return t.defined() ? t.to(device) : t; };
    return BasicPackedSequence(data_.to(device), batch_sizes_, move(sorted_indices_), move(unsorted_indices_));
  }
  /// batch_sizes as a host vector, checked against the data for `op`, which reads them:
  /// positive, non-increasing, and summing to the data's rows.
  std::vector<int64_t> checked_batch_sizes(const char* op) const {
    const std::vector<int64_t> sizes = batch_size_list();
    EMBER_CHECK(!sizes.empty() && data_.defined() && data_.dim() >= 1,
                "[{}] expects a PackedSequence with data and batch sizes", op);
    int64_t total = 0;
    for (size_t t = 0; t < sizes.size(); ++t) {
      EMBER_CHECK(sizes[t] > 0 && (t == 0 || sizes[t] <= sizes[t - 1]),
                  "[{}] packed batch sizes must be positive and non-increasing, got {} at step {}", op, sizes[t], t);
      total += sizes[t];
    }
    EMBER_CHECK(total == data_.size(0), "[{}] packed data has {} rows, its batch sizes sum to {}", op, data_.size(0),
                total);
    return sizes;
  }
  /// batch_sizes as a host vector.
  std::vector<int64_t> batch_size_list() const {
    if (!batch_sizes_.defined()) return {};  // a default-constructed (empty) sequence
    TensorT b = batch_sizes_.to(DType::I64).contiguous();
    const int64_t* p = b.template data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + b.numel());
  }

 private:
  TensorT data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};
using PackedSequence = BasicPackedSequence<>;

namespace detail {
template <class P>
std::vector<int64_t> host_lengths(const BasicTensor<P>& lengths, const char* op) {
  EMBER_CHECK(lengths.defined() && lengths.dim() == 1 && (lengths.dtype() == DType::I64 || lengths.dtype() == DType::I32),
              "[{}] lengths must be a 1-d integer tensor, got {}", op,
              lengths.defined() ? EMBER_FORMAT("{} of shape {}", lengths.dtype(), lengths.sizes()) : "none");
  BasicTensor<P> l = lengths.to(DType::I64).to(Device::cpu()).contiguous();
  const int64_t* p = l.template data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + l.numel());
}
}  // namespace detail

/// Packs a padded batch, (T, B, *) or with batch_first (B, T, *), whose sequence b holds its
/// first lengths[b] steps. With enforce_sorted the lengths must not increase; otherwise the
/// batch is sorted here (stably, longest first) and the order kept in the result.
template <class P>
BasicPackedSequence<P> pack_padded_sequence(const BasicTensor<P>& input, const std::vector<int64_t>& lengths,
                                            bool batch_first = false, bool enforce_sorted = true) {
  constexpr const char* op = "pack_padded_sequence";
  EMBER_CHECK(input.dim() >= 2, "[{}] expects a padded batch of at least 2 dims, got shape {}", op, input.sizes());
  BasicTensor<P> x = batch_first ? input.transpose(0, 1) : input;  // (T, B, *)
  const int64_t steps = x.size(0), batch = x.size(1);
  EMBER_CHECK(static_cast<int64_t>(lengths.size()) == batch, "[{}] {} lengths for a batch of {} (input of shape {})",
              op, lengths.size(), batch, input.sizes());
  EMBER_CHECK(batch > 0, "[{}] the batch of shape {} is empty", op, input.sizes());
  for (int64_t l : lengths)
    EMBER_CHECK(l > 0 && l <= steps, "[{}] each length must be in [1, {}] (the padded length), got {}", op, steps, l);
  std::vector<int64_t> order(static_cast<size_t>(batch));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (enforce_sorted) {
    EMBER_CHECK(std::is_sorted(lengths.rbegin(), lengths.rend()),
                "[{}] lengths must not increase when enforce_sorted is true; pass enforce_sorted=false to sort them", op);
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  }
  // Step t keeps the sequences longer than t: the first batch_sizes[t] in sorted order.
  const int64_t longest = lengths[static_cast<size_t>(order[0])];
  std::vector<int64_t> batch_sizes(static_cast<size_t>(longest)), rows;
  for (int64_t t = 0; t < longest; ++t) {
    int64_t running = 0;
    while (running < batch && lengths[static_cast<size_t>(order[static_cast<size_t>(running)])] > t) ++running;
    batch_sizes[static_cast<size_t>(t)] = running;
    for (int64_t k = 0; k < running; ++k) rows.push_back(t * batch + order[static_cast<size_t>(k)]);
  }
  Shape flat = x.sizes();
  flat.erase(0);
  flat[0] = steps * batch;
  BasicTensor<P> data = index_select(x.reshape(flat), 0, ember::detail::index_tensor_1d<P>(rows, x.device()));
  BasicTensor<P> sizes = ember::detail::index_tensor_1d<P>(batch_sizes, Device::cpu());
  if (enforce_sorted) return BasicPackedSequence<P>(data, sizes);
  std::vector<int64_t> inverse(order.size());
  for (size_t k = 0; k < order.size(); ++k) inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
  return BasicPackedSequence<P>(data, sizes, ember::detail::index_tensor_1d<P>(order, x.device()),
                                ember::detail::index_tensor_1d<P>(inverse, x.device()));
}
/// lengths as a 1-d integer tensor (on any device), as libtorch's.
template <class P>
BasicPackedSequence<P> pack_padded_sequence(const BasicTensor<P>& input, const BasicTensor<P>& lengths,
                                            bool batch_first = false, bool enforce_sorted = true) {
  return pack_padded_sequence(input, detail::host_lengths(lengths, "pack_padded_sequence"), batch_first,
                              enforce_sorted);
}

/// pack_padded_sequence's inverse: the padded batch (T, B, *) or (B, T, *), in the batch's
/// original order, with padding_value after each sequence's end (T: the longest length, or
/// total_length), and the lengths (i64, on the CPU).
template <class P>
std::pair<BasicTensor<P>, BasicTensor<P>> pad_packed_sequence(const BasicPackedSequence<P>& sequence,
                                                              bool batch_first = false, double padding_value = 0.0,
                                                              std::optional<int64_t> total_length = std::nullopt) {
  constexpr const char* op = "pad_packed_sequence";
  const std::vector<int64_t> batch_sizes = sequence.checked_batch_sizes(op);
  const BasicTensor<P>& data = sequence.data();
  const int64_t longest = static_cast<int64_t>(batch_sizes.size()), batch = batch_sizes[0];
  const int64_t steps = total_length.value_or(longest);
  EMBER_CHECK(steps >= longest, "[{}] total_length {} is shorter than the longest sequence, {}", op, steps, longest);
  std::vector<int64_t> rows, lengths(static_cast<size_t>(batch), 0);
  for (int64_t t = 0; t < longest; ++t)
    for (int64_t k = 0; k < batch_sizes[static_cast<size_t>(t)]; ++k) {
      rows.push_back(t * batch + k);
      ++lengths[static_cast<size_t>(k)];
    }
  Shape flat = data.sizes();
  flat[0] = ember::detail::checked_mul(steps, batch, op);
  BasicTensor<P> padded = full<P>(flat, padding_value, TensorOptions(data.dtype()).device(data.device()))
                              .index_copy(0, ember::detail::index_tensor_1d<P>(rows, data.device()), data);
  Shape shape = data.sizes();
  shape[0] = batch;
  shape.insert(0, steps);
  padded = padded.reshape(shape);  // (T, B, *), sorted order
  BasicTensor<P> length_tensor = ember::detail::index_tensor_1d<P>(lengths, Device::cpu());
  if (!sequence.is_sorted()) {
    padded = padded.index_select(1, sequence.unsorted_indices());
    length_tensor = length_tensor.index_select(0, sequence.unsorted_indices().to(Device::cpu()));
  }
  return {batch_first ? padded.transpose(0, 1) : padded, length_tensor};
}

/// Stacks sequences (L_b, *) of equal trailing shape into (max L, B, *) or (B, max L, *),
/// padding each after its end, or before its start with padding_side "left" (as libtorch's
/// and PyTorch's padding_side).
template <class P>
BasicTensor<P> pad_sequence(const std::vector<BasicTensor<P>>& sequences, bool batch_first = false,
                            double padding_value = 0.0, std::string_view padding_side = "right") {
  constexpr const char* op = "pad_sequence";
  EMBER_CHECK(!sequences.empty(), "[{}] needs at least one sequence", op);
  EMBER_CHECK(padding_side == "right" || padding_side == "left",
              "[{}] padding_side must be \"right\" or \"left\", got \"{}\"", op, padding_side);
  int64_t longest = 0;
  for (const BasicTensor<P>& s : sequences) {
    EMBER_CHECK(s.defined() && s.dim() >= 1, "[{}] each sequence needs at least 1 dim (its steps)", op);
    Shape trailing = s.sizes(), first = sequences[0].sizes();
    trailing.erase(0);
    first.erase(0);
    EMBER_CHECK(trailing == first && s.dtype() == sequences[0].dtype() && s.device() == sequences[0].device(),
                "[{}] sequences must share their trailing shape, dtype and device: {} {} against {} {}", op,
                s.sizes(), s.dtype(), sequences[0].sizes(), sequences[0].dtype());
    longest = std::max(longest, s.size(0));
  }
  std::vector<BasicTensor<P>> padded;
  for (const BasicTensor<P>& s : sequences) {
    if (s.size(0) == longest) {
      padded.push_back(s);
      continue;
    }
    Shape fill = s.sizes();
    fill[0] = longest - s.size(0);
    BasicTensor<P> pad = full<P>(fill, padding_value, TensorOptions(s.dtype()).device(s.device()));
    padded.push_back(padding_side == "left" ? cat({pad, s}, 0) : cat({s, pad}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

/// The inverse of pad_sequence (padded after each end): the first lengths[b] steps of each
/// sequence b of padded (max L, B, *) or (B, max L, *), as views.
template <class P>
std::vector<BasicTensor<P>> unpad_sequence(const BasicTensor<P>& padded, const std::vector<int64_t>& lengths,
                                           bool batch_first = false) {
  constexpr const char* op = "unpad_sequence";
  EMBER_CHECK(padded.defined() && padded.dim() >= 2, "[{}] expects a padded batch of at least 2 dims, got shape {}", op,
              padded.defined() ? padded.sizes() : Shape{});
  const int64_t batch_dim = batch_first ? 0 : 1, steps = padded.size(1 - batch_dim);
  EMBER_CHECK(static_cast<int64_t>(lengths.size()) == padded.size(batch_dim),
              "[{}] {} lengths for a batch of {} (padded shape {})", op, lengths.size(), padded.size(batch_dim),
              padded.sizes());
  std::vector<BasicTensor<P>> out;
  for (size_t b = 0; b < lengths.size(); ++b) {
    EMBER_CHECK(lengths[b] >= 0 && lengths[b] <= steps, "[{}] length {} of sequence {} is outside [0, {}]", op,
                lengths[b], b, steps);
    out.push_back(padded.select(batch_dim, static_cast<int64_t>(b)).narrow(0, 0, lengths[b]));
  }
  return out;
}
/// lengths as a 1-d integer tensor (pad_packed_sequence's second result).
template <class P>
std::vector<BasicTensor<P>> unpad_sequence(const BasicTensor<P>& padded, const BasicTensor<P>& lengths,
                                           bool batch_first = false) {
  return unpad_sequence(padded, detail::host_lengths(lengths, "unpad_sequence"), batch_first);
}

/// The inverse of pack_sequence: each sequence of the packed batch, in the original order.
template <class P>
std::vector<BasicTensor<P>> unpack_sequence(const BasicPackedSequence<P>& packed) {
  packed.checked_batch_sizes("unpack_sequence");  // errors name this op
  auto [padded, lengths] = pad_packed_sequence(packed, true);
  return unpad_sequence(padded, lengths, true);
}

/// Packs sequences (L_b, *) directly: pad_sequence, then pack_padded_sequence.
template <class P>
BasicPackedSequence<P> pack_sequence(const std::vector<BasicTensor<P>>& sequences, bool enforce_sorted = true) {
  std::vector<int64_t> lengths;
  for (const BasicTensor<P>& s : sequences) lengths.push_back(s.defined() && s.dim() >= 1 ? s.size(0) : 0);
  return pack_padded_sequence(pad_sequence(sequences), lengths, false, enforce_sorted);
}

}  // namespace ember::nn::utils::rnn
