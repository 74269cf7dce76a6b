#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/aggregation/accumulator/huge_page_reserve.h"

namespace fedleaf {
namespace {

TEST_CASE("reserve_on_huge_pages_grows_capacity_and_keeps_the_elements_like_reserve") {
  // Small and large (several 2 MiB windows, so the advice applies on Linux) arrays alike.
  for (const std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{3} << 20}) {
    std::vector<std::uint64_t> v(n % 1000 + 3);
    std::iota(v.begin(), v.end(), std::uint64_t{7});
    const std::vector<std::uint64_t> before = v;
    const std::size_t wanted = before.size() + n;
    core::reserve_on_huge_pages(v, wanted);
    CHECK(v == before);
    CHECK(v.capacity() >= wanted);
    const std::uint64_t* data = v.data();
    v.resize(wanted, 1);  // within capacity: no reallocation
    CHECK(v.data() == data);
    CHECK(std::vector<std::uint64_t>(v.begin(), v.begin() + before.size()) == before);
    CHECK(std::accumulate(v.begin() + before.size(), v.end(), std::uint64_t{0}) == n);
  }
}

TEST_CASE("reserve_on_huge_pages_keeps_the_buffer_when_the_capacity_already_suffices") {
  std::vector<double> v{1.0, -0.0, 2.5};
  v.reserve(100);
  const double* data = v.data();
  core::reserve_on_huge_pages(v, 50);
  CHECK(v.data() == data);
  CHECK(v == std::vector<double>{1.0, -0.0, 2.5});
}

TEST_CASE("advise_huge_pages_leaves_written_memory_as_it_was") {
  // An unaligned range of pages already written: the advice must not change their contents.
  std::vector<std::uint32_t> v((std::size_t{6} << 20) / sizeof(std::uint32_t));
  std::iota(v.begin(), v.end(), std::uint32_t{1});
  core::advise_huge_pages(v.data() + 3, (v.size() - 5) * sizeof(std::uint32_t));
  core::advise_huge_pages(v.data(), 0);
  std::uint32_t expected = 1;
  bool same = true;
  for (const std::uint32_t x : v) same &= x == expected++;
  CHECK(same);
}

}  // namespace
}  // namespace fedleaf
