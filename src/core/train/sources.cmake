set(FEDLEAF_TRAIN_SOURCES
  activation.cc
  add_layer.cc
  batch.cc
  batch_rows.cc
  compact_rows.cc
  concatenate.cc
  dataset.cc
  dense_kernels.cc
  dense_kernels_reference.cc
  dense_layer.cc
  dropout.cc
  embedding_bag.cc
  executor.cc
  forward_over_dataset.cc
  layer_registry.cc
  loss.cc
  metrics.cc
  model.cc
  model_view.cc
  model_parameters.cc
  murmur3.cc
  optimizer.cc
  plan.cc
  plan_format.cc
  plan_schema.cc
  predict.cc
  svmlight.cc
  table_rows.cc
  text_features.cc
  training_session.cc
  training_session_result.cc
)

# sqrt in the Adam kernel only vectorizes without errno semantics (its argument is never
# negative, so errno is never set).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/dense_kernels.cc
                            PROPERTIES COMPILE_OPTIONS -fno-math-errno)
