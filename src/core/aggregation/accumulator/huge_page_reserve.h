// Reserving the accumulator's large arrays on transparent huge pages (Linux), before anything is
// written to them.
//
//   std::vector<double> sums;
//   reserve_on_huge_pages(sums, keys);   // like sums.reserve(keys)
//   sums.assign(keys, 0.0);              // no reallocation: the pages are faulted in as 2 MiB
//
// Why: a dense accumulator of 10^7 keys is 80 MB written in random order. On 4 KiB pages,
// faulting in and clearing them cost about as much as the whole fold (scripts/bench.sh
// aggregate), and every random store misses the TLB. With MADV_HUGEPAGE the kernel faults in
// 2 MiB at a time and a few hundred TLB entries cover the array. The advice never changes the
// contents; where it does not apply (other platforms, wasm, THP off, arrays without a whole
// 2 MiB-aligned window) this is plain reserve().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__) && !defined(__EMSCRIPTEN__)
#include <sys/mman.h>
#endif

namespace fedleaf::core {

// Advises the kernel to back the whole 2 MiB-aligned windows of [data, data + bytes) with huge
// pages. Effective only for pages not yet touched; a failed advice is ignored (it is a hint).
inline void advise_huge_pages(const void* data, std::size_t bytes) {
#if defined(__linux__) && !defined(__EMSCRIPTEN__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{1} << 21;
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t begin = (start + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t end = (start + bytes) & ~(kHuge - 1);
  // The window is formed from `data` itself (not cast back from an integer), so the compiler
  // keeps the pointer's provenance.
  if (end > begin) {
    auto* window = static_cast<char*>(const_cast<void*>(data)) + (begin - start);
    madvise(window, end - begin, MADV_HUGEPAGE);
  }
#else
  (void)data;
  (void)bytes;
#endif
}

// v.reserve(n), with the new buffer advised before the elements are moved into it. Strong
// guarantee like reserve(): on bad_alloc v is unchanged.
template <class T>
void reserve_on_huge_pages(std::vector<T>& v, std::size_t n) {
  if (v.capacity() >= n) return;
  std::vector<T> fresh;
  fresh.reserve(n);
  advise_huge_pages(fresh.data(), n * sizeof(T));
  fresh.insert(fresh.end(), v.begin(), v.end());
  v.swap(fresh);
}

}  // namespace fedleaf::core
