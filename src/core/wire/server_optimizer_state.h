// The server optimizer's state as stored bytes ("fedleaf.server_optimizer.v1"): what a
// population keeps beside each published model so that the next round's step continues from it
// (server_optimizer.h says which arrays a kind keeps). One writer and one reader.
//
//   std::vector<std::uint8_t> bytes = write_server_optimizer_state("adam", state);
//   NamedTensors again = read_server_optimizer_state(bytes.data(), bytes.size(), "adam");
//
// Safetensors (safetensors.h) whose __metadata__ holds "format" = kServerOptimizerStateFormat and
// "type" = the optimizer's kind, and whose arrays are the kind's `<tensor>@<suffix>` arrays (none
// for a kind that keeps no state). The bytes of a given state never change: a stored state
// written by an older server is read by a newer one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/tensor/tensor.h"

namespace fedleaf::core {

inline constexpr const char* kServerOptimizerStateFormat = "fedleaf.server_optimizer.v1";

std::vector<std::uint8_t> write_server_optimizer_state(std::string_view type,
                                                       const NamedTensors& arrays);

// The arrays of `size` bytes a store kept, after checking that they are safetensors with finite
// values, of this format and of the optimizer `type` (the population's). InvalidInput "server
// optimizer state: ..." naming the rule. Which arrays a kind needs is the optimizer's to check.
NamedTensors read_server_optimizer_state(const std::uint8_t* data, std::size_t size,
                                         std::string_view type);

}  // namespace fedleaf::core
