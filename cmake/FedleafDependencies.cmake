# Third-party headers as one interface target, fedleaf::third_party.
#
# Under Emscripten the header-only libraries that Debian installs in /usr/include cannot be
# reached with -I/usr/include (that drags the host's glibc headers into the wasm build), and
# their imported CMake targets re-add exactly that. So we locate each library's folder and link
# it into a staging include directory in the build tree; natively the same staging directory
# works just as well, so both builds see one include layout.

find_path(FEDLEAF_NLOHMANN_DIR NAMES nlohmann/json.hpp PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH
          REQUIRED)
find_path(FEDLEAF_XTENSOR_DIR NAMES xtensor/xarray.hpp PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH
          REQUIRED)
find_path(FEDLEAF_XTL_DIR NAMES xtl/xtl_config.hpp PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH
          REQUIRED)

set(FEDLEAF_STAGED_INCLUDE ${CMAKE_BINARY_DIR}/staged-include)
file(MAKE_DIRECTORY ${FEDLEAF_STAGED_INCLUDE})
foreach(pair "nlohmann;${FEDLEAF_NLOHMANN_DIR}" "xtensor;${FEDLEAF_XTENSOR_DIR}"
             "xtl;${FEDLEAF_XTL_DIR}")
  list(GET pair 0 name)
  list(GET pair 1 dir)
  if(NOT EXISTS ${FEDLEAF_STAGED_INCLUDE}/${name})
    file(CREATE_LINK ${dir}/${name} ${FEDLEAF_STAGED_INCLUDE}/${name} SYMBOLIC)
  endif()
endforeach()

add_library(fedleaf_third_party INTERFACE)
add_library(fedleaf::third_party ALIAS fedleaf_third_party)
target_include_directories(fedleaf_third_party SYSTEM INTERFACE ${FEDLEAF_STAGED_INCLUDE})
