#include "core/aggregation/round/round_aggregator.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "core/wire/safetensors.h"
#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

const std::string kPlanJson = R"({
  "model": {"layers": []},
  "train": {"epochs": 1},
  "updates": {
    "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
    "h/weight": {"encoding": "coo", "aggregator": "clipped_weighted_mean", "clip_norm": 1.0}
  }
})";
const core::UpdatePlan kPlan = core::parse_update_plan(kPlanJson);

core::NamedTensors model() {
  core::NamedTensors m;
  xt::xarray<float> emb = xt::xarray<float>::from_shape({50, 4});
  for (std::size_t i = 0; i < emb.size(); ++i) emb.data()[i] = 0.01f * static_cast<float>(i);
  m.emplace("emb/weight", core::DenseTensor(std::move(emb)));
  m.emplace("out/weight", core::DenseTensor(xt::xarray<float>{{1, 2}, {3, 4}, {5, 6}, {7, 8}}));
  m.emplace("out/bias", core::DenseTensor(xt::xarray<float>{0.5f, -0.5f}));
  m.emplace("h/weight", core::DenseTensor::zeros(DType::F32, {6, 5}));
  return m;
}

struct Client {
  core::NamedTensors tensors;
  double weight;
};

Client random_client(std::mt19937_64& rng) {
  Client c;
  c.tensors.emplace("emb/weight",
                    test::random_update<float>(rng, UpdateEncoding::kRowSparse, {50, 4}));
  c.tensors.emplace("out/weight", test::random_update<float>(rng, UpdateEncoding::kDense, {4, 2}));
  c.tensors.emplace("h/weight", test::random_update<float>(rng, UpdateEncoding::kCoo, {6, 5}));
  c.weight = static_cast<double>(std::uniform_int_distribution<int>(1, 50)(rng));
  return c;
}

std::vector<std::uint8_t> result_bytes(const core::NamedTensors& tensors, const std::string& n,
                                       const std::string& kind = "train") {
  return core::write_safetensors(tensors, {{"kind", kind}, {"num_examples", n}, {"loss", "0.5"}});
}

std::vector<std::uint8_t> result_bytes(const Client& c) {
  return result_bytes(c.tensors, std::to_string(static_cast<int>(c.weight)));
}

void add(core::RoundAggregator& round, const std::vector<std::uint8_t>& bytes) {
  round.add_result(bytes.data(), bytes.size());
}

// The clip every value operator but clipped_weighted_mean gets by default (and
// mean_over_contributors its default min_contributors and, row_sparse, its row clip, below).
const core::UpdateClip kDefaultClip{core::ClipKind::kRms, core::kDefaultClipRms};

// Asserts next_model() = model + the reference aggregate of `clients`, per planned tensor, and
// that the unplanned tensor is carried over unchanged.
void check_next_model(const core::NamedTensors& next, const std::vector<Client>& clients) {
  const core::NamedTensors m = model();
  CHECK(std::get<core::DenseTensor>(next.at("out/bias")) ==
        std::get<core::DenseTensor>(m.at("out/bias")));
  const std::vector<std::tuple<std::string, UpdateEncoding, core::OperatorSpec>> planned{
      {"emb/weight",
       UpdateEncoding::kRowSparse,
       {core::SparseSumOperator::kMeanOverContributors, 0.0, kDefaultClip,
        core::kDefaultMinContributors, core::kDefaultRowClip}},
      {"out/weight",
       UpdateEncoding::kDense,
       {core::SparseSumOperator::kWeightedMean, 0.0, kDefaultClip}},
      {"h/weight", UpdateEncoding::kCoo, {core::SparseSumOperator::kClippedWeightedMean, 1.0}}};
  for (const auto& [name, encoding, spec] : planned) {
    const auto& base = std::get<core::DenseTensor>(m.at(name));
    test::Scenario s{encoding, DType::F32, {}, {}};
    for (std::size_t d : base.shape()) s.dense_shape.push_back(static_cast<std::int64_t>(d));
    for (const Client& c : clients) s.clients.push_back({c.tensors.at(name), c.weight});
    const test::Reference ref = test::reference_result(s, spec);
    const float* got = std::get<core::DenseTensor>(next.at(name)).data<float>();
    for (std::size_t i = 0; i < base.size(); ++i) {
      INFO(name << " element " << i);
      const double want = static_cast<double>(base.data<float>()[i]) + ref.values[i];
      CHECK(std::abs(static_cast<double>(got[i]) - want) <= 1e-5 * (1.0 + std::abs(want)));
    }
  }
}

TEST_CASE("round_next_model_is_the_model_plus_each_tensors_aggregated_delta") {
  std::mt19937_64 rng(31);
  core::RoundAggregator round(kPlan, model());
  std::vector<Client> clients;
  for (int c = 0; c < 12; ++c) {
    clients.push_back(random_client(rng));
    add(round, result_bytes(clients.back()));
  }
  CHECK(round.num_reports() == 12);
  double total = 0.0;
  for (const Client& c : clients) total += c.weight;
  CHECK(round.total_weight() == total);
  const core::NamedTensors next = round.next_model();
  check_next_model(next, clients);
  CHECK(round.next_model() == next);  // next_model() does not change the aggregator
}

TEST_CASE("round_take_next_model_gives_next_models_bits_and_keeps_the_accumulators") {
  std::mt19937_64 rng(32);
  core::RoundAggregator round(kPlan, model());
  std::vector<Client> clients;
  for (int c = 0; c < 12; ++c) {
    clients.push_back(random_client(rng));
    add(round, result_bytes(clients.back()));
  }
  const core::NamedTensors copied = round.next_model();
  const std::vector<std::uint8_t> checkpoint = round.checkpoint();
  const core::RoundStats stats = round.stats();
  std::uint64_t withheld = 99;
  const core::NamedTensors taken = round.take_next_model(&withheld);
  CHECK(write_safetensors(taken) == write_safetensors(copied));  // the same bits
  check_next_model(taken, clients);
  CHECK(withheld == 0);
  CHECK(round.model().empty());  // built in the round's model, not in a copy
  CHECK(round.checkpoint() == checkpoint);
  CHECK(round.stats().num_reports == stats.num_reports);
  CHECK(round.stats().withheld_per_tensor == stats.withheld_per_tensor);
}

TEST_CASE("round_weight_scale_multiplies_each_reports_weight") {
  // A buffered population's staleness weights: each report weighs num_examples × scale, which
  // the reference sees as the client's weight.
  std::mt19937_64 rng(47);
  core::RoundAggregator round(kPlan, model());
  std::vector<Client> clients;
  double total = 0.0;
  for (int c = 0; c < 9; ++c) {
    Client client = random_client(rng);
    const std::vector<std::uint8_t> bytes = result_bytes(client);
    const double scale = 1.0 / std::sqrt(1.0 + c % 4);  // staleness 0..3, exponent 0.5
    round.add_result(bytes.data(), bytes.size(), scale);
    client.weight *= scale;
    total += client.weight;
    clients.push_back(client);
  }
  CHECK(round.total_weight() == Approx(total).epsilon(1e-14));
  check_next_model(round.next_model(), clients);
  const std::vector<std::uint8_t> bytes = result_bytes(random_client(rng));
  for (double bad : {0.0, -1.0, 1.5, std::nan("")}) {
    CHECK_THROWS_MATCHES(round.add_result(bytes.data(), bytes.size(), bad), InvalidInput,
                         MessageContains("train result: weight scale must be in (0, 1]"));
  }
  CHECK(round.num_reports() == 9);
}
TEST_CASE("round_expected_reports_hint_changes_neither_the_next_model_nor_the_checkpoint") {
  std::mt19937_64 rng(38);
  core::RoundAggregator plain(kPlan, model());
  core::RoundAggregator hinted(kPlan, model(), /*expected_reports=*/40);
  std::vector<Client> clients;
  for (int c = 0; c < 40; ++c) {
    clients.push_back(random_client(rng));
    add(plain, result_bytes(clients.back()));
    add(hinted, result_bytes(clients.back()));
  }
  check_next_model(hinted.next_model(), clients);
  CHECK(hinted.next_model() == plain.next_model());
  CHECK(hinted.checkpoint() == plain.checkpoint());
}

TEST_CASE("round_with_no_reports_publishes_the_model_unchanged") {
  core::RoundAggregator round(kPlan, model());
  CHECK(round.next_model() == model());
  CHECK(round.num_reports() == 0);
}

TEST_CASE("round_constructor_rejects_bad_plans") {
  const auto rejects = [](const std::string& plan, const std::string& fragment) {
    CHECK_THROWS_MATCHES(core::RoundAggregator(core::parse_update_plan(plan), model()),
                         InvalidInput, MessageContains(fragment));
  };
  rejects(R"({"updates": {"nope/weight": {"encoding": "dense", "aggregator": "sum"}}})",
          "plan.updates['nope/weight']: the model has no tensor 'nope/weight'");
  rejects(R"({"updates": {"out/bias": {"encoding": "dense", "aggregator": "median"}}})",
          "unknown aggregator 'median'");
  rejects(R"({"updates": {"out/bias": {"encoding": "csr", "aggregator": "sum"}}})",
          "unknown encoding 'csr'");
  rejects(
      R"({"updates": {"out/bias": {"encoding": "coo", "aggregator": "clipped_weighted_mean"}}})",
      "plan.updates['out/bias'].clip_norm: missing (clipped_weighted_mean needs a finite "
      "clip_norm > 0)");
  rejects(R"({"updates": {"out/bias": {"encoding": "coo", "aggregator": "clipped_weighted_mean",
              "clip_norm": 0}}})",
          "plan.updates['out/bias'].clip_norm: expected a finite number > 0");
  rejects(
      R"({"updates": {"out/bias": {"encoding": "coo", "aggregator": "sum", "clip_norm": "x"}}})",
      "plan.updates['out/bias'].clip_norm: expected a finite number > 0");
  rejects(R"({"updates": {"out/bias": {"aggregator": "sum"}}})",
          "plan.updates['out/bias'].encoding: missing");
  rejects(R"({"updates": {"out/bias": {"encoding": "dense", "aggregator": 3}}})",
          "plan.updates['out/bias'].aggregator: expected a string");
  rejects(R"({"model": {}})", "plan.updates: missing or empty");
  rejects(R"({"updates": {}})", "plan.updates: missing or empty");
  rejects(R"({"updates": []})", "plan.updates: expected an object");
  rejects("{not json", "plan: not valid JSON");
  rejects("[1]", "plan: expected a JSON object");
}

TEST_CASE("add_result_given_the_index_and_header_folds_as_add_result_reading_them") {
  std::mt19937_64 rng(35);
  core::RoundAggregator reading(kPlan, model());
  core::RoundAggregator given(kPlan, model());
  for (int c = 0; c < 3; ++c) {
    const std::vector<std::uint8_t> bytes = result_bytes(random_client(rng));
    add(reading, bytes);
    const core::SafetensorsIndex index = core::index_result(bytes.data(), bytes.size());
    given.add_result(index, bytes.data(),
                     core::read_result_header(index, core::ResultKind::kTrain));
  }
  CHECK(given.checkpoint() == reading.checkpoint());
  CHECK(given.num_reports() == 3);
  CHECK(given.total_weight() == reading.total_weight());
  // The weight is the given header's num_examples (the caller read it from these bytes).
  const std::vector<std::uint8_t> bytes = result_bytes(random_client(rng));
  const core::SafetensorsIndex index = core::index_result(bytes.data(), bytes.size());
  core::ResultHeader header = core::read_result_header(index, core::ResultKind::kTrain);
  const double before = given.total_weight();
  header.num_examples = 5;
  given.add_result(index, bytes.data(), header);
  CHECK(given.total_weight() == before + 5.0);
}

TEST_CASE("add_result_is_all_or_nothing_when_a_later_tensor_is_invalid") {
  std::mt19937_64 rng(32);
  core::RoundAggregator round(kPlan, model());
  add(round, result_bytes(random_client(rng)));
  const auto before = round.checkpoint();
  Client bad = random_client(rng);
  // "emb/weight" and "h/weight" are valid; "out/weight" has the wrong shape.
  bad.tensors.insert_or_assign("out/weight", core::DenseTensor::zeros(DType::F32, {2, 4}));
  CHECK_THROWS_MATCHES(add(round, result_bytes(bad)), InvalidInput,
                       MessageContains("update 'out/weight': dense_shape [2, 4] differs"));
  CHECK(round.checkpoint() == before);
  CHECK(round.num_reports() == 1);
}

TEST_CASE("add_result_rejects_each_broken_rule_and_leaves_the_round_unchanged") {
  std::mt19937_64 rng(33);
  core::RoundAggregator round(kPlan, model());
  add(round, result_bytes(random_client(rng)));
  const auto before = round.checkpoint();
  const Client good = random_client(rng);
  const auto rejects = [&](const std::vector<std::uint8_t>& bytes, const std::string& fragment) {
    CHECK_THROWS_MATCHES(add(round, bytes), InvalidInput, MessageContains(fragment));
    CHECK(round.checkpoint() == before);
    CHECK(round.num_reports() == 1);
  };
  rejects(core::write_safetensors(good.tensors, {{"kind", "train"}, {"loss", "0.5"}}),
          "result metadata 'num_examples': missing");
  rejects(result_bytes(good.tensors, "0"),
          "result metadata 'num_examples': '0' is not an integer in [1, 2^53]");
  rejects(result_bytes(good.tensors, "2.5"), "is not an integer in [1, 2^53]");
  rejects(result_bytes(good.tensors, "-3"), "is not an integer in [1, 2^53]");
  rejects(result_bytes(good.tensors, "7", "evaluate"),
          "result metadata 'kind': 'evaluate' does not match the train task");
  rejects(core::write_safetensors(good.tensors, {{"num_examples", "7"}}),
          "result metadata 'loss': missing");
  core::NamedTensors extra = good.tensors;
  extra.emplace("out/bias", core::DenseTensor::zeros(DType::F32, {2}));
  rejects(result_bytes(extra, "7"), "tensor 'out/bias' is not named in the plan's updates");
  core::NamedTensors missing = good.tensors;
  missing.erase("h/weight");
  rejects(result_bytes(missing, "7"), "lacks tensor 'h/weight'");
  core::NamedTensors nan = good.tensors;
  std::get<core::DenseTensor>(nan.at("out/weight")).data<float>()[3] = NAN;
  rejects(result_bytes(nan, "7"), "is not finite");
  core::NamedTensors wrong_dtype = good.tensors;
  wrong_dtype.insert_or_assign("out/weight", core::DenseTensor::zeros(DType::F64, {4, 2}));
  rejects(result_bytes(wrong_dtype, "7"), "dtype F64 differs from the accumulator's F32");
  const auto valid = result_bytes(good);
  rejects(std::vector<std::uint8_t>(valid.begin(), valid.end() - 3), "safetensors");
}

TEST_CASE("add_result_rejects_an_index_outside_the_uploaded_dense_shape") {
  core::RoundAggregator round(
      core::parse_update_plan(
          R"({"updates": {"h/weight": {"encoding": "coo", "aggregator": "sum"}}})"),
      model());
  // Upload h/weight with a distinctive dense_shape, then shrink it in the bytes so that
  // index 5 is out of range: only the decoder stands between such bytes and the accumulator.
  core::NamedTensors t;
  t.emplace("h/weight",
            core::SparseTensor(core::CooIndices{{5, 4}}, core::DenseTensor(xt::xarray<float>{1.f}),
                               {1000003, 5}));
  auto bytes = result_bytes(t, "3");
  const std::int64_t marker = 1000003, replacement = 3;
  const auto it =
      std::search(bytes.begin(), bytes.end(), reinterpret_cast<const std::uint8_t*>(&marker),
                  reinterpret_cast<const std::uint8_t*>(&marker) + 8);
  REQUIRE(it != bytes.end());
  std::memcpy(&*it, &replacement, 8);
  CHECK_THROWS_MATCHES(add(round, bytes), InvalidInput, MessageContains("out of range"));
  CHECK(round.num_reports() == 0);
}

TEST_CASE("round_merge_of_partial_rounds_equals_one_round_over_all_results") {
  std::mt19937_64 rng(34);
  core::RoundAggregator a(kPlan, model()), b(kPlan, model());
  std::vector<Client> clients;
  for (int c = 0; c < 10; ++c) {
    clients.push_back(random_client(rng));
    add(c % 3 ? a : b, result_bytes(clients.back()));
  }
  a.merge(b);
  CHECK(a.num_reports() == 10);
  check_next_model(a.next_model(), clients);
}

TEST_CASE("round_merge_rejects_another_plan_or_model") {
  core::RoundAggregator a(kPlan, model());
  core::RoundAggregator other_plan(
      core::parse_update_plan(
          R"({"updates": {"out/weight": {"encoding": "dense", "aggregator": "sum"}}})"),
      model());
  CHECK_THROWS_MATCHES(a.merge(other_plan), InvalidInput, MessageContains("plans' updates differ"));
  core::NamedTensors m = model();
  std::get<core::DenseTensor>(m.at("out/bias")).data<float>()[0] = 9.f;
  CHECK_THROWS_MATCHES(a.merge(core::RoundAggregator(kPlan, m)), InvalidInput,
                       MessageContains("global models differ"));
}

TEST_CASE("round_checkpoint_resumes_to_the_same_next_model_bit_for_bit") {
  std::mt19937_64 rng(35);
  core::RoundAggregator uninterrupted(kPlan, model()), first_half(kPlan, model());
  std::vector<std::vector<std::uint8_t>> results;
  for (int c = 0; c < 8; ++c) results.push_back(result_bytes(random_client(rng)));
  for (int c = 0; c < 4; ++c) add(first_half, results[c]);
  const auto ckpt = first_half.checkpoint();
  core::RoundAggregator resumed =
      core::RoundAggregator::restore(kPlan, model(), ckpt.data(), ckpt.size());
  CHECK(resumed.num_reports() == 4);
  CHECK(resumed.total_weight() == first_half.total_weight());
  for (int c = 4; c < 8; ++c) add(resumed, results[c]);
  for (const auto& r : results) add(uninterrupted, r);
  CHECK(resumed.next_model() == uninterrupted.next_model());
  CHECK(resumed.checkpoint() == uninterrupted.checkpoint());
}

TEST_CASE("round_restore_rejects_checkpoints_of_another_plan_or_inconsistent_state") {
  std::mt19937_64 rng(36);
  core::RoundAggregator round(kPlan, model());
  add(round, result_bytes(random_client(rng)));
  const auto ckpt = round.checkpoint();
  const auto rejects = [](const std::string& plan, const std::vector<std::uint8_t>& bytes,
                          const std::string& fragment) {
    CHECK_THROWS_MATCHES(core::RoundAggregator::restore(core::parse_update_plan(plan), model(),
                                                        bytes.data(), bytes.size()),
                         InvalidInput, MessageContains(fragment));
  };
  const std::string other_operator = R"({"updates": {
    "emb/weight": {"encoding": "row_sparse", "aggregator": "weighted_mean"},
    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
    "h/weight": {"encoding": "coo", "aggregator": "clipped_weighted_mean", "clip_norm": 1.0}}})";
  rejects(other_operator, ckpt, "accumulator 'emb/weight' was saved for mean_over_contributors");
  rejects(R"({"updates": {"out/weight": {"encoding": "dense", "aggregator": "weighted_mean"}}})",
          ckpt, "belongs to no accumulator of the plan");
  auto file = core::read_safetensors(ckpt);
  file.metadata["num_reports"] = "2";
  rejects(kPlanJson, core::write_safetensors(file.tensors, file.metadata),
          "holds 1 updates of total weight");
  file = core::read_safetensors(ckpt);
  file.metadata["format"] = "something.else";
  rejects(kPlanJson, core::write_safetensors(file.tensors, file.metadata),
          "format 'something.else' is not");
  rejects(kPlanJson, std::vector<std::uint8_t>(ckpt.begin(), ckpt.begin() + 20), "safetensors");
}

}  // namespace
}  // namespace fedleaf

namespace fedleaf {

// Regression: finite but huge F32 updates (3e38) under weighted_mean in two consecutive rounds
// used to publish +Infinity, after which every upload and every restart failed.
TEST_CASE("next_model_stays_finite_when_huge_finite_updates_overflow_f32") {
  const std::string plan = R"({"updates": {
      "w": {"encoding": "dense", "aggregator": "weighted_mean", "clip": "off"},
      "s": {"encoding": "dense", "aggregator": "sum", "clip": "off"}}})";
  core::NamedTensors m;
  m.emplace("w", core::DenseTensor(xt::xarray<float>{0.0f, 1.0f}));
  m.emplace("s", core::DenseTensor(xt::xarray<float>{0.0f, 1.0f}));
  core::NamedTensors huge;
  huge.emplace("w", core::DenseTensor(xt::xarray<float>{3e38f, 0.5f}));
  huge.emplace("s", core::DenseTensor(xt::xarray<float>{3e38f, 0.5f}));
  const std::vector<std::uint8_t> upload = result_bytes(huge, "1");

  core::RoundAggregator first(core::parse_update_plan(plan), m);
  add(first, upload);
  add(first, upload);  // "s" sums to 6e38: beyond F32 before it even reaches the model
  std::uint64_t withheld_first = 0;
  const core::NamedTensors after_first = first.next_model(&withheld_first);
  core::RoundAggregator second(core::parse_update_plan(plan), after_first);
  add(second, upload);
  add(second, upload);
  std::uint64_t withheld_second = 0;
  const core::NamedTensors after_second = second.next_model(&withheld_second);

  const auto& w1 = std::get<core::DenseTensor>(after_first.at("w"));
  const auto& w2 = std::get<core::DenseTensor>(after_second.at("w"));
  const auto& s2 = std::get<core::DenseTensor>(after_second.at("s"));
  CHECK(w1.data<float>()[0] == 3e38f);
  CHECK(w2.data<float>()[0] == 3e38f);  // 3e38 + 3e38 overflows: the old value is kept
  CHECK(w2.data<float>()[1] == 2.0f);   // the other element still moves: 1 + 0.5 + 0.5
  CHECK(s2.data<float>()[0] == 0.0f);   // both rounds' sums overflowed
  CHECK(s2.data<float>()[1] == 3.0f);   // 1 + (0.5 + 0.5) + (0.5 + 0.5)
  CHECK(withheld_first == 1);
  CHECK(withheld_second == 2);
  for (const auto* t : {&w2, &s2}) {
    for (std::size_t i = 0; i < t->size(); ++i) CHECK(std::isfinite(t->data<float>()[i]));
  }
  // The published bytes pass the decoder's finiteness rule, as a restarted server requires.
  const std::vector<std::uint8_t> bytes = core::write_safetensors(after_second);
  core::SafetensorsReadOptions options;
  options.require_finite = true;
  CHECK_NOTHROW(core::read_safetensors(bytes.data(), bytes.size(), options));
}

}  // namespace fedleaf
