// parse_population_plan and make_new_population: a checked spec becomes the records, the model
// and the tokens to store.
#include "server/repository/new_population.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/api/population_body.h"
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

// The plan parsed once, as TaskRepository::create_population does.
NewPopulation make(const PopulationSpec& spec, std::string model_bytes, double now) {
  return make_new_population(spec, parse_population_plan(spec), std::move(model_bytes), now);
}

}  // namespace

TEST_CASE("make_new_population_builds_round_zero_and_keeps_only_the_token_hash",
          "[new_population]") {
  const NewPopulation made = make(spec_of(test::kTestPlan), test::test_model_bytes(), 1000);
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

  const NewPopulation single = make(one, test::test_model_bytes(), 0);
  const NewPopulation several = make(spec_of(test::kTestPlan), test::test_model_bytes(), 0);

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
      make(spec_of(plan.dump()), test::test_model_bytes(), 0), InvalidInput,
      test::MessageContains("min_contributors 5 is more than clients_per_round 4"));
  plan["updates"]["emb/weight"]["min_contributors"] = 4;
  CHECK_NOTHROW(make(spec_of(plan.dump()), test::test_model_bytes(), 0));
}

TEST_CASE("make_new_population_generates_an_id_when_the_spec_has_none", "[new_population]") {
  PopulationSpec spec = spec_of(test::kTestPlan);
  spec.id.reset();
  const NewPopulation made = make(spec, test::test_model_bytes(), 0);
  CHECK(made.record.id.rfind("pop-", 0) == 0);
  CHECK(is_valid_population_id(made.record.id));
}

TEST_CASE("parse_population_plan_parses_the_stored_plan_once_as_a_train_task", "[new_population]") {
  PopulationSpec one = spec_of(test::kTestPlan);
  one.settings.min_reports = 1;

  const PopulationPlan plan = parse_population_plan(one);

  CHECK(plan.parsed.kind == core::PlanKind::kTrain);
  REQUIRE(plan.parsed.train);
  REQUIRE(plan.parsed.updates.find("emb/weight"));
  CHECK(plan.parsed.updates.find("emb/weight")->op.min_contributors <= 1);
  CHECK(nlohmann::json::parse(plan.json)["updates"]["emb/weight"]["min_contributors"] == 1);
  CHECK(parse_population_plan(spec_of(test::kTestPlan)).json == test::kTestPlan);
  CHECK_THROWS_AS(parse_population_plan(spec_of(R"({"updates": {}})")), InvalidInput);
}

TEST_CASE("make_new_population_rejects_a_plan_no_leaf_can_run_or_a_model_that_does_not_fit",
          "[new_population]") {
  CHECK_THROWS_AS(make(spec_of(R"({"updates": {}})"), test::test_model_bytes(), 0), InvalidInput);
  CHECK_THROWS_AS(make(spec_of(test::kTestPlan), "not safetensors", 0), InvalidInput);
}

TEST_CASE("prepare_population_parses_the_plan_once_and_makes_or_widens_the_model",
          "[new_population]") {
  PopulationSpec given = spec_of(test::kTestPlan);
  given.initial_model = test::test_model_bytes();
  PopulationSpec seeded = spec_of(test::kTestPlan);
  seeded.seed = 7;
  int made = 0;
  const ModelInitializer initializer = [&](const std::string&, std::uint64_t seed) {
    ++made;
    CHECK(seed == 7);
    const std::string bytes = test::test_model_bytes();
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  };

  const PopulationInputs from_bytes = prepare_population(given, nullptr, 1 << 20);
  const PopulationInputs from_seed = prepare_population(seeded, initializer, 1 << 20);

  CHECK(from_bytes.model_bytes == test::test_model_bytes());
  CHECK(from_bytes.plan.json == test::kTestPlan);
  CHECK(from_seed.model_bytes == test::test_model_bytes());
  CHECK(from_seed.plan.parsed.updates.find("emb/weight"));
  CHECK(made == 1);
  CHECK_THROWS_MATCHES(prepare_population(seeded, nullptr, 1 << 20), InvalidInput,
                       test::MessageContains("'seed' is not supported"));
  CHECK_THROWS_MATCHES(prepare_population(seeded, initializer, 8), InvalidInput,
                       test::MessageContains("more than this server's --max-model-bytes (8)"));
  CHECK_THROWS_MATCHES(prepare_population(given, nullptr, 8), InvalidInput,
                       test::MessageContains("initial_model_b64 holds"));
  CHECK(made == 1);  // a model over the limit is refused before it is made
}

}  // namespace fedleaf::server
