#include "core/aggregation/operators/operator_table.h"

#include <vector>

#include "core/error.h"

namespace fedleaf::core {

SparseSumOperator parse_operator_name(std::string_view name, const std::string& context) {
  for (const SparseSumOperator op : kSparseSumOperators) {
    if (name == operator_name(op)) return op;
  }
  throw InvalidInput(context + ": unknown aggregator '" + std::string(name) + "' (expected " +
                     operator_names([](const OperatorRules&) { return true; }) + ")");
}

std::string operator_names(const std::function<bool(const OperatorRules&)>& which) {
  std::vector<std::string_view> names;
  for (const SparseSumOperator op : kSparseSumOperators) {
    if (which(operator_rules(op))) names.push_back(operator_name(op));
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace fedleaf::core
