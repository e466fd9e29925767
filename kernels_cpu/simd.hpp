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
// AArch64 has the exact instructions (FDIV, FSQRT, FMLS), so this header supplies the kernels
// for xsimd 8 (other versions stop the build here until checked).
// xsimd's batch operators call kernel::div and kernel::sqrt by qualified name, which only
// sees overloads declared before the operators' definitions: the declarations below must
// precede every other xsimd header in the translation unit (the #error makes sure), and
// every translation unit that does float SIMD arithmetic must include this header, or two
// definitions of batch<float>::operator/ would differ.
#if defined(__aarch64__)
#if defined(XSIMD_HPP)
#error "kernels_cpu/simd.hpp must come before any other xsimd header (see its note)"
#endif
#include <xsimd/config/xsimd_config.hpp>  // the version only; declares no kernels
#if XSIMD_VERSION_MAJOR != 8
// Another xsimd may define these kernels itself (a redefinition) or still lack them.
#error "kernels_cpu/simd.hpp: check this xsimd's neon64 float div/sqrt and fnma/fnms, then adapt the note"
#endif
#include <arm_neon.h>

namespace xsimd {
template <class T, class A>
class batch;
struct neon64;
namespace kernel {
// For a neon64 argument these bind exactly, where xsimd's `requires_arch<neon>` and
// `requires_arch<generic>` overloads need a derived-to-base conversion: overload resolution
// picks these.
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
// z - x * y and -z - x * y, each with one rounding (FMLS; negating z is exact). Not
// -(x * y + z): that is -0 for x * y = +0, z = -0, where -x * y - z is +0.
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
  return vfmsq_f32(vnegq_f32(z), x, y);
}
template <class A>
inline batch<double, A> fnms(batch<double, A> const& x, batch<double, A> const& y, batch<double, A> const& z, neon64 const&) noexcept {
  return vfmsq_f64(vnegq_f64(z), x, y);
}
}  // namespace xsimd::kernel
#endif
