#pragma once
/// Every overridable default of Ember, each behind #ifndef so a build can set it.

#ifndef EMBER_MAX_INLINE_DIMS
/// Shapes and strides up to this rank live inline in the tensor (no heap).
#define EMBER_MAX_INLINE_DIMS 8
#endif

#ifndef EMBER_ALIGNMENT
/// Byte alignment of every storage block handed out by Ember's allocators.
#define EMBER_ALIGNMENT 64
#endif

#ifndef EMBER_GRAIN_SIZE
/// Elements below which an elementwise op never splits work across threads.
#define EMBER_GRAIN_SIZE 32768
#endif

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define EMBER_HAS_EXCEPTIONS 1
#else
#define EMBER_HAS_EXCEPTIONS 0
#endif

#if EMBER_HAS_EXCEPTIONS && defined(EMBER_NO_EXCEPTIONS)
#undef EMBER_HAS_EXCEPTIONS
#define EMBER_HAS_EXCEPTIONS 0
#endif

#define EMBER_LIKELY(x) __builtin_expect(!!(x), 1)
#define EMBER_UNLIKELY(x) __builtin_expect(!!(x), 0)
