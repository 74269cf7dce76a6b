// The model GET .../model sends (model_download.h): F16 for the plan's "download_values": "f16"
// tensors under the ETag of the bytes sent, encoded once per current model; exactly the published
// model and its ETag for any other plan.
#include "server/repository/model_download.h"

#include <catch2/catch.hpp>

#include "core/tensor/half_float.h"
#include "core/version.h"
#include "core/wire/safetensors.h"
#include "core/wire/safetensors_index.h"
#include "server/api/router.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

using test::test_spec;
using test::train_result;

struct Repository {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};

  CreatedPopulation create(const char* plan) {
    PopulationSpec spec = test_spec("p", 2, 1, 1);
    spec.plan_json = plan;
    return repo.create_population(spec);
  }
  void close_current_round(const CreatedPopulation& p) {
    auto task = std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
    repo.upload(task.task_id, task.lease_token, train_result({1, 2}, 0.5f, 0.25f, 3));
    repo.commit_batch();
    store.sync();
  }
};

core::SafetensorsIndex index_of(const std::string& bytes) {
  return core::index_safetensors(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

core::SafetensorsFile decode(const std::string& bytes) {
  return core::read_safetensors(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

float f16_rounded(float v) { return core::f16_to_f32(core::f32_to_f16(v)); }

Request get_model(const std::string& if_none_match = "") {
  Request r;
  r.method = "GET";
  r.target = "/v1/populations/p/rounds/0/model";
  r.headers["fedleaf-version"] =
      std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor);
  if (!if_none_match.empty()) r.headers["if-none-match"] = if_none_match;
  return r;
}

}  // namespace

TEST_CASE("model_download_sends_the_f16_tensors_as_f16_under_the_etag_of_its_bytes",
          "[repository]") {
  Repository r;
  const CreatedPopulation p = r.create(test::kF16DownloadPlan);

  const ModelBlob sent = r.repo.model("p", 0);

  const core::SafetensorsIndex index = index_of(*sent.bytes);
  CHECK(index.arrays.at("emb/weight").dtype == core::DType::F16);
  CHECK(index.arrays.at("out/weight").dtype == core::DType::F16);
  CHECK(index.arrays.at("out/bias").dtype == core::DType::F32);
  CHECK(index.arrays.at("emb/weight").shape == core::Shape{10, 2});
  CHECK(index.metadata.at("emb/weight:values_compression") == "f16");
  CHECK(index.metadata.at("model_etag") == p.model_etag);
  CHECK(index.metadata.at("round") == "0");
  CHECK(sent.etag == sha256_hex(*sent.bytes));
  CHECK(sent.etag != p.model_etag);
  CHECK(index.arrays.at("emb/weight").end - index.arrays.at("emb/weight").begin == 10 * 2 * 2);
  // Read back (widened to F32): each value is the published one rounded to F16.
  const core::SafetensorsFile file = decode(*sent.bytes);
  const auto& emb = std::get<core::DenseTensor>(file.tensors.at("emb/weight"));
  const core::NamedTensors model = test::test_model_tensors();
  const auto& published = std::get<core::DenseTensor>(model.at("emb/weight"));
  for (std::size_t i = 0; i < emb.size(); ++i) {
    CHECK(emb.data<float>()[i] == f16_rounded(published.data<float>()[i]));
  }
  const auto& bias = std::get<core::DenseTensor>(file.tensors.at("out/bias"));
  CHECK(bias.data<float>()[0] == 0.5f);
}

TEST_CASE("model_download_encodes_the_current_model_once", "[repository]") {
  Repository r;
  r.create(test::kF16DownloadPlan);

  const ModelBlob first = r.repo.model("p", 0);
  const ModelBlob again = r.repo.model("p", 0);

  CHECK(again.etag == first.etag);
  CHECK(again.bytes.get() == first.bytes.get());  // the kept encoding, not a new one
}

TEST_CASE("model_download_of_an_earlier_round_is_the_bytes_it_sent_as_the_current_one",
          "[repository]") {
  Repository r;
  const CreatedPopulation p = r.create(test::kF16DownloadPlan);
  const ModelBlob round0 = r.repo.model("p", 0);

  r.close_current_round(p);
  REQUIRE(r.repo.status("p").round.number == 1);
  const ModelBlob earlier = r.repo.model("p", 0);
  const ModelBlob round1 = r.repo.model("p", 1);

  CHECK(earlier.etag == round0.etag);
  CHECK(*earlier.bytes == *round0.bytes);
  CHECK(round1.etag != round0.etag);
  CHECK(round1.etag == sha256_hex(*round1.bytes));
  CHECK(index_of(*round1.bytes).arrays.at("out/weight").dtype == core::DType::F16);
  CHECK(index_of(*round1.bytes).metadata.at("round") == "1");
}

TEST_CASE("router_model_download_of_an_f16_plan_is_f16_under_its_own_etag_and_304", "[router]") {
  Repository r;
  const CreatedPopulation p = r.create(test::kF16DownloadPlan);
  Router router{r.repo, r.metrics, RouterOptions{hash_token("admin"), "", nullptr, {}, {}}};
  const std::string f32_etag = "\"" + p.model_etag + "\"";

  Response model = router.handle(get_model());
  Response again = router.handle(get_model());
  Response not_modified = router.handle(get_model(model.header("etag")));
  Response refreshed = router.handle(get_model(f32_etag));  // names the F32 bytes: not these

  REQUIRE(model.status == 200);
  CHECK(index_of(*model.body).metadata.at("out/weight:values_compression") == "f16");
  CHECK(model.header("etag") == "\"" + sha256_hex(*model.body) + "\"");
  CHECK(model.header("etag") != f32_etag);
  CHECK(model.header("cache-control") == "public, max-age=31536000, immutable");
  CHECK(again.header("etag") == model.header("etag"));
  CHECK(*again.body == *model.body);
  CHECK(not_modified.status == 304);
  CHECK(not_modified.body->empty());
  CHECK(not_modified.header("etag") == model.header("etag"));
  CHECK(refreshed.status == 200);
  CHECK(*refreshed.body == *model.body);
}

TEST_CASE("model_download_of_a_plan_without_f16_tensors_is_the_published_model", "[repository]") {
  Repository r;
  const CreatedPopulation p = r.create(test::kTestPlan);

  const ModelBlob sent = r.repo.model("p", 0);

  CHECK(sent.etag == p.model_etag);
  CHECK(*sent.bytes == test::test_model_bytes());
}

}  // namespace fedleaf::server
