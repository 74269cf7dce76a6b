set(FEDLEAF_DATA_SOURCES
  batch.cc
  batch_rows.cc
  compact_rows.cc
  dataset.cc
  svmlight.cc
)
