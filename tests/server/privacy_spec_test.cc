// The "privacy" section of a population spec: each field's rule, the refused combinations, and
// the rounds the budget allows.
#include "server/repository/privacy_spec.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/privacy/dp_ftrl_accountant.h"
#include "server/api/population_body.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {
namespace {

using nlohmann::json;
using test::MessageContains;

json privacy() {
  return {{"mechanism", "dp_ftrl_tree"},
          {"noise_multiplier", 2.0},
          {"clip_norm", 0.5},
          {"delta", 1e-6},
          {"max_epsilon", 30.0},
          {"max_participations", 3},
          {"min_separation", 2}};
}

json body(const json& section) {
  return {{"plan", {{"updates", json::object()}}},
          {"seed", 1},
          {"clients_per_round", 4},
          {"rounds", 10},
          {"privacy", section}};
}

PopulationSpec parse(const json& b) { return parse_population_body(b.dump()); }

double epsilon_of(const json& section, std::int64_t rounds, std::int64_t after) {
  const core::DpFtrlAccountant accountant({rounds,
                                           section["max_participations"].get<std::int64_t>(),
                                           section["min_separation"].get<std::int64_t>()});
  return accountant.epsilon(section["noise_multiplier"].get<double>(),
                            section["delta"].get<double>(), after);
}

}  // namespace

TEST_CASE("privacy_spec_is_parsed_and_stored_with_every_field_written_out", "[privacy]") {
  const PopulationSpec s = parse(body(privacy()));
  const PrivacySpec p = *privacy_spec_from_text(s.settings.privacy_json, "privacy");
  CHECK(p.noise_multiplier == 2.0);
  CHECK(p.clip_norm == 0.5);
  CHECK(p.delta == 1e-6);
  CHECK(p.max_epsilon == 30.0);
  CHECK(p.max_participations == 3);
  CHECK(p.min_separation == 2);
  CHECK(p.enrollments_per_token_per_hour == 1000);
  CHECK(json::parse(s.settings.privacy_json)["mechanism"] == "dp_ftrl_tree");
  CHECK(s.settings.rounds == 10);
  json with_rate = privacy();
  with_rate["enrollments_per_token_per_hour"] = 7;
  CHECK(privacy_spec_from_text(parse(body(with_rate)).settings.privacy_json, "p")
            ->enrollments_per_token_per_hour == 7);
  CHECK_FALSE(privacy_spec_from_text("", "p"));
  CHECK(parse_population_body(R"({"plan": {}, "seed": 1})").settings.privacy_json.empty());
}

TEST_CASE("privacy_spec_refuses_each_broken_rule_naming_the_field", "[privacy]") {
  const auto refused = [](const std::string& field, const json& value, const std::string& rule) {
    json section = privacy();
    if (value.is_null()) {
      section.erase(field);
    } else {
      section[field] = value;
    }
    INFO(field << " = " << value.dump());
    CHECK_THROWS_MATCHES(parse(body(section)), InvalidInput,
                         MessageContains("population.privacy." + field + ": " + rule));
  };
  refused("mechanism", nullptr, "required");
  refused("mechanism", "gaussian", "must be \"dp_ftrl_tree\"");
  for (const char* field : {"noise_multiplier", "clip_norm", "delta", "max_epsilon"}) {
    refused(field, nullptr, "required");
    refused(field, 0, "must be a finite number > 0");
    refused(field, -1, "must be a finite number > 0");
    refused(field, "1", "must be a finite number > 0");
  }
  refused("delta", 0.5, "must be a finite number > 0 and <= 0.1");
  refused("max_participations", nullptr, "required");
  refused("max_participations", 0, "must be an integer in [1, ");
  refused("max_participations", 1.5, "must be an integer in [1, ");
  refused("min_separation", nullptr, "required");
  refused("min_separation", -1, "must be an integer in [0, ");
  refused("enrollments_per_token_per_hour", 0, "must be an integer in [1, ");
  json unknown = privacy();
  unknown["epsilon"] = 1;
  CHECK_THROWS_MATCHES(parse(body(unknown)), InvalidInput,
                       MessageContains("population.privacy: unknown field 'epsilon'"));
  CHECK_THROWS_MATCHES(parse(body(json::array())), InvalidInput,
                       MessageContains("population.privacy: must be a JSON object"));
}

TEST_CASE("privacy_spec_refuses_buffered_populations_and_data_dependent_plan_rules", "[privacy]") {
  json buffered = body(privacy());
  buffered.erase("clients_per_round");
  buffered["mode"] = "buffered";
  buffered["buffer_size"] = 4;
  CHECK_THROWS_MATCHES(parse(buffered), InvalidInput,
                       MessageContains("population.privacy: buffered private populations are not "
                                       "supported (their privacy accounting is not carried)"));
  json over = body(privacy());
  over["over_selection"] = 1.3;
  CHECK_THROWS_MATCHES(parse(over), InvalidInput,
                       MessageContains("population.over_selection: a private population's round "
                                       "hands out exactly clients_per_round train tasks"));
  over["over_selection"] = 1;
  CHECK_NOTHROW(parse(over));
  json quantile = body(privacy());
  quantile["plan"]["updates"]["emb"] = {{"encoding", "row_sparse"},
                                        {"aggregator", "sum"},
                                        {"clip", {{"rms", 0.1}, {"quantile", 0.9}}}};
  CHECK_THROWS_MATCHES(parse(quantile), InvalidInput,
                       MessageContains("population.plan.updates['emb'].clip: an adaptive clip"));
  json withheld = body(privacy());
  withheld["plan"]["updates"]["emb"] = {{"encoding", "row_sparse"},
                                        {"aggregator", "mean_over_contributors"},
                                        {"min_contributors", 3}};
  CHECK_THROWS_MATCHES(
      parse(withheld), InvalidInput,
      MessageContains("population.plan.updates['emb'].min_contributors: row withholding"));
  json cap = body(privacy());
  cap["plan"]["max_examples_per_report"] = {{"initial", 100}, {"median_multiple", 2}};
  CHECK_THROWS_MATCHES(parse(cap), InvalidInput,
                       MessageContains("population.plan.max_examples_per_report: an adaptive"));
  json fixed = body(privacy());  // fixed rules read no data: allowed (and unused)
  fixed["plan"]["max_examples_per_report"] = 100;
  fixed["plan"]["updates"]["emb"] = {{"encoding", "row_sparse"},
                                     {"aggregator", "mean_over_contributors"},
                                     {"min_contributors", "off"},
                                     {"clip", {{"rms", 0.1}}}};
  CHECK_NOTHROW(parse(fixed));
}

TEST_CASE("privacy_spec_refuses_rounds_past_the_budget_with_the_epsilon_they_reach", "[privacy]") {
  json section = privacy();
  section["max_epsilon"] = 1.0;
  json b = body(section);
  b["rounds"] = 50;
  const double reached = epsilon_of(section, 50, 50);
  REQUIRE(reached > 1.0);
  CHECK_THROWS_MATCHES(parse(b), InvalidInput,
                       MessageContains("population.rounds: 50 rounds would reach epsilon"));
  CHECK_THROWS_MATCHES(parse(b), InvalidInput,
                       MessageContains("past population.privacy.max_epsilon 1"));
  char shown[64];
  std::snprintf(shown, sizeof shown, "%.15g", reached);
  CHECK_THROWS_MATCHES(parse(b), InvalidInput, MessageContains(shown));
}

TEST_CASE("privacy_spec_defaults_rounds_to_the_most_the_budget_allows", "[privacy]") {
  json section = privacy();
  section["max_epsilon"] = 20.0;
  json b = body(section);
  b.erase("rounds");
  const int rounds = parse(b).settings.rounds;
  REQUIRE(rounds >= 1);
  CHECK(epsilon_of(section, rounds, rounds) <= 20.0);
  CHECK(epsilon_of(section, rounds + 1, rounds + 1) > 20.0);
  // A budget no round fits names max_epsilon.
  section["max_epsilon"] = 1e-3;
  b["privacy"] = section;
  CHECK_THROWS_MATCHES(parse(b), InvalidInput,
                       MessageContains("population.privacy.max_epsilon: not even one round"));
  // A budget past the cap's epsilon: the cap (a run that long must say so).
  section["max_epsilon"] = 1e5;
  b["privacy"] = section;
  CHECK(parse(b).settings.rounds == kMaxDefaultPrivateRounds);
}

TEST_CASE("privacy_ledger_gives_the_accountants_epsilon_and_the_guarantee_in_words", "[privacy]") {
  const PrivacySpec spec = parse_privacy_spec(privacy());
  PrivacyLedger ledger(spec, 40);
  CHECK(ledger.epsilon_after(0) == 0);
  for (std::int64_t r : {1, 7, 40}) CHECK(ledger.epsilon_after(r) == epsilon_of(privacy(), 40, r));
  CHECK(ledger.epsilon_at_end() == epsilon_of(privacy(), 40, 40));
  CHECK_THROWS_AS(ledger.epsilon_after(41), InvalidInput);
  CHECK(privacy_guarantee(1.234, 4, 1e-6) ==
        "Any one device's participation changes the probability of any published model by at "
        "most a factor e^ε (ε = 1.23 so far, 4.00 at the end), except with probability δ = "
        "1e-06.");
}

}  // namespace fedleaf::server
