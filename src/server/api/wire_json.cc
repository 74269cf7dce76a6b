#include "server/api/wire_json.h"

#include "core/aggregation/server_optimizer/server_optimizer.h"
#include "core/version.h"

namespace fedleaf::server {

using nlohmann::json;

namespace {

json round_json(const RoundReport& report) {
  const RoundRecord& r = report.record;
  json entry = {
      {"round", r.number},      {"status", to_string(r.status)},  {"reports", r.reports},
      {"examples", r.examples}, {"upload_bytes", r.upload_bytes}, {"started_at", r.started_at},
      {"deadline", r.deadline}};
  entry["mean_train_loss"] = r.examples > 0 ? json(r.loss_sum / r.examples) : json(nullptr);
  entry["mean_train_accuracy"] =
      r.accuracy_examples > 0 ? json(r.accuracy_sum / r.accuracy_examples) : json(nullptr);
  const bool closed = r.status == RoundStatus::kClosed;
  entry["closed_at"] = closed ? json(r.closed_at) : json(nullptr);
  entry["duration_s"] = closed ? json(r.closed_at - r.started_at) : json(nullptr);
  json eval = json::object();
  if (r.eval_reports > 0) {
    eval["reports"] = r.eval_reports;
    eval["examples"] = r.eval_examples;
    const json sums = json::parse(r.eval_sums_json);
    for (const auto& [name, sum] : sums.items()) {
      eval[name] = sum.get<double>() / r.eval_examples;
    }
  }
  entry["eval"] = eval;
  // A buffered version's staleness counts share the row's robust_json; the status shows them
  // beside "robust", with their mean and maximum.
  RoundRobustness robust = report.robust;
  if (robust.staleness) {
    entry["staleness"] = staleness_status_json(*robust.staleness);
    robust.staleness.reset();
  }
  entry["robust"] = robustness_to_json(robust);
  return entry;
}

}  // namespace

std::string model_url(const std::string& population, int round) {
  return population_url(population) + "/rounds/" + std::to_string(round) + "/model";
}

std::string population_url(const std::string& population) {
  return "/v1/populations/" + population;
}

std::string upload_url(std::int64_t task_id) {
  return "/v1/tasks/" + std::to_string(task_id) + "/result";
}

json health_json(const std::optional<std::string>& failure) {
  if (!failure) return {{"status", "ok"}, {"version", kVersion}};
  return {{"status", "failed"}, {"version", kVersion}, {"failure", *failure}};
}

std::string task_json(const TaskAssignment& task) {
  json body = {{"task_id", task.task_id},
               {"population", task.population},
               {"round", task.round},
               {"kind", to_string(task.kind)},
               {"lease_token", task.lease_token},
               {"lease_expires_at", task.lease_expires_at},
               {"model_url", model_url(task.population, task.round)},
               {"model_etag", task.model_etag},
               {"upload_url", upload_url(task.task_id)}};
  // The plan is already serialised JSON (the repository dumped it): splice it in rather than
  // parse and dump it again on every claim. The object is never empty, so it ends in "}".
  std::string text = body.dump();
  text.insert(text.size() - 1, ",\"plan\":" + task.plan_json);
  return text;
}

json created_population_json(const CreatedPopulation& created) {
  return {{"id", created.id},
          {"client_token", created.client_token},
          {"round", 0},
          {"model_etag", created.model_etag},
          {"model_url", model_url(created.id, 0)},
          {"status_url", population_url(created.id)}};
}

json status_json(const PopulationStatus& status) {
  const PopulationRecord& p = status.record;
  if (status.failure_reason) {
    return {{"id", p.id}, {"state", "failed"}, {"failure_reason", *status.failure_reason}};
  }
  json history = json::array();
  for (const RoundReport& r : status.history) history.push_back(round_json(r));
  json rejections = json::object();
  for (const auto& [reason, count] : status.rejections) rejections[reason] = count;
  // Every field of the optimizer, defaults included (FedAvg: sgd, learning_rate 1, momentum 0).
  const json optimizer = json::parse(core::server_optimizer_json(
      core::server_optimizer_from_text(p.settings.server_optimizer_json, "server_optimizer")));
  json out = {{"id", p.id},
              {"state", state_name(p)},
              {"round", status.round.number},
              {"rounds", p.settings.rounds},
              {"reports", status.round.reports},
              {"clients_per_round", p.settings.clients_per_round},
              {"min_reports", p.settings.min_reports},
              {"round_deadline_s", p.settings.round_deadline_s},
              {"lease_s", p.settings.lease_s},
              {"train_tasks_per_round", p.settings.train_tasks_per_round},
              {"eval_tasks_per_round", p.settings.eval_tasks_per_round},
              {"server_optimizer", optimizer},
              {"model_etag", status.model_etag},
              {"model_url", model_url(p.id, status.round.number)},
              {"created_at", p.created_at},
              {"plan", json::parse(status.plan_json)},
              {"rejections", rejections},
              {"history", history}};
  // A buffered population says so, with every field of its mode written out (round r is its
  // model version r); a synchronous one's status is as before the mode existed.
  if (!p.finish_reason.empty()) out["finish_reason"] = p.finish_reason;
  if (!status.privacy_json.empty()) out["privacy"] = json::parse(status.privacy_json);
  if (p.settings.max_tasks_per_client > 0) {
    out["max_tasks_per_client"] = p.settings.max_tasks_per_client;
  }
  if (!p.settings.buffered_json.empty()) {
    out["mode"] = "buffered";
    out["buffered"] = json::parse(p.settings.buffered_json);
    if (status.tasks_out) out["tasks_out"] = *status.tasks_out;
  }
  return out;
}

json issued_token_json(const IssuedToken& issued) {
  return {
      {"population", issued.population}, {"id", issued.id}, {"client_token", issued.client_token}};
}

json client_token_json(const ClientTokenRecord& token) {
  return {{"id", token.id},
          {"created_at", token.created_at},
          {"revoked_at", token.revoked_at == 0 ? json(nullptr) : json(token.revoked_at)}};
}

json client_tokens_json(const std::vector<ClientTokenRecord>& tokens) {
  json list = json::array();
  for (const ClientTokenRecord& token : tokens) list.push_back(client_token_json(token));
  return {{"tokens", list}};
}

json populations_json(const std::vector<PopulationSummary>& populations) {
  json list = json::array();
  for (const PopulationSummary& p : populations) {
    json entry = {{"id", p.id},
                  {"state", p.state},
                  {"round", p.round},
                  {"rounds", p.rounds},
                  {"clients_per_round", p.clients_per_round}};
    // As in the status: only a buffered population names its mode.
    if (p.buffered) entry["mode"] = "buffered";
    list.push_back(std::move(entry));
  }
  return {{"populations", list}};
}

std::string receipt_json(const UploadReceipt& receipt) {
  json body = {{"task_id", receipt.task_id}, {"population", receipt.population},
               {"round", receipt.round},     {"kind", to_string(receipt.kind)},
               {"status", "accepted"},       {"result_sha256", receipt.result_sha256}};
  if (receipt.reports) body["reports"] = *receipt.reports;
  if (receipt.folded_into_round) body["folded_into_round"] = *receipt.folded_into_round;
  return body.dump();
}

}  // namespace fedleaf::server
