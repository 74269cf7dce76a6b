#include "server/util/server_metrics.h"

#include <catch2/catch.hpp>

using fedleaf::server::ServerMetrics;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("observe_phase_renders_one_cumulative_histogram_per_phase", "[metrics]") {
  ServerMetrics metrics;
  metrics.observe_phase("close_encode", 0.003);
  metrics.observe_phase("close_encode", 0.2);
  metrics.observe_phase("fold", 0.00005);

  const std::string text = metrics.render(0, 0);

  CHECK(has_line(text, "# TYPE fedleaf_phase_seconds histogram"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_bucket{phase="close_encode",le="0.001"} 0)"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_bucket{phase="close_encode",le="0.005"} 1)"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_bucket{phase="close_encode",le="0.25"} 2)"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_bucket{phase="close_encode",le="+Inf"} 2)"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_sum{phase="close_encode"} 0.203)"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_count{phase="close_encode"} 2)"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_bucket{phase="fold",le="0.0001"} 1)"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_count{phase="fold"} 1)"));
}

TEST_CASE("a_phase_longer_than_every_bound_counts_only_in_the_infinite_bucket", "[metrics]") {
  ServerMetrics metrics;
  metrics.observe_phase("sync", 60);

  const std::string text = metrics.render(0, 0);

  CHECK(has_line(text, R"(fedleaf_phase_seconds_bucket{phase="sync",le="10"} 0)"));
  CHECK(has_line(text, R"(fedleaf_phase_seconds_bucket{phase="sync",le="+Inf"} 1)"));
}

TEST_CASE("no_phase_observed_renders_no_phase_series", "[metrics]") {
  CHECK(ServerMetrics().render(0, 0).find("fedleaf_phase_seconds_count") == std::string::npos);
}
