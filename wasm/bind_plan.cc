// JS API of a parsed plan (module.Plan, plan_handle.h) and of the facts the core derived from it
// once: the embedding tables (core/train/plan_tables.h) and the rows of each a dataset needs.
#include <emscripten/bind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/train/plan.h"
#include "core/train/plan_schema.h"
#include "core/train/table_rows.h"
#include "js_interop.h"
#include "plan_handle.h"

namespace fedleaf::wasm {
namespace {

val ids_to_js(const std::vector<std::uint32_t>& ids) {
  return bytes_to_js(reinterpret_cast<const std::uint8_t*>(ids.data()),
                     ids.size() * sizeof(std::uint32_t));
}

val padding_to_js(const core::SelectPadding& padding) {
  if (padding.rule == core::SelectPadding::Rule::kNone) return val::null();
  val out = val::object();
  const bool multiple = padding.rule == core::SelectPadding::Rule::kMultiple;
  out.set(multiple ? "multiple" : "count", static_cast<double>(padding.n));
  return out;
}

// The table's download rules: its "updates" entry's, "full" without one.
void set_download(val& out, const core::Plan& plan, const core::PlanTable& table) {
  const core::TensorUpdatePlan* update = plan.updates.find(table.parameter);
  const bool select = update != nullptr && update->download == core::DownloadMode::kSelect;
  out.set("download", std::string(select ? "select" : "full"));
  out.set("maxSelectRows", select ? static_cast<double>(update->max_select_rows) : 0.0);
  out.set("padding", select ? padding_to_js(update->select_padding) : val::null());
}

// The plan validated by the core's parser, or an Error naming the JSON path.
void validate_plan(const std::string& plan_json) {
  call_from_js([&] { core::parse_plan(plan_json); });
}

}  // namespace

std::string PlanHandle::kind() const {
  return plan_->kind == core::PlanKind::kTrain ? "train" : "evaluate";
}

val PlanHandle::tables() const {
  return call_from_js([&] {
    const core::ModelSpec& model = plan_->model;
    val out = val::array();
    for (const core::PlanTable& t : plan_->tables) {
      val table = val::object();
      table.set("name", t.parameter);
      table.set("owner", model.layers[t.owner].name);
      val lookups = val::array();
      for (const std::size_t l : t.lookups) lookups.call<void>("push", model.layers[l].name);
      table.set("lookups", lookups);
      val inputs = val::array();
      for (const std::size_t i : t.inputs) inputs.call<void>("push", model.inputs[i].name);
      table.set("inputs", inputs);
      table.set("vocab", static_cast<double>(t.vocab));
      table.set("dim", static_cast<double>(t.dim));
      set_download(table, *plan_, t);
      out.call<void>("push", table);
    }
    return out;
  });
}

val PlanHandle::table_rows(const DatasetHandle& dataset, const std::string& tensor) const {
  return call_from_js(
      [&] { return ids_to_js(core::table_distinct_ids(*plan_, dataset.dataset(), tensor)); });
}

val PlanHandle::select_request(const DatasetHandle& dataset) const {
  return call_from_js([&] {
    val out = val::array();
    for (const core::PlanTable& t : plan_->tables) {
      val entry = val::object();
      set_download(entry, *plan_, t);
      if (entry["download"].as<std::string>() != "select") continue;
      entry.delete_("download");
      entry.set("name", t.parameter);
      entry.set("ids", ids_to_js(core::table_distinct_ids(*plan_, dataset.dataset(), t.parameter)));
      entry.set("vocab", static_cast<double>(t.vocab));
      out.call<void>("push", entry);
    }
    return out;
  });
}

EMSCRIPTEN_BINDINGS(fedleaf_plan) {
  emscripten::class_<PlanHandle>("Plan")
      .class_function("parse", &PlanHandle::parse, emscripten::allow_raw_pointers())
      .function("kind", &PlanHandle::kind)
      .function("tables", &PlanHandle::tables)
      .function("tableRows", &PlanHandle::table_rows)
      .function("selectRequest", &PlanHandle::select_request)
      .function("featurizeRecords", &PlanHandle::featurize_records)
      .function("datasetFromRecords", &PlanHandle::dataset_from_records,
                emscripten::allow_raw_pointers());
  emscripten::function("validatePlan", &validate_plan);
  // The plan's fields and choices as the parsers check them (tests/js/plan_types.test.mjs).
  emscripten::function("planSchema", &core::plan_schema_json);
}

}  // namespace fedleaf::wasm
