#include "core/aggregation/server_optimizer/optimizer_table.h"

namespace fedleaf::core {

// Each kind's file defines its function; a new kind is its declaration here and its entry in
// the list below.
const ServerOptimizerKind& sgd_server_optimizer();
const ServerOptimizerKind& adam_server_optimizer();
const ServerOptimizerKind& adagrad_server_optimizer();

const std::vector<const ServerOptimizerKind*>& server_optimizer_kinds() {
  static const std::vector<const ServerOptimizerKind*> kinds = {
      &sgd_server_optimizer(),
      &adam_server_optimizer(),
      &adagrad_server_optimizer(),
  };
  return kinds;
}

const ServerOptimizerKind* find_server_optimizer_kind(std::string_view name) {
  for (const ServerOptimizerKind* kind : server_optimizer_kinds()) {
    if (kind->name() == name) return kind;
  }
  return nullptr;
}

std::string server_optimizer_kind_names() {
  const std::vector<const ServerOptimizerKind*>& kinds = server_optimizer_kinds();
  std::string out;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) out += i + 1 == kinds.size() ? " or " : ", ";
    out += kinds[i]->name();
  }
  return out;
}

}  // namespace fedleaf::core
