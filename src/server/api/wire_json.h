// WireJson: every JSON body of the v1 API (and every URL it names) rendered from the
// repository's typed results, in one place.
//
//   Response::json(200, task_json(assignment));
//   status_json(repository.status("spam"))["history"][0]["reports"];
//
// Field lists are those of src/server/README.md ("HTTP API").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/repository/client_tokens.h"
#include "server/repository/results.h"

namespace fedleaf::server {

std::string model_url(const std::string& population, int round);
std::string population_url(const std::string& population);
std::string upload_url(std::int64_t task_id);

// GET /healthz: {"status": "ok", "version"}; once the server cannot keep its promises (a failed
// group commit), {"status": "failed", "version", "failure": what failed} (served with 503).
nlohmann::json health_json(const std::optional<std::string>& failure = std::nullopt);
// A claimed task, serialised (the plan is spliced in as the repository stored it).
std::string task_json(const TaskAssignment& task);
nlohmann::json created_population_json(const CreatedPopulation& created);
nlohmann::json status_json(const PopulationStatus& status);
nlohmann::json populations_json(const std::vector<PopulationSummary>& populations);
// POST /v1/populations/{p}/tokens: {"population", "id", "client_token"}.
nlohmann::json issued_token_json(const IssuedToken& issued);
// A client token as the admin sees it (never its hash): {"id", "created_at", "revoked_at"
// (null while live)}; GET .../tokens is {"tokens": [...]}.
nlohmann::json client_token_json(const ClientTokenRecord& token);
nlohmann::json client_tokens_json(const std::vector<ClientTokenRecord>& tokens);
// Byte-identical for equal receipts (a repeated upload gets the first answer).
std::string receipt_json(const UploadReceipt& receipt);

}  // namespace fedleaf::server
