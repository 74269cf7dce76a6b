// Every rule check_select_request enforces, one case each, with the message naming the tensor.
#include <catch2/catch.hpp>

#include "core/aggregation/updates/select_rules.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"
#include "tests/core/test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

struct Fixture {
  std::vector<std::uint8_t> bytes;
  SafetensorsIndex index;
  UpdatePlan plan;
};

// updates: emb/weight row_sparse (select by default), out/weight dense, and row_sparse entries
// for the model's odd tensors; `emb_extra` is spliced into emb/weight's entry.
UpdatePlan plan_with(const std::string& emb_extra = "", const std::string& out_encoding = "dense") {
  const std::string rs = R"({"encoding": "row_sparse", "aggregator": "mean_over_contributors"})";
  return parse_update_plan(
      R"({"updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "sum")" + emb_extra +
      R"(}, "out/weight": {"encoding": ")" + out_encoding +
      R"(", "aggregator": "weighted_mean"}, "scalar": )" + rs + R"(, "clash": )" + rs +
      R"(, "stored_sparse": )" + rs + "}}");
}

Fixture make_fixture() {
  NamedTensors model;
  model.emplace("emb/weight", DenseTensor::zeros(DType::F32, {100, 4}));
  model.emplace("out/weight", DenseTensor::zeros(DType::F32, {4, 2}));
  model.emplace("scalar", DenseTensor(xt::xarray<float>(1.f)));
  model.emplace("clash", DenseTensor::zeros(DType::F32, {3}));
  model.emplace("clash:values", DenseTensor::zeros(DType::F32, {3}));
  std::mt19937_64 rng(1);
  model.emplace("stored_sparse", fedleaf::test::random_row_sparse<float>(rng, {10, 2}, 2));
  Fixture f;
  f.bytes = write_safetensors(model);
  f.index = index_safetensors(f.bytes.data(), f.bytes.size());
  f.plan = plan_with();
  return f;
}

SelectRequest request(const std::string& name, std::vector<std::uint32_t> ids) {
  SelectRequest r;
  r.rows[name] = std::move(ids);
  return r;
}

void require_rejected(const SelectRequest& r, const UpdatePlan& plan, const std::string& fragment) {
  const Fixture f = make_fixture();
  CHECK_THROWS_MATCHES(check_select_request(r, f.index, plan), fedleaf::InvalidInput,
                       MessageContains(fragment));
}

}  // namespace

TEST_CASE("select_accepts_rows_of_a_row_sparse_tensor_marked_select", "[select_rules]") {
  const Fixture f = make_fixture();
  CHECK_NOTHROW(check_select_request(request("emb/weight", {0, 5, 99}), f.index, f.plan));
  CHECK_NOTHROW(check_select_request(request("emb/weight", {}), f.index, f.plan));
  CHECK_NOTHROW(check_select_request(SelectRequest{}, f.index, f.plan));
}

TEST_CASE("select_rejects_unknown_tensors", "[select_rules]") {
  const Fixture f = make_fixture();
  require_rejected(request("nope", {1}), f.plan,
                   "select: tensor 'nope': unknown tensor (the model has no tensor of that name)");
  // Regression: a NUL in the name cut the message short at "select: tensor 'emb/weight".
  require_rejected(request(std::string("emb/weight\0zz", 13), {1}), f.plan,
                   "select: tensor 'emb/weight\\x00zz': unknown tensor");
}

TEST_CASE("select_rejects_tensors_outside_the_plans_updates", "[select_rules]") {
  const UpdatePlan plan = parse_update_plan(
      R"({"updates": {"out/weight": {"encoding": "dense", "aggregator": "sum"}}})");
  require_rejected(request("emb/weight", {1}), plan,
                   "tensor 'emb/weight' is not marked select: the plan's updates do not name it");
}

TEST_CASE("select_rejects_dense_and_coo_tensors", "[select_rules]") {
  require_rejected(request("out/weight", {1}), plan_with(),
                   "tensor 'out/weight' is not marked select: its plan encoding is 'dense', and "
                   "only row_sparse tensors can be selected");
  require_rejected(request("out/weight", {1}), plan_with("", "coo"), "its plan encoding is 'coo'");
}

TEST_CASE("select_rejects_tensors_the_plan_sends_whole", "[select_rules]") {
  require_rejected(request("emb/weight", {1}), plan_with(R"(, "download": "full")"),
                   "tensor 'emb/weight' is not marked select: the plan asks for it whole "
                   "(download 'full')");
}

TEST_CASE("select_rejects_tensors_the_model_does_not_store_as_dense_rows", "[select_rules]") {
  const UpdatePlan plan = plan_with();
  require_rejected(request("stored_sparse", {1}), plan,
                   "tensor 'stored_sparse': the model stores it as a sparse tuple");
  require_rejected(request("scalar", {}), plan,
                   "tensor 'scalar': the model stores it with rank 0, which has no rows");
  require_rejected(request("clash", {0}), plan,
                   "tensor 'clash': the model also holds an array named 'clash:values'");
}

TEST_CASE("select_rejects_more_ids_than_max_select_rows", "[select_rules]") {
  const UpdatePlan plan = plan_with(R"(, "max_select_rows": 2)");
  const Fixture f = make_fixture();
  CHECK_NOTHROW(check_select_request(request("emb/weight", {1, 2}), f.index, plan));
  require_rejected(request("emb/weight", {1, 2, 3}), plan,
                   "tensor 'emb/weight': 3 row ids exceed the plan's max_select_rows of 2");
}

TEST_CASE("select_rejects_ids_out_of_range", "[select_rules]") {
  require_rejected(request("emb/weight", {5, 100, 200}), plan_with(),
                   "tensor 'emb/weight': row id 100 is out of range: the tensor has 100 rows");
}
