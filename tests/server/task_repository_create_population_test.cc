// TaskRepository: populations created from a plan, a seed or an initial model, and refused.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "server/api/wire_json.h"
#include "server/repository/population_state.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "tests/core/error_matchers.h"
#include "tests/core/raw_safetensors.h"
#include "tests/server/repository_harness.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using Harness = RepositoryHarness;
using test::MessageContains;
using test::test_spec;

// The test model with out/bias stored as F16 and out/weight as BF16.
std::string half_float_test_model(std::uint16_t first_bias_bits) {
  const core::NamedTensors f32 = test::test_model_tensors();
  const auto& emb = std::get<core::DenseTensor>(f32.at("emb/weight"));
  std::vector<std::uint8_t> emb_bytes(emb.nbytes());
  std::memcpy(emb_bytes.data(), emb.raw_data(), emb.nbytes());
  return test::to_string(test::raw_safetensors(
      {{"emb/weight", core::DType::F32, {10, 2}, emb_bytes},
       {"out/bias", core::DType::F16, {2}, test::half_bytes({first_bias_bits, 0x3800})},
       {"out/weight",
        core::DType::BF16,
        {3, 2},
        test::half_bytes({0x0000, 0x3f80, 0x4000, 0xbf80, 0x3e80, 0xc040})}},
      {{"origin", "keras"}}));
}

}  // namespace

TEST_CASE("create_population_validates_and_rejects_duplicates", "[repository]") {
  Harness h;
  h.repo.create_population(test_spec("p", 1, 1, 1));

  CHECK_THROWS_AS(h.repo.create_population(test_spec("p", 1, 1, 1)), Conflict);
  auto bad_model = test_spec("q", 1, 1, 1);
  bad_model.initial_model = "garbage";
  CHECK_THROWS_AS(h.repo.create_population(bad_model), InvalidInput);
  auto bad_plan = test_spec("r", 1, 1, 1);
  bad_plan.plan_json = R"({"updates": {"out/weight": {"encoding": "dense",
                                                     "aggregator": "sum"}}})";
  CHECK_THROWS_MATCHES(h.repo.create_population(bad_plan), InvalidInput,
                       MessageContains("plan.model"));  // no leaf can run it
  auto model_misses_a_tensor = test_spec("t", 1, 1, 1);
  core::NamedTensors tensors = test::test_model_tensors();
  tensors.erase("out/weight");
  model_misses_a_tensor.initial_model = test::to_string(core::write_safetensors(tensors));
  CHECK_THROWS_MATCHES(h.repo.create_population(model_misses_a_tensor), InvalidInput,
                       MessageContains("out/weight"));
  auto seeded = test_spec("s", 1, 1, 1);
  seeded.initial_model.reset();
  seeded.seed = 3;
  CHECK_THROWS_MATCHES(h.repo.create_population(seeded), InvalidInput, MessageContains("seed"));
  CHECK(h.repo.list_populations().size() == 1);
}

TEST_CASE("create_population_from_seed_uses_the_model_initializer", "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions options;
  std::uint64_t seen_seed = 0;
  options.model_initializer = [&](const std::string&, std::uint64_t seed) {
    seen_seed = seed;
    const std::string bytes = test::test_model_bytes();
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  };
  TaskRepository repo(store, clock, metrics, options);
  auto spec = test_spec("s", 1, 1, 1);
  spec.initial_model.reset();
  spec.seed = 42;

  auto p = repo.create_population(spec);

  CHECK(seen_seed == 42);
  CHECK(*repo.model("s", 0).bytes == test::test_model_bytes());
  CHECK(repo.list_populations()[0].id == "s");
}

// Regression: a plan with a 10^8 x 64 table asked for 25 GB under the repository's lock (500,
// "internal server error"); a smaller one that fit in memory froze every other population.
TEST_CASE("create_population_refuses_a_model_over_max_model_bytes_before_making_it",
          "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions options;
  bool initialized = false;
  options.model_initializer = [&](const std::string&, std::uint64_t) {
    initialized = true;
    const std::string bytes = test::test_model_bytes();
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  };
  options.max_model_bytes = 4 * (10 * 2 + 2 * 2 + 2) - 1;  // kTestPlan's parameters, less one
  TaskRepository repo(store, clock, metrics, options);
  auto seeded = test_spec("s", 1, 1, 1);
  seeded.initial_model.reset();
  seeded.seed = 1;

  CHECK_THROWS_MATCHES(repo.create_population(seeded), InvalidInput,
                       MessageContains("population: the plan's model declares parameters of 104 "
                                       "bytes, more than this server's --max-model-bytes (103)"));
  CHECK_FALSE(initialized);
  CHECK_THROWS_MATCHES(repo.create_population(test_spec("i", 1, 1, 1)), InvalidInput,
                       MessageContains("initial_model_b64 holds"));
  CHECK(repo.list_populations().empty());
}

TEST_CASE("create_population_publishes_an_f16_or_bf16_initial_model_widened_to_f32",
          "[repository]") {
  Harness h;
  auto spec = test_spec("half", 1, 1, 1);
  spec.initial_model = half_float_test_model(0x3c00);

  const CreatedPopulation created = h.repo.create_population(spec);

  const std::string published = model_of(h.repo, "half", 0);
  CHECK(created.model_etag == sha256_hex(published));
  const core::SafetensorsIndex index = core::index_safetensors(
      reinterpret_cast<const std::uint8_t*>(published.data()), published.size());
  for (const auto& [name, array] : index.arrays) CHECK(array.dtype == core::DType::F32);
  CHECK(index.metadata.at("origin") == "keras");
  const core::NamedTensors tensors = decode_model(published);
  const auto& bias = std::get<core::DenseTensor>(tensors.at("out/bias"));
  CHECK(std::vector<float>(bias.data<float>(), bias.data<float>() + 2) ==
        std::vector<float>{1.0f, 0.5f});
  const auto& weight = std::get<core::DenseTensor>(tensors.at("out/weight"));
  CHECK(std::vector<float>(weight.data<float>(), weight.data<float>() + 6) ==
        std::vector<float>{0.0f, 1.0f, 2.0f, -1.0f, 0.25f, -3.0f});
  CHECK(std::get<core::DenseTensor>(tensors.at("emb/weight")) ==
        std::get<core::DenseTensor>(test::test_model_tensors().at("emb/weight")));
}

TEST_CASE("create_population_rejects_an_f16_initial_model_holding_an_infinity", "[repository]") {
  Harness h;
  auto spec = test_spec("half", 1, 1, 1);
  spec.initial_model = half_float_test_model(0x7c00);

  CHECK_THROWS_MATCHES(h.repo.create_population(spec), InvalidInput,
                       MessageContains("tensor 'out/bias': element 0 is not finite"));
  CHECK(h.repo.list_populations().empty());
}

}  // namespace fedleaf::server
