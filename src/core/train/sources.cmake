set(FEDLEAF_TRAIN_SOURCES
  executor.cc
  forward_over_dataset.cc
  metrics.cc
  optimizer.cc
  plan.cc
  plan_format.cc
  plan_schema.cc
  plan_tables.cc
  predict.cc
  table_rows.cc
  training_session.cc
  training_session_result.cc
)

