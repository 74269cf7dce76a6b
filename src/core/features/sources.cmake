set(FEDLEAF_FEATURES_SOURCES
  featurize_records.cc
  input_features.cc
  murmur3.cc
  records_dataset.cc
  records_json.cc
  text_features.cc
)
