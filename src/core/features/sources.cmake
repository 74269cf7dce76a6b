set(FEDLEAF_FEATURES_SOURCES
  featurize_records.cc
  input_features.cc
  records_json.cc
)
