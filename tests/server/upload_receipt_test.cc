// UploadReceipt's stored form: a receipt survives the task row, whatever form the row holds.
#include "server/repository/upload_receipt.h"

#include <catch2/catch.hpp>

namespace fedleaf::server {

namespace {

TaskRecord done_task(TaskKind kind, std::string result_body) {
  TaskRecord task;
  task.id = 7;
  task.population_id = "p";
  task.round = 2;
  task.kind = kind;
  task.state = TaskState::kDone;
  task.result_sha256 = "ab";
  task.result_body = std::move(result_body);
  return task;
}

}  // namespace

TEST_CASE("a_stored_receipt_decodes_to_the_receipt_that_was_encoded", "[upload_receipt]") {
  const UploadReceipt train{7, "p", 2, TaskKind::kTrain, 5, "ab"};
  const UploadReceipt evaluate{7, "p", 2, TaskKind::kEvaluate, std::nullopt, "ab"};

  const UploadReceipt train_again =
      decode_receipt(done_task(TaskKind::kTrain, encode_receipt(train)));
  const UploadReceipt eval_again =
      decode_receipt(done_task(TaskKind::kEvaluate, encode_receipt(evaluate)));

  CHECK(train_again.task_id == 7);
  CHECK(train_again.population == "p");
  CHECK(train_again.round == 2);
  CHECK(train_again.kind == TaskKind::kTrain);
  CHECK(train_again.reports == 5);
  CHECK(train_again.result_sha256 == "ab");
  CHECK(eval_again.kind == TaskKind::kEvaluate);
  CHECK_FALSE(eval_again.reports);
}

TEST_CASE("a_row_holding_the_whole_first_answer_decodes_its_report_count", "[upload_receipt]") {
  const UploadReceipt old = decode_receipt(done_task(
      TaskKind::kTrain, R"({"kind":"train","population":"p","reports":3,"result_sha256":"ab",)"
                        R"("round":2,"status":"accepted","task_id":7})"));
  CHECK(old.reports == 3);
}

}  // namespace fedleaf::server
