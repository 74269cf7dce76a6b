// select_rows: the model:select use case, on a round's selectable model and through the
// repository (its checks come before the body's).
#include "server/repository/select_rows.h"

#include <catch2/catch.hpp>

#include "core/tensor/tensor.h"
#include "core/wire/safetensors.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "tests/core/error_matchers.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

using test::MessageContains;
using test::test_spec;

struct Repository {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};
};

core::SafetensorsFile decode(const std::string& bytes) {
  return core::read_safetensors(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

TEST_CASE("select_rows_answers_the_asked_rows_with_the_models_etag_and_round", "[select]") {
  Repository r;
  const CreatedPopulation p = r.repo.create_population(test_spec("p", 2, 1, 1));
  const SelectableModel model = r.repo.selectable_model("p", p.client_token, 0);

  const SelectedRows rows =
      select_rows(model, 0, R"({"tensors": {"emb/weight": [3, 7]}})", "application/json");

  const core::SafetensorsFile answer = decode(rows.bytes);
  const auto& emb = std::get<core::RowSparseTensor>(answer.tensors.at("emb/weight"));
  CHECK(emb.num_rows() == 2);
  CHECK(std::holds_alternative<core::DenseTensor>(answer.tensors.at("out/weight")));
  CHECK(answer.metadata.at("model_etag") == p.model_etag);
  CHECK(answer.metadata.at("round") == "0");
  CHECK(rows.rows_per_tensor == std::map<std::string, std::size_t>{{"emb/weight", 2}});
}

TEST_CASE("select_rows_rejects_a_body_that_breaks_a_rule_naming_it", "[select]") {
  Repository r;
  const CreatedPopulation p = r.repo.create_population(test_spec("p", 2, 1, 1));
  const SelectableModel model = r.repo.selectable_model("p", p.client_token, 0);

  CHECK_THROWS_MATCHES(
      select_rows(model, 0, R"({"tensors": {"emb/weight": [7, 3]}})", "application/json"),
      InvalidInput, MessageContains("sorted strictly ascending"));
  CHECK_THROWS_AS(select_rows(model, 0, "{}", "text/plain"), InvalidInput);
}

TEST_CASE("repository_select_rows_checks_token_and_round_before_the_body", "[select]") {
  Repository r;
  const CreatedPopulation p = r.repo.create_population(test_spec("p", 2, 1, 1));
  const std::string bad_body = "not a request";

  const SelectedRows rows = r.repo.select_rows(
      "p", p.client_token, 0, R"({"tensors": {"emb/weight": [1]}})", "application/json");

  CHECK(rows.rows_per_tensor.at("emb/weight") == 1);
  CHECK_THROWS_AS(r.repo.select_rows("p", "not-the-token", 0, bad_body, "application/json"),
                  Forbidden);
  CHECK_THROWS_AS(r.repo.select_rows("nobody", p.client_token, 0, bad_body, "application/json"),
                  NotFound);
  CHECK_THROWS_AS(r.repo.select_rows("p", p.client_token, 1, bad_body, "application/json"),
                  NotFound);
  CHECK_THROWS_AS(r.repo.select_rows("p", p.client_token, 0, bad_body, "application/json"),
                  InvalidInput);
}

}  // namespace fedleaf::server
