set(FEDLEAF_KERNELS_SOURCES
  dense_kernels.cc
  dense_kernels_reference.cc
)

# sqrt in the Adam kernel only vectorizes without errno semantics (its argument is never
# negative, so errno is never set).
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/dense_kernels.cc
                            PROPERTIES COMPILE_OPTIONS -fno-math-errno)
