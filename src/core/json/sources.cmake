set(FEDLEAF_JSON_SOURCES
  json_duplicate_keys.cc
  json_known_fields.cc
  json_nesting.cc
)
