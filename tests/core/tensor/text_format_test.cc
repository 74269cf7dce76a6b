#include "core/text/text_format.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <limits>

namespace fedleaf {

TEST_CASE("in_quotes_wraps_text_in_single_quotes") {
  CHECK(core::in_quotes("emb/weight") == "'emb/weight'");
  CHECK(core::in_quotes("") == "''");
}

// Regression: a NUL in a client's tensor name cut the message (a C string) short of its rule.
TEST_CASE("in_quotes_escapes_control_characters_quotes_and_backslashes") {
  CHECK(core::in_quotes(std::string("emb/weight\0zz", 13)) == "'emb/weight\\x00zz'");
  CHECK(core::in_quotes("a\nb\tc\x7f") == "'a\\x0ab\\x09c\\x7f'");
  CHECK(core::in_quotes("it's a\\b") == "'it\\'s a\\\\b'");
  CHECK(core::in_quotes("caf\xc3\xa9 \xff") == "'caf\xc3\xa9 \xff'");  // other bytes as they are
}

TEST_CASE("format_double_exact_reads_back_to_the_same_double") {
  for (double v : {0.1, 1.0 / 3.0, 6.02214076e23, -2.5e-300, std::numeric_limits<double>::max(),
                   std::numeric_limits<double>::denorm_min()}) {
    const std::string text = core::format_double_exact(v);
    CHECK(std::strtod(text.c_str(), nullptr) == v);
  }
}

TEST_CASE("format_decimal_keeps_nine_significant_digits") {
  CHECK(core::format_decimal(0.5) == "0.5");
  CHECK(core::format_decimal(1.0 / 3.0) == "0.333333333");
  const float f = 0.1f;
  CHECK(static_cast<float>(std::strtod(core::format_decimal(f).c_str(), nullptr)) == f);
}

}  // namespace fedleaf
