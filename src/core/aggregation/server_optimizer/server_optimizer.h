// Server optimizers (Reddi et al. 2021, "Adaptive Federated Optimization"): how a round's
// aggregate becomes the next model. The aggregate of a tensor (RoundAggregator::aggregates(),
// the plan's operator applied to the round's reports) is the round's *delta* Δ — the clients'
// average change, x_client − x_global, so a descent direction; the pseudo-gradient of the
// paper is g = −Δ.
//
//   ServerOptimizerSpec spec = parse_server_optimizer(body["server_optimizer"],
//                                                     "population.server_optimizer");
//   ServerOptimizer opt(spec);
//   NamedTensors state;                                  // empty: the initial state (zeros)
//   ServerOptimizerStep s = opt.step(round.model(), round.aggregates(), state);
//   // s.model is the next model, s.state the state the next round starts from
//   std::vector<std::uint8_t> saved = opt.save_state(s.state);       // with the model
//   NamedTensors again = opt.load_state(saved.data(), saved.size(), plan, s.model);
//
// Each kind is one file beside this one, listed in optimizer_table.cc (server_optimizer_kind.h
// says what a kind states; CONTRIBUTING.md, "Adding a server optimizer"). Everything below holds
// for every kind.
// Rules, per element, in f64 from the stored values, each result rounded once to the
// parameter's dtype (moments are kept in the parameter's dtype too). sgd with η = 1 and β = 0 is
// FedAvg, the default: x + Δ rounded once, which is bit for bit what RoundAggregator::next_model()
// publishes (the server keeps calling next_model() for it).
//
// Laziness (row-sparse and coo tables): only the keys the aggregate holds move — for row_sparse
// the rows a report sent (and min_contributors kept), for coo the elements; a dense-encoded
// tensor is one key, moved every round that produces its aggregate (not when min_contributors
// withheld it). A key the aggregate does not hold keeps its value and all of its state: its
// momentum is neither applied nor decayed, its Adam moments stay, and its step count t stays.
// Adam's t is therefore per key — the rounds that touched that key, not the round number — so a
// row first touched in round 100 takes a fully bias-corrected first step (≈ η·sign(Δ)), as if
// the rounds that did not touch it had not happened for it. (A global t would give such a row
// the uncorrected step (1 − β1)·Δ/(√(1 − β2)·|Δ| + ε): about η with the defaults, 3.2·η with
// β2 = 0.999.)
// Count aggregates (the count operator, I64) are statistics, not gradients: they are added to
// the model as next_model() adds them, whatever the optimizer. An element whose new value (or
// new moment) would not be finite in its dtype keeps its old value and state, as next_model()
// keeps it; ServerOptimizerStep::withheld_nonfinite counts them.
//
// State (save_state / load_state; the bytes are core/wire/server_optimizer_state.h): per tensor
// the optimizer moves, the kind's arrays `<name>@<suffix>` (momentum; m, v and steps; ...), in
// the parameter's dtype and shape, or I64 with one step count per key ([1] for a dense encoding,
// [rows] for row_sparse, [elements] for coo). An empty state is the initial one (zeros, t = 0);
// a non-empty one holds every array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/server_optimizer/server_optimizer_kind.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

// A kind and its settings, every one filled in (in the order of kind->settings()). The default is
// FedAvg (sgd, η = 1, β = 0).
struct ServerOptimizerSpec {
  ServerOptimizerSpec();
  ServerOptimizerSpec(const ServerOptimizerKind& kind, OptimizerSettings settings);
  const ServerOptimizerKind* kind;
  OptimizerSettings settings;
  std::string_view type() const { return kind->name(); }
  // The value of the kind's setting `name`; std::out_of_range for a setting the kind lacks.
  double setting(std::string_view name) const;
  bool operator==(const ServerOptimizerSpec& other) const;
  bool operator!=(const ServerOptimizerSpec& other) const { return !(*this == other); }
};

// Whether the spec is FedAvg (sgd, η = 1, β = 0): the aggregate is added as it is.
bool is_fedavg(const ServerOptimizerSpec& spec);

// Parses {"type": <kind>, <setting>: <value>, ...}; absent settings take the kind's defaults.
// InvalidInput "<path>.<field>: <rule>" for a missing or unknown type, a field the kind does not
// have, a number outside its rule's range ((0, 1e6] for rates, [0, 1) for decays; each also as
// the f64 the rules use), a flag that is not a boolean.
ServerOptimizerSpec parse_server_optimizer(const nlohmann::json& object, const std::string& path);
// The spec as compact JSON with every setting of its kind (what a store keeps; parse_* reads it
// back to the same spec), and its inverse for stored text: "" is FedAvg.
std::string server_optimizer_json(const ServerOptimizerSpec& spec);
ServerOptimizerSpec server_optimizer_from_text(const std::string& text, const std::string& path);

struct ServerOptimizerStep {
  NamedTensors model;  // the next model: every tensor of the old one, the aggregated ones moved
  NamedTensors state;  // the state after this round (empty when the optimizer keeps none)
  std::uint64_t withheld_nonfinite = 0;  // elements kept at their old value (see above)
};

class ServerOptimizer {
 public:
  explicit ServerOptimizer(ServerOptimizerSpec spec);
  const ServerOptimizerSpec& spec() const { return spec_; }
  // Whether the optimizer keeps state from round to round (sgd with β > 0, adam, ...).
  bool stateful() const;

  // The next model from `model` (the round's model) and the round's aggregates, starting from
  // `state` (the previous step's, or empty). InvalidInput when an aggregate names a tensor the
  // model lacks or holds with another shape or dtype, or `state` does not fit (load_state's
  // rules). Pure: neither input changes.
  ServerOptimizerStep step(const NamedTensors& model,
                           const std::vector<TensorAggregate>& aggregates,
                           const NamedTensors& state) const;

  // The state as bytes (core/wire/server_optimizer_state.h), and its inverse. load_state
  // validates everything (the bytes come from a store): the format, the type, and that the
  // arrays are exactly those step() keeps for the plan's tensors of `model` (names, dtypes,
  // shapes; steps ≥ 0; moments finite, second moments ≥ 0); InvalidInput naming the array and the
  // rule. Empty bytes are the initial state.
  std::vector<std::uint8_t> save_state(const NamedTensors& state) const;
  NamedTensors load_state(const std::uint8_t* data, std::size_t size, const UpdatePlan& plan,
                          const NamedTensors& model) const;

 private:
  ServerOptimizerSpec spec_;
  std::vector<StateArray> arrays_;  // kept per moved tensor
};

}  // namespace fedleaf::core
