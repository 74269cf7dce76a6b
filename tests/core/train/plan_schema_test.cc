#include "core/train/plan_schema.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/model/layer_registry.h"
#include "core/train/plan.h"

namespace fedleaf {
namespace {

using core::parse_plan;
using core::plan_schema;

// What the parser answers to an unknown field "zz" at `path` of a valid plan: the fields it
// lists, in order.
std::vector<std::string> fields_listed_at(nlohmann::json plan,
                                          const nlohmann::json::json_pointer& at) {
  plan[at]["zz"] = 1;
  try {
    parse_plan(plan.dump());
  } catch (const InvalidInput& e) {
    const std::string m = e.what();
    const std::string lead = "(the fields are ";
    const std::size_t begin = m.find(lead);
    REQUIRE(begin != std::string::npos);
    std::vector<std::string> out;
    std::string list = m.substr(begin + lead.size(), m.size() - begin - lead.size() - 1);
    for (std::size_t p; (p = list.find(", ")) != std::string::npos; list.erase(0, p + 2)) {
      out.push_back(list.substr(0, p));
    }
    out.push_back(list);
    return out;
  }
  FAIL("no error for an unknown field at " << at.to_string());
  return {};
}

const nlohmann::json kPlan = nlohmann::json::parse(R"({
  "model": {"inputs": {"tokens": "sparse_ids", "x": {"type": "dense", "dim": 2}},
            "layers": [{"type": "embedding_bag", "name": "emb", "input": "tokens", "vocab": 8, "dim": 2},
                       {"type": "concatenate", "name": "c", "inputs": ["emb", "x"]},
                       {"type": "dropout", "rate": 0},
                       {"type": "dense", "name": "h", "units": 2},
                       {"type": "relu", "name": "r"},
                       {"type": "add", "name": "a", "inputs": ["r", "r"]},
                       {"type": "dense", "name": "out", "units": 1}],
            "loss": "sigmoid_cross_entropy"},
  "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
  "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "sum"}},
  "features": {"num_buckets": 8},
  "eval": {"batch_size": 4}})");

TEST_CASE("plan_schema_lists_the_fields_the_parser_checks_object_by_object") {
  const core::PlanSchema s = plan_schema();
  using P = nlohmann::json::json_pointer;
  const std::pair<const char*, const char*> objects[] = {
      {"plan", ""},
      {"plan.model", "/model"},
      {"plan.model.inputs.*", "/model/inputs/x"},
      {"plan.model.layers.*[type=embedding_bag]", "/model/layers/0"},
      {"plan.model.layers.*[type=concatenate]", "/model/layers/1"},
      {"plan.model.layers.*[type=dropout]", "/model/layers/2"},
      {"plan.model.layers.*[type=dense]", "/model/layers/3"},
      {"plan.model.layers.*[type=relu]", "/model/layers/4"},
      {"plan.model.layers.*[type=add]", "/model/layers/5"},
      {"plan.train", "/train"},
      {"plan.train.optimizer", "/train/optimizer"},
      {"plan.updates.*", "/updates/emb~1weight"},
      {"plan.features", "/features"},
      {"plan.eval", "/eval"},
  };
  for (const auto& [path, pointer] : objects) {
    INFO(path);
    REQUIRE(s.objects.count(path) == 1);
    CHECK(s.objects.at(path) == fields_listed_at(kPlan, P(pointer)));
  }
}

TEST_CASE("plan_schema_lists_every_layer_type_and_the_names_each_choice_accepts") {
  const core::PlanSchema s = plan_schema();
  CHECK(s.choices.at("plan.model.layers.*.type") ==
        std::vector<std::string>{"embedding_bag", "dense", "relu", "sigmoid", "tanh", "concatenate",
                                 "add", "multiply", "dropout"});
  CHECK(s.choices.at("plan.updates.*.compression.ids") ==
        std::vector<std::string>{"i64", "u32", "delta_varint"});
  // Every name listed is one the parser takes: a loss it does not know would fail here.
  for (const std::string& loss : s.choices.at("plan.model.loss")) {
    nlohmann::json plan = kPlan;
    plan["model"]["loss"] = loss;
    INFO(loss);
    try {
      parse_plan(plan.dump());
    } catch (const InvalidInput& e) {
      CHECK_THAT(e.what(), !Catch::Contains("unknown loss"));
    }
  }
  const nlohmann::json text = nlohmann::json::parse(core::plan_schema_json());
  CHECK(text.at("objects").at("plan.eval") == nlohmann::json{"batch_size"});
}

TEST_CASE("plan_schema_lists_each_layer_kinds_choices_from_the_layer_table") {
  const core::PlanSchema s = plan_schema();
  const std::string layers = "plan.model.layers.*";
  std::set<std::string> from_table;
  for (const core::LayerKind* kind : core::layer_kinds()) {
    const std::string form = layers + "[type=" + kind->type + "]";
    const std::vector<std::string> fields = s.objects.at(form);
    for (const core::LayerChoice& choice : kind->choices) {
      const std::string path = form + "." + choice.field;
      INFO(path);
      from_table.insert(path);
      CHECK(std::count(fields.begin(), fields.end(), choice.field) == 1);
      REQUIRE(s.choices.count(path) == 1);
      CHECK(s.choices.at(path) ==
            std::vector<std::string>(choice.names.begin(), choice.names.end()));
    }
  }
  // No layer choice is listed but the table's, and the table holds the kinds' own lists.
  std::set<std::string> listed;
  for (const auto& [path, names] : s.choices) {
    if (path.rfind(layers + "[", 0) == 0) listed.insert(path);
  }
  CHECK(listed == from_table);
  CHECK(s.choices.at(layers + "[type=embedding_bag].combiner") ==
        std::vector<std::string>{"sum", "mean", "sqrtn"});
  CHECK(s.choices.at(layers + "[type=dense].activation") ==
        std::vector<std::string>{"relu", "sigmoid", "tanh"});
}

TEST_CASE("each_layer_choice_the_table_lists_is_the_one_its_parser_reads") {
  const nlohmann::json& entries = kPlan["model"]["layers"];
  for (const core::LayerKind* kind : core::layer_kinds()) {
    for (const core::LayerChoice& choice : kind->choices) {
      INFO(kind->type << "." << choice.field);
      // The first layer of the kind in kPlan (a kind with choices needs one there).
      std::size_t at = 0;
      while (at < entries.size() && entries[at]["type"] != kind->type) ++at;
      REQUIRE(at < entries.size());
      const std::string path = "plan.model.layers[" + std::to_string(at) + "]." + choice.field;
      nlohmann::json plan = kPlan;
      plan["model"]["layers"][at][choice.field] = "zz";
      try {
        parse_plan(plan.dump());
        FAIL("'zz' accepted at " << path);
      } catch (const InvalidInput& e) {
        const std::string m = e.what();
        CHECK(m.rfind(path + ": ", 0) == 0);
        for (const char* name : choice.names) CHECK_THAT(m, Catch::Contains(name));
      }
      for (const char* name : choice.names) {
        plan["model"]["layers"][at][choice.field] = name;
        CHECK_NOTHROW(parse_plan(plan.dump()));
      }
    }
  }
}

}  // namespace
}  // namespace fedleaf
