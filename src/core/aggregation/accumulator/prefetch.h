// Cache hints for the fold and finalize loops, which touch keys in random order. They never
// change a result.
//
//   prefetch_for_write(sums + next_key);   // a few iterations before sums[next_key] += ...
#pragma once

namespace fedleaf::core {

// Hints the cache to load the line of `p` for writing; no effect on results.
inline void prefetch_for_write(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 1);
#else
  (void)p;
#endif
}

// Hints the cache to load the line of `p` for reading; no effect on results.
inline void prefetch_for_read(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0);
#else
  (void)p;
#endif
}

}  // namespace fedleaf::core
