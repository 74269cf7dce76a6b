// Requests the cache line holding an address ahead of its use, so that the cache misses of
// independent rows (a batch's random examples, the optimizer state of its random rows) overlap
// instead of waiting one after another. Nothing is computed from it: results are the same bits
// with or without it.
//
//   for (std::size_t r = 0; r < count; ++r) {
//     if (r + 8 < count) prefetch_line(state + rows[r + 8] * stride);
//     update(state + rows[r] * stride);
//   }
//
// Natively both are a prefetch hint. wasm has no prefetch instruction: prefetch_line does nothing
// there, and prefetch_line_or_load loads the byte and drops it (volatile, so the compiler keeps
// it; the engine keeps it too, as a wasm load may trap). Such a load waits to retire where a hint
// does not, so it only pays in a short loop issuing many requests (a batch's examples: ~+10% on
// workload (a)); for Adam's rows on workload (c) it cost ~15% eight rows ahead and gained nothing
// in groups of eight requested a group ahead, so Adam uses prefetch_line.
#pragma once

namespace fedleaf::core {

inline void prefetch_line([[maybe_unused]] const void* p) {
#if !defined(__wasm__)
  __builtin_prefetch(p);
#endif
}

inline void prefetch_line_or_load(const void* p) {
#if defined(__wasm__)
  static_cast<void>(*static_cast<const volatile char*>(p));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace fedleaf::core
