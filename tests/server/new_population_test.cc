// make_new_population: a checked spec becomes the records, the model and the tokens to store.
#include "server/repository/new_population.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/util/sha256.h"
#include "server/util/tokens.h"
#include "tests/core/error_matchers.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

PopulationSpec spec_of(const std::string& plan_json) {
  PopulationSpec spec;
  spec.id = "spam";
  spec.plan_json = plan_json;
  spec.settings.rounds = 3;
  spec.settings.clients_per_round = 4;
  spec.settings.min_reports = 2;
  spec.settings.round_deadline_s = 30;
  spec.settings.lease_s = 10;
  spec.settings.train_tasks_per_round = 5;
  spec.settings.eval_tasks_per_round = 1;
  return spec;
}

}  // namespace

TEST_CASE("make_new_population_builds_round_zero_and_keeps_only_the_token_hash",
          "[new_population]") {
  const NewPopulation made =
      make_new_population(spec_of(test::kTestPlan), test::test_model_bytes(), 1000);
  CHECK(made.record.id == "spam");
  CHECK(made.record.settings.rounds == 3);
  CHECK(made.record.settings.clients_per_round == 4);
  CHECK(made.record.settings.min_reports == 2);
  CHECK(made.record.settings.train_tasks_per_round == 5);
  CHECK(made.record.settings.eval_tasks_per_round == 1);
  CHECK(made.record.created_at == 1000);
  CHECK(made.record.client_token_hash == hash_token(made.client_token));
  CHECK(made.record.client_token_hash != made.client_token);
  CHECK(made.round0.population_id == "spam");
  CHECK(made.round0.number == 0);
  CHECK(made.round0.deadline == 1030);
  CHECK(made.model_etag == sha256_hex(made.model_bytes));
  CHECK(made.aggregator.num_reports() == 0);
  REQUIRE(made.update_plan);
}

TEST_CASE("make_new_population_defaults_min_contributors_to_at_most_min_reports",
          "[new_population]") {
  PopulationSpec one = spec_of(test::kTestPlan);
  one.settings.clients_per_round = 1;
  one.settings.min_reports = 1;

  const NewPopulation single = make_new_population(one, test::test_model_bytes(), 0);
  const NewPopulation several =
      make_new_population(spec_of(test::kTestPlan), test::test_model_bytes(), 0);

  CHECK(single.update_plan->find("emb/weight")->op.min_contributors <= 1);
  CHECK(nlohmann::json::parse(
            single.record.plan_json)["updates"]["emb/weight"]["min_contributors"] == 1);
  CHECK(several.update_plan->find("emb/weight")->op.min_contributors ==
        core::kDefaultMinContributors);
  CHECK(several.record.plan_json == test::kTestPlan);
}

TEST_CASE("make_new_population_rejects_min_contributors_above_clients_per_round",
          "[new_population]") {
  nlohmann::json plan = nlohmann::json::parse(test::kTestPlan);
  plan["updates"]["emb/weight"]["min_contributors"] = 5;

  CHECK_THROWS_MATCHES(
      make_new_population(spec_of(plan.dump()), test::test_model_bytes(), 0), InvalidInput,
      test::MessageContains("min_contributors 5 is more than clients_per_round 4"));
  plan["updates"]["emb/weight"]["min_contributors"] = 4;
  CHECK_NOTHROW(make_new_population(spec_of(plan.dump()), test::test_model_bytes(), 0));
}

TEST_CASE("make_new_population_generates_an_id_when_the_spec_has_none", "[new_population]") {
  PopulationSpec spec = spec_of(test::kTestPlan);
  spec.id.reset();
  const NewPopulation made = make_new_population(spec, test::test_model_bytes(), 0);
  CHECK(made.record.id.rfind("pop-", 0) == 0);
  CHECK(is_valid_population_id(made.record.id));
}

TEST_CASE("make_new_population_rejects_a_plan_no_leaf_can_run_or_a_model_that_does_not_fit",
          "[new_population]") {
  CHECK_THROWS_AS(make_new_population(spec_of(R"({"updates": {}})"), test::test_model_bytes(), 0),
                  InvalidInput);
  CHECK_THROWS_AS(make_new_population(spec_of(test::kTestPlan), "not safetensors", 0),
                  InvalidInput);
}

}  // namespace fedleaf::server
