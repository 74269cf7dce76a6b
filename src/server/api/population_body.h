// The body of POST /v1/populations, parsed and checked into the PopulationSpec the repository
// takes (repository/population_spec.h).
//
//   PopulationSpec spec = parse_population_body(R"({"plan": {...}, "seed": 7, "rounds": 10,
//                                                   "clients_per_round": 20})");
//
// Fields (JSON object):
//   id                  optional, 1-64 of [A-Za-z0-9_-]; generated when absent
//   plan                required object (docs/design.md "The plan")
//   initial_model_b64   base64 safetensors of the round-0 model   } exactly one of the two
//   seed                non-negative integer for initialize_model  }
//   rounds              training rounds, >= 1 (default 1)
//   clients_per_round   reports that close a round at once, >= 1 (default 1)
//   min_reports         reports that close a round at its deadline, 1..clients_per_round
//                       (default clients_per_round)
//   round_deadline_s    seconds from a round's start to its deadline, in (0, 1 year] (default 600)
//   lease_s             seconds a claimed task stays with its leaf, in (0, 1 year] (default 120)
//   over_selection      train tasks per round = ceil(clients_per_round * over_selection),
//                       >= 1 (default 1)
//   eval_tasks_per_round  evaluate tasks on each round's model, 0..1000000 (default 0)
//   max_tasks_per_client  tasks (of every kind and round) one client may hold at once, 1..10^7
//                       (default: no bound); its key is the client token presented, so with the
//                       one token a population's leaves share it bounds them together
//   server_optimizer    how a round's aggregate Δ becomes the next model
//                       (core/aggregation/server_optimizer/server_optimizer.h; default FedAvg, x +
//                       Δ):
//                       {"type": "sgd", "learning_rate": η in (0, 1e6] (1), "momentum": β in
//                        [0, 1) (0)}, or
//                       {"type": "adam", "learning_rate": η (0.01), "beta1": [0, 1) (0.9),
//                        "beta2": [0, 1) (0.99), "epsilon": (0, 1e6] (1e-3),
//                        "bias_correction": bool (true)}
//                       errors name the field: "population.server_optimizer.momentum: ..."
//   mode                "synchronous" (default: rounds with a barrier) or "buffered" (FedBuff,
//                       core/aggregation/round/buffered_spec.h), which takes buffer_size (K,
//                       required), concurrency (K), max_staleness (10) and staleness_weight
//                       ({"weight": "polynomial", "exponent": 0.5} or {"weight": "constant"})
//                       and refuses clients_per_round, min_reports and over_selection; its
//                       settings get clients_per_round = min_reports = K and
//                       train_tasks_per_round = concurrency. The buffered fields without
//                       "mode": "buffered" are refused.
//   privacy             a device-level (ε, δ) guarantee (repository/privacy_spec.h; docs/design.md
//                       "Privacy"): {"mechanism": "dp_ftrl_tree", "noise_multiplier",
//                       "clip_norm", "delta", "max_epsilon", "max_participations",
//                       "min_separation", "enrollments_per_token_per_hour" (1000)}. Refused
//                       with "mode": "buffered" and with the plan's explicit data-dependent rules
//                       (check_private_plan). Without "rounds" the run gets the most rounds up to
//                       100000 whose ε stays within max_epsilon; "rounds" past it is refused
//                       with the ε it would reach.
// Any other field is InvalidInput (a typo would otherwise run with the default), and so is a
// key given twice. Throws InvalidInput naming the field and the rule.
#pragma once

#include <string>

#include "server/repository/population_spec.h"

namespace fedleaf::server {

PopulationSpec parse_population_body(const std::string& body);

// Whether `id` is a valid population id (1-64 of [A-Za-z0-9_-]).
bool is_valid_population_id(const std::string& id);

}  // namespace fedleaf::server
