#pragma once
// The plain-loop 2-D convolution the convolution tests compare against (test_conv.cpp,
// test_conv_algorithms.cpp), computed in f64.

#include <ember/ember.hpp>

#include <cstdint>

namespace ember::test {

/// out[n][o][i][j] = b[o] + sum_{c,u,v} x[n][g C/G + c][i s - ph + u d][j s - pw + v d] w[o][c][u][v]
/// (g = o's group; inputs outside the image read 0), in f64 whatever the inputs' dtype.
inline Tensor ref_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t s, int64_t ph, int64_t pw,
                         int64_t d = 1, int64_t groups = 1) {
  Tensor X = x.detach().to(DType::F64).contiguous(), W = w.detach().to(DType::F64).contiguous();
  const int64_t n = X.size(0), h = X.size(2), wd = X.size(3), o = W.size(0), cg = W.size(1), kh = W.size(2),
                kw = W.size(3);
  const int64_t oh = (h + 2 * ph - d * (kh - 1) - 1) / s + 1, ow = (wd + 2 * pw - d * (kw - 1) - 1) / s + 1;
  Tensor B = b.defined() ? b.detach().to(DType::F64).contiguous() : Tensor();
  Tensor out = zeros({n, o, oh, ow}, DType::F64);
  auto xa = X.accessor<double, 4>();
  auto wa = W.accessor<double, 4>();
  auto oa = out.accessor<double, 4>();
  const int64_t opg = o / groups;
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t oi = 0; oi < o; ++oi)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = B.defined() ? B[oi].item<double>() : 0.0;
          const int64_t g = oi / opg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t u = 0; u < kh; ++u)
              for (int64_t v = 0; v < kw; ++v) {
                const int64_t y = i * s - ph + u * d, xx = j * s - pw + v * d;
                if (y >= 0 && y < h && xx >= 0 && xx < wd) acc += xa[ni][g * cg + ci][y][xx] * wa[oi][ci][u][v];
              }
          oa[ni][oi][i][j] = acc;
        }
  return out;
}

}  // namespace ember::test
