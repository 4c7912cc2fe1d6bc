# SPDX-License-Identifier: Apache-2.0
# The library's layers (docs/design/layers.md). Each layer is an OBJECT library
# tensormem_<layer>; the one installed archive `tensormem`
# (tensormem::tensormem) holds the objects of them all.
#
# The link check: with TENSORMEM_CHECK_LAYERS, each layer is also linked, as
# part of the normal build, into a shared object tensormem_<layer>_link_check
# with -Wl,--no-undefined, against only the link checks of the layers it
# declares (DEPENDS, and theirs in turn). A call from a layer into one above
# it, or beside it, leaves an undefined symbol and fails the build.

# Sanitizer and fuzzer builds leave their runtimes' symbols to the final
# executable, which --no-undefined would report: no link check there.
set(tensormem_check_layers_default ON)
if(TENSORMEM_SANITIZE OR TENSORMEM_BUILD_FUZZERS OR NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(tensormem_check_layers_default OFF)
endif()
option(TENSORMEM_CHECK_LAYERS "Link every layer alone against the layers below it (-Wl,--no-undefined)"
       ${tensormem_check_layers_default})
if(TENSORMEM_CHECK_LAYERS AND (TENSORMEM_SANITIZE OR TENSORMEM_BUILD_FUZZERS))
  message(STATUS "tensormem: no layer link check in a sanitizer or fuzzer build")
  set(TENSORMEM_CHECK_LAYERS OFF)
endif()

# tensormem_add_layer(NAME SOURCES src... [DEPENDS layer...] [LIBRARIES lib...])
#   DEPENDS: the layers directly below that this one calls.
#   LIBRARIES: outside libraries the layer needs (linked into tensormem too).
function(tensormem_add_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;DEPENDS;LIBRARIES")
  set(layer tensormem_${name})
  add_library(${layer} OBJECT ${arg_SOURCES})
  target_include_directories(${layer} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_compile_features(${layer} PRIVATE cxx_std_20)
  target_link_libraries(${layer} PRIVATE tensormem_warnings nlohmann_json::nlohmann_json Threads::Threads
                        ${arg_LIBRARIES})
  set_property(TARGET ${layer} PROPERTY TENSORMEM_LAYER_DEPENDS ${arg_DEPENDS})
  target_sources(tensormem PRIVATE $<TARGET_OBJECTS:${layer}>)
  if(arg_LIBRARIES)
    target_link_libraries(tensormem PRIVATE ${arg_LIBRARIES})
  endif()
  if(TENSORMEM_CHECK_LAYERS)
    tensormem_add_layer_link_check(${layer}_link_check ${name})
  endif()
endfunction()

# tensormem_add_layer_link_check(TARGET LAYER [EXCLUDE_FROM_ALL] [SOURCES src...])
# A shared object of LAYER's objects (and SOURCES, compiled as part of that
# layer) that must resolve every symbol from itself and the link checks of
# the layers LAYER depends on.
function(tensormem_add_layer_link_check target name)
  cmake_parse_arguments(PARSE_ARGV 2 arg "EXCLUDE_FROM_ALL" "" "SOURCES")
  set(layer tensormem_${name})
  set(exclude)
  if(arg_EXCLUDE_FROM_ALL)
    set(exclude EXCLUDE_FROM_ALL)
  endif()
  # Linking the OBJECT library adds its objects and its outside libraries.
  add_library(${target} SHARED ${exclude} ${arg_SOURCES})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  get_property(depends TARGET ${layer} PROPERTY TENSORMEM_LAYER_DEPENDS)
  list(TRANSFORM depends PREPEND tensormem_)
  list(TRANSFORM depends APPEND _link_check)
  # PUBLIC: a layer may call every layer below, so the checks above see
  # (and name on their link line) the whole chain.
  target_link_libraries(${target} PRIVATE ${layer} tensormem_warnings nlohmann_json::nlohmann_json
                        PUBLIC ${depends} Threads::Threads)
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
endfunction()
