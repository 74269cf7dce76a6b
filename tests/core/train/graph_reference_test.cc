// A small wide & deep graph with a shared table against a dense f64 reference written out by
// hand: the forward loss and every parameter's gradient of one training step (dropout's mask
// included), so the graph's wiring (shared lookups, concatenate, add, summed gradients) is checked
// independently of the layer code.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <vector>

#include "core/data/batch.h"
#include "core/model/dropout.h"
#include "core/model/model.h"
#include "core/train/forward_over_dataset.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;

namespace {

// Inputs a (weighted ids), c (ids), x (dense 3); tokens table E [8, 3] looked up by a (sum) and
// by c (mean); wide table W [8, 1] on c (sum); deep: concat [ea, ec, x] → dense H 9×4 tanh →
// dropout 0.3 → dense O 4×1; logit = deep + wide; sigmoid cross entropy.
const char* kPlan = R"({"kind": "evaluate", "model": {
    "inputs": {"a": "sparse_ids", "c": "sparse_ids", "x": {"type": "dense", "dim": 3}},
    "layers": [
      {"type": "embedding_bag", "name": "tokens", "input": "a", "vocab": 8, "dim": 3,
       "combiner": "sum", "init_scale": 0.5},
      {"type": "embedding_bag", "name": "c_emb", "input": "c", "table": "tokens",
       "combiner": "mean"},
      {"type": "concatenate", "name": "deep_in", "inputs": ["tokens", "c_emb", "x"]},
      {"type": "dense", "name": "h", "units": 4, "activation": "tanh"},
      {"type": "dropout", "name": "drop", "rate": 0.3, "seed": 11},
      {"type": "dense", "name": "deep", "units": 1},
      {"type": "embedding_bag", "name": "wide", "input": "c", "vocab": 8, "dim": 1,
       "combiner": "sum", "init_scale": 0.5},
      {"type": "add", "name": "logit", "inputs": ["deep", "wide"]}],
    "loss": "sigmoid_cross_entropy"}})";

using Grads = std::map<std::string, std::vector<double>>;

std::vector<double> as_doubles(const DenseTensor& t) {
  const float* v = t.data<float>();
  return std::vector<double>(v, v + t.size());
}

}  // namespace

TEST_CASE("wide_and_deep_graph_with_a_shared_table_matches_a_dense_f64_reference",
          "[graph_reference]") {
  const std::size_t n = 6;
  SeededRandom rng(5);
  std::vector<InputColumns> inputs;
  inputs.push_back(fedleaf::test::random_sparse_input("a", rng, n, 8, 4, true));
  inputs.push_back(fedleaf::test::random_sparse_input("c", rng, n, 8, 3, false));
  inputs.push_back(fedleaf::test::random_dense_input("x", rng, n, 3));
  const std::vector<InputColumns> columns = inputs;
  std::vector<std::int32_t> labels(n);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(2));
  const Dataset data = Dataset::from_inputs(std::move(inputs), labels);

  const Plan plan = parse_plan(kPlan);
  Parameters params = fedleaf::test::initial_parameters(kPlan, 3);
  const std::vector<double> E = as_doubles(params.at("tokens/weight"));
  const std::vector<double> W = as_doubles(params.at("wide/weight"));
  const std::vector<double> H = as_doubles(params.at("h/weight"));
  const std::vector<double> Hb = as_doubles(params.at("h/bias"));
  const std::vector<double> O = as_doubles(params.at("deep/weight"));
  const std::vector<double> Ob = as_doubles(params.at("deep/bias"));

  // The reference: example by example, in f64.
  Grads ref{{"tokens/weight", std::vector<double>(24)}, {"wide/weight", std::vector<double>(8)},
            {"h/weight", std::vector<double>(36)},      {"h/bias", std::vector<double>(4)},
            {"deep/weight", std::vector<double>(4)},    {"deep/bias", std::vector<double>(1)}};
  double loss = 0.0;
  const InputColumns& a = columns[0];
  const InputColumns& c = columns[1];
  const InputColumns& x = columns[2];
  for (std::size_t b = 0; b < n; ++b) {
    double j[9] = {0};
    for (std::uint32_t k = a.offsets[b]; k < a.offsets[b + 1]; ++k) {
      for (int d = 0; d < 3; ++d) j[d] += a.weights[k] * E[a.ids[k] * 3 + d];
    }
    const std::uint32_t c_count = c.offsets[b + 1] - c.offsets[b];
    double wide = 0.0;
    for (std::uint32_t k = c.offsets[b]; k < c.offsets[b + 1]; ++k) {
      for (int d = 0; d < 3; ++d) j[3 + d] += E[c.ids[k] * 3 + d] / c_count;
      wide += W[c.ids[k]];
    }
    for (int d = 0; d < 3; ++d) j[6 + d] = x.dense[b * 3 + d];
    double t[4], m[4], deep = Ob[0];
    for (int u = 0; u < 4; ++u) {
      double z = Hb[u];
      for (int i = 0; i < 9; ++i) z += j[i] * H[i * 4 + u];
      t[u] = std::tanh(z);
      m[u] = dropout_keeps(11, 0, b, u, 0.3f) ? 1.0 / (1.0 - 0.3f) : 0.0;
      deep += t[u] * m[u] * O[u];
    }
    const double s = deep + wide;
    const double y = labels[b];
    loss += std::max(s, 0.0) - s * y + std::log1p(std::exp(-std::fabs(s)));
    const double gs = (1.0 / (1.0 + std::exp(-s)) - y) / n;
    ref["deep/bias"][0] += gs;
    double gj[9] = {0};
    for (int u = 0; u < 4; ++u) {
      ref["deep/weight"][u] += t[u] * m[u] * gs;
      const double gz = O[u] * gs * m[u] * (1.0 - t[u] * t[u]);
      ref["h/bias"][u] += gz;
      for (int i = 0; i < 9; ++i) {
        ref["h/weight"][i * 4 + u] += j[i] * gz;
        gj[i] += H[i * 4 + u] * gz;
      }
    }
    for (std::uint32_t k = a.offsets[b]; k < a.offsets[b + 1]; ++k) {
      for (int d = 0; d < 3; ++d) ref["tokens/weight"][a.ids[k] * 3 + d] += a.weights[k] * gj[d];
    }
    for (std::uint32_t k = c.offsets[b]; k < c.offsets[b + 1]; ++k) {
      for (int d = 0; d < 3; ++d) ref["tokens/weight"][c.ids[k] * 3 + d] += gj[3 + d] / c_count;
      ref["wide/weight"][c.ids[k]] += gs;
    }
  }

  Model model(plan.model, params, n);
  std::vector<std::vector<std::uint32_t>> global;
  BatchGatherer gather(data, global_feed_sources(plan.model, data, global));
  const auto order = fedleaf::test::identity_order(n);
  const LossSums sums = model.forward_backward(gather.gather(order.data(), n));
  CHECK(sums.loss == Approx(loss).epsilon(1e-5));
  for (const ParameterGradient& g : model.gradients()) {
    const std::vector<double>& expected = ref.at(g.name);
    std::vector<double> got(expected.size(), 0.0);
    if (g.row_sparse) {
      // One row-sparse gradient for the shared table: each row once, increasing.
      for (std::size_t r = 0; r < g.touched_rows.size(); ++r) {
        if (r > 0) CHECK(g.touched_rows[r - 1] < g.touched_rows[r]);
        for (std::size_t k = 0; k < g.row_size; ++k) {
          got[g.touched_rows[r] * g.row_size + k] = g.values[r * g.row_size + k];
        }
      }
    } else {
      got.assign(g.values.begin(), g.values.end());
    }
    for (std::size_t i = 0; i < expected.size(); ++i) {
      INFO(g.name << "[" << i << "] model " << got[i] << " reference " << expected[i]);
      CHECK(std::fabs(got[i] - expected[i]) <= 1e-6 + 1e-4 * std::fabs(expected[i]));
    }
  }
}
