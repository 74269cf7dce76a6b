// UploadReceipt: what an accepted result produced (the body of its 201, and of the 200 that
// answers a repeat of the same bytes), and its stored form in the task row.
//
//   task.result_body = encode_receipt(receipt);          // in the step that accepts the result
//   UploadReceipt again = decode_receipt(stored_task);   // a repeat: the same receipt
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/store/store.h"

namespace fedleaf::server {

// What an accepted result produced. Rendered the same way every time, so a repeat of the same
// bytes gets a byte-identical answer.
struct UploadReceipt {
  std::int64_t task_id = 0;
  std::string population;
  int round = 0;  // the task's round: the model version the leaf trained on
  TaskKind kind = TaskKind::kTrain;
  std::optional<std::int64_t> reports;  // train: the round's reports counting this one
  std::string result_sha256;
  // Train: the round whose aggregate the report was folded into — the task's own in a synchronous
  // population, the open version in a buffered one (later than `round` for a stale report).
  // nullopt in a receipt stored before the field existed.
  std::optional<int> folded_into_round = std::nullopt;
};

// The stored form: what the task row does not hold already (the train report count and the round
// the report was folded into).
std::string encode_receipt(const UploadReceipt& receipt);
// The receipt of a done task. Rows written before receipts were typed hold the whole JSON
// answer, whose "reports" reads the same way.
UploadReceipt decode_receipt(const TaskRecord& task);

}  // namespace fedleaf::server
