// close_training_round: the records and model that closing a round writes, from the state alone.
#include "server/repository/round_close.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/wire/safetensors.h"
#include "server/repository/round_clip_bounds.h"
#include "server/util/sha256.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

std::unique_ptr<PopulationState> state_at_round(int round, int rounds, int eval_tasks) {
  PopulationRecord record = test::test_population_record("p", test::kTestPlan);
  record.settings.rounds = rounds;
  record.current_round = round;
  record.settings.round_deadline_s = 30;
  record.settings.eval_tasks_per_round = eval_tasks;
  RoundRecord current;
  current.population_id = "p";
  current.number = round;
  current.started_at = 100;
  auto plan = std::make_shared<const core::UpdatePlan>(core::parse_update_plan(record.plan_json));
  core::RoundAggregator aggregator(*plan, test::test_model_tensors(), 1);
  auto st = new_population_state(record, current, "etag", test::test_model_bytes(), plan,
                                 std::move(aggregator));
  const std::string result = test::train_result({1, 4}, 0.5F, 0.25F, 10);
  st->aggregator->add_result(reinterpret_cast<const std::uint8_t*>(result.data()), result.size());
  return st;
}

}  // namespace

TEST_CASE("close_training_round_closes_the_round_and_opens_the_next_with_the_new_model",
          "[round_close]") {
  const auto st = state_at_round(2, 5, 1);
  const std::vector<std::uint8_t> expected = core::write_safetensors(st->aggregator->next_model());
  const RoundClose close = close_training_round(*st, 160);

  CHECK(close.closed.number == 2);
  CHECK(close.closed.status == RoundStatus::kClosed);
  CHECK(close.closed.closed_at == 160);
  CHECK(close.opened.number == 3);
  CHECK(close.opened.status == RoundStatus::kOpen);
  CHECK(close.opened.started_at == 160);
  CHECK(close.opened.deadline == 190);
  CHECK(close.record.current_round == 3);
  CHECK(close.record.state == st->record.state);
  CHECK_FALSE(close.training_over);
  CHECK(close.model_etag == sha256_hex(close.model_bytes));
  CHECK(close.model_bytes == test::to_string(core::write_safetensors(close.next)));
  // The aggregator's next model, bit for bit; built in the aggregator's own copy of the model,
  // which the close consumed.
  CHECK(close.model_bytes == test::to_string(expected));
  CHECK(st->aggregator->model().empty());
  // Row 1 was updated by the report, row 2 was not.
  const auto& next_emb = std::get<core::DenseTensor>(close.next.at("emb/weight"));
  const auto& old_emb = std::get<core::DenseTensor>(test::test_model_tensors().at("emb/weight"));
  CHECK(next_emb.data<float>()[2] != old_emb.data<float>()[2]);
  CHECK(next_emb.data<float>()[4] == old_emb.data<float>()[4]);
  const auto robust = nlohmann::json::parse(close.closed.robust_json);
  CHECK(robust["capped"] == 0);
  CHECK(robust["withheld_nonfinite"] == 0);
}

// A buffered version's staleness counts, given by the caller (counted in the store), are part of
// what the close records: its RoundRobustness and the closed row's robust_json; without them (a
// synchronous round) the row has none.
TEST_CASE("close_training_round_records_the_staleness_it_is_given_in_the_closed_row",
          "[round_close]") {
  const auto st = state_at_round(2, 5, 0);
  const VersionStaleness staleness = version_staleness({{1, 1}, {2, 3}}, 2);
  const RoundClose close = close_training_round(*st, 160, staleness);
  REQUIRE(close.robust.staleness);
  CHECK(*close.robust.staleness == staleness);
  CHECK(nlohmann::json::parse(close.closed.robust_json)["staleness"] ==
        nlohmann::json{{"0", 3}, {"1", 1}});
  CHECK(read_robustness(close.closed.robust_json).staleness == staleness);
  CHECK(close.opened.robust_json.find("staleness") == std::string::npos);  // the next version's row

  const RoundClose synchronous = close_training_round(*state_at_round(2, 5, 0), 160);
  CHECK_FALSE(synchronous.robust.staleness);
  CHECK_FALSE(nlohmann::json::parse(synchronous.closed.robust_json).contains("staleness"));
}

TEST_CASE("round_close_write_moves_the_model_bytes_into_the_model_record", "[round_close]") {
  const auto st = state_at_round(2, 5, 1);
  RoundClose close = close_training_round(*st, 160);
  const std::string bytes = close.model_bytes;
  RoundCloseWrite write = round_close_write("p", close);
  REQUIRE(write.model);
  CHECK(write.model->population_id == "p");
  CHECK(write.model->round == 3);
  CHECK(write.model->etag == close.model_etag);
  CHECK(write.model->bytes == bytes);
  CHECK(close.model_bytes.empty());  // moved, not copied: the caller moves them back
  CHECK(write.closed.number == 2);
  CHECK(write.opened->number == 3);
  CHECK(write.population.current_round == 3);
  CHECK_FALSE(write.optimizer_state);  // FedAvg keeps none
}

TEST_CASE("close_training_round_gives_the_next_round_its_adaptive_clip_bounds", "[round_close]") {
  // The test plan's clips are the defaults: adaptive, starting at rms kDefaultClipRms. The one
  // report is above it in both tensors, so both were clipped and both bounds grow.
  const auto st = state_at_round(2, 5, 1);
  const RoundClose close = close_training_round(*st, 160);
  const double grown = core::next_clip_bound(
      core::kDefaultClipRms, 1, 1, {core::kDefaultClipQuantile, core::kDefaultClipLearningRate});
  CHECK(close.next_clip_bounds == core::ClipBounds{{"emb/weight", grown}, {"out/weight", grown}});
  const auto robust = nlohmann::json::parse(close.closed.robust_json);
  CHECK(robust["clip_bound"]["emb/weight"] == core::kDefaultClipRms);
  CHECK(robust["next_clip_bound"]["out/weight"] == grown);
  CHECK(round_clip_bounds(close.opened) == close.next_clip_bounds);
  // No training round follows the last one: nothing to carry.
  CHECK(close_training_round(*state_at_round(4, 5, 1), 160).opened.robust_json == "{}");
}

TEST_CASE("close_training_round_of_the_last_round_finishes_a_population_without_evaluation",
          "[round_close]") {
  const RoundClose with_eval = close_training_round(*state_at_round(4, 5, 1), 160);
  CHECK(with_eval.training_over);
  CHECK(with_eval.opened.status == RoundStatus::kOpen);
  CHECK(with_eval.record.state != RunState::kFinished);

  const RoundClose without_eval = close_training_round(*state_at_round(4, 5, 0), 160);
  CHECK(without_eval.training_over);
  CHECK(without_eval.opened.status == RoundStatus::kClosed);
  CHECK(without_eval.opened.closed_at == 160);
  CHECK(without_eval.record.state == RunState::kFinished);
}

TEST_CASE(
    "closed_round_robustness_lists_clipped_reports_and_withheld_rows_per_tensor_and_the_counts",
    "[round_close]") {
  core::RoundStats stats;
  stats.num_capped = 2;
  stats.clipped_per_tensor.emplace_back("emb/weight", 3);
  stats.withheld_per_tensor.emplace_back("emb/weight", 41);
  stats.clip_bound_per_tensor.emplace_back("emb/weight", 0.25);
  stats.rows_clipped_per_tensor.emplace_back("emb/weight", 5);
  stats.example_cap = 606;
  const auto json = nlohmann::json::parse(
      robustness_json(closed_round_robustness(stats, 7, {{"emb/weight", 0.5}}, 604)));
  CHECK(json["clipped"]["emb/weight"] == 3);
  CHECK(json["clip_bound"]["emb/weight"] == 0.25);
  CHECK(json["next_clip_bound"]["emb/weight"] == 0.5);
  CHECK(json["withheld_rows"]["emb/weight"] == 41);
  CHECK(json["capped"] == 2);
  CHECK(json["clipped_rows"]["emb/weight"] == 5);
  CHECK(json["example_cap"] == 606);
  CHECK(json["next_example_cap"] == 604);
  CHECK(json["withheld_nonfinite"] == 7);
  const auto empty =
      nlohmann::json::parse(robustness_json(closed_round_robustness({}, 0, {}, std::nullopt)));
  CHECK(empty["clipped"].empty());
  CHECK(empty["clipped_rows"].empty());
  CHECK(empty["withheld_rows"].empty());
  CHECK(empty["clip_bound"].empty());
  CHECK(empty["example_cap"].is_null());  // the cap was off
  CHECK_FALSE(empty.contains("next_example_cap"));
}

}  // namespace fedleaf::server
