// The one rule for fields fedleaf does not know in a JSON object from outside (plans, population
// specs): refused, naming the field and the fields the object may have — skipped, a typo
// ("learning_rte", "clients_per_rnd") would run with the default, silently.
//
//   check_known_fields(train, "plan.train", {"optimizer", "epochs", "batch_size"});
//   // InvalidInput "plan.train: unknown field 'epoch' (the fields are optimizer, epochs,
//   batch_size)"
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fedleaf::core {

void check_known_fields(const nlohmann::json& object, const std::string& path,
                        std::initializer_list<const char*> known);
// The same for fields known only at run time (a server optimizer kind's settings).
void check_known_fields(const nlohmann::json& object, const std::string& path,
                        const std::vector<std::string>& known);

}  // namespace fedleaf::core
