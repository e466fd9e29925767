// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11): element i of a fill at
// counter `offset` depends only on (seed, offset + i), so results never depend on threads.

#include <ember/dispatch/kernels.hpp>
#include <ember/runtime/threading.hpp>

#include <cmath>

namespace ember::detail {
namespace {

struct Philox {
  static void round(uint32_t c[4], uint32_t k[2]) {
    constexpr uint64_t M0 = 0xD2511F53, M1 = 0xCD9E8D57;
    uint64_t p0 = M0 * c[0], p1 = M1 * c[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    uint32_t n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0, c[1] = lo1, c[2] = n2, c[3] = lo0;
  }
  /// Four 32-bit outputs for counter `ctr` under `seed`.
  static void block(uint64_t seed, uint64_t ctr, uint32_t out[4]) {
    uint32_t c[4] = {static_cast<uint32_t>(ctr), static_cast<uint32_t>(ctr >> 32), 0, 0};
    uint32_t k[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    for (int r = 0; r < 10; ++r) {
      round(c, k);
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    for (int i = 0; i < 4; ++i) out[i] = c[i];
  }
};

inline double u01(uint32_t a, uint32_t b) {  // 53-bit uniform in [0, 1)
  uint64_t v = (static_cast<uint64_t>(a) << 21) ^ (b >> 11);
  return static_cast<double>(v & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// The largest f16/bf16 value below `bound` (sign-magnitude: one step of the bits).
template <class T>
T below(float bound) {
  T r = T(bound);
  while (static_cast<float>(r) >= bound) {
    uint16_t b = r.bits;
    b = b == 0 ? uint16_t{0x8001} : (b & 0x8000) ? uint16_t(b + 1) : uint16_t(b - 1);
    r = T::from_bits(b);
  }
  return r;
}

}  // namespace

void Kernels<Cpu>::fill_random(TensorImpl& dst, bool normal, double p0, double p1, uint64_t seed,
                               uint64_t offset) {
  EMBER_CHECK(dst.contiguous, "[random] fills contiguous tensors only");
  int64_t n = dst.numel;
  visit_dtype(dst.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      T* p = static_cast<T*>(dst.data());
      // Element i uses Philox block (offset + i): two of its words for a uniform, all four
      // for a normal (Box-Muller, one of the pair).
      parallel_for(n, 16384, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          uint32_t w[4];
          Philox::block(seed, offset + static_cast<uint64_t>(i), w);
          double v;
          if (normal) {
            double u1 = u01(w[0], w[1]), u2 = u01(w[2], w[3]);
            v = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(6.283185307179586 * u2);
            v = p0 + p1 * v;
          } else {
            v = p0 + (p1 - p0) * u01(w[0], w[1]);
            if (v >= p1) v = std::nextafter(p1, p0);  // keep [lo, hi) after rounding
          }
          if constexpr (std::is_same_v<T, double>) {
            p[i] = v;
          } else {
            float f = static_cast<float>(v);
            // Rounding to float may reach the open upper bound; step back inside [lo, hi).
            if (!normal && f >= static_cast<float>(p1)) f = std::nextafter(static_cast<float>(p1), static_cast<float>(p0));
            T r = static_cast<T>(f);
            // And so may rounding to f16/bf16 (rand gave 1.0 about once in 500 bf16 draws): the
            // largest value of T below the bound instead.
            if constexpr (!std::is_same_v<T, float>)
              if (!normal && static_cast<float>(r) >= static_cast<float>(p1)) r = below<T>(static_cast<float>(p1));
            p[i] = r;
          }
        }
      });
    } else {
      EMBER_FAIL("[random] needs a floating tensor, got {}", dst.dtype);
    }
  });
}

}  // namespace ember::detail
