#include "server/repository/upload_receipt.h"

#include <nlohmann/json.hpp>

namespace fedleaf::server {

using nlohmann::json;

std::string encode_receipt(const UploadReceipt& receipt) {
  json stored = json::object();
  if (receipt.reports) stored["reports"] = *receipt.reports;
  if (receipt.folded_into_round) stored["folded_into_round"] = *receipt.folded_into_round;
  return stored.dump();
}

UploadReceipt decode_receipt(const TaskRecord& task) {
  UploadReceipt receipt{task.id,   task.population_id, task.round,
                        task.kind, std::nullopt,       task.result_sha256};
  const json stored = json::parse(task.result_body, nullptr, false);
  if (stored.is_object() && stored.contains("reports")) {
    receipt.reports = stored["reports"].get<std::int64_t>();
  }
  if (stored.is_object() && stored.contains("folded_into_round")) {
    receipt.folded_into_round = stored["folded_into_round"].get<int>();
  }
  return receipt;
}

}  // namespace fedleaf::server
