// The server optimizer table: every kind named once (optimizer_table.cc), each defined in its own
// file beside it. Code outside server_optimizer/ never names a kind: it holds a spec
// (server_optimizer.h) and asks it.
//
//   const ServerOptimizerKind* adam = find_server_optimizer_kind("adam");   // nullptr: unknown
//   server_optimizer_kind_names() == "sgd, adam or adagrad"
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/aggregation/server_optimizer/server_optimizer_kind.h"

namespace fedleaf::core {

// Every kind, in the order messages list them.
const std::vector<const ServerOptimizerKind*>& server_optimizer_kinds();
const ServerOptimizerKind* find_server_optimizer_kind(std::string_view name);
// The kinds' names as a message lists them: "a, b or c".
std::string server_optimizer_kind_names();

}  // namespace fedleaf::core
