#pragma once
/// BasicTensor<Policy>: a cheap, reference-counted handle to a TensorImpl. Every op goes
/// through the policy's layer chain (ember::dispatch). `Tensor` is BasicTensor<DefaultPolicy>.

#include <ember/core/indexing.hpp>
#include <ember/core/scalar.hpp>
#include <ember/core/tensor_impl.hpp>
#include <ember/core/tensor_options.hpp>
#include <ember/dispatch/policy.hpp>
#include <ember/ops/descriptors.hpp>
#include <ember/ops/reduction_ops.hpp>
#include <ember/ops/view_ops.hpp>

#include <concepts>
#include <initializer_list>
#include <memory>
#include <optional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace ember {

namespace autograd {
struct Node;
struct Autograd;  // the layer, named by to_string's has_layer test
}  // namespace autograd

namespace detail {
/// src/print.cpp: PyTorch-style text of t (on the CPU), naming `device` when not the CPU and
/// ending with `extra` (", requires_grad=True").
std::string format_tensor(const TensorImpl& t, Device device, std::string_view extra);
TensorImpl* nested_list_tensor(const void* data, DType dtype, IntArrayRef shape);
Shape apply_index(const TensorImpl& x, std::span<const TensorIndex> idx, std::vector<ops::ViewOp>& steps);
inline bool has_tensor_index(std::span<const TensorIndex> idx) {
  for (const TensorIndex& i : idx)
    if (i.kind == TensorIndex::Kind::Tensor) return true;
  return false;
}
// ops/mixed_index.hpp: index expressions with index tensors among them.
template <class P>
BasicTensor<P> index_with_tensors(const BasicTensor<P>& x, std::span<const TensorIndex> idx);
template <class P>
void index_put_with_tensors(const BasicTensor<P>& x, std::span<const TensorIndex> idx, const BasicTensor<P>& v);
}  // namespace detail

/// One dim (or size) where libtorch takes a list and also accepts a single integer through
/// IntArrayRef's one-element constructor: x.sum(1), x.mean(-1, true), x.view(-1). A template,
/// so that a braced list ({1}, or {} for all dims) still goes to the Shape overload.
template <class I>
concept SingleDim = std::integral<I> && !std::same_as<I, bool>;

/// Indexes a strided CPU tensor with a[i][j]...; bounds are the caller's (no checks, like libtorch).
template <class T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides) : data_(data), sizes_(sizes), strides_(strides) {}
  decltype(auto) operator[](int64_t i) const {
    if constexpr (N == 1) return data_[i * strides_[0]];
    else return TensorAccessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
  }
  int64_t size(size_t d) const { return sizes_[d]; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

template <class P>
class BasicTensor {
 public:
  using policy = P;
  using Impl = detail::TensorImpl;
  using ImplRef = detail::Ref<Impl>;

  BasicTensor() = default;
  explicit BasicTensor(ImplRef impl) : impl_(std::move(impl)) {}

  // ---- properties ----------------------------------------------------------------------------
  bool defined() const { return static_cast<bool>(impl_); }
  const Shape& sizes() const { return impl().sizes; }
  const Shape& shape() const { return impl().sizes; }
  const Shape& strides() const { return impl().strides; }
  /// A 0-d tensor has no dimension to ask about (PyTorch raises too; ops that accept dim 0 of a
  /// 0-d tensor treat it as size 1 themselves).
  int64_t size(int64_t d) const {
    EMBER_CHECK(dim() > 0, "[size] dim {} of a 0-d tensor: it has no dimensions", d);
    return impl().sizes[wrap_dim(d, dim(), "size")];
  }
  int64_t stride(int64_t d) const {
    EMBER_CHECK(dim() > 0, "[stride] dim {} of a 0-d tensor: it has no dimensions", d);
    return impl().strides[wrap_dim(d, dim(), "stride")];
  }
  int64_t dim() const { return impl().ndim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return impl().numel; }
  int64_t storage_offset() const { return impl().offset; }
  DType dtype() const { return impl().dtype; }
  DType scalar_type() const { return impl().dtype; }
  Device device() const { return impl().device(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_contiguous() const { return impl().contiguous; }
  /// Whether this tensor was made by a view op of another (narrow, transpose, x[i], ...) and
  /// shares its elements; detach() and from_blob make no view, as PyTorch's is_view().
  bool is_view() const { return static_cast<bool>(impl().view_of); }
  bool is_same_size(const BasicTensor& o) const { return sizes() == o.sizes(); }
  bool is_floating_point() const { return ember::is_floating(dtype()); }
  int64_t element_size() const { return itemsize(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  /// The value of a one-element tensor as a condition (libtorch's is_nonzero): 0, -0 and false
  /// are false, NaN true; any other count of elements is an error.
  bool is_nonzero() const;
  /// The version of the storage, bumped by every in-place write (shared by views).
  uint32_t version() const { return impl().storage->version.load(std::memory_order_relaxed); }
  bool is_same(const BasicTensor& o) const { return impl_.get() == o.impl_.get(); }
  Impl& impl() const {
    EMBER_CHECK(impl_, "[tensor] use of an undefined tensor");
    return *impl_;
  }
  const ImplRef& impl_ref() const { return impl_; }
  int use_count() const { return impl_.use_count(); }

  /// Pointer to the first element; T must match dtype(). CPU tensors only.
  template <class T>
  T* data_ptr() const {
    EMBER_CHECK(dtype_of_v<T> == dtype(), "[data_ptr] requested {} from a {} tensor", dtype_of_v<T>, dtype());
    return static_cast<T*>(impl().data());
  }
  /// Untyped pointer to the first element, as libtorch's data_ptr() (raw_data() is the same).
  void* data_ptr() const { return impl().data(); }
  void* raw_data() const { return impl().data(); }

  /// Typed element access for CPU tensors: `auto a = t.accessor<float, 2>(); a[i][j] = 1;`.
  /// Not on a temporary: the accessor points into the tensor's memory and shape (as libtorch,
  /// which deletes `accessor() &&`), and a freed block is reused by the next tensor.
  template <class T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;
  template <class T, size_t N>
  TensorAccessor<T, N> accessor() const& {
    EMBER_CHECK(dim() == static_cast<int64_t>(N), "[accessor] tensor of shape {} has rank {}, not {}", sizes(), dim(), N);
    EMBER_CHECK(is_cpu(), "[accessor] needs a CPU tensor, got one on {}", device());
    return TensorAccessor<T, N>(data_ptr<T>(), sizes().data(), strides().data());
  }

  /// The single value of a one-element tensor, converted to T; as a Scalar when T is not
  /// given (libtorch's `x.item().toFloat()`).
  template <class T = Scalar>
  T item() const;

  // ---- views ----------------------------------------------------------------------------------
  BasicTensor view(const Shape& shape) const { return vop(ops::ViewKind::View, shape); }
  BasicTensor reshape(const Shape& shape) const;
  template <SingleDim I>
  BasicTensor view(I size) const { return view(Shape{static_cast<int64_t>(size)}); }
  template <SingleDim I>
  BasicTensor reshape(I size) const { return reshape(Shape{static_cast<int64_t>(size)}); }
  BasicTensor view_as(const BasicTensor& o) const { return view(o.sizes()); }
  BasicTensor reshape_as(const BasicTensor& o) const { return reshape(o.sizes()); }
  BasicTensor transpose(int64_t d0, int64_t d1) const;
  BasicTensor t() const;
  BasicTensor mT() const { return transpose(-2, -1); }
  BasicTensor permute(const Shape& dims) const { return vop(ops::ViewKind::Permute, dims); }
  BasicTensor expand(const Shape& sizes) const { return vop(ops::ViewKind::Expand, sizes); }
  template <SingleDim I>
  BasicTensor expand(I size) const { return expand(Shape{static_cast<int64_t>(size)}); }
  BasicTensor expand_as(const BasicTensor& o) const { return expand(o.sizes()); }
  /// The sum of this tensor down to `shape`, which must expand to this tensor's shape: the
  /// gradient of expand (ops/shape_ops.hpp).
  BasicTensor sum_to_size(const Shape& shape) const;
  BasicTensor squeeze() const {
    ops::ViewOp v{ops::ViewKind::Squeeze};
    v.all_dims = true;
    return apply(v);
  }
  BasicTensor squeeze(int64_t d) const {
    ops::ViewOp v{ops::ViewKind::Squeeze};
    v.dim = d;
    return apply(v);
  }
  BasicTensor unsqueeze(int64_t d) const {
    ops::ViewOp v{ops::ViewKind::Unsqueeze};
    v.dim = d;
    return apply(v);
  }
  BasicTensor flatten(int64_t start = 0, int64_t end = -1) const;
  // Shape changes in place (ops/inplace_view_ops.hpp, which <ember/ember.hpp> includes):
  // every handle to this tensor sees the new shape; under autograd the tensor's history
  // goes through the view's backward.
  BasicTensor& squeeze_();
  BasicTensor& squeeze_(int64_t d);
  BasicTensor& unsqueeze_(int64_t d);
  BasicTensor& transpose_(int64_t d0, int64_t d1);
  BasicTensor& swapdims_(int64_t a, int64_t b) { return transpose_(a, b); }
  BasicTensor& swapaxes_(int64_t a, int64_t b) { return transpose_(a, b); }
  BasicTensor& t_();
  BasicTensor& as_strided_(const Shape& sizes, const Shape& strides, std::optional<int64_t> offset = {});
  /// The shape `sizes`, contiguous, over this tensor's storage, which grows (keeping its bytes)
  /// when too small; new elements are uninitialised. Refused for tensors that require grad
  /// and for user memory (from_blob) that would have to grow.
  BasicTensor& resize_(const Shape& sizes);
  BasicTensor& resize_as_(const BasicTensor& o) { return resize_(o.sizes()); }
  /// Makes this tensor use `o`'s elements (storage, shape, dtype, device) and keep its own
  /// autograd identity (requires_grad, .grad, hooks), as libtorch's set_data and Python's
  /// `x.data = o`. Refused for tensors with a history (their history would not match). Unlike
  /// libtorch's, the version counter is then o's (Ember keeps it in the storage).
  void set_data(const BasicTensor& o);
  BasicTensor unflatten(int64_t d, const Shape& sizes) const;
  BasicTensor narrow(int64_t d, int64_t start, int64_t length) const {
    ops::ViewOp v{ops::ViewKind::Narrow};
    v.dim = d, v.start = start, v.length = length;
    return apply(v);
  }
  BasicTensor select(int64_t d, int64_t index) const {
    ops::ViewOp v{ops::ViewKind::Select};
    v.dim = d, v.start = index;
    return apply(v);
  }
  /// Elements start, start + step, ... before stop along dim d, as libtorch's x.slice(dim,
  /// start, end, step): bounds count from the end when negative and are clamped to the size;
  /// an unset bound is the start or the end.
  BasicTensor slice(int64_t d = 0, std::optional<int64_t> start = std::nullopt,
                    std::optional<int64_t> stop = std::nullopt, int64_t step = 1) const {
    ops::ViewOp v{ops::ViewKind::Slice};
    v.dim = d, v.start = start.value_or(Slice::kNone), v.length = stop.value_or(Slice::kNone), v.step = step;
    return apply(v);
  }
  /// `offset`: the storage offset in elements (default: this tensor's).
  BasicTensor as_strided(const Shape& sizes, const Shape& strides, std::optional<int64_t> offset = {}) const {
    ops::ViewOp v{ops::ViewKind::AsStrided, sizes, strides};
    v.start = offset ? *offset : impl().offset;
    return apply(v);
  }
  BasicTensor diagonal(int64_t offset = 0, int64_t d0 = 0, int64_t d1 = 1) const {
    ops::ViewOp v{ops::ViewKind::Diagonal};
    v.start = offset, v.dim = d0, v.length = d1;
    return apply(v);
  }
  /// Basic indexing with integers, slices, None and Ellipsis: a view. With index tensors
  /// among the entries (x.index({Slice(), idx})), advanced indexing as PyTorch's: a copy.
  BasicTensor index(std::initializer_list<TensorIndex> idx) const { return index(std::span(idx.begin(), idx.size())); }
  BasicTensor index(std::span<const TensorIndex> idx) const;
  /// Assigns through an index expression: t.index_put_({Slice(), 0}, 1.0), and with index
  /// tensors, t.index_put_({Slice(), idx}, v).
  BasicTensor& index_put_(std::initializer_list<TensorIndex> idx, Scalar v) {
    return index_put_(std::span(idx.begin(), idx.size()), v);
  }
  BasicTensor& index_put_(std::initializer_list<TensorIndex> idx, const BasicTensor& v) {
    return index_put_(std::span(idx.begin(), idx.size()), v);
  }
  BasicTensor& index_put_(std::span<const TensorIndex> idx, Scalar v);
  BasicTensor& index_put_(std::span<const TensorIndex> idx, const BasicTensor& v);
  /// Writes values at the positions of index tensors (i64 or bool masks), in place:
  /// buffer.index_put_({slots}, batch) as in libtorch; accumulate adds (repeated positions
  /// accumulate too). Without autograd involvement (NoGradGuard, or no tensor requiring grad)
  /// it writes into this tensor directly; a recorded call computes the new value out of place
  /// and copies it back (Note [In-place ops and autograd]).
  BasicTensor& index_put_(const std::vector<BasicTensor>& indices, const BasicTensor& values, bool accumulate = false);
  BasicTensor& index_put_(const std::vector<BasicTensor>& indices, Scalar v);
  /// Advanced indexing with index tensors (i64) or masks (bool), one per leading dim, as
  /// ember::index: x.index({mask}), x.index({rows, cols}). A copy, not a view.
  BasicTensor index(const std::vector<BasicTensor>& indices) const;
  BasicTensor operator[](int64_t i) const { return select(0, i); }
  /// x[idx] with an index tensor (i64) or mask (bool), as libtorch's: x.index({idx}).
  BasicTensor operator[](const BasicTensor& idx) const { return index(std::vector<BasicTensor>{idx}); }

  // ---- copies and conversions -----------------------------------------------------------------
  BasicTensor contiguous() const { return is_contiguous() ? *this : clone(); }
  BasicTensor clone() const;
  BasicTensor to(DType t) const;
  BasicTensor to(Device d) const;
  BasicTensor to(Device d, DType t) const { return to(d).to(t); }
  /// libtorch's flags: `copy` gives a new tensor even when neither dtype nor device changes;
  /// `non_blocking` lets a copy return before it finishes, which Ember's copies (synchronous)
  /// always satisfy, so it changes nothing here.
  BasicTensor to(DType t, bool non_blocking, bool copy = false) const { return to(device(), t, non_blocking, copy); }
  BasicTensor to(Device d, bool non_blocking, bool copy = false) const { return to(d, dtype(), non_blocking, copy); }
  BasicTensor to(Device d, DType t, bool /*non_blocking*/, bool copy = false) const {
    return copy && d == device() && t == dtype() ? clone() : to(d, t);
  }
  BasicTensor type_as(const BasicTensor& o) const { return to(o.dtype()); }
  /// To o's device and dtype.
  BasicTensor to(const BasicTensor& o) const { return to(o.device(), o.dtype()); }
  /// To the device and dtype `o` names (each kept when `o` leaves it unset).
  BasicTensor to(const TensorOptions& o) const {
    EMBER_CHECK(!o.requires_grad(), "[to] options with requires_grad set are refused (as libtorch); use "
                                        "requires_grad_() on the result");
    return to(o.device_or(device()), o.dtype_or(dtype()));
  }
  /// This tensor's dtype and device, for factories: zeros({3}, x.options()).
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  BasicTensor cpu() const { return to(kCPU); }
  BasicTensor half() const { return to(DType::F16); }
  BasicTensor bfloat16() const { return to(DType::BF16); }
  BasicTensor cuda(int index = 0) const { return to(Device::cuda(index)); }
  BasicTensor& copy_(const BasicTensor& src);
  BasicTensor& fill_(Scalar v);
  BasicTensor& zero_() { return fill_(0); }
  // Random fills in place, from the global generator (manual_seed) or the thread's
  // GeneratorGuard generator (core/generator.hpp). Defined in
  // core/random_ops.hpp, which <ember/ember.hpp> includes: a file that includes only the core
  // headers and calls these must include it too.
  BasicTensor& uniform_(double from = 0, double to = 1);
  BasicTensor& normal_(double mean = 0, double std = 1);
  BasicTensor& bernoulli_(double p = 0.5);
  BasicTensor& bernoulli_(const BasicTensor& p);
  BasicTensor& exponential_(double lambd = 1);
  BasicTensor& log_normal_(double mean = 1, double std = 2);
  BasicTensor& cauchy_(double median = 0, double sigma = 1);
  BasicTensor& geometric_(double p);
  BasicTensor& random_(int64_t from, int64_t to);
  BasicTensor& random_(int64_t to);
  // Linear algebra as libtorch's methods. Defined in linalg.hpp, which <ember/ember.hpp>
  // includes (ember::linalg has the full set: solve, eigh, lstsq, ...).
  BasicTensor inverse() const;
  BasicTensor det() const;
  BasicTensor logdet() const;
  std::tuple<BasicTensor, BasicTensor> slogdet() const;
  BasicTensor cholesky(bool upper = false) const;
  BasicTensor cholesky_solve(const BasicTensor& factor, bool upper = false) const;
  BasicTensor cholesky_inverse(bool upper = false) const;
  BasicTensor pinverse(double rcond = 1e-15) const;
  BasicTensor matrix_exp() const;
  BasicTensor matrix_power(int64_t n) const;
  std::tuple<BasicTensor, BasicTensor> triangular_solve(const BasicTensor& a, bool upper = true,
                                                        bool transpose = false, bool unitriangular = false) const;
  std::tuple<BasicTensor, BasicTensor> qr(bool some = true) const;
  std::tuple<BasicTensor, BasicTensor> geqrf() const;  // linalg/householder.hpp
  BasicTensor orgqr(const BasicTensor& tau) const;
  BasicTensor ormqr(const BasicTensor& tau, const BasicTensor& other, bool left = true, bool transpose = false) const;
  std::tuple<BasicTensor, BasicTensor, BasicTensor> svd(bool some = true, bool compute_uv = true) const;

  // ---- elementwise (out of place, in place) ---------------------------------------------------
#define EMBER_UNARY_OP(E, n, r)                                                                       \
  BasicTensor n() const { return unary(ops::UnaryOp::E, ops::default_params(ops::UnaryOp::E)); }     \
  BasicTensor& n##_() { return unary_inplace(ops::UnaryOp::E, ops::default_params(ops::UnaryOp::E)); }
#include <ember/ops/unary_list.def>
#undef EMBER_UNARY_OP
  BasicTensor leaky_relu(double slope) const { return unary(ops::UnaryOp::LeakyRelu, {slope}); }
  BasicTensor elu(double alpha) const { return unary(ops::UnaryOp::Elu, {alpha}); }
  BasicTensor celu(double alpha) const { return unary(ops::UnaryOp::Celu, {alpha}); }
  BasicTensor logit(double eps) const { return unary(ops::UnaryOp::Logit, {eps}); }
  BasicTensor softplus(double beta, double threshold = 20.0) const {
    return unary(ops::UnaryOp::Softplus, {beta, threshold});
  }
  BasicTensor hardtanh(double lo, double hi) const { return unary(ops::UnaryOp::Hardtanh, {lo, hi}); }
  /// psi^(n)(x), the n-th derivative of digamma (polygamma(0) is digamma), as torch.polygamma.
  BasicTensor polygamma(int64_t n) const { return unary(ops::UnaryOp::Digamma, {static_cast<double>(n)}); }
  BasicTensor& polygamma_(int64_t n) { return unary_inplace(ops::UnaryOp::Digamma, {static_cast<double>(n)}); }
  /// The multivariate log-gamma function of dimension p (torch.mvlgamma); ops/gamma_ops.hpp.
  BasicTensor mvlgamma(int64_t p) const;
  BasicTensor& mvlgamma_(int64_t p);
  // ops/special_ops.hpp: composites with libtorch's names.
  BasicTensor deg2rad() const;
  BasicTensor rad2deg() const;
  BasicTensor positive() const;
  BasicTensor sgn() const;
  BasicTensor& sgn_();
  BasicTensor float_power(const BasicTensor& exponent) const;
  BasicTensor float_power(Scalar exponent) const;
  /// In place: this tensor must be f64 (the result's dtype), as PyTorch's.
  BasicTensor& float_power_(const BasicTensor& exponent);
  BasicTensor& float_power_(Scalar exponent);
  BasicTensor ldexp(const BasicTensor& e) const;
  BasicTensor& ldexp_(const BasicTensor& e);
  // ops/integer_math.hpp (which <ember/ember.hpp> includes).
  BasicTensor gcd(const BasicTensor& o) const;
  BasicTensor lcm(const BasicTensor& o) const;
  BasicTensor& gcd_(const BasicTensor& o);
  BasicTensor& lcm_(const BasicTensor& o);
  std::pair<BasicTensor, BasicTensor> frexp() const;
  BasicTensor nextafter(const BasicTensor& o) const;
  BasicTensor& nextafter_(const BasicTensor& o);
  BasicTensor true_divide(const BasicTensor& o) const;
  // ops/incomplete_gamma.hpp: P(this, x) and Q(this, x).
  BasicTensor igamma(const BasicTensor& x) const;
  BasicTensor igammac(const BasicTensor& x) const;
  BasicTensor& igamma_(const BasicTensor& x);
  BasicTensor& igammac_(const BasicTensor& x);
  // Method forms of free functions, as libtorch's Tensor has them (defined beside each:
  // ops/order_statistics.hpp, ops/counting.hpp, ops/set_ops.hpp, ops/functions.hpp).
  BasicTensor nanmean(const Shape& dims = {}, bool keepdim = false) const;
  BasicTensor nanmedian() const;
  std::pair<BasicTensor, BasicTensor> nanmedian(int64_t dim, bool keepdim = false) const;
  std::pair<BasicTensor, BasicTensor> aminmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  BasicTensor quantile(double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                       std::string_view interpolation = "linear") const;
  BasicTensor quantile(const BasicTensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                       std::string_view interpolation = "linear") const;
  BasicTensor nanquantile(double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                          std::string_view interpolation = "linear") const;
  BasicTensor nanquantile(const BasicTensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                          std::string_view interpolation = "linear") const;
  BasicTensor bincount(const BasicTensor& weights = {}, int64_t minlength = 0) const;
  BasicTensor histc(int64_t bins = 100, double min = 0, double max = 0) const;
  std::tuple<BasicTensor, BasicTensor, BasicTensor> unique_consecutive(bool return_inverse = false,
                                                                       bool return_counts = false,
                                                                       std::optional<int64_t> dim = std::nullopt) const;
  BasicTensor msort() const;
  // Comparisons with a tolerance (core/random_ops.hpp).
  /// The same shape and equal elements (NaN equals nothing), as torch::equal.
  bool equal(const BasicTensor& o) const;
  bool allclose(const BasicTensor& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  BasicTensor isclose(const BasicTensor& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  /// narrow(dim, start, length) as a new tensor (contiguous; PyTorch's keeps a dense input's
  /// strides) of its own memory (torch.narrow_copy).
  BasicTensor narrow_copy(int64_t dim, int64_t start, int64_t length) const {
    return narrow(dim, start, length).clone();
  }
  // In place with options (nn modules' inplace flag).
  BasicTensor& leaky_relu_(double slope) { return unary_inplace(ops::UnaryOp::LeakyRelu, {slope}); }
  BasicTensor& elu_(double alpha) { return unary_inplace(ops::UnaryOp::Elu, {alpha}); }
  BasicTensor& celu_(double alpha) { return unary_inplace(ops::UnaryOp::Celu, {alpha}); }
  BasicTensor& hardtanh_(double lo, double hi) { return unary_inplace(ops::UnaryOp::Hardtanh, {lo, hi}); }
  BasicTensor gelu(bool tanh_approx) const { return tanh_approx ? gelu_tanh() : gelu(); }
  BasicTensor clamp(std::optional<Scalar> lo, std::optional<Scalar> hi = std::nullopt) const {
    // The result type counts the bounds, as PyTorch's: an integer tensor with a floating
    // bound clamps in the default float type, a bool one with integer bounds in i64.
    const DType t = clamp_result_type(lo, hi);
    if (t != dtype()) return to(t).clamp(lo, hi);
    return unary(ops::UnaryOp::Clamp, clamp_params(lo, hi));
  }
  BasicTensor& clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi = std::nullopt) {
    EMBER_CHECK(clamp_result_type(lo, hi) == dtype(), "[clamp_] the result type {} cannot be written in place into a {} tensor",
                clamp_result_type(lo, hi), dtype());
    return unary_inplace(ops::UnaryOp::Clamp, clamp_params(lo, hi));
  }
  BasicTensor clamp_min(Scalar lo) const { return clamp(lo, std::nullopt); }
  BasicTensor clamp_max(Scalar hi) const { return clamp(std::nullopt, hi); }
  /// min(max(x, lo), hi), NaN where x or a bound is NaN, with PyTorch 2's gradients: to the
  /// side that gives the value (hi when lo > hi), shared where x ties a bound of an ordered
  /// pair, kept by a NaN x (ops::ClampTensors, autograd/derivatives.hpp).
  BasicTensor clamp(const BasicTensor& lo, const BasicTensor& hi) const;
  BasicTensor nan_to_num(double nan, std::optional<double> posinf = {}, std::optional<double> neginf = {}) const;
  BasicTensor round(int64_t decimals) const;

#define EMBER_BINARY_OP(E, n, r)                                                                      \
  BasicTensor n(const BasicTensor& o) const { return binary(ops::BinaryOp::E, o); }                  \
  BasicTensor n(Scalar o) const { return binary(ops::BinaryOp::E, scalar_like(o)); }                 \
  BasicTensor& n##_(const BasicTensor& o) { return binary_inplace(ops::BinaryOp::E, o); }            \
  BasicTensor& n##_(Scalar o) { return binary_inplace(ops::BinaryOp::E, scalar_like(o)); }
#include <ember/ops/binary_list.def>
#undef EMBER_BINARY_OP
  BasicTensor add(const BasicTensor& o, Scalar alpha) const { return add(alpha_scaled(o, alpha, "add")); }
  BasicTensor sub(const BasicTensor& o, Scalar alpha) const { return sub(alpha_scaled(o, alpha, "sub")); }
  BasicTensor& add_(const BasicTensor& o, Scalar alpha) { return add_(alpha_scaled(o, alpha, "add_")); }
  BasicTensor& sub_(const BasicTensor& o, Scalar alpha) { return sub_(alpha_scaled(o, alpha, "sub_")); }
  BasicTensor div(const BasicTensor& o, const std::string& rounding_mode) const;
  BasicTensor div(Scalar o, const std::string& rounding_mode) const { return div(scalar_like(o), rounding_mode); }
  /// In place with a rounding mode: the in-place binary ops themselves (autograd records them
  /// as in-place ops, as div_(o)).
  BasicTensor& div_(const BasicTensor& o, const std::string& rounding_mode) {
    return binary_inplace(division(rounding_mode, "div_"), o);
  }
  BasicTensor& div_(Scalar o, const std::string& rounding_mode) { return div_(scalar_like(o), rounding_mode); }
  // libtorch's alias spellings (ops/alias_list.def): x.arccos() is x.acos(), x.less(y) x.lt(y).
#define EMBER_UNARY_ALIAS(alias, target)          \
  BasicTensor alias() const { return target(); } \
  BasicTensor& alias##_() { return target##_(); }
#define EMBER_BINARY_ALIAS(alias, target)                                      \
  BasicTensor alias(const BasicTensor& o) const { return target(o); }          \
  BasicTensor alias(Scalar o) const { return target(o); }                      \
  BasicTensor& alias##_(const BasicTensor& o) { return target##_(o); }         \
  BasicTensor& alias##_(Scalar o) { return target##_(o); }
#include <ember/ops/alias_list.def>
#undef EMBER_BINARY_ALIAS
#undef EMBER_UNARY_ALIAS
  BasicTensor subtract(const BasicTensor& o, Scalar alpha) const { return sub(o, alpha); }
  BasicTensor subtract(Scalar o, Scalar alpha) const { return sub(scalar_like(o), alpha); }
  BasicTensor& subtract_(const BasicTensor& o, Scalar alpha) { return sub_(o, alpha); }
  BasicTensor& subtract_(Scalar o, Scalar alpha) { return sub_(scalar_like(o), alpha); }
  BasicTensor divide(const BasicTensor& o, const std::string& rounding_mode) const { return div(o, rounding_mode); }
  BasicTensor divide(Scalar o, const std::string& rounding_mode) const { return div(o, rounding_mode); }
  BasicTensor& divide_(const BasicTensor& o, const std::string& rounding_mode) { return div_(o, rounding_mode); }
  BasicTensor& divide_(Scalar o, const std::string& rounding_mode) { return div_(o, rounding_mode); }
  /// start + weight (end - start) for |weight| < 0.5, else end - (end - start)(1 - weight), as
  /// PyTorch: exact at both ends. Floating tensors of one dtype.
  BasicTensor lerp(const BasicTensor& end, const BasicTensor& weight) const;
  BasicTensor lerp(const BasicTensor& end, Scalar weight) const {
    check_lerp(end, nullptr);
    const double w = weight.to_double();
    BasicTensor diff = end.sub(*this);
    return std::abs(w) < 0.5 ? add(diff.mul(w)) : end.sub(diff.mul(1.0 - w));
  }
  /// x + value * t1 * t2; on integer tensors value is cast to the tensor's type first (PyTorch).
  BasicTensor addcmul(const BasicTensor& t1, const BasicTensor& t2, Scalar value = 1) const {
    if (!is_floating(promote_types(dtype(), promote_types(t1.dtype(), t2.dtype()))) && value.is_floating())
      value = Scalar(static_cast<int64_t>(value.to_double()));
    return add(t1.mul(t2).mul(value));
  }
  BasicTensor addcdiv(const BasicTensor& t1, const BasicTensor& t2, Scalar value = 1) const {
    EMBER_CHECK(is_floating(promote_types(t1.dtype(), t2.dtype())),
                "[addcdiv] integer division of {} by {} is not supported (PyTorch neither); use floating tensors",
                t1.dtype(), t2.dtype());
    return add(t1.div(t2).mul(value));
  }
  // In-place forms of the composites above, as libtorch's (hand-written optimisers use them):
  // the result, computed out of place, must keep this tensor's shape and fit its dtype.
  BasicTensor& addcmul_(const BasicTensor& t1, const BasicTensor& t2, Scalar value = 1) {
    return assign_result(addcmul(t1, t2, value), "addcmul_");
  }
  BasicTensor& addcdiv_(const BasicTensor& t1, const BasicTensor& t2, Scalar value = 1) {
    return assign_result(addcdiv(t1, t2, value), "addcdiv_");
  }
  BasicTensor& lerp_(const BasicTensor& end, const BasicTensor& weight) {
    return assign_result(input_for_inplace(end, weight).lerp(end, weight), "lerp_");
  }
  BasicTensor& lerp_(const BasicTensor& end, Scalar weight) { return assign_result(lerp(end, weight), "lerp_"); }
  BasicTensor& clamp_min_(Scalar lo) { return clamp_(lo, std::nullopt); }
  BasicTensor& clamp_max_(Scalar hi) { return clamp_(std::nullopt, hi); }
  /// NumPy's name for clamp.
  BasicTensor clip(std::optional<Scalar> lo, std::optional<Scalar> hi = std::nullopt) const { return clamp(lo, hi); }
  BasicTensor& clip_(std::optional<Scalar> lo, std::optional<Scalar> hi = std::nullopt) { return clamp_(lo, hi); }
  BasicTensor where(const BasicTensor& cond, const BasicTensor& other) const;
  BasicTensor masked_fill(const BasicTensor& mask, Scalar v) const;

  // ---- reductions -----------------------------------------------------------------------------
#define EMBER_REDUCE_OP(E, n, r)                                                                      \
  BasicTensor n() const { return reduce(ops::ReduceOp::E, {}, false); }                              \
  BasicTensor n(const Shape& dims, bool keepdim = false) const { return reduce(ops::ReduceOp::E, dims, keepdim); } \
  template <SingleDim I>                                                                              \
  BasicTensor n(I dim, bool keepdim = false) const {                                                  \
    return reduce(ops::ReduceOp::E, {static_cast<int64_t>(dim)}, keepdim);                            \
  }
#include <ember/ops/reduce_list.def>
#undef EMBER_REDUCE_OP
  BasicTensor sum(const Shape& dims, bool keepdim, DType t) const;
  template <SingleDim I>
  BasicTensor sum(I dim, bool keepdim, DType t) const { return sum(Shape{static_cast<int64_t>(dim)}, keepdim, t); }
  BasicTensor max() const { return amax(); }
  BasicTensor min() const { return amin(); }
  std::pair<BasicTensor, BasicTensor> max(int64_t d, bool keepdim = false) const {
    return arg(detail::ArgReduceOp::Max, d, keepdim, true);
  }
  std::pair<BasicTensor, BasicTensor> min(int64_t d, bool keepdim = false) const {
    return arg(detail::ArgReduceOp::Min, d, keepdim, true);
  }
  BasicTensor argmax(std::optional<int64_t> d = {}, bool keepdim = false) const;
  BasicTensor argmin(std::optional<int64_t> d = {}, bool keepdim = false) const;
  BasicTensor var(const Shape& dims = {}, double correction = 1, bool keepdim = false) const;
  BasicTensor std(const Shape& dims = {}, double correction = 1, bool keepdim = false) const;
  std::pair<BasicTensor, BasicTensor> var_mean(const Shape& dims = {}, double correction = 1,
                                               bool keepdim = false) const;
  BasicTensor logsumexp(const Shape& dims, bool keepdim = false) const;
  // One dim, as libtorch's x.var(1) or x.std(1, /*unbiased=*/false) (a bool correction is 0 or 1).
  template <SingleDim I>
  BasicTensor var(I dim, double correction = 1, bool keepdim = false) const {
    return var(Shape{static_cast<int64_t>(dim)}, correction, keepdim);
  }
  template <SingleDim I>
  BasicTensor std(I dim, double correction = 1, bool keepdim = false) const {
    return std(Shape{static_cast<int64_t>(dim)}, correction, keepdim);
  }
  template <SingleDim I>
  std::pair<BasicTensor, BasicTensor> var_mean(I dim, double correction = 1, bool keepdim = false) const {
    return var_mean(Shape{static_cast<int64_t>(dim)}, correction, keepdim);
  }
  // Over every element, as libtorch's x.var(/*unbiased=*/false). Templates so that a braced
  // dim list, x.var({1}), still means dims and never converts to the bool.
  template <std::same_as<bool> B>
  BasicTensor var(B unbiased) const {
    return var(Shape{}, unbiased ? 1.0 : 0.0);
  }
  template <std::same_as<bool> B>
  BasicTensor std(B unbiased) const {
    return std(Shape{}, unbiased ? 1.0 : 0.0);
  }
  template <SingleDim I>
  BasicTensor logsumexp(I dim, bool keepdim = false) const {
    return logsumexp(Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  /// p-norm over dims (all if empty): p = 1, 2, inf (INFINITY) or any other p > 0.
  BasicTensor norm(double p = 2, const Shape& dims = {}, bool keepdim = false) const;
  template <SingleDim I>
  BasicTensor norm(double p, I dim, bool keepdim = false) const {
    return norm(p, Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  /// norm("fro"): the Frobenius norm (the 2-norm of all selected elements).
  BasicTensor norm(std::string_view p, const Shape& dims = {}, bool keepdim = false) const {
    EMBER_CHECK(p == "fro", "[norm] p must be a number or \"fro\", got \"{}\"", p);
    return norm2(dims, keepdim);
  }
  BasicTensor softmax(int64_t d) const;
  BasicTensor log_softmax(int64_t d) const;
  /// Computed in `t` (this tensor converted first), as libtorch's dtype argument.
  BasicTensor softmax(int64_t d, DType t) const { return to(t).softmax(d); }
  BasicTensor log_softmax(int64_t d, DType t) const { return to(t).log_softmax(d); }
  BasicTensor cumsum(int64_t d) const { return cum(detail::CumOp::Sum, d).first; }
  BasicTensor cumprod(int64_t d) const { return cum(detail::CumOp::Prod, d).first; }
  BasicTensor& cumsum_(int64_t d) { return assign_result(cumsum(d), "cumsum_"); }
  BasicTensor& cumprod_(int64_t d) { return assign_result(input_for_inplace().cumprod(d), "cumprod_"); }
  BasicTensor logcumsumexp(int64_t d) const { return cum(detail::CumOp::Logsumexp, d).first; }
  std::pair<BasicTensor, BasicTensor> cummax(int64_t d) const { return cum(detail::CumOp::Max, d); }
  std::pair<BasicTensor, BasicTensor> cummin(int64_t d) const { return cum(detail::CumOp::Min, d); }

  // ---- shape and indexing ops as methods, as libtorch's (defined in ops/shape_ops.hpp) --------
  std::vector<BasicTensor> split(int64_t size, int64_t dim = 0) const;
  std::vector<BasicTensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  // ops/split_stack_ops.hpp
  std::vector<BasicTensor> tensor_split(int64_t sections, int64_t dim = 0) const;
  std::vector<BasicTensor> tensor_split(const std::vector<int64_t>& indices, int64_t dim = 0) const;
  BasicTensor ravel() const;
  std::vector<BasicTensor> chunk(int64_t chunks, int64_t dim = 0) const;
  /// libtorch's unsafe_ forms: the same views (Ember's autograd needs no view tracking to skip).
  std::vector<BasicTensor> unsafe_chunk(int64_t chunks, int64_t dim = 0) const { return chunk(chunks, dim); }
  std::vector<BasicTensor> unsafe_split(int64_t size, int64_t dim = 0) const { return split(size, dim); }
  std::vector<BasicTensor> unbind(int64_t dim = 0) const;
  BasicTensor index_select(int64_t dim, const BasicTensor& index) const;
  BasicTensor gather(int64_t dim, const BasicTensor& index) const;
  BasicTensor scatter(int64_t dim, const BasicTensor& index, const BasicTensor& src) const;
  BasicTensor scatter(int64_t dim, const BasicTensor& index, Scalar value) const;
  BasicTensor scatter_add(int64_t dim, const BasicTensor& index, const BasicTensor& src) const;
  BasicTensor index_add(int64_t dim, const BasicTensor& index, const BasicTensor& src, Scalar alpha = 1) const;
  BasicTensor index_copy(int64_t dim, const BasicTensor& index, const BasicTensor& src) const;
  BasicTensor masked_select(const BasicTensor& mask) const;
  BasicTensor& masked_fill_(const BasicTensor& mask, Scalar v) { return copy_(masked_fill(mask, v)); }
  // index_fill, masked_scatter, the tensor-valued masked_fill and the in-place index ops are
  // defined in ops/inplace_index_ops.hpp.
  BasicTensor masked_fill(const BasicTensor& mask, const BasicTensor& value) const;
  BasicTensor& masked_fill_(const BasicTensor& mask, const BasicTensor& value);
  BasicTensor masked_scatter(const BasicTensor& mask, const BasicTensor& source) const;
  BasicTensor& masked_scatter_(const BasicTensor& mask, const BasicTensor& source);
  BasicTensor index_fill(int64_t dim, const BasicTensor& index, Scalar value) const;
  BasicTensor index_fill(int64_t dim, const BasicTensor& index, const BasicTensor& value) const;
  BasicTensor& index_fill_(int64_t dim, const BasicTensor& index, Scalar value);
  BasicTensor& index_fill_(int64_t dim, const BasicTensor& index, const BasicTensor& value);
  BasicTensor scatter_reduce(int64_t dim, const BasicTensor& index, const BasicTensor& src, std::string_view reduce,
                             bool include_self = true) const;
  BasicTensor& scatter_(int64_t dim, const BasicTensor& index, const BasicTensor& src);
  BasicTensor& scatter_(int64_t dim, const BasicTensor& index, Scalar value);
  BasicTensor& scatter_add_(int64_t dim, const BasicTensor& index, const BasicTensor& src);
  BasicTensor& scatter_reduce_(int64_t dim, const BasicTensor& index, const BasicTensor& src, std::string_view reduce,
                               bool include_self = true);
  BasicTensor& index_add_(int64_t dim, const BasicTensor& index, const BasicTensor& src, Scalar alpha = 1);
  BasicTensor& index_copy_(int64_t dim, const BasicTensor& index, const BasicTensor& src);
  /// Reduces source's slices along dim into this tensor's slices index[i] ("prod", "mean",
  /// "amax" or "amin"; include_self: this tensor's values take part), as torch.index_reduce.
  /// Defined in ops/inplace_index_ops.hpp.
  BasicTensor index_reduce(int64_t dim, const BasicTensor& index, const BasicTensor& source, std::string_view reduce,
                           bool include_self = true) const;
  BasicTensor& index_reduce_(int64_t dim, const BasicTensor& index, const BasicTensor& source,
                             std::string_view reduce, bool include_self = true);
  /// Each slice along dim whose p-norm exceeds maxnorm scaled to norm maxnorm (torch.renorm).
  BasicTensor renorm(double p, int64_t dim, double maxnorm) const;
  BasicTensor& renorm_(double p, int64_t dim, double maxnorm);
  /// The elements at `index` (i64, any shape; negative from the end) of this tensor read as
  /// 1-d in row-major order; the result has index's shape (torch.take).
  BasicTensor take(const BasicTensor& index) const;
  /// Writes source's elements at `index` of this tensor read as 1-d (torch.put_); with
  /// accumulate, adds them (repeated indices add up). Defined in ops/inplace_index_ops.hpp.
  BasicTensor put(const BasicTensor& index, const BasicTensor& source, bool accumulate = false) const;
  BasicTensor& put_(const BasicTensor& index, const BasicTensor& source, bool accumulate = false);
  BasicTensor nonzero() const;
  std::pair<BasicTensor, BasicTensor> sort(int64_t dim = -1, bool descending = false) const;
  BasicTensor argsort(int64_t dim = -1, bool descending = false) const;
  std::pair<BasicTensor, BasicTensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  std::pair<BasicTensor, BasicTensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  BasicTensor flip(const Shape& dims) const;
  template <SingleDim I>
  BasicTensor flip(I dim) const { return flip(Shape{static_cast<int64_t>(dim)}); }
  BasicTensor roll(int64_t shift, std::optional<int64_t> dim = {}) const;
  BasicTensor repeat(const Shape& repeats) const;
  BasicTensor tile(const Shape& reps) const;
  template <SingleDim I>
  BasicTensor repeat(I repeats) const { return repeat(Shape{static_cast<int64_t>(repeats)}); }
  template <SingleDim I>
  BasicTensor tile(I reps) const { return tile(Shape{static_cast<int64_t>(reps)}); }
  BasicTensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = {}) const;
  BasicTensor tril(int64_t k = 0) const;
  BasicTensor triu(int64_t k = 0) const;
  BasicTensor& tril_(int64_t k = 0) { return assign_result(tril(k), "tril_"); }
  BasicTensor& triu_(int64_t k = 0) { return assign_result(triu(k), "triu_"); }
  /// Fills the main diagonal (every dim indexed alike) with v, as PyTorch's fill_diagonal_:
  /// 2 or more dims, all of one size beyond 2; `wrap` continues a tall matrix's diagonal
  /// every cols + 1 rows (NumPy's fill_diagonal). Defined in ops/shape_ops.hpp.
  BasicTensor& fill_diagonal_(Scalar v, bool wrap = false);
  // Defined in ops/rearrange_ops.hpp, ops/matrix_builders.hpp and ops/differences.hpp.
  BasicTensor movedim(const Shape& source, const Shape& destination) const;
  BasicTensor movedim(int64_t source, int64_t destination) const;
  BasicTensor moveaxis(const Shape& source, const Shape& destination) const { return movedim(source, destination); }
  BasicTensor moveaxis(int64_t source, int64_t destination) const { return movedim(source, destination); }
  BasicTensor swapaxes(int64_t a, int64_t b) const { return transpose(a, b); }
  BasicTensor swapdims(int64_t a, int64_t b) const { return transpose(a, b); }
  BasicTensor rot90(int64_t k = 1, const Shape& dims = {0, 1}) const;
  BasicTensor roll(const Shape& shifts, const Shape& dims) const;
  BasicTensor take_along_dim(const BasicTensor& indices, std::optional<int64_t> dim = std::nullopt) const;
  BasicTensor repeat_interleave(const BasicTensor& repeats, std::optional<int64_t> dim = std::nullopt,
                                std::optional<int64_t> output_size = std::nullopt) const;
  BasicTensor unfold(int64_t dim, int64_t size, int64_t step) const;
  BasicTensor kron(const BasicTensor& o) const;
  BasicTensor trace() const;
  BasicTensor diag_embed(int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1) const;
  BasicTensor diagflat(int64_t offset = 0) const;
  BasicTensor diff(int64_t n = 1, int64_t dim = -1, const BasicTensor& prepend = {}, const BasicTensor& append = {}) const;
  BasicTensor cov(int64_t correction = 1, const BasicTensor& fweights = {}, const BasicTensor& aweights = {}) const;
  BasicTensor corrcoef() const;
  BasicTensor diag(int64_t k = 0) const;
  /// Factories with this tensor's dtype and device (libtorch's new_zeros and friends).
  BasicTensor new_empty(const Shape& sizes) const;
  BasicTensor new_zeros(const Shape& sizes) const;
  BasicTensor new_ones(const Shape& sizes) const;
  BasicTensor new_full(const Shape& sizes, Scalar v) const;
  template <SingleDim I>
  BasicTensor new_empty(I size) const { return new_empty(Shape{static_cast<int64_t>(size)}); }
  template <SingleDim I>
  BasicTensor new_zeros(I size) const { return new_zeros(Shape{static_cast<int64_t>(size)}); }
  template <SingleDim I>
  BasicTensor new_ones(I size) const { return new_ones(Shape{static_cast<int64_t>(size)}); }
  template <SingleDim I>
  BasicTensor new_full(I size, Scalar v) const { return new_full(Shape{static_cast<int64_t>(size)}, v); }

  // ---- linear algebra -------------------------------------------------------------------------
  BasicTensor matmul(const BasicTensor& o) const { return mat(ops::MatmulKind::Matmul, o); }
  BasicTensor mm(const BasicTensor& o) const { return mat(ops::MatmulKind::Mm, o); }
  BasicTensor bmm(const BasicTensor& o) const { return mat(ops::MatmulKind::Bmm, o); }
  BasicTensor dot(const BasicTensor& o) const { return mat(ops::MatmulKind::Dot, o); }
  /// this (n) times o (m) as an (n, m) product. PyTorch defines it as an elementwise product,
  /// so mixed dtypes promote and bools multiply (logical and) as they do for mul; one
  /// non-bool dtype runs as a GEMM of inner size 1 (the same products).
  BasicTensor outer(const BasicTensor& o) const {
    if (defined() && o.defined()) {
      EMBER_CHECK(dim() == 1 && o.dim() == 1, "[outer] expects 1-d tensors, got shapes {} and {}", sizes(), o.sizes());
      if (dtype() != o.dtype() || dtype() == DType::Bool) return unsqueeze(1).mul(o);
    }
    return mat(ops::MatmulKind::Outer, o);
  }
  /// outer's old name (torch.ger).
  BasicTensor ger(const BasicTensor& o) const { return outer(o); }
  BasicTensor addmm(const BasicTensor& m1, const BasicTensor& m2, Scalar beta = 1, Scalar alpha = 1) const;
  BasicTensor baddbmm(const BasicTensor& b1, const BasicTensor& b2, Scalar beta = 1, Scalar alpha = 1) const;
  BasicTensor& addmm_(const BasicTensor& m1, const BasicTensor& m2, Scalar beta = 1, Scalar alpha = 1) {
    return assign_result(addmm(m1, m2, beta, alpha), "addmm_");
  }
  BasicTensor& baddbmm_(const BasicTensor& b1, const BasicTensor& b2, Scalar beta = 1, Scalar alpha = 1) {
    return assign_result(baddbmm(b1, b2, beta, alpha), "baddbmm_");
  }
  // ops/vector_products.hpp: composites of addmm, matmul and dot.
  BasicTensor mv(const BasicTensor& vec) const;
  BasicTensor addmv(const BasicTensor& mat, const BasicTensor& vec, Scalar beta = 1, Scalar alpha = 1) const;
  BasicTensor addr(const BasicTensor& vec1, const BasicTensor& vec2, Scalar beta = 1, Scalar alpha = 1) const;
  BasicTensor addbmm(const BasicTensor& batch1, const BasicTensor& batch2, Scalar beta = 1, Scalar alpha = 1) const;
  BasicTensor vdot(const BasicTensor& o) const;

  // ---- autograd (defined in autograd/tensor_autograd.hpp; policies with the Autograd layer) ----
  /// Marks a floating-point leaf as needing .grad() (or unmarks it).
  BasicTensor& requires_grad_(bool on = true);
  bool requires_grad() const;
  /// libtorch's spelling of requires_grad_(on).
  BasicTensor& set_requires_grad(bool on) { return requires_grad_(on); }
  /// The accumulated gradient of a leaf (or of a non-leaf after retain_grad()); undefined if none.
  BasicTensor grad() const;
  /// Replaces .grad() (undefined clears it).
  void set_grad(const BasicTensor& g);
  /// Clears .grad(): set_to_none drops it, otherwise it is zeroed in place.
  void zero_grad(bool set_to_none = true);
  /// The node that produced this tensor (null for leaves), e.g. its name() is "MulBackward".
  std::shared_ptr<autograd::Node> grad_fn() const;
  bool is_leaf() const;
  /// Keep .grad() of this non-leaf after backward.
  void retain_grad();
  bool retains_grad() const;
  /// The same values (shared storage) without history.
  BasicTensor detach() const;
  BasicTensor& detach_();
  /// libtorch's x.data(): detach(). One difference: an in-place write through it moves the
  /// storage's version (under NoGradGuard too; only InferenceModeGuard storage has none), so a
  /// tensor saved for backward notices, where PyTorch's .data hides the write from autograd.
  BasicTensor data() const { return detach(); }
  /// Gradients of this tensor with respect to the leaves of its graph, accumulated into their
  /// .grad(). `grad` defaults to ones for one-element tensors; retain_graph defaults to
  /// create_graph. With `inputs`, only those tensors' .grad() is accumulated (non-leaves
  /// among them retain_grad()), and only the part of the graph leading to them runs.
  void backward(const BasicTensor& grad = {}, std::optional<bool> retain_graph = {}, bool create_graph = false,
                const std::vector<BasicTensor>& inputs = {}) const;
  /// Calls hook(grad) when this tensor's gradient is computed; a hook returning a tensor
  /// replaces the gradient (of the same shape, dtype and device). Returns a handle for
  /// remove_hook, as libtorch's.
  template <class F>
  unsigned register_hook(F&& hook) const;
  /// Removes the hook register_hook returned `handle` for; later backward passes skip it.
  void remove_hook(unsigned handle) const;

  // ---- operators ------------------------------------------------------------------------------
  BasicTensor operator-() const { return neg(); }
  BasicTensor operator~() const { return dtype() == DType::Bool ? logical_not() : bitwise_not(); }
  BasicTensor& operator+=(const BasicTensor& o) { return add_(o); }
  BasicTensor& operator-=(const BasicTensor& o) { return sub_(o); }
  BasicTensor& operator*=(const BasicTensor& o) { return mul_(o); }
  BasicTensor& operator/=(const BasicTensor& o) { return div_(o); }
  BasicTensor& operator+=(Scalar o) { return add_(o); }
  BasicTensor& operator-=(Scalar o) { return sub_(o); }
  BasicTensor& operator*=(Scalar o) { return mul_(o); }
  BasicTensor& operator/=(Scalar o) { return div_(o); }

  /// A 0-d tensor holding `v`, on this tensor's device, marked as a wrapped number so that
  /// it promotes like a Python scalar.
  BasicTensor scalar_like(Scalar v) const;

  /// Runs descriptor `op` through the policy on this tensor's impl and wraps the result.
  template <class Op>
  BasicTensor apply(const Op& op) const;
  static BasicTensor wrap(ImplRef r) { return BasicTensor(std::move(r)); }

 private:
  BasicTensor vop(ops::ViewKind k, const Shape& s) const { return apply(ops::ViewOp{k, s}); }
  BasicTensor unary(ops::UnaryOp op, ops::UnaryParams p = {}) const;
  BasicTensor& unary_inplace(ops::UnaryOp op, ops::UnaryParams p = {});
  /// The division a rounding mode names: "trunc", "floor", or none (empty, or "true").
  static ops::BinaryOp division(const std::string& rounding_mode, const char* op) {
    if (rounding_mode == "trunc") return ops::BinaryOp::DivTrunc;
    if (rounding_mode == "floor") return ops::BinaryOp::DivFloor;
    EMBER_CHECK(rounding_mode.empty() || rounding_mode == "true",
                "[{}] rounding_mode must be 'trunc', 'floor' or empty, got '{}'", op, rounding_mode);
    return ops::BinaryOp::Div;
  }
  BasicTensor binary(ops::BinaryOp op, const BasicTensor& o) const;
  /// Writes an in-place composite's result, computed out of place, into this tensor (a
  /// recorded copy_ under autograd), after PyTorch's checks: the shape must not grow by
  /// broadcasting, and the result type must cast to this dtype (no float into an integer
  /// tensor, nothing but bool into a bool one).
  BasicTensor& assign_result(const BasicTensor& value, const char* op) {
    EMBER_CHECK(value.sizes() == sizes(), "[{}] the result of shape {} cannot be written in place into a tensor of shape {}",
                op, value.sizes(), sizes());
    EMBER_CHECK(can_cast(value.dtype(), dtype()),
                "[{}] result type {} cannot be written in place into a tensor of dtype {}", op, value.dtype(), dtype());
    return copy_(value);
  }
  /// This tensor as the input of an in-place composite whose backward reads that input
  /// (cumprod, lerp's weight gradient): a copy while anything involved requires grad (the
  /// input is saved then, even when only another operand requires grad), since the write-back
  /// moves the storage version the saved input is checked against (PyTorch saves the
  /// original too).
  template <class... Others>
  BasicTensor input_for_inplace(const Others&... others) const {
    if constexpr (detail::has_layer<autograd::Autograd, typename P::layers>::value)
      if (requires_grad() || (others.requires_grad() || ...)) return clone();
    return *this;
  }
  BasicTensor& binary_inplace(ops::BinaryOp op, const BasicTensor& o);
  /// o * alpha for add/sub, with PyTorch's rules: no floating alpha for an integer result, and
  /// for a bool result alpha is a bool (any non-zero: o itself).
  BasicTensor alpha_scaled(const BasicTensor& o, Scalar alpha, const char* op) const {
    const DType r = promote_types(dtype(), o.dtype());
    EMBER_CHECK(is_floating(r) || !alpha.is_floating(),
                "[{}] alpha must not be a floating point number for {} tensors, got {}", op, r, alpha.to_double());
    if (r == DType::Bool) return alpha.to_double() != 0 ? o : o.logical_and(o.logical_not());
    return alpha.to_double() == 1.0 ? o : o.mul(alpha);
  }
  void check_lerp(const BasicTensor& end, const BasicTensor* weight) const {
    EMBER_CHECK(is_floating_point() && end.dtype() == dtype() && (!weight || weight->dtype() == dtype()),
                "[lerp] expects floating tensors of one dtype, got {} and {}{}", dtype(), end.dtype(),
                weight ? EMBER_FORMAT(" (weight {})", weight->dtype()) : std::string());
  }
  DType clamp_result_type(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) const {
    auto any = [&](bool (Scalar::*kind)() const) { return (lo && ((*lo).*kind)()) || (hi && ((*hi).*kind)()); };
    if (!is_floating_point() && any(&Scalar::is_floating)) return kDefaultFloat;
    if (dtype() == DType::Bool && any(&Scalar::is_integral)) return DType::I64;
    return dtype();
  }
  ops::UnaryParams clamp_params(std::optional<Scalar> lo, std::optional<Scalar> hi) const {
    if (!is_floating_point() && dtype() != DType::Bool) {  // e.g. clamp(min=-200) of an i8 tensor
      if (lo) detail::check_scalar_fits(*lo, dtype(), "clamp");
      if (hi) detail::check_scalar_fits(*hi, dtype(), "clamp");
    }
    ops::UnaryParams p;
    p.has_a = lo.has_value();
    p.has_b = hi.has_value();
    p.a = lo ? lo->to_double() : 0.0;
    p.b = hi ? hi->to_double() : 0.0;
    // Integer tensors are clamped only by integer or bool bounds (a float bound makes the
    // result float: clamp_result_type).
    p.ia = lo && !lo->is_floating() ? lo->to_int() : 0;
    p.ib = hi && !hi->is_floating() ? hi->to_int() : 0;
    return p;
  }
  BasicTensor reduce(ops::ReduceOp op, const Shape& dims, bool keepdim) const;
  std::pair<BasicTensor, BasicTensor> arg(detail::ArgReduceOp op, int64_t d, bool keepdim, bool values) const;
  std::pair<BasicTensor, BasicTensor> cum(detail::CumOp op, int64_t d) const;
  BasicTensor mat(ops::MatmulKind k, const BasicTensor& o) const;

  ImplRef impl_;
};

}  // namespace ember

// The members that enter the layer chain, and their DefaultPolicy instances in the library.
#include <ember/core/tensor_entries.hpp>
