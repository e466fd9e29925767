#pragma once
// xsimd, as every kernel includes it. Include this instead of <xsimd/xsimd.hpp>.
//
// Note [Exact float arithmetic on 64-bit ARM]
// Debian 12's xsimd (8.1) lacks some 64-bit ARM (neon64) kernels, and what it falls back to
// is not the correctly rounded result Ember promises (as PyTorch's kernels give it):
// - float division and square root take the 32-bit ARM (neon) kernels: a reciprocal or
//   reciprocal square root estimate refined by two Newton steps, an ulp or more off
//   (x / 255 for x = 1 gave 0x1.0101p-8, not 0x1.010102p-8: to_tensor, Adam's sqrt, ...);
// - fnma and fnms (-x * y + z, -x * y - z) take the generic kernels, which round the product
//   before adding, so fmod's exact remainder (functors.hpp's fmod_batch) was wrong.
// AArch64 has the exact instructions (FDIV, FSQRT, FMLS), so this header supplies the kernels.
// xsimd's batch operators call kernel::div and kernel::sqrt by qualified name, which only
// sees overloads declared before the operators' definitions: the declarations below must
// precede every other xsimd header in the translation unit (the #error makes sure), and
// every translation unit that does float SIMD arithmetic must include this header, or two
// definitions of batch<float>::operator/ would differ.
#if defined(__aarch64__)
#if defined(XSIMD_HPP)
#error "kernels_cpu/simd.hpp must come before any other xsimd header (see its note)"
#endif
#include <arm_neon.h>

namespace xsimd {
template <class T, class A>
class batch;
struct neon64;
namespace kernel {
// More specialised than xsimd's `requires_arch<neon>` overloads, so overload resolution
// picks them for neon64 batches.
template <class A>
batch<float, A> div(batch<float, A> const& lhs, batch<float, A> const& rhs, neon64 const&) noexcept;
template <class A>
batch<float, A> sqrt(batch<float, A> const& x, neon64 const&) noexcept;
template <class A>
batch<float, A> fnma(batch<float, A> const& x, batch<float, A> const& y, batch<float, A> const& z, neon64 const&) noexcept;
template <class A>
batch<double, A> fnma(batch<double, A> const& x, batch<double, A> const& y, batch<double, A> const& z, neon64 const&) noexcept;
template <class A>
batch<float, A> fnms(batch<float, A> const& x, batch<float, A> const& y, batch<float, A> const& z, neon64 const&) noexcept;
template <class A>
batch<double, A> fnms(batch<double, A> const& x, batch<double, A> const& y, batch<double, A> const& z, neon64 const&) noexcept;
}  // namespace kernel
}  // namespace xsimd
#endif

#include <xsimd/xsimd.hpp>

#if defined(__aarch64__)
namespace xsimd::kernel {
template <class A>
inline batch<float, A> div(batch<float, A> const& lhs, batch<float, A> const& rhs, neon64 const&) noexcept {
  return vdivq_f32(lhs, rhs);
}
template <class A>
inline batch<float, A> sqrt(batch<float, A> const& x, neon64 const&) noexcept {
  return vsqrtq_f32(x);
}
// z - x * y with one rounding; -(x * y + z) is the same single rounding, negated.
template <class A>
inline batch<float, A> fnma(batch<float, A> const& x, batch<float, A> const& y, batch<float, A> const& z, neon64 const&) noexcept {
  return vfmsq_f32(z, x, y);
}
template <class A>
inline batch<double, A> fnma(batch<double, A> const& x, batch<double, A> const& y, batch<double, A> const& z, neon64 const&) noexcept {
  return vfmsq_f64(z, x, y);
}
template <class A>
inline batch<float, A> fnms(batch<float, A> const& x, batch<float, A> const& y, batch<float, A> const& z, neon64 const&) noexcept {
  return vnegq_f32(vfmaq_f32(z, x, y));
}
template <class A>
inline batch<double, A> fnms(batch<double, A> const& x, batch<double, A> const& y, batch<double, A> const& z, neon64 const&) noexcept {
  return vnegq_f64(vfmaq_f64(z, x, y));
}
}  // namespace xsimd::kernel
#endif
