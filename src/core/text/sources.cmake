set(FEDLEAF_TEXT_SOURCES
  text_format.cc
)
