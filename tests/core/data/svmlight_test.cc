#include <catch2/catch.hpp>

#include "core/data/svmlight.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

TEST_CASE("svmlight_one_based_lines_become_csr_rows", "[svmlight]") {
  const Dataset d =
      parse_svmlight("1 3:0.5 10:1\n-1 qid:4 2:2  # a comment\n\n# only comment\n+1\t1:1e-1\r\n");

  CHECK(d.size() == 3);
  CHECK(d.labels() == std::vector<std::int32_t>{1, 0, 1});
  CHECK(d.offsets() == std::vector<std::uint32_t>{0, 2, 3, 4});
  CHECK(d.global_ids() == std::vector<std::uint32_t>{2, 9, 1, 0});
  CHECK(d.weights() == std::vector<float>{0.5f, 1.f, 2.f, 0.1f});
  CHECK(d.num_features() == 10);
}

TEST_CASE("svmlight_zero_based_and_multiclass_labels", "[svmlight]") {
  SvmlightOptions opt;
  opt.index_base = 0;
  opt.num_features = 100;
  const Dataset d = parse_svmlight("2 0:1 7:3\n0.0 5:1", opt);
  CHECK(d.labels() == std::vector<std::int32_t>{2, 0});
  CHECK(d.global_ids() == std::vector<std::uint32_t>{0, 7, 5});
  CHECK(d.num_features() == 100);
}

TEST_CASE("svmlight_errors_name_the_line", "[svmlight]") {
  CHECK_THROWS_MATCHES(parse_svmlight("1 1:1\n1 2\n"), fedleaf::InvalidInput,
                       MessageContains("svmlight line 2: expected 'index:value', got '2'"));
  CHECK_THROWS_MATCHES(parse_svmlight("1 1:1\n\n1 x:1\n"), fedleaf::InvalidInput,
                       MessageContains("svmlight line 3: index 'x' is not an integer"));
  CHECK_THROWS_MATCHES(parse_svmlight("1 0:1\n"), fedleaf::InvalidInput,
                       MessageContains("svmlight line 1: index 0 is outside [1"));
  CHECK_THROWS_MATCHES(parse_svmlight("spam 1:1\n"), fedleaf::InvalidInput,
                       MessageContains("svmlight line 1: label 'spam' is not an integer"));
  CHECK_THROWS_MATCHES(parse_svmlight("0.5 1:1\n"), fedleaf::InvalidInput,
                       MessageContains("line 1: label '0.5' is not an integer"));
  CHECK_THROWS_MATCHES(parse_svmlight("-2 1:1\n"), fedleaf::InvalidInput,
                       MessageContains("line 1: label -2 is negative"));
  CHECK_THROWS_MATCHES(parse_svmlight("1 4:abc\n"), fedleaf::InvalidInput,
                       MessageContains("line 1: value 'abc' of index 4 is not a finite number"));
  CHECK_THROWS_MATCHES(parse_svmlight("1 4:inf\n"), fedleaf::InvalidInput,
                       MessageContains("not a finite number"));
  SvmlightOptions bounded;
  bounded.num_features = 5;
  CHECK_THROWS_MATCHES(parse_svmlight("1 1:1\n0 9:1\n", bounded), fedleaf::InvalidInput,
                       MessageContains("line 2: index 9 gives id 8, not below num_features 5"));
  SvmlightOptions bad_base;
  bad_base.index_base = 2;
  CHECK_THROWS_AS(parse_svmlight("1 1:1\n", bad_base), fedleaf::InvalidInput);
}
