#pragma once
// The Winograd F(4x4, 3x3) transforms (winograd4.cpp), called by winograd.cpp's
// winograd_transform for tilings with m = 4. Included inside a per-ISA build.

#include <ember/ops/winograd_tiles.hpp>

#include <cstdint>

/// "These iterations are independent": GCC's ivdep, clang's assume_safety (clang warns about
/// the GCC spelling and would ignore it).
#if defined(__clang__)
#define EMBER_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define EMBER_IVDEP _Pragma("GCC ivdep")
#endif

namespace ember::cpu::EMBER_CPU_ARCH {

/// One (sample, channel) plane's transform `kind` for t.m == 4, between its image and its
/// tiles (the plane's first tile of position 0; positions xs apart). T is float or double.
template <class T>
void winograd4_plane(ops::WinogradTransform kind, const ops::WinogradTiles& t, T* image, T* tiles, int64_t xs);

}  // namespace ember::cpu::EMBER_CPU_ARCH
