// make_new_population: a checked spec becomes the records, the model and the tokens to store.
#include "server/repository/new_population.h"

#include <catch2/catch.hpp>

#include "server/util/sha256.h"
#include "server/util/tokens.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

PopulationSpec spec_of(const std::string& plan_json) {
  PopulationSpec spec;
  spec.id = "spam";
  spec.plan_json = plan_json;
  spec.rounds = 3;
  spec.clients_per_round = 4;
  spec.min_reports = 2;
  spec.round_deadline_s = 30;
  spec.lease_s = 10;
  spec.train_tasks_per_round = 5;
  spec.eval_tasks_per_round = 1;
  return spec;
}

}  // namespace

TEST_CASE("make_new_population_builds_round_zero_and_keeps_only_the_token_hash",
          "[new_population]") {
  const NewPopulation made =
      make_new_population(spec_of(test::kTestPlan), test::test_model_bytes(), 1000);
  CHECK(made.record.id == "spam");
  CHECK(made.record.rounds == 3);
  CHECK(made.record.clients_per_round == 4);
  CHECK(made.record.min_reports == 2);
  CHECK(made.record.train_tasks_per_round == 5);
  CHECK(made.record.eval_tasks_per_round == 1);
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
