# Where the zstd filter plugin (libH5Zcairn_zstd.so, lib/storage) is installed, for readers
# without cairn (h5py, h5dump). Included when the build has HDF5 and zstd. Two places:
#   - CAIRN_HDF5_PLUGIN_DIR: the prefix's own copy, always (a moved prefix, Spack, modules);
#   - CAIRN_HDF5_DEFAULT_PLUGIN_DIRS: the directories HDF5 searches when HDF5_PLUGIN_PATH is
#     unset, found here; CAIRN_HDF5_PLUGIN_IN_DEFAULT_DIRS says into which of them the
#     install also puts it (install_hdf5_plugin.cmake decides at install time).

# _cairn_hdf5_libraries(<out>): the shared HDF5 C library cairn links and, on Debian's layout
# (libhdf5_<flavour>.so.N), the serial one next to it, which h5dump and h5py use.
function(_cairn_hdf5_libraries out)
  set(libs "")
  foreach(lib IN LISTS HDF5_C_LIBRARIES HDF5_LIBRARIES)
    if(TARGET "${lib}")
      get_target_property(lib "${lib}" LOCATION)
    endif()
    get_filename_component(name "${lib}" NAME)
    if(name MATCHES "^libhdf5(_[a-z]+)?\\.(so|dylib)" AND
       NOT name MATCHES "^libhdf5_(hl|cpp|fortran|tools)")
      file(REAL_PATH "${lib}" lib)
      list(APPEND libs "${lib}")
      get_filename_component(dir "${lib}" DIRECTORY)
      get_filename_component(name "${lib}" NAME)
      if(name MATCHES "^libhdf5_([a-z]+)\\.so\\.([0-9]+)" AND NOT CMAKE_MATCH_1 STREQUAL "serial")
        set(serial "${dir}/libhdf5_serial.so.${CMAKE_MATCH_2}")  # (expanded after the match)
        if(EXISTS "${serial}")
          list(APPEND libs "${serial}")
        endif()
      endif()
      break()
    endif()
  endforeach()
  set(${out} "${libs}" PARENT_SCOPE)
endfunction()

# _cairn_find_hdf5_default_plugin_dirs(<out>): asks each of those libraries (hdf5_plugin_dirs.c,
# through dlopen) for its plugin search path with HDF5_PLUGIN_PATH unset. Empty when it cannot
# ask (a static or cross-compiled HDF5).
function(_cairn_find_hdf5_default_plugin_dirs out)
  set(${out} "" PARENT_SCOPE)
  _cairn_hdf5_libraries(libs)
  if(NOT libs OR CMAKE_CROSSCOMPILING)
    message(STATUS "HDF5's default plugin directories: not found (no shared HDF5 to ask)")
    return()
  endif()
  set(probe "${PROJECT_BINARY_DIR}/CMakeFiles/cairn_hdf5_plugin_dirs")
  try_compile(built "${PROJECT_BINARY_DIR}/CMakeFiles/cairn_hdf5_plugin_dirs.dir"
              SOURCES "${CMAKE_CURRENT_LIST_DIR}/hdf5_plugin_dirs.c"
              LINK_LIBRARIES ${CMAKE_DL_LIBS} COPY_FILE "${probe}" OUTPUT_VARIABLE log)
  if(built)
    execute_process(COMMAND "${probe}" ${libs} RESULT_VARIABLE rc OUTPUT_VARIABLE text
                    ERROR_VARIABLE err TIMEOUT 60)
  endif()
  if(NOT built OR NOT rc EQUAL 0)
    message(STATUS "HDF5's default plugin directories: not found (${libs}: ${rc} ${err})")
    return()
  endif()
  set(dirs "")
  string(REPLACE "\n" ";" lines "${text}")
  foreach(line IN LISTS lines)
    if(line MATCHES "\t(.+)$")
      list(APPEND dirs "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES dirs)
  list(JOIN dirs ", " shown_dirs)
  list(JOIN libs ", " shown_libs)
  message(STATUS "HDF5's default plugin directories: ${shown_dirs} (asked ${shown_libs})")
  set(${out} "${dirs}" PARENT_SCOPE)
endfunction()

if(NOT DEFINED CACHE{CAIRN_HDF5_DEFAULT_PLUGIN_DIRS})
  _cairn_find_hdf5_default_plugin_dirs(found)
  set(CAIRN_HDF5_DEFAULT_PLUGIN_DIRS "${found}" CACHE STRING
      "Directories HDF5 searches for plugins by default (found: the linked and the serial HDF5)")
endif()

# cairn_install_hdf5_plugin(<target>): installs the plugin module <target> into
# CAIRN_HDF5_PLUGIN_DIR and, by the rule of CAIRN_HDF5_PLUGIN_IN_DEFAULT_DIRS, into HDF5's
# default plugin directories.
function(cairn_install_hdf5_plugin target)
  install(TARGETS ${target} LIBRARY DESTINATION ${CAIRN_HDF5_PLUGIN_DIR}
          COMPONENT cairn_runtime)
  string(TOUPPER "${CAIRN_HDF5_PLUGIN_IN_DEFAULT_DIRS}" rule)
  if(rule STREQUAL "OFF" OR NOT CAIRN_HDF5_DEFAULT_PLUGIN_DIRS)
    return()
  endif()
  set(script "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/install_hdf5_plugin.cmake")
  install(CODE "set(cairn_plugin \"$<TARGET_FILE:${target}>\")
set(cairn_plugin_dirs \"${CAIRN_HDF5_DEFAULT_PLUGIN_DIRS}\")
set(cairn_plugin_rule \"${rule}\")
include(\"${script}\")" COMPONENT cairn_runtime)
endfunction()
