#pragma once
/// The plain-data interface between the two halves of the Ember-vs-libtorch differential
/// check: libtorch's headers want C++17 (torch_side.cpp), Ember's C++20 (ember_side.cpp), so
/// neither side sees the other's types. Tensors cross as raw bytes, dtypes as Ember's codes.

#include <cstdint>
#include <string>
#include <vector>

namespace ediff {

/// Ember's DType order (include/ember/core/dtype.hpp).
enum class DT : int { Bool, U8, I8, I32, I64, F16, BF16, F32, F64 };
inline constexpr DT kAllDT[] = {DT::Bool, DT::U8, DT::I8, DT::I32, DT::I64, DT::F16, DT::BF16, DT::F32, DT::F64};
const char* dt_name(DT t);
int64_t dt_size(DT t);
inline bool dt_floating(DT t) { return t == DT::F16 || t == DT::BF16 || t == DT::F32 || t == DT::F64; }

struct Buf {
  DT dt = DT::F32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;  ///< contiguous, row-major
  int64_t numel() const;
  double at(int64_t i) const;         ///< element i as a double
  int64_t at_int(int64_t i) const;    ///< element i of an integer or bool buffer, exactly
};

/// A Python-like scalar operand (it promotes as a wrapped number).
struct ScalarArg {
  enum Kind { Bool, Int, Float } kind = Float;
  double f = 0;
  int64_t i = 0;
};

enum class Kind { Unary, Binary, TensorScalar, Reduce, Named };

struct Call {
  Kind kind = Kind::Unary;
  std::string op;       ///< the name in include/ember/ops/*_list.def
  Buf a, b;             ///< b: Binary only
  ScalarArg s;          ///< TensorScalar only
  double p[3] = {0, 0, 0};  ///< unary parameters (ops::UnaryParams a, b, c)
  bool has_params = false;
  std::vector<int64_t> dims;  ///< Reduce: empty = all dims
  bool keepdim = false;
  /// Unary, Binary, TensorScalar: instead of the result, the gradients of
  /// sum(result * [1, 2, 3, ...]) with respect to a (out) and b (more[0], Binary only).
  /// Named: of the first result, one per input (out, then more; empty where none).
  bool grad = false;
  /// Named with grad: the first operand takes no gradient (a first layer's data), so that an
  /// op is also recorded when only its other operands (weights, biases) need gradients.
  bool skip_first = false;
  /// With grad, 2: the second-order gradients instead, of sum_i sum(g_i * v_i) over the
  /// first-order gradients g_i (recorded: create_graph), v_i = second_order_weights(g_i). A
  /// first-order gradient without history (the op is linear in the inputs) adds nothing; an
  /// input that nothing reaches gets zeros. (Not for the optimisers.)
  int order = 1;
  /// Unary, Binary, TensorScalar with grad: instead of op(a[, b]), y = a * 1 and the op applied
  /// in place to 1: y, 2: y.narrow(0, 1, n - 2), 3: every other element of y (as_strided), with
  /// b narrowed alike; the gradients are those of y. libtorch's side writes op(view) into the
  /// view with copy_, the semantics an in-place op must have.
  int inplace = 0;
  /// Named: Ember's operands are non-contiguous views holding the same values (libtorch's stay
  /// contiguous), so that every op's strided paths are checked against the same results.
  bool strided = false;
  std::vector<Buf> ins;       ///< Named: the tensor operands
  std::vector<double> args;   ///< Named: the other arguments (dims, k, flags, a dtype code)
  std::string text;           ///< Named: a string argument (einsum's equation)
};

struct Result {
  bool ok = false;
  std::string error;  ///< the exception text when !ok
  Buf out;
  std::vector<Buf> more;  ///< further outputs (indices of max, sort, cummax)
};

/// The Named ops, each with its operands and arguments: ember_side.cpp and torch_side.cpp
/// both implement every one, main.cpp calls each.
///   cumsum cumprod logcumsumexp softmax log_softmax (x; dim)       cummax cummin (x; dim) -> 2
///   argmax argmin (x; dim, keepdim)       max_dim min_dim (x; dim, keepdim) -> values, indices
///   var std (x; dim, correction, keepdim)       logsumexp (x; dim, keepdim)
///   sort (x; dim, descending) -> values, indices (stable)       topk (x; k, dim, largest) -> values
///   kthvalue (x; k, dim) -> values       where (cond, a, b)       lerp (a, b, w)
///   addcmul addcdiv (x, t1, t2; value)       clamp_tensors (x, lo, hi)       round_decimals (x; d)
///   to (x; dtype code)       matmul (a, b)       arange (; start, end, step, integral, dtype or -1)
///   linspace (; start, end, steps, dtype or -1)       cat stack (tensors...; dim)
///   unique (x) -> values, counts       nonzero (x)       index_select gather (x, index; dim)
///   scatter_add (x, index, src; dim)       masked_select (x, mask)
///   conv2d (x, w[, b]; stride h w, padding h w, dilation h w, groups)
///   conv_transpose2d (x, w[, b]; stride h w, padding h w, output_padding h w, groups, dilation h w)
///   max_pool2d (x; kernel h w, stride h w, padding h w, dilation h w, ceil) -> values, indices
///   avg_pool2d (x; kernel h w, stride h w, padding h w, ceil, count_include_pad, divisor or 0)
///   adaptive_avg_pool2d (x; out h w)       adaptive_max_pool2d (x; out h w) -> values, indices
///   interpolate (x; out h w, mode (nearest bilinear bicubic nearest-exact area), align_corners,
///                scale h w or 0 0)
///   pad (x; mode (constant 1.5, reflect, replicate, circular), left right top bottom)
///   (reduction: 0 none, 1 mean, 2 sum; an empty operand stands for none)
///   cross_entropy (x, target[, weight]; ignore_index, reduction, label_smoothing)
///   nll_loss (x, target[, weight]; ignore_index, reduction)
///   smooth_l1_loss huber_loss (x, y; reduction, beta or delta)
///   bce_with_logits (x, y[, weight[, pos_weight]]; reduction)       kl_div (x, y; reduction, log_target)
///   layer_norm (x[, w, b]; normalized dims, eps)       group_norm (x[, w, b]; groups, eps)
///   batch_norm (x, running_mean, running_var[, w, b]; training, momentum, eps) -> y, mean, var
///   grid_sample (x, grid; mode (bilinear nearest bicubic), padding (zeros border reflection), align_corners)
///   einsum (operands; text = equation)       unfold (x; kernel h w, dilation h w, padding h w, stride h w)
///   fold (cols; output h w, kernel h w, dilation h w, padding h w, stride h w)
///   embedding_bag (indices, weight, offsets; mode (sum mean max), include_last_offset)
/// calls_more.cpp's (a dim of -9 stands for none: all dims, or the flattened tensor):
///   scatter (x, index, src; dim)       scatter_value (x, index; dim, value)
///   scatter_reduce (x, index, src; dim, reduce (sum prod mean amax amin), include_self)
///   index_add (x, index, src; dim, alpha)       index_copy (x, index, src; dim)
///   index_put (x, indices..., values; accumulate)       masked_fill (x, mask; value)
///   flip (x; dims as a bit mask)       roll (x; shift, dim)       repeat_interleave (x; repeats, dim)
///   repeat (x; repeats...)       tril triu diag (x; k)       diagonal (x; offset, dim0, dim1)
///   pixel_shuffle pixel_unshuffle channel_shuffle (x; factor or groups)
///   norm (x; p, dim, keepdim)       var_mean (x; dim, correction) -> var, mean       one_hot (x; classes)
///   mse_loss l1_loss soft_margin_loss (x, y; reduction)       hinge_embedding_loss (x, y; margin, reduction)
///   binary_cross_entropy (p, y[, weight]; reduction)
///   margin_ranking_loss cosine_embedding_loss (a, b, y; margin, reduction)
///   triplet_margin_loss (a, p, n; margin, norm p, eps, swap, reduction)
///   multi_margin_loss (x, target, weight or empty; p, margin, reduction)
///   multilabel_margin_loss (x, target; reduction)       poisson_nll_loss (x, y; log_input, full, eps, reduction)
///   ctc_loss (logits (T, N, C), targets, input lengths, target lengths; blank, reduction, zero_infinity):
///     log_softmax over C first, so that the gradients compared are the logits' (libtorch's
///     gradient for log_probs assumes they are normalised: it adds exp(log_probs))
///   conv1d (x, w[, b]; stride, padding, dilation, groups)
///   conv_transpose1d (x, w, b; stride, padding, output_padding, groups, dilation)
///   max_pool1d (x; kernel, stride, padding, dilation, ceil) -> values, indices
///   avg_pool1d (x; kernel, stride, padding, ceil, count_include_pad)
///   adaptive_avg_pool1d (x; out)       adaptive_max_pool1d (x; out) -> values, indices
///   conv3d (x, w, b; stride d h w, padding d h w, dilation d h w, groups)
///   max_pool3d (x; kernel, stride, padding, dilation (3 each), ceil) -> values, indices
///   avg_pool3d (x; kernel, stride, padding (3 each), ceil, count_include_pad, divisor or 0)
///   max_unpool2d (x, indices; out h w)       instance_norm (x[, w, b]; eps)
///   embedding (weight, indices; padding_idx (-1: none; below: from the end), scale_grad_by_freq[, max_norm
///              (0: none), norm_type]) -> output[, the weight after max_norm's renormalisation]
///   cosine_similarity (a, b; dim, eps)       pairwise_distance (a, b; p, eps, keepdim)
///   glu (x; dim)       prelu (x, w)       sdpa (q, k, v[, mask]; causal, scale or 0)
///   lstm (x, h0, c0, weights...; layers, bidirectional, batch_first, bias) -> output, h_n, c_n (an h0
///     narrower than c0: projections, weight_hr after each direction's biases)
///   gru rnn_tanh rnn_relu (x, h0, weights...; the same) -> output, h_n
///     (weights in PyTorch's flat order: per layer and direction w_ih, w_hh[, b_ih, b_hh]); with
///     lengths after the flags, x is packed (unsorted), run, and the output padded again
///   normalize (x; p, dim, eps)       local_response_norm (x; size, alpha, beta, k)
///   gaussian_nll_loss (x, y, var; full, eps, reduction)
///   multilabel_soft_margin_loss (x, y[, weight]; reduction)
///   rms_norm (x[, w]; normalized dims, eps or -1 for the dtype's epsilon)
/// calls_linalg.cpp's:
///   mm bmm dot outer (a, b)       addmm baddbmm (c, a, b; beta, alpha)       linear (x, w[, b])
///   bilinear (x1, x2, w[, b])       tile (x; repeats...)       argsort (x; dim, descending) (stable)
///   hardshrink softshrink (x; lambda)       tanhshrink logsigmoid (x)       threshold (x; threshold, value)
///   softmin (x; dim)       lp_pool1d (x; p, kernel, stride, ceil)       lp_pool2d (x; p, kernel h w, stride h w, ceil)
///   adaptive_avg_pool3d (x; out d h w)       adaptive_max_pool3d (x; out d h w) -> values, indices
///   histogram histogramdd (x[, weight]; bins, has range, min, max (each dim), density) -> counts, (first) edges
///   fractional_max_pool2d (x, samples (N, C, 2); kernel h w, out h w) -> values, indices
///   conv_transpose3d (x, w, b; stride, padding, output_padding (3 each), groups, dilation (3))
///   mha (q (L, N, E), k (S, N, kdim), v (S, N, vdim), w_q, w_k, w_v, in_proj_bias or empty, out_proj
///        weight, out_proj bias or empty, key_padding_mask (N, S) or empty, attn_mask (L, S) or empty,
///        bias_k and bias_v (1, 1, E) or both empty; heads, need_weights, average_attn_weights,
///        add_zero_attn) -> output, weights (empty when not needed): the MultiheadAttention modules
///        with these projections; gradients for q, k, v and them
///   lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell (x (N, I), h (N, H), c (N, H) for lstm_cell or empty,
///        w_ih, w_hh, b_ih and b_hh or empty) -> h (and c): one step of torch's functional cells
///   mha_f (as mha, then static_k and static_v (N * heads, S', E / heads) or both empty; heads,
///        need_weights, average_attn_weights, add_zero_attn, separate projections, self-attention
///        (k and v are q)) -> output, weights: F::multi_head_attention_forward, not training
///   interpolate1d (x; out, mode (0 nearest, 1 linear, 3 nearest-exact, 4 area), align_corners, scale or 0)
///   interpolate3d (x; out d h w, mode (as 1d, 1 trilinear), align_corners, scale d h w or 0 0 0)
///   interpolate_aa (x; out h w, mode (1 bilinear, 2 bicubic), align_corners): with antialias
///   index_expr (x, index tensors...; codes) -> x.index(expression): per code 0 ':', 1 '1::2', 2 None,
///     3 Ellipsis, 4 the integer 1, 5 -1, 6 '-3:-1', 7 the next index tensor (i64 or a bool mask)
///   index_put_expr (x, index tensors..., values; codes): (x * 1).index_put_(expression, values)
///   conv_padded (x, w[, b]; nd, padding name (0 numbers, 1 same, 2 valid), padding mode (0 zeros, 1 reflect,
///     2 replicate, 3 circular), groups, stride (nd), padding numbers (nd), dilation (nd)): as the Conv modules
///   encoder_layer (src (L, N, E), the 12 parameters of module_layout.hpp's list, src_mask (L, L) float or empty,
///     key padding mask (N, L) bool or empty; nhead, dim_feedforward, gelu): TransformerEncoderLayer, post-norm
///   decoder_layer (tgt (L, N, E), memory (S, N, E), the 18 parameters of module_layout.hpp's list, tgt_mask
///     (L, L) and memory_mask (L, S) float or empty, tgt (N, L) and memory (N, S) key padding masks bool or
///     empty; nhead, dim_feedforward, gelu): TransformerDecoderLayer, post-norm
///   transformer (src (S, N, E), tgt (T, N, E), the parameters of transformer_parameter_names(encoder layers,
///     decoder layers), src_mask (S, S), tgt_mask (T, T), memory_mask (T, S) float or empty, src (N, S), tgt
///     (N, T) and memory (N, S) key padding masks bool or empty; nhead, dim_feedforward, gelu, encoder layers,
///     decoder layers): nn::Transformer
///   max_unpool1d (x, indices; out)       affine_grid (theta; size (N, C, H, W) or (N, C, D, H, W), align_corners)
///   (optimisers: the parameter after one step per gradient, k = grads.size(0))
///   sgd (param, grads; lr, momentum, dampening, weight_decay, nesterov)
///   adam adamw (param, grads; lr, beta1, beta2, eps, weight_decay, amsgrad)
///   rmsprop (param, grads; lr, alpha, eps, weight_decay, momentum, centered)
///   adagrad (param, grads; lr, lr_decay, weight_decay, initial_accumulator_value, eps)
/// calls_decompositions.cpp's (torch::linalg; matrix-norm ord codes 3 "fro", 4 "nuc", +-10 +-inf):
///   linalg_det logdet linalg_inv linalg_cond linalg_svdvals linalg_matrix_rank (a)
///   linalg_slogdet (a) -> log|det|, sign       linalg_qr (a) -> q, r       linalg_matrix_power (a; n)
///   linalg_solve (a, b; left)       linalg_solve_triangular (a, b; upper, left, unitriangular)
///   linalg_cholesky linalg_eigvalsh cholesky_inverse (a; upper)       cholesky_solve (b, l; upper)
///   linalg_pinv (a; hermitian)       linalg_matrix_norm (a; ord)       linalg_cross (a, b; dim)
///   linalg_vector_norm (x; ord, dim)       linalg_matrix_exp (a)
///   linalg_lstsq (a, b; driver: 0 gelsy 1 gelsd 2 gels 3 gelss) -> solution, residuals
///   linalg_lu_factor (a) -> LU, pivots       linalg_lu (a) -> L, U       linalg_lu_U (a) -> U
///   linalg_lu_solve (a, b; left, adjoint): lu_factor(a), then lu_solve
///   geqrf (a) -> packed QR, tau       householder_product (a, tau)       ormqr (a, tau, other; left, transpose)
/// calls_arrange.cpp's (-9: no dim / no N; has_*: whether that optional operand follows):
///   movedim (x; n, sources..., destinations...)       rot90 (x; k, dim0, dim1)
///   roll_dims (x; shift0, shift1, dim0, dim1)       take_along_dim (x, indices; dim)
///   repeat_interleave_tensor (x, repeats; dim)       tensor_unfold (x; dim, size, step)
///   kron (a, b)       tensordot (a, b; n) or (a, b; n, dims_a..., dims_b...)       trace (x)
///   block_diag cartesian_prod (tensors...)       diag_embed (x; offset, dim1, dim2)
///   diagflat (x; offset)       vander (x; N, increasing)       corrcoef (x)
///   diff (x[, prepend][, append]; n, dim, has_prepend, has_append)
///   cov (x[, fweights][, aweights]; correction, has_fweights, has_aweights)
///   index_fill (x, index; dim, value)       index_fill_tensor (x, index, value; dim)
///   masked_scatter (x, mask, source)       masked_fill_tensor (x, mask, value)
///   on a clone, in place: index_fill_inplace (x, index; dim, value), masked_scatter_inplace
///   (x, mask, source), index_add_inplace (x, index, src; dim, alpha), index_copy_inplace
///   (x, index, src; dim), scatter_inplace (x, index, src; dim)

/// Named calls with grad: whether floating input i of op takes a gradient (not the running
/// statistics of batch_norm, nor the class weights of the losses, which PyTorch does not
/// differentiate).
inline bool differentiable_input(const Call& c, size_t i) {
  const std::string& op = c.op;
  if (op == "batch_norm") return i != 1 && i != 2;
  // Not the masks, which come last.
  if (op == "mha" || op == "mha_f") return i < 9 || i > 10;
  if (op == "encoder_layer") return i + 2 < c.ins.size();
  if (op == "decoder_layer") return i + 4 < c.ins.size();
  if (op == "transformer") return i + 6 < c.ins.size();
  if (op == "index_expr") return i == 0;
  // The factor's gradient: Ember's is zero outside the triangle the solves read (what finite
  // differences give), PyTorch's that of (L L^T)^-1 B for a full L; the same inside it.
  if (op == "cholesky_solve") return i == 0;
  if (op == "cholesky_inverse") return false;
  if (op == "cross_entropy" || op == "nll_loss") return i == 0;
  if (op == "bce_with_logits" || op == "binary_cross_entropy") return i < 2;  // not weight nor pos_weight
  if (op == "multi_margin_loss" || op == "soft_margin_loss" || op == "hinge_embedding_loss") return i == 0;
  if (op == "fractional_max_pool2d") return i == 0;  // not the samples (libtorch refuses their gradient)
  // q reaches the result only through the linear interpolation's weight (code 0).
  if (op == "quantile" || op == "nanquantile") return i == 0 || c.args.at(3) == 0;
  return true;
}

/// The weights v of a second-order gradient call for a first-order gradient of this dtype and
/// shape: element k is (k mod 7) - 2.5, so that signs and sizes vary (and none is 0, which
/// would leave an element's second derivative unchecked).
Buf second_order_weights(DT t, const std::vector<int64_t>& shape);

/// A Named call's gradients (either library's tensors, converted to Buf by `to_buf`) as its
/// Result: the first input's in out, the others' in more, an empty buffer for an input that
/// takes none.
template <class T, class ToBuf>
Result gradient_result(const std::vector<T>& gs, ToBuf to_buf) {
  Result r;
  r.ok = true;
  for (size_t i = 0; i < gs.size(); ++i) {
    Buf g;
    g.shape = {0};
    if (gs[i].defined()) g = to_buf(gs[i]);
    (i == 0 ? r.out : r.more.emplace_back()) = g;
  }
  return r;
}

Result run_torch(const Call& c);
/// The libtorch version compared against ("1.13.0", "2.15.0"): a known difference that one
/// PyTorch release changed is excused for that release only (known_differences.hpp).
const char* torch_version();
int torch_major();
int torch_minor();
Result run_ember(const Call& c);

}  // namespace ediff
