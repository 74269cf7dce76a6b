// Buffered asynchronous aggregation (FedBuff, Nguyen et al. 2022, "Federated Learning with
// Buffered Asynchronous Aggregation"): how a population in "mode": "buffered" runs, and the
// staleness weight of a report.
//
//   BufferedSpec spec = parse_buffered_spec(body, "population");  // the population body
//   double w = staleness_weight(spec, current_version - task_version);
//   aggregator.add_result(bytes.data(), bytes.size(), w);          // num_examples × w
//
// A buffered population keeps up to `concurrency` train tasks out at once, each on the model
// version current when the server handed it out; every accepted report is folded into the open
// buffer at once, weighted by its num_examples times its staleness weight, and every
// `buffer_size` (K) accepted reports publish the next version (through the server optimizer).
// A report's staleness s is the number of versions published since the server handed out its
// task (the server's record, never a number the leaf sends); one with s > max_staleness is
// refused. Staleness weights (the paper's §3 choices):
//   polynomial (default):  w(s) = 1 / (1 + s)^exponent      (exponent 0.5 by default)
//   constant:              w(s) = 1
// How a version's step is normalised (the paper's Algorithm 1 steps by Σ w(sᵢ)·Δᵢ / K):
//   normalized (default):  Δ = Σ nᵢ·w(sᵢ)·Δᵢ / Σ nᵢ·w(sᵢ)   — a weighted mean: a buffer of
//                          equally stale reports moves the model as far as a fresh one
//   unnormalized:          Δ = Σ nᵢ·w(sᵢ)·Δᵢ / Σ nᵢ        — staleness shrinks the step; with
//                          equal nᵢ this is the paper's Σ w(sᵢ)·Δᵢ / K. The server scales the
//                          normalised aggregate by ρ = Σ nᵢ·w(sᵢ) / Σ nᵢ (nᵢ: capped examples).
// Fields of the population body (all under "mode": "buffered"):
//   buffer_size       K, reports per published version, integer in [1, 1000000] (required)
//   concurrency       train tasks out at once, integer in [1, 10000000] (default K)
//   max_staleness     S, integer in [0, 1000000] (default 10)
//   staleness_weight  {"weight": "polynomial", "exponent": (0, 100] (0.5)} or
//                     {"weight": "constant"} (default polynomial, 0.5)
//   staleness_normalization  "normalized" (default) or "unnormalized" (above)
// Errors: InvalidInput "<path>.<field>: <rule>".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace fedleaf::core {

enum class StalenessWeightType { kPolynomial, kConstant };
enum class StalenessNormalization { kNormalized, kUnnormalized };

struct BufferedSpec {
  std::uint64_t buffer_size = 1;  // K
  std::uint64_t concurrency = 1;
  std::uint64_t max_staleness = 10;  // S
  StalenessWeightType weight = StalenessWeightType::kPolynomial;
  double exponent = 0.5;  // polynomial only
  StalenessNormalization normalization = StalenessNormalization::kNormalized;
  bool operator==(const BufferedSpec& other) const;
  bool operator!=(const BufferedSpec& other) const { return !(*this == other); }
};

// Reads buffer_size, concurrency, max_staleness, staleness_weight and staleness_normalization
// from `body` (the
// population body; its other fields are not looked at). InvalidInput "<path>.<field>: <rule>"
// for a missing buffer_size, a value out of range, an unknown weight or a field of
// staleness_weight its weight does not have.
BufferedSpec parse_buffered_spec(const nlohmann::json& body, const std::string& path);
// The spec as compact JSON with every field written out (what a store keeps; the normalization
// only when "unnormalized", so a spec stored before it reads the same), and its inverse
// for stored text: "" is a synchronous population (nullopt).
std::string buffered_spec_json(const BufferedSpec& spec);
std::optional<BufferedSpec> buffered_spec_from_text(const std::string& text,
                                                    const std::string& path);

// The weight a report of staleness s is folded with, relative to its num_examples: in (0, 1],
// 1 at s = 0, non-increasing in s.
double staleness_weight(const BufferedSpec& spec, std::uint64_t staleness);

}  // namespace fedleaf::core
