set(FEDLEAF_WIRE_SOURCES
  result_format.cc
)
