// PyTorch-style printing: tensor([[1.0000, 2.5000], [3.0000, 4.0000]]), summarised with
// "..." beyond 1000 elements, dtype shown unless f32/i64/bool, device unless cpu, then the
// caller's autograd note (requires_grad=True or grad_fn=<...>).

#include <ember/core/tensor_impl.hpp>

#include <fmt/format.h>

#include <cmath>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace ember::detail {
namespace {

constexpr int64_t kThreshold = 1000, kEdge = 3;
constexpr int kLineWidth = 80;

double load(const TensorImpl& t, int64_t off) {
  return visit_dtype(t.dtype, [&]<class T>() {
    const T* p = static_cast<const T*>(t.storage->data) + off;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<double>(static_cast<float>(*p));
    else return static_cast<double>(*p);
  });
}

/// An integer element in its own type (through double, int64 beyond 2^53 printed wrong).
std::string int_text(const TensorImpl& t, int64_t off) {
  return visit_dtype(t.dtype, [&]<class T>() -> std::string {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      return fmt::format("{}", static_cast<const T*>(t.storage->data)[off]);
    else
      return {};
  });
}

struct Formatter {
  bool floating = false, ints_only = true, sci = false;
  int width = 1;

  std::string fmt_one(double v, DType t) const {
    if (t == DType::Bool) return v != 0 ? "True" : "False";
    if (!floating) return fmt::format("{}", static_cast<int64_t>(v));
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci) return fmt::format("{:.4e}", v);
    if (ints_only) return fmt::format("{:.0f}.", v);
    return fmt::format("{:.4f}", v);
  }
};

/// The storage offsets of the elements printed, in order.
void collect(const TensorImpl& t, int64_t dim, int64_t off, bool summarize, std::vector<int64_t>& out) {
  if (dim == t.ndim()) {
    out.push_back(off);
    return;
  }
  int64_t n = t.sizes[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdge && i == kEdge) i = n - kEdge;
    collect(t, dim + 1, off + i * t.strides[dim], summarize, out);
  }
}

/// One element's text: integers in their own type, others through the formatter.
std::string text(const TensorImpl& t, const Formatter& f, int64_t off) {
  return is_integral(t.dtype, false) ? int_text(t, off) : f.fmt_one(load(t, off), t.dtype);
}

/// One element, right-aligned to the column width.
std::string element(const TensorImpl& t, const Formatter& f, int64_t off) {
  const std::string v = text(t, f, off);
  return std::string(static_cast<size_t>(std::max<int>(0, f.width - static_cast<int>(v.size()))), ' ') + v;
}

/// `indent`: the column of this block's '[' (7, after "tensor(", for the outermost).
void render(const TensorImpl& t, const Formatter& f, int64_t dim, int64_t off, bool summarize, int indent,
            std::string& s) {
  if (dim == t.ndim()) {  // a 0-d tensor
    s += element(t, f, off);
    return;
  }
  const int64_t n = t.sizes[dim];
  if (dim == t.ndim() - 1) {
    // A row: as many elements per line as fit in 80 columns, as PyTorch's; " ..." of a
    // summary is an element of its own ("2.,  ..., 998.").
    std::vector<std::string> items;
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdge && i == kEdge) {
        items.emplace_back(" ...");
        i = n - kEdge;
      }
      items.push_back(element(t, f, off + i * t.strides[dim]));
    }
    const size_t per_line = static_cast<size_t>(std::max(1, (kLineWidth - indent) / (f.width + 2)));
    s += '[';
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0) s += k % per_line == 0 ? ",\n" + std::string(static_cast<size_t>(indent + 1), ' ') : ", ";
      s += items[k];
    }
    s += ']';
    return;
  }
  // Blocks: separated by as many newlines as the dims below them, each starting at indent + 1.
  const std::string separator = "," + std::string(static_cast<size_t>(t.ndim() - dim - 1), '\n') +
                                std::string(static_cast<size_t>(indent + 1), ' ');
  s += '[';
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdge && i == kEdge) {
      s += "..." + separator;
      i = n - kEdge;
    }
    render(t, f, dim + 1, off + i * t.strides[dim], summarize, indent + 1, s);
    if (i + 1 < n) s += separator;
  }
  s += ']';
}

}  // namespace

std::string format_tensor(const TensorImpl& t, Device device, std::string_view extra) {
  std::string s = "tensor(";
  bool summarize = t.numel > kThreshold;
  std::vector<int64_t> offsets;
  if (t.numel > 0) collect(t, 0, t.offset, summarize, offsets);
  Formatter f;
  f.floating = is_floating(t.dtype);
  if (f.floating) {
    // PyTorch's rules: only the nonzero finite values choose the notation and the column width
    // (zeros, nan and inf fit in it or stick out). Whole numbers print as "3." unless their
    // range exceeds 1000 or one exceeds 1e8; other values use 4 decimals unless, also, one is
    // below 1e-4 in magnitude.
    std::vector<double> vals;
    for (int64_t off : offsets)
      if (double v = load(t, off); std::isfinite(v) && v != 0) vals.push_back(v);
    if (!vals.empty()) {
      double max_abs = 0, min_abs = INFINITY;
      for (double v : vals) {
        if (v != std::ceil(v)) f.ints_only = false;
        max_abs = std::max(max_abs, std::fabs(v));
        min_abs = std::min(min_abs, std::fabs(v));
      }
      f.sci = max_abs / min_abs > 1000 || max_abs > 1e8 || (!f.ints_only && min_abs < 1e-4);
      for (double v : vals) f.width = std::max<int>(f.width, static_cast<int>(f.fmt_one(v, t.dtype).size()));
    }
  } else {
    for (int64_t off : offsets) f.width = std::max<int>(f.width, static_cast<int>(text(t, f, off).size()));
  }
  if (t.numel == 0) {
    s += "[]";
  } else {
    render(t, f, 0, t.offset, summarize, 7, s);
  }
  // PyTorch's order: device, size, dtype, then autograd's note.
  if (!device.is_cpu()) s += fmt::format(", device='{}'", device);
  if (t.numel == 0 && t.ndim() != 1) s += ", size=" + t.sizes.str();
  if (t.dtype != DType::F32 && t.dtype != DType::I64 && t.dtype != DType::Bool)
    s += fmt::format(", dtype={}", dtype_name(t.dtype));
  else if (t.numel == 0 && t.dtype != DType::F32)
    s += fmt::format(", dtype={}", dtype_name(t.dtype));
  s += extra;
  return s + ")";
}

}  // namespace ember::detail

namespace ember {
std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }
std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }
}  // namespace ember
